//! One bot's night as a trace: the host in-process against the emulator,
//! its spans exported over OTLP/HTTP (protobuf) to a receiver this test
//! starts on 127.0.0.1. The bot connects (off air: 404s), goes on air,
//! reads a listener's chat, greets them (a `send`), refreshes its token an
//! hour on, reads the broadcast's end; the host stops and the exporter
//! flushes. Every span named in the host's README arrives with its
//! attributes, each names bot 1, and none carries a token, the app's
//! secret, or the listener's nickname or id. And `onair host` as a process
//! (this test binary again) with only `OTEL_EXPORTER_OTLP_ENDPOINT` set
//! sends its spans, the last ones at SIGTERM.

mod common;

use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, ExitCode, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::routing::post;
use common::{browser, consent, control, until, Setup, ADMIN, KEY};
use onair_host::traces::Traces;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use serde_json::json;
use tracing_subscriber::layer::SubscriberExt;

const WAIT: Duration = Duration::from_secs(20);
const CONFIG_VAR: &str = "ONAIR_TRACES_TEST_HOST_CONFIG";

/// The host process of the process test: `onair_host::main` on the file it
/// names (it runs this binary again with `--ignored --exact`).
#[test]
#[ignore = "the host process the other test starts"]
fn host_process() {
    let Ok(config) = std::env::var(CONFIG_VAR) else {
        return;
    };
    let code = onair_host::main(Path::new(&config));
    std::process::exit(if code == ExitCode::SUCCESS { 0 } else { 1 });
}

/// The spans the receiver got.
type Received = Arc<Mutex<Vec<Span>>>;

