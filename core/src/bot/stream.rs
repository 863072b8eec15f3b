//! The event stream: the connection the driver holds and what its bytes say.

use super::*;

/// The stream connection the driver holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Conn {
    /// Asked for; no response yet.
    Opening(RequestId),
    /// 2xx: bytes are events.
    Open(RequestId),
    /// An error status: bytes are its body, classified when it closes.
    Failed {
        id: RequestId,
        status: u16,
        headers: Vec<(Vec<u8>, Vec<u8>)>,
        body: Vec<u8>,
    },
}

impl Conn {
    pub(super) fn id(&self) -> RequestId {
        match self {
            Conn::Opening(id) | Conn::Open(id) | Conn::Failed { id, .. } => *id,
        }
    }
}

/// The event stream: the connect-loop, the connection the driver holds,
/// and what the bot remembers of it. Keeps: at most one connection at a
/// time, opened with the pair of `generation`; `end_seen` speaks of the
/// open connection only (cleared as one opens); nothing connects while the
/// stream is off (`enabled` false).
#[derive(Debug)]
pub(super) struct StreamState {
    /// Whether to open the event stream at all ([`BotConfig::events`]).
    pub(super) enabled: bool,
    /// The connect-loop, with its SSE parser and event decoder.
    pub(super) connect: ConnectLoop,
    /// The connection the driver holds.
    pub(super) conn: Option<Conn>,
    /// The connect-loop asked for a refresh and waits for it.
    pub(super) wants_refresh: bool,
    /// The open connection is finished with: its end frame came, or the app
    /// asked for a reconnect (its close is not a drop).
    end_seen: bool,
    /// The token generation the connection was opened with.
    generation: u64,
    /// A stop was lifted by a new consent code: reconnect once the new pair
    /// is in.
    pub(super) restart: bool,
    /// When the broadcast of the open connection started (unix ms), as the
    /// kit's `GET /v1/live` on that connection said.
    pub(super) started_ms: Option<u64>,
}

impl StreamState {
    pub(super) fn new(enabled: bool, config: StreamConfig, seed: u64) -> Self {
        Self {
            enabled,
            connect: ConnectLoop::new(config, seed),
            conn: None,
            wants_refresh: false,
            end_seen: false,
            generation: 0,
            restart: false,
            started_ms: None,
        }
    }

    /// Whether the connection is open (2xx, its bytes are events).
    pub(super) fn connected(&self) -> bool {
        matches!(self.conn, Some(Conn::Open(_)))
    }

    /// The app asked for a reconnect at `now_ms`: an open connection is
    /// finished with (its close is not a drop).
    fn request_reconnect(&mut self, now_ms: u64) {
        if self.connected() {
            self.end_seen = true;
        }
        self.connect.request_reconnect(now_ms);
    }

    /// Connection `id` is asked for, with the pair of `generation`.
    fn opening(&mut self, id: RequestId, generation: u64) {
        self.conn = Some(Conn::Opening(id));
        self.generation = generation;
    }

    /// Connection `id` opened (2xx): its end is still to come.
    fn opened(&mut self, id: RequestId) {
        self.conn = Some(Conn::Open(id));
        self.end_seen = false;
        self.started_ms = None;
    }

    /// When the connect-loop acts next, while the stream is on.
    pub(super) fn deadline(&self) -> Option<u64> {
        self.connect.deadline().filter(|_| self.enabled)
    }

    /// A stop was lifted by a new consent code: the stream waits for the
    /// new pair, then starts over.
    pub(super) fn await_new_pair(&mut self) {
        self.restart = true;
        self.connect.await_new_tokens();
    }

    /// A new pair is in at `now_ms`: the connect-loop that waited for it
    /// goes on; unless the bot is `stopped`, one stopped starts over.
    pub(super) fn on_new_pair(&mut self, stopped: bool, now_ms: u64) {
        if self.wants_refresh {
            self.wants_refresh = false;
            let _ = self.connect.on_token_refreshed(now_ms);
        }
        let restart = std::mem::take(&mut self.restart);
        if !stopped && (restart || self.connect.phase() == Phase::Stopped) {
            self.connect.restart(now_ms);
        }
    }
}

