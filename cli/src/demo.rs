//! `onair demo`: the reference bot through a busy and faulty broadcast.
//!
//! Without options it starts the emulator in-process on an ephemeral
//! 127.0.0.1 port, runs the reference bot ([`crate::refbot`]) on
//! `onair-tokio` on the emulator's virtual clock at high speed through the
//! `demo` scenario (consent, chat with `!hello` and `!top`, joins, hearts,
//! donations, a drop, `RECONNECT`, a per-second 429, a daily 429 on
//! `chat.send`, 502s, a frozen chat, `TOKEN_EXPIRED` after an hour's jump,
//! a kick, `LIVE_ENDED` and a second broadcast), shows progress, some of
//! the replies the service took and every drop of a reply as it happens,
//! then prints a summary per broadcast from the bot's tally (checked
//! against the emulator's ledger: exit 1 when they differ) and the replies
//! sent, merged and dropped per kind.
//!
//! With `--base-url URL --client-id ID --client-secret S --code C
//! --redirect-uri URI` (or the `ONAIR_*` variables of the same names) it runs
//! the same bot against that deployment until Ctrl-C or SIGTERM; with
//! `--tally-out FILE` it writes its tally there on the way out
//! (`scripts/e2e rust`).

use std::io::{IsTerminal, Write};
use std::time::Duration;

use onair::bot::DropReason;
use onair::json::TallyJson;
use onair::kit::ReplyKind;
use onair::{BaseUrl, Bot, BotConfig, ClientCredentials, Stop};
use std::sync::Arc;

use onair_emulator::clock::Clock as VirtualClock;
use onair_emulator::{Emulator, Scenario};
use onair_tokio::{BotEvent, Clock, Driver};

use crate::refbot::{Broadcast, Note, RefBot};
use crate::UsageError;

/// The demo's timeline: the faulty scenario with people asking the bot.
const DEMO_SCENARIO: &str = include_str!("demo.json");

/// Emulator time runs this many times faster than real time.
const DEMO_SPEED: f64 = 20.0;

/// `onair demo`'s options: none for the in-process demo; a deployment's
/// settings (flags or `ONAIR_*` variables) to run the bot against it. No
/// `Debug`: it holds the client secret and the consent code.
#[derive(clap::Args)]
#[command(after_help = "\
Without a base URL (and without --remote): the in-process demo, exit 1 if the
tally differs from the ledger. With one: the bot against that deployment until
Ctrl-C or SIGTERM, every value from its flag or its ONAIR_* variable (a flag
wins); scripts/e2e rust runs it so.")]
pub struct Args {
    /// Emulator time runs X times real time (the in-process demo)
    #[arg(long, value_name = "X", default_value_t = DEMO_SPEED,
          value_parser = crate::values::speed, allow_hyphen_values = true)]
    speed: f64,
    /// Run against a deployment even without --base-url (its values from ONAIR_* variables)
    #[arg(long)]
    remote: bool,
    /// The deployment's base address
    #[arg(
        long,
        value_name = "URL",
        env = "ONAIR_BASE_URL",
        hide_env_values = true,
        allow_hyphen_values = true
    )]
    base_url: Option<String>,
    /// The app's client id
    #[arg(
        long,
        value_name = "ID",
        env = "ONAIR_CLIENT_ID",
        hide_env_values = true,
        allow_hyphen_values = true
    )]
    client_id: Option<String>,
    /// The app's client secret (never printed)
    #[arg(
        long,
        value_name = "S",
        env = "ONAIR_CLIENT_SECRET",
        hide_env_values = true,
        allow_hyphen_values = true
    )]
    client_secret: Option<String>,
    /// The DJ's consent code
    #[arg(
        long,
        value_name = "C",
        env = "ONAIR_CODE",
        hide_env_values = true,
        allow_hyphen_values = true
    )]
    code: Option<String>,
    /// The redirect URI the code was issued for
    #[arg(
        long,
        value_name = "URI",
        env = "ONAIR_REDIRECT_URI",
        hide_env_values = true,
        allow_hyphen_values = true
    )]
    redirect_uri: Option<String>,
    /// Write the bot's tally there as JSON on the way out
    #[arg(
        long,
        value_name = "FILE",
        env = "ONAIR_TALLY_OUT",
        hide_env_values = true,
        allow_hyphen_values = true
    )]
    tally_out: Option<String>,
    /// Keep the token pair in this file (read at start, written on every new pair)
    #[arg(
        long,
        value_name = "FILE",
        env = "ONAIR_TOKENS_FILE",
        hide_env_values = true,
        allow_hyphen_values = true
    )]
    tokens_file: Option<String>,
    /// Keep the kit's memory in this file (read at start, written on every change)
    #[arg(
        long,
        value_name = "FILE",
        env = "ONAIR_STATE_FILE",
        hide_env_values = true,
        allow_hyphen_values = true
    )]
    state_file: Option<String>,
    /// Append a line there for each broadcast end the bot reads
    #[arg(
        long,
        value_name = "FILE",
        env = "ONAIR_ENDS_OUT",
        hide_env_values = true,
        allow_hyphen_values = true
    )]
    ends_out: Option<String>,
    /// The stream's heartbeat watchdog, in milliseconds (default 45000)
    #[arg(
        long,
        value_name = "MS",
        env = "ONAIR_WATCHDOG_MS",
        hide_env_values = true
    )]
    watchdog_ms: Option<u64>,
}

