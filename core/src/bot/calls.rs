//! App calls: the queue, pacing, retries and the answer of each.

use super::*;

/// An app call waiting in the queue or in flight.
#[derive(Debug, Clone)]
pub(super) struct Call {
    pub(super) id: CallId,
    pub(super) op: Op,
    /// Attempts made so far.
    pub(super) attempts: u32,
    /// Not before this time (retry delays).
    pub(super) not_before_ms: u64,
    /// A 401 was met with this token generation: wait for a newer one.
    pub(super) wait_for_newer_than: Option<u64>,
}

#[derive(Debug, Clone)]
pub(super) enum Op {
    Broadcast,
    Listeners(ListenerPager),
    Fans,
    Chat(String),
    /// The kit's own `GET /v1/live`, once per stream connection: which
    /// broadcast this is (its `liveId`). Answered to the kit, not the app.
    LiveId,
    /// A reply's place in the chat queue (`first`), and, once the pacer
    /// took it, the replies its message holds (see `replies.rs`).
    Reply {
        first: u64,
        batch: Vec<super::replies::Entry>,
    },
}

impl Op {
    pub(super) fn endpoint(&self) -> Endpoint {
        match self {
            Op::Broadcast | Op::LiveId => Endpoint::Live,
            Op::Listeners(_) => Endpoint::Listeners,
            Op::Fans => Endpoint::Fans,
            Op::Chat(_) | Op::Reply { .. } => Endpoint::Chat,
        }
    }
}

/// The app calls: their ids, the queue, the retry pacing, and the
/// answers still to count. Keeps: ids count up from 1, never reused; at
/// most `max_queued` app calls (replies aside) wait in the queue; a call is
/// tried at most `max_attempts` times.
#[derive(Debug)]
pub(super) struct Calls {
    /// The last id given.
    last_id: u64,
    /// The calls waiting, the head first (replies among them).
    pub(super) queue: VecDeque<Call>,
    /// Backoff between retries; reset by a success.
    backoff: Backoff,
    /// [`BotConfig::max_queued_calls`].
    max_queued: usize,
    /// [`BotConfig::max_attempts`].
    max_attempts: u32,
    /// Chat calls not yet answered, to count their fate.
    chats: Vec<CallId>,
    /// App calls answered by a failure not yet polled, with their endpoint.
    failed: Vec<(CallId, Endpoint)>,
}

impl Calls {
    pub(super) fn new(max_queued: usize, max_attempts: u32, seed: u64) -> Self {
        Self {
            last_id: 0,
            queue: VecDeque::new(),
            backoff: Backoff::new(seed),
            max_queued,
            max_attempts,
            chats: Vec::new(),
            failed: Vec::new(),
        }
    }

    /// A new call's id.
    fn next_id(&mut self) -> CallId {
        self.last_id += 1;
        CallId(self.last_id)
    }

    /// The limit, when the queue holds that many app calls (replies aside).
    fn full(&self) -> Option<usize> {
        let app_calls = self
            .queue
            .iter()
            .filter(|c| !matches!(c.op, Op::Reply { .. }))
            .count();
        (app_calls >= self.max_queued).then_some(self.max_queued)
    }

    /// `call` is a chat call whose fate is counted when it is answered.
    fn watch_chat(&mut self, call: CallId) {
        self.chats.push(call);
    }

    /// Whether `call` was a chat call not yet answered (now it is).
    pub(super) fn take_chat(&mut self, call: CallId) -> bool {
        let Some(i) = self.chats.iter().position(|c| *c == call) else {
            return false;
        };
        self.chats.swap_remove(i);
        true
    }

    /// `call` (of `endpoint`) is answered by a failure.
    pub(super) fn note_failed(&mut self, call: CallId, endpoint: Endpoint) {
        self.failed.push((call, endpoint));
    }

    /// The endpoint of `call` when it was answered by a failure not yet
    /// polled (now it is).
    pub(super) fn take_failed(&mut self, call: CallId) -> Option<Endpoint> {
        let i = self.failed.iter().position(|(c, _)| *c == call)?;
        Some(self.failed.swap_remove(i).1)
    }

    /// Whether `call` was tried as many times as it may be.
    fn attempts_used_up(&self, call: &Call) -> bool {
        call.attempts >= self.max_attempts
    }

    /// Every queued call, taken out.
    pub(super) fn take_all(&mut self) -> VecDeque<Call> {
        std::mem::take(&mut self.queue)
    }

    /// The queued chat calls (not replies), taken out.
    fn take_chat_queued(&mut self) -> VecDeque<Call> {
        let (chat, others) = std::mem::take(&mut self.queue)
            .into_iter()
            .partition(|c| matches!(c.op, Op::Chat(_)));
        self.queue = others;
        chat
    }
}

