//! The kit's cost: the busy fixture stream (joins, chat with commands,
//! hearts, donations) through a whole `Bot` turn without the kit and with it
//! (greetings, commands, milestones, the tally, the stored state), side by
//! side; a checkpoint (the stored form of that broadcast's memory); and
//! splitting a long reply at grapheme clusters.
#![allow(clippy::unwrap_used)]

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use onair::bot::{Action, Bot, BotConfig};
use onair::kit::text::split;
use onair::kit::KitConfig;
use onair::{BaseUrl, ClientCredentials, RequestId};

const T0: u64 = 1_732_250_000_000;
const NO_HEADERS: &[(&str, &str)] = &[];
const SCOPE: &str = "events.chat events.like events.donation events.presence chat.send";
const KIT: &str = r#"{"commands":[{"name":"hello","aliases":["hi"]},{"name":"top","cooldown_ms":60000}],
  "greetings":{"welcome_back_after_ms":600000},
  "milestones":{"hearts_every":100,"donations_every":1000},"tally":true}"#;

/// A bot authorized without `live.read` (the kit asks nothing), its stream open.
fn streaming_bot(kit: bool) -> (Bot, RequestId) {
    let base = BaseUrl::new("https://api.region.test").unwrap();
    let credentials =
        ClientCredentials::new("3f2504e0-4f89-11d3-9a0c-0305e82c3301", "client-secret").unwrap();
    let mut config = BotConfig::new(base, credentials);
    if kit {
        config.kit = KitConfig::from_json(KIT).unwrap();
    }
    let mut bot = Bot::new(config, None, 1);
    let _ = bot.poll(T0);
    bot.authorize("code", "https://bot.test/cb");
    let Action::Send { id, .. } = bot.poll(T0) else {
        panic!()
    };
    let pair = format!(
        r#"{{"access_token":"at","token_type":"Bearer","expires_in":3600,"refresh_token":"rt","scope":"{SCOPE}"}}"#
    );
    bot.on_response(id, 200, NO_HEADERS, pair.as_bytes(), T0)
        .unwrap();
    loop {
        match bot.poll(T0) {
            Action::OpenStream { id, .. } => {
                bot.on_stream_open(id, 200, NO_HEADERS, T0).unwrap();
                return (bot, id);
            }
            Action::Wait { .. } => panic!("no stream"),
            _ => {}
        }
    }
}

/// Feeds one chunk and drains; counts the events delivered.
fn turn(bot: &mut Bot, stream: RequestId, chunk: &[u8], now: u64) -> usize {
    bot.on_stream_bytes(stream, chunk, now).unwrap();
    let mut events = 0;
    loop {
        let action = bot.poll(now);
        match action {
            Action::Event { .. } => events += 1,
            Action::Wait { .. } => return events,
            // Replies the kit's answers would send: not sent here.
            _ => {}
        }
        std::hint::black_box(action);
    }
}

fn bench(c: &mut Criterion) {
    let busy = include_bytes!("../../fixtures/streams/busy.sse");
    let (probe, stream) = &mut streaming_bot(false);
    let per_pass = busy
        .chunks(512)
        .map(|chunk| turn(probe, *stream, chunk, T0 + 1))
        .sum::<usize>() as u64;
    let mut group = c.benchmark_group("kit");
    group.throughput(Throughput::Elements(per_pass));
    for (name, kit) in [
        ("busy_stream_without_kit", false),
        ("busy_stream_with_kit", true),
    ] {
        group.bench_function(name, |b| {
            b.iter_batched_ref(
                || streaming_bot(kit),
                |(bot, stream)| {
                    let mut events = 0;
                    for chunk in busy.chunks(512) {
                        events += turn(bot, *stream, chunk, T0 + 1);
                    }
                    assert_eq!(events as u64, per_pass);
                },
                BatchSize::SmallInput,
            );
        });
    }
    // What a checkpoint costs: the stored form of the whole broadcast's
    // memory (everyone seen, the tally) just before its end.
    let before_end = &busy[..busy.len() - b"event:end\ndata:{\"reason\":\"LIVE_ENDED\"}\n\n".len()];
    let (bot, stream) = &mut streaming_bot(true);
    turn(bot, *stream, before_end, T0 + 1);
    let kit = bot.kit().unwrap();
    assert!(kit.tally().seen() > 200, "{}", kit.tally().seen());
    group.throughput(Throughput::Elements(1));
    group.bench_function("state_of_the_busy_broadcast", |b| {
        b.iter(|| std::hint::black_box(kit.state()))
    });
    let long = "가나다라마바사 ".repeat(90) + &"👩‍🚀".repeat(50);
    group.bench_function("split_a_620_unit_text", |b| {
        b.iter(|| std::hint::black_box(split(std::hint::black_box(&long))))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
