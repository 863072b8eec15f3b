//! Unit tests (one per framing rule), the vector table and chunking properties.

use super::reference::{self, Seen};
use super::*;
use proptest::prelude::*;

/// Sizes and counts for the exhaustive tests: the full ones natively, small
/// ones under miri (which runs the same code ~1000x slower).
const fn sized(native: usize, miri: usize) -> usize {
    if cfg!(miri) {
        miri
    } else {
        native
    }
}

/// Renders an item as one line, so expected output reads like the stream.
fn render(item: &Item<'_>) -> String {
    match item {
        Item::Event(f) => format!(
            "event {} {:?} id={:?} last={:?}",
            f.event, f.data, f.id, f.last_event_id
        ),
        Item::Comment(text) => format!("comment {text:?}"),
        Item::Retry(ms) => format!("retry {ms}"),
        Item::Error(e) => format!(
            "error {:?} event={:?} id={:?} raw={:?}",
            e.kind, e.event, e.id, e.raw
        ),
    }
}

/// Feeds `chunks` one by one, then finishes; returns every item rendered.
/// Every chunk is also fed through [`Parser::next_item_in`] to a twin parser, which
/// must say the same.
fn parse_chunks(parser: &mut Parser, chunks: &[&[u8]]) -> Vec<String> {
    let mut twin = parser.clone();
    let mut out = Vec::new();
    let mut twin_out = Vec::new();
    for chunk in chunks {
        let mut rest = *chunk;
        while let Some(item) = parser.next_item(&mut rest) {
            out.push(render(&item));
        }
        assert!(rest.is_empty());
        let mut whole = Chunk::new(chunk);
        while let Some(item) = twin.next_item_in(&mut whole) {
            twin_out.push(render(&item));
        }
        assert!(whole.rest().is_empty());
    }
    if let Some(item) = parser.finish() {
        out.push(format!("finish {}", render(&item)));
    }
    if let Some(item) = twin.finish() {
        twin_out.push(format!("finish {}", render(&item)));
    }
    assert_eq!(
        out, twin_out,
        "Parser::next_item_in says what Parser::next_item says"
    );
    out
}

fn parse(input: &[u8]) -> Vec<String> {
    parse_chunks(&mut Parser::new(), &[input])
}

fn parse_bytewise(input: &[u8]) -> Vec<String> {
    let chunks: Vec<&[u8]> = input.chunks(1).collect();
    parse_chunks(&mut Parser::new(), &chunks)
}

fn ev(event: &str, data: &str, id: Option<&str>, last: &str) -> String {
    render(&Item::Event(Frame {
        event,
        data,
        id,
        last_event_id: last,
    }))
}

// ---- one test per rule -------------------------------------------------------

#[test]
fn lf_cr_and_crlf_line_ends_mix() {
    let out = parse(b"data: a\r\n\r\ndata: b\r\rdata: c\n\ndata: d\r\n\n");
    assert_eq!(
        out,
        [
            ev("message", "a", None, ""),
            ev("message", "b", None, ""),
            ev("message", "c", None, ""),
            ev("message", "d", None, ""),
        ]
    );
}

#[test]
fn crlf_split_across_chunks_is_one_line_end() {
    let mut p = Parser::new();
    let out = parse_chunks(
        &mut p,
        &[b"data: a\r", b"\n", b"\r", b"\ndata: b\r", b"\n\r\n"],
    );
    assert_eq!(
        out,
        [ev("message", "a", None, ""), ev("message", "b", None, "")]
    );
}

#[test]
fn cr_at_chunk_end_dispatches_without_waiting() {
    let mut p = Parser::new();
    let mut rest: &[u8] = b"data: now\r\r";
    let item = p.next_item(&mut rest).map(|i| render(&i));
    assert_eq!(item, Some(ev("message", "now", None, "")));
    assert!(rest.is_empty());
    // The LF that may follow belongs to the CR already seen: no blank line.
    let mut rest: &[u8] = b"\ndata: next\n\n";
    let item = p.next_item(&mut rest).map(|i| render(&i));
    assert_eq!(item, Some(ev("message", "next", None, "")));
}

#[test]
fn bom_at_start_is_dropped_once() {
    assert_eq!(
        parse(b"\xEF\xBB\xBFdata: a\n\n"),
        [ev("message", "a", None, "")]
    );
    // A second BOM is content: the field name becomes "\u{feff}data", unknown.
    assert_eq!(
        parse(b"\xEF\xBB\xBF\xEF\xBB\xBFdata: a\n\n"),
        Vec::<String>::new()
    );
}

#[test]
fn split_bom_is_dropped() {
    let mut p = Parser::new();
    let out = parse_chunks(&mut p, &[b"\xEF", b"\xBB", b"\xBFdata: a\n\n"]);
    assert_eq!(out, [ev("message", "a", None, "")]);
}

#[test]
fn partial_bom_is_content() {
    let mut p = Parser::new();
    let out = parse_chunks(&mut p, &[b"\xEF\xBB", b"x\n: c\n"]);
    assert_eq!(out, ["comment \" c\""]);
}

#[test]
fn field_forms() {
    assert_eq!(parse(b"data:a\n\n"), [ev("message", "a", None, "")]);
    assert_eq!(parse(b"data: a\n\n"), [ev("message", "a", None, "")]);
    assert_eq!(parse(b"data:  a\n\n"), [ev("message", " a", None, "")]);
    assert_eq!(parse(b"data\n\n"), [ev("message", "", None, "")]);
    assert_eq!(parse(b"data:a:b\n\n"), [ev("message", "a:b", None, "")]);
}

