use super::*;
use crate::proto::problem::ProblemKind;
use crate::proto::scope::Permission;
use proptest::prelude::*;

const T0: u64 = 1_700_000_000_000;
const NO_HEADERS: &[(&str, &str)] = &[];
const HEARTBEAT: &[u8] = b":heartbeat\n\n";
const CHAT: &[u8] = b"id:1700000000000-1\nevent:chat\ndata:{\"user\":{\"id\":\"u1\",\"nickname\":\"Mo\"},\"isDj\":false,\"message\":\"hi\",\"sentTime\":\"2023-11-14T22:13:20Z\"}\n\n";

fn end(reason: &str) -> Vec<u8> {
    format!("event:end\ndata:{{\"reason\":\"{reason}\"}}\n\n").into_bytes()
}

fn sse_error(status: u16, code: Option<&str>) -> Vec<u8> {
    let code = code.map_or(String::new(), |c| format!(",\"detailCode\":\"{c}\""));
    format!("data:{{\"status\":{status}{code},\"message\":\"m\"}}\n\n").into_bytes()
}

/// Drives a loop and writes down every step, with times relative to `T0`.
struct Script {
    lp: ConnectLoop,
    now: u64,
    log: Vec<String>,
}

impl Script {
    fn new(seed: u64) -> Self {
        Self {
            lp: ConnectLoop::new(StreamConfig::default(), seed),
            now: T0,
            log: Vec::new(),
        }
    }

    fn note(&mut self, what: impl Into<String>) {
        let line = format!("t+{:>7}ms  {}", self.now - T0, what.into());
        self.log.push(line);
    }

    /// Polls (sleeping through waits) until the loop asks for an action that
    /// needs a report: connect, refresh, a wait without deadline, or a stop.
    fn until_action(&mut self) -> Step {
        for _ in 0..20 {
            let step = self.lp.poll(self.now);
            match step {
                Step::Close => self.note("close"),
                Step::Wait {
                    until_ms: Some(until),
                } => {
                    assert!(until > self.now, "never wait for the past");
                    assert_eq!(self.lp.deadline(), Some(until));
                    self.note(format!("wait {} ms", until - self.now));
                    self.now = until;
                }
                Step::Wait { until_ms: None } => {
                    self.note("wait for a report");
                    return step;
                }
                Step::Connect => {
                    self.note("connect");
                    return step;
                }
                Step::RefreshToken { unauthorized } => {
                    self.note(if unauthorized {
                        "refresh token (401)"
                    } else {
                        "refresh token"
                    });
                    return step;
                }
                Step::Stopped(ref why) => {
                    self.note(format!("stopped: {}", why.code()));
                    return step;
                }
                Step::Notice(notice) => self.note(format!("notice: {notice}")),
            }
        }
        panic!("no action in 20 polls");
    }

    /// The wait the next poll asks for, in ms from now (after any closes).
    fn next_wait(&mut self) -> u64 {
        loop {
            match self.lp.poll(self.now) {
                Step::Close => self.note("close"),
                Step::Wait {
                    until_ms: Some(until),
                } => {
                    self.note(format!("wait {} ms", until - self.now));
                    let wait = until - self.now;
                    self.now = until;
                    return wait;
                }
                other => panic!("expected a wait, got {other:?}"),
            }
        }
    }

    fn respond(&mut self, status: u16, body: &[u8]) {
        self.note(format!("<- HTTP {status}"));
        let p = self
            .lp
            .on_response(status, NO_HEADERS, body, self.now)
            .unwrap();
        if !p.is_ok() {
            self.note(format!("   {p}"));
        }
    }

    fn bytes(&mut self, after_ms: u64, chunk: &[u8]) {
        self.now += after_ms;
        let names: Vec<String> = self
            .lp
            .on_bytes(chunk, self.now)
            .map(|item| match item {
                Item::Heartbeat => "heartbeat".to_owned(),
                Item::Event { event, .. } => match event {
                    Event::End(end) => format!("end {}", end.reason),
                    other => other.name().to_owned(),
                },
                other => format!("{other:?}"),
            })
            .collect();
        self.note(format!("<- {}", names.join(", ")));
    }