struct Remote {
    base_url: String,
    client_id: String,
    client_secret: String,
    /// Used only if the bot asks for authorization (no saved pair).
    code: Option<String>,
    redirect_uri: String,
    tally_out: Option<String>,
    tokens_file: Option<String>,
    state_file: Option<String>,
    ends_out: Option<String>,
    watchdog_ms: Option<u64>,
}

/// The deployment to run against, if any (`None`: the in-process demo).
fn remote(args: Args) -> Result<Option<Remote>, UsageError> {
    if !args.remote && args.base_url.is_none() {
        return Ok(None);
    }
    let need = |v: Option<String>, name: &str| {
        v.ok_or_else(|| UsageError(format!("demo against a deployment needs {name}")))
    };
    Ok(Some(Remote {
        base_url: need(args.base_url, "--base-url")?,
        client_id: need(args.client_id, "--client-id")?,
        client_secret: need(args.client_secret, "--client-secret")?,
        code: match (&args.code, &args.tokens_file) {
            // A saved pair needs no code (a code is used only on a first start).
            (None, Some(file)) if std::path::Path::new(file).exists() => None,
            _ => Some(need(
                args.code,
                "--code (or a --tokens-file with a saved pair)",
            )?),
        },
        redirect_uri: need(args.redirect_uri, "--redirect-uri")?,
        tally_out: args.tally_out,
        tokens_file: args.tokens_file,
        state_file: args.state_file,
        ends_out: args.ends_out,
        watchdog_ms: args.watchdog_ms,
    }))
}

/// Runs the command; exit 1 when the tally disagrees with the ledger.
pub fn run(args: Args) -> Result<std::process::ExitCode, UsageError> {
    let speed = args.speed;
    let remote = remote(args)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| UsageError(format!("demo: no runtime: {e}")))?;
    Ok(runtime.block_on(async move {
        match remote {
            Some(remote) => against(remote).await,
            None => demo(speed).await,
        }
    }))
}

/// The emulator's virtual clock for the driver.
pub(crate) struct EmulatorClock(pub(crate) Arc<VirtualClock>);

impl Clock for EmulatorClock {
    fn now_ms(&self) -> u64 {
        u64::try_from(self.0.now_ms()).unwrap_or(0)
    }

    fn real_delay(&self, at_ms: u64) -> Duration {
        let left = at_ms.saturating_sub(self.now_ms()) as f64;
        Duration::from_secs_f64((left / self.0.speed().max(1e-3) / 1000.0).min(60.0))
    }
}

