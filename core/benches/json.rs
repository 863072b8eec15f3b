//! Writing JSON: the canonical `data` of every event of the service stream
//! (what `onair decode`, the C API's JSON lines and the Node bot module
//! write), by the core's writer beside serde_json through the derived
//! `Serialize` (the writer's oracle, and what the core used before).
#![allow(clippy::unwrap_used)]

mod common;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use onair::json::{JsonOut, WriteJson};

fn json(c: &mut Criterion) {
    let events = common::service_events();
    let mut group = c.benchmark_group("write_event_json");
    group.throughput(Throughput::Elements(events.len() as u64));
    group.bench_function("onair_writer", |b| {
        b.iter(|| {
            let mut bytes = 0usize;
            for event in &events {
                let mut out = JsonOut::new();
                event.write_json(&mut out);
                bytes += out.finish().len();
            }
            std::hint::black_box(bytes)
        });
    });
    group.bench_function("serde_json_derived", |b| {
        b.iter(|| {
            let mut bytes = 0usize;
            for event in &events {
                bytes += serde_json::to_string(event).unwrap().len();
            }
            std::hint::black_box(bytes)
        });
    });
    group.finish();
}

criterion_group!(benches, json);
criterion_main!(benches);
