//! Tokens at rest: XChaCha20-Poly1305 (RustCrypto's `chacha20poly1305`)
//! with a key from the environment, a random 24-byte nonce per seal, and
//! the row it belongs to as associated data, so a sealed pair copied onto
//! another bot's row does not open.
//!
//! The stored form is `v1.<base64 of nonce ‖ ciphertext>`.
//!
//! ```
//! use onair_host::crypto::TokenCipher;
//! let cipher = TokenCipher::from_base64("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=").unwrap();
//! let sealed = cipher.seal(b"the pair", b"bot:1");
//! assert!(sealed.starts_with("v1."));
//! assert_eq!(&*cipher.open(&sealed, b"bot:1").unwrap(), b"the pair");
//! assert!(cipher.open(&sealed, b"bot:2").is_err());
//! ```

use std::fmt;

use base64::engine::general_purpose::{STANDARD, URL_SAFE, URL_SAFE_NO_PAD};
use base64::Engine;
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use rand::Rng;
use zeroize::Zeroizing;

const PREFIX: &str = "v1.";
const NONCE: usize = 24;

/// Seals and opens token pairs. Its `Debug` shows nothing of the key.
#[derive(Clone)]
pub struct TokenCipher {
    aead: XChaCha20Poly1305,
}

impl fmt::Debug for TokenCipher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("TokenCipher(<key redacted>)")
    }
}

/// A sealed value that does not open: another key, another row, or damage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the stored tokens do not open with this key (another key, another row, or damaged)")]
pub struct OpenError;

impl TokenCipher {
    /// The key as base64 (standard or URL-safe) of exactly 32 bytes.
    pub fn from_base64(text: &str) -> Result<TokenCipher, String> {
        let text = text.trim();
        if text.is_empty() {
            return Err(
                "not set: 32 random bytes as base64 (e.g. `openssl rand -base64 32`)".into(),
            );
        }
        let bytes = Zeroizing::new(
            STANDARD
                .decode(text)
                .or_else(|_| URL_SAFE.decode(text))
                .or_else(|_| URL_SAFE_NO_PAD.decode(text))
                .map_err(|_| "not base64".to_owned())?,
        );
        if bytes.len() != 32 {
            return Err(format!(
                "{} bytes: the key must be exactly 32 bytes",
                bytes.len()
            ));
        }
        let aead = XChaCha20Poly1305::new_from_slice(&bytes).map_err(|_| "bad key".to_owned())?;
        Ok(TokenCipher { aead })
    }

    /// Seals `plain`, bound to `row` (associated data).
    pub fn seal(&self, plain: &[u8], row: &[u8]) -> String {
        let mut nonce = [0u8; NONCE];
        rand::rng().fill_bytes(&mut nonce);
        let sealed = self
            .aead
            .encrypt(
                XNonce::from_slice(&nonce),
                Payload {
                    msg: plain,
                    aad: row,
                },
            )
            // Encryption fails only past the cipher's length limit (256 GiB).
            .unwrap_or_default();
        let mut out = Vec::with_capacity(NONCE + sealed.len());
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&sealed);
        format!("{PREFIX}{}", STANDARD.encode(out))
    }

    /// Opens what [`seal`](Self::seal) made for `row`.
    pub fn open(&self, sealed: &str, row: &[u8]) -> Result<Zeroizing<Vec<u8>>, OpenError> {
        let body = sealed.strip_prefix(PREFIX).ok_or(OpenError)?;
        let bytes = STANDARD.decode(body).map_err(|_| OpenError)?;
        if bytes.len() < NONCE {
            return Err(OpenError);
        }
        let (nonce, ciphertext) = bytes.split_at(NONCE);
        self.aead
            .decrypt(
                XNonce::from_slice(nonce),
                Payload {
                    msg: ciphertext,
                    aad: row,
                },
            )
            .map(Zeroizing::new)
            .map_err(|_| OpenError)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";

    #[test]
    fn seal_hides_the_plaintext_and_nonces_differ() {
        let c = TokenCipher::from_base64(KEY).unwrap();
        let a = c.seal(b"rt_secret_refresh", b"bot:1");
        let b = c.seal(b"rt_secret_refresh", b"bot:1");
        assert_ne!(a, b);
        assert!(!a.contains("secret"));
        assert_eq!(&*c.open(&b, b"bot:1").unwrap(), b"rt_secret_refresh");
    }

    #[test]
    fn a_wrong_key_row_or_damage_does_not_open() {
        let c = TokenCipher::from_base64(KEY).unwrap();
        let other = TokenCipher::from_base64(&STANDARD.encode([9u8; 32])).unwrap();
        let sealed = c.seal(b"pair", b"bot:1");
        assert_eq!(other.open(&sealed, b"bot:1"), Err(OpenError));
        assert_eq!(c.open(&sealed, b"bot:2"), Err(OpenError));
        let mut damaged = sealed.clone();
        damaged.pop();
        damaged.push('A');
        assert!(c.open(&damaged, b"bot:1").is_err());
        assert!(c.open("v1.", b"bot:1").is_err());
        assert!(c.open("plain", b"bot:1").is_err());
    }

    #[test]
    fn keys_must_be_32_bytes_of_base64() {
        assert!(TokenCipher::from_base64("").is_err());
        assert!(TokenCipher::from_base64("!!!").is_err());
        assert!(TokenCipher::from_base64(&STANDARD.encode([1u8; 16])).is_err());
        assert!(TokenCipher::from_base64(&URL_SAFE_NO_PAD.encode([1u8; 32])).is_ok());
        assert_eq!(
            format!("{:?}", TokenCipher::from_base64(KEY).unwrap()),
            "TokenCipher(<key redacted>)"
        );
    }
}
