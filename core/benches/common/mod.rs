//! The deterministic, service-typical event stream the benches feed (spec 2.6,
//! 4.6): `:heartbeat` comments every 15 s of stream time, and `chat`, `like`,
//! `donation` and `presence` frames of `id:<epochMillis>-<offset>`,
//! `event:<name>` and `data:<~200-byte JSON>`, some with Korean or emoji text;
//! a final `end` frame closes it.

// Each bench binary uses its own subset of these helpers.
#![allow(dead_code)]

/// The chunk size an HTTP client typically hands over.
pub const CHUNK: usize = 4 * 1024;

/// A generated stream and what it holds.
#[derive(Debug)]
pub struct Stream {
    /// The raw bytes (LF line ends, no BOM).
    pub bytes: Vec<u8>,
    /// Frames that dispatch an event (have a `data` line), the final `end` included.
    pub events: usize,
    /// `:heartbeat` comments.
    pub heartbeats: usize,
    /// Sum of the data lengths of all events (what each bench's checksum must equal).
    pub data_bytes: usize,
}

/// splitmix64: small, fast, deterministic.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len() as u64) as usize]
    }
}

const NICKNAMES: &[&str] = &[
    "별빛소녀🌟",
    "nightowl_92",
    "감자튀김",
    "DJ팬클럽회장",
    "moonlight",
    "🎧음악좋아",
    "하늘바라기",
    "cozy_listener",
    "초코우유",
    "청취자1234",
];

const MESSAGES: &[&str] = &[
    "안녕하세요! 오늘도 방송 잘 보고 있어요 ❤️",
    "this song is so good, what's the title?",
    "ㅋㅋㅋㅋㅋ 진짜 웃기다",
    "{\"looks\":\"like json\",\"but\":\"is chat\"}",
    "퇴근하고 바로 들어왔어요~ 오늘 플리 최고 👍👍",
    "hello from Busan 🌊 first time here",
    "신청곡 있어요!! 아이유 - 밤편지 부탁드려요 🙏",
    "lol \"quoted\" text and a backslash \\ here",
    "👏👏👏👏👏",
    "good evening everyone, DJ sounds great tonight",
];

const DONATION_NOTES: &[&str] = &[
    "항상 좋은 방송 감사합니다 💝",
    "for the next song request!",
    "생일 축하해요 🎂🎉",
];

const DJ_ID: &str = "dj_Qm9iV2hpdGVfTGl2ZUJyb2FkY2FzdF9ESg";

/// A user object with an encrypted-looking 43-character id.
fn user(rng: &mut Rng, out: &mut String) {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut id = String::with_capacity(43);
    // A small audience: ids repeat, as in a real broadcast.
    let mut seed = Rng(rng.below(300));
    for _ in 0..43 {
        id.push(char::from(ALPHABET[seed.below(64) as usize]));
    }
    out.push_str("{\"id\":\"");
    out.push_str(&id);
    out.push_str("\",\"nickname\":");
    if rng.below(12) == 0 {
        out.push_str("null");
    } else {
        out.push_str(&json_string(rng.pick(NICKNAMES)));
    }
    out.push('}');
}

fn json_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

/// ISO-8601 with milliseconds, e.g. `2024-11-22T04:33:20.123Z`.
fn timestamp(ms: u64) -> String {
    let secs = ms / 1000;
    let (h, m, s) = ((secs / 3600) % 24, (secs / 60) % 60, secs % 60);
    // Stream times stay within one day.
    format!("2024-11-22T{h:02}:{m:02}:{s:02}.{:03}Z", ms % 1000)
}

