//! Test harness: start an emulator (frozen clock), a client, helpers.
#![allow(dead_code)]

use std::time::Duration;

use base64::Engine;
use onair_emulator::{Emulator, Running};
use reqwest::{Client, Response};
use serde_json::{json, Value};

pub const ALL: &str = "live.read listeners.read fans.read events.chat events.presence events.like events.donation chat.send";

pub struct Env {
    pub emu: Running,
    pub http: Client,
    pub base: String,
    pub client_id: String,
    pub secret: String,
    pub redirect: String,
}

pub fn urlencode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

pub fn form(fields: &[(&str, &str)]) -> String {
    fields
        .iter()
        .map(|(k, v)| format!("{}={}", urlencode(k), urlencode(v)))
        .collect::<Vec<_>>()
        .join("&")
}

impl Env {
    pub async fn start() -> Env {
        Self::with(Emulator::builder()).await
    }

    pub async fn with(b: onair_emulator::Builder) -> Env {
        let emu = b
            .speed(0.0)
            .seed(42)
            .start_ms(1_763_880_000_000)
            .start()
            .await
            .unwrap();
        Self::of(emu)
    }

    /// The environment of an emulator already started.
    pub fn of(emu: Running) -> Env {
        let app = emu.app();
        Env {
            base: emu.base_url(),
            http: Client::builder()
                .timeout(Duration::from_secs(10))
                .build()
                .unwrap(),
            client_id: app.client_id,
            secret: app.client_secret,
            redirect: app.redirect_uri,
            emu,
        }
    }

    pub async fn ctl(&self, path: &str, body: Value) -> Value {
        let r = self
            .http
            .post(format!("{}/_emulator{path}", self.base))
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        let v: Value = r.json().await.unwrap();
        assert_eq!(status, 200, "{path} answered {status}: {v}");
        v
    }

    /// A control call's status only (for the error cases).
    pub async fn ctl_status(&self, path: &str, body: Value) -> u16 {
        self.http
            .post(format!("{}/_emulator{path}", self.base))
            .json(&body)
            .send()
            .await
            .unwrap()
            .status()
            .as_u16()
    }

