//! `onair ctl`: drives a running `onair serve` through its control API
//! (`/_emulator/…`, emulator/README.md), one control call per command.
//!
//! The emulator is found from `--url` (the base URL `onair serve` printed),
//! `--json-line FILE|-` (the line `onair serve --json` printed) or
//! `ONAIR_EMULATOR` (either of the two); that address and nothing else is
//! contacted (no proxy, no redirect followed).
//!
//! Output: one line saying what was done, or the JSON asked for (`ledger`,
//! `requests`, `frames`, `state`, `clock show`; any command's answer with
//! `--json`). Exit 0 done; 1 the emulator refused (its error text) or could
//! not be reached; 2 a usage error.

use std::io::{BufRead, Read, Write};
use std::process::ExitCode;
use std::time::Duration;

use clap::{Subcommand, ValueEnum};
use serde_json::{json, Map, Value};

/// How long one control call may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

const AFTER_HELP: &str = "\
The emulator: --url, --json-line or ONAIR_EMULATOR (a base URL or the --json line).
Exit codes: 0 done; 1 the emulator refused (its error text) or could not be
reached; 2 a usage error (one line on stderr).";

/// `onair ctl`'s options.
#[derive(clap::Args)]
#[command(after_help = AFTER_HELP, args_override_self = true)]
pub struct Args {
    /// The emulator's base URL as `onair serve` printed it (http://127.0.0.1:PORT)
    #[arg(
        long,
        value_name = "URL",
        env = "ONAIR_EMULATOR",
        hide_env_values = true,
        global = true,
        display_order = 100,
        allow_hyphen_values = true
    )]
    url: Option<String>,
    /// The line `onair serve --json` printed, in a file or on stdin (-); before --url
    #[arg(
        long,
        value_name = "FILE|-",
        global = true,
        display_order = 101,
        allow_hyphen_values = true
    )]
    json_line: Option<String>,
    /// Print the control API's JSON answer instead of a line saying what was done
    #[arg(long, global = true, display_order = 102)]
    json: bool,
    /// Indent the JSON printed
    #[arg(long, global = true, display_order = 103)]
    pretty: bool,
    #[command(subcommand)]
    command: Ctl,
}

/// The DJ a call is about.
#[derive(clap::Args, Clone, Default)]
struct Dj {
    /// The DJ (default: the first, main)
    #[arg(long, value_name = "NAME", allow_hyphen_values = true)]
    dj: Option<String>,
}

/// The DJ, and the app whose bots a call is about.
#[derive(clap::Args, Clone, Default)]
struct Target {
    #[command(flatten)]
    dj: Dj,
    /// Only the bots of this app (default: every app; for consent and revoke: the first app)
    #[arg(long, value_name = "ID", allow_hyphen_values = true)]
    client_id: Option<String>,
}

/// `on` or `off`.
#[derive(Clone, Copy, ValueEnum)]
enum OnOff {
    On,
    Off,
}

impl OnOff {
    fn on(self) -> bool {
        matches!(self, OnOff::On)
    }
}

/// The reason of an end frame (spec 4.6).
#[derive(Clone, Copy, ValueEnum)]
enum Reason {
    #[value(name = "LIVE_ENDED")]
    LiveEnded,
    #[value(name = "TOKEN_EXPIRED")]
    TokenExpired,
    #[value(name = "RECONNECT")]
    Reconnect,
}

impl Reason {
    fn name(self) -> &'static str {
        match self {
            Reason::LiveEnded => "LIVE_ENDED",
            Reason::TokenExpired => "TOKEN_EXPIRED",
            Reason::Reconnect => "RECONNECT",
        }
    }
}

/// An event kind (spec 2.6).
#[derive(Clone, Copy, ValueEnum)]
enum Kind {
    Chat,
    Presence,
    Like,
    Donation,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Chat => "chat",
            Kind::Presence => "presence",
            Kind::Like => "like",
            Kind::Donation => "donation",
        }
    }
}

