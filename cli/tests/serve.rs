//! `onair serve` end to end: the built binary on an ephemeral port.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, ChildStdout, Command, Stdio};

fn http_get(addr: &str, path: &str) -> String {
    let mut tcp = TcpStream::connect(addr).expect("connect");
    write!(
        tcp,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .expect("write");
    let mut out = String::new();
    tcp.read_to_string(&mut out).expect("read");
    out
}

/// `onair serve --json ARGS…` started: the process, its stdout after the
/// first line, and that line (where it is).
fn spawn_serve(args: &[&str]) -> (Child, BufReader<ChildStdout>, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_onair"))
        .args(["serve", "--json"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn onair serve");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    stdout.read_line(&mut line).expect("first line");
    (child, stdout, line)
}

/// `onair serve --json ARGS…` started, its first line (where it is) read.
fn serve_json(args: &[&str]) -> (Child, serde_json::Value) {
    let (child, _, line) = spawn_serve(args);
    let v = serde_json::from_str(&line).expect("one JSON object");
    (child, v)
}

/// SIGTERM, then a clean exit.
fn stop(mut child: Child) {
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let exit = child.wait().expect("wait");
    assert!(exit.success(), "clean stop: {exit:?}");
}

#[test]
fn serve_json_prints_where_it_is_then_serves_until_sigterm() {
    let (child, v) = serve_json(&["--port", "0", "--speed", "10", "--scenario", "quiet"]);
    let keys: Vec<&str> = v
        .as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys.len(), 5);
    for k in [
        "baseUrl",
        "controlUrl",
        "clientId",
        "clientSecret",
        "redirectUri",
    ] {
        assert!(v[k].is_string(), "{k}");
    }
    let base = v["baseUrl"].as_str().expect("baseUrl");
    assert!(base.starts_with("http://127.0.0.1:"));
    assert_eq!(v["controlUrl"], format!("{base}/_emulator"));
    assert_eq!(v["clientId"].as_str().expect("id").len(), 36);
    let addr = base.trim_start_matches("http://");
    let clock = http_get(addr, "/_emulator/clock");
    assert!(clock.starts_with("HTTP/1.1 200"), "{clock}");
    let progress = http_get(addr, "/_emulator/scenario");
    assert!(progress.contains("\"name\":\"quiet\""), "{progress}");
    let not_on_air_yet_or_on_air = http_get(addr, "/v1/live");
    assert!(not_on_air_yet_or_on_air.starts_with("HTTP/1.1 401"));
    stop(child);
}

#[test]
fn serve_rejects_bad_options() {
    for args in [
        &["serve", "--port", "x"][..],
        &["serve", "--scenario", "/no/such/file"],
        &["serve", "--bogus"],
        &["serve", "--djs", "-1"],
        &["serve", "--djs", "many"],
        &["serve", "--djs", "100001"],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_onair"))
            .args(args)
            .output()
            .expect("run");
        assert_eq!(out.status.code(), Some(2), "{args:?}");
    }
}

/// The `--json` line's exact shape: five string fields in this order (as
/// serde_json writes the object: keys sorted), one line, nothing after it.
#[test]
fn serve_json_line_keeps_its_field_order() {
    let (child, mut stdout, line) = spawn_serve(&["--speed=0"]);
    stop(child);
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).expect("the rest");
    assert_eq!(rest, "", "nothing after the first line");
    let v: serde_json::Value = serde_json::from_str(&line).expect("one JSON object");
    let s = |k: &str| v[k].as_str().expect(k).to_owned();
    let rebuilt = format!(
        "{{\"baseUrl\":\"{}\",\"clientId\":\"{}\",\"clientSecret\":\"{}\",\"controlUrl\":\"{}\",\"redirectUri\":\"{}\"}}\n",
        s("baseUrl"),
        s("clientId"),
        s("clientSecret"),
        s("controlUrl"),
        s("redirectUri")
    );
    assert_eq!(line, rebuilt);
}

/// `--djs N`: N more DJs beside `main`, the scenario played for each; a
/// consent through the consent page for one of them.
#[test]
fn serve_djs_plays_the_scenario_for_every_dj() {
    let (child, v) = serve_json(&["--speed", "0", "--scenario", "quiet", "--djs", "3"]);
    let base = v["baseUrl"].as_str().expect("baseUrl");
    let addr = base.trim_start_matches("http://");
    let djs = http_get(addr, "/_emulator/djs");
    let body = djs.split("\r\n\r\n").nth(1).expect("a body");
    let list: serde_json::Value = serde_json::from_str(body).expect("JSON");
    let names: Vec<&str> = list["djs"]
        .as_array()
        .expect("djs")
        .iter()
        .map(|d| d["dj"].as_str().expect("dj"))
        .collect();
    assert_eq!(names, ["main", "dj-1", "dj-2", "dj-3"]);
    let progress = http_get(addr, "/_emulator/scenario");
    let steps = onair_emulator::Scenario::builtin("quiet")
        .expect("quiet")
        .steps
        .len();
    assert!(
        progress.contains(&format!("\"total\":{}", 4 * steps)),
        "{progress}"
    );
    let consent = http_get(
        addr,
        &format!(
            "/oauth/authorize?client_id={}&state=s1&dj=dj-2",
            v["clientId"].as_str().expect("clientId")
        ),
    );
    assert!(consent.starts_with("HTTP/1.1 302"), "{consent}");
    assert!(
        consent.contains("location: http://127.0.0.1/callback?code="),
        "{consent}"
    );
    stop(child);
}

/// `--scenario fleet`: the DJs of `--djs` on a daily schedule, `--on-air`
/// of them on air at a time, `--events-per-minute` events each.
#[test]
fn serve_fleet_runs_the_djs_with_the_share_and_rate_asked() {
    let (child, v) = serve_json(&[
        "--speed",
        "0",
        "--djs",
        "400",
        "--scenario",
        "fleet",
        "--on-air",
        "20",
        "--events-per-minute",
        "3",
    ]);
    let addr = v["baseUrl"]
        .as_str()
        .expect("baseUrl")
        .trim_start_matches("http://")
        .to_owned();
    let fleet = http_get(&addr, "/_emulator/fleet?onAir=true");
    let body = fleet.split("\r\n\r\n").nth(1).expect("a body");
    let f: serde_json::Value = serde_json::from_str(body).expect("JSON");
    assert_eq!(
        (&f["djs"], &f["onAirPercent"], &f["eventsPerMinute"]),
        (&400.into(), &20.into(), &3.0.into())
    );
    let on_air = f["onAir"].as_u64().expect("onAir");
    assert!((50..=110).contains(&on_air), "{on_air} of 400 on air");
    assert_eq!(
        f["plans"].as_array().expect("plans").len() as u64,
        on_air,
        "onAir=true lists those on air"
    );
    let progress = http_get(&addr, "/_emulator/scenario");
    assert!(progress.contains("\"name\":\"fleet\""), "{progress}");
    stop(child);
}
