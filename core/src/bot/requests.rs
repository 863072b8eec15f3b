//! Requests in flight: ids, deadlines, and the reports that answer them.

use super::*;

#[derive(Debug)]
pub(super) enum Purpose {
    Token,
    Revoke,
    /// The credentials check at start (`BotConfig::check_credentials`).
    Check,
    /// A call, with the token generation it was sent with.
    Call(Box<Call>, u64),
}

impl Purpose {
    pub(super) fn endpoint(&self) -> Endpoint {
        match self {
            Purpose::Token => Endpoint::Token,
            Purpose::Revoke | Purpose::Check => Endpoint::Revoke,
            Purpose::Call(call, _) => call.op.endpoint(),
        }
    }
}

#[derive(Debug)]
pub(super) struct InFlight {
    pub(super) id: RequestId,
    pub(super) purpose: Purpose,
    pub(super) deadline_ms: u64,
}

/// The requests handed out ([`Action::Send`], [`Action::OpenStream`]) and,
/// for plain requests, awaiting their report. Keeps: ids are issued once
/// each, counting up from 1 (a stream's too), and every plain request in
/// flight carries its own deadline.
#[derive(Debug)]
pub(super) struct InFlightRequests {
    /// The last id issued.
    last_id: u64,
    /// Plain requests sent and not yet answered.
    requests: Vec<InFlight>,
    /// [`BotConfig::request_timeout_ms`].
    timeout_ms: u64,
}

impl InFlightRequests {
    pub(super) fn new(timeout_ms: u64) -> Self {
        Self {
            last_id: 0,
            requests: Vec::new(),
            timeout_ms,
        }
    }

    /// A new id, never issued before.
    pub(super) fn next_id(&mut self) -> RequestId {
        self.last_id += 1;
        RequestId(self.last_id)
    }

    /// How long a plain request may take ([`Action::Send`]'s `timeout_ms`).
    pub(super) fn timeout_ms(&self) -> u64 {
        self.timeout_ms
    }

    /// A request sent at `now_ms`, due by then plus the timeout: its id.
    fn push(&mut self, purpose: Purpose, now_ms: u64) -> RequestId {
        let id = self.next_id();
        self.requests.push(InFlight {
            id,
            purpose,
            deadline_ms: now_ms.saturating_add(self.timeout_ms),
        });
        id
    }

    /// A request whose deadline never passes (the revocation as the bot
    /// stops: it is kept only to match its report): its id.
    pub(super) fn push_undated(&mut self, purpose: Purpose) -> RequestId {
        let id = self.next_id();
        self.requests.push(InFlight {
            id,
            purpose,
            deadline_ms: u64::MAX,
        });
        id
    }

    /// A request whose deadline is `now_ms` or earlier, taken out.
    fn take_expired(&mut self, now_ms: u64) -> Option<InFlight> {
        let index = self.requests.iter().position(|f| f.deadline_ms <= now_ms)?;
        Some(self.requests.swap_remove(index))
    }

    /// Whether a token request (an exchange or a refresh) is in flight.
    pub(super) fn has_token_request(&self) -> bool {
        self.requests
            .iter()
            .any(|f| matches!(f.purpose, Purpose::Token))
    }

    /// The token request in flight, if any, is dropped (its report will be
    /// ignored).
    pub(super) fn drop_token_request(&mut self) {
        self.requests
            .retain(|f| !matches!(f.purpose, Purpose::Token));
    }

    /// Whether `id` was ever issued.
    fn issued(&self, id: RequestId) -> bool {
        (1..=self.last_id).contains(&id.0)
    }

    /// The plain request `id`, taken out, when it is in flight.
    fn take(&mut self, id: RequestId) -> Option<Purpose> {
        let index = self.requests.iter().position(|f| f.id == id)?;
        Some(self.requests.swap_remove(index).purpose)
    }

    /// Whether `id` is a plain request in flight.
    fn contains(&self, id: RequestId) -> bool {
        self.requests.iter().any(|f| f.id == id)
    }

