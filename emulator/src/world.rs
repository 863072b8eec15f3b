//! The emulator's state: apps, DJs, integrations, tokens, broadcasts (the
//! room, the fan ranking, open streams), quotas, faults, logs and the ledger,
//! behind one mutex. The rules that touch several of these live here once:
//! joining the room, fanning an event out (permission filter, manager level,
//! no echo), ending or dropping streams, heartbeats and token expiry.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use bytes::Bytes;
use serde::Serialize;
use tokio::sync::broadcast;

use crate::clock::{iso, Clock};
use crate::events::{self, Defaults, EventInfo, Kind};
use crate::ledger::{BotLedger, Ledger, WriteSeq, WrittenFrame};
use crate::quota::Quotas;
pub use crate::requests::RequestRecord;
use crate::rng::Rng;
pub use crate::room::{ListenerRow, Live, Member};
use crate::scope::Scope;
use crate::stream::{self, Frame, Offer, StreamBody, StreamHandle};
use crate::wire::{event_frame, to_json, End, WireConfig};

/// Fixed settings of one emulator.
#[derive(Debug, Clone)]
pub struct Config {
    /// Heartbeat interval in emulator milliseconds (spec: 15 000).
    pub heartbeat_ms: i64,
    /// Frames a stream may have queued before it is cut (slow reader).
    pub stream_buffer: usize,
    /// Listeners per page.
    pub page_size: usize,
    /// Access token lifetime in ms (spec: 3600 s).
    pub access_ttl_ms: i64,
    /// Refresh token lifetime in ms (spec: 30 days).
    pub refresh_ttl_ms: i64,
    /// Code lifetime in ms (spec: 60 s).
    pub code_ttl_ms: i64,
    /// Real time a client has to send its headers, then its body.
    pub read_deadline: std::time::Duration,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            heartbeat_ms: 15_000,
            stream_buffer: 8192,
            page_size: 20,
            access_ttl_ms: 3_600_000,
            refresh_ttl_ms: 30 * 86_400_000,
            code_ttl_ms: 60_000,
            read_deadline: std::time::Duration::from_secs(10),
        }
    }
}

/// A registered app (client).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct App {
    /// UUID client id.
    pub client_id: String,
    /// Client secret.
    pub client_secret: String,
    /// Registered redirect URI.
    pub redirect_uri: String,
    /// The bot account's nickname.
    #[serde(skip)]
    pub bot_nickname: String,
    /// Suspended by the service: `invalid_client` and 401 everywhere.
    #[serde(skip)]
    pub suspended: bool,
}

/// One app × DJ consent.
#[derive(Debug)]
pub struct Integration {
    /// Id shown in the ledger.
    pub id: String,
    /// App index.
    pub app: usize,
    /// DJ index.
    pub dj: usize,
    /// The DJ's current consent (`None` once disconnected).
    pub consent: Option<Scope>,
    /// The bot account's person id for this DJ (spec 2.5: survives re-consent).
    pub bot_user_id: String,
}

/// A consent code.
#[derive(Debug)]
pub struct Code {
    /// Integration index.
    pub integration: usize,
    /// Redirect URI of the consent.
    pub redirect_uri: String,
    /// Expiry (emulator ms).
    pub expires_at: i64,
    /// Exchanged already.
    pub used: bool,
}

/// An access token.
#[derive(Debug)]
pub struct Access {
    /// Integration index.
    pub integration: usize,
    /// Scope at issue.
    pub scope: Scope,
    /// Expiry.
    pub expires_at: i64,
    /// When revoked.
    pub revoked_at: Option<i64>,
}

/// A refresh token.
#[derive(Debug)]
pub struct Refresh {
    /// Integration index.
    pub integration: usize,
    /// Expiry.
    pub expires_at: i64,
    /// When revoked (rotation, revoke, theft, disconnect).
    pub revoked_at: Option<i64>,
}

/// A DJ and their broadcast state.
#[derive(Debug)]
pub struct Dj {
    /// Name in the control API.
    pub name: String,
    /// The DJ's person id (kept out of tallies).
    pub user_id: String,
    /// The DJ's nickname.
    pub nickname: String,
    /// The broadcast on air, if any (boxed: an idle DJ stays small).
    pub live: Option<Box<Live>>,
    /// Chat frozen.
    pub chat_frozen: bool,
    /// Bots of this DJ are managers (applies from the next connection).
    pub bot_manager: bool,
    /// Bots chat-banned (this broadcast).
    pub bot_chat_banned: bool,
    /// Bots blocked (403 0209).
    pub bot_blocked: bool,
    /// Bots kicked (this broadcast; 403 0209 on joining).
    pub bot_kicked: bool,
    /// Wire variations of this DJ's streams.
    pub wire: WireConfig,
    last_id_ms: i64,
    id_offset: u64,
}

/// An injected failure.
#[derive(Debug, Clone)]
pub struct Fail {
    /// Path it applies to.
    pub path: String,
    /// Status to answer.
    pub status: u16,
    /// detailCode (none: the gateway shape).
    pub detail_code: Option<String>,
    /// Calls left.
    pub times: u64,
    /// A 429 answered as the call quota answers it (its headers, the
    /// request log's facts); `None`: as `status` and `detail_code` say.
    pub quota: Option<FailQuota>,
}

