//! A whole bot driver without an async runtime: ureq, one thread per
//! request and per stream, one channel back to the loop. The bot greets
//! `!hello` and runs until the broadcast ends (`LIVE_ENDED`).
//!
//! ```sh
//! ONAIR_BASE_URL=http://127.0.0.1:8080 ONAIR_CLIENT_ID=… ONAIR_CLIENT_SECRET=… \
//! ONAIR_CODE=… ONAIR_REDIRECT_URI=… cargo run -p onair --features http --example blocking_ureq
//! ```
use std::io::Read;
use std::sync::mpsc::{channel, RecvTimeoutError, Sender};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use onair::event::{EndReason, Event};
use onair::{Action, BaseUrl, Bot, BotConfig, ClientCredentials, HttpRequest, RequestId};

/// What a request thread reports back to the loop.
enum Report {
    Response(RequestId, u16, http::HeaderMap, Vec<u8>),
    Failed(RequestId),
    Open(RequestId, u16, http::HeaderMap),
    Bytes(RequestId, Vec<u8>),
    Closed(RequestId),
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("set {name}"))
}

fn agent(body_timeout: Option<Duration>) -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false) // every status is the bot's to judge
        .timeout_connect(Some(Duration::from_secs(10)))
        .timeout_recv_body(body_timeout) // never on the stream: the bot's watchdog covers it
        .build()
        .into()
}

/// Sends one request on its own thread; the report comes back on `tx`.
fn send(
    agent: &ureq::Agent,
    id: RequestId,
    request: HttpRequest,
    stream: bool,
    tx: &Sender<Report>,
) {
    let (agent, tx) = (agent.clone(), tx.clone());
    std::thread::spawn(move || {
        let report = |r: Report| tx.send(r).is_ok(); // false: the loop went away
        let Ok(request) = request.into_http() else {
            return report(Report::Failed(id));
        };
        let Ok(response) = agent.run(request) else {
            return report(Report::Failed(id));
        };
        let (status, headers) = (response.status().as_u16(), response.headers().clone());
        let mut body = response.into_body();
        if !stream {
            return match body.read_to_vec() {
                Ok(bytes) => report(Report::Response(id, status, headers, bytes)),
                Err(_) => report(Report::Failed(id)),
            };
        }
        let mut open = report(Report::Open(id, status, headers));
        let (mut reader, mut chunk) = (body.into_reader(), vec![0u8; 16 * 1024]);
        while open {
            match reader.read(&mut chunk) {
                Ok(n @ 1..) => open = report(Report::Bytes(id, chunk[..n].to_vec())),
                _ => return report(Report::Closed(id)),
            }
        }
        false
    });
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let base = BaseUrl::new(&env("ONAIR_BASE_URL"))?;
    let creds = ClientCredentials::new(&env("ONAIR_CLIENT_ID"), env("ONAIR_CLIENT_SECRET"))?;
    let seed = std::collections::hash_map::RandomState::new(); // real randomness: no lockstep backoff
    let mut bot = Bot::new(
        BotConfig::new(base, creds),
        None,
        std::hash::BuildHasher::hash_one(&seed, 0),
    );
    let (calls, streams) = (agent(Some(Duration::from_secs(30))), agent(None));
    let (tx, rx) = channel();
    let (mut events, mut ended) = (0u64, false);
    loop {
        match bot.poll(now_ms()) {
            Action::NeedsAuthorization => {
                bot.authorize(&env("ONAIR_CODE"), &env("ONAIR_REDIRECT_URI"))
            }
            Action::Send { id, request, .. } => send(&calls, id, request, false, &tx),
            Action::OpenStream { id, request } => send(&streams, id, request, true, &tx),
            // Its thread ends at the next read; late reports are harmless.
            Action::CloseStream { .. } => {}
            Action::Event { event, .. } => {
                events += 1;
                match &event {
                    Event::Chat(chat) if chat.message.trim() == "!hello" => {
                        let name = chat.user.nickname.as_deref().unwrap_or("friend");
                        bot.send_chat(&format!("Hello, {name}!"))?;
                    }
                    Event::End(end) if end.reason == EndReason::LiveEnded => {
                        ended = true;
                        bot.shutdown(false);
                    }
                    _ => {}
                }
            }
            Action::PersistTokens(tokens) => println!("new tokens: {tokens}"), // save tokens.to_json()
            Action::Notice(notice) => println!("notice: {notice:?}"),
            Action::Wait { until_ms } => {
                let timeout = until_ms.map_or(Duration::from_secs(3600), |at| {
                    Duration::from_millis(at.saturating_sub(now_ms()))
                });
                let report = match rx.recv_timeout(timeout) {
                    Ok(report) => report,
                    Err(RecvTimeoutError::Timeout) => continue,
                    Err(RecvTimeoutError::Disconnected) => break,
                };
                let now = now_ms();
                match report {
                    Report::Response(id, status, headers, body) => {
                        bot.on_response(id, status, &headers, &body, now)?
                    }
                    Report::Failed(id) => bot.on_transport_error(id, now)?,
                    Report::Open(id, status, headers) => {
                        bot.on_stream_open(id, status, &headers, now)?
                    }
                    Report::Bytes(id, chunk) => bot.on_stream_bytes(id, &chunk, now)?,
                    Report::Closed(id) => bot.on_stream_closed(id, now)?,
                }
            }
            Action::Stopped(why) => {
                println!("stopped: {why} after {events} events");
                return if ended {
                    Ok(())
                } else {
                    Err(why.to_string().into())
                };
            }
            _ => {} // Done, Timer: this bot asks for neither
        }
    }
    Ok(())
}
