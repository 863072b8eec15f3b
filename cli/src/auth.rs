//! `onair auth exchange | refresh | revoke | show`: the token chores of a
//! bot author's own bot, over the core's token machine
//! ([`onair::api::TokenManager`]) and the token file of `onair-tokio`
//! ([`onair_tokio::FileStore`]: the core's versioned JSON, written
//! atomically, mode 0600).
//!
//! Settings come from flags or the environment (`ONAIR_BASE_URL`,
//! `ONAIR_CLIENT_ID`, `ONAIR_CLIENT_SECRET`, `ONAIR_TOKENS`); a flag wins.
//! No secret (client secret, consent code, tokens) is ever printed: not by
//! `show`, not in an error. A refusal is explained with the core's
//! classification ([`onair::api::classify`]): its kind and advice.

use std::process::ExitCode;
use std::time::Duration;

use clap::builder::NonEmptyStringValueParser;
use onair::api::{classify, OAuthError, RefreshPolicy, TokenFailure, TokenManager, TokenOutcome};
use onair::{AuthProblem, BaseUrl, ClientCredentials, Endpoint, HttpRequest, Tokens};
use onair_tokio::{Clock, FileStore, SystemClock, TokenStore};
use time::format_description::well_known::Rfc3339;
use time::macros::datetime;
use time::OffsetDateTime;

/// The token file when neither `--tokens` nor `ONAIR_TOKENS` names one.
pub const DEFAULT_TOKENS: &str = "onair-tokens.json";

/// How long one token request may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// The end of `onair auth --help` and of each subcommand's help.
const AFTER_HELP: &str = "\
Each option may come from the environment instead (a flag wins). show needs only
the token file. Prefer ONAIR_CLIENT_SECRET to the flag: other users of the
machine can read a process's arguments.

exit codes:
  0  done
  1  the service refused (e.g. invalid_grant: the DJ must authorize again;
     invalid_client: fix the app's credentials); the kind and advice are printed
  2  usage error (unknown option, a missing value)
  3  no saved tokens, or the token file cannot be read or written
  4  network failure: no answer from the service (nothing was saved)";

/// `onair auth`'s subcommands (no `Debug`: they hold secrets).
#[derive(clap::Args)]
#[command(after_help = AFTER_HELP)]
pub struct Args {
    #[command(subcommand)]
    command: Chore,
}

/// One token chore.
#[derive(clap::Subcommand)]
enum Chore {
    /// Exchange the DJ's consent code for a token pair and save it
    #[command(after_help = AFTER_HELP)]
    Exchange {
        /// The DJ's consent code (required)
        #[arg(long, value_name = "C", value_parser = NonEmptyStringValueParser::new(),
              allow_hyphen_values = true)]
        code: Option<String>,
        /// The redirect URI the code was issued for (required)
        #[arg(long, value_name = "URI", env = "ONAIR_REDIRECT_URI", hide_env_values = true,
              value_parser = NonEmptyStringValueParser::new(), allow_hyphen_values = true)]
        redirect_uri: Option<String>,
        #[command(flatten)]
        settings: Settings,
    },
    /// Refresh the saved pair and save the new one (the old refresh token is spent)
    #[command(after_help = AFTER_HELP)]
    Refresh {
        #[command(flatten)]
        settings: Settings,
    },
    /// Revoke the saved refresh token (its access tokens too) and delete the file
    #[command(after_help = AFTER_HELP)]
    Revoke {
        #[command(flatten)]
        settings: Settings,
    },
    /// Scope, generation, expiry times and when a refresh is due (never a secret)
    #[command(after_help = AFTER_HELP)]
    Show {
        /// Print one JSON object
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        settings: Settings,
    },
}

impl Chore {
    fn name(&self) -> &'static str {
        match self {
            Chore::Exchange { .. } => "exchange",
            Chore::Refresh { .. } => "refresh",
            Chore::Revoke { .. } => "revoke",
            Chore::Show { .. } => "show",
        }
    }
}

