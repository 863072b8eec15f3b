//! Tokens: consent, refreshes, the one-refresh rule on 401, revocation.

use super::*;

/// The wait before a refresh that failed in a way that may pass is tried
/// again. Keeps: no wait (`at_ms` 0) and a fresh backoff once a new pair
/// is in.
#[derive(Debug)]
pub(super) struct RefreshRetry {
    backoff: Backoff,
    /// Not before then (unix ms).
    at_ms: u64,
}

impl RefreshRetry {
    pub(super) fn new(seed: u64) -> Self {
        Self {
            backoff: Backoff::new(seed),
            at_ms: 0,
        }
    }

    /// When a refresh may go (unix ms; 0: at once).
    pub(super) fn at_ms(&self) -> u64 {
        self.at_ms
    }

    /// A refresh failed at `now_ms` in a way that may pass: the next waits
    /// a backoff.
    fn failed(&mut self, now_ms: u64) {
        self.at_ms = now_ms.saturating_add(self.backoff.next_delay_ms());
    }

    /// A new pair is in.
    fn reset(&mut self) {
        self.backoff.reset();
        self.at_ms = 0;
    }
}

/// The credentials check at start ([`BotConfig::check_credentials`]): a
/// revocation of a token that does not exist, which only an authenticated
/// client gets a 200 for. Keeps: it is due only while its request was
/// built, and it is sent at most [`CHECK_MAX_ATTEMPTS`] times.
#[derive(Debug)]
pub(super) struct CredentialsCheck {
    /// The check's request, built at start.
    request: Option<HttpRequest>,
    /// Whether a check is still to send, at `due_ms` (kept apart from
    /// `due_ms` rather than as an `Option`: it packs with `attempts`).
    due: bool,
    /// When the check still to send goes: not before then (unix ms).
    due_ms: u64,
    /// Checks sent so far.
    attempts: u32,
    backoff: Backoff,
}

impl CredentialsCheck {
    /// Due at once when `request` was built.
    pub(super) fn new(request: Option<HttpRequest>, seed: u64) -> Self {
        Self {
            due: request.is_some(),
            due_ms: 0,
            request,
            attempts: 0,
            backoff: Backoff::new(seed),
        }
    }

    /// When the check still to send goes.
    pub(super) fn due_ms(&self) -> Option<u64> {
        self.due.then_some(self.due_ms)
    }

    /// The check's request, to send now: it is no longer due, and counts as
    /// an attempt.
    fn start(&mut self) -> Option<HttpRequest> {
        let request = self.request.clone()?;
        self.due = false;
        self.attempts += 1;
        Some(request)
    }

    /// No answer at `now_ms`: due again after a backoff (at least a
    /// second), while attempts remain.
    fn on_failure(&mut self, now_ms: u64) {
        if self.attempts < CHECK_MAX_ATTEMPTS {
            let delay = self.backoff.next_delay_ms().max(1_000);
            self.due = true;
            self.due_ms = now_ms.saturating_add(delay);
        }
    }
}

/// The consent code: the one waiting to be exchanged, the exchange in
/// flight, and the retries of one that was not sent. Keeps: a code waiting
/// goes out only once no token request is in flight, and one that was not
/// sent goes again only while fresh ([`CODE_FRESH_MS`] from when it was
/// first sent).
#[derive(Debug)]
pub(super) struct CodeExchange {
    /// A code to exchange: (code, redirect_uri).
    pending: Option<(Secret, String)>,
    /// The exchange in flight: its code and redirect URI, to send it again
    /// when it never left (`on_not_sent`).
    sent: Option<(Secret, String)>,
    /// When the current code was first sent.
    first_sent_ms: Option<u64>,
    /// When the exchange of a code that was not sent goes again.
    retry_at_ms: u64,
    backoff: Backoff,
}

impl CodeExchange {
    pub(super) fn new(seed: u64) -> Self {
        Self {
            pending: None,
            sent: None,
            first_sent_ms: None,
            retry_at_ms: 0,
            backoff: Backoff::with_limits(500, 5_000, seed),
        }
    }

    /// A new code from consent: to exchange at once.
    fn give(&mut self, code: &str, redirect_uri: &str) {
        self.pending = Some((Secret::new(code), redirect_uri.to_owned()));
        self.first_sent_ms = None;
        self.retry_at_ms = 0;
        self.backoff.reset();
    }