#[test]
fn comments_are_reported_verbatim() {
    assert_eq!(parse(b":heartbeat\n"), ["comment \"heartbeat\""]);
    assert_eq!(parse(b": spaced \n"), ["comment \" spaced \""]);
    assert_eq!(parse(b":\n"), ["comment \"\""]);
}

#[test]
fn unknown_fields_are_ignored() {
    assert_eq!(
        parse(b"foo: bar\nDATA: x\ndata: y\n\n"),
        [ev("message", "y", None, "")]
    );
}

#[test]
fn data_lines_join_with_lf() {
    assert_eq!(
        parse(b"data: a\ndata: b\ndata\n\n"),
        [ev("message", "a\nb\n", None, "")]
    );
}

#[test]
fn frame_without_data_dispatches_nothing() {
    assert_eq!(parse(b"event: chat\nid: 1\n\n"), Vec::<String>::new());
    // ...and its event name does not leak into the next frame.
    assert_eq!(
        parse(b"event: chat\n\ndata: x\n\n"),
        [ev("message", "x", None, "")]
    );
}

#[test]
fn empty_data_line_dispatches_empty_string() {
    assert_eq!(parse(b"data:\n\n"), [ev("message", "", None, "")]);
}

#[test]
fn event_name_defaults_and_resets() {
    assert_eq!(
        parse(b"event: chat\ndata: a\n\ndata: b\n\n"),
        [ev("chat", "a", None, ""), ev("message", "b", None, "")]
    );
    assert_eq!(
        parse(b"event:\ndata: a\n\n"),
        [ev("message", "a", None, "")]
    );
}

#[test]
fn id_persists_and_frame_id_is_reported() {
    assert_eq!(
        parse(b"id: 7-1\ndata: a\n\ndata: b\n\nid\ndata: c\n\n"),
        [
            ev("message", "a", Some("7-1"), "7-1"),
            ev("message", "b", None, "7-1"),
            ev("message", "c", Some(""), ""),
        ]
    );
}

#[test]
fn id_with_nul_is_ignored() {
    assert_eq!(
        parse(b"id: 1\ndata: a\n\nid: 2\x003\ndata: b\n\n"),
        [
            ev("message", "a", Some("1"), "1"),
            ev("message", "b", None, "1")
        ]
    );
}

#[test]
fn retry_is_reported_when_its_line_is_read() {
    let mut p = Parser::new();
    let mut rest: &[u8] = b"retry: 3000\ndata: never ends";
    assert_eq!(
        p.next_item(&mut rest).map(|i| render(&i)),
        Some("retry 3000".into())
    );
    assert!(p.next_item(&mut rest).is_none());
    assert!(matches!(
        p.finish(),
        Some(Item::Error(FrameError {
            kind: FrameErrorKind::Incomplete,
            ..
        }))
    ));
}

#[test]
fn retry_needs_only_ascii_digits() {
    assert_eq!(
        parse(b"retry: 12a\nretry: -1\nretry:\nretry: 1.5\n"),
        Vec::<String>::new()
    );
    assert_eq!(
        parse(b"retry: 99999999999999999999999\n"),
        [format!("retry {}", u64::MAX)]
    );
}

#[test]
fn invalid_utf8_is_replaced_never_fatal() {
    assert_eq!(
        parse(b"event: c\xFFt\ndata: a\xC3\x28b\n\ndata: ok\n\n"),
        [
            ev("c\u{FFFD}t", "a\u{FFFD}(b", None, ""),
            ev("message", "ok", None, "")
        ]
    );
}

#[test]
fn multibyte_character_split_across_chunks_decodes_whole() {
    let mut p = Parser::new();
    let s = "data: 하트 ❤️\n\n".as_bytes();
    let out = parse_chunks(&mut p, &[&s[..7], &s[7..8], &s[8..]]);
    assert_eq!(out, [ev("message", "하트 ❤️", None, "")]);
}

#[test]
fn unterminated_frame_is_not_dispatched() {
    assert_eq!(
        parse(b"event: chat\nid: 5\ndata: a\n"),
        ["finish error Incomplete event=Some(\"chat\") id=Some(\"5\") raw=\"a\\n\""]
    );
    assert_eq!(
        parse(b"data: a\n\ndata: b"),
        [
            ev("message", "a", None, ""),
            "finish error Incomplete event=None id=None raw=\"data: b\"".into()
        ]
    );
    assert_eq!(parse(b"data: a\n\n"), [ev("message", "a", None, "")]);
}

#[test]
fn finish_resets_for_a_new_stream() {
    let mut p = Parser::new();
    assert_eq!(
        parse_chunks(&mut p, &[b"id: 9\ndata: a\n\ndata: b"]).len(),
        2
    );
    // New connection: BOM allowed again, last event id forgotten.
    assert_eq!(
        parse_chunks(&mut p, &[b"\xEF\xBB\xBFdata: c\n\n"]),
        [ev("message", "c", None, "")]
    );
}

#[test]
fn oversized_frame_is_reported_once_and_skipped() {
    let mut p = Parser::with_max_frame_bytes(64);
    let big = "x".repeat(100);
    let input = format!("event: chat\ndata: {big}\ndata: {big}\n\ndata: after\n\n");
    let out = parse_chunks(&mut p, &[input.as_bytes()]);
    assert_eq!(out.len(), 2, "{out:?}");
    assert!(out[0].starts_with("error TooLarge { limit: 64 } event=Some(\"chat\")"));
    assert_eq!(out[1], ev("message", "after", None, ""));
}

