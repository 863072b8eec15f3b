//! onair's SSE framing and typed decoding side by side with the popular Rust
//! SSE crates (`eventsource-stream`, `sse-stream`) on one service-typical
//! stream fed in 4 KiB chunks. See BENCHMARKS.md.
//!
//! ```text
//! cargo bench -p onair --bench sse -- --warm-up-time 1 --measurement-time 3
//! ```
//!
//! Groups (criterion reports MB/s through `Throughput::Bytes`):
//! - `framing`: every event is pulled out and its data length summed.
//! - `typed`: onair's `Decoder` (typed events) against each peer's framing plus
//!   `serde_json::from_str::<serde_json::Value>` of the data.
//! - `long_line`: one 8 MiB `data` line in 4 KiB chunks (the linear-time case).
//!   A peer slower than ~2 s per pass is timed once outside criterion.
//!
//! `ONAIR_RACE=<passes>` instead runs the framing, typed and long_line contenders in
//! interleaved passes and prints each one's fastest pass: the figure that
//! moves least when the machine is busy (see BENCHMARKS.md, "Method").
#![allow(clippy::unwrap_used)]

mod common;

use std::convert::Infallible;
use std::hint::black_box;
use std::pin::pin;
use std::time::{Duration, Instant};

use bytes::Bytes;
use criterion::{criterion_group, Criterion, SamplingMode, Throughput};
use eventsource_stream::Eventsource;
use futures::executor::block_on;
use futures::stream::{self, StreamExt};
use onair::sse::{Chunk, Item, Parser};

use common::{chunks, long_line_stream, service_stream, Stream, CHUNK};

/// Size of the generated service-typical stream.
const STREAM_BYTES: usize = 2 << 20;
/// Length of the pathological single data line.
const LONG_LINE_BYTES: usize = 8 << 20;
/// A peer slower than this per pass is timed once, outside criterion.
const SLOW_PASS: Duration = Duration::from_secs(2);

/// What each contender returns: events seen and the sum of their data lengths
/// (checked against the generator, so nothing can be optimised away or skipped).
type Tally = (usize, usize);

fn peer_input(chunks: &[Bytes]) -> impl futures::Stream<Item = Result<Bytes, Infallible>> + '_ {
    stream::iter(chunks.iter().cloned().map(Ok::<_, Infallible>))
}

// ---- framing only --------------------------------------------------------

/// The recommended loop: each chunk read through a [`Chunk`] (its text
/// validated in one pass).
fn onair_framing(chunks: &[Bytes], parser: &mut Parser) -> Tally {
    let (mut events, mut data) = (0, 0);
    for chunk in chunks {
        let mut chunk = Chunk::new(chunk);
        while let Some(item) = parser.next_item_in(&mut chunk) {
            if let Item::Event(frame) = item {
                events += 1;
                data += black_box(frame.data).len();
            }
        }
    }
    (events, data)
}

/// `Parser::next_item` over a plain slice: each frame validated on its own.
fn onair_framing_by_slice(chunks: &[Bytes], parser: &mut Parser) -> Tally {
    let (mut events, mut data) = (0, 0);
    for chunk in chunks {
        let mut rest = &chunk[..];
        while let Some(item) = parser.next_item(&mut rest) {
            if let Item::Event(frame) = item {
                events += 1;
                data += black_box(frame.data).len();
            }
        }
    }
    (events, data)
}

fn eventsource_framing(chunks: &[Bytes]) -> Tally {
    block_on(async {
        let mut events_stream = pin!(peer_input(chunks).eventsource());
        let (mut events, mut data) = (0, 0);
        while let Some(event) = events_stream.next().await {
            let event = event.unwrap();
            events += 1;
            data += black_box(&event.data).len();
        }
        (events, data)
    })
}

