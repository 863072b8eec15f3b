//! The kit's cost per event on the service stream: what the reference bot
//! runs for every event (audience, milestones, commands, tally), beside the
//! decoding that produced the event.
#![allow(clippy::unwrap_used)]

mod common;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use onair::event::Event;
use onair::kit::audience::Audience;
use onair::kit::commands::{Allowed, Commands};
use onair::kit::milestones::Milestones;
use onair::kit::tally::Tally;
use onair::kit::text::split;

fn kit(c: &mut Criterion) {
    let events = common::service_events();
    let commands = Commands::new()
        .command("hello", Allowed::Anyone)
        .command("top", Allowed::Managers);
    let mut group = c.benchmark_group("kit");
    group.throughput(Throughput::Elements(events.len() as u64));
    group.bench_function("per_event_audience_milestones_commands_tally", |b| {
        let mut audience = Audience::new();
        let mut milestones = Milestones::new().hearts_every(100).donations_every(1000);
        let mut tally = Tally::new();
        b.iter(|| {
            let mut answers = 0usize;
            for event in &events {
                tally.record(event);
                answers += usize::from(audience.on_event(event).is_some());
                answers += usize::from(milestones.on_event(event).is_some());
                if let Event::Chat(chat) = event {
                    answers += usize::from(commands.match_chat(chat, &audience).is_some());
                }
            }
            std::hint::black_box(answers)
        });
    });
    let long = "가나다라마바사 ".repeat(90) + &"👩‍🚀".repeat(50);
    group.throughput(Throughput::Elements(1));
    group.bench_function("split_a_620_unit_text", |b| {
        b.iter(|| std::hint::black_box(split(std::hint::black_box(&long))))
    });
    group.finish();
}

criterion_group!(benches, kit);
criterion_main!(benches);
