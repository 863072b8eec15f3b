//! The connect-loop of the event stream, `GET /v1/live/events`: [`ConnectLoop`]
//! (its docs hold spec 4.6's reconnection table as the loop follows it).

use std::fmt;

use crate::event::{Decoder, EndReason, Event, Item};
use crate::proto::backoff::{Backoff, SplitMix64};
use crate::proto::endpoint::Endpoint;
use crate::proto::http::Header;
use crate::proto::misuse::Misuse;
use crate::proto::oauth::AuthProblem;
use crate::proto::problem::{classify, Advice, Problem};
use crate::proto::sse;
use crate::proto::stop::Stop;

/// Tunables of the connect-loop. The defaults follow the spec.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StreamConfig {
    /// No bytes for this long on an open stream means it is dead (default
    /// 45 s: three missed 15 s heartbeats).
    pub watchdog_ms: u64,
    /// No response for this long after [`Step::Connect`] means the attempt
    /// failed (default 30 s). The open stream itself has no whole-body
    /// timeout: the watchdog covers it.
    pub connect_timeout_ms: u64,
    /// Shortest wait before retrying after a 404 or `LIVE_ENDED` (default 3 s).
    /// A driver may change it (and the longest) at run time with
    /// [`ConnectLoop::set_not_on_air_wait`], never below
    /// [`NOT_ON_AIR_FLOOR_MS`].
    pub not_on_air_min_ms: u64,
    /// Longest such wait (default 6 s); the wait is uniform in between.
    pub not_on_air_max_ms: u64,
    /// The storm brake's window (default 1 s): a connection that ends with
    /// `RECONNECT` this soon after opening, without a single frame before
    /// the end frame, right after another such connection, is reconnected
    /// after a backoff delay instead of at once.
    pub storm_window_ms: u64,
}

impl Default for StreamConfig {
    fn default() -> Self {
        Self {
            watchdog_ms: 45_000,
            connect_timeout_ms: 30_000,
            not_on_air_min_ms: 3_000,
            not_on_air_max_ms: 6_000,
            storm_window_ms: 1_000,
        }
    }
}

/// The shortest wait between two connects that find the DJ not on air
/// ([`ConnectLoop::set_not_on_air_wait`] never goes below it): spec 4.6 asks
/// for retries after a 404 spaced by a few seconds.
pub const NOT_ON_AIR_FLOOR_MS: u64 = 3_000;

/// What the driver should do next.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Step {
    /// Open `GET /v1/live/events` now with the current access token, then
    /// report [`ConnectLoop::on_response`] (or [`ConnectLoop::on_connect_failed`]).
    Connect,
    /// Close the stream connection you have open (it is finished or dead),
    /// then poll again. Reporting [`ConnectLoop::on_closed`] is optional.
    Close,
    /// Refresh the access token, then report
    /// [`ConnectLoop::on_token_refreshed`] or [`ConnectLoop::on_refresh_failed`].
    RefreshToken {
        /// The service answered 401 (rather than ending the stream with
        /// `TOKEN_EXPIRED`): apply the spec's one-refresh rule
        /// ([`TokenManager::on_unauthorized`](crate::proto::oauth::TokenManager::on_unauthorized))
        /// before spending a refresh; it may say a person must authorize again.
        unauthorized: bool,
    },
    /// Something worth a log line; nothing to do.
    Notice(StreamNotice),
    /// Nothing to do until `until_ms` (unix ms), or until you have something
    /// to report. `None`: only a report moves the loop on.
    Wait {
        /// When to poll again at the latest; always after the `now_ms` polled.
        until_ms: Option<u64>,
    },
    /// The loop has stopped; a person has to act. Polling keeps returning this.
    Stopped(Stop),
}

/// A thing the connect-loop did that is worth a log line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum StreamNotice {
    /// Connections keep ending with `RECONNECT` right after opening, before
    /// any frame: the next connect waits until `until_ms` instead of going
    /// at once.
    ReconnectStormBraked {
        /// When the next connect goes.
        until_ms: u64,
    },
}

impl fmt::Display for StreamNotice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StreamNotice::ReconnectStormBraked { until_ms } => write!(
                f,
                "RECONNECT storm: connections end at once; next connect at {until_ms} ms"
            ),
        }
    }
}

