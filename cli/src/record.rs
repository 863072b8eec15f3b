//! `onair record`: a night on air as a cassette (`onair_emulator::cassette`).
//!
//! It runs the core's [`Bot`] as a bot would (the saved token pair, the
//! app's credentials), with a driver loop of its own that tees what it reads
//! into the cassette before handing it to the bot: the event stream's
//! opening answers, every chunk as received (line ends, BOM and chunking
//! kept) with its arrival time, every end, drop and error, and the answers
//! of the read calls it makes: `GET /v1/live` at the start and after each
//! connection, listeners and fans once per broadcast. It never chats. The
//! bot follows `RECONNECT`, refreshes on `TOKEN_EXPIRED` (each new pair
//! saved to the token file, as a bot would), and the recording stops after
//! `LIVE_ENDED` or on Ctrl-C / SIGTERM, with a one-line summary on stderr.
//!
//! Privacy ([`crate::privacy`]): by default ids, nicknames and (unless
//! `--keep-text`) message texts are replaced by stand-ins; a frame's
//! `data:` JSON is rewritten in place (its line ends, field order and `id:`
//! line kept) and its chunk marked `rewritten`. No request header, token,
//! code or secret is ever written.
//!
//! `onair record --to-scenario CASSETTE` prints the cassette as a scenario.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::time::{Duration, Instant};

use onair::event::{EndReason, Event};
use onair::{Action, BaseUrl, Bot, BotConfig, ClientCredentials, Endpoint, HttpRequest, RequestId};
use onair_emulator::cassette::{encode, Cassette, CloseHow, Entry, Header};
use onair_tokio::{Clock, FileStore, SystemClock, TokenStore};
use tokio::sync::mpsc;
use tokio::task::AbortHandle;

use crate::privacy::Pseudonyms;
use crate::UsageError;

/// `onair record`'s options (no `Debug`: they hold a secret).
#[derive(clap::Args)]
#[command(after_help = "\
Records as the bot of the token file (saved by `onair auth exchange` or a bot):
the event stream byte for byte and the read calls' answers, never chat. Stops
after LIVE_ENDED or on Ctrl-C / SIGTERM (the cassette stays valid). Ids,
nicknames and message texts are pseudonymised unless --keep-text keeps the
texts; no token or secret is written. Replay: onair serve --replay FILE.

exit codes: 0 recorded (a one-line summary on stderr); 1 the bot stopped for
good (consent withdrawn, app refused) or the cassette could not be written;
2 usage error; 3 no saved tokens or an unreadable token file.")]
pub struct Args {
    /// The cassette to write (JSON Lines; required unless --to-scenario)
    #[arg(long, value_name = "FILE", allow_hyphen_values = true)]
    out: Option<String>,
    /// Print CASSETTE as a scenario file (JSON) on stdout instead of recording
    #[arg(
        long,
        value_name = "CASSETTE",
        allow_hyphen_values = true,
        conflicts_with = "out"
    )]
    to_scenario: Option<String>,
    /// Keep message texts as they were (ids and nicknames are replaced all the same)
    #[arg(long)]
    keep_text: bool,
    #[command(flatten)]
    settings: crate::auth::Settings,
}

/// What a spawned request reports to the loop.
enum Report {
    Response {
        id: RequestId,
        status: u16,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
    },
    Failed {
        id: RequestId,
        not_sent: bool,
    },
    Open {
        id: RequestId,
        status: u16,
        headers: Vec<(String, String)>,
    },
    Chunk {
        id: RequestId,
        chunk: Vec<u8>,
    },
    Closed {
        id: RequestId,
        how: CloseHow,
    },
}