    /// Whether a code waits to be exchanged.
    pub(super) fn is_pending(&self) -> bool {
        self.pending.is_some()
    }

    /// When the code waiting goes (again), if one waits.
    pub(super) fn retry_at_ms(&self) -> Option<u64> {
        self.pending.as_ref().map(|_| self.retry_at_ms)
    }

    /// The waiting code is dropped (a stop for good replaced the wait).
    pub(super) fn forget(&mut self) {
        self.pending = None;
    }

    /// The exchange in flight was answered, or got no answer: its code is
    /// spent.
    pub(super) fn spent(&mut self) {
        self.sent = None;
    }

    /// The exchange of `code` goes out at `now_ms`.
    fn sending(&mut self, code: Secret, redirect_uri: String, now_ms: u64) {
        self.first_sent_ms.get_or_insert(now_ms);
        self.sent = Some((code, redirect_uri));
    }

    /// The exchange in flight was not sent at `now_ms`: `None` when none
    /// was in flight (a refresh was); `Some(true)` when its code waits to go
    /// again after a backoff, `Some(false)` when it would no longer be
    /// fresh by then (it is dropped).
    fn on_not_sent(&mut self, now_ms: u64) -> Option<bool> {
        let (code, redirect_uri) = self.sent.take()?;
        let first = *self.first_sent_ms.get_or_insert(now_ms);
        let retry_at = now_ms.saturating_add(self.backoff.next_delay_ms().max(250));
        if retry_at >= first.saturating_add(CODE_FRESH_MS) {
            return Some(false);
        }
        self.pending = Some((code, redirect_uri));
        self.retry_at_ms = retry_at;
        Some(true)
    }
}

impl Bot {
    /// Exchanges the code from DJ consent (single use: sent once, never
    /// retried). The answer to [`Action::NeedsAuthorization`], and the way
    /// back after [`Stop::Reauthorize`].
    pub fn authorize(&mut self, code: &str, redirect_uri: &str) {
        if self
            .stopped
            .as_ref()
            .is_some_and(|s| !s.resumes_with_new_consent())
        {
            return;
        }
        self.code.give(code, redirect_uri);
        if self.stopped.take().is_some() {
            // The stream starts over once the new pair is in. Until then it
            // waits: the connect-loop may hold the stop itself (a second 401
            // on the stream), and must not report it again meanwhile.
            self.stream.await_new_pair();
        }
    }