/// The commands, one control call each.
#[derive(Subcommand)]
enum Ctl {
    /// End, drop or freeze the open event streams of a DJ's broadcast
    #[command(subcommand)]
    Stream(StreamCmd),
    /// Stop or resume the heartbeat comments of a DJ's streams (POST /wire)
    Heartbeats {
        /// off: the streams carry only events and end frames
        state: OnOff,
        #[command(flatten)]
        dj: Dj,
    },
    /// A DJ's consent: a new consent code, or the consent narrowed
    #[command(subcommand)]
    Consent(ConsentCmd),
    /// The DJ disconnects the bot: every token of the integration revoked, its streams cut
    Revoke {
        #[command(flatten)]
        target: Target,
    },
    /// Make the bot a manager of the DJ's broadcast or not (streams opened from now see presence)
    Manager {
        state: OnOff,
        #[command(flatten)]
        dj: Dj,
    },
    /// Make the next calls to an endpoint fail: 429 (--per-second, --daily, --chat-limit), 502, …
    Fail(FailArgs),
    /// Emit an event of any kind, with given fields or a whole payload
    #[command(after_help = "\
A field is KEY=VALUE; KEY may be a dotted path (user.id=u1); VALUE is JSON when
it reads as JSON (10, true, null, \"10\", {…}), else a string. Fields left out get
realistic values (emulator/README.md, `emit` defaults). Examples:
  onair ctl emit like --field type=PAID --field amount=10 --field combo=3
  onair ctl emit chat --field user.id=u1 --field user.nickname=Mina --field message=hello
  onair ctl emit donation --file payload.json")]
    Emit(EmitArgs),
    /// Send a delivered event again, the same frame with the same id (ids: `onair ctl frames`)
    Refire {
        /// The frame's id (`id:` line), e.g. 1732250000000-3
        #[arg(value_name = "FRAME_ID", allow_hyphen_values = true)]
        id: String,
        #[command(flatten)]
        dj: Dj,
    },
    /// The emulator's clock: show, advance, pause, resume
    #[command(subcommand)]
    Clock(ClockCmd),
    /// Start or end a DJ's broadcast
    #[command(subcommand)]
    Live(LiveCmd),
    /// Print the ledger: what each bot was delivered (JSON)
    Ledger {
        #[command(flatten)]
        target: Target,
    },
    /// Print the request log: the bot and token endpoint requests (JSON; no secret)
    Requests {
        /// Only those numbered above N
        #[arg(long, value_name = "N")]
        since: Option<u64>,
        /// Only this path (/v1/live/chat, /v1/oauth/token, …)
        #[arg(long, value_name = "PATH", allow_hyphen_values = true)]
        path: Option<String>,
        /// Only this app's requests
        #[arg(long, value_name = "ID", allow_hyphen_values = true)]
        client_id: Option<String>,
    },
    /// Print the frames written to the bots' streams, with their ids (JSON)
    Frames {
        /// Only those numbered above N in the write sequence
        #[arg(long, value_name = "N")]
        since: Option<u64>,
        #[command(flatten)]
        target: Target,
    },
    /// Print a DJ's state: on air, manager, open streams, … (JSON)
    State {
        #[command(flatten)]
        dj: Dj,
    },
}

#[derive(Subcommand)]
enum StreamCmd {
    /// Write an end frame with a reason, then close (POST /streams/end)
    End {
        /// LIVE_ENDED (the broadcast ended), TOKEN_EXPIRED (refresh, reconnect) or RECONNECT (reconnect at once)
        #[arg(
            long,
            value_name = "REASON",
            ignore_case = true,
            hide_possible_values = true
        )]
        reason: Reason,
        #[command(flatten)]
        target: Target,
    },
    /// Cut the connections without an end frame (POST /streams/drop)
    Drop {
        #[command(flatten)]
        target: Target,
    },
    /// Freeze: the connections stay open and carry nothing, not even heartbeats (POST /streams/stall)
    Freeze {
        /// At most N streams, oldest first (default: all)
        #[arg(long, value_name = "N")]
        count: Option<usize>,
        /// Give up on them (cut, no end frame) after this much emulator time (90s, 5m)
        #[arg(long = "for", value_name = "DURATION", value_parser = duration_ms)]
        for_ms: Option<i64>,
        #[command(flatten)]
        target: Target,
    },
}

#[derive(Subcommand)]
enum ConsentCmd {
    /// The DJ says yes: print a new consent code (POST /consent; a new --dj is created)
    Code {
        /// The permissions granted, space-separated (default: all)
        #[arg(long, value_name = "SCOPE", allow_hyphen_values = true)]
        scope: Option<String>,
        #[command(flatten)]
        target: Target,
    },
    /// Narrow the DJ's consent to what it has in common with SCOPE (POST /consent/narrow)
    Narrow {
        /// The permissions kept, space-separated ("events.chat chat.send")
        #[arg(long, value_name = "SCOPE", allow_hyphen_values = true)]
        scope: String,
        #[command(flatten)]
        target: Target,
    },
}

#[derive(Subcommand)]
enum ClockCmd {
    /// Print the clock (JSON)
    Show,
    /// Move emulator time forward: heartbeats and token expiry due fire at once
    Advance {
        /// How far: 90s, 5m, 1h30m, 250ms, 2d
        #[arg(value_name = "DURATION", value_parser = duration_ms)]
        by: i64,
    },
    /// Hold emulator time until `clock resume` (`clock advance` still moves it)
    Pause,
    /// Let emulator time run on from where it was held
    Resume,
}

