//! The TypeScript types of everything the package hands out as JSON,
//! generated from Rust types: `wasm/npm/types.d.ts` is this module's output
//! (`cargo test -p onair-wasm` fails when the committed file differs;
//! `ONAIR_BLESS=1` rewrites it).
//!
//! - The payloads come from the core's own types, which derive ts-rs under
//!   its `ts` feature: the events (`Chat`, `Presence`, …), the REST resources
//!   (`Broadcast`, `FanRanking`, …), `Explanation`, `Status`, the tally's
//!   `PersonTotals`, the kit's configuration (`KitConfig`), the wire enums.
//!   A field added to one of them appears in the `.d.ts` without an edit.
//! - The JSON lines themselves (actions, items, notices, call results,
//!   stops) are written by the core's private views in
//!   [`onair::json`]; the enums below give them the shape of a
//!   discriminated union, so `switch (action.type)`, `switch (ev.event)`,
//!   `switch (result.failure)` and `switch (stop.code)` narrow. They hold the
//!   core's types for every payload. `scripts/test-node` type-checks every
//!   line of the core's pinned JSON formats
//!   (`core/tests/snapshots/json_formats__every_json_line_format_is_pinned.snap`)
//!   against these types with `tsc --strict`: a field or variant the core
//!   adds to a line and this file lacks is an excess property or an
//!   unmatched union member there.
//!
//! Numbers: every `u64` of the JSON is a JS `number` (`JSON.parse`), so the
//! `bigint` ts-rs writes for `u64` is written `number`.

#![allow(dead_code, non_snake_case, clippy::upper_case_acronyms)]

use onair::api::{Explanation, ListenersPage};
use onair::event::{Chat, Donation, End, Like, Presence, User};
use onair::kit::tally::PersonTotals;
use onair::kit::{Allowed, KitConfig, Role};
use onair::{Broadcast, FanRanking, Listener, Status};
use ts_rs::{TypeVisitor, TS};

/// The endpoints (`onair explain`'s names).
#[derive(TS)]
#[ts(rename_all = "lowercase")]
enum Endpoint {
    Token,
    Revoke,
    Live,
    Listeners,
    Fans,
    Events,
    Chat,
}

/// A request to send, ready for `fetch` (see `fetchArgs`). Holds secrets:
/// never log it.
#[derive(TS)]
#[ts(rename = "OnairRequest")]
struct Request {
    endpoint: Endpoint,
    method: Method,
    url: String,
    headers: Vec<(String, String)>,
    /// The body as text; `""` for a GET (which `fetch` must not be given).
    body: String,
}

#[derive(TS)]
#[ts(rename_all = "UPPERCASE")]
enum Method {
    Get,
    Post,
}

/// A typed service event: `switch (ev.event)` narrows `data`.
#[derive(TS)]
#[ts(tag = "event", rename_all = "camelCase")]
enum EventLine {
    Chat {
        /// The frame's id (`<epochMillis>-<offset>`), or null when it had none.
        id: Option<String>,
        data: Chat,
    },
    Presence {
        id: Option<String>,
        data: Presence,
    },
    Like {
        id: Option<String>,
        data: Like,
    },
    Donation {
        id: Option<String>,
        data: Donation,
    },
    End {
        id: Option<String>,
        data: End,
    },
}

/// The chat behind a command.
#[derive(TS)]
#[ts(tag = "event", rename_all = "camelCase")]
enum ChatRef {
    Chat { id: Option<String>, data: Chat },
}
/// The hearts behind a milestone.
#[derive(TS)]
#[ts(tag = "event", rename_all = "camelCase")]
enum LikeRef {
    Like { id: Option<String>, data: Like },
}
/// The donation behind a milestone.
#[derive(TS)]
#[ts(tag = "event", rename_all = "camelCase")]
enum DonationRef {
    Donation { id: Option<String>, data: Donation },
}
/// The `LIVE_ENDED` frame behind a broadcast's end.
#[derive(TS)]
#[ts(tag = "event", rename_all = "camelCase")]
enum EndRef {
    End { id: Option<String>, data: End },
}

#[derive(TS)]
#[ts(rename_all = "snake_case")]
enum DecodeErrorCode {
    InvalidJson,
    InvalidEvent,
    FrameTooLarge,
    IncompleteFrame,
}