#[test]
fn never_ending_line_stays_under_the_cap() {
    let mut p = Parser::with_max_frame_bytes(1024);
    let chunk = [b'a'; 100];
    let mut errors = 0;
    for _ in 0..sized(10_000, 50) {
        let mut rest = &chunk[..];
        while let Some(item) = p.next_item(&mut rest) {
            assert!(matches!(item, Item::Error(_)));
            errors += 1;
        }
        assert!(p.buffered_bytes() <= 1024);
        assert!(p.allocated_bytes() <= 4 * 1024);
    }
    assert_eq!(errors, 1);
    // The line finally ends, then a blank line ends the discarded frame.
    let out = parse_chunks(&mut p, &[b"\n\ndata: ok\n\n"]);
    assert_eq!(out, [ev("message", "ok", None, "")]);
}

#[test]
fn idle_parser_holds_no_large_buffer() {
    let mut p = Parser::new();
    let big = format!("data: {}\n\n", "y".repeat(sized(200_000, 20_000)));
    let out = parse_chunks(&mut p, &[big.as_bytes(), b":heartbeat\n\n"]);
    assert_eq!(out.len(), 2);
    assert!(p.allocated_bytes() < 32 * 1024, "{}", p.allocated_bytes());
}

#[test]
fn comments_between_frames_do_not_count_toward_the_cap() {
    let mut p = Parser::with_max_frame_bytes(64);
    let mut input = Vec::new();
    for _ in 0..100 {
        input.extend_from_slice(b":heartbeat\n");
    }
    input.extend_from_slice(b"data: x\n\n");
    let out = parse_chunks(&mut p, &[&input]);
    assert_eq!(out.len(), 101);
    assert_eq!(out[100], ev("message", "x", None, ""));
}

#[test]
fn long_line_in_small_chunks_is_linear() {
    // 8 MiB in one line, 4 KiB at a time: each byte is scanned once. A
    // quadratic parser would scan ~8 GiB here and not finish in test time.
    let size = sized(8 * 1024 * 1024, 64 * 1024);
    let mut p = Parser::with_max_frame_bytes(16 * 1024 * 1024);
    let mut line = b"data: ".to_vec();
    line.resize(size, b'z');
    line.extend_from_slice(b"\n\n");
    let mut len = 0;
    for chunk in line.chunks(4096) {
        let mut rest = chunk;
        while let Some(item) = p.next_item(&mut rest) {
            if let Item::Event(f) = item {
                len = f.data.len();
            }
        }
    }
    assert_eq!(len, size - 6);
}

/// What the parser may allocate beyond its frame cap: the growable buffers'
/// shared slack plus the idle-sized repair and excerpt buffers.
const ALLOCATION_BOUND: usize = ALLOCATION_SLACK + 4 * IDLE_CAPACITY + 4 * 64;

#[test]
fn allocation_stays_within_cap_plus_a_constant_on_adversarial_frames() {
    let cap = sized(1024 * 1024, 8 * 1024);
    let third = "q".repeat(cap / 3 - 16);
    let invalid = vec![0xFFu8; cap / 2];
    let mut streams: Vec<Vec<u8>> = vec![
        // Event name, id and data each a third of the cap.
        format!("event:{third}\nid:{third}\ndata:{third}\n\n").into_bytes(),
        // Many tiny data lines up to the cap.
        "data\n".repeat(cap / 5 - 10).into_bytes(),
        // A long comment, then a long data line.
        format!(":{third}{third}\ndata:{third}{third}\n\n").into_bytes(),
    ];
    streams[1].extend_from_slice(b"\n");
    let mut bad = b"data:".to_vec();
    bad.extend_from_slice(&invalid);
    bad.extend_from_slice(b"\n\n");
    streams.push(bad);
    for stream in &streams {
        for chunk_size in [sized(7, 997), 4096, stream.len()] {
            let mut p = Parser::with_max_frame_bytes(cap);
            for piece in stream.chunks(chunk_size) {
                let mut rest = piece;
                while p.next_item(&mut rest).is_some() {
                    assert!(p.allocated_bytes() <= 4 * cap + ALLOCATION_BOUND);
                }
                assert!(
                    p.allocated_bytes() <= cap + ALLOCATION_BOUND,
                    "{} > cap + {ALLOCATION_BOUND} (chunk {chunk_size})",
                    p.allocated_bytes()
                );
            }
        }
    }
}

// ---- zero-copy and spill paths ---------------------------------------------------

/// Asserts that every split of `input` into two chunks (and, for short inputs,
/// into three) parses like the whole, under each cap.
fn assert_every_split_parses_alike(input: &[u8]) {
    for cap in [64, 100, DEFAULT_MAX_FRAME_BYTES] {
        let whole = parse_chunks(&mut Parser::with_max_frame_bytes(cap), &[input]);
        for i in (0..=input.len()).step_by(sized(1, 7)) {
            let (a, b) = input.split_at(i);
            let split = parse_chunks(&mut Parser::with_max_frame_bytes(cap), &[a, b]);
            assert_eq!(split, whole, "cap {cap}, split at {i} of {input:?}");
            if input.len() <= sized(80, 0) {
                for j in i..=input.len() {
                    let (b, c) = input[i..].split_at(j - i);
                    let three = parse_chunks(&mut Parser::with_max_frame_bytes(cap), &[a, b, c]);
                    assert_eq!(three, whole, "cap {cap}, splits at {i}, {j} of {input:?}");
                }
            }
        }
    }
}