    /// The calls in flight.
    pub(super) fn calls(&self) -> impl Iterator<Item = &Call> + '_ {
        self.requests.iter().filter_map(|f| match &f.purpose {
            Purpose::Call(call, _) => Some(&**call),
            _ => None,
        })
    }

    /// Whether nothing is in flight.
    pub(super) fn is_empty(&self) -> bool {
        self.requests.is_empty()
    }

    /// The deadlines of the requests in flight.
    pub(super) fn deadlines(&self) -> impl Iterator<Item = u64> + '_ {
        self.requests.iter().map(|f| f.deadline_ms)
    }

    /// Every request in flight but a token request and the revocation,
    /// taken out (the bot stops for good).
    pub(super) fn take_unwanted(&mut self) -> Vec<InFlight> {
        let (kept, dropped) = std::mem::take(&mut self.requests)
            .into_iter()
            .partition(|f| matches!(f.purpose, Purpose::Token | Purpose::Revoke));
        self.requests = kept;
        dropped
    }

    /// Every request in flight, taken out.
    pub(super) fn take_all(&mut self) -> Vec<InFlight> {
        std::mem::take(&mut self.requests)
    }
}

impl Bot {
    pub(super) fn send(&mut self, purpose: Purpose, request: HttpRequest, now_ms: u64) -> Action {
        let id = self.requests.push(purpose, now_ms);
        Action::Send {
            id,
            request,
            timeout_ms: self.requests.timeout_ms(),
        }
    }

    /// Requests whose deadline passed without a report: failed by the bot.
    pub(super) fn expire_requests(&mut self, now_ms: u64) {
        while let Some(expired) = self.requests.take_expired(now_ms) {
            let endpoint = expired.purpose.endpoint();
            self.out.push_back(Action::CloseStream {
                id: expired.id,
                reason: CloseReason::TimedOut,
            });
            self.unreached(endpoint, Unreached::TimedOut, now_ms);
            self.on_no_response(expired.purpose, now_ms);
        }
    }

    pub(super) fn token_request_in_flight(&self) -> bool {
        self.requests.has_token_request()
    }

    /// Whether `id` was ever issued by this bot.
    pub(super) fn issued(&self, id: RequestId) -> bool {
        self.requests.issued(id)
    }

    /// Finds the plain request `id`: `Ok(Some)` in flight, `Ok(None)` a late
    /// report of a request the bot is done with, `Err` never issued.
    pub(super) fn take_in_flight(&mut self, id: RequestId) -> Result<Option<Purpose>, Misuse> {
        if !self.issued(id) {
            return Err(Misuse::UnknownRequest(id));
        }
        Ok(self.requests.take(id))
    }

    pub(super) fn is_plain_request(&self, id: RequestId) -> bool {
        self.requests.contains(id)
    }

    /// The complete response to [`Action::Send`] (or a stream open reported
    /// whole instead of through the stream methods). Headers: any iterator
    /// of (name, value) pairs, e.g. `&[("retry-after", "30")]` or reqwest's
    /// `resp.headers()`.
    pub fn on_response<H: Header>(
        &mut self,
        id: RequestId,
        status: u16,
        headers: impl IntoIterator<Item = H>,
        body: &[u8],
        now_ms: u64,
    ) -> Result<(), Misuse> {
        if matches!(&self.stream.conn, Some(Conn::Opening(open)) if *open == id) {
            self.on_stream_open(id, status, headers, now_ms)?;
            self.on_stream_bytes(id, body, now_ms)?;
            return self.on_stream_closed(id, now_ms);
        }
        if self.stream.conn.as_ref().is_some_and(|c| c.id() == id) {
            return Err(Misuse::NotAStream(id));
        }
        let purpose = self.take_in_flight(id)?;
        if purpose.is_some() {
            self.reached();
        }
        match purpose {
            Some(Purpose::Token) => self.on_token_response(status, headers, body, now_ms),
            Some(Purpose::Check) => self.on_check_response(status, headers, body, now_ms),
            Some(Purpose::Revoke) | None => {}
            Some(Purpose::Call(call, generation)) => {
                self.on_call_response(*call, generation, status, headers, body, now_ms);
            }
        }
        Ok(())
    }