#[derive(Subcommand)]
enum LiveCmd {
    /// The DJ goes on air (a new broadcast)
    Start {
        /// The broadcast's title
        #[arg(long, value_name = "TEXT", allow_hyphen_values = true)]
        title: Option<String>,
        #[command(flatten)]
        dj: Dj,
    },
    /// The broadcast ends: its streams get LIVE_ENDED
    End {
        #[command(flatten)]
        dj: Dj,
    },
}

/// `onair ctl fail`'s options.
#[derive(clap::Args)]
#[command(after_help = "\
Examples:
  onair ctl fail 429 --per-second                  # next GET /v1/live: the per-second quota's 429
  onair ctl fail 429 --daily --scope chat.send     # next chat: a daily 429 with x-ratelimit-daily-scope
  onair ctl fail 429 --chat-limit --times 3        # next 3 chats: 429 OAPI_MNGR_0302
  onair ctl fail 502 --path /v1/live/events        # next connect: 502 OAPI_MNGR_2302")]
struct FailArgs {
    /// The HTTP status to answer, 400..599
    #[arg(value_name = "STATUS", value_parser = clap::value_parser!(u16).range(400..=599))]
    status: u16,
    /// 429: the per-second quota's answer (empty body, x-ratelimit-remaining: 0)
    #[arg(long, group = "quota")]
    per_second: bool,
    /// 429: the daily quota's answer (empty body, Retry-After to midnight UTC of emulator time)
    #[arg(long, group = "quota")]
    daily: bool,
    /// With --daily: the permission whose daily limit was hit (x-ratelimit-daily-scope); its endpoint is the default path
    #[arg(long, value_name = "PERMISSION", requires = "daily")]
    scope: Option<String>,
    /// 429: the broadcast's chat limit (OAPI_MNGR_0302) on /v1/live/chat
    #[arg(long, group = "quota")]
    chat_limit: bool,
    /// The endpoint (default /v1/live; /v1/live/events for the stream's connect)
    #[arg(long, value_name = "PATH", allow_hyphen_values = true)]
    path: Option<String>,
    /// How many calls fail
    #[arg(long, value_name = "N", default_value_t = 1)]
    times: u64,
    /// The detailCode (default for 500: OAPI_MNGR_1002, for 502: OAPI_MNGR_2302)
    #[arg(long, value_name = "CODE", allow_hyphen_values = true)]
    detail_code: Option<String>,
}

/// `onair ctl emit`'s options.
#[derive(clap::Args)]
struct EmitArgs {
    /// The event's kind
    #[arg(value_name = "KIND")]
    kind: Kind,
    /// A field of the event's data, KEY=VALUE (repeatable)
    #[arg(long = "field", value_name = "KEY=VALUE", value_parser = field,
          action = clap::ArgAction::Append, allow_hyphen_values = true)]
    fields: Vec<Field>,
    /// The event's data as a JSON object (- for stdin); --field values go on top
    #[arg(long, value_name = "FILE|-", allow_hyphen_values = true)]
    file: Option<String>,
    #[command(flatten)]
    dj: Dj,
}

/// One `--field`: a dotted key path and its value.
#[derive(Clone, Debug, PartialEq)]
struct Field {
    path: Vec<String>,
    value: Value,
}

/// `KEY=VALUE`: KEY a dotted path of non-empty names, VALUE JSON when it
/// reads as JSON, else the string as it is.
fn field(text: &str) -> Result<Field, String> {
    let Some((key, value)) = text.split_once('=') else {
        return Err("takes KEY=VALUE (e.g. amount=10 or user.nickname=Mina)".to_owned());
    };
    let path: Vec<String> = key.split('.').map(str::to_owned).collect();
    if path.iter().any(String::is_empty) {
        return Err(format!(
            "{key:?} is not a field name (KEY=VALUE; KEY like amount or user.id)"
        ));
    }
    let value = serde_json::from_str(value).unwrap_or_else(|_| Value::String(value.to_owned()));
    Ok(Field { path, value })
}