fn config(base_url: &str, client_id: &str, secret: &str) -> Result<BotConfig, String> {
    let base = BaseUrl::new(base_url).map_err(|e| e.to_string())?;
    let creds = ClientCredentials::new(client_id, secret).map_err(|e| e.to_string())?;
    let mut config = BotConfig::new(base, creds);
    config.kit = crate::refbot::kit();
    Ok(config)
}

/// What the run loop reports as it goes.
struct Screen {
    live: bool,
    /// Chat messages shown so far (the first few, then only answers).
    said_shown: usize,
    unknown_shown: std::collections::BTreeSet<String>,
    /// Replies dropped and not shown yet, per kind and reason: the demo
    /// shows them once per tick (a blocked chat drops one at a time).
    drops: Vec<(ReplyKind, DropReason, u64)>,
    /// Where a line goes for each broadcast end read (`ONAIR_ENDS_OUT`).
    ends_out: Option<String>,
}

impl Screen {
    fn line(&self, text: &str) {
        if self.live {
            eprint!("\r\x1b[2K");
        }
        println!("{text}");
    }

    /// Replies dropped: shown at the next [`Screen::show_drops`].
    fn dropped(&mut self, kind: ReplyKind, reason: DropReason, people: u64) {
        match self
            .drops
            .iter_mut()
            .find(|(k, r, _)| (*k, *r) == (kind, reason))
        {
            Some((_, _, n)) => *n += people,
            None => self.drops.push((kind, reason, people)),
        }
    }

    /// A line per kind and reason of the replies dropped since the last
    /// (the notice's own text: `! dropped 12 thanks replies: …`).
    fn drop_lines(&mut self) -> Vec<String> {
        std::mem::take(&mut self.drops)
            .into_iter()
            .map(|(kind, reason, people)| {
                let notice = onair::bot::Notice::RepliesDropped {
                    kind,
                    people,
                    reason,
                };
                format!("  ! {notice}")
            })
            .collect()
    }

    /// Shows the replies dropped since the last.
    fn show_drops(&mut self) {
        for line in self.drop_lines() {
            self.line(&line);
        }
    }

    /// A chat message the service took from the bot: the commands'
    /// answers always, the first few others (at most three welcomes).
    fn said(&mut self, text: &str) {
        let answer = text.starts_with("Hello") || text.starts_with("Top donors");
        if answer || (self.said_shown < 8 && (!text.starts_with("Welcome") || self.said_shown < 3))
        {
            self.said_shown += 1;
            self.line(&format!("  → {text}"));
        }
    }

    fn status(&self, text: &str) {
        if self.live {
            eprint!("\r\x1b[2K{text}");
            let _ = std::io::stderr().flush();
        }
    }
}

