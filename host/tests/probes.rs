//! The off-air probe budget, against the emulator on 127.0.0.1 (in-process,
//! its clock 20 times real time): ten DJs off air under
//! `probe_budget_per_s = 1` probe the stream about once a second all
//! together, as the service's request log shows (without the budget they
//! would probe every 3–6 s each: about 2.2 a second); a DJ who goes on air
//! is found within the longest wait planned for the bot (each wait is
//! drawn in `[w, 2w]`, `1.5 w` on average), and `/metrics` and the
//! dashboard say so.

mod common;

use std::time::Duration;

use common::{browser, consent, control, until, Setup, KEY};
use onair_emulator::Emulator;
use serde_json::json;

const LOG: &str = "info,sqlx=warn,hyper=warn,reqwest=warn,h2=warn";
const SPEED: f64 = 20.0;
const BOTS: i64 = 10;
const BUDGET: i64 = 1;
/// The mean wait planned for each of the ten bots (ms): the budget shared
/// evenly (none has a history). The longest draw is `2w` = 4/3 of it.
const PLANNED_WAIT_MS: i64 = 1000 * BOTS / BUDGET;

/// Stream connects answered 404 (off-air probes) with `from_ms ≤ at < to_ms`
/// (emulator time), and the time of the first one answered 200 after
/// `from_ms`.
async fn probes(s: &Setup, from_ms: i64, to_ms: i64) -> (i64, Option<i64>) {
    let path = format!("/requests?path=/v1/live/events&clientId={}", s.client_id);
    let log = control(&s.emu, &path, None).await;
    let records = log["requests"].as_array().cloned().unwrap_or_default();
    let at = |r: &serde_json::Value| r["atMs"].as_i64().unwrap_or(-1);
    let not_on_air = records
        .iter()
        .filter(|r| r["status"] == 404 && (from_ms..to_ms).contains(&at(r)))
        .count();
    let found = records
        .iter()
        .filter(|r| r["status"] == 200 && at(r) >= from_ms)
        .map(at)
        .min();
    (i64::try_from(not_on_air).unwrap_or(i64::MAX), found)
}

/// The value of the sample `name` (with its labels) in `/metrics`.
fn sample(metrics: &str, name: &str) -> Option<f64> {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn off_air_bots_probe_within_the_budget_and_a_dj_on_air_is_found_within_the_planned_wait() {
    let _ = common::log(LOG);
    let emu = Emulator::builder()
        .speed(SPEED)
        .start()
        .await
        .expect("emulator");
    let mut s = Setup::on("probes", emu).await;
    s.text = s.text_with(&format!("probe_budget_per_s = {BUDGET}"));
    let host = s.host(KEY).await;
    for i in 1..=BOTS {
        let to = consent(&browser(), &host.at("/connect"), &format!("dj{i}"))
            .await
            .to;
        assert_eq!(to, format!("/bots/{i}"));
    }
    until(
        "every bot waits for its DJ",
        Duration::from_secs(20),
        || async {
            let mut all = true;
            for i in 1..=BOTS {
                all &= host.state(i).await == "waiting";
            }
            all
        },
    )
    .await;
    // The plan reaches every bot within a second or two (each bot's first
    // wait was drawn before it: 40 s of emulator time).
    tokio::time::sleep(Duration::from_secs(2)).await;

    // 1. Two minutes of emulator time: about one probe a second (the plan
    // spends 95 % of it; a few more or less is the draws' chance).
    let from = s.emu.now_ms();
    tokio::time::sleep(Duration::from_secs(6)).await;
    let to = s.emu.now_ms();
    let (count, found) = probes(&s, from, to).await;
    let window_s = (to - from) as f64 / 1000.0;
    let rate = count as f64 / window_s;
    assert!(
        rate <= 1.1 * BUDGET as f64,
        "{count} probes in {window_s} s: {rate}/s"
    );
    // Every bot probes, every 10 s on average: far from the 2.2/s without
    // the budget, far from nothing.
    assert!(
        rate >= 0.6 * BUDGET as f64,
        "{count} probes in {window_s} s"
    );
    assert_eq!(found, None, "nobody on air yet");

    // 2. A DJ goes on air: found within the longest draw (4/3 of the mean
    // wait; twice it is the bound here).
    let started = s.emu.now_ms();
    control(&s.emu, "/live/start", Some(json!({"dj": "dj4"}))).await;
    until(
        "the broadcast is found",
        Duration::from_secs(10),
        || async {
            sample(
                &host.page("/metrics").await,
                "onair_host_detect_seconds_count",
            ) == Some(1.0)
        },
    )
    .await;
    let (_, found) = probes(&s, started, i64::MAX).await;
    let found = found.expect("a connect answered 200");
    let slack_ms = 3_000; // request and task latencies, 20 times over
    assert!(
        found - started <= 2 * PLANNED_WAIT_MS + slack_ms,
        "found {} ms after the start",
        found - started
    );
    let metrics = host.page("/metrics").await;
    let took = sample(&metrics, "onair_host_detect_seconds_sum").expect("detect sum");
    assert!(
        took > 0.0 && took * 1000.0 <= (2 * PLANNED_WAIT_MS + slack_ms) as f64,
        "detected in {took} s\n{metrics}"
    );
    assert_eq!(
        sample(&metrics, "onair_host_probe_budget_share"),
        Some(BUDGET as f64)
    );
    println!(
        "{count} probes in {window_s} s ({rate:.2}/s, budget {BUDGET}/s); found {} ms after the start (planned wait {PLANNED_WAIT_MS} ms)",
        found - started
    );
    let counted = sample(&metrics, "onair_host_probes_total").expect("probes counted");
    assert!(counted >= (count + 1) as f64, "{counted} < {count} + 1");
    // The admin's dashboard: the rate spent against the share.
    let page = host.page("/").await;
    assert!(page.contains("Finding DJs on air"), "{page}");
    assert!(page.contains("id=\"probes-share\">1.0<"), "{page}");

    host.stop().await;
    s.finish().await;
}