impl Bot {
    /// Queues a chat message after checking it locally (at most 200 UTF-16
    /// units, not blank), so no quota call is spent on one the server would
    /// refuse: a message that fails the check is the caller's to fix, and
    /// nothing is queued. Messages go out in the order queued; each one's
    /// fate comes as [`Action::Done`] (a full queue or a stopped bot too, see
    /// [`fetch_broadcast`](Self::fetch_broadcast)).
    ///
    /// ```
    /// # use onair::{BaseUrl, Bot, BotConfig, ClientCredentials};
    /// # let creds = ClientCredentials::new("3f2504e0-4f89-11d3-9a0c-0305e82c3301", "s")?;
    /// # let mut bot = Bot::new(BotConfig::new(BaseUrl::new("http://127.0.0.1:1")?, creds), None, 1);
    /// assert!(bot.send_chat("hello!").is_ok());
    /// assert_eq!(bot.send_chat("   ").unwrap_err().kind, onair::ChatErrorKind::Empty);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn send_chat(&mut self, message: &str) -> Result<CallId, ChatError> {
        crate::proto::chat::validate_chat(message)?;
        let call = self.queue(Op::Chat(message.to_owned()));
        self.calls.watch_chat(call);
        Ok(call)
    }

    /// Queues `GET /v1/live`; the answer comes as [`Action::Done`].
    ///
    /// Every app call is accepted: a call the bot cannot take (its queue
    /// holds [`BotConfig::max_queued_calls`] calls, or it has stopped for
    /// good) is answered at once by `Done` with
    /// [`CallFailure::QueueFull`] or [`CallFailure::Stopped`]; a call made
    /// while the bot waits for the DJ's consent is held
    /// ([`Notice::CallHeld`]) and goes out with the new pair.
    pub fn fetch_broadcast(&mut self) -> CallId {
        self.queue(Op::Broadcast)
    }

    /// Queues the listener list: every page, deduplicated by `id`. See
    /// [`fetch_broadcast`](Self::fetch_broadcast) for how it is answered.
    pub fn list_listeners(&mut self) -> CallId {
        self.queue(Op::Listeners(ListenerPager::new()))
    }

    /// Queues `GET /v1/live/fans`. See
    /// [`fetch_broadcast`](Self::fetch_broadcast) for how it is answered.
    pub fn fetch_fans(&mut self) -> CallId {
        self.queue(Op::Fans)
    }

    /// App calls queued and not yet answered (in flight included).
    pub fn pending_calls(&self) -> usize {
        let app = |op: &Op| !matches!(op, Op::LiveId | Op::Reply { .. });
        self.calls.queue.iter().filter(|c| app(&c.op)).count()
            + self.requests.calls().filter(|c| app(&c.op)).count()
    }

    /// Asks which broadcast this is (the kit's `GET /v1/live`, once per
    /// stream connection), when the kit is configured and the DJ granted
    /// `live.read`; a request already queued is enough.
    pub(super) fn ask_live_id(&mut self) {
        let granted = self
            .tokens
            .tokens()
            .is_some_and(|t| t.scope().contains(&crate::Permission::LiveRead));
        let asked = self.calls.queue.iter().any(|c| matches!(c.op, Op::LiveId))
            || self.requests.calls().any(|c| matches!(c.op, Op::LiveId));
        if self.kit.is_some() && granted && !asked {
            self.calls.queue.push_back(Call {
                id: CallId(0),
                op: Op::LiveId,
                attempts: 0,
                not_before_ms: 0,
                wait_for_newer_than: None,
            });
        }
    }

    /// Takes a call: queued, held for consent, or refused at once with its
    /// reason (a `Done` on the next poll, never a silent drop).
    pub(super) fn queue(&mut self, op: Op) -> CallId {
        let id = self.calls.next_id();
        if let Some(stop) = self
            .stopped
            .as_ref()
            .filter(|s| !s.resumes_with_new_consent())
        {
            let failure = CallFailure::Stopped(stop.clone());
            self.calls.note_failed(id, op.endpoint());
            self.out.push_back(done(id, CallResult::Failed(failure)));
            return id;
        }
        if let Some(limit) = self.calls.full() {
            let failure = CallFailure::QueueFull { limit };
            self.calls.note_failed(id, op.endpoint());
            self.out.push_back(done(id, CallResult::Failed(failure)));
            return id;
        }
        if self.awaits_consent() {
            self.out
                .push_back(Action::Notice(Notice::CallHeld { call: id }));
        }
        self.calls.queue.push_back(Call {
            id,
            op,
            attempts: 0,
            not_before_ms: 0,
            wait_for_newer_than: None,
        });
        id
    }

    /// When the head call could go, if it waits only for time.
    pub(super) fn call_deadline(&self, now_ms: u64) -> Option<u64> {
        let head = self.calls.queue.front()?;
        let blocked = self.requests.calls().next().is_some()
            || head
                .wait_for_newer_than
                .is_some_and(|seen| self.generation() <= seen)
            || self.tokens.access_token(now_ms).is_none();
        if blocked {
            return None;
        }
        let quota_at = self.quota.next_call_at_endpoint(head.op.endpoint(), now_ms);
        Some(quota_at.max(head.not_before_ms))
    }

    pub(super) fn poll_calls(&mut self, now_ms: u64) -> Option<Action> {
        self.settle_reply_head(now_ms);
        let at = self.call_deadline(now_ms)?;
        let head = self.calls.queue.front()?;
        let quota_at = self.quota.next_call_at_endpoint(head.op.endpoint(), now_ms);
        if quota_at > now_ms.saturating_add(MAX_QUEUE_WAIT_MS) {
            let call = self.calls.queue.pop_front()?;
            self.answer(
                call,
                CallResult::Failed(CallFailure::QuotaBlocked { until_ms: quota_at }),
            );
            return None;
        }
        if at > now_ms {
            return None;
        }
        let generation = self.generation();
        self.tokens.access_token(now_ms)?;
        let mut call = self.calls.queue.pop_front()?;
        let mut reply_text = None;
        if let Op::Reply { first, batch } = &mut call.op {
            let (taken, text) = self.take_reply_batch(*first)?;
            *batch = taken;
            reply_text = Some(text);
        }
        let token = self.tokens.access_token(now_ms)?;
        let built = match &mut call.op {
            Op::Broadcast | Op::LiveId => api::live(&self.base_url, token),
            Op::Fans => api::fans(&self.base_url, token),
            Op::Chat(message) => api::chat(&self.base_url, token, message),
            Op::Reply { .. } => {
                api::chat(&self.base_url, token, reply_text.as_deref().unwrap_or(""))
            }
            Op::Listeners(pager) => match pager.next_request(&self.base_url, token) {
                Ok(Some(request)) => Ok(request),
                Ok(None) => {
                    let listeners = std::mem::take(pager).into_listeners();
                    self.answer(call, CallResult::Listeners(listeners));
                    return None;
                }
                Err(e) => Err(e),
            },
        };
        match built {
            Ok(request) => {
                call.attempts += 1;
                Some(self.send(Purpose::Call(Box::new(call), generation), request, now_ms))
            }
            Err(_) => {
                self.answer(call, CallResult::Failed(CallFailure::Cancelled));
                None
            }
        }
    }

    pub(super) fn on_call_response<H: Header>(
        &mut self,
        mut call: Call,
        sent_generation: u64,
        status: u16,
        headers: impl IntoIterator<Item = H>,
        body: &[u8],
        now_ms: u64,
    ) {
        let endpoint = call.op.endpoint();
        let problem = classify(endpoint, status, headers, body);
        self.quota.on_response(endpoint, &problem, now_ms);
        self.announce_quota(now_ms);
        if problem.advice != Advice::RefreshToken {
            self.tokens.on_accepted(sent_generation);
        }
        if problem.is_ok() {
            self.calls.backoff.reset();
            self.on_call_success(call, body);
            return;
        }
        match problem.advice {
            // The one-refresh rule (spec 7.3): a newer pair, one refresh, or
            // the DJ must authorize again; the call waits for the pair it
            // needs either way (a new consent's, after a stop).
            Advice::RefreshToken => {
                match self.on_unauthorized(sent_generation) {
                    Unauthorized::RetryWithNewer => {}
                    Unauthorized::Refresh | Unauthorized::Reauthorize => {
                        self.notice(endpoint, &problem);
                        call.wait_for_newer_than = Some(sent_generation);
                        call.attempts = call.attempts.saturating_sub(1);
                    }
                }
                self.requeue_front(call, now_ms);
            }
            Advice::RetrySoon | Advice::RetryBackoff => {
                self.notice(endpoint, &problem);
                let quota_paced = matches!(
                    problem.kind,
                    ProblemKind::ChatRateLimited | ProblemKind::QuotaPerSecond
                );
                if quota_paced && matches!(call.op, Op::Reply { .. }) {
                    // A reply waits for the chat limit as long as it is
                    // fresh (its deadline bounds it), merged again with
                    // what came meanwhile.
                    call.attempts = 0;
                }
                if quota_paced {
                    // The quota tracker already holds the next call back.
                    self.retry_in(call, 0, CallFailure::Problem(problem), now_ms);
                } else {
                    self.retry_or_fail(call, true, CallFailure::Problem(problem), now_ms);
                }
            }
            Advice::RetryAfter => {
                self.notice(endpoint, &problem);
                let until_ms = self.quota.next_call_at_endpoint(endpoint, now_ms);
                self.answer(
                    call,
                    CallResult::Failed(CallFailure::QuotaBlocked { until_ms }),
                );
            }
            _ => {
                // Not on air, a missing permission, a malformed request, the
                // bot blocked: a state of the broadcast this call cannot change.
                self.answer(call, CallResult::Failed(CallFailure::Problem(problem)));
            }
        }
    }

    pub(super) fn on_call_success(&mut self, mut call: Call, body: &[u8]) {
        let result = match &mut call.op {
            Op::Chat(_) | Op::Reply { .. } => CallResult::ChatSent,
            Op::Broadcast | Op::LiveId => match api::decode_broadcast(body) {
                Ok(broadcast) => CallResult::Broadcast(broadcast),
                Err(e) => CallResult::Failed(CallFailure::InvalidBody(e)),
            },
            Op::Fans => match api::decode_fans(body) {
                Ok(fans) => CallResult::Fans(fans),
                Err(e) => CallResult::Failed(CallFailure::InvalidBody(e)),
            },
            Op::Listeners(pager) => match pager.on_body(body) {
                Ok(PagerProgress::More) => {
                    call.attempts = 0;
                    self.calls.queue.push_front(call);
                    return;
                }
                Ok(PagerProgress::Complete) => {
                    CallResult::Listeners(std::mem::take(pager).into_listeners())
                }
                Err(e) => CallResult::Failed(CallFailure::Pager(e)),
            },
        };
        self.answer(call, result);
    }

    /// The one place a call's answer goes: `Done` for the app's calls; the
    /// kit's own `liveId` call tells the kit which broadcast this is (a
    /// failure leaves it as it was).
    pub(super) fn answer(&mut self, call: Call, result: CallResult) {
        if let Op::Reply { first, mut batch } = call.op {
            if batch.is_empty() {
                // Answered before the pacer took it (a quota block, a stop).
                if let Some(at) = self.replies.queue.iter().position(|e| e.id == first) {
                    batch.extend(self.replies.queue.remove(at));
                }
            }
            self.reply_answered(batch, &result, self.clock_ms);
            return;
        }
        if !matches!(call.op, Op::LiveId) {
            if matches!(result, CallResult::Failed(_)) {
                self.calls.note_failed(call.id, call.op.endpoint());
            }
            self.out.push_back(done(call.id, result));
            return;
        }
        if let CallResult::Broadcast(broadcast) = result {
            if self.stream.connected() {
                self.stream.started_ms = broadcast
                    .started_at
                    .unix_ms()
                    .and_then(|ms| u64::try_from(ms).ok());
            }
            let ended = self
                .kit
                .as_mut()
                .and_then(|kit| kit.on_live_id(broadcast.live_id));
            self.kit_news(ended);
        }
    }

    /// The broadcast ended (`LIVE_ENDED`): chat still queued was written for
    /// it, and would fail as not on air or land in the next broadcast, so
    /// each such call is answered [`CallFailure::Cancelled`] after the end
    /// event. A chat already sent keeps its answer; chat queued after the
    /// end goes out.
    pub(super) fn cancel_queued_chat(&mut self, now_ms: u64) {
        self.drop_queued_replies(super::replies::DropReason::Ended, now_ms);
        for call in self.calls.take_chat_queued() {
            self.answer(call, CallResult::Failed(CallFailure::Cancelled));
        }
    }

    /// Puts a call back at the head of the queue to be sent again as it is
    /// (a listeners page is asked for again), unless the bot has stopped
    /// for good.
    pub(super) fn requeue_front(&mut self, mut call: Call, now_ms: u64) {
        if self
            .stopped
            .as_ref()
            .is_some_and(|s| !s.resumes_with_new_consent())
        {
            self.answer(call, CallResult::Failed(CallFailure::Cancelled));
            return;
        }
        if let Op::Listeners(pager) = &mut call.op {
            pager.retry_page();
        }
        call.not_before_ms = call.not_before_ms.max(now_ms);
        self.calls.queue.push_front(call);
    }

    /// Queues the call again after a backoff delay, or fails it when its
    /// attempts are used up (or it must not be repeated).
    pub(super) fn retry_or_fail(
        &mut self,
        call: Call,
        repeatable: bool,
        failure: CallFailure,
        now_ms: u64,
    ) {
        if !repeatable {
            self.answer(call, CallResult::Failed(failure));
            return;
        }
        let delay = self.calls.backoff.next_delay_ms();
        self.retry_in(call, delay, failure, now_ms);
    }

    pub(super) fn retry_in(
        &mut self,
        mut call: Call,
        delay_ms: u64,
        failure: CallFailure,
        now_ms: u64,
    ) {
        if self.calls.attempts_used_up(&call) {
            self.answer(call, CallResult::Failed(failure));
            return;
        }
        call.not_before_ms = now_ms.saturating_add(delay_ms);
        self.requeue_front(call, now_ms);
    }
}