/// The loop's state, coarsely, for logs and tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Phase {
    /// Waiting to connect (backoff, not on air, or about to connect).
    Waiting,
    /// [`Step::Connect`] was given; waiting for the response.
    Connecting,
    /// The stream is open.
    Open,
    /// A token refresh is due or under way.
    Refreshing,
    /// Stopped for good.
    Stopped,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    ConnectAt(u64),
    Connecting {
        since_ms: u64,
    },
    Open {
        opened_ms: u64,
        last_bytes_ms: u64,
        healthy: bool,
    },
    RefreshAt(u64),
    Refreshing,
    Stopped,
}

/// The connect-loop of the event stream, `GET /v1/live/events`, as a sans-IO
/// state machine that follows spec 4.6's reconnection table.
///
/// | outcome | what the loop decides |
/// |---|---|
/// | end `LIVE_ENDED` | close; wait a few seconds (jittered), then connect for the next broadcast |
/// | end `TOKEN_EXPIRED` | close; refresh the token, then connect at once |
/// | end `RECONNECT` | close; connect at once, same token, every time (a storm brake acts only on connections that end again within [`StreamConfig::storm_window_ms`] of opening with no frame before the end, and says so with [`StreamNotice`]) |
/// | dropped without an end frame | exponential backoff, 1 s doubling to 30 s, full jitter ([`Backoff`]) |
/// | 404 (not on air) | retry after a jittered few seconds, never hammering |
/// | 401 | refresh, then connect: [`Step::RefreshToken`] says it is for a 401, and the caller's one-refresh rule ([`TokenManager::on_unauthorized`](crate::proto::oauth::TokenManager::on_unauthorized), the rule calls share) decides whether a refresh is spent or a person must authorize again (then [`ConnectLoop::halt`] with that stop) |
/// | 403 without code | stop: `reconsent` |
/// | 403 `OAPI_MNGR_0209` | stop: `join_forbidden` |
/// | 5xx | exponential backoff |
///
/// Besides the table:
/// - a **heartbeat watchdog**: no bytes for [`StreamConfig::watchdog_ms`]
///   (45 s, three missed heartbeats) means the connection is dead: the loop
///   says [`Step::Close`] and treats it as a drop;
/// - [`ConnectLoop::request_reconnect`] reconnects at once without backoff
///   (the DJ just made the bot a manager: presence starts on the next connection);
/// - backoff starts again at 1 s once a stream has been healthy (opened and
///   delivered a frame or a heartbeat);
/// - every state has a deadline ([`ConnectLoop::deadline`]), so a driver can
///   sleep exactly until then.
///
/// The driver polls until it gets [`Step::Wait`], does what each step says, and
/// reports outcomes with the `on_*` methods. A report that does not fit the
/// state (a response nobody asked for) is a [`Misuse`], changing nothing;
/// late bytes or a late close of a connection the loop is done with are
/// harmless. Most bots use [`crate::bot::Bot`], which drives this loop; use it
/// directly only to build a driver of your own around the stream alone.
///
/// ```
/// use onair::api::{ConnectLoop, Step, StreamConfig};
///
/// let mut lp = ConnectLoop::new(StreamConfig::default(), 7);
/// let t0 = 1_000_000;
/// assert_eq!(lp.poll(t0), Step::Connect);
/// lp.on_response(200, &[("content-type", "text/event-stream")], b"", t0).unwrap();
/// let items: Vec<_> = lp.on_bytes(b":heartbeat\n\n", t0 + 15_000).collect();
/// assert_eq!(items.len(), 1);
/// // Waiting now means: until the watchdog fires, or until more bytes come.
/// assert_eq!(lp.poll(t0 + 15_000), Step::Wait { until_ms: Some(t0 + 60_000) });
/// // RECONNECT: close this connection and open a new one at once.
/// let _ = lp.on_bytes(b"event:end\ndata:{\"reason\":\"RECONNECT\"}\n\n", t0 + 20_000).count();
/// assert_eq!(lp.poll(t0 + 20_000), Step::Close);
/// assert_eq!(lp.poll(t0 + 20_000), Step::Connect);
/// ```
#[derive(Debug, Clone)]
pub struct ConnectLoop {
    config: StreamConfig,
    state: State,
    stop: Option<Stop>,
    pending_close: bool,
    notice: Option<StreamNotice>,
    decoder: Decoder,
    backoff: Backoff,
    storm: Backoff,
    rng: SplitMix64,
    /// `RECONNECT` ends in a row that came within the storm window of the
    /// open, before any frame.
    quick_reconnects: u32,
    /// The refresh asked for answers a 401 (not an expiry).
    unauthorized: bool,
    last_problem: Option<Problem>,
    /// The last attempt found the DJ not on air (404, or `LIVE_ENDED`).
    not_on_air: bool,
}