fn sse_stream_framing(chunks: &[Bytes]) -> Tally {
    block_on(async {
        let mut blocks = pin!(sse_stream::SseByteStream::new(peer_input(chunks)));
        let (mut events, mut data) = (0, 0);
        while let Some(block) = blocks.next().await {
            // sse-stream also yields metadata-only blocks; an event is a block with data.
            if let Some(d) = block.unwrap().data {
                events += 1;
                data += black_box(&d).len();
            }
        }
        (events, data)
    })
}

// ---- framing + decoding --------------------------------------------------

fn onair_typed(chunks: &[Bytes]) -> Tally {
    let mut decoder = onair::event::Decoder::new();
    let (mut events, mut data) = (0, 0);
    for chunk in chunks {
        for item in decoder.items(chunk) {
            if let onair::event::Item::Event { event, .. } = black_box(&item) {
                events += 1;
                // Touch the decoded event (its user id) so decoding cannot be skipped.
                data += event.user().map_or(0, |u| u.id.len());
            }
        }
    }
    (events, data)
}

/// onair framing + serde_json into the typed events (their derived
/// `Deserialize`), without the fast path: what the fast path is measured
/// against (the core keeps it only while it is at least 1.5x this).
fn onair_serde_typed(chunks: &[Bytes]) -> Tally {
    use onair::event::{Chat, Donation, End, Event, Like, Presence};
    let mut parser = Parser::new();
    let (mut events, mut data) = (0, 0);
    for chunk in chunks {
        let mut whole = Chunk::new(chunk);
        while let Some(item) = parser.next_item_in(&mut whole) {
            if let Item::Event(frame) = item {
                let d = frame.data;
                let event = match frame.event {
                    "chat" => serde_json::from_str::<Chat>(d).map(Event::Chat),
                    "presence" => serde_json::from_str::<Presence>(d).map(Event::Presence),
                    "like" => serde_json::from_str::<Like>(d).map(Event::Like),
                    "donation" => serde_json::from_str::<Donation>(d).map(Event::Donation),
                    _ => serde_json::from_str::<End>(d).map(Event::End),
                };
                if let Ok(event) = black_box(event) {
                    events += 1;
                    data += event.user().map_or(0, |u| u.id.len());
                }
            }
        }
    }
    (events, data)
}

/// onair framing + `serde_json::Value`: same JSON work as the peers, to split
/// framing cost from decoding cost.
fn onair_value(chunks: &[Bytes]) -> Tally {
    let mut parser = Parser::new();
    let (mut events, mut data) = (0, 0);
    for chunk in chunks {
        let mut rest = &chunk[..];
        while let Some(item) = parser.next_item(&mut rest) {
            if let Item::Event(frame) = item {
                let value: serde_json::Value = serde_json::from_str(frame.data).unwrap();
                events += 1;
                data += black_box(&value)
                    .as_object()
                    .map_or(0, serde_json::Map::len);
            }
        }
    }
    (events, data)
}

fn eventsource_value(chunks: &[Bytes]) -> Tally {
    block_on(async {
        let mut events_stream = pin!(peer_input(chunks).eventsource());
        let (mut events, mut data) = (0, 0);
        while let Some(event) = events_stream.next().await {
            let value: serde_json::Value = serde_json::from_str(&event.unwrap().data).unwrap();
            events += 1;
            data += black_box(&value)
                .as_object()
                .map_or(0, serde_json::Map::len);
        }
        (events, data)
    })
}

fn sse_stream_value(chunks: &[Bytes]) -> Tally {
    block_on(async {
        let mut blocks = pin!(sse_stream::SseByteStream::new(peer_input(chunks)));
        let (mut events, mut data) = (0, 0);
        while let Some(block) = blocks.next().await {
            if let Some(d) = block.unwrap().data {
                let value: serde_json::Value = serde_json::from_str(&d).unwrap();
                events += 1;
                data += black_box(&value)
                    .as_object()
                    .map_or(0, serde_json::Map::len);
            }
        }
        (events, data)
    })
}

// ---- groups --------------------------------------------------------------