/// Runs `onair record` (or `--to-scenario`); a failure is one line and exit 1
/// (exit 2 for a usage error).
pub fn run(args: Args) -> Result<std::process::ExitCode, UsageError> {
    if let Some(path) = &args.to_scenario {
        let text = std::fs::read_to_string(path)
            .map_err(|e| UsageError(format!("--to-scenario {path:?}: {e}")))?;
        let cassette = Cassette::parse(&text).map_err(|e| UsageError(format!("{path}: {e}")))?;
        let name = std::path::Path::new(path).file_stem().map_or_else(
            || "cassette".to_owned(),
            |s| s.to_string_lossy().into_owned(),
        );
        let scenario = cassette.to_scenario(&name);
        println!(
            "{}",
            serde_json::to_string_pretty(&scenario).unwrap_or_default()
        );
        return Ok(std::process::ExitCode::SUCCESS);
    }
    let Some(out_path) = args.out.clone() else {
        return Err(UsageError(
            "record needs --out FILE (or --to-scenario CASSETTE)".to_owned(),
        ));
    };
    let need = |v: &Option<String>, flag: &str| {
        v.clone()
            .ok_or_else(|| UsageError(format!("record needs {flag} (or its ONAIR_ variable)")))
    };
    let base = need(&args.settings.base_url, "--base-url")?;
    let base = BaseUrl::new(&base).map_err(|e| UsageError(format!("--base-url: {e}")))?;
    let creds = ClientCredentials::new(
        &need(&args.settings.client_id, "--client-id")?,
        &need(&args.settings.client_secret, "--client-secret")?,
    )
    .map_err(|e| UsageError(format!("the app's credentials: {e}")))?;
    let store = FileStore::new(&args.settings.tokens);
    let tokens = match store.load() {
        Ok(Some(t)) => t,
        Ok(None) => {
            eprintln!(
                "onair record: no saved tokens at {}: run `onair auth exchange` first",
                args.settings.tokens
            );
            return Ok(std::process::ExitCode::from(3));
        }
        Err(e) => {
            eprintln!("onair record: {}: {e}", args.settings.tokens);
            return Ok(std::process::ExitCode::from(3));
        }
    };
    let file =
        File::create(&out_path).map_err(|e| UsageError(format!("--out {out_path:?}: {e}")))?;
    let mut config = BotConfig::new(base, creds);
    config.check_credentials = false;
    let seed = SystemClock.now_ms() ^ u64::from(std::process::id());
    let bot = Bot::new(config, Some(tokens), seed);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| UsageError(format!("cannot start the runtime: {e}")))?;
    let mut rec = Recorder::new(bot, store, BufWriter::new(file), args.keep_text);
    let outcome = rt.block_on(rec.run());
    let summary = rec.summary();
    if let Err(e) = rec.out.flush() {
        eprintln!("onair record: {out_path}: {e}");
        return Ok(std::process::ExitCode::FAILURE);
    }
    match outcome {
        Ok(()) => {
            eprintln!("onair record: {summary} → {out_path}");
            Ok(std::process::ExitCode::SUCCESS)
        }
        Err(why) => {
            eprintln!("onair record: {why} ({summary}, cassette {out_path} kept)");
            Ok(std::process::ExitCode::FAILURE)
        }
    }
}

/// A stream connection being recorded.
struct Conn {
    number: u32,
    tee: Tee,
}

/// The recording loop's state.
struct Recorder {
    bot: Bot,
    store: FileStore,
    out: BufWriter<File>,
    privacy: Option<Pseudonyms>,
    start: Instant,
    client: reqwest::Client,
    tx: mpsc::UnboundedSender<Report>,
    rx: mpsc::UnboundedReceiver<Report>,
    tasks: HashMap<RequestId, AbortHandle>,
    /// Read calls in flight: their path and query.
    reads: HashMap<RequestId, (String, Option<String>)>,
    streams: HashMap<RequestId, Conn>,
    opened: u32,
    frames: u64,
    bytes: u64,
    live_id: Option<u64>,
    asked_people_of: Option<u64>,
    stop_at: Option<Instant>,
    stopping: bool,
    write_error: Option<String>,
}

