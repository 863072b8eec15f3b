//! Any bytes through framing and typed decoding: never a panic, and every item
//! serializes to one JSON line.
#![no_main]

use libfuzzer_sys::fuzz_target;
use onair::event::Decoder;

fuzz_target!(|data: &[u8]| {
    let mut decoder = Decoder::new();
    let mut rest = data;
    while let Some(item) = decoder.next_item(&mut rest) {
        let line = serde_json::to_string(&item).expect("items always serialize");
        assert!(line.starts_with('{') && !line.contains('\n'));
    }
    let _ = decoder.finish();
});