/// One event from the driver, handled and shown. `false` once stopped.
fn handle(
    driver: &mut Driver,
    refbot: &mut RefBot,
    screen: &mut Screen,
    code: &mut Option<(String, String)>,
    event: BotEvent,
) -> bool {
    let now = driver.now_ms();
    if let BotEvent::Event {
        event: onair::Event::End(end),
        ..
    } = &event
    {
        let what = match end.reason.as_str() {
            "LIVE_ENDED" => "the broadcast ended: wait, then connect for the next one",
            "TOKEN_EXPIRED" => "the token expired under the stream: refresh, reconnect",
            "RECONNECT" => "the server closed this connection: reconnect at once",
            _ => "an end reason this version does not know: back off",
        };
        screen.line(&format!("  ■ end {}: {what}", end.reason));
    }
    for note in refbot.on(driver.bot_mut(), &event, now) {
        match note {
            // The reminder; the replies the core sends are shown from the
            // service's side (`demo`), where it is in-process.
            Note::Said(_) => {}
            Note::BroadcastEnded(i) => {
                screen.line(&format!("  ■ broadcast {} over", i + 1));
                if let (BotEvent::BroadcastEnded(b), Some(path)) = (&event, &screen.ends_out) {
                    append_line(
                        path,
                        &serde_json::json!({ "liveId": b.live_id }).to_string(),
                    );
                }
            }
        }
    }
    match event {
        BotEvent::Notice(notice) => {
            use onair::bot::Notice;
            match notice {
                Notice::Problem { endpoint, problem } => {
                    screen.line(&format!("  ! {endpoint}: {problem}"));
                }
                Notice::CallHeld { .. } => {}
                Notice::ReconnectStormBraked { .. } => {
                    screen.line("  ! RECONNECT storm: the next connect waits");
                }
                Notice::FrameSkipped(e) => screen.line(&format!("  ! frame skipped: {e}")),
                Notice::RepliesDropped {
                    kind,
                    people,
                    reason,
                } => screen.dropped(kind, reason, people),
                Notice::UnknownEvent { event, .. }
                    if screen.unknown_shown.insert(event.clone()) =>
                {
                    screen.line(&format!(
                        "  · unknown event {event:?}: kept raw, skipped (said once)"
                    ));
                }
                _ => {}
            }
        }
        BotEvent::TokensRenewed(tokens) => {
            let what = if tokens.generation() == 1 {
                "authorized"
            } else {
                "token refreshed"
            };
            screen.line(&format!(
                "  ✓ {what} (generation {}, scope {})",
                tokens.generation(),
                tokens.scope()
            ));
        }
        BotEvent::StoreFailed(e) => screen.line(&format!("  ! token store: {e}")),
        BotEvent::NeedsAuthorization => match code.take() {
            Some((code, redirect_uri)) => driver.bot_mut().authorize(&code, &redirect_uri),
            None => {
                screen.line("  ! the bot needs a new consent code; stopping");
                return false;
            }
        },
        BotEvent::Stopped(stop) => {
            screen.line(&format!("  ■ stopped: {stop}"));
            return matches!(stop, Stop::Reauthorize(_)) && code.is_some();
        }
        _ => {}
    }
    true
}

/// Appends one line to `path` (the e2e judge reads it as it grows).
fn append_line(path: &str, line: &str) {
    use std::io::Write as _;
    if let Ok(mut file) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        let _ = writeln!(file, "{line}");
    }
}