fn prepared() -> (Stream, Vec<Bytes>) {
    let stream = service_stream(STREAM_BYTES);
    let chunks = chunks(&stream.bytes, CHUNK);
    (stream, chunks)
}

fn framing(c: &mut Criterion) {
    let (stream, chunks) = prepared();
    println!(
        "service-typical stream: {} bytes in {} chunks of {CHUNK} B; {} events \
         (chat/like/presence/donation + end), {} heartbeats, {} data bytes; \
         events/s = MB/s x 1e6 / {} x {}",
        stream.bytes.len(),
        chunks.len(),
        stream.events,
        stream.heartbeats,
        stream.data_bytes,
        stream.bytes.len(),
        stream.events,
    );
    let expected = (stream.events, stream.data_bytes);
    assert_eq!(onair_framing(&chunks, &mut Parser::new()), expected);
    assert_eq!(eventsource_framing(&chunks), expected);
    assert_eq!(sse_stream_framing(&chunks), expected);

    let mut group = c.benchmark_group("framing");
    group.throughput(Throughput::BytesDecimal(stream.bytes.len() as u64));
    // A fresh parser per pass, as a new connection would have: its buffers
    // warm up within the first frames.
    group.bench_function("onair", |b| {
        b.iter(|| onair_framing(black_box(&chunks), &mut Parser::new()))
    });
    group.bench_function("eventsource-stream", |b| {
        b.iter(|| eventsource_framing(black_box(&chunks)))
    });
    group.bench_function("sse-stream", |b| {
        b.iter(|| sse_stream_framing(black_box(&chunks)))
    });
    group.finish();
}

fn typed(c: &mut Criterion) {
    let (stream, chunks) = prepared();
    let events = stream.events;
    assert_eq!(onair_typed(&chunks).0, events);
    let fields = onair_value(&chunks);
    assert_eq!(fields.0, events);
    assert_eq!(eventsource_value(&chunks), fields);
    assert_eq!(sse_stream_value(&chunks), fields);

    let mut group = c.benchmark_group("typed");
    group.throughput(Throughput::BytesDecimal(stream.bytes.len() as u64));
    group.bench_function("onair Decoder", |b| {
        b.iter(|| onair_typed(black_box(&chunks)))
    });
    group.bench_function("onair framing + serde_json typed", |b| {
        b.iter(|| onair_serde_typed(black_box(&chunks)))
    });
    group.bench_function("onair + serde_json::Value", |b| {
        b.iter(|| onair_value(black_box(&chunks)))
    });
    group.bench_function("eventsource-stream + serde_json::Value", |b| {
        b.iter(|| eventsource_value(black_box(&chunks)))
    });
    group.bench_function("sse-stream + serde_json::Value", |b| {
        b.iter(|| sse_stream_value(black_box(&chunks)))
    });
    group.finish();
}

/// Whether a benchmark id is excluded by the command line's filter, so the
/// slow one-off peer timings are not run when the group is filtered out.
fn filtered_out(id: &str) -> bool {
    const TAKES_VALUE: &[&str] = &[
        "--warm-up-time",
        "--measurement-time",
        "--sample-size",
        "--nresamples",
        "--noise-threshold",
        "--confidence-level",
        "--significance-level",
        "--save-baseline",
        "--baseline",
        "--baseline-lenient",
        "--load-baseline",
        "--profile-time",
        "--output-format",
        "--plotting-backend",
        "--color",
        "--format",
        "-c",
        "-s",
        "-b",
    ];
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut filters = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        if TAKES_VALUE.contains(&arg.as_str()) {
            i += 2;
            continue;
        }
        if !arg.starts_with('-') {
            filters.push(arg.clone());
        }
        i += 1;
    }
    !filters.is_empty() && !filters.iter().any(|f| id.contains(f.as_str()))
}