/// A duration in milliseconds: one or more NUMBER UNIT pairs, units ms, s,
/// m, h, d (`90s`, `5m`, `1h30m`, `250ms`).
fn duration_ms(text: &str) -> Result<i64, String> {
    const HOW: &str = "takes a duration such as 90s, 5m, 1h30m, 250ms or 2d";
    let mut total: i64 = 0;
    let mut rest = text.trim();
    if rest.is_empty() {
        return Err(HOW.to_owned());
    }
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let unit_len = rest[digits..]
            .bytes()
            .take_while(u8::is_ascii_alphabetic)
            .count();
        if digits == 0 || unit_len == 0 {
            return Err(HOW.to_owned());
        }
        let n: i64 = rest[..digits].parse().map_err(|_| HOW.to_owned())?;
        let unit: i64 = match &rest[digits..digits + unit_len] {
            "ms" => 1,
            "s" => 1_000,
            "m" => 60_000,
            "h" => 3_600_000,
            "d" => 86_400_000,
            _ => return Err(HOW.to_owned()),
        };
        total = n
            .checked_mul(unit)
            .and_then(|ms| total.checked_add(ms))
            .ok_or_else(|| "is too long".to_owned())?;
        rest = &rest[digits + unit_len..];
    }
    Ok(total)
}

/// A mistake in how `onair ctl` was called (exit 2), or a refusal or an
/// unreachable emulator (exit 1).
enum Failure {
    Usage(String),
    Call(String),
}

/// One control call: method, path under `/_emulator`, query, body.
struct Call {
    post: bool,
    path: &'static str,
    query: Vec<(&'static str, String)>,
    body: Value,
}

impl Call {
    fn get(path: &'static str) -> Self {
        Self {
            post: false,
            path,
            query: Vec::new(),
            body: Value::Null,
        }
    }

    fn post(path: &'static str, body: Value) -> Self {
        Self {
            post: true,
            path,
            query: Vec::new(),
            body,
        }
    }