impl Recorder {
    fn new(bot: Bot, store: FileStore, out: BufWriter<File>, keep_text: bool) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        let mut rec = Self {
            bot,
            store,
            out,
            privacy: Some(Pseudonyms::new(keep_text)),
            start: Instant::now(),
            client: reqwest::Client::new(),
            tx,
            rx,
            tasks: HashMap::new(),
            reads: HashMap::new(),
            streams: HashMap::new(),
            opened: 0,
            frames: 0,
            bytes: 0,
            live_id: None,
            asked_people_of: None,
            stop_at: None,
            stopping: false,
            write_error: None,
        };
        let header = Header::new(
            i64::try_from(SystemClock.now_ms()).unwrap_or(0),
            true,
            keep_text,
        );
        let line = serde_json::to_string(&header).unwrap_or_default();
        rec.line(&line);
        rec
    }

    fn at_ms(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn line(&mut self, line: &str) {
        if let Err(e) = writeln!(self.out, "{line}") {
            self.write_error.get_or_insert(e.to_string());
        }
    }

    fn entry(&mut self, e: &Entry) {
        self.line(&e.to_line());
    }

    fn summary(&self) -> String {
        format!(
            "{} connection(s), {} frame(s), {} byte(s), {:.1} s",
            self.opened,
            self.frames,
            self.bytes,
            self.start.elapsed().as_secs_f64()
        )
    }

    async fn run(&mut self) -> Result<(), String> {
        let stop = crate::serve::stop_signal();
        tokio::pin!(stop);
        self.bot.fetch_broadcast();
        loop {
            if let Some(e) = &self.write_error {
                let why = format!("cannot write the cassette: {e}");
                self.finish();
                return Err(why);
            }
            let now = SystemClock.now_ms();
            if !self.stopping
                && self
                    .stop_at
                    .is_some_and(|t| Instant::now() >= t || self.streams.is_empty())
            {
                self.stopping = true;
                self.bot.shutdown(false);
            }
            match self.bot.poll(now) {
                Action::Send { id, request, .. } => self.send(id, request),
                Action::OpenStream { id, request } => self.open(id, request),
                Action::CloseStream { id, .. } => self.abort(id),
                Action::PersistTokens(tokens) => {
                    if let Err(e) = self.store.save(&tokens) {
                        eprintln!("onair record: cannot save the new token pair: {e}");
                    }
                }
                Action::Event { event, .. } => {
                    self.frames += 1;
                    if let Event::End(end) = event {
                        if end.reason == EndReason::LiveEnded {
                            // A moment for the server's close, then stop.
                            self.stop_at
                                .get_or_insert(Instant::now() + Duration::from_secs(1));
                        }
                    }
                }
                Action::NeedsAuthorization => {
                    self.finish();
                    return Err("the bot needs a new consent: run `onair auth exchange`".into());
                }
                Action::Stopped(stop) => {
                    self.finish();
                    return if self.stopping {
                        Ok(())
                    } else {
                        Err(format!("the bot stopped: {stop}"))
                    };
                }
                Action::Wait { until_ms } => {
                    let mut delay = until_ms.map_or(Duration::from_secs(3600), |at| {
                        Duration::from_millis(at.saturating_sub(now))
                    });
                    if let Some(t) = self.stop_at {
                        delay = delay.min(t.saturating_duration_since(Instant::now()));
                    }
                    tokio::select! {
                        report = self.rx.recv() => {
                            if let Some(r) = report {
                                self.apply(r);
                            }
                        }
                        () = tokio::time::sleep(delay) => {}
                        () = &mut stop, if !self.stopping => {
                            self.stopping = true;
                            self.bot.shutdown(false);
                        }
                    }
                    while let Ok(r) = self.rx.try_recv() {
                        self.apply(r);
                    }
                }
                _ => {}
            }
        }
    }

    /// Closes what is still open: each connection's held bytes written and
    /// its close recorded as the recorder's.
    fn finish(&mut self) {
        let ids: Vec<RequestId> = self.streams.keys().copied().collect();
        for id in ids {
            self.abort(id);
        }
        for (_, task) in self.tasks.drain() {
            task.abort();
        }
    }

    fn send(&mut self, id: RequestId, request: HttpRequest) {
        let endpoint = request.endpoint;
        if matches!(
            endpoint,
            Endpoint::Live | Endpoint::Listeners | Endpoint::Fans
        ) {
            let (path, query) = match request
                .url
                .split_once("://")
                .and_then(|(_, r)| r.find('/').map(|i| &r[i..]))
            {
                Some(rest) => match rest.split_once('?') {
                    Some((p, q)) => (p.to_owned(), Some(q.to_owned())),
                    None => (rest.to_owned(), None),
                },
                None => (String::new(), None),
            };
            self.reads.insert(id, (path, query));
        }
        let Some(req) = build(request) else {
            let _ = self.bot.on_transport_error(id, SystemClock.now_ms());
            return;
        };
        let client = self.client.clone();
        let tx = self.tx.clone();
        let task = tokio::spawn(async move {
            let report = match client.execute(req).await {
                Ok(resp) => {
                    let status = resp.status().as_u16();
                    let headers = header_pairs(resp.headers());
                    match resp.bytes().await {
                        Ok(body) => Report::Response {
                            id,
                            status,
                            headers,
                            body: body.to_vec(),
                        },
                        Err(_) => Report::Failed {
                            id,
                            not_sent: false,
                        },
                    }
                }
                Err(e) => Report::Failed {
                    id,
                    not_sent: e.is_connect(),
                },
            };
            let _ = tx.send(report);
        });
        self.tasks.insert(id, task.abort_handle());
    }

    fn open(&mut self, id: RequestId, request: HttpRequest) {
        let Some(req) = build(request) else {
            let _ = self.bot.on_transport_error(id, SystemClock.now_ms());
            return;
        };
        let client = self.client.clone();
        let tx = self.tx.clone();
        let task = tokio::spawn(async move {
            let mut resp = match client.execute(req).await {
                Ok(r) => r,
                Err(e) => {
                    let _ = tx.send(Report::Failed {
                        id,
                        not_sent: e.is_connect(),
                    });
                    return;
                }
            };
            let open = Report::Open {
                id,
                status: resp.status().as_u16(),
                headers: header_pairs(resp.headers()),
            };
            if tx.send(open).is_err() {
                return;
            }
            loop {
                match resp.chunk().await {
                    Ok(Some(chunk)) => {
                        let chunk = chunk.to_vec();
                        if tx.send(Report::Chunk { id, chunk }).is_err() {
                            return;
                        }
                    }
                    Ok(None) => {
                        let _ = tx.send(Report::Closed {
                            id,
                            how: CloseHow::Eof,
                        });
                        return;
                    }
                    Err(_) => {
                        let _ = tx.send(Report::Closed {
                            id,
                            how: CloseHow::Error,
                        });
                        return;
                    }
                }
            }
        });
        self.tasks.insert(id, task.abort_handle());
    }

    /// The bot no longer wants `id` (or the recording stops).
    fn abort(&mut self, id: RequestId) {
        if let Some(t) = self.tasks.remove(&id) {
            t.abort();
        }
        self.reads.remove(&id);
        self.close_conn(id, CloseHow::Client);
    }

    fn close_conn(&mut self, id: RequestId, how: CloseHow) {
        if let Some(mut c) = self.streams.remove(&id) {
            let at = self.at_ms();
            for (t, bytes, rewritten) in c.tee.finish() {
                self.chunk_entry(c.number, t, &bytes, rewritten);
            }
            self.entry(&Entry::Close {
                conn: c.number,
                at_ms: at,
                how,
            });
            // After each connection: where the broadcast stands.
            if !self.stopping {
                self.bot.fetch_broadcast();
            }
        }
    }

    fn chunk_entry(&mut self, conn: u32, at_ms: u64, bytes: &[u8], rewritten: bool) {
        self.entry(&Entry::Chunk {
            conn,
            at_ms,
            bytes: encode(bytes),
            rewritten,
        });
    }

    fn apply(&mut self, report: Report) {
        let now = SystemClock.now_ms();
        let _ = match report {
            Report::Response {
                id,
                status,
                headers,
                body,
            } => {
                self.tasks.remove(&id);
                if let Some((path, query)) = self.reads.remove(&id) {
                    self.record_read(path, query, status, &headers, &body);
                }
                let pairs = headers.iter().map(|(k, v)| (k.as_str(), v.as_str()));
                self.bot.on_response(id, status, pairs, &body, now)
            }
            Report::Failed { id, not_sent } => {
                self.tasks.remove(&id);
                self.reads.remove(&id);
                if not_sent {
                    self.bot.on_not_sent(id, now)
                } else {
                    self.bot.on_transport_error(id, now)
                }
            }
            Report::Open {
                id,
                status,
                headers,
            } => {
                let number = self.opened;
                self.opened += 1;
                let at = self.at_ms();
                self.entry(&Entry::Open {
                    conn: number,
                    at_ms: at,
                    live_id: self.live_id,
                    status,
                    headers: headers.clone(),
                });
                self.streams.insert(
                    id,
                    Conn {
                        number,
                        tee: Tee::default(),
                    },
                );
                let pairs = headers.iter().map(|(k, v)| (k.as_str(), v.as_str()));
                self.bot.on_stream_open(id, status, pairs, now)
            }
            Report::Chunk { id, chunk } => {
                let at = self.at_ms();
                self.bytes += chunk.len() as u64;
                let mut privacy = self.privacy.take();
                let ready = match (self.streams.get_mut(&id), privacy.as_mut()) {
                    (Some(c), Some(p)) => Some((c.number, c.tee.feed(at, &chunk, p))),
                    _ => None,
                };
                self.privacy = privacy;
                if let Some((number, ready)) = ready {
                    for (t, bytes, rewritten) in ready {
                        self.chunk_entry(number, t, &bytes, rewritten);
                    }
                }
                self.bot.on_stream_bytes(id, &chunk, now)
            }
            Report::Closed { id, how } => {
                self.tasks.remove(&id);
                self.close_conn(id, how);
                self.bot.on_stream_closed(id, now)
            }
        };
    }

    /// A read call's answer into the cassette (pseudonymised); the
    /// broadcast's people asked for once per broadcast.
    fn record_read(
        &mut self,
        path: String,
        query: Option<String>,
        status: u16,
        headers: &[(String, String)],
        body: &[u8],
    ) {
        let text = std::str::from_utf8(body).ok();
        let rewritten = text.and_then(|t| self.privacy.as_mut().and_then(|p| p.rewrite_json(t)));
        let at = self.at_ms();
        self.entry(&Entry::Rest {
            at_ms: at,
            method: "GET".to_owned(),
            path: path.clone(),
            query,
            status,
            headers: headers.to_vec(),
            body: encode(rewritten.as_deref().map_or(body, str::as_bytes)),
            rewritten: rewritten.is_some(),
        });
        if path == "/v1/live" && status == 200 {
            let live = text
                .and_then(|t| serde_json::from_str::<serde_json::Value>(t).ok())
                .and_then(|v| v.get("liveId").and_then(serde_json::Value::as_u64));
            if live.is_some() {
                self.live_id = live;
            }
            if live.is_some() && self.asked_people_of != live && !self.stopping {
                self.asked_people_of = live;
                self.bot.list_listeners();
                self.bot.fetch_fans();
            }
        }
    }
}