impl Bot {
    /// Reconnects the stream at once without backoff: after the DJ makes the
    /// bot a manager, presence events start on the next connection.
    pub fn request_reconnect(&mut self, now_ms: u64) {
        self.stream.request_reconnect(now_ms);
    }

    /// Changes the wait between two connects that find the DJ not on air
    /// (a 404, or a broadcast that ended): each wait is drawn uniformly in
    /// `[wait, 2 × wait]`, `wait` never below the spec's few seconds
    /// ([`NOT_ON_AIR_FLOOR_MS`](crate::api::NOT_ON_AIR_FLOOR_MS), 3 s: a
    /// shorter one is raised to it). A shorter wait than the one in force
    /// also cuts a wait under way (the next connect goes at the sooner of
    /// the one planned and a fresh draw from `now_ms`); a longer one applies
    /// from the next probe. Returns the wait in force (ms). For a host that
    /// spreads many off-air bots' probes over a request budget; the default
    /// is [`StreamConfig`]'s (3–6 s).
    ///
    /// ```
    /// use onair::{BaseUrl, Bot, BotConfig, ClientCredentials};
    ///
    /// let id = "3f2504e0-4f89-11d3-9a0c-0305e82c3301";
    /// let config = BotConfig::new(
    ///     BaseUrl::new("https://api.example.com").unwrap(),
    ///     ClientCredentials::new(id, "secret").unwrap(),
    /// );
    /// let mut bot = Bot::new(config, None, 7);
    /// // A DJ who has not been on air for a week: probed every 2–4 min.
    /// assert_eq!(bot.set_not_on_air_wait(0, 120_000), 120_000);
    /// // Never below the spec's floor.
    /// assert_eq!(bot.set_not_on_air_wait(0, 500), 3_000);
    /// ```
    pub fn set_not_on_air_wait(&mut self, now_ms: u64, wait_ms: u64) -> u64 {
        self.stream.connect.set_not_on_air_wait(now_ms, wait_ms)
    }

    /// When the broadcast the open stream belongs to started (unix ms): the
    /// `startedAt` of the kit's `GET /v1/live` on that connection. `None`
    /// until that answer, when the stream is not open, or without a kit or
    /// `live.read`. A host measures with it how long after a broadcast's
    /// start its bot found it.
    pub fn broadcast_started_ms(&self) -> Option<u64> {
        self.stream.started_ms.filter(|_| self.stream.connected())
    }