    fn expect(&mut self, expected: Step) {
        assert_eq!(self.until_action(), expected, "{:#?}", self.log);
    }

    fn open(&mut self) {
        self.expect(Step::Connect);
        self.respond(200, b"");
    }
}

// ---- spec 4.6 reconnection table: one test per row ----

fn open_then(seed: u64, chunk: &[u8]) -> Script {
    let mut s = Script::new(seed);
    s.open();
    s.bytes(1_000, HEARTBEAT);
    s.bytes(1_000, chunk);
    s
}

#[test]
fn spec_4_6_row_end_live_ended() {
    let mut s = open_then(1, &end("LIVE_ENDED"));
    s.expect(Step::Connect);
    let waited = s.now - T0 - 2_000;
    assert!(
        (3_000..=6_000).contains(&waited),
        "backs off, not at once: {waited}"
    );
    s.respond(404, &sse_error(404, Some("OAPI_MNGR_0301")));
    s.expect(Step::Connect);
    insta::assert_json_snapshot!(s.log);
}

#[test]
fn spec_4_6_row_end_token_expired() {
    let mut s = open_then(2, &end("TOKEN_EXPIRED"));
    s.expect(Step::RefreshToken {
        unauthorized: false,
    });
    assert_eq!(s.now, T0 + 2_000, "refresh at once");
    s.lp.on_token_refreshed(s.now).unwrap();
    s.note("token refreshed");
    s.expect(Step::Connect);
    assert_eq!(s.now, T0 + 2_000, "reconnect immediately");
    insta::assert_json_snapshot!(s.log);
}

#[test]
fn spec_4_6_row_end_reconnect() {
    let mut s = open_then(3, &end("RECONNECT"));
    s.expect(Step::Connect);
    assert_eq!(s.now, T0 + 2_000, "no backoff");
    insta::assert_json_snapshot!(s.log);
}

#[test]
fn spec_4_6_row_dropped_without_end_frame() {
    let mut s = Script::new(4);
    s.open();
    s.lp.on_closed(s.now);
    s.note("connection closed");
    let mut ceilings = Vec::new();
    for attempt in 0..7 {
        let wait = s.next_wait();
        let ceiling = Backoff::new(0).ceiling_ms(attempt);
        assert!(wait <= ceiling, "attempt {attempt}: {wait} > {ceiling}");
        ceilings.push(ceiling / 1000);
        s.expect(Step::Connect);
        s.lp.on_connect_failed(s.now).unwrap();
        s.note("connect failed");
    }
    assert_eq!(ceilings, [1, 2, 4, 8, 16, 30, 30]);
    insta::assert_json_snapshot!(s.log);
}

#[test]
fn spec_4_6_row_404_not_on_air() {
    let mut s = Script::new(5);
    for _ in 0..5 {
        s.expect(Step::Connect);
        let before = s.now;
        s.respond(404, &sse_error(404, Some("OAPI_MNGR_0301")));
        s.expect(Step::Connect);
        let wait = s.now - before;
        assert!(
            (3_000..=6_000).contains(&wait),
            "a few seconds, jittered: {wait}"
        );
        s.lp.on_connect_failed(s.now).unwrap(); // keep the script moving
        s.note("connect failed");
        s.lp.restart(s.now);
    }
    insta::assert_json_snapshot!(s.log);
}

#[test]
fn spec_4_6_row_401() {
    let mut s = Script::new(6);
    s.expect(Step::Connect);
    s.respond(401, &sse_error(401, None));
    s.expect(Step::RefreshToken { unauthorized: true });
    s.lp.on_token_refreshed(s.now).unwrap();
    s.note("token refreshed");
    s.expect(Step::Connect);
    s.respond(401, &sse_error(401, Some("OAPI_MNGR_0203")));
    // Every 401 asks for a refresh, marked as a 401: whether one is spent or
    // the DJ must authorize again is the one-refresh rule's
    // (`TokenManager::on_unauthorized`), which calls share.
    s.expect(Step::RefreshToken { unauthorized: true });
    assert_eq!(s.lp.deadline(), None);
    insta::assert_json_snapshot!(s.log);
}