impl ConnectLoop {
    /// A loop that connects on the first poll; `seed` fixes all its jitter.
    pub fn new(config: StreamConfig, seed: u64) -> Self {
        Self {
            config,
            state: State::ConnectAt(0),
            stop: None,
            pending_close: false,
            notice: None,
            decoder: Decoder::new(),
            backoff: Backoff::new(seed),
            storm: Backoff::new(seed ^ 0x5EED_0000_0000_5707),
            rng: SplitMix64::new(seed ^ 0x0404_0404_0404_0404),
            quick_reconnects: 0,
            unauthorized: false,
            last_problem: None,
            not_on_air: false,
        }
    }

    /// The next thing to do at `now_ms`. Safe to call early or often; call it
    /// until it returns [`Step::Wait`] before sleeping.
    pub fn poll(&mut self, now_ms: u64) -> Step {
        if self.pending_close {
            self.pending_close = false;
            return Step::Close;
        }
        if let Some(notice) = self.notice.take() {
            return Step::Notice(notice);
        }
        match self.state {
            State::Stopped => Step::Stopped(
                self.stop
                    .clone()
                    .unwrap_or(Stop::Reauthorize(AuthProblem::AccessRejected)),
            ),
            State::ConnectAt(at) if now_ms >= at => {
                self.state = State::Connecting { since_ms: now_ms };
                self.decoder = Decoder::new();
                Step::Connect
            }
            State::RefreshAt(at) if now_ms >= at => {
                self.state = State::Refreshing;
                Step::RefreshToken {
                    unauthorized: self.unauthorized,
                }
            }
            State::Connecting { .. } | State::Open { .. } => match self.deadline() {
                Some(deadline) if now_ms >= deadline => {
                    self.drop_connection(now_ms);
                    self.pending_close = false;
                    Step::Close
                }
                until_ms => Step::Wait { until_ms },
            },
            State::ConnectAt(_) | State::RefreshAt(_) | State::Refreshing => Step::Wait {
                until_ms: self.deadline(),
            },
        }
    }

    /// When [`poll`](Self::poll) has something to do next without any report:
    /// a connect time, the connect timeout, the watchdog, a refresh time.
    /// `Some(0)` when a close or a notice is pending; `None` when only a
    /// report (or nothing, once stopped) can move the loop.
    pub fn deadline(&self) -> Option<u64> {
        if self.pending_close || self.notice.is_some() {
            return Some(0);
        }
        match self.state {
            State::ConnectAt(at) | State::RefreshAt(at) => Some(at),
            State::Connecting { since_ms } => {
                Some(since_ms.saturating_add(self.config.connect_timeout_ms))
            }
            State::Open { last_bytes_ms, .. } => {
                Some(last_bytes_ms.saturating_add(self.config.watchdog_ms))
            }
            State::Refreshing | State::Stopped => None,
        }
    }

    /// The coarse state.
    pub fn phase(&self) -> Phase {
        match self.state {
            State::ConnectAt(_) => Phase::Waiting,
            State::Connecting { .. } => Phase::Connecting,
            State::Open { .. } => Phase::Open,
            State::RefreshAt(_) | State::Refreshing => Phase::Refreshing,
            State::Stopped => Phase::Stopped,
        }
    }

    /// When the open stream opened (unix ms), while it is open.
    pub fn open_since_ms(&self) -> Option<u64> {
        match self.state {
            State::Open { opened_ms, .. } => Some(opened_ms),
            _ => None,
        }
    }

    /// When the next connect is due, while waiting for it.
    pub fn next_connect_at_ms(&self) -> Option<u64> {
        match self.state {
            State::ConnectAt(at) => Some(at),
            _ => None,
        }
    }