    pub(super) fn poll_stream(&mut self, now_ms: u64) -> Option<Action> {
        if !self.stream.enabled {
            return None;
        }
        loop {
            if self.stream.connect.deadline().is_some_and(|at| at > now_ms) {
                return None;
            }
            // Only a usable token can open the stream. Without one a refresh is
            // due or under way (or a person must act), and its answer moves
            // the loop on; a connection the loop is done with is closed now.
            if self.stream.connect.phase() == Phase::Waiting
                && self.tokens.access_token(now_ms).is_none()
            {
                let conn = self.stream.conn.take()?;
                return Some(Action::CloseStream {
                    id: conn.id(),
                    reason: CloseReason::Ended,
                });
            }
            match self.stream.connect.poll(now_ms) {
                Step::Connect => {
                    let Some(token) = self.tokens.access_token(now_ms) else {
                        // Cannot happen (checked above); fail the attempt.
                        let _ = self.stream.connect.on_connect_failed(now_ms);
                        return None;
                    };
                    match api::events(&self.base_url, token) {
                        Ok(request) => {
                            let id = self.requests.next_id();
                            let generation = self.generation();
                            self.stream.opening(id, generation);
                            return Some(Action::OpenStream { id, request });
                        }
                        Err(_) => {
                            // A token with control characters (refused when a
                            // pair is read, so never here): nothing to send.
                            self.halt(Stop::Reauthorize(AuthProblem::AccessRejected));
                            return None;
                        }
                    }
                }
                Step::Close => {
                    if let Some(conn) = self.stream.conn.take() {
                        let reason = match conn {
                            Conn::Open(_) if self.stream.end_seen => CloseReason::Ended,
                            Conn::Open(_) => {
                                // The watchdog found it silent.
                                self.counters.drops += 1;
                                CloseReason::Silent
                            }
                            Conn::Opening(_) => {
                                // The connect timeout: no answer in time.
                                self.unreached(Endpoint::Events, Unreached::TimedOut, now_ms);
                                CloseReason::TimedOut
                            }
                            Conn::Failed { .. } => CloseReason::Ended,
                        };
                        return Some(Action::CloseStream {
                            id: conn.id(),
                            reason,
                        });
                    }
                }
                Step::RefreshToken { unauthorized } => {
                    // A 401 goes through the one-refresh rule, like a call's.
                    if unauthorized
                        && self.on_unauthorized(self.stream.generation) == Unauthorized::Reauthorize
                    {
                        return None;
                    }
                    // When the bot has refreshed since that connection
                    // opened, the new pair is the refresh: reconnect with it
                    // (one refresh per expiry or 401).
                    if self.generation() > self.stream.generation
                        && self.tokens.access_token(now_ms).is_some()
                    {
                        let _ = self.stream.connect.on_token_refreshed(now_ms);
                        continue;
                    }
                    self.stream.wants_refresh = true;
                    return None;
                }
                Step::Notice(StreamNotice::ReconnectStormBraked { until_ms }) => {
                    return Some(Action::Notice(Notice::ReconnectStormBraked { until_ms }));
                }
                Step::Wait { .. } => return None,
                Step::Stopped(stop) => {
                    self.halt(stop);
                    return None;
                }
            }
        }
    }

    /// The status line and headers of [`Action::OpenStream`]. A 2xx opens the
    /// stream; any other status is a failure whose body follows through
    /// [`Bot::on_stream_bytes`] and is judged at [`Bot::on_stream_closed`].
    pub fn on_stream_open<H: Header>(
        &mut self,
        id: RequestId,
        status: u16,
        headers: impl IntoIterator<Item = H>,
        now_ms: u64,
    ) -> Result<(), Misuse> {
        match &self.stream.conn {
            Some(Conn::Opening(open)) if *open == id => {}
            Some(conn) if conn.id() == id => return Err(Misuse::NotAStream(id)),
            _ => return self.late_stream_report(id),
        }
        self.reached();
        if (200..300).contains(&status) {
            self.stream
                .connect
                .on_response(status, headers, b"", now_ms)
                .map_err(|_| Misuse::NotAStream(id))?;
            self.stream.opened(id);
            self.tokens.on_accepted(self.stream.generation);
            // Which broadcast is this? (The kit's once-per-connection ask.)
            self.ask_live_id();
            self.counters.connects += 1;
        } else {
            self.stream.conn = Some(Conn::Failed {
                id,
                status,
                headers: headers
                    .into_iter()
                    .take(64)
                    .map(|h| (h.name().to_vec(), h.value().to_vec()))
                    .collect(),
                body: Vec::new(),
            });
        }
        Ok(())
    }

    /// A report on a stream id that is not the current connection: harmless
    /// for a connection the bot closed, misuse otherwise.
    pub(super) fn late_stream_report(&self, id: RequestId) -> Result<(), Misuse> {
        if !self.issued(id) {
            Err(Misuse::UnknownRequest(id))
        } else if self.is_plain_request(id) {
            Err(Misuse::NotAStream(id))
        } else {
            Ok(())
        }
    }