#[test]
fn a_stop_lifted_for_new_tokens_waits_for_them_then_connects() {
    let mut s = Script::new(6);
    s.expect(Step::Connect);
    s.respond(401, &sse_error(401, None));
    s.expect(Step::RefreshToken { unauthorized: true });
    s.lp.on_token_refreshed(s.now).unwrap();
    s.expect(Step::Connect);
    s.respond(403, &sse_error(403, None));
    assert!(matches!(s.lp.poll(s.now), Step::Stopped(_)));
    // A new consent code is being exchanged: no stop, no connect, no deadline.
    s.lp.await_new_tokens();
    assert_eq!(s.lp.stop(), None);
    assert_eq!(s.lp.phase(), Phase::Refreshing);
    assert_eq!(s.lp.poll(s.now + 60_000), Step::Wait { until_ms: None });
    assert_eq!(s.lp.deadline(), None);
    // The new pair is in: connect at once; a 401 now gets its one refresh again.
    s.now += 60_000;
    s.lp.on_token_refreshed(s.now).unwrap();
    s.expect(Step::Connect);
    s.respond(401, &sse_error(401, None));
    s.expect(Step::RefreshToken { unauthorized: true });
}

#[test]
fn spec_4_6_row_403_without_code() {
    let mut s = Script::new(7);
    s.expect(Step::Connect);
    s.respond(403, &sse_error(403, None));
    s.expect(Step::Stopped(Stop::Reconsent {
        missing: vec![
            Permission::EventsChat,
            Permission::EventsPresence,
            Permission::EventsLike,
            Permission::EventsDonation,
        ],
    }));
    insta::assert_json_snapshot!(s.log);
}

#[test]
fn spec_4_6_row_403_0209() {
    let mut s = Script::new(8);
    s.expect(Step::Connect);
    s.respond(403, &sse_error(403, Some("OAPI_MNGR_0209")));
    s.expect(Step::Stopped(Stop::JoinForbidden));
    insta::assert_json_snapshot!(s.log);
}

#[test]
fn issue_row_5xx_backs_off() {
    let mut s = Script::new(9);
    for status in [502u16, 500, 503] {
        s.expect(Step::Connect);
        let code = (status == 502).then_some("OAPI_MNGR_2302");
        s.respond(status, &sse_error(status, code));
    }
    s.expect(Step::Connect);
    assert_eq!(s.lp.backoff_attempt(), 3);
    insta::assert_json_snapshot!(s.log);
}

// ---- the day in the bot's life ----