fn long_line(c: &mut Criterion) {
    let bytes = long_line_stream(LONG_LINE_BYTES);
    let chunks = chunks(&bytes, CHUNK);
    let expected = (1, LONG_LINE_BYTES);
    // The default 256 KiB cap would (correctly) reject this frame; raise it so
    // onair does the same work as the peers.
    let roomy = || Parser::with_max_frame_bytes(16 << 20);
    assert_eq!(onair_framing(&chunks, &mut roomy()), expected);

    let mut group = c.benchmark_group("long_line");
    group.throughput(Throughput::BytesDecimal(bytes.len() as u64));
    group.sample_size(10);
    group.sampling_mode(SamplingMode::Flat);
    group.bench_function("onair", |b| {
        b.iter(|| onair_framing(black_box(&chunks), &mut roomy()))
    });
    // The default cap: the frame is reported too large and skipped, in linear time
    // and without buffering past the cap.
    group.bench_function("onair (default cap: skips it)", |b| {
        b.iter(|| onair_framing(black_box(&chunks), &mut Parser::new()))
    });

    type Peer = fn(&[Bytes]) -> Tally;
    let peers: [(&str, Peer); 2] = [
        ("eventsource-stream", eventsource_framing),
        ("sse-stream", sse_stream_framing),
    ];
    for (name, run) in peers {
        if filtered_out(&format!("long_line/{name}")) {
            continue;
        }
        let start = Instant::now();
        assert_eq!(run(&chunks), expected);
        let once = start.elapsed();
        if once > SLOW_PASS {
            let mb_s = bytes.len() as f64 / once.as_secs_f64() / 1e6;
            println!(
                "long_line/{name}: one timed pass (too slow for criterion): {:.2} s = {mb_s:.1} MB/s",
                once.as_secs_f64()
            );
            continue;
        }
        // Keep slow peers to a bounded run.
        group.measurement_time(Duration::from_secs(3).max(once * 12));
        group.bench_function(name, |b| b.iter(|| run(black_box(&chunks))));
    }
    group.finish();
}

/// `ONAIR_RACE=<passes>`: the framing, typed and long_line contenders in interleaved
/// passes, fastest pass each (robust to a busy machine), instead of criterion.
fn race(passes: usize) {
    let (stream, chunks) = prepared();
    let framing: [(&str, &dyn Fn() -> usize); 3] = [
        ("onair", &|| onair_framing(&chunks, &mut Parser::new()).0),
        ("sse-stream", &|| sse_stream_framing(&chunks).0),
        ("onair next_item (by slice)", &|| {
            onair_framing_by_slice(&chunks, &mut Parser::new()).0
        }),
    ];
    common::race("framing", stream.bytes.len(), passes, &framing);
    let typed: [(&str, &dyn Fn() -> usize); 3] = [
        ("onair Decoder", &|| onair_typed(&chunks).0),
        ("onair framing + serde_json typed (no fast path)", &|| {
            onair_serde_typed(&chunks).0
        }),
        ("sse-stream + serde_json::Value", &|| {
            sse_stream_value(&chunks).0
        }),
    ];
    common::race("typed", stream.bytes.len(), passes, &typed);
    let long = long_line_stream(LONG_LINE_BYTES);
    let long_chunks = common::chunks(&long, CHUNK);
    let long_line: [(&str, &dyn Fn() -> usize); 2] = [
        ("onair (16 MiB cap)", &|| {
            onair_framing(&long_chunks, &mut Parser::with_max_frame_bytes(16 << 20)).1
        }),
        ("sse-stream", &|| sse_stream_framing(&long_chunks).1),
    ];
    common::race("long_line", long.len(), passes / 5, &long_line);
}

criterion_group!(benches, framing, typed, long_line);

fn main() {
    match std::env::var("ONAIR_RACE")
        .ok()
        .and_then(|n| n.parse().ok())
    {
        Some(passes) => race(passes),
        None => {
            benches();
            Criterion::default().configure_from_args().final_summary();
        }
    }
}
