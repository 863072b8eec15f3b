//! The driver's spans, caught by a layer of this test's own: a connection
//! is a `stream` (a root) with its `connect`; each event read is a
//! `process` under it, ended when the author asks for the next one; a chat
//! message is a `send` under it; the code exchange a `call`. Each names the
//! bot by `with_span_label`, and none carries the chatter's name or id.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use onair::Bot;
use onair_emulator::Emulator;
use onair_tokio::{BotEvent, Driver};
use serde_json::json;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

mod common;

use common::{consent_code, on_air, post};

/// A span as it closed: its name, its parent's name, its fields.
#[derive(Debug, Clone)]
struct Closed {
    name: &'static str,
    parent: Option<&'static str>,
    fields: HashMap<String, String>,
}

#[derive(Default)]
struct Fields(HashMap<String, String>);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

#[derive(Clone, Default)]
struct Catch(Arc<Mutex<Vec<Closed>>>);

impl<S: tracing::Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Catch {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut fields = Fields::default();
        attrs.record(&mut fields);
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(fields);
        }
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(id) {
            if let Some(fields) = span.extensions_mut().get_mut::<Fields>() {
                values.record(fields);
            }
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(&id) {
            let fields = span
                .extensions_mut()
                .remove::<Fields>()
                .unwrap_or_default()
                .0;
            let closed = Closed {
                name: span.name(),
                parent: span.parent().map(|p| p.name()),
                fields,
            };
            self.0.lock().expect("spans").push(closed);
        }
    }
}

#[tokio::test]
async fn a_connection_its_events_and_its_messages_are_spans_naming_the_bot_alone() {
    let catch = Catch::default();
    let _default =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(catch.clone()));
    let emu = Emulator::builder().start().await.expect("emulator");
    let control = emu.control_url();
    let app = emu.app();
    let config = on_air(&emu).await;
    let code = consent_code(&emu).await;
    let mut driver = Driver::new(Bot::new(config, None, 1)).with_span_label("bot-7");
    let mut code = Some(code);
    let mut emitted = false;
    let run = async {
        loop {
            match driver.next().await.expect("the driver runs") {
                BotEvent::NeedsAuthorization => {
                    let code = code.take().expect("one code");
                    driver.bot_mut().authorize(&code, &app.redirect_uri);
                }
                BotEvent::Event {
                    event: onair::Event::Chat(_),
                    ..
                } => {
                    driver.bot_mut().send_chat("hello").expect("a message");
                }
                BotEvent::Done { .. } => return,
                _ => {}
            }
            let connected = driver.bot().status(driver.now_ms()).counters.connects > 0;
            if connected && !emitted {
                let chat = json!({"event": "chat",
                    "data": {"user": {"id": "u-5521", "nickname": "Quillon"}, "message": "hi"}});
                post(&format!("{control}/emit"), chat).await;
                emitted = true;
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(10), run)
        .await
        .expect("the message is sent");
    tokio::time::timeout(Duration::from_secs(5), driver.close(false))
        .await
        .expect("closed in time")
        .expect("closed");
    emu.shutdown().await;

    let spans = catch.0.lock().expect("spans").clone();
    let find = |name: &str, what: &str, value: &str| {
        spans
            .iter()
            .find(|s| s.name == name && s.fields.get(what).map(String::as_str) == Some(value))
            .unwrap_or_else(|| panic!("no {name} with {what} = {value} in {spans:#?}"))
            .clone()
    };
    let stream = find("stream", "http.response.status_code", "200");
    assert_eq!(stream.parent, None, "a connection is a trace's root");
    assert_eq!(stream.fields["messaging.operation.name"], "receive");
    assert_eq!(stream.fields["messaging.system"], "onair");
    let connect = find("connect", "http.response.status_code", "200");
    assert_eq!(connect.parent, Some("stream"));
    assert_eq!(connect.fields["url.template"], "/v1/live/events");
    let process = find("process", "onair.event.kind", "chat");
    assert_eq!(process.parent, Some("stream"));
    assert_eq!(process.fields["messaging.operation.name"], "process");
    let send = find("call", "otel.name", "send");
    assert_eq!(send.parent, Some("stream"), "sent while the stream is open");
    assert_eq!(send.fields["url.template"], "/v1/live/chat");
    assert_eq!(send.fields["http.request.method"], "POST");
    assert_eq!(send.fields["messaging.operation.name"], "send");
    assert!(send.fields["http.response.status_code"].starts_with('2'));
    let exchange = find("call", "onair.endpoint", "token");
    assert_eq!(
        exchange.fields["otel.name"], "call",
        "a code exchange, not a refresh"
    );
    for span in &spans {
        assert_eq!(
            span.fields.get("onair.bot").map(String::as_str),
            Some("bot-7"),
            "{span:?}"
        );
        let shown = format!("{:?}", span.fields);
        assert!(
            !shown.contains("Quillon") && !shown.contains("u-5521"),
            "{shown}"
        );
    }
}