    fn query(mut self, name: &'static str, value: Option<impl ToString>) -> Self {
        if let Some(v) = value {
            self.query.push((name, v.to_string()));
        }
        self
    }
}

/// A JSON object of the given optional members (`None`s left out).
fn body(members: &[(&str, Option<Value>)]) -> Value {
    let map: Map<String, Value> = members
        .iter()
        .filter_map(|(k, v)| v.clone().map(|v| ((*k).to_owned(), v)))
        .collect();
    Value::Object(map)
}

fn dj_member(dj: &Dj) -> (&'static str, Option<Value>) {
    ("dj", dj.dj.clone().map(Value::String))
}

fn target_members(t: &Target) -> [(&'static str, Option<Value>); 2] {
    [
        dj_member(&t.dj),
        ("clientId", t.client_id.clone().map(Value::String)),
    ]
}

/// What a command asks: its call, and whether its answer is the output
/// (JSON) rather than a line made from it.
struct Plan {
    call: Call,
    shows_json: bool,
    /// The line saying what was done, from the answer.
    line: fn(&Value) -> String,
}

fn plan(command: Ctl) -> Result<Plan, Failure> {
    let act = |call: Call, line: fn(&Value) -> String| Plan {
        call,
        shows_json: false,
        line,
    };
    let show = |call: Call| Plan {
        call,
        shows_json: true,
        line: |_| String::new(),
    };
    Ok(match command {
        Ctl::Stream(StreamCmd::End { reason, target }) => {
            let [dj, client] = target_members(&target);
            act(
                Call::post(
                    "/streams/end",
                    body(&[("reason", Some(json!(reason.name()))), dj, client]),
                ),
                |a| format!("ended {} stream(s)", num(a, "ended")),
            )
        }
        Ctl::Stream(StreamCmd::Drop { target }) => act(
            Call::post("/streams/drop", body(&target_members(&target))),
            |a| format!("dropped {} stream(s) (no end frame)", num(a, "dropped")),
        ),
        Ctl::Stream(StreamCmd::Freeze {
            count,
            for_ms,
            target,
        }) => {
            let [dj, client] = target_members(&target);
            act(
                Call::post(
                    "/streams/stall",
                    body(&[
                        dj,
                        client,
                        ("count", count.map(|n| json!(n))),
                        ("forMs", for_ms.map(|n| json!(n))),
                    ]),
                ),
                |a| {
                    format!(
                        "froze {} stream(s): open, carrying nothing",
                        num(a, "stalled")
                    )
                },
            )
        }
        Ctl::Heartbeats { state, dj } => act(
            Call::post(
                "/wire",
                body(&[("heartbeats", Some(json!(state.on()))), dj_member(&dj)]),
            ),
            |a| {
                if a["heartbeats"] == json!(false) {
                    "heartbeats off: the streams carry only events and end frames".to_owned()
                } else {
                    "heartbeats on".to_owned()
                }
            },
        ),
        Ctl::Consent(ConsentCmd::Code { scope, target }) => {
            let [dj, client] = target_members(&target);
            act(
                Call::post(
                    "/consent",
                    body(&[("scope", scope.map(Value::String)), dj, client]),
                ),
                |a| {
                    format!(
                        "consent code {} for DJ {} (integration {}, scope \"{}\", redirect URI {})",
                        text(a, "code"),
                        text(a, "dj"),
                        text(a, "integration"),
                        text(a, "scope"),
                        text(a, "redirectUri"),
                    )
                },
            )
        }
        Ctl::Consent(ConsentCmd::Narrow { scope, target }) => {
            let [dj, client] = target_members(&target);
            act(
                Call::post(
                    "/consent/narrow",
                    body(&[("scope", Some(json!(scope))), dj, client]),
                ),
                |a| {
                    format!(
                        "consent of {} narrowed to \"{}\"",
                        text(a, "integration"),
                        text(a, "scope")
                    )
                },
            )
        }
        Ctl::Revoke { target } => act(
            Call::post("/integration/disconnect", body(&target_members(&target))),
            |a| {
                format!(
                    "{} disconnected: its tokens revoked, its streams cut",
                    text(a, "integration")
                )
            },
        ),
        Ctl::Manager { state, dj } => act(
            Call::post(
                "/state",
                body(&[("botManager", Some(json!(state.on()))), dj_member(&dj)]),
            ),
            |a| {
                let what = if a["botManager"] == json!(true) {
                    "is a manager"
                } else {
                    "is not a manager"
                };
                format!(
                    "the bot {what} of {}'s broadcast (streams opened from now on)",
                    text(a, "dj")
                )
            },
        ),
        Ctl::Fail(f) => act(fail_call(f)?, |a| {
            let times = a["times"].as_u64().unwrap_or(1);
            let calls = if times == 1 {
                "the next call".to_owned()
            } else {
                format!("the next {times} calls")
            };
            let what = match (a["quota"].as_str(), a["detailCode"].as_str()) {
                (Some("perSecond"), _) => " (the per-second quota)".to_owned(),
                (Some("daily"), _) => match a["scope"].as_str() {
                    Some(s) => format!(" (the daily quota of {s})"),
                    None => " (the app's daily quota)".to_owned(),
                },
                (_, Some(code)) => format!(" {code}"),
                _ => String::new(),
            };
            format!(
                "{calls} to {} will answer {}{what}",
                text(a, "path"),
                num(a, "status")
            )
        }),
        Ctl::Emit(e) => act(emit_call(e)?, |a| match a["id"].as_str() {
            Some(id) => format!("emitted {} to {} stream(s)", id, num(a, "delivered")),
            None => "not created: its sender is chat-banned in this broadcast".to_owned(),
        }),
        Ctl::Refire { id, dj } => act(
            Call::post("/refire", body(&[("id", Some(json!(id))), dj_member(&dj)])),
            |a| {
                format!(
                    "sent {} again to {} stream(s)",
                    text(a, "id"),
                    num(a, "delivered")
                )
            },
        ),
        Ctl::Clock(ClockCmd::Show) => show(Call::get("/clock")),
        Ctl::Clock(ClockCmd::Advance { by }) => {
            act(Call::post("/clock/advance", json!({ "ms": by })), |a| {
                format!("the clock is at {}", text(a, "iso"))
            })
        }
        Ctl::Clock(ClockCmd::Pause) => act(Call::post("/clock/pause", json!({})), |a| {
            format!("the clock is held at {} ms", num(a, "nowMs"))
        }),
        Ctl::Clock(ClockCmd::Resume) => act(Call::post("/clock/resume", json!({})), |a| {
            format!("the clock runs on from {} ms", num(a, "nowMs"))
        }),
        Ctl::Live(LiveCmd::Start { title, dj }) => act(
            Call::post(
                "/live/start",
                body(&[("title", title.map(Value::String)), dj_member(&dj)]),
            ),
            |a| format!("on air: liveId {}", num(a, "liveId")),
        ),
        Ctl::Live(LiveCmd::End { dj }) => act(
            Call::post("/live/end", body(&[dj_member(&dj)])),
            |a| match a["liveId"].as_u64() {
                Some(id) => format!(
                    "broadcast {id} ended: {} stream(s) got LIVE_ENDED",
                    num(a, "ended")
                ),
                None => "not on air: nothing to end".to_owned(),
            },
        ),
        Ctl::Ledger { target } => show(
            Call::get("/ledger")
                .query("dj", target.dj.dj)
                .query("clientId", target.client_id),
        ),
        Ctl::Requests {
            since,
            path,
            client_id,
        } => show(
            Call::get("/requests")
                .query("since", since)
                .query("path", path)
                .query("clientId", client_id),
        ),
        Ctl::Frames { since, target } => show(
            Call::get("/frames")
                .query("since", since)
                .query("dj", target.dj.dj)
                .query("clientId", target.client_id),
        ),
        Ctl::State { dj } => show(Call::get("/state").query("dj", dj.dj)),
    })
}

/// `onair ctl fail`'s call: the rules of which flags go together.
fn fail_call(f: FailArgs) -> Result<Call, Failure> {
    let quota_flag = f.per_second || f.daily || f.chat_limit;
    if f.status == 429 && !quota_flag && f.detail_code.is_none() {
        return Err(Failure::Usage(
            "fail 429 takes --per-second, --daily or --chat-limit (or a --detail-code)".to_owned(),
        ));
    }
    if f.status != 429 && quota_flag {
        return Err(Failure::Usage(
            "--per-second, --daily and --chat-limit go with status 429".to_owned(),
        ));
    }
    if quota_flag && f.detail_code.is_some() {
        return Err(Failure::Usage(
            "--detail-code does not go with --per-second, --daily or --chat-limit".to_owned(),
        ));
    }
    let (path, detail, quota) = if f.chat_limit {
        if f.path.as_deref().is_some_and(|p| p != "/v1/live/chat") {
            return Err(Failure::Usage(
                "--chat-limit is an answer of /v1/live/chat only".to_owned(),
            ));
        }
        (
            Some("/v1/live/chat".to_owned()),
            Some("OAPI_MNGR_0302".to_owned()),
            None,
        )
    } else if f.per_second {
        (
            f.path.or_else(|| Some("/v1/live".to_owned())),
            None,
            Some("perSecond"),
        )
    } else if f.daily {
        // With a scope and no path the emulator picks that permission's endpoint.
        let path = match (&f.path, &f.scope) {
            (None, None) => Some("/v1/live".to_owned()),
            _ => f.path,
        };
        (path, None, Some("daily"))
    } else {
        (
            f.path.or_else(|| Some("/v1/live".to_owned())),
            f.detail_code,
            None,
        )
    };
    Ok(Call::post(
        "/fail",
        body(&[
            ("path", path.map(Value::String)),
            ("status", Some(json!(f.status))),
            ("detailCode", detail.map(Value::String)),
            ("times", Some(json!(f.times))),
            ("quota", quota.map(|q| json!(q))),
            ("scope", f.scope.map(Value::String)),
        ]),
    ))
}

/// `onair ctl emit`'s call: the file's object (if any), the fields on top.
fn emit_call(e: EmitArgs) -> Result<Call, Failure> {
    let mut data = match e.file.as_deref() {
        None => Value::Object(Map::new()),
        Some(file) => {
            let text = read_input(file).map_err(Failure::Usage)?;
            let v: Value = serde_json::from_str(&text)
                .map_err(|err| Failure::Usage(format!("--file {file}: not JSON: {err}")))?;
            if !v.is_object() {
                return Err(Failure::Usage(format!(
                    "--file {file}: the event's data must be a JSON object"
                )));
            }
            v
        }
    };
    for f in e.fields {
        set(&mut data, &f.path, f.value).map_err(Failure::Usage)?;
    }
    Ok(Call::post(
        "/emit",
        body(&[
            ("event", Some(json!(e.kind.name()))),
            ("data", Some(data)),
            dj_member(&e.dj),
        ]),
    ))
}

/// Sets `path` in the object `into` to `value`, creating objects on the way.
fn set(into: &mut Value, path: &[String], value: Value) -> Result<(), String> {
    let Some((last, parents)) = path.split_last() else {
        return Err("an empty field name".to_owned());
    };
    let mut at = into;
    for (i, name) in parents.iter().enumerate() {
        let Value::Object(map) = at else {
            return Err(format!(
                "--field {}: {} is not an object",
                path.join("."),
                path[..i].join(".")
            ));
        };
        at = map
            .entry(name.clone())
            .or_insert_with(|| Value::Object(Map::new()));
    }
    match at {
        Value::Object(map) => {
            map.insert(last.clone(), value);
            Ok(())
        }
        _ => Err(format!(
            "--field {}: {} is not an object",
            path.join("."),
            parents.join(".")
        )),
    }
}

/// A member as text (`?` when missing).
fn text(a: &Value, key: &str) -> String {
    match &a[key] {
        Value::String(s) => s.clone(),
        Value::Null => "?".to_owned(),
        v => v.to_string(),
    }
}

/// A number member as text (`?` when missing).
fn num(a: &Value, key: &str) -> String {
    match &a[key] {
        Value::Number(n) => n.to_string(),
        _ => "?".to_owned(),
    }
}

/// The whole text of a file, or of stdin for `-`.
fn read_input(name: &str) -> Result<String, String> {
    if name == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| format!("cannot read stdin: {e}"))?;
        Ok(text)
    } else {
        std::fs::read_to_string(name).map_err(|e| format!("cannot read {name}: {e}"))
    }
}

