//! The decoder module (feature `decoder`, `onair_decoder_bg.wasm`): SSE
//! framing plus typed decoding, bytes in, items out on a tape of numbers
//! and one text buffer (`tape.rs`) that `bot.js` turns into the objects of
//! the `onair decode` lines.

use onair::sse;
use wasm_bindgen::prelude::*;

use crate::tape::Tape;

/// SSE framing plus typed decoding: bytes in, items out on a tape.
///
/// The tape stays in wasm memory between calls (its buffers keep their
/// capacity): after each `push`, `head` holds where its numbers and text
/// are, and `bot.js` reads them through views of the memory, no copy.
#[wasm_bindgen]
#[derive(Debug)]
pub struct Decoder {
    inner: onair::Decoder,
    tape: Tape,
    /// Address and length of the tape's numbers, then of its text (UTF-8).
    head: Box<[u32; 4]>,
}

/// The module's memory, for `bot.js`'s views of the tape.
#[wasm_bindgen(js_name = wasmMemory)]
pub fn wasm_memory() -> JsValue {
    wasm_bindgen::memory()
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
            head: Box::new([0; 4]),
        }
    }

    /// The address of the head (four `u32`: the numbers' address and
    /// count, the text's address and length in bytes).
    #[wasm_bindgen(getter)]
    pub fn head(&self) -> u32 {
        self.head.as_ptr() as u32
    }

    /// Decodes a chunk of bytes onto the tape; how many numbers it holds.
    pub fn push(&mut self, chunk: &[u8]) -> u32 {
        self.tape.clear();
        for item in self.inner.items(chunk) {
            self.tape.item(&item);
        }
        self.publish()
    }

    /// Decodes a chunk of text onto the tape; how many numbers it holds.
    #[wasm_bindgen(js_name = pushText)]
    pub fn push_text(&mut self, chunk: &str) -> u32 {
        self.push(chunk.as_bytes())
    }

    /// Ends the stream: an empty tape, or an `incomplete_frame` error when a
    /// frame was pending; how many numbers it holds.
    pub fn finish(&mut self) -> u32 {
        self.tape.clear();
        if let Some(item) = self.inner.finish() {
            self.tape.item(&item);
        }
        self.publish()
    }

    fn publish(&mut self) -> u32 {
        let (nums, text) = (&self.tape.nums, &self.tape.text);
        // Addresses and lengths in wasm32's 32-bit memory.
        *self.head = [
            nums.as_ptr() as u32,
            nums.len() as u32,
            text.as_ptr() as u32,
            text.len() as u32,
        ];
        nums.len() as u32
    }
}