#[test]
fn service_frames_split_at_every_position() {
    assert_every_split_parses_alike(
        b"id:1732250000000-17\nevent:chat\ndata:{\"message\":\"hi\"}\n\n\
          id:1732250000000-18\nevent:like\ndata:{\"totalAmount\":3}\n\n\
          :heartbeat\n\nevent:end\ndata:{\"reason\":\"LIVE_ENDED\"}\n\n",
    );
}

#[test]
fn comments_and_retries_inside_a_frame_leave_its_fields_intact() {
    for input in [
        &b"data: a\n:c\ndata: b\n\n"[..],
        b"event: x\n:c\nid: 5\ndata: a\n\n",
        b"id: 1\n:c\ndata: a\n\n",
        b"event: x\ndata: a\n:c\n\n",
        b"event: x\nretry: 5\ndata: y\n\n",
        b"id: 7\ndata: y\nretry: 5\n\ndata: z\n\n",
        b"event: a\nevent: b\nid: 1\nid: 2\ndata: x\n\n",
        b"id: 4\n\nevent: e\n\ndata: x\n\n",
    ] {
        assert_every_split_parses_alike(input);
    }
    assert_eq!(
        parse(b"event: x\n:c\nid: 5\ndata: a\n\n"),
        ["comment \"c\"".to_string(), ev("x", "a", Some("5"), "5")]
    );
    assert_eq!(
        parse(b"event: x\nretry: 5\ndata: y\n\n"),
        ["retry 5".to_string(), ev("x", "y", None, "")]
    );
}

#[test]
fn a_frame_within_one_chunk_borrows_its_data_from_the_input() {
    let input = b"id:1-2\nevent:chat\ndata:{\"a\":1}\n\ndata: x\ndata: y\n\n";
    let range = input.as_ptr_range();
    let mut p = Parser::new();
    let mut rest = &input[..];
    let Some(Item::Event(first)) = p.next_item(&mut rest) else {
        panic!("expected a frame");
    };
    assert_eq!(
        (first.event, first.data, first.id),
        ("chat", "{\"a\":1}", Some("1-2"))
    );
    assert!(
        range.contains(&first.data.as_ptr()),
        "single data line is borrowed"
    );
    assert!(
        range.contains(&first.event.as_ptr()),
        "event name is borrowed"
    );
    let Some(Item::Event(second)) = p.next_item(&mut rest) else {
        panic!("expected a frame");
    };
    assert_eq!((second.data, second.last_event_id), ("x\ny", "1-2"));
    assert!(
        !range.contains(&second.data.as_ptr()),
        "two data lines are joined in the parser"
    );
    assert!(p.next_item(&mut rest).is_none());
}

#[test]
fn items_of_a_chunk_lend_whole_frames_from_it_around_invalid_bytes() {
    let input: &[u8] = b"id:1\nevent:chat\ndata:\xED\x95\x9C\n\n\
        id:2\nevent:chat\ndata:\xFF\n\n\
        id:3\nevent:chat\ndata:ok\n\n\
        id:4\nevent:chat\ndata:\xED\x95";
    let range = input.as_ptr_range();
    let mut p = Parser::new();
    let mut chunk = Chunk::new(input);
    let mut out = Vec::new();
    while let Some(item) = p.next_item_in(&mut chunk) {
        if let Item::Event(frame) = &item {
            let borrowed = range.contains(&frame.data.as_ptr());
            out.push((frame.data.to_owned(), borrowed));
        }
    }
    assert_eq!(
        out,
        [
            ("한".to_owned(), true),
            ("\u{FFFD}".to_owned(), false),
            ("ok".to_owned(), true),
        ]
    );
    // A chunk that opens inside a character cut by the previous one.
    let (a, b) = "id:1\nevent:chat\ndata:한\n\nid:2\nevent:chat\ndata:ok\n\n"
        .as_bytes()
        .split_at(23);
    assert_eq!(
        parse_chunks(&mut Parser::new(), &[a, b]),
        [
            ev("chat", "한", Some("1"), "1"),
            ev("chat", "ok", Some("2"), "2")
        ]
    );
}

#[test]
fn a_frame_spread_over_chunks_is_copied_and_reads_the_same() {
    let mut p = Parser::new();
    let out = parse_chunks(&mut p, &[b"event: chat\nid: 9\n", b"data: x\n", b"\n"]);
    assert_eq!(out, [ev("chat", "x", Some("9"), "9")]);
    // A repeated name stored from an earlier chunk is reused, a new one replaces it.
    let out = parse_chunks(
        &mut p,
        &[
            b"event: chat\n",
            b"data: 1\n\nevent: chat\n",
            b"data: 2\n\nevent: like\n",
            b"data: 3\n\n",
        ],
    );
    assert_eq!(
        out,
        [
            ev("chat", "1", None, ""),
            ev("chat", "2", None, ""),
            ev("like", "3", None, "")
        ]
    );
}

