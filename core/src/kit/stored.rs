//! The versioned JSON form of the kit's per-broadcast memory, shared by
//! [`Audience`](super::audience::Audience) and
//! [`Milestones`](super::milestones::Milestones): like the token file, a
//! `format` marker and a `version`, checked before anything else is read.

use serde::de::DeserializeOwned;
use serde::Deserialize;

/// Why stored kit state could not be loaded. A local error (the caller's
/// file), never a problem of the service. Messages never quote the input.
///
/// ```
/// use onair::kit::audience::Audience;
/// use onair::kit::StateError;
///
/// let newer = r#"{"format":"onair.audience","version":2}"#;
/// assert_eq!(
///     Audience::from_json(newer).unwrap_err(),
///     StateError::UnsupportedVersion { format: "onair.audience", found: 2, supported: 1 },
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StateError {
    /// Not JSON of the expected shape (position only).
    #[error("stored {format}: not valid (error at line {line} column {column})")]
    Json {
        /// The `format` that was expected.
        format: &'static str,
        /// 1-based line of the error.
        line: usize,
        /// 1-based column of the error.
        column: usize,
    },
    /// The `format` marker is missing or names another kind of state.
    #[error("stored state: format is not {expected:?}")]
    UnknownFormat {
        /// The `format` that was expected.
        expected: &'static str,
    },
    /// The `version` is missing.
    #[error("stored {format}: version is missing")]
    MissingVersion {
        /// The `format` read.
        format: &'static str,
    },
    /// A version this build does not read (written by a newer onair?).
    #[error("stored {format}: version {found} is not supported (this build reads {supported})")]
    UnsupportedVersion {
        /// The `format` read.
        format: &'static str,
        /// The version found.
        found: u64,
        /// The version this build reads and writes.
        supported: u32,
    },
}

/// Checks `format` and `version`, then reads the whole document as `T`.
pub(crate) fn load<T: DeserializeOwned>(
    json: &[u8],
    format: &'static str,
    version: u32,
) -> Result<T, StateError> {
    #[derive(Deserialize)]
    struct Header {
        format: Option<String>,
        version: Option<u64>,
    }
    let json_error = |e: serde_json::Error| StateError::Json {
        format,
        line: e.line(),
        column: e.column(),
    };
    let header: Header = serde_json::from_slice(json).map_err(json_error)?;
    if header.format.as_deref() != Some(format) {
        return Err(StateError::UnknownFormat { expected: format });
    }
    match header.version {
        Some(v) if v == u64::from(version) => {}
        Some(found) => {
            return Err(StateError::UnsupportedVersion {
                format,
                found,
                supported: version,
            })
        }
        None => return Err(StateError::MissingVersion { format }),
    }
    serde_json::from_slice(json).map_err(json_error)
}