    /// Takes a pair another process stored, when it is newer (a higher
    /// [`Tokens::generation`]) than the bot's: several processes sharing one
    /// integration's tokens refresh once between them. A refresh in flight
    /// is dropped (report its answer or not: it is ignored) and a stop for
    /// consent is lifted (a refresh refused because the other process had
    /// rotated the token); the pair is not handed out again for saving.
    /// `false` (nothing changes) for an older or equal pair, during a code
    /// exchange, or once the bot stopped for another reason.
    ///
    /// ```
    /// # use onair::{Action, BaseUrl, Bot, BotConfig, ClientCredentials, Tokens};
    /// # let creds = ClientCredentials::new("3f2504e0-4f89-11d3-9a0c-0305e82c3301", "s")?;
    /// let stored = Tokens::from_json(br#"{"format":"onair.tokens","version":1,"generation":7,
    ///   "access_token":"A7","access_expires_at_ms":9000000,"issued_at_ms":1000,
    ///   "refresh_token":"R7","refresh_expires_at_ms":90000000,"scope":"events.chat"}"#)?;
    /// let mut bot = Bot::new(BotConfig::new(BaseUrl::new("http://127.0.0.1:1")?, creds), None, 1);
    /// assert!(bot.adopt_tokens(stored.clone(), 2000));
    /// assert!(!bot.adopt_tokens(stored, 2000), "not newer");
    /// assert!(matches!(bot.poll(2000), Action::OpenStream { .. }));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn adopt_tokens(&mut self, tokens: Tokens, now_ms: u64) -> bool {
        if self
            .stopped
            .as_ref()
            .is_some_and(|s| !s.resumes_with_new_consent())
        {
            return false;
        }
        if !self.tokens.adopt(tokens) {
            return false;
        }
        // Only a refresh can have been in flight: an exchange refuses.
        self.requests.drop_token_request();
        if self.stopped.take().is_some() {
            self.stream.restart = true;
        }
        self.on_new_pair(now_ms);
        self.try_revoke();
        true
    }

    /// Stops the bot, and drives the drain of every stop for good through
    /// the actions that follow, so a driver's shutdown is its ordinary poll
    /// loop (hand the bot what the stream has read first: the kit counts
    /// it):
    ///
    /// 1. the stream is closed and every request in flight whose answer no
    ///    longer matters is dropped ([`Action::CloseStream`]); queued calls,
    ///    and calls among those requests, are answered
    ///    [`CallFailure::Cancelled`]; the kit's last state is handed out
    ///    ([`Action::PersistState`]);
    /// 2. a token request in flight is kept, and with `revoke` the tokens
    ///    are revoked (one last request, sent once that token request has
    ///    been answered) and forgotten; a pair that arrives meanwhile is
    ///    handed out ([`Action::PersistTokens`]);
    /// 3. [`Action::Wait`] while they are in flight, at most
    ///    [`BotConfig::shutdown_grace_ms`] (30 s) from the first poll after
    ///    the stop; then whatever is left is dropped (`CloseStream`);
    /// 4. [`Action::Stopped`]`(`[`Stop::ShutDown`]`)` last, and for good.
    ///
    /// Calling it again with `revoke` revokes too (with a grace of its own
    /// when the first was over); without, it changes nothing.
    pub fn shutdown(&mut self, revoke: bool) {
        if revoke {
            // Asked after the grace was over, the revocation gets its own.
            self.drain.ask_revoke(self.clock_ms);
        }
        self.try_revoke();
        self.halt(Stop::ShutDown);
    }

    pub(super) fn generation(&self) -> u64 {
        self.tokens.tokens().map_or(0, Tokens::generation)
    }

    pub(super) fn poll_tokens(&mut self, now_ms: u64) -> Option<Action> {
        if self.token_request_in_flight() {
            return None;
        }
        if self.code.retry_at_ms().is_some_and(|at| now_ms < at) {
            // An exchange that was not sent goes again after its backoff.
            return None;
        }
        if let Some((code, redirect_uri)) = self.code.pending.take() {
            return match self
                .tokens
                .start_exchange(code.expose(), &redirect_uri, now_ms)
            {
                Ok(request) => {
                    self.code.sending(code, redirect_uri, now_ms);
                    Some(self.send(Purpose::Token, request, now_ms))
                }
                Err(_) => {
                    // The same code again, or a malformed one: it cannot be used.
                    self.halt(Stop::Reauthorize(AuthProblem::CodeUnusable));
                    None
                }
            };
        }
        match self.tokens.problem() {
            None => {}
            // Not authorized yet: `NeedsAuthorization`, not a stop.
            Some(AuthProblem::NotAuthorized) => return None,
            Some(problem) => {
                let stop = Stop::from(problem.clone());
                self.halt(stop);
                return None;
            }
        }
        // A 401 makes the refresh due at once (TokenManager::on_unauthorized).
        let wanted = self.stream.wants_refresh || self.tokens.refresh_due(now_ms);
        if !wanted || now_ms < self.refresh.at_ms() {
            return None;
        }
        match self.tokens.start_refresh(now_ms) {
            Ok(request) => Some(self.send(Purpose::Token, request, now_ms)),
            Err(_) => {
                // Blocked (no refresh token, or it expired).
                if let Some(problem) = self.tokens.problem() {
                    let stop = Stop::from(problem.clone());
                    self.halt(stop);
                }
                None
            }
        }
    }

    pub(super) fn try_revoke(&mut self) {
        if !self.drain.revoke {
            return;
        }
        match self.tokens.revoke() {
            Ok(request) => {
                self.drain.revoke = false;
                // Sent at "time 0" of its own: the bot is stopping, so its
                // deadline never matters; it is kept only to match the report.
                let id = self.requests.push_undated(Purpose::Revoke);
                self.out.push_back(Action::Send {
                    id,
                    request,
                    timeout_ms: self.requests.timeout_ms(),
                });
            }
            // A refresh or exchange is in flight: its answer comes first.
            Err(OAuthError::Misuse(Misuse::TokenRequestInFlight)) => {}
            Err(_) => self.drain.revoke = false,
        }
    }

    pub(super) fn on_token_response<H: Header>(
        &mut self,
        status: u16,
        headers: impl IntoIterator<Item = H>,
        body: &[u8],
        now_ms: u64,
    ) {
        self.code.spent();
        let problem = classify(Endpoint::Token, status, headers, body);
        if let Ok(outcome) = self.tokens.on_response(status, body, now_ms) {
            if !matches!(outcome, TokenOutcome::Persist(_)) {
                self.notice(Endpoint::Token, &problem);
            }
            self.on_token_outcome(outcome, now_ms);
        }
    }

    pub(super) fn on_token_outcome(&mut self, outcome: TokenOutcome, now_ms: u64) {
        match outcome {
            TokenOutcome::Persist(tokens) => {
                self.on_new_pair(now_ms);
                self.out.push_back(Action::PersistTokens(tokens));
            }
            TokenOutcome::RetryLater(_) => {
                self.refresh.failed(now_ms);
            }
            TokenOutcome::Blocked(problem) => self.halt(Stop::from(problem)),
        }
        self.try_revoke();
    }

    /// A new pair is in (a refresh, an exchange, or adopted from a store):
    /// the stream that waited for it goes on, a stopped one starts over.
    fn on_new_pair(&mut self, now_ms: u64) {
        self.refresh.reset();
        self.stream.on_new_pair(self.stopped.is_some(), now_ms);
    }

    /// The one-refresh rule ([`TokenManager::on_unauthorized`]) for a 401 of
    /// a request sent with the pair of `sent_generation` (a call or the
    /// stream alike): when it says the grant is gone, the bot stops for
    /// re-authorization.
    pub(super) fn on_unauthorized(&mut self, sent_generation: u64) -> Unauthorized {
        let decision = self.tokens.on_unauthorized(sent_generation);
        if decision == Unauthorized::Reauthorize {
            self.halt(Stop::Reauthorize(AuthProblem::AccessRejected));
        }
        decision
    }

    /// Whether the bot waits for the DJ's consent: no pair yet, or a stop a
    /// new consent code lifts.
    pub(super) fn awaits_consent(&self) -> bool {
        self.stopped
            .as_ref()
            .is_some_and(Stop::resumes_with_new_consent)
            || (self.stopped.is_none()
                && self.tokens.problem() == Some(&AuthProblem::NotAuthorized))
    }
}

