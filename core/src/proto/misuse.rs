//! Local errors: a driver or app called a machine in a way its contract does
//! not allow. Kept apart from remote problems (a bad response is a
//! [`crate::proto::problem::Problem`], acted on; a misuse is returned at once and
//! changes nothing), as h11 keeps `LocalProtocolError` apart from
//! `RemoteProtocolError`. The same rule holds for every machine:
//! [`crate::bot::Bot`], [`crate::proto::stream::ConnectLoop`] and
//! [`crate::proto::oauth::TokenManager`].
//!
//! ```
//! use onair::{Misuse, RequestId};
//!
//! let e = Misuse::UnknownRequest(RequestId(7));
//! assert_eq!(e.to_string(), "request#7 was never issued");
//! ```

use std::fmt;

/// Names one HTTP request a machine asked for, so its response can be
/// matched. Ids are issued in increasing order and never reused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RequestId(pub u64);

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "request#{}", self.0)
    }
}

/// A call that the machine's contract does not allow. Nothing changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum Misuse {
    /// No request with this id was ever issued.
    #[error("{0} was never issued")]
    UnknownRequest(RequestId),
    /// A stream report (`on_stream_*`) for a plain request, or a whole
    /// response for a stream that was already reported open.
    #[error("{0} is not the stream connection in this state")]
    NotAStream(RequestId),
    /// Bytes for a stream whose open (status and headers) was not reported.
    #[error("{0}: report on_stream_open before its bytes")]
    StreamNotStarted(RequestId),
    /// A connect outcome while the connect-loop was not connecting.
    #[error("the connect-loop did not ask to connect")]
    NotConnecting,
    /// A refresh outcome while the connect-loop was not waiting for one.
    #[error("the connect-loop did not ask for a refresh")]
    NotRefreshing,
    /// A token request while one is in flight (rotation allows one at a time).
    #[error("a token request is already in flight")]
    TokenRequestInFlight,
    /// A token response while no token request was in flight.
    #[error("no token request is in flight")]
    NoTokenRequestInFlight,
}