#[test]
fn invalid_utf8_anywhere_in_a_frame_is_repaired_per_field() {
    let input =
        b"event: \xFFx\nid: \xFE\nfoo: \xFF\ndata: ok\n\ndata: \xC3\n\nid: 3\ndata: fine\n\n";
    let expected = [
        ev("\u{FFFD}x", "ok", Some("\u{FFFD}"), "\u{FFFD}"),
        ev("message", "\u{FFFD}", None, "\u{FFFD}"),
        ev("message", "fine", Some("3"), "3"),
    ];
    assert_eq!(parse(input), expected);
    assert_every_split_parses_alike(input);
}

#[test]
fn a_frame_read_in_one_go_is_validated_alike_whatever_follows_it() {
    // A frame read in one go is validated up to a 64-byte multiple when the
    // chunk holds the bytes after it: what those bytes are must not matter
    // (a character cut there, invalid UTF-8, the chunk's end).
    let afters: [&[u8]; 4] = [
        "data:한é한é한é한é한é한é한é한é한é한é한é한é한é한é\n\n".as_bytes(),
        b"data:\xC3\xA9\xFF\xC3\xA9\xFF\xC3\xA9\xFF\xC3\xA9\xFF\xC3\xA9\xFF\xC3\xA9\xFF\xC3\n\n",
        b"data:\xED\x95",
        b"",
    ];
    for filler in 20..sized(160, 24) {
        let data = "d".repeat(filler);
        for after in afters {
            let mut input = format!("id:1\nevent:chat\ndata:{data}\n\n").into_bytes();
            input.extend_from_slice(after);
            let range = input.as_ptr_range();
            let mut p = Parser::new();
            let mut rest = &input[..];
            let Some(Item::Event(frame)) = p.next_item(&mut rest) else {
                panic!("expected a frame");
            };
            assert_eq!(
                (frame.event, frame.data, frame.id),
                ("chat", &data[..], Some("1"))
            );
            assert!(range.contains(&frame.data.as_ptr()), "read in one go");
            assert_eq!(parse(&input), parse_bytewise(&input), "{input:?}");
        }
    }
}

#[test]
fn a_frame_is_capped_alike_read_in_one_go_or_line_by_line() {
    // With a 64-byte cap, frames right at and just past it, in every chunking.
    for filler in 30..sized(50, 33) {
        let data = "d".repeat(filler);
        let input = format!("event:ev\nid:12345\ndata:{data}\n\ndata:after\n\n");
        assert_every_split_parses_alike(input.as_bytes());
    }
    // A line is checked whole against the cap: the event name (2) + id (5) +
    // the data line "data:" + 52 bytes = 64 fits, one more byte does not.
    let fits = format!("event:ev\nid:12345\ndata:{}\n\n", "d".repeat(52));
    let out = parse_chunks(&mut Parser::with_max_frame_bytes(64), &[fits.as_bytes()]);
    assert_eq!(out, [ev("ev", &"d".repeat(52), Some("12345"), "12345")]);
    let over = format!("event:ev\nid:12345\ndata:{}\n\n", "d".repeat(53));
    let out = parse_chunks(&mut Parser::with_max_frame_bytes(64), &[over.as_bytes()]);
    assert!(out[0].starts_with("error TooLarge"), "{out:?}");
}

// ---- the vector table ----------------------------------------------------------