    /// Whether the loop waits because the DJ is not on air (a 404, or the
    /// broadcast ended), not because of a fault.
    pub fn waiting_for_broadcast(&self) -> bool {
        self.not_on_air && matches!(self.state, State::ConnectAt(_) | State::Connecting { .. })
    }

    /// Why the loop stopped, once it has.
    pub fn stop(&self) -> Option<&Stop> {
        self.stop.as_ref()
    }

    /// The last error response (or refused refresh) the loop acted on.
    pub fn last_problem(&self) -> Option<&Problem> {
        self.last_problem.as_ref()
    }

    /// How many backoff delays were drawn since the stream was last healthy.
    pub fn backoff_attempt(&self) -> u32 {
        self.backoff.attempt()
    }

    /// Reports the response to [`Step::Connect`]: its status and headers, and
    /// for an error status its (small) body. A 2xx opens the stream: feed its
    /// body to [`on_bytes`](Self::on_bytes). Returns the classification;
    /// [`Misuse::NotConnecting`] when no connect was asked for.
    pub fn on_response<H: Header>(
        &mut self,
        status: u16,
        headers: impl IntoIterator<Item = H>,
        body: &[u8],
        now_ms: u64,
    ) -> Result<Problem, Misuse> {
        if !matches!(self.state, State::Connecting { .. }) {
            return Err(Misuse::NotConnecting);
        }
        let problem = classify(Endpoint::Events, status, headers, body);
        self.on_problem(&problem, now_ms)?;
        Ok(problem)
    }

    /// Reports the classified response to [`Step::Connect`], when the driver
    /// classified it itself.
    pub fn on_problem(&mut self, problem: &Problem, now_ms: u64) -> Result<(), Misuse> {
        if !matches!(self.state, State::Connecting { .. }) {
            return Err(Misuse::NotConnecting);
        }
        self.not_on_air = problem.advice == Advice::WaitNotOnAir;
        if problem.is_ok() {
            self.state = State::Open {
                opened_ms: now_ms,
                last_bytes_ms: now_ms,
                healthy: false,
            };
            return Ok(());
        }
        self.last_problem = Some(problem.clone());
        self.unauthorized = problem.advice == Advice::RefreshToken;
        self.state = match problem.advice {
            Advice::RefreshToken => State::RefreshAt(now_ms),
            Advice::WaitNotOnAir => State::ConnectAt(now_ms.saturating_add(self.not_on_air_ms())),
            Advice::RetryAfter => match problem.retry_after() {
                Some(retry) => State::ConnectAt(retry.until_ms(now_ms)),
                None => State::ConnectAt(now_ms.saturating_add(self.backoff.next_delay_ms())),
            },
            Advice::RetryBackoff | Advice::RetrySoon => {
                State::ConnectAt(now_ms.saturating_add(self.backoff.next_delay_ms()))
            }
            _ => match Stop::for_problem(Endpoint::Events, problem) {
                Some(stop) => self.stopped(stop),
                None => State::ConnectAt(now_ms.saturating_add(self.backoff.next_delay_ms())),
            },
        };
        Ok(())
    }

    /// Reports that [`Step::Connect`] failed before any response (DNS, TCP,
    /// TLS): a drop, retried with backoff.
    pub fn on_connect_failed(&mut self, now_ms: u64) -> Result<(), Misuse> {
        if !matches!(self.state, State::Connecting { .. }) {
            return Err(Misuse::NotConnecting);
        }
        self.drop_connection(now_ms);
        self.pending_close = false; // nothing was opened
        Ok(())
    }

    /// Feeds a chunk of the open stream's body, split anywhere. Any bytes feed
    /// the watchdog; the returned iterator decodes the chunk item by item and
    /// applies each to the loop (a heartbeat or frame marks the stream
    /// healthy; an end frame decides the reconnect). Drain it: bytes it has
    /// not reached are not read. Nothing is read after an end frame, and
    /// nothing while no stream is open (late bytes of a closed connection are
    /// harmless).
    pub fn on_bytes<'m, 'c>(&'m mut self, chunk: &'c [u8], now_ms: u64) -> StreamItems<'m, 'c> {
        if let State::Open { last_bytes_ms, .. } = &mut self.state {
            if !chunk.is_empty() {
                *last_bytes_ms = (*last_bytes_ms).max(now_ms);
            }
        }
        StreamItems {
            machine: self,
            chunk: sse::Chunk::new(chunk),
            now_ms,
        }
    }

