//! Secrets and an app's client credentials: values that never show in
//! `Debug`, `Display`, errors or logs, and are wiped from memory when dropped.
//!
//! ```
//! use onair::{ClientCredentials, Secret};
//!
//! let creds = ClientCredentials::new("0b3e8f3c-5a2b-4c1d-9e8f-7a6b5c4d3e2f", "s3cret")?;
//! assert!(!format!("{creds:?}").contains("s3cret"));
//! assert_eq!(Secret::new("t").expose(), "t");
//! # Ok::<(), onair::CredentialsError>(())
//! ```

use std::fmt;

use zeroize::{Zeroize, ZeroizeOnDrop};

/// Client credentials refused locally (the server would answer 401
/// `invalid_client`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum CredentialsError {
    /// `client_id` is not a UUID.
    #[error(
        "client_id must be a UUID (8-4-4-4-12 hexadecimal digits); \
         the server answers anything else with invalid_client"
    )]
    InvalidClientId,
    /// The client secret is empty.
    #[error("client_secret must not be empty")]
    EmptySecret,
}

impl CredentialsError {
    /// A stable snake_case code: `invalid_client_id` or `empty_value`.
    pub fn code(self) -> &'static str {
        match self {
            CredentialsError::InvalidClientId => "invalid_client_id",
            CredentialsError::EmptySecret => "empty_value",
        }
    }
}

/// A secret string (client secret, access or refresh token).
///
/// `Debug` and `Display` print `<redacted>`; read the value with
/// [`Secret::expose`]. The bytes are zeroized when the value is dropped
/// (best effort: copies made before it was wrapped are out of reach).
///
/// ```
/// use onair::Secret;
///
/// let s = Secret::new("hunter2");
/// assert_eq!(format!("{s} {s:?}"), "<redacted> Secret(<redacted>)");
/// assert_eq!(s.expose(), "hunter2");
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret value.
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The secret itself. Do not log it.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Whether the secret is the empty string.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl From<String> for Secret {
    fn from(value: String) -> Self {
        Secret(value)
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

impl Drop for Secret {
    fn drop(&mut self) {
        self.0.zeroize();
    }
}

impl ZeroizeOnDrop for Secret {}

/// An app's `client_id`: a UUID (spec 5.2 rule 4), checked locally.
///
/// ```
/// use onair::ClientId;
///
/// assert!(ClientId::new("0B3E8F3C-5A2B-4C1D-9E8F-7A6B5C4D3E2F").is_ok());
/// assert!(ClientId::new("my-app").is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ClientId(String);

impl ClientId {
    /// Accepts the canonical UUID text form `8-4-4-4-12` hexadecimal digits
    /// (either case); anything else is [`CredentialsError::InvalidClientId`].
    pub fn new(id: &str) -> Result<Self, CredentialsError> {
        let bytes = id.as_bytes();
        let ok = bytes.len() == 36
            && bytes.iter().enumerate().all(|(i, b)| match i {
                8 | 13 | 18 | 23 => *b == b'-',
                _ => b.is_ascii_hexdigit(),
            });
        if ok {
            Ok(ClientId(id.to_owned()))
        } else {
            Err(CredentialsError::InvalidClientId)
        }
    }

    /// The id as given.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ClientId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// An app's client credentials for the token endpoints. The secret must only
/// be used from a server (spec 5.2 rule 6). `Debug` redacts it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientCredentials {
    client_id: ClientId,
    client_secret: Secret,
}

impl ClientCredentials {
    /// Checks `client_id` (a UUID) and `client_secret` (not empty).
    ///
    /// ```
    /// use onair::ClientCredentials;
    ///
    /// let err = ClientCredentials::new("not-a-uuid", "s").unwrap_err();
    /// assert_eq!(err.code(), "invalid_client_id");
    /// ```
    pub fn new(
        client_id: &str,
        client_secret: impl Into<String>,
    ) -> Result<Self, CredentialsError> {
        let client_id = ClientId::new(client_id)?;
        let client_secret = Secret::new(client_secret);
        if client_secret.is_empty() {
            return Err(CredentialsError::EmptySecret);
        }
        Ok(ClientCredentials {
            client_id,
            client_secret,
        })
    }

    /// The client id.
    pub fn client_id(&self) -> &ClientId {
        &self.client_id
    }

    /// The client secret.
    pub fn client_secret(&self) -> &Secret {
        &self.client_secret
    }
}