#[test]
fn a_day_in_the_bots_life() {
    let mut s = Script::new(2024);

    // Not on air yet.
    for _ in 0..3 {
        s.expect(Step::Connect);
        s.respond(404, &sse_error(404, Some("OAPI_MNGR_0301")));
    }

    // On air: opened, heartbeats and chat.
    s.open();
    assert_eq!(s.lp.phase(), Phase::Open);
    s.bytes(15_000, HEARTBEAT);
    s.bytes(3_000, CHAT);
    s.bytes(12_000, HEARTBEAT);
    assert_eq!(s.lp.deadline(), Some(s.now + 45_000));

    // The server asks for a reconnect: at once, same token.
    s.bytes(5_000, &end("RECONNECT"));
    let t = s.now;
    s.open();
    assert_eq!(s.now, t);

    // The token expires: refresh, then reconnect at once.
    s.bytes(15_000, HEARTBEAT);
    s.bytes(10_000, &end("TOKEN_EXPIRED"));
    s.expect(Step::RefreshToken {
        unauthorized: false,
    });
    s.now += 300;
    s.lp.on_token_refreshed(s.now).unwrap();
    s.note("token refreshed");
    let t = s.now;
    s.open();
    assert_eq!(s.now, t);

    // A silent stall: the watchdog closes the connection after 45 s.
    s.bytes(15_000, HEARTBEAT);
    let last_bytes = s.now;
    s.bytes(0, b":hea"); // a partial line still counts as bytes
    s.expect(Step::Connect);
    assert!(
        s.now >= last_bytes + 45_000 && s.now <= last_bytes + 46_000,
        "{}",
        s.now - last_bytes
    );

    // The network is down: drops with growing backoff.
    let mut attempts = Vec::new();
    for _ in 0..4 {
        s.lp.on_connect_failed(s.now).unwrap();
        s.note("connect failed");
        attempts.push(s.lp.backoff_attempt());
        s.expect(Step::Connect);
    }
    assert_eq!(attempts, [2, 3, 4, 5]);

    // Back: a healthy stream resets the backoff; the next drop waits ≤ 1 s.
    s.respond(200, b"");
    assert_eq!(s.lp.backoff_attempt(), 5, "opening alone is not healthy");
    s.bytes(15_000, HEARTBEAT);
    assert_eq!(s.lp.backoff_attempt(), 0);
    s.bytes(2_000, b"event:chat\ndata:{\"user\":{\"id\":\"u2\",\"nick"); // cut mid-frame
    s.lp.on_closed(s.now);
    s.note("connection dropped");
    let wait = s.next_wait();
    assert!(wait <= 1_000, "{wait}");
    s.expect(Step::Connect);
    s.respond(200, b"");
    // The half frame of the dropped connection does not leak into this one.
    s.bytes(100, b"name\":\"x\"}}\n\n");
    s.bytes(100, CHAT);

    // The DJ makes the bot a manager: reconnect now, no backoff.
    s.lp.request_reconnect(s.now);
    s.note("caller asks for a reconnect");
    let t = s.now;
    s.open();
    assert_eq!(s.now, t);

    // The broadcast ends; the bot waits for the next one.
    s.bytes(15_000, HEARTBEAT);
    s.bytes(1_000, &end("LIVE_ENDED"));
    s.bytes(0, CHAT); // nothing follows an end frame
    for _ in 0..2 {
        s.expect(Step::Connect);
        s.respond(404, &sse_error(404, Some("OAPI_MNGR_0301")));
    }
    s.open();
    s.bytes(15_000, HEARTBEAT);

    // The DJ revokes the bot: exactly one refresh, then reauthorize.
    s.lp.on_closed(s.now + 5_000);
    s.now += 5_000;
    s.note("connection dropped");
    s.expect(Step::Connect);
    s.respond(401, &sse_error(401, Some("OAPI_MNGR_0203")));
    s.expect(Step::RefreshToken { unauthorized: true });
    s.lp.on_token_refreshed(s.now).unwrap();
    s.note("token refreshed");
    s.expect(Step::Connect);
    s.respond(401, &sse_error(401, None));
    // The bot's one-refresh rule stops here (TokenManager::on_unauthorized).
    s.expect(Step::RefreshToken { unauthorized: true });
    let refreshes_after_401 = s
        .log
        .iter()
        .skip_while(|l| !l.contains("HTTP 401"))
        .filter(|l| l.ends_with("refresh token (401)"))
        .count();
    assert_eq!(refreshes_after_401, 2);
    assert_eq!(
        s.lp.last_problem().map(|p| p.kind),
        Some(ProblemKind::Unauthorized)
    );
    insta::assert_json_snapshot!(s.log);
}

// ---- other rules ----

#[test]
fn reconnect_is_followed_at_once_every_time() {
    let mut s = Script::new(11);
    s.open();
    for _ in 0..8 {
        // A healthy connection (a heartbeat first) ending with RECONNECT,
        // even right after opening: connect again at once, every time.
        s.bytes(100, HEARTBEAT);
        s.bytes(0, &end("RECONNECT"));
        let t = s.now;
        s.expect(Step::Connect);
        assert_eq!(s.now, t, "{:#?}", s.log);
        s.respond(200, b"");
    }
}

#[test]
fn only_a_storm_of_instant_reconnects_is_braked_and_said() {
    let mut s = Script::new(11);
    s.open();
    // One connection ending at once with no frame: followed at once.
    s.bytes(10, &end("RECONNECT"));
    let t = s.now;
    s.expect(Step::Connect);
    assert_eq!(s.now, t);
    s.respond(200, b"");
    // It happens again: braked, with a notice saying so.
    s.bytes(10, &end("RECONNECT"));
    assert_eq!(s.lp.poll(s.now), Step::Close);
    let Step::Notice(StreamNotice::ReconnectStormBraked { until_ms }) = s.lp.poll(s.now) else {
        panic!("a notice first");
    };
    assert!(until_ms >= s.now + 500, "backed off");
    s.expect(Step::Connect);
    assert_eq!(s.now, until_ms);
    s.respond(200, b"");
    // A connection that lived past the window is followed at once again.
    s.bytes(1_500, &end("RECONNECT"));
    let t = s.now;
    s.expect(Step::Connect);
    assert_eq!(s.now, t);
}

