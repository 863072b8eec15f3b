//! A full `Bot` turn: stream bytes in, typed event out (on_stream_bytes, then
//! poll until Wait), on an open stream with fresh tokens.
#![allow(clippy::unwrap_used)]

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use onair::bot::{Action, Bot, BotConfig};
use onair::{BaseUrl, ClientCredentials, RequestId};

const T0: u64 = 1_732_250_000_000;
const NO_HEADERS: &[(&str, &str)] = &[];

fn streaming_bot() -> (Bot, RequestId) {
    let base = BaseUrl::new("https://api.region.test").unwrap();
    let credentials =
        ClientCredentials::new("3f2504e0-4f89-11d3-9a0c-0305e82c3301", "client-secret").unwrap();
    let mut bot = Bot::new(BotConfig::new(base, credentials), None, 1);
    let _ = bot.poll(T0);
    bot.authorize("code", "https://bot.test/cb");
    let Action::Send { id, .. } = bot.poll(T0) else {
        panic!()
    };
    let pair = br#"{"access_token":"at","token_type":"Bearer","expires_in":3600,"refresh_token":"rt","scope":"events.chat events.like events.donation events.presence"}"#;
    bot.on_response(id, 200, NO_HEADERS, pair, T0).unwrap();
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

fn turn(bot: &mut Bot, stream: RequestId, chunk: &[u8], now: u64) -> usize {
    bot.on_stream_bytes(stream, chunk, now).unwrap();
    let mut events = 0;
    loop {
        match bot.poll(now) {
            Action::Event { event, .. } => {
                events += 1;
                std::hint::black_box(event);
            }
            Action::Wait { .. } => return events,
            Action::Notice(notice) => {
                std::hint::black_box(notice);
            }
            other => panic!("unexpected {other:?}"),
        }
    }
}

fn bench(c: &mut Criterion) {
    let chat = r#"id:1732250000000-17
event:chat
data:{"user":{"id":"3b1f9c0e7a2d4b8f","nickname":"하늘"},"isDj":false,"message":"안녕하세요! first time here 👋","sentTime":"2024-11-22T04:33:20.123Z"}

"#
    .as_bytes();
    let mut group = c.benchmark_group("bot_turn");
    group.throughput(Throughput::Elements(1));
    group.bench_function("one_chat_frame", |b| {
        let (mut bot, stream) = streaming_bot();
        // The clock moves 1 ms per 1024 turns: criterion runs millions of
        // turns, and 1 ms per turn would outlive the access token (1 h), so
        // the bot would rightly stop to refresh it.
        let mut turns = 0u64;
        b.iter(|| {
            turns += 1;
            let now = T0 + turns / 1024;
            assert_eq!(turn(&mut bot, stream, chat, now), 1);
        });
    });
    let service = include_bytes!("../../fixtures/streams/service.sse");
    let body = &service[..service.len() - 40];
    let per_pass = 10;
    group.throughput(Throughput::Elements(per_pass));
    group.bench_function("fixture_stream_512b_chunks", |b| {
        b.iter_batched_ref(
            streaming_bot,
            |(bot, stream)| {
                let mut events = 0;
                for chunk in body.chunks(512) {
                    events += turn(bot, *stream, chunk, T0 + 1);
                }
                assert_eq!(events as u64, per_pass);
            },
            BatchSize::SmallInput,
        );
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