/// Which call quota an injected 429 stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailQuota {
    /// The per-second bucket (empty body, `x-ratelimit-remaining: 0`).
    PerSecond,
    /// The daily quota (empty body, `Retry-After` to midnight UTC of
    /// emulator time); `scope`: the permission named in
    /// `x-ratelimit-daily-scope` (`None`: the whole app).
    Daily {
        /// The permission whose daily limit was hit.
        scope: Option<crate::scope::Perm>,
    },
}

/// A chat message a bot posted.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChatRecord {
    /// Emulator time.
    pub at_ms: i64,
    /// ISO time.
    pub time: String,
    /// DJ name.
    pub dj: String,
    /// Broadcast.
    pub live_id: u64,
    /// App client id.
    pub client_id: String,
    /// Integration id.
    pub integration: String,
    /// The text.
    pub message: String,
}

/// An error of a bot endpoint: status, detailCode (none: gateway shape), message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// HTTP status.
    pub status: u16,
    /// detailCode.
    pub detail: Option<&'static str>,
    /// Human message.
    pub message: String,
}

impl ApiError {
    /// Shorthand.
    pub fn new(status: u16, detail: Option<&'static str>, message: &str) -> Self {
        Self {
            status,
            detail,
            message: message.to_owned(),
        }
    }

    /// 404 `OAPI_MNGR_0301`.
    pub fn not_on_air() -> Self {
        Self::new(404, Some("OAPI_MNGR_0301"), "The DJ is not on air.")
    }

    /// 403 `OAPI_MNGR_0209`.
    pub fn blocked() -> Self {
        Self::new(
            403,
            Some("OAPI_MNGR_0209"),
            "The bot cannot join this broadcast.",
        )
    }
}

const MAX_REQUESTS: usize = 20_000;

/// How many of the latest event frames (all DJs together) can be sent again
/// by `POST /_emulator/refire`.
pub const RECENT_EVENTS: usize = 10_000;

/// At most this many bytes of frames are kept for `refire` (the oldest go
/// first): 10 000 frames of the usual few hundred bytes fit many times over.
pub const RECENT_BYTES: usize = 16 << 20;

/// An event frame as it was sent, kept for `refire`.
#[derive(Debug)]
struct Recent {
    dj: usize,
    live_id: u64,
    id: String,
    kind: Kind,
    frame: Arc<Frame>,
}

/// Why an event could not be sent again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RefireError {
    /// The DJ is not on air.
    NotOnAir,
    /// No event with that id among the latest [`RECENT_EVENTS`] of the
    /// DJ's current broadcast.
    Unknown,
}

/// A stalled stream (`POST /_emulator/streams/stall`): out of its broadcast's
/// fan-out, its handle kept so that the connection stays open.
#[derive(Debug)]
pub struct Stalled {
    /// The DJ whose broadcast it was part of.
    pub dj: usize,
    /// The handle (holding it keeps the connection open).
    pub handle: StreamHandle,
    /// When the emulator gives up on it and drops it (emulator ms), if ever.
    pub give_up_at: Option<i64>,
}

/// Everything the emulator knows.
#[derive(Debug)]
pub struct World {
    /// Fixed settings.
    pub cfg: Config,
    /// Randomness for ids and defaults.
    pub rng: Rng,
    /// The fleet's plans, when a fleet runs (the `fleet` module runs it).
    pub fleet: Option<crate::fleet::plan::FleetState>,
    /// Apps; index 0 is the default app.
    pub apps: Vec<App>,
    /// DJs; index 0 is the default DJ.
    pub djs: Vec<Dj>,
    /// Integrations.
    pub integrations: Vec<Integration>,
    /// Codes.
    pub codes: HashMap<String, Code>,
    /// Access tokens.
    pub access: HashMap<String, Access>,
    /// Refresh tokens.
    pub refresh: HashMap<String, Refresh>,
    /// Quotas.
    pub quotas: Quotas,
    /// Injected failures.
    pub fails: Vec<Fail>,
    /// Bot chat posts.
    pub chat_log: Vec<ChatRecord>,
    /// Requests received (the latest 20 000).
    pub requests: VecDeque<RequestRecord>,
    /// Requests received in all.
    pub request_count: u64,
    /// Requests received by path.
    pub path_counts: HashMap<String, u64>,
    /// Stalled streams, until their bot closes them or the emulator gives up.
    pub stalled: Vec<Stalled>,
    /// The latest [`RECENT_EVENTS`] event frames sent (at most
    /// [`RECENT_BYTES`] of them), for `refire`.
    recent: VecDeque<Recent>,
    /// The bytes of the frames in `recent`.
    recent_bytes: usize,
    ledger: Vec<(usize, u64, Vec<Arc<BotLedger>>)>,
    /// The ledger's write sequence (frames written, connections opened and
    /// closed), shared by every bot's ledger: `POST /_emulator/mark` reads it.
    pub writes: Arc<WriteSeq>,
    next_live_id: u64,
    next_stream_id: u64,
    log: broadcast::Sender<String>,
    /// Shared clock.
    pub clock: Arc<Clock>,
}

