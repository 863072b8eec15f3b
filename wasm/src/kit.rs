//! The kit's pure helpers: chat split and truncate at grapheme boundaries,
//! UTF-16 length, command arguments. The configured kit itself (commands,
//! greetings, milestones, the tally) lives inside the [`crate::bot::Bot`]
//! (`new Bot({ kit: {…} })`) and speaks through its actions.

use wasm_bindgen::prelude::*;

/// Splits chat text into messages the service takes (grapheme-safe).
#[wasm_bindgen(js_name = splitChat)]
pub fn split_chat(text: &str) -> Vec<String> {
    onair::kit::text::split(text)
}

/// Truncates text to `limit` UTF-16 units at a grapheme boundary.
#[wasm_bindgen(js_name = truncateChat)]
pub fn truncate_chat(text: &str, limit: Option<u32>, ellipsis: &str) -> String {
    // Without a limit, the service's own: the core's CHAT_MAX_UTF16.
    let limit = limit.map_or(onair::api::CHAT_MAX_UTF16, |l| l as usize);
    onair::kit::text::truncate(text, limit, ellipsis)
}

/// The length of `text` in UTF-16 code units, as the service counts chat.
#[wasm_bindgen(js_name = utf16Len)]
pub fn utf16_len(text: &str) -> u32 {
    u32::try_from(onair::kit::text::utf16_len(text)).unwrap_or(u32::MAX)
}

/// Splits command arguments (quotes group words).
#[wasm_bindgen(js_name = splitArgs)]
pub fn split_args(text: &str) -> Vec<String> {
    onair::kit::commands::split_args(text)
}