    /// A chunk of the open stream's body, split anywhere.
    pub fn on_stream_bytes(
        &mut self,
        id: RequestId,
        chunk: &[u8],
        now_ms: u64,
    ) -> Result<(), Misuse> {
        match &mut self.stream.conn {
            Some(Conn::Open(open)) if *open == id => {}
            Some(Conn::Failed {
                id: failed, body, ..
            }) if *failed == id => {
                let room = MAX_STREAM_ERROR_BODY.saturating_sub(body.len());
                body.extend_from_slice(&chunk[..chunk.len().min(room)]);
                return Ok(());
            }
            Some(Conn::Opening(opening)) if *opening == id => {
                return Err(Misuse::StreamNotStarted(id))
            }
            _ => return self.late_stream_report(id),
        }
        let mut fresh = Vec::new();
        let mut events = Vec::new();
        let mut live_ended = false;
        let counters = &mut self.counters;
        for item in self.stream.connect.on_bytes(chunk, now_ms) {
            match item {
                Item::Event { id, event } => {
                    match &event {
                        Event::Chat(_) => counters.chat += 1,
                        Event::Presence(_) => counters.presence += 1,
                        Event::Like(_) => counters.like += 1,
                        Event::Donation(_) => counters.donation += 1,
                        Event::End(end) => {
                            self.stream.end_seen = true;
                            match end.reason {
                                EndReason::LiveEnded => {
                                    counters.ends_live_ended += 1;
                                    live_ended = true;
                                }
                                EndReason::TokenExpired => counters.ends_token_expired += 1,
                                EndReason::Reconnect => counters.ends_reconnect += 1,
                                EndReason::Other(_) => counters.drops += 1,
                            }
                        }
                    }
                    events.push(fresh.len());
                    fresh.push(Action::Event { id, event });
                }
                Item::Unknown { event, data, .. } => {
                    counters.unknown_events += 1;
                    fresh.push(Action::Notice(Notice::UnknownEvent { event, data }));
                }
                Item::Error(e) => {
                    counters.decode_errors += 1;
                    fresh.push(Action::Notice(Notice::FrameSkipped(e)));
                }
                Item::Heartbeat => {
                    counters.heartbeats += 1;
                    counters.last_heartbeat_ms = Some(now_ms);
                }
                Item::Comment(_) | Item::Retry(_) => {}
            }
        }
        if self.kit.is_some() && !events.is_empty() {
            // Each event, then what the kit made of it.
            let mut ordered = Vec::with_capacity(fresh.len() * 2);
            for action in fresh {
                let derived = match &action {
                    Action::Event { id, event } => {
                        let mut derived = Vec::new();
                        self.kit_event(id.as_ref(), event, now_ms, &mut derived);
                        derived
                    }
                    _ => Vec::new(),
                };
                ordered.push(action);
                ordered.extend(derived);
            }
            fresh = ordered;
        }
        self.push_behind_state(fresh, now_ms);
        if live_ended {
            self.cancel_queued_chat(now_ms);
        }
        Ok(())
    }

    /// The stream connection ended (end of body or network error). Reporting
    /// it for a connection the bot asked to close is allowed and changes
    /// nothing.
    pub fn on_stream_closed(&mut self, id: RequestId, now_ms: u64) -> Result<(), Misuse> {
        let Some(conn) = self.stream.conn.take_if(|c| c.id() == id) else {
            return self.late_stream_report(id);
        };
        match conn {
            Conn::Failed {
                status,
                headers,
                body,
                ..
            } => {
                if let Ok(problem) = self
                    .stream
                    .connect
                    .on_response(status, &headers, &body, now_ms)
                {
                    if problem.advice != Advice::RefreshToken {
                        // Past the gateway: the token was accepted.
                        self.tokens.on_accepted(self.stream.generation);
                    }
                    if problem.advice == Advice::WaitNotOnAir {
                        // A broadcast the kit remembers is over.
                        let ended = self.kit.as_mut().and_then(Kit::on_not_on_air);
                        self.kit_news(ended);
                    }
                    self.notice(Endpoint::Events, &problem);
                }
            }
            Conn::Opening(_) => {
                let _ = self.stream.connect.on_connect_failed(now_ms);
            }
            Conn::Open(_) => {
                if !self.stream.end_seen {
                    self.counters.drops += 1;
                }
                self.stream.connect.on_closed(now_ms);
            }
        }
        Ok(())
    }
}
