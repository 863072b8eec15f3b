//! Text from the service, bounded: what the event log stores and the pages
//! show is cut here, below both the bots and the pages.

/// A log line's text is stored (and sent to live streams) cut to this many
/// characters.
pub const STORED_TEXT_CHARS: usize = 1_000;

/// `text` cut to `max` characters (at a character boundary) with "…".
///
/// ```
/// assert_eq!(onair_host::text::cut("héllo", 2), "hé…");
/// assert_eq!(onair_host::text::cut("hi", 2), "hi");
/// ```
pub fn cut(text: &str, max: usize) -> std::borrow::Cow<'_, str> {
    match text.char_indices().nth(max) {
        Some((end, _)) => format!("{}…", &text[..end]).into(),
        None => text.into(),
    }
}