impl World {
    /// A world with one app and one DJ (`"main"`).
    pub fn new(cfg: Config, seed: u64, clock: Arc<Clock>, log: broadcast::Sender<String>) -> Self {
        let mut w = Self {
            cfg,
            rng: Rng::new(seed),
            fleet: None,
            apps: Vec::new(),
            djs: Vec::new(),
            integrations: Vec::new(),
            codes: HashMap::new(),
            access: HashMap::new(),
            refresh: HashMap::new(),
            quotas: Quotas::default(),
            fails: Vec::new(),
            chat_log: Vec::new(),
            requests: VecDeque::new(),
            request_count: 0,
            path_counts: HashMap::new(),
            stalled: Vec::new(),
            recent: VecDeque::new(),
            recent_bytes: 0,
            ledger: Vec::new(),
            writes: Arc::new(WriteSeq::new()),
            next_live_id: 1_000_001 + (seed % 1000) * 1000,
            next_stream_id: 1,
            log,
            clock,
        };
        w.add_app("http://127.0.0.1/callback");
        w.add_dj("main");
        w
    }

    /// Emits one readable line to `onair serve` (and any subscriber).
    pub fn log(&self, line: String) {
        let _ = self.log.send(line);
    }

    /// Registers an app; returns its index.
    pub fn add_app(&mut self, redirect_uri: &str) -> usize {
        let n = self.apps.len() + 1;
        let app = App {
            client_id: self.rng.uuid(),
            client_secret: self.rng.token("cs_", 2),
            redirect_uri: redirect_uri.to_owned(),
            bot_nickname: if n == 1 {
                "onair bot".to_owned()
            } else {
                format!("onair bot {n}")
            },
            suspended: false,
        };
        self.apps.push(app);
        self.apps.len() - 1
    }

    /// Creates a DJ; returns its index.
    pub fn add_dj(&mut self, name: &str) -> usize {
        let n = self.djs.len() as u64;
        let user_id = format!("dj{:012x}", self.rng.next_u64() >> 16);
        self.djs.push(Dj {
            name: name.to_owned(),
            user_id,
            nickname: if n == 0 {
                "DJ Mina".to_owned()
            } else {
                format!("DJ {name}")
            },
            live: None,
            chat_frozen: false,
            bot_manager: false,
            bot_chat_banned: false,
            bot_blocked: false,
            bot_kicked: false,
            wire: WireConfig::default(),
            last_id_ms: 0,
            id_offset: 0,
        });
        self.djs.len() - 1
    }

    /// The DJ called `name` (default: the first).
    pub fn dj(&self, name: Option<&str>) -> Result<usize, String> {
        match name {
            None => Ok(0),
            Some(n) => self.djs.iter().position(|d| d.name == n).ok_or_else(|| {
                format!("unknown dj {n:?} (POST /_emulator/consent with a new \"dj\" creates one)")
            }),
        }
    }

    /// The app with `client_id` (default: the first).
    pub fn app_by_id(&self, client_id: Option<&str>) -> Result<usize, String> {
        match client_id {
            None => Ok(0),
            Some(id) => self
                .apps
                .iter()
                .position(|a| a.client_id == id)
                .ok_or_else(|| format!("unknown clientId {id:?}")),
        }
    }

    /// The integration of `app` × `dj`, created on first use.
    pub fn integration(&mut self, app: usize, dj: usize) -> usize {
        if let Some(i) = self
            .integrations
            .iter()
            .position(|i| i.app == app && i.dj == dj)
        {
            return i;
        }
        let id = format!("int-{}", self.integrations.len() + 1);
        let bot_user_id = format!("b{:015x}", self.rng.next_u64() >> 4);
        self.integrations.push(Integration {
            id,
            app,
            dj,
            consent: None,
            bot_user_id,
        });
        self.integrations.len() - 1
    }

    /// Records a request (its `seq` is set here).
    pub fn record_request(&mut self, mut r: RequestRecord) {
        self.request_count += 1;
        r.seq = self.request_count;
        *self.path_counts.entry(r.path.clone()).or_insert(0) += 1;
        if self.requests.len() >= MAX_REQUESTS {
            self.requests.pop_front();
        }
        self.requests.push_back(r);
    }

    /// Takes one injected failure for `path`, if any is pending.
    pub fn take_fail(&mut self, path: &str) -> Option<Fail> {
        let i = self
            .fails
            .iter()
            .position(|f| f.path == path && f.times > 0)?;
        let f = &mut self.fails[i];
        f.times -= 1;
        let out = f.clone();
        if f.times == 0 {
            self.fails.remove(i);
        }
        Some(out)
    }

    // ----- broadcasts -------------------------------------------------------

    /// Starts a broadcast for `dj`; returns its `liveId` (the current one when on air).
    pub fn live_start(&mut self, dj: usize, title: Option<String>, now: i64) -> u64 {
        if let Some(live) = &self.djs[dj].live {
            return live.live_id;
        }
        let live_id = self.next_live_id;
        self.next_live_id += 1;
        self.ledger.push((dj, live_id, Vec::new()));
        let d = &mut self.djs[dj];
        d.chat_frozen = false;
        d.bot_kicked = false;
        d.bot_chat_banned = false;
        d.live = Some(Box::new(Live::new(
            live_id,
            title,
            now,
            self.ledger.len() - 1,
        )));
        let name = d.name.clone();
        self.log(format!("live start: dj {name} liveId {live_id}"));
        live_id
    }