#[test]
fn connect_timeout_and_retry_after() {
    let mut s = Script::new(12);
    s.expect(Step::Connect);
    assert_eq!(s.lp.deadline(), Some(s.now + 30_000));
    assert_eq!(
        s.lp.poll(s.now + 29_999),
        Step::Wait {
            until_ms: Some(s.now + 30_000)
        }
    );
    assert_eq!(s.lp.poll(s.now + 30_000), Step::Close);
    assert_eq!(s.lp.phase(), Phase::Waiting);
    s.now += 30_000;
    s.expect(Step::Connect);
    s.lp.on_response(429, [("Retry-After", "20")], b"", s.now)
        .unwrap();
    assert_eq!(s.lp.deadline(), Some(s.now + 20_000));
}

#[test]
fn refresh_failures() {
    let invalid_grant = classify(
        Endpoint::Token,
        400,
        NO_HEADERS,
        br#"{"error":"invalid_grant","error_description":"x"}"#,
    );
    let server = classify(Endpoint::Token, 503, NO_HEADERS, b"");
    let invalid_client = classify(Endpoint::Token, 401, NO_HEADERS, b"");

    let mut s = Script::new(13);
    s.open();
    s.bytes(1_000, &end("TOKEN_EXPIRED"));
    s.expect(Step::RefreshToken {
        unauthorized: false,
    });
    assert_eq!(s.lp.poll(s.now), Step::Wait { until_ms: None });
    s.lp.on_refresh_failed(None, s.now).unwrap();
    s.expect(Step::RefreshToken {
        unauthorized: false,
    });
    s.lp.on_refresh_failed(Some(&server), s.now).unwrap();
    s.expect(Step::RefreshToken {
        unauthorized: false,
    });
    s.lp.on_refresh_failed(Some(&invalid_grant), s.now).unwrap();
    s.expect(Step::Stopped(Stop::Reauthorize(
        AuthProblem::RefreshRejected,
    )));

    s.lp.restart(s.now);
    s.open();
    s.bytes(1_000, &end("TOKEN_EXPIRED"));
    s.expect(Step::RefreshToken {
        unauthorized: false,
    });
    s.lp.on_refresh_failed(Some(&invalid_client), s.now)
        .unwrap();
    s.expect(Step::Stopped(Stop::InvalidClient));
}

#[test]
fn misuse_is_a_local_error_and_late_reports_are_harmless() {
    let mut lp = ConnectLoop::new(StreamConfig::default(), 0);
    assert_eq!(lp.on_bytes(HEARTBEAT, T0).count(), 0, "no stream open");
    assert_eq!(
        lp.on_response(200, NO_HEADERS, b"", T0),
        Err(Misuse::NotConnecting)
    );
    assert_eq!(lp.phase(), Phase::Waiting, "nobody asked to connect");
    assert_eq!(lp.on_token_refreshed(T0), Err(Misuse::NotRefreshing));
    assert_eq!(lp.on_refresh_failed(None, T0), Err(Misuse::NotRefreshing));
    assert_eq!(lp.on_connect_failed(T0), Err(Misuse::NotConnecting));
    lp.on_closed(T0); // a late close: harmless
    lp.request_reconnect(T0);
    assert_eq!(lp.poll(T0), Step::Connect);
    let mut s = Script::new(15);
    s.open();
    s.bytes(1_000, &end("MAINTENANCE"));
    s.expect(Step::Connect);
    assert_eq!(s.lp.backoff_attempt(), 1);
}