impl Bot {
    /// The token request in flight was not sent ([`Bot::on_not_sent`]): a
    /// code exchange goes again with the same code while it is fresh
    /// ([`CODE_FRESH_MS`]), then the DJ must consent again (the service could
    /// not be reached); a refresh is retried with backoff.
    pub(super) fn on_token_not_sent(&mut self, outcome: TokenOutcome, now_ms: u64) {
        match self.code.on_not_sent(now_ms) {
            None => self.on_token_outcome(outcome, now_ms),
            Some(true) => {}
            Some(false) => self.halt(Stop::Reauthorize(AuthProblem::ExchangeFailed(
                crate::proto::oauth::TokenFailure::NotSent,
            ))),
        }
    }

    /// The credentials check, when it is due ([`BotConfig::check_credentials`]).
    pub(super) fn poll_check(&mut self, now_ms: u64) -> Option<Action> {
        let due = self.check_deadline()?;
        if now_ms < due {
            return None;
        }
        let request = self.check.start()?;
        Some(self.send(Purpose::Check, request, now_ms))
    }

    /// When the credentials check goes, while one is to be sent.
    pub(super) fn check_deadline(&self) -> Option<u64> {
        if self.stopped.is_some() || self.tokens.problem().is_some() {
            return None;
        }
        self.check.due_ms()
    }

    /// The answer to the credentials check: 401 (or `invalid_client`) stops
    /// the bot for the app's configuration; 5xx and 429 try again later;
    /// anything else means the client authenticated.
    pub(super) fn on_check_response<H: Header>(
        &mut self,
        status: u16,
        headers: impl IntoIterator<Item = H>,
        body: &[u8],
        now_ms: u64,
    ) {
        let problem = classify(Endpoint::Revoke, status, headers, body);
        if status == 401 || problem.kind == ProblemKind::InvalidClient {
            self.halt(Stop::InvalidClient);
        } else if status >= 500 || status == 429 {
            self.notice(Endpoint::Revoke, &problem);
            self.on_check_failure(now_ms);
        }
    }

    /// No answer to the credentials check: tried again later, a few times
    /// (a wrong secret is found at the first refresh otherwise).
    pub(super) fn on_check_failure(&mut self, now_ms: u64) {
        self.check.on_failure(now_ms);
    }
}
