//! Load benchmark: one emulator process holding N concurrent event streams
//! at R events/s each, read by a client in this process through the core's
//! `onair::event::Decoder`. Reports frames lost, the emulator's CPU, its RSS
//! per stream and the emit→decode delay (p50/p99/max).
//!
//! ```sh
//! cargo run --release -p onair-emulator --example load -- --streams 1000 --rate 100 --seconds 20
//! ```
//!
//! The emulator runs in a child process (this binary with `--server`), so its
//! CPU and memory are measured apart from the client's.
//!
//! With `--djs N` it measures a hosted service's load instead: one app, the
//! default DJ and `dj-1` … `dj-N`, each playing a broadcast of `--rate`
//! generated events per second for `--seconds` (`Builder::djs`), each read by
//! its own bot (consent for its DJ, one stream, reconnects); it reports the
//! events decoded against the ledger, the emulator's CPU and its RSS.
//!
//! ```sh
//! cargo run --release -p onair-emulator --example load -- --djs 1000 --rate 10 --seconds 60
//! ```

#![allow(clippy::unwrap_used, clippy::print_stdout)]

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use onair::event::{Decoder, Event, Item};
use serde_json::{json, Value};

fn arg(name: &str, default: u64) -> u64 {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_micros() as u64
}

fn proc_cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<&str> = after.split_whitespace().collect();
    // Fields 14 and 15 (utime, stime) are at 11 and 12 after the ')' split.
    f.get(11).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0)
        + f.get(12).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0)
}

fn proc_rss_kb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// The broadcast every DJ plays in the `--djs` mode: `rate` events a
/// second (of 60 people) for `seconds`, then the end.
fn night(rate: u64, seconds: u64) -> String {
    json!({"name": "night", "steps": [
        {"do": "state", "botManager": true},
        {"do": "liveStart", "title": "load"},
        {"do": "waitForStream", "timeoutMs": 120_000},
        {"afterMs": 100, "do": "emit", "event": "chat", "data": {"isDj": true, "message": "hi"}},
        {"afterMs": 100, "do": "generate", "seed": 1, "count": rate * seconds,
         "intervalMs": 1000 / rate.max(1), "people": 60, "djChatEvery": 0},
        {"afterMs": 500, "do": "liveEnd"}
    ]})
    .to_string()
}

fn server() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut builder = onair_emulator::Emulator::builder();
        let djs = arg("--djs", 0) as usize;
        if djs > 0 {
            let scenario = night(arg("--rate", 10), arg("--seconds", 60));
            builder = builder
                .djs(djs)
                .scenario(onair_emulator::Scenario::from_json(&scenario).unwrap());
        }
        let emu = builder.start().await.unwrap();
        let app = emu.app();
        println!("{}", json!({"baseUrl": emu.base_url(), "clientId": app.client_id, "clientSecret": app.client_secret, "redirectUri": app.redirect_uri}));
        std::io::stdout().flush().unwrap();
        // Until the parent closes our stdin.
        tokio::task::spawn_blocking(|| {
            let mut sink = Vec::new();
            let _ = std::io::stdin().read_to_end(&mut sink);
        })
        .await
        .unwrap();
        emu.shutdown().await;
    });
}