    /// Ends `dj`'s broadcast: every open stream gets `end` `LIVE_ENDED`.
    pub fn live_end(&mut self, dj: usize) -> Option<u64> {
        let ended = self.end_streams(dj, "LIVE_ENDED", |_| true);
        let d = &mut self.djs[dj];
        let live = d.live.take()?;
        d.chat_frozen = false;
        d.bot_kicked = false;
        d.bot_chat_banned = false;
        let name = d.name.clone();
        self.log(format!(
            "live end: dj {name} liveId {} ({ended} streams got LIVE_ENDED)",
            live.live_id
        ));
        Some(live.live_id)
    }

    /// Sends an end frame with `reason` to the streams of `dj` that `which`
    /// selects and closes them; returns how many got it.
    pub fn end_streams(
        &mut self,
        dj: usize,
        reason: &'static str,
        which: impl Fn(&StreamHandle) -> bool,
    ) -> usize {
        let d = &mut self.djs[dj];
        let Some(live) = d.live.as_mut() else {
            return 0;
        };
        if !live.streams.iter().any(&which) {
            return 0; // the common case of every tick: build no frame
        }
        let wire = d.wire.clone();
        let data = to_json(&End { reason });
        let frame = Arc::new(Frame {
            bytes: event_frame(&wire, None, "end", &data),
            info: None,
            end: Some(reason),
            counted: true,
        });
        let mut n = 0;
        let mut lines = Vec::new();
        live.streams.retain(|s| {
            if !which(s) {
                return true;
            }
            if s.offer(&frame) == Offer::Queued {
                n += 1;
                lines.push(format!("stream {} end {reason}", s.id));
            }
            false
        });
        for l in lines {
            self.log(l);
        }
        n
    }

    /// Cuts the streams of `dj` that `which` selects, stalled ones included,
    /// with no end frame.
    pub fn drop_streams(&mut self, dj: usize, which: impl Fn(&StreamHandle) -> bool) -> usize {
        let before = self.stalled.len();
        self.stalled.retain(|s| s.dj != dj || !which(&s.handle));
        let mut n = before - self.stalled.len();
        if let Some(live) = self.djs[dj].live.as_mut() {
            let before = live.streams.len();
            live.streams.retain(|s| !which(s));
            n += before - live.streams.len();
        }
        if n > 0 {
            self.log(format!("{n} stream(s) dropped (no end frame)"));
        }
        n
    }

    /// Freezes at most `count` open streams of `dj` that `which` selects, in
    /// opening order (see [`Stalled`]); the emulator drops one still open at
    /// `give_up_at`, if given. Returns how many froze.
    pub fn stall_streams(
        &mut self,
        dj: usize,
        which: impl Fn(&StreamHandle) -> bool,
        count: usize,
        give_up_at: Option<i64>,
        now: i64,
    ) -> usize {
        let Some(live) = self.djs[dj].live.as_mut() else {
            return 0;
        };
        let mut frozen = Vec::new();
        let mut kept = Vec::with_capacity(live.streams.len());
        for s in live.streams.drain(..) {
            if frozen.len() < count && s.is_open() && which(&s) {
                frozen.push(s);
            } else {
                kept.push(s);
            }
        }
        live.streams = kept;
        let n = frozen.len();
        let name = self.djs[dj].name.clone();
        for handle in frozen {
            handle.stall(now);
            self.log(format!(
                "[{name}] stream {} stalled: open, nothing more written",
                handle.id
            ));
            self.stalled.push(Stalled {
                dj,
                handle,
                give_up_at,
            });
        }
        n
    }

    /// Stalled streams of `dj` whose bot has not closed them yet.
    pub fn stalled_streams(&self, dj: usize) -> usize {
        self.stalled
            .iter()
            .filter(|s| s.dj == dj && s.handle.is_open())
            .count()
    }

    /// Whether some open stream of `dj` has more than half its queue in use
    /// (a scenario replayed faster than its readers read waits for them,
    /// rather than cutting them as slow readers).
    pub fn streams_backed_up(&self, dj: usize) -> bool {
        let half = self.cfg.stream_buffer / 2;
        self.djs[dj]
            .live
            .as_ref()
            .is_some_and(|l| l.streams.iter().any(|s| s.is_open() && s.queued() > half))
    }

    /// Whether the ledger is final for now: every connection is either closed,
    /// stalled (nothing more will be written to it), or still open with
    /// nothing queued (no frame waits to be written).
    pub fn settled(&self) -> bool {
        self.ledger.iter().all(|(_, _, bots)| {
            bots.iter().all(|bot| {
                bot.open_connections().into_iter().all(|conn| {
                    self.stalled.iter().any(|s| s.handle.feeds(bot, conn))
                        || self.djs.iter().filter_map(|d| d.live.as_ref()).any(|live| {
                            live.streams
                                .iter()
                                .any(|s| s.feeds(bot, conn) && s.is_open() && s.queued() == 0)
                        })
                })
            })
        })
    }

