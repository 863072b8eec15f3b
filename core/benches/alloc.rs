//! Checks the "zero allocations per frame on the hot path" claim: a counting
//! global allocator watches onair's SSE framing over the service-typical stream
//! (see `common`), once cold and then again with warm buffers, at several chunk
//! sizes. Prints allocations per frame; exits 1 if warm framing allocates.
//!
//! ```text
//! cargo bench -p onair --bench alloc
//! ```
//!
//! Typed decoding (`onair::event::Decoder`) is reported for information: it
//! builds owned `String`s for ids, nicknames, messages and times by design.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};

use onair::sse::{Item, Parser};

struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicU64 = AtomicU64::new(0);

// SAFETY: forwards every call unchanged to the system allocator; the counters
// are plain atomics.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        BYTES.fetch_add(layout.size() as u64, Ordering::Relaxed);
        // SAFETY: same contract as our caller's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        BYTES.fetch_add(layout.size() as u64, Ordering::Relaxed);
        // SAFETY: same contract as our caller's.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        BYTES.fetch_add(new_size as u64, Ordering::Relaxed);
        // SAFETY: same contract as our caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as our caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Allocations and allocated bytes while `f` runs, and what it returned.
fn counted<T>(f: impl FnOnce() -> T) -> (u64, u64, T) {
    let (a, b) = (
        ALLOCS.load(Ordering::Relaxed),
        BYTES.load(Ordering::Relaxed),
    );
    let out = f();
    (
        ALLOCS.load(Ordering::Relaxed) - a,
        BYTES.load(Ordering::Relaxed) - b,
        out,
    )
}

/// Feeds every chunk; returns (events, items) seen.
fn frame(parser: &mut Parser, chunks: &[bytes::Bytes]) -> (u64, u64) {
    let (mut events, mut items) = (0, 0);
    for chunk in chunks {
        let mut rest = &chunk[..];
        while let Some(item) = parser.next_item(&mut rest) {
            items += 1;
            if let Item::Event(frame) = item {
                events += 1;
                std::hint::black_box(frame.data);
            }
        }
    }
    (events, items)
}

fn decode(decoder: &mut onair::event::Decoder, chunks: &[bytes::Bytes]) -> u64 {
    let mut events = 0;
    for chunk in chunks {
        let mut rest = &chunk[..];
        while let Some(item) = decoder.next_item(&mut rest) {
            if let onair::event::Item::Event { .. } = std::hint::black_box(item) {
                events += 1;
            }
        }
    }
    events
}

fn main() {
    let stream = common::service_stream(2 << 20);
    println!(
        "service-typical stream: {} bytes, {} events, {} heartbeats",
        stream.bytes.len(),
        stream.events,
        stream.heartbeats
    );
    let mut failed = false;
    for size in [common::CHUNK, 64 * 1024, 1] {
        let chunks = common::chunks(&stream.bytes, size);
        let mut parser = Parser::new();
        let (cold, cold_bytes, (events, _)) = counted(|| frame(&mut parser, &chunks));
        let (warm, warm_bytes, (warm_events, items)) = counted(|| frame(&mut parser, &chunks));
        assert_eq!(
            (events, warm_events),
            (stream.events as u64, stream.events as u64)
        );
        println!(
            "framing, {size:>5} B chunks: cold pass {cold} allocations ({cold_bytes} B) \
             over {events} frames; warm pass {warm} allocations ({warm_bytes} B) over \
             {warm_events} frames / {items} items = {:.4} per frame",
            warm as f64 / warm_events as f64
        );
        failed |= warm > 0;
    }
    let chunks = common::chunks(&stream.bytes, common::CHUNK);
    let mut decoder = onair::event::Decoder::new();
    decode(&mut decoder, &chunks);
    let (warm, warm_bytes, events) = counted(|| decode(&mut decoder, &chunks));
    println!(
        "typed decoding (Decoder, for information), 4096 B chunks, warm: {warm} allocations \
         ({warm_bytes} B) over {events} frames = {:.2} per frame",
        warm as f64 / events as f64
    );
    if failed {
        eprintln!("FAIL: warm framing allocated");
        std::process::exit(1);
    }
    println!("OK: 0 allocations per frame for warm framing");
}
