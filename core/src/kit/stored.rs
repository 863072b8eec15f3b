//! The versioned JSON form of the kit's per-broadcast memory, shared by
//! [`Audience`](super::audience::Audience) and
//! [`Milestones`](super::milestones::Milestones): like the token file, a
//! `format` marker and a `version`, checked before anything else is read.

use crate::wire::{self, StoredRefusal};

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
    #[error("stored state: format is not \"{expected}\"")]
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

/// Checks `format` and `version`, then reads the whole document
/// ([`wire::read_stored`], the token file's rule too).
pub(crate) fn load<T: serde::de::DeserializeOwned>(
    bytes: &[u8],
    format: &'static str,
    version: u32,
) -> Result<T, StateError> {
    wire::read_stored(bytes, format, version).map_err(|refusal| match refusal {
        StoredRefusal::Json { line, column } => StateError::Json {
            format,
            line,
            column,
        },
        StoredRefusal::UnknownFormat => StateError::UnknownFormat { expected: format },
        StoredRefusal::MissingVersion => StateError::MissingVersion { format },
        StoredRefusal::UnsupportedVersion(found) => StateError::UnsupportedVersion {
            format,
            found,
            supported: version,
        },
    })
}
