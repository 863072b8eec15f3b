//! Requests in flight: ids, deadlines, and the reports that answer them.

use super::*;

#[derive(Debug)]
pub(super) enum Purpose {
    Token,
    Revoke,
    /// A call, with the token generation it was sent with.
    Call(Box<Call>, u64),
}

#[derive(Debug)]
pub(super) struct InFlight {
    pub(super) id: RequestId,
    pub(super) purpose: Purpose,
    pub(super) deadline_ms: u64,
}

impl Bot {
    pub(super) fn request_id(&mut self) -> RequestId {
        self.next_request += 1;
        RequestId(self.next_request)
    }

    pub(super) fn send(&mut self, purpose: Purpose, request: HttpRequest, now_ms: u64) -> Action {
        let id = self.request_id();
        self.in_flight.push(InFlight {
            id,
            purpose,
            deadline_ms: now_ms.saturating_add(self.request_timeout_ms),
        });
        Action::Send {
            id,
            request,
            timeout_ms: self.request_timeout_ms,
        }
    }

    /// Requests whose deadline passed without a report: failed by the bot.
    pub(super) fn expire_requests(&mut self, now_ms: u64) {
        while let Some(index) = self.in_flight.iter().position(|f| f.deadline_ms <= now_ms) {
            let expired = self.in_flight.swap_remove(index);
            let endpoint = match &expired.purpose {
                Purpose::Token => Endpoint::Token,
                Purpose::Revoke => Endpoint::Revoke,
                Purpose::Call(call, _) => call.op.endpoint(),
            };
            self.out.push_back(Action::TimedOut {
                id: expired.id,
                endpoint,
            });
            self.on_no_response(expired.purpose, now_ms);
        }
    }

    pub(super) fn token_request_in_flight(&self) -> bool {
        self.in_flight
            .iter()
            .any(|f| matches!(f.purpose, Purpose::Token))
    }

    /// Whether `id` was ever issued by this bot.
    pub(super) fn issued(&self, id: RequestId) -> bool {
        (1..=self.next_request).contains(&id.0)
    }

    /// Finds the plain request `id`: `Ok(Some)` in flight, `Ok(None)` a late
    /// report of a request the bot is done with, `Err` never issued.
    pub(super) fn take_in_flight(&mut self, id: RequestId) -> Result<Option<Purpose>, Misuse> {
        if !self.issued(id) {
            return Err(Misuse::UnknownRequest(id));
        }
        Ok(self
            .in_flight
            .iter()
            .position(|f| f.id == id)
            .map(|index| self.in_flight.swap_remove(index).purpose))
    }

    pub(super) fn is_plain_request(&self, id: RequestId) -> bool {
        self.in_flight.iter().any(|f| f.id == id)
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
        if matches!(&self.conn, Some(Conn::Opening(open)) if *open == id) {
            self.on_stream_open(id, status, headers, now_ms)?;
            self.on_stream_bytes(id, body, now_ms)?;
            return self.on_stream_closed(id, now_ms);
        }
        if self.conn.as_ref().is_some_and(|c| c.id() == id) {
            return Err(Misuse::NotAStream(id));
        }
        match self.take_in_flight(id)? {
            Some(Purpose::Token) => self.on_token_response(status, headers, body, now_ms),
            Some(Purpose::Revoke) | None => {}
            Some(Purpose::Call(call, generation)) => {
                self.on_call_response(*call, generation, status, headers, body, now_ms);
            }
        }
        Ok(())
    }

    /// A request got no response (connect error, timeout, reset).
    pub fn on_transport_error(&mut self, id: RequestId, now_ms: u64) -> Result<(), Misuse> {
        if self.conn.as_ref().is_some_and(|c| c.id() == id) {
            return self.on_stream_closed(id, now_ms);
        }
        if let Some(purpose) = self.take_in_flight(id)? {
            self.on_no_response(purpose, now_ms);
        }
        Ok(())
    }

    pub(super) fn on_no_response(&mut self, purpose: Purpose, now_ms: u64) {
        match purpose {
            Purpose::Token => {
                if let Ok(outcome) = self.tokens.on_transport_failure(now_ms) {
                    self.on_token_outcome(outcome, now_ms);
                }
            }
            Purpose::Revoke => {}
            Purpose::Call(call, _) => {
                let repeatable = !matches!(call.op, Op::Chat(_));
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