/// A frame that could not be decoded; the stream goes on.
#[derive(TS)]
struct ErrorLine {
    error: DecodeErrorCode,
    event: Option<String>,
    id: Option<String>,
    /// The frame's data as received (a prefix for an oversized frame).
    raw: String,
    message: String,
}

/// A decode error as an item (`{"type":"error",…}`).
#[derive(TS)]
#[ts(tag = "type", rename_all = "camelCase")]
enum ErrorItem {
    Error(ErrorLine),
}

/// One thing the stream said (`onair decode`'s lines): `switch (item.type)`
/// narrows.
#[derive(TS)]
#[ts(tag = "type", rename_all = "camelCase")]
enum OnairItem {
    /// A service event.
    Event(EventLine),
    /// A frame whose event name this version does not know, kept raw.
    Unknown {
        event: String,
        id: Option<String>,
        data: String,
    },
    /// The service's `:heartbeat` comment.
    Heartbeat,
    /// Any other comment.
    Comment { text: String },
    /// The server's reconnection time.
    Retry { ms: u64 },
    /// A frame that could not be decoded.
    Error(ErrorLine),
}

/// Why the bot stopped; `switch (stop.code)` narrows.
#[derive(TS)]
#[ts(tag = "code", rename_all = "snake_case")]
enum Stop {
    /// The DJ must authorize again (a new consent code to `authorize`).
    Reauthorize {
        message: String,
        reason: String,
    },
    /// The DJ must consent again, with these permissions.
    Reconsent {
        message: String,
        missing: Vec<String>,
    },
    JoinForbidden {
        message: String,
    },
    InvalidClient {
        message: String,
    },
    FixRequest {
        message: String,
        problem: Explanation,
    },
    Unexpected {
        message: String,
        problem: Explanation,
    },
    ShutDown {
        message: String,
    },
}

/// A notice's level: log its `message` as a warning (something was lost,
/// refused or cannot be reached) or as information.
#[derive(TS)]
#[ts(rename_all = "lowercase")]
enum Level {
    Warn,
    Info,
}

/// Why the bot asks for a connection to be closed or a request dropped.
#[derive(TS)]
#[ts(rename_all = "snake_case")]
enum CloseReason {
    Ended,
    Silent,
    TimedOut,
    Stopping,
}

/// How a request failed to reach the service.
#[derive(TS)]
#[ts(rename_all = "snake_case")]
enum Unreached {
    NotSent,
    NoResponse,
    TimedOut,
}

/// Why app calls were given up on.
#[derive(TS)]
#[ts(rename_all = "snake_case")]
enum GiveUpReason {
    Cancelled,
    QuotaBlocked,
    Refused,
    QueueFull,
    Transport,
    InvalidAnswer,
}

/// Why replies were dropped, never sent.
#[derive(TS)]
#[ts(rename_all = "snake_case")]
enum ReplyDropReason {
    Stale,
    Ended,
    Refused,
    GivenUp,
    QueueFull,
    Stopped,
}

/// Worth a log line; needs no action. `switch (notice.kind)` narrows.
/// Every notice ends with `message` (its log line) and `level`, so one of
/// any kind is logged by printing its message at its level.
#[derive(TS)]
#[ts(tag = "kind", rename_all = "camelCase")]
enum Notice {
    FrameSkipped {
        error: ErrorItem,
        message: String,
        level: Level,
    },
    UnknownEvent {
        event: String,
        data: String,
        message: String,
        level: Level,
    },
    Problem {
        endpoint: Endpoint,
        problem: Explanation,
        message: String,
        level: Level,
    },
    /// A call made while the bot waits for consent: it goes out afterwards.
    CallHeld {
        call: u64,
        message: String,
        level: Level,
    },
    ReconnectStormBraked {
        untilMs: u64,
        message: String,
        level: Level,
    },
    /// Someone ran a configured command they may not run.
    CommandRefused {
        name: String,
        user: User,
        role: Role,
        needed: Allowed,
        message: String,
        level: Level,
    },
    /// The service could not be reached: the first failure at once, then at
    /// most one every 30 s while failures go on (`failures` since `sinceMs`).
    Unreachable {
        endpoint: Endpoint,
        failure: Unreached,
        failures: u64,
        sinceMs: u64,
        message: String,
        level: Level,
    },
    /// The service answered again after `unreachable`.
    Reachable {
        failures: u64,
        sinceMs: u64,
        message: String,
        level: Level,
    },
    /// `count` app calls given up on (each also has its `done`); at most one
    /// such notice every 5 s per endpoint and reason.
    GaveUp {
        endpoint: Endpoint,
        reason: GiveUpReason,
        count: u64,
        message: String,
        level: Level,
    },
    /// `people` replies of `replyKind` dropped, never sent (not out within
    /// their freshness, the broadcast ended, refused, …): one notice per
    /// kind and reason per poll; counted in the status.
    RepliesDropped {
        replyKind: onair::kit::ReplyKind,
        people: u64,
        reason: ReplyDropReason,
        message: String,
        level: Level,
    },
    /// A daily quota blocks `scope` (`null`: every call of the app) until
    /// `untilMs`; said once per block.
    DailyQuotaReached {
        scope: Option<String>,
        untilMs: u64,
        message: String,
        level: Level,
    },
}