    /// Reports that the stream connection closed (end of body, network
    /// error, or the close a [`Step::Close`] asked for). Without an end frame
    /// first this is a drop, retried with backoff. Reporting it for a
    /// connection already closed is harmless.
    pub fn on_closed(&mut self, now_ms: u64) {
        self.pending_close = false;
        if matches!(self.state, State::Open { .. } | State::Connecting { .. }) {
            self.drop_connection(now_ms);
            self.pending_close = false;
        }
    }

    /// Reports a successful token refresh: connect at once.
    pub fn on_token_refreshed(&mut self, now_ms: u64) -> Result<(), Misuse> {
        if !matches!(self.state, State::Refreshing | State::RefreshAt(_)) {
            return Err(Misuse::NotRefreshing);
        }
        self.unauthorized = false;
        self.state = State::ConnectAt(now_ms);
        Ok(())
    }

    /// The caller decided the loop must stop: its one-refresh rule
    /// ([`TokenManager::on_unauthorized`](crate::proto::oauth::TokenManager::on_unauthorized))
    /// answered [`Step::RefreshToken`]`{ unauthorized: true }` with "a person
    /// must authorize again" (`Stop::Reauthorize(AuthProblem::AccessRejected)`:
    /// a fresh token was refused), or the app is shutting down. An open stream
    /// is closed first ([`Step::Close`]); then [`Step::Stopped`] with `stop`.
    /// [`await_new_tokens`](Self::await_new_tokens) lifts it as for any stop.
    ///
    /// ```
    /// use onair::{AuthProblem, Stop};
    /// use onair::api::{ConnectLoop, Step, StreamConfig};
    ///
    /// let mut lp = ConnectLoop::new(StreamConfig::default(), 7);
    /// assert_eq!(lp.poll(0), Step::Connect);
    /// lp.on_response(401, &[("content-type", "application/json")], b"{}", 0).unwrap();
    /// assert_eq!(lp.poll(0), Step::RefreshToken { unauthorized: true });
    /// // The token manager says the fresh token was already refused once.
    /// lp.halt(Stop::Reauthorize(AuthProblem::AccessRejected));
    /// assert_eq!(lp.poll(0), Step::Stopped(Stop::Reauthorize(AuthProblem::AccessRejected)));
    /// ```
    pub fn halt(&mut self, stop: Stop) {
        if matches!(self.state, State::Open { .. } | State::Connecting { .. }) {
            self.pending_close = true;
        }
        self.unauthorized = false;
        self.state = self.stopped(stop);
    }

    /// Reports a failed token refresh: `Some(problem)` for an error response
    /// of the token endpoint, `None` for a network failure. A refused grant
    /// stops the loop; a passing failure retries the refresh with backoff.
    pub fn on_refresh_failed(
        &mut self,
        problem: Option<&Problem>,
        now_ms: u64,
    ) -> Result<(), Misuse> {
        if !matches!(self.state, State::Refreshing | State::RefreshAt(_)) {
            return Err(Misuse::NotRefreshing);
        }
        let retry_at = |lp: &mut Self| now_ms.saturating_add(lp.backoff.next_delay_ms());
        self.state = match problem {
            None => State::RefreshAt(retry_at(self)),
            Some(problem) => {
                self.last_problem = Some(problem.clone());
                match problem.advice {
                    Advice::RetryBackoff | Advice::RetrySoon | Advice::WaitNotOnAir => {
                        State::RefreshAt(retry_at(self))
                    }
                    Advice::RetryAfter => match problem.retry_after() {
                        Some(retry) => State::RefreshAt(retry.until_ms(now_ms)),
                        None => State::RefreshAt(retry_at(self)),
                    },
                    Advice::None => State::ConnectAt(now_ms),
                    Advice::RefreshToken => {
                        self.stopped(Stop::Reauthorize(AuthProblem::RefreshRejected))
                    }
                    _ => match Stop::for_problem(Endpoint::Token, problem) {
                        Some(Stop::Reauthorize(_)) => {
                            self.stopped(Stop::Reauthorize(AuthProblem::RefreshRejected))
                        }
                        Some(stop) => self.stopped(stop),
                        None => State::RefreshAt(retry_at(self)),
                    },
                }
            }
        };
        Ok(())
    }

