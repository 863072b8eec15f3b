//! The decoder module (feature `decoder`, `onair_decoder_bg.wasm`): SSE
//! framing plus typed decoding, bytes in, items out on a tape of numbers
//! and one text buffer (`tape.rs`) that `index.js` turns into the objects of
//! the `onair decode` lines.

use onair::sse;
use wasm_bindgen::prelude::*;

use crate::tape::Tape;

/// SSE framing plus typed decoding: bytes in, items out on a tape.
#[wasm_bindgen]
#[derive(Debug)]
pub struct Decoder {
    inner: onair::Decoder,
    tape: Tape,
}

#[wasm_bindgen]
impl Decoder {
    /// A decoder; `max_frame_bytes` caps one frame (default 256 KiB).
    #[wasm_bindgen(constructor)]
    pub fn new(max_frame_bytes: Option<u32>) -> Decoder {
        let parser = match max_frame_bytes {
            Some(cap) => sse::Parser::with_max_frame_bytes(cap as usize),
            None => sse::Parser::new(),
        };
        Decoder {
            inner: onair::Decoder::with_parser(parser),
            tape: Tape::default(),
        }
    }

    /// Decodes a chunk of bytes onto the tape: returns its numbers; its
    /// text follows from [`Decoder::text`].
    pub fn push(&mut self, chunk: &[u8]) -> Vec<f64> {
        self.tape.clear();
        let mut rest = chunk;
        while let Some(item) = self.inner.next_item(&mut rest) {
            self.tape.item(&item);
        }
        std::mem::take(&mut self.tape.nums)
    }

    /// Decodes a chunk of text onto the tape.
    #[wasm_bindgen(js_name = pushText)]
    pub fn push_text(&mut self, chunk: &str) -> Vec<f64> {
        self.push(chunk.as_bytes())
    }

    /// The text of the last [`Decoder::push`] or [`Decoder::finish`] (its
    /// strings, concatenated).
    pub fn text(&mut self) -> String {
        std::mem::take(&mut self.tape.text)
    }

    /// Ends the stream: an empty tape, or an `incomplete_frame` error when a
    /// frame was pending.
    pub fn finish(&mut self) -> Vec<f64> {
        self.tape.clear();
        if let Some(item) = self.inner.finish() {
            self.tape.item(&item);
        }
        std::mem::take(&mut self.tape.nums)
    }
}