/// What every chore may be told: where the service and the token file are
/// (shared with `onair record`).
#[derive(clap::Args)]
pub(crate) struct Settings {
    /// The service's base address
    #[arg(long, value_name = "URL", env = "ONAIR_BASE_URL", hide_env_values = true,
          value_parser = NonEmptyStringValueParser::new(), allow_hyphen_values = true)]
    pub(crate) base_url: Option<String>,
    /// The app's client id
    #[arg(long, value_name = "ID", env = "ONAIR_CLIENT_ID", hide_env_values = true,
          value_parser = NonEmptyStringValueParser::new(), allow_hyphen_values = true)]
    pub(crate) client_id: Option<String>,
    /// The app's client secret (never printed, never written)
    #[arg(long, value_name = "S", env = "ONAIR_CLIENT_SECRET", hide_env_values = true,
          value_parser = NonEmptyStringValueParser::new(), allow_hyphen_values = true)]
    pub(crate) client_secret: Option<String>,
    /// The token file (each new pair written there atomically, mode 0600)
    #[arg(long, value_name = "FILE", env = "ONAIR_TOKENS", hide_env_values = true,
          default_value = DEFAULT_TOKENS, value_parser = NonEmptyStringValueParser::new(),
          allow_hyphen_values = true)]
    pub(crate) tokens: String,
}

/// An outcome of the command, as an exit code and the line(s) to print.
#[derive(Debug)]
enum Failure {
    /// 1: the service refused.
    Refused(String),
    /// 2: the command was called wrongly.
    Usage(String),
    /// 3: no saved tokens, or the file is unreadable or unwritable.
    Store(String),
    /// 4: no answer.
    Network(String),
}

impl Failure {
    fn exit(self, command: &str) -> ExitCode {
        let (code, message) = match self {
            Failure::Refused(m) => (1, m),
            Failure::Usage(m) => {
                eprintln!("onair auth {command}: {m} (try `onair auth --help`)");
                return ExitCode::from(2);
            }
            Failure::Store(m) => (3, m),
            Failure::Network(m) => (4, m),
        };
        eprintln!("onair auth {command}: {message}");
        ExitCode::from(code)
    }
}

/// Everything the flags and the environment said (no `Debug`: it holds
/// secrets).
struct Options {
    settings: Settings,
    code: Option<String>,
    redirect_uri: Option<String>,
    json: bool,
}

impl Options {
    fn store(&self) -> FileStore {
        FileStore::new(&self.settings.tokens)
    }

    /// The token client's settings; missing or malformed ones are usage errors.
    fn client(&self) -> Result<(BaseUrl, ClientCredentials), Failure> {
        let need = |v: &Option<String>, flag: &str, var: &str| {
            v.clone()
                .ok_or_else(|| Failure::Usage(format!("needs {flag} (or {var})")))
        };
        let s = &self.settings;
        let base = need(&s.base_url, "--base-url", "ONAIR_BASE_URL")?;
        let id = need(&s.client_id, "--client-id", "ONAIR_CLIENT_ID")?;
        let secret = need(&s.client_secret, "--client-secret", "ONAIR_CLIENT_SECRET")?;
        let base = BaseUrl::new(&base).map_err(|e| Failure::Usage(format!("--base-url: {e}")))?;
        // The credentials' errors name the problem, never the value.
        let creds = ClientCredentials::new(&id, secret)
            .map_err(|e| Failure::Usage(format!("client credentials: {e}")))?;
        Ok((base, creds))
    }
}