    /// Asks for a new connection now, without backoff: the bot's level in the
    /// room is fixed when it connects, so after the DJ makes it a manager it
    /// must reconnect to receive presence events. Closes an open (or opening)
    /// stream and connects at once; otherwise the next connection, whenever it
    /// comes, already carries the new level and nothing changes.
    pub fn request_reconnect(&mut self, now_ms: u64) {
        if matches!(self.state, State::Open { .. } | State::Connecting { .. }) {
            self.pending_close = true;
            self.state = State::ConnectAt(now_ms);
        }
    }

    /// Changes the wait between two connects that find the DJ not on air
    /// (a 404, or a broadcast that ended) at run time, for a driver that
    /// spreads many bots' probes over a request budget. The wait becomes
    /// `wait_ms`, never below [`NOT_ON_AIR_FLOOR_MS`] (a shorter one is
    /// raised to it); each wait is then drawn uniformly in
    /// `[wait, 2 × wait]` (the jitter keeps many bots from probing in step).
    /// Returns the wait in force.
    ///
    /// A shorter wait than the one in force also shortens a wait under way:
    /// the next connect goes at the sooner of the one planned and a fresh
    /// draw from `now_ms` (a DJ who has become likely to start is probed
    /// sooner). A longer one applies from the next probe on; a connect
    /// planned for another reason (a backoff, a refresh) is never moved.
    ///
    /// ```
    /// use onair::api::{ConnectLoop, Step, StreamConfig, NOT_ON_AIR_FLOOR_MS};
    ///
    /// let mut lp = ConnectLoop::new(StreamConfig::default(), 7);
    /// assert_eq!(lp.poll(0), Step::Connect);
    /// lp.on_response(404, &[("content-type", "application/json")],
    ///     br#"{"detailCode":"OAPI_MNGR_0301"}"#, 0).unwrap();
    /// // Probe this DJ every 60–120 s from now on.
    /// assert_eq!(lp.set_not_on_air_wait(0, 60_000), 60_000);
    /// // The wait under way (3–6 s by default) is shorter: it stands.
    /// assert!(lp.next_connect_at_ms().is_some_and(|at| at <= 6_000));
    /// assert_eq!(lp.poll(6_000), Step::Connect);
    /// lp.on_response(404, &[("content-type", "application/json")],
    ///     br#"{"detailCode":"OAPI_MNGR_0301"}"#, 6_000).unwrap();
    /// let at = lp.next_connect_at_ms().unwrap();
    /// assert!((66_000..=126_000).contains(&at));
    /// // Asked for 1 s: the spec's floor holds, and the wait under way is
    /// // cut to at most 6 s from now.
    /// assert_eq!(lp.set_not_on_air_wait(7_000, 1_000), NOT_ON_AIR_FLOOR_MS);
    /// assert!(lp.next_connect_at_ms().is_some_and(|at| (10_000..=13_000).contains(&at)));
    /// ```
    pub fn set_not_on_air_wait(&mut self, now_ms: u64, wait_ms: u64) -> u64 {
        let wait = wait_ms.max(NOT_ON_AIR_FLOOR_MS);
        let shorter = wait < self.config.not_on_air_min_ms;
        self.config.not_on_air_min_ms = wait;
        self.config.not_on_air_max_ms = wait.saturating_mul(2);
        if let (true, true, State::ConnectAt(at)) = (shorter, self.not_on_air, self.state) {
            let sooner = now_ms.saturating_add(self.not_on_air_ms());
            if sooner < at {
                self.state = State::ConnectAt(sooner);
            }
        }
        wait
    }

    /// The wait in force between two connects that find the DJ not on air:
    /// each is drawn in `[min, max]` (ms).
    pub fn not_on_air_wait(&self) -> (u64, u64) {
        (self.config.not_on_air_min_ms, self.config.not_on_air_max_ms)
    }

    /// Starts over after a stop (for example once the DJ authorized the bot
    /// again): counters cleared, connect at once.
    pub fn restart(&mut self, now_ms: u64) {
        self.clear_stop();
        self.state = State::ConnectAt(now_ms);
    }