async fn demo(speed: f64) -> std::process::ExitCode {
    use std::process::ExitCode;
    let started = std::time::Instant::now();
    let scenario = match Scenario::from_json(DEMO_SCENARIO) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("onair demo: bad built-in scenario: {e}");
            return ExitCode::FAILURE;
        }
    };
    let emu = match Emulator::builder()
        .speed(speed)
        .scenario(scenario)
        .start()
        .await
    {
        Ok(emu) => emu,
        Err(e) => {
            eprintln!("onair demo: the emulator did not start: {e}");
            return ExitCode::FAILURE;
        }
    };
    let app = emu.app();
    println!("onair demo — the reference bot through a busy, faulty night");
    println!(
        "  emulator on {} (virtual clock ×{speed}); client id {}",
        emu.base_url(),
        app.client_id
    );
    let code = match consent_code(&emu.control_url()).await {
        Ok(code) => code,
        Err(e) => {
            eprintln!("onair demo: no consent code: {e}");
            return ExitCode::FAILURE;
        }
    };
    let config = match config(&emu.base_url(), &app.client_id, &app.client_secret) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("onair demo: {e}");
            return ExitCode::FAILURE;
        }
    };
    let bot = Bot::new(config, None, 0x0dd_ba11);
    let mut driver = Driver::new(bot).with_clock(EmulatorClock(emu.clock()));
    let mut refbot = RefBot::new();
    let mut screen = Screen {
        live: std::io::stderr().is_terminal(),
        said_shown: 0,
        unknown_shown: std::collections::BTreeSet::new(),
        drops: Vec::new(),
        ends_out: None,
    };
    let mut code = Some((code, app.redirect_uri.clone()));
    let mut ticker = tokio::time::interval(Duration::from_millis(150));
    let mut settle: Option<tokio::time::Instant> = None;
    let mut drops_shown = 0;
    // The emulator's log: the replies the service took, as they go out.
    let mut service_log = emu.subscribe_log();
    loop {
        tokio::select! {
            event = driver.next() => {
                let Some(event) = event else { break };
                if !handle(&mut driver, &mut refbot, &mut screen, &mut code, event) {
                    break;
                }
            }
            _ = ticker.tick() => {
                screen.show_drops();
                while let Ok(line) = service_log.try_recv() {
                    if let Some((_, text)) = line
                        .strip_prefix("bot chat from ")
                        .and_then(|rest| rest.split_once(": "))
                    {
                        screen.said(text);
                    }
                }
                let (position, total, done) = emu.scenario_progress();
                let status = driver.bot().status(driver.now_ms());
                let c = &status.counters;
                if c.drops > drops_shown {
                    drops_shown = c.drops;
                    screen.line("  ⚡ the stream dropped without an end frame: back off (1 s doubling to 30 s, jittered), reconnect");
                }
                let filled = (position * 24).checked_div(total).unwrap_or(0).min(24);
                screen.status(&format!(
                    "[{}{}] {position}/{total} steps  events {}  chats {}  reconnects {}",
                    "#".repeat(filled),
                    ".".repeat(24 - filled),
                    c.chat + c.presence + c.like + c.donation,
                    c.chats_sent,
                    c.connects.saturating_sub(1),
                ));
                if done && settle.is_none() {
                    settle = Some(tokio::time::Instant::now() + Duration::from_millis(400));
                }
                if settle.is_some_and(|at| tokio::time::Instant::now() >= at) {
                    break;
                }
            }
        }
    }
    screen.status("");
    screen.show_drops();
    let counters = driver.bot().status(driver.now_ms()).counters;
    let broadcasts = refbot.broadcasts(driver.bot());
    let _ = driver.shutdown(false).await;
    let ledger = serde_json::to_value(emu.ledger()).unwrap_or_default();
    emu.shutdown().await;
    let ok = summary(&broadcasts, &ledger, &app.client_id);
    println!(
        "  {} events, {} heartbeats, {} connections, {} chats sent, {} given up (frozen chat, daily quota, chat limit); {:.1} s",
        counters.chat + counters.presence + counters.like + counters.donation,
        counters.heartbeats,
        counters.connects,
        counters.chats_sent,
        counters.chats_failed,
        started.elapsed().as_secs_f64()
    );
    for line in replies_summary(&counters.replies) {
        println!("  {line}");
    }
    if ok {
        println!("tally = ledger: every broadcast, every person");
        ExitCode::SUCCESS
    } else {
        println!("TALLY DIFFERS FROM THE LEDGER");
        ExitCode::FAILURE
    }
}

/// The replies' lines of the summary: the totals, then each kind that had
/// any (`welcome 121 in 30 messages, 98 merged, 2 dropped`).
fn replies_summary(replies: &onair::bot::RepliesCounters) -> Vec<String> {
    use onair::kit::ReplyKind;
    let kinds = ReplyKind::ALL.map(|kind| (kind, replies.of(kind)));
    let sum =
        |f: fn(&onair::bot::ReplyCounters) -> u64| -> u64 { kinds.iter().map(|(_, c)| f(c)).sum() };
    let plural = |n: u64, one: &str, many: &str| {
        if n == 1 {
            format!("{n} {one}")
        } else {
            format!("{n} {many}")
        }
    };
    let mut lines = vec![format!(
        "replies: {} named in {}, {} of them merged, {} dropped",
        plural(sum(|c| c.people), "person", "people"),
        plural(sum(|c| c.messages), "message", "messages"),
        sum(|c| c.merged),
        sum(|c| c.dropped),
    )];
    let each: Vec<String> = kinds
        .iter()
        .filter(|(_, c)| c.people + c.dropped > 0)
        .map(|(kind, c)| {
            let name = kind.as_str().replace('_', " ");
            let mut text = format!("{name} {} in {}", c.people, c.messages);
            if c.merged > 0 {
                text.push_str(&format!(" ({} merged)", c.merged));
            }
            if c.dropped > 0 {
                text.push_str(&format!(", {} dropped", c.dropped));
            }
            text
        })
        .collect();
    if !each.is_empty() {
        lines.push(format!("  {}", each.join(" · ")));
    }
    lines
}

