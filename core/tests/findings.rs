//! Regression tests for fuzz findings (FUZZING.md, "Findings") that need a
//! whole-crate view: while a finding is open its test is ignored; once fixed
//! it runs with every `cargo test`.

use onair::sse::Parser;

/// Finding #8 (the `c_api` target, 2026-11-23): a frame cap near
/// `usize::MAX` (what a C caller passes as SIZE_MAX, "no limit") overflows
/// `max_frame_bytes + ALLOCATION_SLACK` in `sse::Parser` (a panic with
/// overflow checks, a wrapped, tiny allocation budget without). Fixed in the
/// parser (saturating sums).
#[test]
fn a_frame_cap_of_usize_max_reads_frames_like_the_default_cap() {
    let mut stream = b":heartbeat\n\nid:1\nevent:chat\ndata:{\"a\":1}\n\ndata:".to_vec();
    stream.extend(std::iter::repeat_n(b'x', 100_000));
    stream.extend(b"\n\n");
    let items = |mut parser: Parser| {
        let mut rest = &stream[..];
        let mut out = Vec::new();
        while let Some(item) = parser.next_item(&mut rest) {
            out.push(format!("{item:?}"));
        }
        out
    };
    assert_eq!(
        items(Parser::with_max_frame_bytes(usize::MAX)),
        items(Parser::new())
    );
    assert_eq!(
        items(Parser::with_max_frame_bytes(usize::MAX - 1)),
        items(Parser::new())
    );
}
