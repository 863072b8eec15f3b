//! The Rust side of the C API's overhead benchmark (`scripts/bench-c` runs
//! it beside `bindings-tests/c/bench/overhead.c`, which does the same work
//! through libonair): (1) feed a 4 KiB chunk of chat frames to a decoder and
//! take every item; (2) a full Bot turn: one chat frame in, poll until Wait.
//! Prints `rust <name> <ns per op>` lines (the median of 7 batches).
#![allow(clippy::unwrap_used)]

use std::hint::black_box;
use std::time::Instant;

use onair_core::event::{Decoder, Event, Item};
use onair_core::{Action, BaseUrl, Bot, BotConfig, ClientCredentials, RequestId};

const T0: u64 = 1_732_250_000_000;
const NO_HEADERS: &[(&str, &str)] = &[];
const CHAT: &str = "id:1732250000000-17\nevent:chat\ndata:{\"user\":{\"id\":\"3b1f9c0e7a2d4b8f\",\"nickname\":\"하늘\"},\"isDj\":false,\"message\":\"안녕하세요! first time here 👋\",\"sentTime\":\"2024-11-22T04:33:20.123Z\"}\n\n";

/// Whole chat frames, then one comment that pads the chunk to 4 096 bytes.
fn chunk() -> Vec<u8> {
    let mut c = Vec::new();
    while c.len() + CHAT.len() + 8 <= 4096 {
        c.extend_from_slice(CHAT.as_bytes());
    }
    let pad = 4096 - c.len() - 3;
    c.push(b':');
    c.extend(std::iter::repeat_n(b'x', pad));
    c.extend_from_slice(b"\n\n");
    c
}

fn median_ns(iters: u32, mut f: impl FnMut()) -> f64 {
    for _ in 0..iters / 10 {
        f();
    }
    let mut runs: Vec<f64> = (0..7)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..iters {
                f();
            }
            start.elapsed().as_nanos() as f64 / f64::from(iters)
        })
        .collect();
    runs.sort_by(f64::total_cmp);
    runs[3]
}

fn streaming_bot() -> (Bot, RequestId) {
    let base = BaseUrl::new("https://api.region.test").unwrap();
    let credentials =
        ClientCredentials::new("3f2504e0-4f89-11d3-9a0c-0305e82c3301", "client-secret").unwrap();
    let mut bot = Bot::new(BotConfig::new(base, credentials), None, 1);
    let _ = bot.poll(T0);
    bot.authorize("code", "https://bot.test/cb");
    let Action::Send { id, .. } = bot.poll(T0) else {
        panic!("no token request")
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

fn main() {
    let chunk = chunk();
    let mut decoder = Decoder::new();
    let mut items = 0usize;
    let ns = median_ns(20_000, || {
        let mut input = &chunk[..];
        while let Some(item) = decoder.next_item(&mut input) {
            if let Item::Event {
                event: Event::Chat(chat),
                ..
            } = &item
            {
                black_box(chat.message.len());
            }
            items += 1;
            black_box(item);
        }
    });
    black_box(items);
    println!("rust decode_4k {ns:.0}");

    let (mut bot, stream) = streaming_bot();
    let mut now = T0;
    let ns = median_ns(200_000, || {
        now += 1;
        bot.on_stream_bytes(stream, CHAT.as_bytes(), now).unwrap();
        loop {
            match bot.poll(now) {
                Action::Event { event, .. } => {
                    black_box(event);
                }
                Action::Wait { .. } => break,
                other => panic!("unexpected {other:?}"),
            }
        }
    });
    println!("rust bot_turn {ns:.0}");
}