/// The emulator's base URL (no trailing `/`, no `/_emulator`), from the
/// flags or `ONAIR_EMULATOR`.
fn base_url(args: &Args) -> Result<String, Failure> {
    let given = match (&args.json_line, &args.url) {
        (Some(file), _) => {
            let line = if file == "-" {
                let mut line = String::new();
                std::io::stdin()
                    .lock()
                    .read_line(&mut line)
                    .map_err(|e| Failure::Usage(format!("cannot read stdin: {e}")))?;
                line
            } else {
                let text = std::fs::read_to_string(file)
                    .map_err(|e| Failure::Usage(format!("--json-line: cannot read {file}: {e}")))?;
                text.lines().next().unwrap_or("").to_owned()
            };
            from_json_line(&line).map_err(|e| Failure::Usage(format!("--json-line {file}: {e}")))?
        }
        (None, Some(url)) if url.trim_start().starts_with('{') => {
            from_json_line(url).map_err(|e| Failure::Usage(format!("ONAIR_EMULATOR: {e}")))?
        }
        (None, Some(url)) => url.clone(),
        (None, None) => {
            return Err(Failure::Usage(
                "which emulator? give --url URL, --json-line FILE or ONAIR_EMULATOR".to_owned(),
            ))
        }
    };
    let trimmed = given.trim().trim_end_matches('/');
    let trimmed = trimmed.strip_suffix("/_emulator").unwrap_or(trimmed);
    let url = reqwest::Url::parse(trimmed)
        .map_err(|e| Failure::Usage(format!("{given:?} is not a URL: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
        return Err(Failure::Usage(format!(
            "{given:?} is not an http:// URL (onair serve prints http://127.0.0.1:PORT)"
        )));
    }
    Ok(trimmed.to_owned())
}

/// The base URL in a line `onair serve --json` printed.
fn from_json_line(line: &str) -> Result<String, String> {
    let v: Value = serde_json::from_str(line.trim())
        .map_err(|_| "not the JSON line `onair serve --json` prints".to_owned())?;
    if let Some(base) = v["baseUrl"].as_str() {
        return Ok(base.to_owned());
    }
    if let Some(control) = v["controlUrl"].as_str() {
        return Ok(control.to_owned());
    }
    Err("no baseUrl in it (is it the line `onair serve --json` prints?)".to_owned())
}

/// Sends the call; the answer's JSON, or what went wrong.
async fn send(base: &str, call: &Call) -> Result<Value, Failure> {
    let client = reqwest::Client::builder()
        .timeout(CALL_TIMEOUT)
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| Failure::Call(format!("no HTTP client: {e}")))?;
    let url = format!("{base}/_emulator{}", call.path);
    let request = if call.post {
        client
            .post(&url)
            .header("content-type", "application/json")
            .body(call.body.to_string())
    } else {
        client.get(&url).query(&call.query)
    };
    let response = request.send().await.map_err(|e| {
        Failure::Call(format!(
            "cannot reach the emulator at {base} ({}): is `onair serve` running?",
            why(&e)
        ))
    })?;
    let status = response.status();
    let bytes = response
        .bytes()
        .await
        .map_err(|e| Failure::Call(format!("{url}: the answer was cut ({})", why(&e))))?;
    let answer: Option<Value> = serde_json::from_slice(&bytes).ok();
    if !status.is_success() {
        let said = answer
            .as_ref()
            .and_then(|a| a["error"].as_str().map(str::to_owned))
            .unwrap_or_else(|| String::from_utf8_lossy(&bytes).chars().take(200).collect());
        return Err(Failure::Call(format!(
            "the emulator refused (HTTP {}): {said}",
            status.as_u16()
        )));
    }
    answer.ok_or_else(|| {
        Failure::Call(format!(
            "{url} answered {} with no JSON: is it `onair serve`?",
            status.as_u16()
        ))
    })
}

/// Why a request failed, in a few words ("connection refused", "timed out").
fn why(e: &reqwest::Error) -> String {
    if e.is_timeout() {
        return "timed out".to_owned();
    }
    let mut source: Option<&dyn std::error::Error> = Some(e);
    while let Some(s) = source {
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            return match io.kind() {
                std::io::ErrorKind::ConnectionRefused => "connection refused".to_owned(),
                _ => io.to_string(),
            };
        }
        source = s.source();
    }
    if e.is_connect() {
        "could not connect".to_owned()
    } else {
        "the connection failed".to_owned()
    }
}