fn build(request: HttpRequest) -> Option<reqwest::Request> {
    let request = request.into_http().ok()?;
    reqwest::Request::try_from(request).ok()
}

/// Response headers as text pairs (a value that is not text is kept lossily).
fn header_pairs(headers: &reqwest::header::HeaderMap) -> Vec<(String, String)> {
    headers
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().to_owned(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect()
}

/// One connection's bytes on their way into the cassette. A line is held
/// until its line end arrives; a `data:` line's JSON is then rewritten and
/// the line handed back over the same chunks it came in (each keeps its
/// size; the last takes the difference), so chunking and line ends stay.
#[derive(Debug, Default)]
pub struct Tee {
    line: Vec<u8>,
    /// Chunks holding part of the unfinished line: (at, bytes before the
    /// line, how many of the line's bytes).
    held: Vec<(u64, Vec<u8>, usize, bool)>,
    first_line: bool,
}

/// A chunk ready to write: (at, bytes, rewritten).
type Ready = (u64, Vec<u8>, bool);

impl Tee {
    /// Feeds one chunk read at `at`; returns the chunks ready to write.
    pub fn feed(&mut self, at: u64, chunk: &[u8], privacy: &mut Pseudonyms) -> Vec<Ready> {
        let mut ready = Vec::new();
        let mut pre: Vec<u8> = Vec::new();
        let mut n = 0usize;
        let mut rewritten = false;
        for &b in chunk {
            if b == b'\r' || b == b'\n' {
                let original = std::mem::take(&mut self.line);
                let first = !std::mem::replace(&mut self.first_line, true);
                let new = rewrite_line(&original, first, privacy);
                let changed = new.is_some();
                let line = new.unwrap_or(original);
                let mut off = 0;
                for (t, mut bytes, k, was) in self.held.drain(..) {
                    let end = (off + k).min(line.len());
                    bytes.extend_from_slice(&line[off.min(end)..end]);
                    off = end;
                    ready.push((t, bytes, changed || was));
                }
                pre.extend_from_slice(&line[off.min(line.len())..]);
                pre.push(b);
                rewritten |= changed;
                n = 0;
            } else {
                self.line.push(b);
                n += 1;
            }
        }
        if n > 0 {
            // Part of an unfinished line: held until its line end.
            self.held.push((at, pre, n, rewritten));
        } else {
            ready.push((at, pre, rewritten));
        }
        ready
    }

    /// The connection ended: held chunks go as they came.
    pub fn finish(&mut self) -> Vec<Ready> {
        let line = std::mem::take(&mut self.line);
        let mut off = 0;
        self.held
            .drain(..)
            .map(|(t, mut bytes, k, was)| {
                let end = (off + k).min(line.len());
                bytes.extend_from_slice(&line[off..end]);
                off = end;
                (t, bytes, was)
            })
            .collect()
    }
}

/// A `data:` line with its JSON rewritten (the BOM and `data:` prefix kept),
/// or `None` when it is not one or nothing changed.
fn rewrite_line(line: &[u8], first: bool, privacy: &mut Pseudonyms) -> Option<Vec<u8>> {
    let bom = "\u{feff}".as_bytes();
    let (lead, rest) = match line.strip_prefix(bom) {
        Some(rest) if first => (bom, rest),
        _ => (&[][..], line),
    };
    let value = rest.strip_prefix(b"data:")?;
    let (space, json) = match value.strip_prefix(b" ") {
        Some(j) => (&b" "[..], j),
        None => (&[][..], value),
    };
    let text = std::str::from_utf8(json).ok()?;
    let new = privacy.rewrite_json(text)?;
    let mut out = Vec::with_capacity(line.len() + 16);
    out.extend_from_slice(lead);
    out.extend_from_slice(b"data:");
    out.extend_from_slice(space);
    out.extend_from_slice(new.as_bytes());
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Concatenated, the tee's chunks are the wire with only the data JSON
    /// changed; chunks that held no rewritten line keep their size.
    #[test]
    fn the_tee_keeps_chunking_and_line_ends() {
        let wire = "\u{feff}: hi\revent: chat\rid: 1-1\rdata: {\"user\":{\"id\":\"u1\",\"nickname\":\"Lucas\"},\"message\":\"yo\"}\r\r:\r";
        for size in [1usize, 3, 7, 1000] {
            let mut p = Pseudonyms::with_seed(false, 3);
            let mut tee = Tee::default();
            let mut out = Vec::new();
            for (i, c) in wire.as_bytes().chunks(size).enumerate() {
                out.extend(tee.feed(i as u64, c, &mut p));
            }
            out.extend(tee.finish());
            let all: Vec<u8> = out.iter().flat_map(|(_, b, _)| b.clone()).collect();
            let text = String::from_utf8(all).unwrap_or_default();
            assert!(text.starts_with("\u{feff}: hi\revent: chat\rid: 1-1\rdata: {\"user\":{\"id\":\"person-1\",\"nickname\":\""));
            assert!(text.ends_with("\"}\r\r:\r"));
            assert!(!text.contains("Lucas") && !text.contains("\"yo\""));
            assert_eq!(out.len(), wire.len().div_ceil(size));
            assert!(out.iter().any(|(_, _, r)| *r));
        }
    }
}