/// A consent code from the emulator's control API.
pub(crate) async fn consent_code(control_url: &str) -> Result<String, String> {
    let response = reqwest::Client::new()
        .post(format!("{control_url}/consent"))
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .await
        .map_err(|e| e.to_string())?;
    let body: serde_json::Value = response.json().await.map_err(|e| e.to_string())?;
    body["code"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| format!("no code in {body}"))
}

fn empty(totals: &serde_json::Value) -> bool {
    totals["people"].as_object().is_none_or(|p| p.is_empty())
        && totals["hearts"] == 0
        && totals["donated"] == 0
}

/// Whether the bot's tally equals the ledger's totals for this bot,
/// broadcast by broadcast (empty ones left out on both sides).
#[cfg(test)]
pub(crate) fn tally_equals_ledger(
    broadcasts: &[Broadcast],
    ledger: &serde_json::Value,
    client_id: &str,
) -> bool {
    let (truth, mine) = sides(broadcasts, ledger, client_id);
    truth.len() == mine.len() && truth.iter().zip(&mine).all(|(t, (_, m))| *t == m)
}

type Mine<'a> = Vec<(&'a Broadcast, serde_json::Value)>;

fn sides<'a>(
    broadcasts: &'a [Broadcast],
    ledger: &'a serde_json::Value,
    client_id: &str,
) -> (Vec<&'a serde_json::Value>, Mine<'a>) {
    let truth: Vec<&serde_json::Value> = ledger["broadcasts"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|b| b["bots"].as_array().into_iter().flatten())
        .filter(|bot| bot["clientId"] == client_id)
        .map(|bot| &bot["totals"])
        .filter(|t| !empty(t))
        .collect();
    let mine: Vec<(&Broadcast, serde_json::Value)> = broadcasts
        .iter()
        .map(|b| {
            (
                b,
                serde_json::from_str(&TallyJson(&b.tally).to_line()).unwrap_or_default(),
            )
        })
        .filter(|(_, t)| !empty(t))
        .collect();
    (truth, mine)
}

/// The donors table's name column, in terminal columns.
const NAME_COLUMNS: usize = 22;

/// How each donor is shown: their nickname, "(no nickname)" when they had
/// none, and a short id suffix when the name alone would not tell two
/// people apart (or there is no name).
fn donor_names(donors: &[(&str, &onair::kit::tally::PersonTotals)]) -> Vec<String> {
    let name = |p: &onair::kit::tally::PersonTotals| {
        p.nickname
            .as_deref()
            .filter(|n| !n.trim().is_empty())
            .map(str::to_owned)
    };
    donors
        .iter()
        .map(|(id, person)| {
            let tail: String = {
                let chars: Vec<char> = id.chars().collect();
                chars[chars.len().saturating_sub(4)..].iter().collect()
            };
            match name(person) {
                None => format!("(no nickname) ·{tail}"),
                Some(n)
                    if donors
                        .iter()
                        .filter(|(_, p)| name(p).as_ref() == Some(&n))
                        .count()
                        > 1 =>
                {
                    format!("{n} ·{tail}")
                }
                Some(n) => n,
            }
        })
        .collect()
}

/// `text` in exactly `columns` terminal columns: cut with "…" when wider,
/// padded with spaces (wide CJK and emoji count two columns).
fn fit(text: &str, columns: usize) -> String {
    use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};
    let mut out = String::new();
    let mut used = 0;
    if text.width() > columns {
        for c in text.chars() {
            let w = c.width().unwrap_or(0);
            if used + w + 1 > columns {
                break;
            }
            out.push(c);
            used += w;
        }
        out.push('…');
        used += 1;
    } else {
        out.push_str(text);
        used = text.width();
    }
    out.extend(std::iter::repeat_n(' ', columns.saturating_sub(used)));
    out
}

