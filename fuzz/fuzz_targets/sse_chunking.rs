//! Differential: any chunking of any bytes yields the items of the whole parse,
//! with buffered bytes never over the cap. The first byte picks the chunk size.
#![no_main]

use libfuzzer_sys::fuzz_target;
use onair::sse::Parser;

fn items(chunks: &mut dyn Iterator<Item = &[u8]>) -> Vec<String> {
    let mut parser = Parser::with_max_frame_bytes(128);
    let mut out = Vec::new();
    for chunk in chunks {
        let mut rest = chunk;
        while let Some(item) = parser.next_item(&mut rest) {
            out.push(format!("{item:?}"));
        }
        assert!(parser.buffered_bytes() <= 128);
    }
    out.extend(parser.finish().map(|item| format!("{item:?}")));
    out
}

fuzz_target!(|input: &[u8]| {
    let Some((&seed, data)) = input.split_first() else { return };
    let size = usize::from(seed % 17) + 1;
    let whole = items(&mut std::iter::once(data));
    let split = items(&mut data.chunks(size));
    assert_eq!(whole, split);
});