/// The name of the command for messages (`stream end`, `emit`, …).
fn command_name(c: &Ctl) -> &'static str {
    match c {
        Ctl::Stream(StreamCmd::End { .. }) => "stream end",
        Ctl::Stream(StreamCmd::Drop { .. }) => "stream drop",
        Ctl::Stream(StreamCmd::Freeze { .. }) => "stream freeze",
        Ctl::Heartbeats { .. } => "heartbeats",
        Ctl::Consent(ConsentCmd::Code { .. }) => "consent code",
        Ctl::Consent(ConsentCmd::Narrow { .. }) => "consent narrow",
        Ctl::Revoke { .. } => "revoke",
        Ctl::Manager { .. } => "manager",
        Ctl::Fail(_) => "fail",
        Ctl::Emit(_) => "emit",
        Ctl::Refire { .. } => "refire",
        Ctl::Clock(_) => "clock",
        Ctl::Live(_) => "live",
        Ctl::Ledger { .. } => "ledger",
        Ctl::Requests { .. } => "requests",
        Ctl::Frames { .. } => "frames",
        Ctl::State { .. } => "state",
    }
}

/// Runs `onair ctl`.
pub fn run(args: Args) -> ExitCode {
    let name = command_name(&args.command);
    match run_inner(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Usage(message)) => {
            eprintln!("onair ctl {name}: {message} (try `onair ctl {name} --help`)");
            ExitCode::from(2)
        }
        Err(Failure::Call(message)) => {
            eprintln!("onair ctl {name}: {message}");
            ExitCode::from(1)
        }
    }
}

