//! The chat message rules of the service (spec 4.7, 8), in one place: at
//! most [`CHAT_MAX_UTF16`] UTF-16 code units, not empty, not only
//! whitespace. [`validate_chat`] answers exactly what the server would.
//!
//! ```
//! use onair::api::validate_chat;
//! use onair::ChatErrorKind;
//!
//! assert!(validate_chat("hello").is_ok());
//! assert_eq!(validate_chat(" ").unwrap_err().kind, ChatErrorKind::Empty);
//! ```

/// Chat length limit in UTF-16 code units (spec 4.7, 8).
pub const CHAT_MAX_UTF16: usize = 200;

/// Why a chat message would be refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChatErrorKind {
    /// Over [`CHAT_MAX_UTF16`] UTF-16 code units (server: 400 `OAPI_MNGR_0109`).
    TooLong,
    /// Empty or only Unicode White_Space (server: 400 `OAPI_MNGR_0108`).
    Empty,
}

impl ChatErrorKind {
    /// `chat_too_long` or `chat_empty`.
    pub fn code(self) -> &'static str {
        match self {
            ChatErrorKind::TooLong => "chat_too_long",
            ChatErrorKind::Empty => "chat_empty",
        }
    }
}

/// A chat message the server would refuse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
#[error("{}", match self.kind {
    ChatErrorKind::TooLong => format!(
        "chat_too_long: {} UTF-16 code units, at most {CHAT_MAX_UTF16} allowed",
        self.utf16_len
    ),
    ChatErrorKind::Empty => "chat_empty: the message is empty or only whitespace".to_owned(),
})]
pub struct ChatError {
    /// Why.
    pub kind: ChatErrorKind,
    /// The message's length in UTF-16 code units.
    pub utf16_len: usize,
}

/// Checks a chat message as the server would (spec 4.7): at most 200 UTF-16
/// code units (an emoji outside the BMP counts 2), not empty, not only
/// whitespace (Unicode White_Space, as [`char::is_whitespace`]).
///
/// ```
/// use onair::api::validate_chat;
/// use onair::ChatErrorKind;
///
/// assert!(validate_chat(&"😀".repeat(100)).is_ok()); // 200 units
/// let e = validate_chat(&"😀".repeat(101)).unwrap_err();
/// assert_eq!((e.kind, e.utf16_len), (ChatErrorKind::TooLong, 202));
/// assert_eq!(validate_chat("\u{2003}\n").unwrap_err().kind, ChatErrorKind::Empty);
/// ```
pub fn validate_chat(message: &str) -> Result<(), ChatError> {
    let utf16_len = message.encode_utf16().count();
    if message.chars().all(char::is_whitespace) {
        return Err(ChatError {
            kind: ChatErrorKind::Empty,
            utf16_len,
        });
    }
    if utf16_len > CHAT_MAX_UTF16 {
        return Err(ChatError {
            kind: ChatErrorKind::TooLong,
            utf16_len,
        });
    }
    Ok(())
}