    /// Open streams of `dj`.
    pub fn open_streams(&self, dj: usize) -> usize {
        self.djs[dj]
            .live
            .as_ref()
            .map_or(0, |l| l.streams.iter().filter(|s| s.is_open()).count())
    }

    /// The next frame id of `dj`: `<epochMillis>-<offset>` (spec 4.6), and
    /// the same as numbers (the ledger's key for counting an event once).
    fn next_frame_id(&mut self, dj: usize, now: i64) -> (String, (i64, u64)) {
        let d = &mut self.djs[dj];
        if now > d.last_id_ms {
            d.last_id_ms = now;
            d.id_offset = 0;
        } else {
            d.id_offset += 1;
        }
        (
            format!("{}-{}", d.last_id_ms, d.id_offset),
            (d.last_id_ms, d.id_offset),
        )
    }

    /// Emits one event to `dj`'s broadcast (spec 2.6, 4.6 rules 1, 5, 6);
    /// returns the frame id and how many streams it was queued to. The
    /// room follows: a join enters the person, any other event from someone
    /// not present enters them silently, a donation adds to the ranking.
    pub fn emit(
        &mut self,
        dj: usize,
        kind: Kind,
        data: &serde_json::Value,
        now: i64,
    ) -> Result<(Option<String>, usize), String> {
        let d = &self.djs[dj];
        let Some(live) = d.live.as_ref() else {
            return Err(format!(
                "dj {} is not on air (POST /_emulator/live/start first)",
                d.name
            ));
        };
        let (dj_id, dj_nick, unknown_fields, fraction_digits) = (
            d.user_id.clone(),
            d.nickname.clone(),
            d.wire.unknown_fields,
            d.wire.fraction_digits,
        );
        // The presence default `fanRank` needs the person first.
        let obj = data.as_object().cloned().unwrap_or_default();
        let mut probe = self.rng.clone();
        let defaults = Defaults {
            now_ms: now,
            dj_id: &dj_id,
            dj_nickname: &dj_nick,
            fan_rank: None,
            fraction_digits,
        };
        let (uid, _) = events::resolve_user(kind, &obj, &defaults, &mut probe)?;
        if kind == Kind::Chat && live.chat_banned.contains(&uid) {
            // Spec 4.6 rule 6: chat from a chat-banned listener is never created.
            return Ok((None, 0));
        }
        let fan_rank = live.fan_rank(&uid);
        let defaults = Defaults {
            fan_rank,
            ..defaults
        };
        let (json, mut info) = events::build(kind, data, &defaults, &mut self.rng, unknown_fields)?;
        let (id, seq) = self.next_frame_id(dj, now);
        info.seq = seq;
        let delivered = self.deliver(dj, kind, &id, json, info);
        Ok((Some(id), delivered))
    }

    /// Applies an event to the room and fans it out; returns the count.
    fn deliver(&mut self, dj: usize, kind: Kind, id: &str, json: String, info: EventInfo) -> usize {
        let d = &mut self.djs[dj];
        let wire = d.wire.clone();
        let dj_name = d.name.clone();
        let Some(live) = d.live.as_mut() else {
            return 0;
        };
        match kind {
            Kind::Presence => live.enter(&info.user_id, info.nickname.clone()),
            // Anyone else who acts is in the room (entered silently); the DJ is not a listener.
            _ if info.user_id != d.user_id => live.enter(&info.user_id, info.nickname.clone()),
            _ => {}
        }
        if kind == Kind::Donation {
            live.add_donation(&info.user_id, info.donated);
        }
        let unknown = wire.unknown_events.then(|| {
            let data = events::gift(&info.user_id);
            Arc::new(Frame {
                bytes: event_frame(&wire, Some(&format!("{id}-x")), "gift", &data),
                info: Some(EventInfo {
                    kind: Kind::Unknown,
                    ..info.clone()
                }),
                end: None,
                counted: true,
            })
        });
        let summary = if self.log.receiver_count() > 0 {
            summarize(kind, &info)
        } else {
            String::new()
        };
        let frame = Arc::new(Frame {
            bytes: event_frame(&wire, Some(id), kind.name(), &json),
            info: Some(info),
            end: None,
            counted: true,
        });
        self.recent_bytes += frame.bytes.len();
        while self.recent.len() >= RECENT_EVENTS || self.recent_bytes > RECENT_BYTES {
            let Some(old) = self.recent.pop_front() else {
                break;
            };
            self.recent_bytes -= old.frame.bytes.len();
        }
        self.recent.push_back(Recent {
            dj,
            live_id: live.live_id,
            id: id.to_owned(),
            kind,
            frame: Arc::clone(&frame),
        });
        let mut cut = Vec::new();
        let delivered = fan_out(&mut live.streams, kind, &frame, unknown.as_ref(), &mut cut);
        if self.log.receiver_count() > 0 {
            self.log(format!(
                "[{dj_name}] {} {summary} → {delivered} stream(s)",
                kind.name()
            ));
        }
        for id in cut {
            self.log(format!(
                "stream {id} cut: its reader fell behind (queue full)"
            ));
        }
        delivered
    }