    pub async fn ctl_get(&self, path: &str) -> Value {
        let r = self
            .http
            .get(format!("{}/_emulator{path}", self.base))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 200);
        r.json().await.unwrap()
    }

    pub async fn advance(&self, ms: i64) {
        self.ctl("/clock/advance", json!({"ms": ms})).await;
    }

    pub async fn live_start(&self) -> u64 {
        self.ctl("/live/start", json!({"title": "test"})).await["liveId"]
            .as_u64()
            .unwrap()
    }

    pub async fn code(&self, scope: &str) -> String {
        self.ctl(
            "/consent",
            json!({"scope": scope, "redirectUri": self.redirect}),
        )
        .await["code"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    pub fn basic(&self) -> String {
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD
                .encode(format!("{}:{}", self.client_id, self.secret))
        )
    }

    /// POST a form to a token endpoint with Basic auth of the default app.
    pub async fn oauth(&self, path: &str, fields: &[(&str, &str)]) -> Response {
        self.http
            .post(format!("{}{path}", self.base))
            .header("authorization", self.basic())
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form(fields))
            .send()
            .await
            .unwrap()
    }

    pub async fn exchange(&self, code: &str) -> Response {
        self.oauth(
            "/v1/oauth/token",
            &[
                ("grant_type", "authorization_code"),
                ("code", code),
                ("redirect_uri", &self.redirect),
            ],
        )
        .await
    }

    /// Consent + exchange: (access, refresh).
    pub async fn tokens(&self, scope: &str) -> (String, String) {
        let code = self.code(scope).await;
        let r = self.exchange(&code).await;
        assert_eq!(r.status().as_u16(), 200);
        let v: Value = r.json().await.unwrap();
        (
            v["access_token"].as_str().unwrap().to_owned(),
            v["refresh_token"].as_str().unwrap().to_owned(),
        )
    }

    /// Spends `refresh` for a new pair: (access, refresh).
    pub async fn refreshed(&self, refresh: &str) -> (String, String) {
        let v: Value = self
            .oauth(
                "/v1/oauth/token",
                &[("grant_type", "refresh_token"), ("refresh_token", refresh)],
            )
            .await
            .json()
            .await
            .unwrap();
        (
            v["access_token"].as_str().unwrap().to_owned(),
            v["refresh_token"].as_str().unwrap().to_owned(),
        )
    }

    pub async fn get(&self, path: &str, token: &str) -> Response {
        self.http
            .get(format!("{}{path}", self.base))
            .bearer_auth(token)
            .send()
            .await
            .unwrap()
    }

    pub async fn chat(&self, token: &str, message: &str) -> Response {
        self.http
            .post(format!("{}/v1/live/chat", self.base))
            .bearer_auth(token)
            .json(&json!({"message": message}))
            .send()
            .await
            .unwrap()
    }

    pub async fn open(&self, token: &str) -> Response {
        self.http
            .get(format!("{}/v1/live/events", self.base))
            .bearer_auth(token)
            .header("accept", "text/event-stream")
            .send()
            .await
            .unwrap()
    }

    pub async fn stream(&self, token: &str) -> Sse {
        let r = self.open(token).await;
        assert_eq!(r.status().as_u16(), 200);
        Sse {
            resp: r,
            buf: Vec::new(),
        }
    }

    pub async fn emit(&self, event: &str, data: Value) -> Value {
        self.ctl("/emit", json!({"event": event, "data": data}))
            .await
    }

    pub async fn ledger(&self) -> Value {
        self.ctl_get("/ledger").await
    }

    /// Polls the first connection of the ledger's last bot until it is closed (≤ 3 s).
    pub async fn closed_connection(&self) -> Value {
        for _ in 0..150 {
            let b = self.bot_ledger().await;
            if b["connections"][0]["closedAtMs"].is_i64() {
                return b;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("the connection was never closed in the ledger");
    }

    /// The first bot of the last broadcast in the ledger.
    pub async fn bot_ledger(&self) -> Value {
        let l = self.ledger().await;
        let b = l["broadcasts"].as_array().unwrap().last().unwrap().clone();
        b["bots"][0].clone()
    }
}

pub async fn problem(r: Response) -> (u16, Value) {
    let status = r.status().as_u16();
    (status, r.json().await.unwrap())
}

/// Reads a stream frame by frame.
pub struct Sse {
    pub resp: Response,
    pub buf: Vec<u8>,
}

#[derive(Debug, PartialEq, Eq)]
pub enum Next {
    Frame(String),
    /// The body ended cleanly.
    Closed,
    /// The connection broke (no clean end).
    Broken,
}

impl Sse {
    /// The next frame (text up to and including the blank line), or how it ended.
    pub async fn next(&mut self) -> Next {
        loop {
            if let Some(i) = self.buf.windows(2).position(|w| w == b"\n\n") {
                let frame: Vec<u8> = self.buf.drain(..i + 2).collect();
                return Next::Frame(String::from_utf8(frame).unwrap());
            }
            match tokio::time::timeout(Duration::from_secs(5), self.resp.chunk()).await {
                Ok(Ok(Some(c))) => self.buf.extend_from_slice(&c),
                Ok(Ok(None)) => return Next::Closed,
                Ok(Err(_)) => return Next::Broken,
                Err(_) => panic!(
                    "no frame within 5 s; buffered {:?}",
                    String::from_utf8_lossy(&self.buf)
                ),
            }
        }
    }

    /// The next frame that is not a heartbeat.
    pub async fn event(&mut self) -> String {
        loop {
            match self.next().await {
                Next::Frame(f) if f.starts_with(":heartbeat") => continue,
                Next::Frame(f) => return f,
                other => panic!("stream ended: {other:?}"),
            }
        }
    }

    /// Whether nothing arrives within `ms` of real time.
    pub async fn quiet(&mut self, ms: u64) -> bool {
        if !self.buf.is_empty() {
            return false;
        }
        tokio::time::timeout(Duration::from_millis(ms), self.resp.chunk())
            .await
            .is_err()
    }
}

pub fn data_of(frame: &str) -> Value {
    let line = frame.lines().find(|l| l.starts_with("data:")).unwrap();
    serde_json::from_str(&line["data:".len()..]).unwrap()
}

pub fn name_of(frame: &str) -> &str {
    frame
        .lines()
        .find_map(|l| l.strip_prefix("event:"))
        .unwrap()
}