#[derive(Debug, Clone)]
enum Op {
    Poll(u64),
    Response(u16, Option<&'static str>),
    Bytes(Vec<u8>),
    Closed,
    ConnectFailed,
    Refreshed,
    RefreshFailed,
    Reconnect,
    Restart,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0u64..100_000).prop_map(Op::Poll),
        (
            prop_oneof![
                Just(200u16),
                Just(401),
                Just(403),
                Just(404),
                Just(429),
                Just(502),
                any::<u16>()
            ],
            prop_oneof![
                Just(None),
                Just(Some("OAPI_MNGR_0209")),
                Just(Some("OAPI_MNGR_0301"))
            ],
        )
            .prop_map(|(s, c)| Op::Response(s, c)),
        prop_oneof![
            Just(HEARTBEAT.to_vec()),
            Just(end("RECONNECT")),
            Just(end("LIVE_ENDED")),
            Just(end("TOKEN_EXPIRED")),
            proptest::collection::vec(any::<u8>(), 0..64),
        ]
        .prop_map(Op::Bytes),
        Just(Op::Closed),
        Just(Op::ConnectFailed),
        Just(Op::Refreshed),
        Just(Op::RefreshFailed),
        Just(Op::Reconnect),
        Just(Op::Restart),
    ]
}

proptest! {
    #[test]
    fn any_sequence_never_panics_nor_busy_loops(seed in any::<u64>(), ops in proptest::collection::vec(op(), 0..60)) {
        let mut lp = ConnectLoop::new(StreamConfig::default(), seed);
        let mut now = T0;
        for op in ops {
            match op {
                Op::Poll(dt) => {
                    now += dt;
                    // Drain: after at most a few actions the loop waits.
                    for _ in 0..4 {
                        match lp.poll(now) {
                            Step::Wait { until_ms: Some(t) } => { prop_assert!(t > now); break; }
                            Step::Wait { until_ms: None } | Step::Stopped(_) => break,
                            Step::Connect | Step::RefreshToken { .. } | Step::Close | Step::Notice(_) => {}
                        }
                    }
                }
                Op::Response(status, code) => { let _ = lp.on_response(status, NO_HEADERS, &sse_error(status, code), now); }
                Op::Bytes(b) => { let _ = lp.on_bytes(&b, now).count(); }
                Op::Closed => lp.on_closed(now),
                Op::ConnectFailed => { let _ = lp.on_connect_failed(now); }
                Op::Refreshed => { let _ = lp.on_token_refreshed(now); }
                Op::RefreshFailed => { let _ = lp.on_refresh_failed(None, now); }
                Op::Reconnect => lp.request_reconnect(now),
                Op::Restart => lp.restart(now),
            }
        }
    }
}

#[test]
fn a_stream_only_driver_hands_its_stop_decision_back() {
    // The second 401 in a row: the driver's one-refresh rule says a person
    // must authorize again; the loop stops with that reason (not the
    // RefreshRejected a failed refresh would give).
    let mut s = Script::new(6);
    s.expect(Step::Connect);
    s.respond(401, &sse_error(401, None));
    s.expect(Step::RefreshToken { unauthorized: true });
    s.lp.halt(Stop::Reauthorize(AuthProblem::AccessRejected));
    assert_eq!(
        s.lp.poll(s.now),
        Step::Stopped(Stop::Reauthorize(AuthProblem::AccessRejected))
    );
    assert_eq!(s.lp.deadline(), None);
    // Halted while open: the stream is closed first.
    let mut s = Script::new(7);
    s.expect(Step::Connect);
    s.respond(200, b"");
    s.lp.halt(Stop::ShutDown);
    assert_eq!(s.lp.poll(s.now), Step::Close);
    assert_eq!(s.lp.poll(s.now), Step::Stopped(Stop::ShutDown));
    // A new pair lifts it like any stop.
    s.lp.await_new_tokens();
    s.lp.on_token_refreshed(s.now).unwrap();
    s.expect(Step::Connect);
}

// ---- the off-air wait set at run time ----

/// A loop that has just been told the DJ is not on air (a 404 at `s.now`).
fn off_air(seed: u64) -> Script {
    let mut s = Script::new(seed);
    s.expect(Step::Connect);
    s.respond(404, &sse_error(404, Some("OAPI_MNGR_0301")));
    s
}