    /// Sends an event of `dj`'s current broadcast again: the same frame,
    /// byte for byte (its `id:` line included), to every open stream that
    /// may see it (spec 4.6's filter, as for a new event); the room is not
    /// touched. Only the latest [`RECENT_EVENTS`] events (at most
    /// [`RECENT_BYTES`]) are known. Returns
    /// how many streams it was queued to.
    pub fn refire(&mut self, dj: usize, id: &str) -> Result<usize, RefireError> {
        let d = &mut self.djs[dj];
        let dj_name = d.name.clone();
        let Some(live) = d.live.as_mut() else {
            return Err(RefireError::NotOnAir);
        };
        let Some(recent) = self
            .recent
            .iter()
            .rev()
            .find(|r| r.dj == dj && r.live_id == live.live_id && r.id == id)
        else {
            return Err(RefireError::Unknown);
        };
        let (kind, frame) = (recent.kind, Arc::clone(&recent.frame));
        let mut cut = Vec::new();
        let delivered = fan_out(&mut live.streams, kind, &frame, None, &mut cut);
        self.log(format!(
            "[{dj_name}] {} {id} sent again → {delivered} stream(s)",
            kind.name()
        ));
        for id in cut {
            self.log(format!(
                "stream {id} cut: its reader fell behind (queue full)"
            ));
        }
        Ok(delivered)
    }

    /// Puts the bot of `integration` in the room of its DJ's broadcast (on
    /// stream connect or first chat): others with presence see it join.
    pub fn join_bot(&mut self, integration: usize, now: i64) {
        let (dj, bot_id, app) = {
            let i = &self.integrations[integration];
            (i.dj, i.bot_user_id.clone(), i.app)
        };
        let nickname = self.apps[app].bot_nickname.clone();
        let manager = self.djs[dj].bot_manager;
        let Some(live) = self.djs[dj].live.as_ref() else {
            return;
        };
        if live.is_present(&bot_id) {
            return;
        }
        let fan_rank = live.fan_rank(&bot_id);
        let data = serde_json::json!({"user": {"id": bot_id, "nickname": nickname}, "isManager": manager, "favoriteTemperature": null});
        let d = &self.djs[dj];
        let (dj_id, dj_nick, fraction_digits) = (
            d.user_id.clone(),
            d.nickname.clone(),
            d.wire.fraction_digits,
        );
        let defaults = Defaults {
            now_ms: now,
            dj_id: &dj_id,
            dj_nickname: &dj_nick,
            fan_rank,
            fraction_digits,
        };
        if let Ok((json, mut info)) =
            events::build(Kind::Presence, &data, &defaults, &mut self.rng, false)
        {
            let (id, seq) = self.next_frame_id(dj, now);
            info.seq = seq;
            self.deliver(dj, Kind::Presence, &id, json, info);
        }
    }

    /// Posts the bot's chat to the room: other streams see it, its own never.
    pub fn bot_chat(&mut self, integration: usize, message: &str, now: i64) {
        let (dj, bot_id, app) = {
            let i = &self.integrations[integration];
            (i.dj, i.bot_user_id.clone(), i.app)
        };
        let nickname = self.apps[app].bot_nickname.clone();
        let data = serde_json::json!({"user": {"id": bot_id, "nickname": nickname}, "isDj": false, "message": message});
        let _ = self.emit(dj, Kind::Chat, &data, now);
        let live_id = self.djs[dj].live.as_ref().map_or(0, |l| l.live_id);
        self.chat_log.push(ChatRecord {
            at_ms: now,
            time: iso(now),
            dj: self.djs[dj].name.clone(),
            live_id,
            client_id: self.apps[app].client_id.clone(),
            integration: self.integrations[integration].id.clone(),
            message: message.to_owned(),
        });
    }

    /// Takes one slot of the broadcast-wide chat limit; false when full.
    pub fn chat_slot(&mut self, dj: usize, now: i64) -> bool {
        let limit = usize::try_from(self.quotas.config.chat_per_second).unwrap_or(usize::MAX);
        self.djs[dj]
            .live
            .as_mut()
            .is_some_and(|live| live.chat_slot(now, limit))
    }