/// Why an app call failed: `switch (result.failure)` narrows.
#[derive(TS)]
#[ts(tag = "failure", rename_all = "snake_case")]
enum CallFailure {
    Problem { problem: Explanation },
    QuotaBlocked { untilMs: u64 },
    InvalidBody { message: String },
    Pager { message: String },
    Transport,
    Cancelled,
    QueueFull { message: String },
    Stopped { stop: Stop },
}

/// The answer to an app call: `switch (result.kind)` narrows.
#[derive(TS)]
#[ts(tag = "kind", rename_all = "camelCase")]
enum CallResult {
    Broadcast { broadcast: Broadcast },
    Listeners { listeners: Vec<Listener> },
    Fans { fans: FanRanking },
    ChatSent,
    Failed(CallFailure),
}

/// One broadcast's totals (the emulator ledger's `totals` shape).
#[derive(TS)]
#[ts(rename = "TallyJson")]
struct Tally {
    hearts: u64,
    donated: u64,
    attendance: u64,
    /// By person id (visited as a dependency in `render`).
    #[ts(type = "Record<string, PersonTotals>")]
    people: (),
}

#[derive(TS)]
#[ts(rename_all = "camelCase")]
enum ArrivalKind {
    First,
    Back,
}

/// A configured milestone was crossed: `switch (m.kind)` narrows.
#[derive(TS)]
#[ts(tag = "kind", rename_all = "camelCase")]
enum Milestone {
    /// The broadcast's hearts reached a multiple of the step.
    Hearts {
        reached: u64,
        total: u64,
        event: LikeRef,
    },
    /// One person's donations reached a multiple of the step.
    Donated {
        reached: u64,
        total: u64,
        user: User,
        event: DonationRef,
    },
}

/// What to do next: `switch (action.type)` narrows; an `event` action is an
/// `OnairEvent`.
#[derive(TS)]
#[ts(tag = "type", rename_all = "camelCase")]
enum Action {
    /// Send `request`; report with `onResponse` or `onTransportError`. The
    /// bot keeps `timeoutMs` itself; give the client no shorter timeout.
    Send {
        id: u64,
        request: Request,
        timeoutMs: u64,
    },
    /// Open this streaming GET (no whole-body timeout); report with `onStream*`.
    OpenStream {
        id: u64,
        request: Request,
    },
    /// Close this connection or drop this request (abort it), for `reason`;
    /// late reports are harmless.
    CloseStream {
        id: u64,
        reason: CloseReason,
    },
    /// A stream event.
    Event(EventLine),
    Notice {
        notice: Notice,
    },
    /// The answer to an app call.
    Done {
        call: u64,
        result: CallResult,
    },
    /// Save `tokens` (the stored form, a secret); pass it as `tokens` on restart.
    PersistTokens {
        generation: u64,
        tokens: String,
    },
    /// An app timer set with `schedule` or `every` is due.
    Timer {
        tag: String,
    },
    /// Get a consent code from the DJ and give it to `bot.authorize`.
    NeedsAuthorization,
    /// Sleep until `untilMs` or until a report arrives; `null`: only a report moves the bot.
    Wait {
        untilMs: Option<u64>,
    },
    /// The bot stopped; a person must act. Sticky.
    Stopped {
        stop: Stop,
    },
    /// A configured command, run by someone allowed to; answer with `say`.
    Command {
        name: String,
        args: Vec<String>,
        rest: String,
        user: User,
        role: Role,
        event: ChatRef,
    },
    /// Someone to greet: first seen in this broadcast, or back after an absence.
    Arrival {
        kind: ArrivalKind,
        awayMs: Option<u64>,
        user: User,
        isManager: bool,
        liveId: Option<u64>,
        event: EventLine,
    },
    /// A configured milestone was crossed.
    Milestone(Milestone),
    /// The broadcast ended: its final tally (`event`: null when the end was inferred).
    BroadcastEnded {
        liveId: Option<u64>,
        tally: Tally,
        event: Option<EndRef>,
    },
    /// The kit's memory changed: save `state` before acting on what follows;
    /// pass it as `kitState` on restart.
    PersistState {
        state: String,
    },
}