fn run_inner(args: Args) -> Result<(), Failure> {
    let base = base_url(&args)?;
    let (json_out, pretty) = (args.json, args.pretty);
    let plan = plan(args.command)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::Call(format!("cannot start the runtime: {e}")))?;
    let answer = rt.block_on(send(&base, &plan.call))?;
    let out = if plan.shows_json || json_out {
        if pretty {
            serde_json::to_string_pretty(&answer).unwrap_or_else(|_| answer.to_string())
        } else {
            answer.to_string()
        }
    } else {
        (plan.line)(&answer)
    };
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{out}");
    let _ = stdout.flush();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_in_units_and_nothing_else() {
        assert_eq!(duration_ms("90s"), Ok(90_000));
        assert_eq!(duration_ms("5m"), Ok(300_000));
        assert_eq!(duration_ms("1h30m"), Ok(5_400_000));
        assert_eq!(duration_ms("250ms"), Ok(250));
        assert_eq!(duration_ms("2d"), Ok(172_800_000));
        for bad in [
            "",
            "90",
            "s",
            "5x",
            "1.5s",
            "-5s",
            "5 m",
            "99999999999999999999d",
        ] {
            assert!(duration_ms(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn fields_are_dotted_keys_with_json_or_text_values() {
        assert_eq!(
            field("amount=10"),
            Ok(Field {
                path: vec!["amount".into()],
                value: json!(10)
            })
        );
        assert_eq!(
            field("user.nickname=Mina=1").map(|f| (f.path, f.value)),
            Ok((vec!["user".into(), "nickname".into()], json!("Mina=1")))
        );
        assert_eq!(field("message=\"10\"").map(|f| f.value), Ok(json!("10")));
        assert_eq!(field("combo=null").map(|f| f.value), Ok(Value::Null));
        for bad in ["amount", "=10", "user.=x", ".id=x"] {
            assert!(field(bad).is_err(), "{bad:?}");
        }
        let mut data = json!({"user": {"id": "u1"}, "amount": 1});
        set(
            &mut data,
            &["user".into(), "nickname".into()],
            json!("Mina"),
        )
        .expect("set");
        set(&mut data, &["amount".into()], json!(5)).expect("set");
        assert_eq!(
            data,
            json!({"user": {"id": "u1", "nickname": "Mina"}, "amount": 5})
        );
        assert!(set(&mut data, &["amount".into(), "x".into()], json!(1)).is_err());
    }

    #[test]
    fn the_emulator_is_found_in_the_json_line() {
        let line = r#"{"baseUrl":"http://127.0.0.1:4000","controlUrl":"http://127.0.0.1:4000/_emulator","clientId":"x","clientSecret":"s","redirectUri":"r"}"#;
        assert_eq!(from_json_line(line).as_deref(), Ok("http://127.0.0.1:4000"));
        assert!(from_json_line("http://127.0.0.1:4000").is_err());
        assert!(from_json_line("{}").is_err());
    }
}