    /// Opens a stream for `integration` (spec 3.3, 4.6): the bot joins the
    /// room, its level is fixed now, its ledger connection starts.
    pub fn open_stream(
        &mut self,
        integration: usize,
        scope: Scope,
        token_expires_at: i64,
        now: i64,
        kill: Option<Arc<tokio::sync::Notify>>,
    ) -> Result<StreamBody, ApiError> {
        let (dj, app) = (
            self.integrations[integration].dj,
            self.integrations[integration].app,
        );
        let d = &self.djs[dj];
        let Some(live) = d.live.as_ref() else {
            return Err(ApiError::not_on_air());
        };
        if d.bot_blocked || d.bot_kicked {
            return Err(ApiError::blocked());
        }
        let ledger_idx = live.ledger;
        let manager = d.bot_manager;
        let wire = d.wire.clone();
        self.join_bot(integration, now);
        let bot = {
            let (dj_idx, live_id, bots) = &mut self.ledger[ledger_idx];
            let _ = live_id;
            let int_id = self.integrations[integration].id.clone();
            match bots.iter().find(|b| b.integration() == int_id) {
                Some(b) => Arc::clone(b),
                None => {
                    let b = Arc::new(BotLedger::with_seq(
                        &self.apps[app].client_id,
                        &int_id,
                        &self.djs[*dj_idx].user_id,
                        Arc::clone(&self.writes),
                    ));
                    bots.push(Arc::clone(&b));
                    b
                }
            }
        };
        let conn = bot.open(now);
        let id = self.next_stream_id;
        self.next_stream_id += 1;
        let prefix = wire.bom.then(|| Bytes::from_static("\u{feff}".as_bytes()));
        let (handle, body) = stream::open(
            id,
            integration,
            self.integrations[integration].bot_user_id.clone(),
            scope,
            manager,
            token_expires_at,
            now + self.cfg.heartbeat_ms,
            self.cfg.stream_buffer,
            prefix,
            wire.chunk_bytes,
            bot,
            conn,
            Arc::clone(&self.clock),
            kill,
            self.log.clone(),
        );
        let int_id = self.integrations[integration].id.clone();
        if let Some(live) = self.djs[dj].live.as_mut() {
            live.streams.push(handle);
        }
        self.log(format!(
            "stream {id} open: {int_id} scope \"{scope}\"{}",
            if manager { " (manager)" } else { "" }
        ));
        Ok(body)
    }

    /// Heartbeats and token expiry, due at `now` (run by the ticker and after
    /// every clock jump).
    pub fn tick(&mut self, now: i64) {
        let hb_ms = self.cfg.heartbeat_ms;
        if !self.stalled.is_empty() {
            let mut gave_up = Vec::new();
            self.stalled.retain(|s| {
                if s.give_up_at.is_some_and(|t| now >= t) && s.handle.is_open() {
                    gave_up.push(s.handle.id);
                    return false;
                }
                s.handle.is_open()
            });
            for id in gave_up {
                self.log(format!(
                    "stream {id}: the emulator gave up on the stalled connection (dropped)"
                ));
            }
        }
        for dj in 0..self.djs.len() {
            let expired = self.end_streams(dj, "TOKEN_EXPIRED", |s| now >= s.token_expires_at);
            if expired > 0 {
                let name = self.djs[dj].name.clone();
                self.log(format!("[{name}] {expired} stream(s) ended TOKEN_EXPIRED"));
            }
            let d = &mut self.djs[dj];
            let Some(live) = d.live.as_mut() else {
                continue;
            };
            let due = hb_ms > 0
                && !d.wire.heartbeats_off
                && live.streams.iter().any(|s| now >= s.next_heartbeat);
            let hb = due.then(|| {
                Arc::new(Frame {
                    bytes: d.wire.heartbeat(),
                    info: None,
                    end: None,
                    counted: false,
                })
            });
            live.streams.retain_mut(|s| match &hb {
                Some(hb) if now >= s.next_heartbeat => {
                    s.next_heartbeat = now + hb_ms;
                    s.offer(hb) == Offer::Queued
                }
                _ => s.is_open(),
            });
        }
    }

    /// Revokes every token of `integration` now.
    pub fn revoke_all(&mut self, integration: usize, now: i64) {
        for a in self
            .access
            .values_mut()
            .filter(|a| a.integration == integration)
        {
            a.revoked_at.get_or_insert(now);
        }
        for r in self
            .refresh
            .values_mut()
            .filter(|r| r.integration == integration)
        {
            r.revoked_at.get_or_insert(now);
        }
    }

    /// The ledger of a replayed stream (`crate::replay`): the bot's entry in
    /// the default DJ's broadcast `live_id`, made on first use.
    pub fn replay_ledger(
        &mut self,
        live_id: u64,
        client_id: &str,
        integration: &str,
    ) -> Arc<BotLedger> {
        let at = match self
            .ledger
            .iter()
            .position(|(d, l, _)| *d == 0 && *l == live_id)
        {
            Some(at) => at,
            None => {
                self.ledger.push((0, live_id, Vec::new()));
                self.ledger.len() - 1
            }
        };
        let bots = &mut self.ledger[at].2;
        if let Some(b) = bots.iter().find(|b| b.integration() == integration) {
            return Arc::clone(b);
        }
        // No DJ id: the recording's DJ is known by the chats with isDj.
        let bot = Arc::new(BotLedger::with_seq(
            client_id,
            integration,
            "",
            Arc::clone(&self.writes),
        ));
        bots.push(Arc::clone(&bot));
        bot
    }

    /// The ledger as a value.
    pub fn ledger(&self) -> Ledger {
        self.ledger_of(None)
    }

    /// The ledger of `dj`'s broadcasts only (`None`: every DJ's).
    pub fn ledger_of(&self, dj: Option<usize>) -> Ledger {
        Ledger {
            broadcasts: self
                .ledger
                .iter()
                .filter(|(d, _, _)| dj.is_none_or(|want| want == *d))
                .map(|(dj, live_id, bots)| crate::ledger::BroadcastEntry {
                    dj: self.djs[*dj].name.clone(),
                    live_id: *live_id,
                    bots: bots.iter().map(|b| b.snapshot()).collect(),
                })
                .collect(),
        }
    }