    /// Lifts a stop while a new token pair is on its way (the DJ gave a new
    /// consent code): nothing connects and the stop is not reported again;
    /// [`restart`](Self::restart) or
    /// [`on_token_refreshed`](Self::on_token_refreshed) connects once the
    /// pair is in.
    pub fn await_new_tokens(&mut self) {
        self.clear_stop();
        self.state = State::Refreshing;
    }

    fn clear_stop(&mut self) {
        self.stop = None;
        self.pending_close = false;
        self.notice = None;
        self.backoff.reset();
        self.storm.reset();
        self.quick_reconnects = 0;
        self.unauthorized = false;
        self.last_problem = None;
    }

    fn stopped(&mut self, stop: Stop) -> State {
        self.stop = Some(stop);
        State::Stopped
    }

    fn not_on_air_ms(&mut self) -> u64 {
        self.rng
            .between(self.config.not_on_air_min_ms, self.config.not_on_air_max_ms)
    }

    /// A connection that ended without an end frame: close it, back off.
    fn drop_connection(&mut self, now_ms: u64) {
        self.pending_close = true;
        self.state = State::ConnectAt(now_ms.saturating_add(self.backoff.next_delay_ms()));
    }

    /// Applies one decoded item of the open stream.
    fn observe(&mut self, item: &Item, now_ms: u64) {
        let State::Open {
            opened_ms, healthy, ..
        } = &mut self.state
        else {
            return;
        };
        let (opened_ms, framed_before) = (*opened_ms, *healthy);
        if let Item::Event {
            event: Event::End(end),
            ..
        } = item
        {
            let quick =
                !framed_before && now_ms.saturating_sub(opened_ms) < self.config.storm_window_ms;
            self.on_end(&end.reason, quick, now_ms);
            return;
        }
        let frame = matches!(
            item,
            Item::Heartbeat | Item::Event { .. } | Item::Unknown { .. }
        );
        if frame && !framed_before {
            *healthy = true;
            self.backoff.reset();
        }
    }

    fn on_end(&mut self, reason: &EndReason, quick: bool, now_ms: u64) {
        self.pending_close = true;
        if !quick || *reason != EndReason::Reconnect {
            self.quick_reconnects = 0;
            self.storm.reset();
        }
        self.not_on_air = *reason == EndReason::LiveEnded;
        self.state = match reason {
            EndReason::LiveEnded => State::ConnectAt(now_ms.saturating_add(self.not_on_air_ms())),
            EndReason::TokenExpired => {
                self.unauthorized = false;
                State::RefreshAt(now_ms)
            }
            // The spec's table: reconnect at once, every time. Only a storm
            // (a connection ending again at once, before any frame) is braked.
            EndReason::Reconnect if quick => {
                self.quick_reconnects = self.quick_reconnects.saturating_add(1);
                if self.quick_reconnects >= 2 {
                    let until_ms = now_ms.saturating_add(self.storm.next_delay_ms());
                    self.notice = Some(StreamNotice::ReconnectStormBraked { until_ms });
                    State::ConnectAt(until_ms)
                } else {
                    State::ConnectAt(now_ms)
                }
            }
            EndReason::Reconnect => State::ConnectAt(now_ms),
            // An end reason this version does not know: treat it as a drop.
            EndReason::Other(_) => {
                State::ConnectAt(now_ms.saturating_add(self.backoff.next_delay_ms()))
            }
        };
    }
}

/// The items of one chunk of the open stream, applied to the loop as they are
/// decoded. Returned by [`ConnectLoop::on_bytes`]; drain it.
#[derive(Debug)]
#[must_use = "the chunk is only read as the iterator is drained"]
pub struct StreamItems<'m, 'c> {
    machine: &'m mut ConnectLoop,
    chunk: sse::Chunk<'c>,
    now_ms: u64,
}

impl Iterator for StreamItems<'_, '_> {
    type Item = Item;

    fn next(&mut self) -> Option<Item> {
        if !matches!(self.machine.state, State::Open { .. }) {
            return None;
        }
        let item = self.machine.decoder.next_item_in(&mut self.chunk)?;
        self.machine.observe(&item, self.now_ms);
        Some(item)
    }
}

#[cfg(test)]
mod tests;