/// The configured kit's current broadcast (`bot.kit`).
#[derive(TS)]
struct KitView {
    liveId: Option<u64>,
    tally: Tally,
}

/// Every type of the file and of its dependencies, once each, as
/// (name, declaration): written in name order (ts-rs visits dependencies in
/// an order that changes from build to build).
struct Collect {
    seen: Vec<String>,
    out: Vec<(String, String)>,
}

impl TypeVisitor for Collect {
    fn visit<T: TS + 'static + ?Sized>(&mut self) {
        if T::output_path().is_none() {
            return;
        }
        let name = T::ident();
        if self.seen.contains(&name) {
            return;
        }
        self.seen.push(name.clone());
        T::visit_dependencies(self);
        let docs = T::docs().unwrap_or_default();
        let decl = without_rust_examples(&format!("{docs}export {}", T::decl()));
        self.out.push((name, decl));
    }
}

/// The declaration without the Rust examples of its docs (fenced blocks).
fn without_rust_examples(decl: &str) -> String {
    let mut out = String::new();
    let mut fenced = false;
    for line in decl.lines() {
        let text = line.trim_start().trim_start_matches('*').trim();
        if text.starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            out.push_str(line);
            out.push('\n');
        }
    }
    out.truncate(out.trim_end().len());
    // A doc left ending in an empty line (` *`) before its close.
    out.replace(" *\n */", " */")
}

/// The text of `wasm/npm/types.d.ts`.
fn render() -> String {
    let mut c = Collect {
        seen: Vec::new(),
        out: Vec::new(),
    };
    c.visit::<PersonTotals>();
    c.visit::<OnairItem>();
    c.visit::<Action>();
    c.visit::<Status>();
    c.visit::<KitConfig>();
    c.visit::<KitView>();
    c.visit::<ListenersPage>();
    c.visit::<crate::http::Quota<'static>>();
    let mut text = String::from(
        "// Generated from the Rust types by wasm/src/types.rs (ts-rs): do not edit.\n\
         // `cargo test -p onair-wasm` fails when this file differs from them;\n\
         // ONAIR_BLESS=1 cargo test -p onair-wasm types rewrites it.\n\n",
    );
    c.out.sort();
    for (_, decl) in c.out {
        text.push_str(&decl.replace("bigint", "number"));
        text.push_str("\n\n");
    }
    text.truncate(text.trim_end().len());
    text.push('\n');
    text
}

#[test]
fn the_committed_types_are_the_generated_ones() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("npm/types.d.ts");
    let generated = render();
    if std::env::var_os("ONAIR_BLESS").is_some() {
        std::fs::write(&path, &generated).expect("write npm/types.d.ts");
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "wasm/npm/types.d.ts differs from the types generated from the Rust types: \
         run ONAIR_BLESS=1 cargo test -p onair-wasm types, and review the diff"
    );
}

/// The JSON Schema under `schema/` is the core's (feature `schema`): checked
/// here too, so the one command that rewrites this package's types,
/// `ONAIR_BLESS=1 cargo test -p onair-wasm types`, rewrites the schema with
/// them (the core's `tests/schema.rs` checks the same files).
#[test]
fn the_committed_schema_is_the_generated_one() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../schema");
    let bless = std::env::var_os("ONAIR_BLESS").is_some();
    let mut stale = Vec::new();
    for (name, text) in onair::json::schema_files() {
        let path = dir.join(name);
        if std::fs::read_to_string(&path).unwrap_or_default() != text {
            if bless {
                std::fs::create_dir_all(&dir).expect("schema/ is writable");
                std::fs::write(&path, &text).expect("write the schema file");
            } else {
                stale.push(name);
            }
        }
    }
    assert!(
        stale.is_empty(),
        "schema/ differs from the schema generated from the Rust types: {stale:?}; \
         run ONAIR_BLESS=1 cargo test -p onair-wasm types, and review the diff"
    );
}
