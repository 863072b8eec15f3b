//! Differential: any chunking of any bytes yields the items of the whole parse,
//! with buffered bytes never over the cap. The first byte picks the chunk size;
//! a small cap exercises the cap's paths, the default one carries whole frames
//! cut by chunk ends (up to 8 KiB) and reads them in one go.
#![no_main]

use libfuzzer_sys::fuzz_target;
use onair::sse::{Parser, DEFAULT_MAX_FRAME_BYTES};

fn items(cap: usize, chunks: &mut dyn Iterator<Item = &[u8]>) -> Vec<String> {
    let mut parser = Parser::with_max_frame_bytes(cap);
    let mut out = Vec::new();
    for chunk in chunks {
        let mut rest = chunk;
        while let Some(item) = parser.next_item(&mut rest) {
            out.push(format!("{item:?}"));
        }
        assert!(parser.buffered_bytes() <= cap);
    }
    out.extend(parser.finish().map(|item| format!("{item:?}")));
    out
}

fuzz_target!(|input: &[u8]| {
    let Some((&seed, data)) = input.split_first() else { return };
    let size = usize::from(seed % 17) + 1;
    for cap in [128, DEFAULT_MAX_FRAME_BYTES] {
        let whole = items(cap, &mut std::iter::once(data));
        let split = items(cap, &mut data.chunks(size));
        assert_eq!(whole, split);
        // Chunks of the size the first bytes name, 1 to 4096.
        let wide = usize::from(u16::from_le_bytes([seed, *data.first().unwrap_or(&0)]) % 4096) + 1;
        assert_eq!(whole, items(cap, &mut data.chunks(wide)));
    }
});