/// An OTLP/HTTP receiver on 127.0.0.1 (POST /v1/traces, protobuf): its
/// base address and what it received.
async fn receiver() -> (String, Received) {
    let received = Received::default();
    let spans = Arc::clone(&received);
    let app = axum::Router::new().route(
        "/v1/traces",
        post(move |body: Bytes| {
            let spans = Arc::clone(&spans);
            async move {
                let request = ExportTraceServiceRequest::decode(body).expect("an OTLP request");
                let mut got = spans.lock().expect("spans");
                for resource in request.resource_spans {
                    for scope in resource.scope_spans {
                        got.extend(scope.spans);
                    }
                }
                ([("content-type", "application/x-protobuf")], Vec::new())
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("listen");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (format!("http://{addr}"), received)
}

/// A span's attributes as text.
fn attributes(span: &Span) -> HashMap<String, String> {
    span.attributes
        .iter()
        .map(|kv| {
            let value = match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
                Some(AnyValue::StringValue(s)) => s.clone(),
                Some(AnyValue::IntValue(i)) => i.to_string(),
                Some(AnyValue::BoolValue(b)) => b.to_string(),
                Some(AnyValue::DoubleValue(d)) => d.to_string(),
                other => format!("{other:?}"),
            };
            (kv.key.clone(), value)
        })
        .collect()
}

fn named<'a>(spans: &'a [Span], name: &str) -> Vec<&'a Span> {
    spans.iter().filter(|s| s.name == name).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_bots_night_arrives_at_the_collector_as_spans_without_a_person_or_a_token() {
    let (endpoint, received) = receiver().await;
    let mut s = Setup::new("traces").await;
    s.text = s.text_with(&format!("[host.traces]\notlp_endpoint = \"{endpoint}\"\n"));
    let config = s.config(KEY);
    let traces = Traces::start(config.traces.as_ref().expect("traces configured"))
        .expect("the exporter starts");
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(traces.layer()))
        .expect("the only subscriber of this test");

    let host = s.host(KEY).await;
    let to = consent(&browser(), &host.at("/connect"), "ana").await.to;
    assert_eq!(to, "/bots/1");
    control(&s.emu, "/live/start", Some(json!({ "dj": "ana" }))).await;
    until("bot 1 on air", WAIT, || async {
        host.bot(1).await["onAir"] == true
    })
    .await;
    let chat = json!({"dj": "ana", "event": "chat",
        "data": {"user": {"id": "listener-7731", "nickname": "Zedonia"}, "message": "hi"}});
    assert_eq!(control(&s.emu, "/emit", Some(chat)).await["delivered"], 1);
    until("the welcome is sent", WAIT, || async {
        control(&s.emu, "/chat", None).await["messages"]
            .as_array()
            .is_some_and(|m| !m.is_empty())
    })
    .await;
    // An hour on: the access token is due, the bot refreshes it.
    control(&s.emu, "/clock/advance", Some(json!({"ms": 3_600_000}))).await;
    until("a refresh", WAIT, || async {
        common::grants(&s.requests().await, "refresh_token") >= 1
    })
    .await;
    control(&s.emu, "/live/end", Some(json!({ "dj": "ana" }))).await;
    until("the broadcast over", WAIT, || async {
        host.bot(1).await["onAir"] == false
    })
    .await;
    host.stop().await;
    traces.shutdown().await;

    // The pair the bot ended with, to look for.
    let store = onair_host::store::Store::open(
        &format!("sqlite://{}?mode=rwc", s.db_path().display()),
        onair_host::crypto::TokenCipher::from_base64(KEY).expect("key"),
    )
    .await
    .expect("store");
    let row = store.integration(1).await.expect("row").expect("bot 1");
    let pair: serde_json::Value =
        serde_json::from_str(&row.tokens.expect("a stored pair").to_json()).expect("pair JSON");
    store.close().await;

    let spans = received.lock().expect("spans").clone();
    let names: Vec<&str> = spans.iter().map(|s| s.name.as_str()).collect();
    for name in ["connect", "stream", "process", "send", "refresh"] {
        assert!(names.contains(&name), "no {name} span among {names:?}");
    }
    // Every span names bot 1.
    for span in &spans {
        assert_eq!(
            attributes(span).get("onair.bot").map(String::as_str),
            Some("1"),
            "{span:?}"
        );
    }
    // Connects: off air (404) before the broadcast, then the stream (200).
    let statuses: Vec<String> = named(&spans, "connect")
        .iter()
        .filter_map(|s| attributes(s).get("http.response.status_code").cloned())
        .collect();
    assert!(statuses.iter().any(|s| s == "404"), "{statuses:?}");
    assert!(statuses.iter().any(|s| s == "200"), "{statuses:?}");
    for span in named(&spans, "connect") {
        let a = attributes(span);
        assert_eq!(a["url.template"], "/v1/live/events");
        assert_eq!(a["http.request.method"], "GET");
    }
    // The stream that was on air: a receive, the parent of its events'
    // process spans, a chat and the end among them.
    let on_air: Vec<&Span> = named(&spans, "stream")
        .into_iter()
        .filter(|s| {
            attributes(s)
                .get("http.response.status_code")
                .map(String::as_str)
                == Some("200")
        })
        .collect();
    assert!(!on_air.is_empty(), "no stream on air");
    for span in &on_air {
        let a = attributes(span);
        assert_eq!(a["messaging.system"], "onair");
        assert_eq!(a["messaging.operation.name"], "receive");
        assert_eq!(a["messaging.destination.name"], "/v1/live/events");
        assert!(span.parent_span_id.is_empty(), "a stream is a trace's root");
    }
    let kinds: Vec<String> = named(&spans, "process")
        .iter()
        .map(|p| {
            let a = attributes(p);
            assert_eq!(a["messaging.operation.name"], "process");
            assert_eq!(a["messaging.system"], "onair");
            let parent = on_air
                .iter()
                .find(|s| s.span_id == p.parent_span_id)
                .expect("a process span's parent is its stream");
            assert_eq!(parent.trace_id, p.trace_id);
            a["onair.event.kind"].clone()
        })
        .collect();
    assert!(kinds.iter().any(|k| k == "chat"), "{kinds:?}");
    assert!(kinds.iter().any(|k| k == "end"), "{kinds:?}");
    // The welcome: a send to the chat, taken by the service.
    let sends = named(&spans, "send");
    assert!(
        sends.iter().any(|s| {
            let a = attributes(s);
            a["messaging.operation.name"] == "send"
                && a["url.template"] == "/v1/live/chat"
                && a["http.request.method"] == "POST"
                && a.get("http.response.status_code")
                    .is_some_and(|c| c.starts_with('2'))
        }),
        "{sends:?}"
    );
    // The refresh: the token endpoint, answered.
    assert!(named(&spans, "refresh").iter().any(|s| {
        let a = attributes(s);
        a["url.template"] == "/v1/oauth/token"
            && a.get("http.response.status_code").map(String::as_str) == Some("200")
    }));

    // No person, no secret anywhere in what left the process.
    let shown = format!("{spans:?}");
    for (what, secret) in [
        ("the listener's nickname", "Zedonia"),
        ("the listener's id", "listener-7731"),
        (
            "the access token",
            pair["access_token"].as_str().expect("access"),
        ),
        (
            "the refresh token",
            pair["refresh_token"].as_str().expect("refresh"),
        ),
        ("the client secret", s.secret.as_str()),
        ("a bearer header", "Bearer"),
    ] {
        assert!(!shown.contains(secret), "{what} in the spans");
    }
    s.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_host_process_sends_its_spans_to_the_standard_variables_collector_up_to_its_stop() {
    let (endpoint, received) = receiver().await;
    let s = Setup::new("traces-process").await;
    let config = s.dir.join("host.toml");
    std::fs::write(&config, &s.text).expect("config");
    let log = s.dir.join("host.log");
    let exe = std::env::current_exe().expect("this test binary");
    let mut child = Command::new(exe)
        .args(["host_process", "--exact", "--ignored", "--nocapture"])
        .env(CONFIG_VAR, &config)
        .env("ONAIR_HOST_CLIENT_SECRET", &s.secret)
        .env("ONAIR_HOST_KEY", KEY)
        .env("ONAIR_HOST_ADMIN_TOKEN", ADMIN)
        .env("ONAIR_HOST_LOG", "info,sqlx=warn")
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)
        .env_remove("ONAIR_HOST_DATABASE")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).expect("log file"))
        .spawn()
        .expect("the host process");
    let url = format!("http://127.0.0.1:{}", s.port);
    until("the host answers", WAIT, || async {
        reqwest::get(format!("{url}/readyz"))
            .await
            .is_ok_and(|r| r.status() == 200)
    })
    .await;
    // A DJ connects while off air: the bot looks for a broadcast (404s).
    let to = consent(&browser(), &format!("{url}/connect"), "ana")
        .await
        .to;
    assert_eq!(to, "/bots/1");
    until("a look for the broadcast", WAIT, || async {
        control(&s.emu, "/requests?path=/v1/live/events", None).await["requests"]
            .as_array()
            .is_some_and(|r| !r.is_empty())
    })
    .await;
    let _ = Command::new("kill")
        .arg("-TERM")
        .arg(child.id().to_string())
        .status();
    let deadline = Instant::now() + WAIT;
    let status = loop {
        if let Ok(Some(status)) = child.try_wait() {
            break status;
        }
        assert!(Instant::now() < deadline, "the host did not stop");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let said = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(status.success(), "{said}");
    // Sent before the process ended (the batch's 5 s had not passed).
    let spans = received.lock().expect("spans").clone();
    let connects: Vec<&Span> = named(&spans, "connect")
        .into_iter()
        .filter(|s| {
            let a = attributes(s);
            a.get("http.response.status_code").map(String::as_str) == Some("404")
                && a.get("onair.bot").map(String::as_str) == Some("1")
        })
        .collect();
    assert!(!connects.is_empty(), "{spans:?}\n{said}");
    s.finish().await;
}