/// Runs `onair auth …`.
pub fn run(args: Args) -> ExitCode {
    let command = args.command.name();
    let options = match args.command {
        Chore::Exchange {
            code,
            redirect_uri,
            settings,
        } => Options {
            settings,
            code,
            redirect_uri,
            json: false,
        },
        Chore::Refresh { settings } | Chore::Revoke { settings } => Options {
            settings,
            code: None,
            redirect_uri: None,
            json: false,
        },
        Chore::Show { json, settings } => Options {
            settings,
            code: None,
            redirect_uri: None,
            json,
        },
    };
    let result = if command == "show" {
        show(&options)
    } else {
        match tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        {
            Ok(runtime) => runtime.block_on(async {
                match command {
                    "exchange" => exchange(&options).await,
                    "refresh" => refresh(&options).await,
                    _ => revoke(&options).await,
                }
            }),
            Err(e) => Err(Failure::Network(format!("no runtime: {e}"))),
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => f.exit(command),
    }
}

fn now_ms() -> u64 {
    SystemClock.now_ms()
}

/// The saved pair; none, or an unreadable file, is exit 3.
fn load(store: &FileStore) -> Result<Tokens, Failure> {
    let path = store.path().display();
    match store.load() {
        Ok(Some(tokens)) => Ok(tokens),
        Ok(None) => Err(Failure::Store(format!(
            "no saved tokens at {path}: run `onair auth exchange` first"
        ))),
        Err(e) => Err(Failure::Store(format!("{path}: {e}"))),
    }
}

fn save(store: &FileStore, tokens: &Tokens) -> Result<(), Failure> {
    store.save(tokens).map_err(|e| {
        Failure::Store(format!(
            "{}: {e} (the new pair is lost: the DJ must authorize again)",
            store.path().display()
        ))
    })
}

/// A token machine over the flags' credentials, holding `tokens` if given.
fn manager(options: &Options, tokens: Option<Tokens>) -> Result<TokenManager, Failure> {
    let (base, creds) = options.client()?;
    let client = onair::api::TokenClient::new(base, creds);
    Ok(match tokens {
        Some(t) => TokenManager::with_tokens(client, RefreshPolicy::default(), t),
        None => TokenManager::new(client, RefreshPolicy::default()),
    })
}

/// One HTTP answer, kept whole (the token endpoints' bodies are small).
struct Answer {
    status: u16,
    headers: reqwest::header::HeaderMap,
    body: Vec<u8>,
}

/// Sends `request`; `Err` is a network failure (no answer).
async fn send(request: HttpRequest) -> Result<Answer, String> {
    let request = request
        .into_http()
        .map_err(|e| format!("cannot build the request: {e}"))?;
    let request = reqwest::Request::try_from(request)
        .map_err(|e| format!("cannot build the request: {e}"))?;
    let client = reqwest::Client::builder()
        .timeout(REQUEST_TIMEOUT)
        .build()
        .map_err(|e| format!("no HTTP client: {e}"))?;
    let url = request.url().clone();
    let failed = |e: reqwest::Error| {
        let what = if e.is_timeout() {
            "timed out"
        } else if e.is_connect() {
            "could not connect"
        } else {
            "the connection failed"
        };
        // The URL of a token endpoint holds no secret (they go in the body
        // and the Authorization header, neither of which is printed).
        format!("no answer from {url}: {what}")
    };
    let response = client.execute(request).await.map_err(failed)?;
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let body = response.bytes().await.map_err(failed)?.to_vec();
    Ok(Answer {
        status,
        headers,
        body,
    })
}

/// The lines for a refusal: the core's classification (kind, advice) and
/// what the token machine made of it.
fn refused(endpoint: Endpoint, answer: &Answer, why: Option<&AuthProblem>) -> Failure {
    let problem = classify(endpoint, answer.status, &answer.headers, &answer.body);
    let explained = problem.explain(Some(now_ms()));
    let mut message = format!(
        "the service refused (HTTP {}{})\n  kind: {}\n  advice: {}",
        explained.status,
        explained
            .oauth_error
            .as_deref()
            .or(explained.detail_code.as_deref())
            .map(|c| format!(", {c}"))
            .unwrap_or_default(),
        explained.kind,
        explained.advice,
    );
    if let Some(ms) = explained.retry_after_ms {
        message.push_str(&format!(" (retry after {})", relative(ms as i64)));
    }
    if let Some(said) = &problem.message {
        // The service's own words (`error_description` or `message`), for the
        // person at the terminal; quoted, control characters escaped.
        message.push_str(&format!(
            "\n  the service said: \"{}\"",
            said.escape_debug()
        ));
    }
    if let Some(why) = why {
        message.push_str(&format!("\n  {why}"));
    }
    Failure::Refused(message)
}

/// A local refusal of the token machine (nothing was sent).
fn blocked(e: OAuthError) -> Failure {
    match e {
        OAuthError::Blocked(p) => Failure::Refused(format!("cannot refresh: {p}")),
        OAuthError::NoTokens => Failure::Store("there are no tokens".into()),
        OAuthError::Request(e) => Failure::Usage(e.to_string()),
        other => Failure::Usage(other.to_string()),
    }
}

async fn exchange(options: &Options) -> Result<(), Failure> {
    let code = options
        .code
        .clone()
        .ok_or_else(|| Failure::Usage("needs --code (the DJ's consent code)".into()))?;
    let redirect_uri = options
        .redirect_uri
        .clone()
        .ok_or_else(|| Failure::Usage("needs --redirect-uri (or ONAIR_REDIRECT_URI)".into()))?;
    let store = options.store();
    // A pair already saved is replaced; its generation is continued so a
    // reader of the file can tell the new pair is newer. An unreadable file
    // is not overwritten.
    let previous = store
        .load()
        .map_err(|e| Failure::Store(format!("{}: {e}", store.path().display())))?;
    let previous_generation = previous.as_ref().map(Tokens::generation);
    let mut tokens = manager(options, previous)?;
    let sent_at = now_ms();
    let request = tokens
        .start_exchange(&code, &redirect_uri, sent_at)
        .map_err(blocked)?;
    let answer = match send(request).await {
        Ok(a) => a,
        Err(e) => {
            return Err(Failure::Network(format!(
                "{e}\n  the code may have been spent: get a new consent code from the DJ"
            )))
        }
    };
    match tokens.on_response(answer.status, &answer.body, now_ms()) {
        Ok(TokenOutcome::Persist(pair)) => {
            save(&store, &pair)?;
            let replaced = previous_generation
                .map(|g| format!(" (replacing generation {g})"))
                .unwrap_or_default();
            println!(
                "saved generation {} to {}{replaced}",
                pair.generation(),
                store.path().display()
            );
            println!("scope: {}", pair.scope());
            println!(
                "access token expires {}",
                when(pair.access_expires_at_ms(), now_ms())
            );
            Ok(())
        }
        Ok(TokenOutcome::Blocked(why)) => Err(outcome_failure(&answer, &why)),
        Ok(TokenOutcome::RetryLater(_)) => Err(refused(Endpoint::Token, &answer, None)),
        Err(e) => Err(blocked(e)),
    }
}

/// A failed token response: an HTTP refusal, or a 200 without a usable pair.
fn outcome_failure(answer: &Answer, why: &AuthProblem) -> Failure {
    match why {
        AuthProblem::ExchangeFailed(TokenFailure::InvalidBody(_)) => {
            Failure::Refused(format!("{why}"))
        }
        _ => refused(Endpoint::Token, answer, Some(why)),
    }
}

async fn refresh(options: &Options) -> Result<(), Failure> {
    let store = options.store();
    let saved = load(&store)?;
    let old_generation = saved.generation();
    let mut tokens = manager(options, Some(saved))?;
    let request = tokens.start_refresh(now_ms()).map_err(blocked)?;
    let answer = match send(request).await {
        Ok(a) => a,
        Err(e) => {
            return Err(Failure::Network(format!(
                "{e}\n  the saved pair is unchanged; try again"
            )))
        }
    };
    match tokens.on_response(answer.status, &answer.body, now_ms()) {
        Ok(TokenOutcome::Persist(pair)) => {
            save(&store, &pair)?;
            println!(
                "refreshed: generation {old_generation} → {}, saved to {}",
                pair.generation(),
                store.path().display()
            );
            println!("scope: {}", pair.scope());
            println!(
                "access token expires {}",
                when(pair.access_expires_at_ms(), now_ms())
            );
            Ok(())
        }
        Ok(TokenOutcome::Blocked(why)) => Err(outcome_failure(&answer, &why)),
        Ok(TokenOutcome::RetryLater(TokenFailure::InvalidBody(e))) => Err(Failure::Refused(
            format!("unusable token response: {e}; the saved pair is unchanged"),
        )),
        Ok(TokenOutcome::RetryLater(_)) => Err(refused(Endpoint::Token, &answer, None)),
        Err(e) => Err(blocked(e)),
    }
}

async fn revoke(options: &Options) -> Result<(), Failure> {
    let store = options.store();
    let saved = load(&store)?;
    let generation = saved.generation();
    let mut tokens = manager(options, Some(saved))?;
    let request = tokens.revoke().map_err(blocked)?;
    let answer = match send(request).await {
        Ok(a) => a,
        Err(e) => {
            return Err(Failure::Network(format!(
                "{e}\n  the tokens may still be valid; the file is kept: try again"
            )))
        }
    };
    if !(200..300).contains(&answer.status) {
        return Err(refused(Endpoint::Revoke, &answer, None));
    }
    store.clear().map_err(|e| {
        Failure::Store(format!(
            "revoked, but {} could not be deleted: {e}",
            store.path().display()
        ))
    })?;
    println!(
        "revoked generation {generation} (refresh and access tokens); deleted {}",
        store.path().display()
    );
    Ok(())
}

fn show(options: &Options) -> Result<(), Failure> {
    let store = options.store();
    let tokens = load(&store)?;
    let now = now_ms();
    let refresh_due = RefreshPolicy::default()
        .refresh_at_ms(tokens.issued_at_ms(), tokens.access_expires_at_ms());
    if options.json {
        let doc = serde_json::json!({
            "file": store.path().display().to_string(),
            "generation": tokens.generation(),
            "scope": tokens.scope().to_string(),
            "nowMs": now,
            "issuedAtMs": tokens.issued_at_ms(),
            "issuedAt": iso(tokens.issued_at_ms()),
            "accessExpiresAtMs": tokens.access_expires_at_ms(),
            "accessExpiresAt": iso(tokens.access_expires_at_ms()),
            "accessExpired": tokens.is_access_expired(now),
            "refreshDueAtMs": refresh_due,
            "refreshDueAt": iso(refresh_due),
            "refreshExpiresAtMs": tokens.refresh_expires_at_ms(),
            "refreshExpiresAt": tokens.refresh_expires_at_ms().map(iso),
            "refreshExpired": tokens.is_refresh_expired(now),
        });
        println!("{doc}");
        return Ok(());
    }
    println!("file:          {}", store.path().display());
    println!("generation:    {}", tokens.generation());
    println!("scope:         {}", tokens.scope());
    println!("issued:        {}", when(tokens.issued_at_ms(), now));
    println!(
        "access token:  expires {}{}",
        when(tokens.access_expires_at_ms(), now),
        if tokens.is_access_expired(now) {
            " — expired"
        } else {
            ""
        }
    );
    println!("refresh due:   {}", when(refresh_due, now));
    match tokens.refresh_expires_at_ms() {
        Some(at) => println!(
            "refresh token: expires {}{}",
            when(at, now),
            if tokens.is_refresh_expired(now) {
                " — expired: the DJ must authorize again"
            } else {
                ""
            }
        ),
        None => println!(
            "refresh token: none (the DJ must authorize again when the access token expires)"
        ),
    }
    Ok(())
}

/// `2026-11-23T07:00:00Z (in 59 minutes)`.
fn when(at_ms: u64, now_ms: u64) -> String {
    let delta = i128::from(at_ms) - i128::from(now_ms);
    let delta = i64::try_from(delta).unwrap_or(if delta < 0 { i64::MIN } else { i64::MAX });
    let rel = if delta.unsigned_abs() < 1_000 {
        "now".to_owned()
    } else if delta > 0 {
        format!("in {}", relative(delta))
    } else {
        format!("{} ago", relative(delta.saturating_neg()))
    };
    format!("{} ({rel})", iso(at_ms))
}

/// A positive span in words: `42 seconds`, `59 minutes`, `3 hours 5 minutes`, `30 days`.
fn relative(ms: i64) -> String {
    let s = ms.max(0) / 1000;
    let plural = |n: i64, unit: &str| format!("{n} {unit}{}", if n == 1 { "" } else { "s" });
    match s {
        0..=89 => plural(s, "second"),
        90..=5_399 => plural((s + 30) / 60, "minute"),
        5_400..=172_799 => {
            let (h, m) = (s / 3600, s % 3600 / 60);
            if m == 0 {
                plural(h, "hour")
            } else {
                format!("{} {}", plural(h, "hour"), plural(m, "minute"))
            }
        }
        _ => plural((s + 43_200) / 86_400, "day"),
    }
}

/// RFC 3339 UTC to the second: `2026-11-23T07:00:00Z` (an instant after the
/// year 9999 as its last second).
fn iso(ms: u64) -> String {
    let secs = i64::try_from(ms / 1000).unwrap_or(i64::MAX);
    OffsetDateTime::from_unix_timestamp(secs)
        .unwrap_or(datetime!(9999-12-31 23:59:59 UTC))
        .format(&Rfc3339)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_and_relative_times() {
        assert_eq!(iso(0), "1970-01-01T00:00:00Z");
        assert_eq!(iso(951_782_400_000), "2000-02-29T00:00:00Z");
        assert_eq!(iso(1_795_417_200_999), "2026-11-23T07:00:00Z");
        assert_eq!(iso(253_402_300_799_999), "9999-12-31T23:59:59Z");
        assert_eq!(iso(u64::MAX), "9999-12-31T23:59:59Z");
        assert_eq!(relative(42_000), "42 seconds");
        assert_eq!(relative(3_540_000), "59 minutes");
        assert_eq!(relative(3_600_000), "60 minutes");
        assert_eq!(relative(11_100_000), "3 hours 5 minutes");
        assert_eq!(relative(30 * 86_400_000), "30 days");
        assert_eq!(when(10_000, 10_500), "1970-01-01T00:00:10Z (now)");
        assert_eq!(when(70_000, 10_000), "1970-01-01T00:01:10Z (in 60 seconds)");
        assert_eq!(when(0, 120_000), "1970-01-01T00:00:00Z (2 minutes ago)");
    }
}