/// (name, stream, expected items; a `finish ` prefix marks what `finish` said).
fn vectors() -> Vec<(&'static str, &'static [u8], Vec<String>)> {
    let m = |data: &str| ev("message", data, None, "");
    vec![
        ("empty stream", b"", vec![]),
        ("only blank lines", b"\n\n\r\n\r", vec![]),
        ("single frame", b"data: x\n\n", vec![m("x")]),
        ("no space after colon", b"data:x\n\n", vec![m("x")]),
        ("two spaces keep one", b"data:  x\n\n", vec![m(" x")]),
        ("tab is not stripped", b"data:\tx\n\n", vec![m("\tx")]),
        ("field without colon", b"data\n\n", vec![m("")]),
        ("empty data value", b"data:\n\n", vec![m("")]),
        ("two empty data lines", b"data\ndata\n\n", vec![m("\n")]),
        ("multi-line data", b"data: a\ndata: b\n\n", vec![m("a\nb")]),
        ("colon in value", b"data: {\"a\":1}\n\n", vec![m("{\"a\":1}")]),
        ("crlf", b"data: x\r\n\r\n", vec![m("x")]),
        ("cr only", b"data: x\r\r", vec![m("x")]),
        ("mixed ends", b"data: a\rdata: b\r\ndata: c\n\r\n", vec![m("a\nb\nc")]),
        ("bom", b"\xEF\xBB\xBFdata: x\n\n", vec![m("x")]),
        ("bom then comment", b"\xEF\xBB\xBF:hi\n", vec!["comment \"hi\"".into()]),
        ("comment", b":heartbeat\n\n", vec!["comment \"heartbeat\"".into()]),
        ("comment with space", b": heartbeat\n", vec!["comment \" heartbeat\"".into()]),
        ("empty comment", b":\n", vec!["comment \"\"".into()]),
        (
            "comment inside frame",
            b"data: a\n:c\ndata: b\n\n",
            vec!["comment \"c\"".into(), m("a\nb")],
        ),
        ("event name", b"event: chat\ndata: x\n\n", vec![ev("chat", "x", None, "")]),
        ("event name last wins", b"event: a\nevent: b\ndata: x\n\n", vec![ev("b", "x", None, "")]),
        ("empty event name", b"event\ndata: x\n\n", vec![m("x")]),
        ("event resets", b"event: a\ndata: 1\n\ndata: 2\n\n", vec![ev("a", "1", None, ""), m("2")]),
        ("id", b"id: 1-2\ndata: x\n\n", vec![ev("message", "x", Some("1-2"), "1-2")]),
        (
            "id persists",
            b"id: 1\ndata: x\n\ndata: y\n\n",
            vec![ev("message", "x", Some("1"), "1"), ev("message", "y", None, "1")],
        ),
        ("empty id resets", b"id: 1\ndata: x\n\nid\ndata: y\n\n", vec![
            ev("message", "x", Some("1"), "1"),
            ev("message", "y", Some(""), ""),
        ]),
        ("id with nul ignored", b"id: a\x00b\ndata: x\n\n", vec![m("x")]),
        ("id in dataless frame persists", b"id: 4\n\ndata: x\n\n", vec![ev("message", "x", None, "4")]),
        ("retry", b"retry: 1500\n", vec!["retry 1500".into()]),
        ("retry zero", b"retry: 0\n", vec!["retry 0".into()]),
        ("retry junk", b"retry: 15s\n", vec![]),
        ("retry empty", b"retry\n", vec![]),
        ("retry leading space kept invalid", b"retry:  15\n", vec![]),
        ("unknown field", b"foo: bar\ndata: x\n\n", vec![m("x")]),
        ("field names are case sensitive", b"Data: x\n\n", vec![]),
        ("no data line", b"event: chat\n\n", vec![]),
        ("invalid utf-8", b"data: \xFF\n\n", vec![m("\u{FFFD}")]),
        ("utf-8 korean", "data: 안녕\n\n".as_bytes(), vec![m("안녕")]),
        (
            "unterminated frame",
            b"data: x\n",
            vec!["finish error Incomplete event=None id=None raw=\"x\\n\"".into()],
        ),
        (
            "unterminated line",
            b"data: x",
            vec!["finish error Incomplete event=None id=None raw=\"data: x\"".into()],
        ),
        (
            "unterminated comment line",
            b":heartbeat",
            vec!["finish error Incomplete event=None id=None raw=\":heartbeat\"".into()],
        ),
        (
            "service typical",
            b":heartbeat\n\nid:1732250000000-17\nevent:chat\ndata:{\"message\":\"hi\"}\n\nevent:end\ndata:{\"reason\":\"LIVE_ENDED\"}\n\n",
            vec![
                "comment \"heartbeat\"".into(),
                ev("chat", "{\"message\":\"hi\"}", Some("1732250000000-17"), "1732250000000-17"),
                ev("end", "{\"reason\":\"LIVE_ENDED\"}", None, "1732250000000-17"),
            ],
        ),
        (
            "stream error body",
            b"data:{\"status\":404,\"detailCode\":\"OAPI_MNGR_0301\"}",
            vec!["finish error Incomplete event=None id=None raw=\"data:{\\\"status\\\":404,\\\"detailCode\\\":\\\"OAPI_MNGR_0301\\\"}\"".into()],
        ),
        (
            "frame after frame without blank between lines",
            b"data: a\n\n\n\ndata: b\n\n",
            vec![m("a"), m("b")],
        ),
    ]
}

#[test]
fn vector_table() {
    let table = vectors();
    assert!(table.len() >= 40);
    for (name, input, expected) in table {
        assert_eq!(parse(input), expected, "vector {name:?} (whole)");
        assert_eq!(
            parse_bytewise(input),
            expected,
            "vector {name:?} (1-byte chunks)"
        );
    }
}

// ---- properties ------------------------------------------------------------------

/// Pieces of valid and invalid stream text that exercise every rule.
fn piece() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        Just(b"data: {\"a\":1}\n".to_vec()),
        Just(b"data\r\n".to_vec()),
        Just(b"event: chat\r".to_vec()),
        Just(b"id: 1732250000000-1\n".to_vec()),
        Just(b"id: x\x00y\n".to_vec()),
        Just(b"retry: 3000\r\n".to_vec()),
        Just(b":heartbeat\n".to_vec()),
        Just(b"\n".to_vec()),
        Just(b"\r\n".to_vec()),
        Just(b"\r".to_vec()),
        Just(b"\xEF\xBB\xBF".to_vec()),
        Just("data: 한글 ❤️\n".as_bytes().to_vec()),
        Just(b"data: \xF0\x9F\xFF\n".to_vec()),
        Just(vec![b'x'; 300]),
        proptest::collection::vec(any::<u8>(), 0..40),
    ]
}

fn stream() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(piece(), 0..40).prop_map(|p| p.concat())
}