#[test]
fn the_off_air_wait_is_drawn_in_wait_to_twice_wait() {
    let mut s = off_air(11);
    assert_eq!(s.lp.set_not_on_air_wait(s.now, 20_000), 20_000);
    assert_eq!(s.lp.not_on_air_wait(), (20_000, 40_000));
    let mut waits = Vec::new();
    for _ in 0..200 {
        s.expect(Step::Connect);
        let before = s.now;
        s.respond(404, &sse_error(404, Some("OAPI_MNGR_0301")));
        s.expect(Step::Connect);
        waits.push(s.now - before);
        s.lp.on_connect_failed(s.now).unwrap();
        s.lp.restart(s.now);
    }
    assert!(
        waits.iter().all(|w| (20_000..=40_000).contains(w)),
        "{waits:?}"
    );
    // Jittered over the whole range, not a fixed period.
    let (lo, hi) = (waits.iter().min(), waits.iter().max());
    assert!(lo.is_some_and(|w| *w < 24_000) && hi.is_some_and(|w| *w > 36_000));
    // A LIVE_ENDED waits the same.
    s.lp = ConnectLoop::new(StreamConfig::default(), 12);
    s.lp.set_not_on_air_wait(s.now, 20_000);
    s.open();
    s.bytes(1_000, &end("LIVE_ENDED"));
    let ended = s.now;
    s.expect(Step::Connect);
    assert!(
        (20_000..=40_000).contains(&(s.now - ended)),
        "{}",
        s.now - ended
    );
}

#[test]
fn the_floor_is_kept_whatever_is_asked() {
    for asked in [0, 1, 999, 2_999, 3_000] {
        let mut s = off_air(13);
        assert_eq!(s.lp.set_not_on_air_wait(s.now, asked), NOT_ON_AIR_FLOOR_MS);
        assert_eq!(s.lp.not_on_air_wait(), (3_000, 6_000));
        for _ in 0..20 {
            let before = s.now;
            s.expect(Step::Connect);
            assert!(s.now - before >= NOT_ON_AIR_FLOOR_MS, "asked {asked}");
            s.respond(404, &sse_error(404, Some("OAPI_MNGR_0301")));
        }
    }
}

#[test]
fn a_shorter_wait_cuts_the_wait_under_way_and_a_longer_one_waits_its_turn() {
    let mut s = off_air(14);
    s.lp.set_not_on_air_wait(s.now, 300_000);
    s.expect(Step::Connect);
    s.respond(404, &sse_error(404, Some("OAPI_MNGR_0301")));
    let planned = s.lp.next_connect_at_ms().unwrap();
    assert!(planned - s.now >= 300_000);
    // 10 s later the DJ's usual hour comes: probed within 5–10 s from then.
    let now = s.now + 10_000;
    s.lp.set_not_on_air_wait(now, 5_000);
    let at = s.lp.next_connect_at_ms().unwrap();
    assert!((now + 5_000..=now + 10_000).contains(&at), "{}", at - now);
    // The same wait again moves nothing (no redraw toward the early side).
    s.lp.set_not_on_air_wait(now + 1_000, 5_000);
    assert_eq!(s.lp.next_connect_at_ms(), Some(at));
    // A longer wait leaves the planned connect alone…
    s.lp.set_not_on_air_wait(now + 2_000, 600_000);
    assert_eq!(s.lp.next_connect_at_ms(), Some(at));
    s.now = now + 2_000;
    s.expect(Step::Connect);
    assert_eq!(s.now, at);
    // …and applies from the next probe.
    s.respond(404, &sse_error(404, Some("OAPI_MNGR_0301")));
    let next = s.lp.next_connect_at_ms().unwrap();
    assert!((at + 600_000..=at + 1_200_000).contains(&next));
}

#[test]
fn a_backoff_or_a_refresh_is_not_moved_by_the_off_air_wait() {
    let mut s = Script::new(15);
    s.lp.set_not_on_air_wait(s.now, 600_000);
    s.expect(Step::Connect);
    s.respond(503, b"");
    let planned = s.lp.next_connect_at_ms().unwrap();
    s.lp.set_not_on_air_wait(s.now, 3_000);
    assert_eq!(s.lp.next_connect_at_ms(), Some(planned), "a backoff stands");
    assert!(
        planned - s.now <= 1_000,
        "the backoff's own 1 s, not the wait"
    );
}