/// About `target` bytes of service-typical stream.
pub fn service_stream(target: usize) -> Stream {
    let mut rng = Rng(0x0A1B_2C3D_4E5F_6071);
    let mut out = String::with_capacity(target + 1024);
    let mut events = 0;
    let mut heartbeats = 0;
    let mut data_bytes = 0;
    // 2024-11-22T04:33:20Z
    let mut now: u64 = 1_732_250_000_000;
    let mut next_heartbeat = now + 15_000;
    let mut offset: u64 = 0;
    let mut data = String::with_capacity(512);
    while out.len() < target {
        now += rng.below(400);
        if now >= next_heartbeat {
            out.push_str(":heartbeat\n\n");
            heartbeats += 1;
            next_heartbeat += 15_000;
        }
        data.clear();
        let time = json_string(&timestamp(now % 86_400_000));
        let roll = rng.below(100);
        let name = match roll {
            0..=54 => {
                let dj = rng.below(20) == 0;
                data.push_str("{\"user\":");
                if dj {
                    data.push_str("{\"id\":\"");
                    data.push_str(DJ_ID);
                    data.push_str("\",\"nickname\":\"오늘의DJ🎙️\"}");
                } else {
                    user(&mut rng, &mut data);
                }
                data.push_str(",\"isDj\":");
                data.push_str(if dj { "true" } else { "false" });
                data.push_str(",\"message\":");
                data.push_str(&json_string(rng.pick(MESSAGES)));
                data.push_str(",\"sentTime\":");
                data.push_str(&time);
                data.push('}');
                "chat"
            }
            55..=79 => {
                let paid = rng.below(3) == 0;
                let (amount, extra, combo) = if paid {
                    (
                        10 * (1 + rng.below(10)),
                        5 * rng.below(2),
                        Some(1 + rng.below(5)),
                    )
                } else {
                    (1, 0, None)
                };
                let total = (amount + extra) * combo.unwrap_or(1);
                data.push_str("{\"user\":");
                user(&mut rng, &mut data);
                data.push_str(if paid {
                    ",\"type\":\"PAID\""
                } else {
                    ",\"type\":\"FREE\""
                });
                let combo = combo.map_or_else(|| "null".to_owned(), |c| c.to_string());
                data.push_str(&format!(
                    ",\"totalAmount\":{total},\"amount\":{amount},\"extraAmount\":{extra},\"combo\":{combo},\"time\":{time}}}"
                ));
                "like"
            }
            80..=89 => {
                data.push_str("{\"user\":");
                user(&mut rng, &mut data);
                let rank = match rng.below(3) {
                    0 => "null".to_owned(),
                    _ => (1 + rng.below(50)).to_string(),
                };
                let temperature = match rng.below(4) {
                    0 => "null".to_owned(),
                    1 => (30 + rng.below(60)).to_string(),
                    _ => format!("{}.{}", 30 + rng.below(60), rng.below(10)),
                };
                let manager = if rng.below(10) == 0 { "true" } else { "false" };
                data.push_str(&format!(
                    ",\"type\":\"JOIN\",\"fanRank\":{rank},\"isManager\":{manager},\"favoriteTemperature\":{temperature},\"time\":{time}}}"
                ));
                "presence"
            }
            _ => {
                data.push_str("{\"user\":");
                user(&mut rng, &mut data);
                let amount = 100 * (1 + rng.below(100));
                let note = match rng.below(3) {
                    0 => "null".to_owned(),
                    _ => json_string(rng.pick(DONATION_NOTES)),
                };
                data.push_str(&format!(
                    ",\"amount\":{amount},\"message\":{note},\"time\":{time}}}"
                ));
                "donation"
            }
        };
        offset += 1;
        out.push_str(&format!("id:{now}-{offset}\nevent:{name}\ndata:{data}\n\n"));
        events += 1;
        data_bytes += data.len();
    }
    let end = "{\"reason\":\"LIVE_ENDED\"}";
    out.push_str("event:end\ndata:");
    out.push_str(end);
    out.push_str("\n\n");
    events += 1;
    data_bytes += end.len();
    Stream {
        bytes: out.into_bytes(),
        events,
        heartbeats,
        data_bytes,
    }
}

/// `bytes` cut into `size`-byte chunks (the last may be shorter).
pub fn chunks(bytes: &[u8], size: usize) -> Vec<bytes::Bytes> {
    bytes
        .chunks(size)
        .map(bytes::Bytes::copy_from_slice)
        .collect()
}

/// One frame whose single `data` line is `len` bytes long (the linear-time case).
pub fn long_line_stream(len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(len + 32);
    out.extend_from_slice(b"event:blob\ndata:");
    out.extend((0..len).map(|i| b'a' + (i % 26) as u8));
    out.extend_from_slice(b"\n\n");
    out
}

/// Times contenders in interleaved passes and prints each one's fastest pass
/// and its ratio to the first contender. The minimum of many interleaved passes
/// is what the code can do; it barely moves when another process takes the
/// second core, unlike criterion's mean (see BENCHMARKS.md, "Noise").
pub fn race(title: &str, bytes: usize, passes: usize, contenders: &[(&str, &dyn Fn() -> usize)]) {
    use std::time::{Duration, Instant};
    let mut best = vec![Duration::MAX; contenders.len()];
    for _ in 0..passes {
        for (slot, (_, run)) in best.iter_mut().zip(contenders) {
            let start = Instant::now();
            std::hint::black_box(run());
            *slot = (*slot).min(start.elapsed());
        }
    }
    println!("{title}: fastest of {passes} interleaved passes");
    let first = best[0].as_secs_f64();
    for ((name, _), time) in contenders.iter().zip(&best) {
        let secs = time.as_secs_f64();
        println!(
            "  {name:<40} {:>8.3} ms  {:>7.0} MB/s  first is {:.2}x",
            secs * 1e3,
            bytes as f64 / secs / 1e6,
            secs / first
        );
    }
}

/// The events of the fixture stream `fixtures/streams/service.sse` (the
/// service's own example frames), decoded once.
pub fn service_events() -> Vec<onair::event::Event> {
    let bytes = include_bytes!("../../../fixtures/streams/service.sse");
    let mut decoder = onair::event::Decoder::new();
    let mut rest = &bytes[..];
    let mut out = Vec::new();
    while let Some(item) = decoder.next_item(&mut rest) {
        if let onair::event::Item::Event { event, .. } = item {
            out.push(event);
        }
    }
    out
}