fn main() {
    if std::env::args().any(|a| a == "--server") {
        server();
        return;
    }
    let streams = arg("--streams", 1000) as usize;
    let rate = arg("--rate", 100);
    let seconds = arg("--seconds", 20);
    let djs = arg("--djs", 0);
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--server", "--djs", &djs.to_string()])
        .args([
            "--rate",
            &rate.to_string(),
            "--seconds",
            &seconds.to_string(),
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let info: Value = serde_json::from_str(&line).unwrap();
    let base = info["baseUrl"].as_str().unwrap().to_owned();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    if djs > 0 {
        rt.block_on(run_djs(base, info, pid, djs as usize));
    } else {
        rt.block_on(run(base, info, pid, streams, rate, seconds));
    }
    drop(child.stdin.take());
    let _ = child.wait();
}

async fn run(base: String, info: Value, pid: u32, streams: usize, rate: u64, seconds: u64) {
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(4)
        .build()
        .unwrap();
    let ctl = format!("{base}/_emulator");
    let post = |path: &str, body: Value| {
        let http = http.clone();
        let url = format!("{ctl}{path}");
        async move {
            http.post(url)
                .json(&body)
                .send()
                .await
                .unwrap()
                .json::<Value>()
                .await
                .unwrap()
        }
    };
    post("/live/start", json!({"title": "load"})).await;
    let code = post("/consent", json!({"scope": "events.chat"})).await["code"]
        .as_str()
        .unwrap()
        .to_owned();
    let form =
        format!(
        "grant_type=authorization_code&code={code}&redirect_uri={}&client_id={}&client_secret={}",
        info["redirectUri"].as_str().unwrap().replace(':', "%3A").replace('/', "%2F"),
        info["clientId"].as_str().unwrap(),
        info["clientSecret"].as_str().unwrap()
    );
    let tokens: Value = http
        .post(format!("{base}/v1/oauth/token"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let access = tokens["access_token"].as_str().unwrap().to_owned();
    let rss_before = proc_rss_kb(pid);

    // Open every stream first.
    let received = Arc::new(AtomicU64::new(0));
    let mut readers = Vec::with_capacity(streams);
    let opened = Arc::new(AtomicU64::new(0));
    for _ in 0..streams {
        let client = reqwest::Client::builder().build().unwrap();
        let url = format!("{base}/v1/live/events");
        let access = access.clone();
        let received = Arc::clone(&received);
        let opened = Arc::clone(&opened);
        readers.push(tokio::spawn(async move {
            let mut r = client
                .get(url)
                .bearer_auth(access)
                .header("accept", "text/event-stream")
                .send()
                .await
                .unwrap();
            assert_eq!(r.status().as_u16(), 200);
            opened.fetch_add(1, Ordering::Relaxed);
            let mut decoder = Decoder::new();
            let mut delays: Vec<u32> = Vec::new();
            let mut count = 0u64;
            while let Ok(Some(chunk)) = r.chunk().await {
                let mut input = &chunk[..];
                let now = now_us();
                while let Some(item) = decoder.next_item(&mut input) {
                    match item {
                        Item::Event {
                            event: Event::Chat(c),
                            ..
                        } => {
                            count += 1;
                            received.fetch_add(1, Ordering::Relaxed);
                            if let Ok(t) = c.message.parse::<u64>() {
                                delays.push(now.saturating_sub(t).min(u64::from(u32::MAX)) as u32);
                            }
                        }
                        Item::Event {
                            event: Event::End(_),
                            ..
                        } => return (count, delays),
                        _ => {}
                    }
                }
            }
            (count, delays)
        }));
    }
    while opened.load(Ordering::Relaxed) < streams as u64 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let rss_open = proc_rss_kb(pid);

    // Emit at `rate` per second for `seconds`.
    let total = rate * seconds;
    let ticks = |pid| proc_cpu_ticks(pid);
    let cpu0 = ticks(pid);
    let self0 = ticks(std::process::id());
    let t0 = Instant::now();
    // The emitter runs on its own thread and runtime, one task per emit at
    // its scheduled time, so a slow answer never delays the next emit.
    let emitter = {
        let url = format!("{ctl}/emit");
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let http = reqwest::Client::builder().build().unwrap();
                let mut every = tokio::time::interval(Duration::from_micros(1_000_000 / rate));
                every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
                let mut tasks = Vec::with_capacity(total as usize);
                let mut rss_peak = 0;
                for i in 0..total {
                    every.tick().await;
                    let body = json!({"event": "chat", "data": {"user": {"id": format!("u{}", i % 500), "nickname": "load"}, "message": now_us().to_string()}});
                    let (http, url) = (http.clone(), url.clone());
                    tasks.push(tokio::spawn(async move {
                        let v: Value = http.post(url).json(&body).send().await.unwrap().json().await.unwrap();
                        v["delivered"].as_u64().unwrap_or(0)
                    }));
                    if i % rate == 0 {
                        rss_peak = rss_peak.max(proc_rss_kb(pid));
                    }
                }
                let mut min = u64::MAX;
                for t in tasks {
                    min = min.min(t.await.unwrap());
                }
                (min, rss_peak)
            })
        })
    };
    let (delivered_min, rss_peak) = tokio::task::spawn_blocking(move || emitter.join().unwrap())
        .await
        .unwrap();
    let emit_secs = t0.elapsed().as_secs_f64();
    // Let the last frames arrive, then end every stream cleanly.
    let deadline = Instant::now() + Duration::from_secs(10);
    while received.load(Ordering::Relaxed) < total * streams as u64 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let wall = t0.elapsed().as_secs_f64();
    let cpu1 = ticks(pid);
    let self1 = ticks(std::process::id());
    post("/streams/end", json!({"reason": "RECONNECT"})).await;
    let mut all: Vec<u32> = Vec::new();
    let mut got = 0u64;
    for r in readers {
        let (n, d) = r.await.unwrap();
        got += n;
        all.extend(d);
    }
    all.sort_unstable();
    let pct = |p: f64| {
        all.get(((all.len() as f64 * p) as usize).min(all.len().saturating_sub(1)))
            .copied()
            .unwrap_or(0)
    };
    let expected = total * streams as u64;
    let hz = 100.0; // USER_HZ
    let ledger = post("/ledger", json!({})).await;
    let _ = ledger;
    let led: Value = http
        .get(format!("{ctl}/ledger"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let dropped = led["broadcasts"][0]["bots"][0]["connections"]
        .as_array()
        .map_or(0, |c| c.iter().filter(|c| c["dropped"] == true).count());
    println!("streams {streams}, rate {rate}/s each, {seconds} s: {total} events emitted in {emit_secs:.2} s ({:.1}/s)", total as f64 / emit_secs);
    println!(
        "frames expected {expected}, decoded {got}, lost {}",
        expected.saturating_sub(got)
    );
    println!("min delivered per emit {delivered_min}; connections dropped {dropped}");
    println!(
        "emulator CPU {:.0}% of one core over {wall:.1} s; client CPU {:.0}%",
        (cpu1 - cpu0) as f64 / hz / wall * 100.0,
        (self1 - self0) as f64 / hz / wall * 100.0
    );
    println!(
        "emulator RSS: {} kB before streams, {} kB with streams open, peak {} kB during load → {:.1} kB per stream (open), {:.1} kB per stream (peak)",
        rss_before,
        rss_open,
        rss_peak,
        (rss_open.saturating_sub(rss_before)) as f64 / streams as f64,
        (rss_peak.saturating_sub(rss_before)) as f64 / streams as f64
    );
    println!(
        "emit→decode delay: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms ({} samples)",
        f64::from(pct(0.50)) / 1000.0,
        f64::from(pct(0.99)) / 1000.0,
        f64::from(all.last().copied().unwrap_or(0)) / 1000.0,
        all.len()
    );
}

/// The `--djs` mode: a bot per DJ, until every broadcast ended.
async fn run_djs(base: String, info: Value, pid: u32, djs: usize) {
    let http = reqwest::Client::new();
    let ctl = format!("{base}/_emulator");
    let rss_before = proc_rss_kb(pid);
    let cpu0 = proc_cpu_ticks(pid);
    let t0 = Instant::now();
    let names: Vec<String> = std::iter::once("main".to_owned())
        .chain((1..=djs).map(|k| format!("dj-{k}")))
        .collect();
    let received = Arc::new(AtomicU64::new(0));
    let mut bots = Vec::with_capacity(names.len());
    for dj in &names {
        let consent: Value = http
            .post(format!("{ctl}/consent"))
            .json(&json!({"dj": dj}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let tokens: Value = http
            .post(format!("{base}/v1/oauth/token"))
            .basic_auth(
                info["clientId"].as_str().unwrap(),
                info["clientSecret"].as_str(),
            )
            .form(&[
                ("grant_type", "authorization_code"),
                ("code", consent["code"].as_str().unwrap()),
                ("redirect_uri", info["redirectUri"].as_str().unwrap()),
            ])
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let access = tokens["access_token"].as_str().unwrap().to_owned();
        let url = format!("{base}/v1/live/events");
        let received = Arc::clone(&received);
        bots.push(tokio::spawn(async move {
            let client = reqwest::Client::new();
            loop {
                let r = client
                    .get(&url)
                    .bearer_auth(&access)
                    .header("accept", "text/event-stream")
                    .send()
                    .await;
                let Ok(mut r) = r else { continue };
                if r.status().as_u16() != 200 {
                    tokio::time::sleep(Duration::from_millis(500)).await;
                    continue;
                }
                let mut decoder = Decoder::new();
                while let Ok(Some(chunk)) = r.chunk().await {
                    let mut input = &chunk[..];
                    while let Some(item) = decoder.next_item(&mut input) {
                        match item {
                            Item::Event {
                                event: Event::End(_),
                                ..
                            } => return,
                            Item::Event { .. } => {
                                received.fetch_add(1, Ordering::Relaxed);
                            }
                            _ => {}
                        }
                    }
                }
            }
        }));
    }
    let setup = t0.elapsed().as_secs_f64();
    let mut rss_peak = 0;
    loop {
        rss_peak = rss_peak.max(proc_rss_kb(pid));
        let p: Value = http
            .get(format!("{ctl}/scenario"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if p["done"] == true {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let wall = t0.elapsed().as_secs_f64();
    let cpu = (proc_cpu_ticks(pid) - cpu0) as f64 / 100.0;
    for b in bots {
        let _ = tokio::time::timeout(Duration::from_secs(10), b).await;
    }
    let ledger: Value = http
        .get(format!("{ctl}/ledger"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let delivered: u64 = ledger["broadcasts"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|b| b["bots"].as_array().unwrap())
        .flat_map(|b| b["connections"].as_array().unwrap())
        .map(|c| {
            ["chat", "presence", "like", "donation"]
                .iter()
                .map(|k| c["events"][k].as_u64().unwrap_or(0))
                .sum::<u64>()
        })
        .sum();
    let got = received.load(Ordering::Relaxed);
    println!(
        "{} DJs (main + dj-1..dj-{djs}), one app, a bot each: consents and streams in {setup:.1} s, scenario done after {wall:.1} s",
        names.len()
    );
    println!(
        "events: ledger {delivered}, decoded by the bots {got} ({:.0}/s over the run)",
        got as f64 / wall
    );
    println!(
        "emulator CPU {cpu:.1} s ({:.0}% of one core over the run); RSS {rss_before} kB before, peak {rss_peak} kB ({:.1} kB per DJ)",
        cpu / wall * 100.0,
        rss_peak.saturating_sub(rss_before) as f64 / names.len() as f64
    );
}