    /// A request got no response: it may have been sent (a reset, a
    /// connection lost after sending, a read timeout), so its outcome is
    /// unknown. A code exchange is then spent, and a chat message is not
    /// sent again (it may have been posted). When the request surely never
    /// left this machine, report [`Bot::on_not_sent`] instead.
    pub fn on_transport_error(&mut self, id: RequestId, now_ms: u64) -> Result<(), Misuse> {
        if let Some(conn) = self.stream.conn.as_ref().filter(|c| c.id() == id) {
            if matches!(conn, Conn::Opening(_)) {
                self.unreached(Endpoint::Events, Unreached::NoResponse, now_ms);
            }
            return self.on_stream_closed(id, now_ms);
        }
        if let Some(purpose) = self.take_in_flight(id)? {
            self.unreached(purpose.endpoint(), Unreached::NoResponse, now_ms);
            self.on_no_response(purpose, now_ms);
        }
        Ok(())
    }

    /// The request never left this machine: connection refused, DNS
    /// failure, TLS handshake failure, connect timeout. Unlike
    /// [`Bot::on_transport_error`] nothing was spent: a consent code
    /// exchange goes again (with backoff, while the code is fresh:
    /// [`CODE_FRESH_MS`]), a chat message is repeatable, a refresh is
    /// retried, and a stream open is a failed connect (backoff). It counts
    /// as the service not being reached ([`Notice::Unreachable`]).
    ///
    /// ```
    /// use onair::{Action, BaseUrl, Bot, BotConfig, ClientCredentials};
    /// # let creds = ClientCredentials::new("3f2504e0-4f89-11d3-9a0c-0305e82c3301", "s")?;
    /// let mut bot = Bot::new(BotConfig::new(BaseUrl::new("http://127.0.0.1:1")?, creds), None, 1);
    /// bot.authorize("code-from-consent", "https://bot.example/callback");
    /// let Action::Send { id, .. } = bot.poll(0) else { panic!() };
    /// bot.on_not_sent(id, 10)?; // connection refused
    /// assert!(matches!(bot.poll(10), Action::Notice(onair::Notice::Unreachable { .. })));
    /// // The code was not spent: the exchange goes again after a backoff.
    /// let Action::Wait { until_ms: Some(at) } = bot.poll(10) else { panic!() };
    /// assert!(matches!(bot.poll(at), Action::Send { .. }));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn on_not_sent(&mut self, id: RequestId, now_ms: u64) -> Result<(), Misuse> {
        if let Some(conn) = self.stream.conn.as_ref().filter(|c| c.id() == id) {
            if matches!(conn, Conn::Opening(_)) {
                self.unreached(Endpoint::Events, Unreached::NotSent, now_ms);
            }
            return self.on_stream_closed(id, now_ms);
        }
        let Some(purpose) = self.take_in_flight(id)? else {
            return Ok(());
        };
        self.unreached(purpose.endpoint(), Unreached::NotSent, now_ms);
        match purpose {
            Purpose::Token => {
                if let Ok(outcome) = self.tokens.on_not_sent(now_ms) {
                    self.on_token_not_sent(outcome, now_ms);
                }
            }
            Purpose::Revoke => {}
            Purpose::Check => self.on_check_failure(now_ms),
            Purpose::Call(call, _) => {
                self.retry_or_fail(*call, true, CallFailure::Transport, now_ms);
            }
        }
        Ok(())
    }

    pub(super) fn on_no_response(&mut self, purpose: Purpose, now_ms: u64) {
        match purpose {
            Purpose::Token => {
                self.code.spent();
                if let Ok(outcome) = self.tokens.on_transport_failure(now_ms) {
                    self.on_token_outcome(outcome, now_ms);
                }
            }
            Purpose::Revoke => {}
            Purpose::Check => self.on_check_failure(now_ms),
            Purpose::Call(call, _) => {
                let repeatable = !matches!(call.op, Op::Chat(_) | Op::Reply { .. });
                self.retry_or_fail(*call, repeatable, CallFailure::Transport, now_ms);
            }
        }
    }

    pub(super) fn notice(&mut self, endpoint: Endpoint, problem: &Problem) {
        if !problem.is_ok() {
            self.out.push_back(Action::Notice(Notice::Problem {
                endpoint,
                problem: problem.clone(),
            }));
        }
    }
}