/// Prints a table per broadcast; `true` when the bot's tally equals the
/// ledger's totals for this bot, broadcast by broadcast.
fn summary(broadcasts: &[Broadcast], ledger: &serde_json::Value, client_id: &str) -> bool {
    let (truth, mine) = sides(broadcasts, ledger, client_id);
    let mut ok = truth.len() == mine.len();
    println!();
    for (i, (broadcast, totals)) in mine.iter().enumerate() {
        let equal = truth.get(i).is_some_and(|t| *t == totals);
        ok &= equal;
        let live = broadcast
            .live_id
            .map_or("liveId not read".to_owned(), |id| format!("liveId {id}"));
        println!(
            "  broadcast {} ({live}): {} hearts, {} donated, {} attended{}",
            i + 1,
            broadcast.tally.total_hearts(),
            broadcast.tally.total_donated(),
            broadcast.tally.joined(),
            if equal {
                "  ✓ ledger"
            } else {
                "  ✗ ledger differs"
            }
        );
        println!(
            "    {:<4} {} {:>9} {:>9}",
            "rank",
            fit("top donor", NAME_COLUMNS),
            "donated",
            "hearts"
        );
        let donors: Vec<_> = broadcast.tally.donors().into_iter().take(5).collect();
        let names = donor_names(&donors);
        for (rank, ((_, person), name)) in donors.iter().zip(names).enumerate() {
            println!(
                "    {:<4} {} {:>9} {:>9}",
                rank + 1,
                fit(&name, NAME_COLUMNS),
                person.donated,
                person.hearts
            );
        }
    }
    if truth.len() != mine.len() {
        println!(
            "  the bot saw {} broadcast(s) with events, the ledger {}",
            mine.len(),
            truth.len()
        );
    }
    ok
}