fn split_at_points(input: &[u8], points: &[usize]) -> Vec<Vec<u8>> {
    let mut cuts: Vec<usize> = points.iter().map(|p| p % (input.len() + 1)).collect();
    cuts.sort_unstable();
    let mut out = Vec::new();
    let mut start = 0;
    for cut in cuts {
        out.push(input[start..cut].to_vec());
        start = cut;
    }
    out.push(input[start..].to_vec());
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(sized(512, 2) as u32))]

    #[test]
    fn chunking_never_changes_what_is_parsed(
        input in stream(),
        points in proptest::collection::vec(any::<usize>(), 0..30),
        cap in prop_oneof![Just(64usize), Just(256), Just(DEFAULT_MAX_FRAME_BYTES)],
    ) {
        let whole = parse_chunks(&mut Parser::with_max_frame_bytes(cap), &[&input]);
        let chunks = split_at_points(&input, &points);
        let refs: Vec<&[u8]> = chunks.iter().map(|c| c.as_slice()).collect();
        let split = parse_chunks(&mut Parser::with_max_frame_bytes(cap), &refs);
        prop_assert_eq!(&whole, &split);
        let bytes: Vec<&[u8]> = input.chunks(1).collect();
        let bytewise = parse_chunks(&mut Parser::with_max_frame_bytes(cap), &bytes);
        prop_assert_eq!(&whole, &bytewise);
    }

    #[test]
    fn memory_stays_under_the_cap(
        input in stream(),
        chunk in 1usize..64,
        cap in prop_oneof![Just(64usize), Just(256)],
    ) {
        let mut p = Parser::with_max_frame_bytes(cap);
        for piece in input.chunks(chunk) {
            let mut rest = piece;
            while p.next_item(&mut rest).is_some() {}
            prop_assert!(p.buffered_bytes() <= cap);
            prop_assert!(p.allocated_bytes() <= cap + ALLOCATION_BOUND);
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic(input in proptest::collection::vec(any::<u8>(), 0..2000)) {
        let mut p = Parser::with_max_frame_bytes(64);
        let mut rest = &input[..];
        while p.next_item(&mut rest).is_some() {}
        let _ = p.finish();
    }
}

#[test]
fn data_lines_cut_by_chunk_ends_read_like_whole_ones() {
    let long = format!("data: {}\n\ndata: ok\n\n", "y".repeat(120));
    for input in [
        &b"data: hello world\n\n"[..],
        b"data:  two spaces\n\n",
        b"data:\n\n",
        b"data:x\r\ndata: y\r\rdata\n\n",
        b"data: a\ndata: b\n:c\nid: 1\ndata: c\n\n",
        b"data: \xF0\x9F\x8E\xA7 half\n\n",
        b"data: never ends",
        long.as_bytes(),
    ] {
        assert_every_split_parses_alike(input);
    }
    // The excerpt of an oversized split data line keeps its `data: ` prefix.
    let whole = parse_chunks(&mut Parser::with_max_frame_bytes(64), &[long.as_bytes()]);
    assert!(whole[0].contains("raw=\"data: yyy"), "{whole:?}");
    let (a, b) = long.as_bytes().split_at(20);
    assert_eq!(
        parse_chunks(&mut Parser::with_max_frame_bytes(64), &[a, b]),
        whole
    );
    // And so does the text of one the input ended inside.
    let ended = parse_chunks(&mut Parser::new(), &[b"data:", b" abc"]);
    assert_eq!(ended, parse_chunks(&mut Parser::new(), &[b"data: abc"]));
    assert!(ended[0].contains("raw=\"data: abc\""), "{ended:?}");
}

// ---- frames cut by a chunk's end -------------------------------------

/// Feeds `chunks`, returning the items of each chunk (then of `finish`).
fn items_per_chunk(parser: &mut Parser, chunks: &[&[u8]]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for chunk in chunks {
        let mut rest = *chunk;
        let mut items = Vec::new();
        while let Some(item) = parser.next_item(&mut rest) {
            items.push(render(&item));
        }
        assert!(rest.is_empty());
        out.push(items);
    }
    out.push(parser.finish().iter().map(render).collect());
    out
}

const SERVICE_FRAME: &[u8] =
    b"id:1732250000000-17\nevent:chat\ndata:{\"message\":\"hi \xED\x95\x9C\"}\n\n";

#[test]
fn a_frame_cut_by_a_chunk_end_is_read_when_its_blank_line_arrives() {
    let expected = ev(
        "chat",
        "{\"message\":\"hi 한\"}",
        Some("1732250000000-17"),
        "1732250000000-17",
    );
    // Cut inside the data line, and inside the blank line.
    for (first, second) in [
        SERVICE_FRAME.split_at(40),
        SERVICE_FRAME.split_at(SERVICE_FRAME.len() - 1),
    ] {
        let mut p = Parser::new();
        let mut rest = first;
        assert!(p.next_item(&mut rest).is_none());
        assert_eq!(p.last_event_id(), "1732250000000-17", "read as it arrives");
        assert!(p.buffered_bytes() <= first.len());
        let mut rest = second;
        let Some(item) = p.next_item(&mut rest) else {
            panic!("expected the frame");
        };
        assert_eq!(render(&item), expected);
        assert!(p.next_item(&mut rest).is_none());
        assert!(p.finish().is_none());
    }
    let crlf = b"id:5\r\nevent:like\r\ndata:{}\r\n\r\n";
    let out = items_per_chunk(&mut Parser::new(), &[&crlf[..27], &crlf[27..]]);
    assert_eq!(
        out,
        [vec![], vec![ev("like", "{}", Some("5"), "5")], vec![]]
    );
}

#[test]
fn a_cut_frame_meeting_anything_else_reads_as_whole() {
    let head: &[u8] = b"id:7\nevent:chat\ndata:x";
    let cases: [(&[u8], Vec<String>); 8] = [
        // Items of their own arrive when their line is read, in order.
        (
            b"\n:hb\n\n",
            vec!["comment \"hb\"".into(), ev("chat", "x", Some("7"), "7")],
        ),
        (
            b"\nretry:5\n\n",
            vec!["retry 5".into(), ev("chat", "x", Some("7"), "7")],
        ),
        // Shapes the one-go reader leaves alone.
        (b"\ndata:y\n\n", vec![ev("chat", "x\ny", Some("7"), "7")]),
        (b"\nid:\x008\n\n", vec![ev("chat", "x", Some("7"), "7")]),
        (b"\nfoo:1\n\n", vec![ev("chat", "x", Some("7"), "7")]),
        // Invalid UTF-8 is repaired per field, as line by line.
        (b"\xFF\n\n", vec![ev("chat", "x\u{FFFD}", Some("7"), "7")]),
        // A blank line that is a CR ending the chunk dispatches at once.
        (b"\n\r", vec![ev("chat", "x", Some("7"), "7")]),
        // A field name cut by the chunk's end.
        (b"\nda", vec![]),
    ];
    for (tail, expected) in cases {
        let mut p = Parser::new();
        let out = items_per_chunk(&mut p, &[head, tail]);
        assert_eq!(out[0], Vec::<String>::new(), "{tail:?}");
        assert_eq!(out[1], expected, "{tail:?}");
        let mut whole = head.to_vec();
        whole.extend_from_slice(tail);
        assert_eq!(
            parse_chunks(&mut Parser::new(), &[head, tail]),
            parse_bytewise(&whole),
            "{tail:?}"
        );
    }
}

#[test]
fn a_cut_frame_reads_alike_over_many_chunks_and_at_the_end_of_input() {
    // Longer than a chunk: the same items.
    let long = format!("id:9\nevent:chat\ndata:{}\n\n", "z".repeat(24_000));
    let chunks: Vec<&[u8]> = long.as_bytes().chunks(1000).collect();
    assert_eq!(
        parse_chunks(&mut Parser::new(), &chunks),
        parse(long.as_bytes())
    );
    // Unterminated at the end of input: the same error as line by line.
    let cut = &SERVICE_FRAME[..SERVICE_FRAME.len() - 1];
    let cut_twice = parse_chunks(&mut Parser::new(), &[&cut[..30], &cut[30..]]);
    assert_eq!(cut_twice, parse_bytewise(cut));
    assert!(
        cut_twice[0].starts_with("finish error Incomplete"),
        "{cut_twice:?}"
    );
    // Near a small cap, every cut reads as byte by byte.
    let input = b"id:12345678901234567890\nevent:chat\ndata:0123456789012345678901234567890123\n\n";
    for cap in [64, 100, 128] {
        for at in 0..input.len() {
            let (a, b) = input.split_at(at);
            assert_eq!(
                parse_chunks(&mut Parser::with_max_frame_bytes(cap), &[a, b]),
                parse_chunks(
                    &mut Parser::with_max_frame_bytes(cap),
                    &input.chunks(1).collect::<Vec<_>>()
                ),
                "cap {cap}, split at {at}"
            );
        }
    }
}

#[test]
fn a_frame_without_an_id_lends_the_last_one() {
    let out = parse(b"id:1732250000000-17\nevent:chat\ndata:0123456789012345678901234567\n\nevent:end\ndata:{}\n\n");
    assert_eq!(out[1], ev("end", "{}", None, "1732250000000-17"));
}

// ---- the reference parser as oracle ---------------------------------------------

/// Feeds `chunks` to the real parser and renders what it said in the
/// reference's terms (errors other than the end-of-input one never arise
/// under the default cap with these inputs).
fn seen_by_parser(chunks: &[&[u8]]) -> Vec<Seen> {
    let by_items = seen_by(chunks, true);
    let by_next_item = seen_by(chunks, false);
    assert_eq!(by_items, by_next_item);
    by_items
}

fn seen_by(chunks: &[&[u8]], whole_chunks: bool) -> Vec<Seen> {
    fn seen(item: &Item<'_>) -> Seen {
        Seen::of(item).expect("no frame is over the default cap here")
    }
    let mut parser = Parser::new();
    let mut out = Vec::new();
    for chunk in chunks {
        if whole_chunks {
            let mut whole = Chunk::new(chunk);
            while let Some(item) = parser.next_item_in(&mut whole) {
                out.push(seen(&item));
            }
        } else {
            let mut rest = *chunk;
            while let Some(item) = parser.next_item(&mut rest) {
                out.push(seen(&item));
            }
        }
    }
    out.extend(parser.finish().as_ref().map(seen));
    out
}

#[test]
fn the_vector_table_agrees_with_the_reference() {
    for (name, input, _) in vectors() {
        assert_eq!(seen_by_parser(&[input]), reference::parse(input), "{name}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(sized(1024, 2) as u32))]

    /// The parser, fed in any chunking, says what the WHATWG text says.
    #[test]
    fn the_parser_agrees_with_the_reference(
        input in stream(),
        points in proptest::collection::vec(any::<usize>(), 0..30),
    ) {
        let expected = reference::parse(&input);
        prop_assert_eq!(&seen_by_parser(&[&input]), &expected);
        let chunks = split_at_points(&input, &points);
        let refs: Vec<&[u8]> = chunks.iter().map(|c| c.as_slice()).collect();
        prop_assert_eq!(&seen_by_parser(&refs), &expected);
    }

    #[test]
    fn arbitrary_bytes_agree_with_the_reference(
        input in proptest::collection::vec(
            prop_oneof![Just(b'\n'), Just(b'\r'), Just(b':'), Just(b' '), Just(b'd'), any::<u8>()],
            0..400,
        ),
        chunk in 1usize..50,
    ) {
        let chunks: Vec<&[u8]> = input.chunks(chunk).collect();
        prop_assert_eq!(seen_by_parser(&chunks), reference::parse(&input));
    }
}
