//! The heap an idle `Bot` holds between frames (target: under 4 KiB, so one
//! process can hold 100,000 bots), measured with a counting allocator.
#![allow(clippy::unwrap_used)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use onair::bot::{Action, Bot, BotConfig};
use onair::{BaseUrl, ClientCredentials};

/// Counts the net bytes allocated by the current thread.
struct Counting;

thread_local! {
    static LIVE: Cell<isize> = const { Cell::new(0) };
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = LIVE.try_with(|l| l.set(l.get() + layout.size() as isize));
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        let _ = LIVE.try_with(|l| l.set(l.get() - layout.size() as isize));
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn live() -> isize {
    LIVE.with(Cell::get)
}

const T0: u64 = 1_732_250_000_000;

fn drain(bot: &mut Bot, now: u64) -> Vec<Action> {
    let mut out = Vec::new();
    loop {
        let action = bot.poll(now);
        let last = matches!(
            action,
            Action::Wait { .. } | Action::Stopped(_) | Action::NeedsAuthorization
        );
        out.push(action);
        if last {
            return out;
        }
    }
}

#[test]
fn an_idle_streaming_bot_holds_under_4_kib_of_heap() {
    let before = live();
    let base = BaseUrl::new("https://api.region.test").unwrap();
    let credentials =
        ClientCredentials::new("3f2504e0-4f89-11d3-9a0c-0305e82c3301", "client-secret").unwrap();
    let mut bot = Bot::new(BotConfig::new(base, credentials), None, 1);
    drain(&mut bot, T0);
    bot.authorize("code", "https://bot.test/cb");
    let Action::Send { id, .. } = drain(&mut bot, T0).remove(0) else {
        panic!()
    };
    let pair = br#"{"access_token":"a-realistic-access-token-of-some-length-0123456789","token_type":"Bearer","expires_in":3600,"refresh_token":"a-realistic-refresh-token-of-some-length-0123456789","scope":"live.read listeners.read fans.read events.chat events.presence events.like events.donation chat.send"}"#;
    bot.on_response(id, 200, &[] as &[(&str, &str)], pair, T0)
        .unwrap();
    let stream = drain(&mut bot, T0)
        .into_iter()
        .find_map(|a| match a {
            Action::OpenStream { id, .. } => Some(id),
            _ => None,
        })
        .unwrap();
    bot.on_stream_open(stream, 200, [("content-type", "text/event-stream")], T0)
        .unwrap();
    let stream_bytes = include_bytes!("../../fixtures/streams/service.sse");
    let mut events = 0;
    for round in 0..50u64 {
        let now = T0 + round * 1000;
        for chunk in stream_bytes[..stream_bytes.len() - 40].chunks(512) {
            bot.on_stream_bytes(stream, chunk, now).unwrap();
            events += drain(&mut bot, now)
                .iter()
                .filter(|a| matches!(a, Action::Event { .. }))
                .count();
        }
    }
    assert_eq!(
        events, 500,
        "the fixture holds 10 events before its end frame"
    );
    let heap = live() - before;
    println!(
        "idle Bot: {heap} bytes of heap + {} bytes inline (size_of)",
        std::mem::size_of::<Bot>()
    );
    assert!(heap < 4096, "idle bot holds {heap} bytes of heap");
    drop(bot);
}