/// The same bot against a deployment (or `onair serve`): until Ctrl-C or
/// SIGTERM, then the tally to `--tally-out`.
async fn against(remote: Remote) -> std::process::ExitCode {
    use std::process::ExitCode;
    let mut config = match config(&remote.base_url, &remote.client_id, &remote.client_secret) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("onair demo: {e}");
            return ExitCode::from(2);
        }
    };
    if let Some(ms) = remote.watchdog_ms {
        config.stream.watchdog_ms = ms.max(1);
    }
    let tokens = onair_tokio::FileStore::new(remote.tokens_file.clone().unwrap_or_default());
    let state = onair_tokio::FileStore::new(remote.state_file.clone().unwrap_or_default());
    let driver = match (&remote.tokens_file, &remote.state_file) {
        (Some(_), Some(_)) => Driver::from_stores(config, tokens, state),
        (Some(_), None) => Driver::from_store(config, tokens),
        _ => {
            let seed = std::collections::hash_map::RandomState::new();
            let seed = std::hash::BuildHasher::hash_one(&seed, std::process::id());
            Ok(Driver::new(Bot::new(config, None, seed)))
        }
    };
    let driver = match driver {
        Ok(d) => d,
        Err(e) => {
            eprintln!("onair demo: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut refbot = RefBot::new();
    let mut screen = Screen {
        live: false,
        said_shown: 0,
        unknown_shown: std::collections::BTreeSet::new(),
        drops: Vec::new(),
        ends_out: remote.ends_out.clone(),
    };
    let mut code = remote
        .code
        .clone()
        .map(|code| (code, remote.redirect_uri.clone()));
    // Ctrl-C or SIGTERM: the driver hands the bot what its stream already
    // read, saves the kit's state and ends with `Stopped(ShutDown)`; the
    // tally below counts every event read before the signal.
    let mut driver = driver.stop_on_signals();
    let mut failed = true;
    while let Some(event) = driver.next().await {
        if event == BotEvent::Stopped(Stop::ShutDown) {
            failed = false;
            break;
        }
        let go_on = handle(&mut driver, &mut refbot, &mut screen, &mut code, event);
        screen.show_drops();
        if !go_on {
            break;
        }
    }
    let tally = refbot.tally_json(driver.bot());
    let _ = driver.shutdown(false).await;
    if let Some(path) = &remote.tally_out {
        if let Err(e) = std::fs::write(path, tally) {
            eprintln!("onair demo: cannot write {path}: {e}");
            return ExitCode::FAILURE;
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

#[cfg(test)]
mod table_tests {
    use super::{donor_names, fit, replies_summary};
    use onair::kit::tally::PersonTotals;
    use unicode_width::UnicodeWidthStr;

    fn person(nickname: Option<&str>) -> PersonTotals {
        PersonTotals {
            nickname: nickname.map(str::to_owned),
            donated: 100,
            ..PersonTotals::default()
        }
    }

    #[test]
    fn names_fill_their_columns_whatever_their_script() {
        for name in [
            "ゆうき",
            "Nguyễn Văn A",
            "하늘바라기",
            "محمد",
            "👩‍🚀 captain",
            "x",
        ] {
            assert_eq!(fit(name, 22).width(), 22, "{name:?}");
        }
        let long = fit(&"가".repeat(30), 22);
        assert_eq!(long.width(), 22);
        assert!(long.trim_end().ends_with('…'), "{long:?}");
    }

    #[test]
    fn two_people_of_one_nickname_and_a_missing_one_are_told_apart() {
        let (a, b, c, d) = (
            person(Some("ゆうき")),
            person(Some("ゆうき")),
            person(None),
            person(Some("Mina")),
        );
        let donors = [
            ("u1111aaaa", &a),
            ("u2222bbbb", &b),
            ("u3333cccc", &c),
            ("u4444dddd", &d),
        ];
        assert_eq!(
            donor_names(&donors),
            [
                "ゆうき ·aaaa",
                "ゆうき ·bbbb",
                "(no nickname) ·cccc",
                "Mina"
            ]
        );
    }

    #[test]
    fn replies_dropped_one_at_a_time_are_shown_once_per_kind_and_reason() {
        use onair::bot::DropReason;
        use onair::kit::ReplyKind;
        let mut screen = super::Screen {
            live: false,
            said_shown: 0,
            unknown_shown: Default::default(),
            drops: Vec::new(),
            ends_out: None,
        };
        screen.dropped(ReplyKind::Thanks, DropReason::GivenUp, 1);
        screen.dropped(ReplyKind::WelcomeBack, DropReason::Stale, 3);
        screen.dropped(ReplyKind::Thanks, DropReason::GivenUp, 1);
        screen.dropped(ReplyKind::Thanks, DropReason::Ended, 1);
        assert_eq!(
            screen.drop_lines(),
            [
                "  ! dropped 2 thanks replies: given up (no answer, or held back by the daily quota)",
                "  ! dropped 3 welcome_back replies: not sent within their freshness (the chat limit held them back)",
                "  ! dropped 1 thanks reply: the broadcast ended before they went out",
            ]
        );
        assert!(screen.drop_lines().is_empty(), "shown once");
    }

    #[test]
    fn the_summary_says_replies_sent_merged_and_dropped_per_kind() {
        let mut replies = onair::bot::RepliesCounters::default();
        replies.welcome.messages = 30;
        replies.welcome.people = 121;
        replies.welcome.merged = 98;
        replies.welcome.dropped = 2;
        replies.thanks.messages = 1;
        replies.thanks.people = 1;
        replies.command.dropped = 1;
        assert_eq!(
            replies_summary(&replies),
            [
                "replies: 122 people named in 31 messages, 98 of them merged, 3 dropped",
                "  welcome 121 in 30 (98 merged), 2 dropped · thanks 1 in 1 · command 0 in 0, 1 dropped",
            ]
        );
        assert_eq!(
            replies_summary(&onair::bot::RepliesCounters::default()),
            ["replies: 0 people named in 0 messages, 0 of them merged, 0 dropped"]
        );
    }
}
