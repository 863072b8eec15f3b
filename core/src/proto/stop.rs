//! [`Stop`]: why a machine stopped, as the person who must act reads it.
//! The one stop type of the crate: the connect-loop, the token state and the
//! bot all end in it, so a driver matches one enum.
//!
//! ```
//! use onair::{AuthProblem, Stop};
//!
//! let stop = Stop::from(AuthProblem::RefreshRejected);
//! assert!(stop.resumes_with_new_consent());
//! assert_eq!(stop.code(), "reauthorize");
//! ```

use std::fmt;

use crate::proto::endpoint::Endpoint;
use crate::proto::oauth::AuthProblem;
use crate::proto::problem::{Advice, Problem, ProblemKind};
use crate::proto::scope::Permission;

/// Why the bot stopped, as a person must act on it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Stop {
    /// The DJ must authorize the bot again; the reason says what happened.
    /// A new consent code (`Bot::authorize`) resumes the bot: queued calls
    /// complete and the stream reopens.
    Reauthorize(AuthProblem),
    /// The DJ must consent again with one of these permissions (any one of
    /// the `events.*` ones, for the stream).
    Reconsent {
        /// The permissions the service found missing.
        missing: Vec<Permission>,
    },
    /// The bot cannot join the broadcast (403 `OAPI_MNGR_0209`): the DJ may
    /// have blocked it and must lift that.
    JoinForbidden,
    /// The token endpoint refused the client credentials: fix the app's
    /// configuration (the DJ cannot help).
    InvalidClient,
    /// The service called a request malformed (`OAPI_MNGR_0103`): a driver
    /// bug; resending it unchanged gives the same answer.
    FixRequest(Box<Problem>),
    /// A response outside the spec that retrying will not fix.
    Unexpected(Box<Problem>),
    /// `Bot::shutdown` was called; delete the stored tokens if revoked.
    ShutDown,
}

impl Stop {
    /// A stable snake_case code: `reauthorize`, `reconsent`,
    /// `join_forbidden`, `invalid_client`, `fix_request`, `unexpected`,
    /// `shut_down`.
    pub fn code(&self) -> &'static str {
        match self {
            Stop::Reauthorize(_) => "reauthorize",
            Stop::Reconsent { .. } => "reconsent",
            Stop::JoinForbidden => "join_forbidden",
            Stop::InvalidClient => "invalid_client",
            Stop::FixRequest(_) => "fix_request",
            Stop::Unexpected(_) => "unexpected",
            Stop::ShutDown => "shut_down",
        }
    }

    /// Whether a new consent code brings the bot back (only
    /// [`Stop::Reauthorize`]).
    pub fn resumes_with_new_consent(&self) -> bool {
        matches!(self, Stop::Reauthorize(_))
    }

    /// The stop a classified error response of `endpoint` asks for, when its
    /// advice is to stop (`None` for a problem that is retried or waited out).
    /// A 401 is not a stop by itself: the one-refresh rule decides
    /// ([`TokenManager::on_unauthorized`](crate::proto::oauth::TokenManager::on_unauthorized)).
    pub fn for_problem(endpoint: Endpoint, problem: &Problem) -> Option<Stop> {
        Some(match problem.advice {
            Advice::Reconsent => Stop::Reconsent {
                missing: match endpoint.permission() {
                    Some(permission) => vec![permission],
                    None => Permission::KNOWN
                        .into_iter()
                        .filter(Permission::is_event)
                        .collect(),
                },
            },
            Advice::Reauthorize => Stop::Reauthorize(AuthProblem::AccessRejected),
            Advice::FixRequest => Stop::FixRequest(Box::new(problem.clone())),
            Advice::Stop => match problem.kind {
                ProblemKind::JoinForbidden => Stop::JoinForbidden,
                ProblemKind::InvalidClient => Stop::InvalidClient,
                _ => Stop::Unexpected(Box::new(problem.clone())),
            },
            Advice::None
            | Advice::RefreshToken
            | Advice::RetrySoon
            | Advice::WaitNotOnAir
            | Advice::RetryBackoff
            | Advice::RetryAfter => return None,
        })
    }
}

impl From<AuthProblem> for Stop {
    /// A token problem: the client refused means fix the configuration;
    /// everything else means the DJ authorizes again.
    fn from(problem: AuthProblem) -> Stop {
        match problem {
            AuthProblem::ClientRejected => Stop::InvalidClient,
            other => Stop::Reauthorize(other),
        }
    }
}

impl fmt::Display for Stop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Stop::Reauthorize(why) => write!(f, "re-authorize: {why}"),
            Stop::Reconsent { missing } => {
                f.write_str("re-consent needed for:")?;
                for p in missing {
                    write!(f, " {p}")?;
                }
                Ok(())
            }
            Stop::JoinForbidden => f.write_str("the bot cannot join: the DJ may have blocked it"),
            Stop::InvalidClient => {
                f.write_str("client credentials rejected: fix the configuration")
            }
            Stop::FixRequest(problem) => {
                write!(f, "the service refused the request as malformed: {problem}")
            }
            Stop::Unexpected(problem) => write!(f, "unexpected response: {problem}"),
            Stop::ShutDown => f.write_str("shut down"),
        }
    }
}