    /// Every frame written after write number `since` and up to `upto`, in
    /// write order, optionally only to `dj`'s broadcasts and to the app
    /// `client_id`.
    pub fn frames(
        &self,
        dj: Option<usize>,
        client_id: Option<&str>,
        since: u64,
        upto: u64,
    ) -> Vec<WrittenFrame> {
        let mut out: Vec<WrittenFrame> = self
            .ledger
            .iter()
            .filter(|(d, _, _)| dj.is_none_or(|want| want == *d))
            .flat_map(|(d, live_id, bots)| {
                let name = &self.djs[*d].name;
                bots.iter()
                    .filter(|b| client_id.is_none_or(|c| b.client_id() == c))
                    .flat_map(move |b| b.frames(name, *live_id, since, upto))
            })
            .collect();
        out.sort_by_key(|f| f.write_seq);
        out
    }

    /// The room of `dj` in join order after `after_seq` (see [`Live::listeners`]).
    pub fn listeners(
        &self,
        dj: usize,
        after_seq: u64,
        limit: usize,
    ) -> Option<(Vec<ListenerRow>, bool)> {
        Some(self.djs[dj].live.as_ref()?.listeners(after_seq, limit))
    }

    /// The top 30 donors present in `dj`'s room (see [`Live::fans`]).
    pub fn fans(&self, dj: usize) -> Option<Vec<(String, String, u64)>> {
        Some(self.djs[dj].live.as_ref()?.fans())
    }

    /// A listener leaves `dj`'s room (no event: presence only carries JOIN).
    pub fn leave(&mut self, dj: usize, user_id: &str) -> bool {
        self.djs[dj]
            .live
            .as_mut()
            .is_some_and(|live| live.leave(user_id))
    }

    /// Kicks the bots of `dj`: out of the room, their streams cut.
    pub fn kick_bots(&mut self, dj: usize) {
        let bots: Vec<String> = self
            .integrations
            .iter()
            .filter(|i| i.dj == dj)
            .map(|i| i.bot_user_id.clone())
            .collect();
        for b in &bots {
            self.leave(dj, b);
        }
        let n = self.drop_streams(dj, |_| true);
        let name = self.djs[dj].name.clone();
        self.log(format!("[{name}] bots kicked ({n} stream(s) cut)"));
    }
}

/// Offers an event `frame` of `kind` (after `unknown`, the wire variation's
/// made-up event, when given) to each open stream that may see it (spec 4.6:
/// the permission, presence only to streams opened as a manager, no echo of
/// the bot's own user); drops the streams that are gone, pushes the ids of
/// those cut as slow readers to `cut`. Returns how many queued the frame.
fn fan_out(
    streams: &mut Vec<StreamHandle>,
    kind: Kind,
    frame: &Arc<Frame>,
    unknown: Option<&Arc<Frame>>,
    cut: &mut Vec<u64>,
) -> usize {
    let user = frame
        .info
        .as_ref()
        .map(|i| i.user_id.as_str())
        .unwrap_or_default();
    let mut delivered = 0;
    streams.retain(|s| {
        if s.bot_user_id == user {
            return s.is_open(); // no echo of the bot's own posts and join
        }
        if let Some(p) = kind.perm() {
            if !s.scope.has(p) || (kind == Kind::Presence && !s.manager) {
                return s.is_open();
            }
        }
        if let Some(u) = unknown {
            if s.offer(u) != Offer::Queued {
                cut.push(s.id);
                return false;
            }
        }
        match s.offer(frame) {
            Offer::Queued => {
                delivered += 1;
                true
            }
            Offer::Gone => false,
            Offer::Cut => {
                cut.push(s.id);
                false
            }
        }
    });
    delivered
}

fn summarize(kind: Kind, info: &EventInfo) -> String {
    let who = info.nickname.as_deref().unwrap_or("(no nickname)");
    match kind {
        Kind::Like => format!(
            "{who} {} hearts{}",
            info.hearts,
            if info.paid { " (paid)" } else { "" }
        ),
        Kind::Donation => format!("{who} donated {}", info.donated),
        Kind::Chat if info.is_dj => format!("{who} (DJ)"),
        _ => who.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `refire` keeps is bounded in bytes as well as in frames: 300
    /// chats of 60 kB (18 MB) push the first ones out.
    #[test]
    fn refire_keeps_at_most_recent_bytes_of_frames() {
        let clock = Arc::new(Clock::new(1_763_880_000_000, 0.0));
        let (log, _) = broadcast::channel(16);
        let mut w = World::new(Config::default(), 7, clock, log);
        let now = 1_763_880_000_000;
        w.live_start(0, None, now);
        let data = serde_json::json!({"message": "x".repeat(60_000)});
        let ids: Vec<String> = (0..300)
            .map(|_| match w.emit(0, Kind::Chat, &data, now) {
                Ok((Some(id), _)) => id,
                other => panic!("{other:?}"),
            })
            .collect();
        assert!(w.recent_bytes <= RECENT_BYTES);
        assert_eq!(
            w.recent_bytes,
            w.recent.iter().map(|r| r.frame.bytes.len()).sum::<usize>()
        );
        assert_eq!(w.refire(0, &ids[0]), Err(RefireError::Unknown));
        assert_eq!(w.refire(0, &ids[299]), Ok(0));
    }
}
