//! The reply queue: replies (the kit's configured ones and
//! [`Bot::reply`]'s) wait in the chat queue, in order with
//! [`Bot::send_chat`], paced by the broadcast's chat limit. When the pacer
//! takes a reply of a mergeable kind and more of that kind wait, they go
//! out as one message (the kind's `_many` text, names in arrival order
//! within one chat message, the rest in the next). Each reply has a
//! deadline (queued at + its kind's freshness): past it, it is dropped and
//! told ([`Notice::RepliesDropped`]), never sent late.

use serde::Serialize;

use super::*;

use crate::event::User;
use crate::kit::replies::{fill_many, QueuedReply, RepliesConfig, ReplyKind};

/// How many replies may wait; one more is dropped (`queue_full`).
pub const MAX_QUEUED_REPLIES: usize = 2_000;

/// How many waiting replies one merged message considers.
const MERGE_LOOKAHEAD: usize = 64;

/// Why replies were dropped (see [`Notice::RepliesDropped`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum DropReason {
    /// Not sent within its kind's freshness (the chat limit held it back).
    Stale,
    /// Still queued when the broadcast ended (`LIVE_ENDED`).
    Ended,
    /// The service refused the message (not on air, chat blocked, …).
    Refused,
    /// No answer to the message, or a daily quota held it back.
    GivenUp,
    /// The reply queue held [`MAX_QUEUED_REPLIES`] already.
    QueueFull,
    /// The bot stopped.
    Stopped,
}

impl DropReason {
    /// `stale`, `ended`, `refused`, `given_up`, `queue_full`, `stopped`.
    pub fn as_str(self) -> &'static str {
        match self {
            DropReason::Stale => "stale",
            DropReason::Ended => "ended",
            DropReason::Refused => "refused",
            DropReason::GivenUp => "given_up",
            DropReason::QueueFull => "queue_full",
            DropReason::Stopped => "stopped",
        }
    }

    fn of(failure: &CallFailure) -> DropReason {
        match failure {
            CallFailure::Cancelled | CallFailure::Stopped(_) => DropReason::Stopped,
            CallFailure::Problem(_) => DropReason::Refused,
            _ => DropReason::GivenUp,
        }
    }
}

impl fmt::Display for DropReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DropReason::Stale => "not sent within their freshness (the chat limit held them back)",
            DropReason::Ended => "the broadcast ended before they went out",
            DropReason::Refused => "refused by the service",
            DropReason::GivenUp => "given up (no answer, or held back by the daily quota)",
            DropReason::QueueFull => "the reply queue was full",
            DropReason::Stopped => {
                "the bot stopped (a configured kit saves them: a restart sends the ones still fresh)"
            }
        })
    }
}

/// One kind's reply counters.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ReplyCounters {
    /// Messages the service took.
    pub messages: u64,
    /// Replies (people) named in those messages.
    pub people: u64,
    /// Replies that went out merged with others of their kind (milestones:
    /// replaced by a later one about the same, whose message said them).
    pub merged: u64,
    /// Replies dropped, for any reason.
    pub dropped: u64,
    /// … not sent within their freshness.
    pub dropped_stale: u64,
    /// … still queued when the broadcast ended.
    pub dropped_ended: u64,
    /// … refused by the service.
    pub dropped_refused: u64,
    /// … given up (no answer, the daily quota).
    pub dropped_given_up: u64,
    /// … the reply queue was full.
    pub dropped_queue_full: u64,
    /// … the bot stopped.
    pub dropped_stopped: u64,
}

/// Reply counters per kind.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RepliesCounters {
    /// Welcomes.
    pub welcome: ReplyCounters,
    /// Welcomes back.
    pub welcome_back: ReplyCounters,
    /// Thanks.
    pub thanks: ReplyCounters,
    /// Milestones.
    pub milestone: ReplyCounters,
    /// Command answers.
    pub command: ReplyCounters,
}

impl RepliesCounters {
    /// The counters of `kind`.
    pub fn of(&self, kind: ReplyKind) -> &ReplyCounters {
        match kind {
            ReplyKind::Welcome => &self.welcome,
            ReplyKind::WelcomeBack => &self.welcome_back,
            ReplyKind::Thanks => &self.thanks,
            ReplyKind::Milestone => &self.milestone,
            ReplyKind::Command => &self.command,
        }
    }

    fn of_mut(&mut self, kind: ReplyKind) -> &mut ReplyCounters {
        match kind {
            ReplyKind::Welcome => &mut self.welcome,
            ReplyKind::WelcomeBack => &mut self.welcome_back,
            ReplyKind::Thanks => &mut self.thanks,
            ReplyKind::Milestone => &mut self.milestone,
            ReplyKind::Command => &mut self.command,
        }
    }
}

/// A queued reply and the id its place in the call queue names.
#[derive(Debug, Clone)]
pub(super) struct Entry {
    pub(super) id: u64,
    pub(super) reply: QueuedReply,
}

/// The replies waiting, the texts for many, and drops not yet told.
#[derive(Debug, Clone, Default)]
pub(super) struct Replies {
    pub(super) config: RepliesConfig,
    pub(super) queue: VecDeque<Entry>,
    next_id: u64,
    /// Drops per (kind, reason): told at a bounded rate.
    untold: Vec<Untold>,
}

/// The drops of one kind and reason: the first told at once, the rest
/// counted and told in one notice at most every
/// [`GAVE_UP_NOTICE_EVERY_MS`](super::notices::GAVE_UP_NOTICE_EVERY_MS) (a
/// chat blocked for the day drops replies one by one: one log line each
/// would bury the rest).
#[derive(Debug, Clone)]
struct Untold {
    kind: ReplyKind,
    reason: DropReason,
    /// When the last notice of these went out (`None`: never).
    told_at_ms: Option<u64>,
    /// Replies dropped since.
    pending: u64,
}

impl Untold {
    fn due_at(&self) -> u64 {
        self.told_at_ms.map_or(0, |t| {
            t.saturating_add(super::notices::GAVE_UP_NOTICE_EVERY_MS)
        })
    }
}

impl Replies {
    pub(super) fn new(config: RepliesConfig) -> Self {
        Replies {
            config,
            ..Replies::default()
        }
    }

    /// The notice of one kind and reason dropped since its last, when due
    /// (`flush`: at once, the bot has stopped and no later poll would tell).
    pub(super) fn take_notice(&mut self, now_ms: u64, flush: bool) -> Option<Notice> {
        let u = self
            .untold
            .iter_mut()
            .find(|u| u.pending > 0 && (flush || now_ms >= u.due_at()))?;
        u.told_at_ms = Some(now_ms);
        Some(Notice::RepliesDropped {
            kind: u.kind,
            people: std::mem::take(&mut u.pending),
            reason: u.reason,
        })
    }

    /// The earliest deadline of a waiting reply or a drop not yet told.
    pub(super) fn deadline(&self) -> Option<u64> {
        let told = self
            .untold
            .iter()
            .filter(|u| u.pending > 0)
            .map(Untold::due_at);
        self.queue
            .iter()
            .map(|e| e.reply.deadline_ms)
            .chain(told)
            .min()
    }
}

impl Bot {
    /// The replies not sent yet (a message the limit sent back included),
    /// in the order they were queued, as the kit state stores them.
    pub(super) fn unsent_replies(&self) -> Vec<QueuedReply> {
        // A message sent back holds the earliest: its replies come first.
        self.calls
            .queue
            .iter()
            .filter_map(|c| match &c.op {
                Op::Reply { batch, .. } => Some(batch.iter().map(|e| e.reply.clone())),
                _ => None,
            })
            .flatten()
            .chain(self.replies.queue.iter().map(|e| e.reply.clone()))
            .collect()
    }
}

impl Bot {
    /// Queues a reply of `kind` naming `user`: `text` goes out as it is when
    /// it goes alone; when other replies of a mergeable kind (welcome,
    /// welcome back, thanks) wait with it, one message names them all with
    /// the kind's `_many` text (configured in the kit's
    /// [`RepliesConfig`], or its defaults). It waits in the chat queue in
    /// order with [`send_chat`](Self::send_chat), and is dropped with a
    /// [`Notice::RepliesDropped`] when it is not out within the kind's
    /// freshness, counted from the latest [`poll`](Self::poll). `text` must
    /// be one chat message.
    ///
    /// ```
    /// # use onair::{BaseUrl, Bot, BotConfig, ClientCredentials, User};
    /// use onair::kit::ReplyKind;
    /// # let creds = ClientCredentials::new("3f2504e0-4f89-11d3-9a0c-0305e82c3301", "s")?;
    /// # let mut bot = Bot::new(BotConfig::new(BaseUrl::new("http://127.0.0.1:1")?, creds), None, 1);
    /// let ana = User { id: "u1".into(), nickname: Some("Ana".into()) };
    /// bot.reply(ReplyKind::Welcome, &ana, "Hi Ana, welcome to the show!")?;
    /// assert!(bot.reply(ReplyKind::Thanks, &ana, " ").is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn reply(&mut self, kind: ReplyKind, user: &User, text: &str) -> Result<(), ChatError> {
        crate::proto::chat::validate_chat(text)?;
        // Queued now: the time of the latest poll (handlers reply to what a
        // poll handed them).
        self.queue_reply(kind, Some(user.clone()), text.to_owned(), self.clock_ms);
        Ok(())
    }

    /// Queues a reply that is one chat message already.
    pub(super) fn queue_reply(
        &mut self,
        kind: ReplyKind,
        user: Option<User>,
        text: String,
        now_ms: u64,
    ) {
        let fresh = self.replies.config.fresh_ms.of(kind);
        let reply = QueuedReply {
            kind,
            user,
            text,
            queued_ms: now_ms,
            deadline_ms: now_ms.saturating_add(fresh),
            covers: 1,
        };
        self.enqueue_reply(reply, now_ms);
    }

    fn enqueue_reply(&mut self, reply: QueuedReply, now_ms: u64) {
        if self
            .stopped
            .as_ref()
            .is_some_and(|s| !s.resumes_with_new_consent())
        {
            self.drop_replies(reply.kind, DropReason::Stopped, 1);
            return;
        }
        if reply.kind == ReplyKind::Milestone && self.supersede_milestone(&reply, now_ms) {
            return;
        }
        if self.replies.queue.len() >= MAX_QUEUED_REPLIES {
            self.drop_replies(reply.kind, DropReason::QueueFull, 1);
            return;
        }
        self.replies.next_id += 1;
        let id = self.replies.next_id;
        self.replies.queue.push_back(Entry { id, reply });
        if self.calls.queue.len() > 4 * MAX_QUEUED_REPLIES {
            self.prune_reply_places();
        }
        self.calls.queue.push_back(Call {
            id: CallId(0),
            op: Op::Reply {
                first: id,
                batch: Vec::new(),
            },
            attempts: 0,
            not_before_ms: 0,
            wait_for_newer_than: None,
        });
        self.touch_kit(now_ms);
    }

    /// A milestone replaces one still waiting about the same (the room's
    /// hearts, or one person's gifts): "2 800 hearts" is news, "2 600" no
    /// longer is, and milestones never merge, so a busy room's hearts would
    /// otherwise take the chat limit from everyone's thanks. The waiting one
    /// keeps its place with the new text and freshness, and stands for
    /// both (sent as one message, counted as two merged). `false` when
    /// none waits.
    fn supersede_milestone(&mut self, reply: &QueuedReply, now_ms: u64) -> bool {
        let Some(waiting) = self
            .replies
            .queue
            .iter_mut()
            .find(|e| e.reply.same_milestone(reply))
        else {
            return false;
        };
        waiting.reply.absorb(reply.clone());
        self.touch_kit(now_ms);
        true
    }

    /// The queue's reply at `at`, when a milestone, takes the text and
    /// freshness of a later one about the same, which it now stands for.
    fn take_later_milestone(&mut self, at: usize) {
        let queue = &mut self.replies.queue;
        let Some(head) = queue.get(at) else {
            return;
        };
        let Some(later) = (at + 1..queue.len())
            .find(|&i| {
                queue
                    .get(i)
                    .is_some_and(|e| head.reply.same_milestone(&e.reply))
            })
            .and_then(|i| queue.remove(i))
        else {
            return;
        };
        if let Some(head) = queue.get_mut(at) {
            head.reply.absorb(later.reply);
        }
    }

    /// Places in the call queue whose replies went out merged or were
    /// dropped.
    fn prune_reply_places(&mut self) {
        let queue = &self.replies.queue;
        self.calls.queue.retain(|c| match &c.op {
            Op::Reply { first, batch } => !batch.is_empty() || queue.iter().any(|e| e.id == *first),
            _ => true,
        });
    }

    /// Counts and remembers to tell a drop.
    pub(super) fn drop_replies(&mut self, kind: ReplyKind, reason: DropReason, count: u64) {
        if count == 0 {
            return;
        }
        let c = self.counters.replies.of_mut(kind);
        c.dropped += count;
        match reason {
            DropReason::Stale => c.dropped_stale += count,
            DropReason::Ended => c.dropped_ended += count,
            DropReason::Refused => c.dropped_refused += count,
            DropReason::GivenUp => c.dropped_given_up += count,
            DropReason::QueueFull => c.dropped_queue_full += count,
            DropReason::Stopped => c.dropped_stopped += count,
        }
        match self
            .replies
            .untold
            .iter_mut()
            .find(|u| u.kind == kind && u.reason == reason)
        {
            Some(u) => u.pending += count,
            None => self.replies.untold.push(Untold {
                kind,
                reason,
                told_at_ms: None,
                pending: count,
            }),
        }
    }

    fn drop_entries(&mut self, entries: impl IntoIterator<Item = QueuedReply>, reason: DropReason) {
        for reply in entries {
            self.drop_replies(reply.kind, reason, reply.covers);
        }
    }

    /// Drops the replies whose deadline has come (never sent late).
    pub(super) fn expire_replies(&mut self, now_ms: u64) {
        if !self
            .replies
            .queue
            .iter()
            .any(|e| e.reply.deadline_ms <= now_ms)
        {
            return;
        }
        let mut stale: Vec<(ReplyKind, u64)> = Vec::new();
        self.replies.queue.retain(|e| {
            let fresh = e.reply.deadline_ms > now_ms;
            if !fresh {
                stale.push((e.reply.kind, e.reply.covers));
            }
            fresh
        });
        for (kind, covers) in stale {
            self.drop_replies(kind, DropReason::Stale, covers);
        }
        self.touch_kit(now_ms);
    }

    /// Every reply waiting (not in flight) is dropped for `reason`.
    pub(super) fn drop_queued_replies(&mut self, reason: DropReason, now_ms: u64) {
        let mut dropped: Vec<QueuedReply> = Vec::new();
        self.calls.queue.retain_mut(|c| match &mut c.op {
            Op::Reply { batch, .. } => {
                dropped.extend(batch.drain(..).map(|e| e.reply));
                false
            }
            _ => true,
        });
        dropped.extend(
            std::mem::take(&mut self.replies.queue)
                .into_iter()
                .map(|e| e.reply),
        );
        if !dropped.is_empty() {
            self.drop_entries(dropped, reason);
            self.touch_kit(now_ms);
        }
    }

    /// Brings the call queue's head to a reply still waiting: a retried
    /// message gives its replies back (they are merged again, the stale
    /// ones dropped); places of replies already gone are passed.
    pub(super) fn settle_reply_head(&mut self, now_ms: u64) {
        loop {
            let Some(Call {
                op: Op::Reply { first, batch },
                ..
            }) = self.calls.queue.front_mut()
            else {
                return;
            };
            if !batch.is_empty() {
                let back = std::mem::take(batch);
                *first = back[0].id;
                let returned = back.len();
                for entry in back.into_iter().rev() {
                    self.replies.queue.push_front(entry);
                }
                // A milestone given back says the latest about the same
                // when one came while it was out.
                for i in 0..returned {
                    self.take_later_milestone(i);
                }
                self.expire_replies(now_ms);
                continue;
            }
            let first = *first;
            if self.replies.queue.iter().any(|e| e.id == first) {
                return;
            }
            self.calls.queue.pop_front();
        }
    }

    /// Takes the reply `first` and, for a mergeable kind, the replies of
    /// its kind waiting behind it that fit in one message: the batch and
    /// its text.
    pub(super) fn take_reply_batch(&mut self, first: u64) -> Option<(Vec<Entry>, String)> {
        let at = self.replies.queue.iter().position(|e| e.id == first)?;
        let head = self.replies.queue.remove(at)?;
        let kind = head.reply.kind;
        let many = self.replies.config.many(kind).map(str::to_owned);
        let (Some(many), Some(user)) = (many, head.reply.user.clone()) else {
            let text = head.reply.text.clone();
            return Some((vec![head], text));
        };
        // The candidates: the head, then its kind's replies behind it.
        let mut candidates: Vec<usize> = Vec::new();
        for (i, e) in self.replies.queue.iter().enumerate().skip(at) {
            if candidates.len() >= MERGE_LOOKAHEAD {
                break;
            }
            if e.reply.kind == kind && e.reply.user.is_some() {
                candidates.push(i);
            }
        }
        if candidates.is_empty() {
            let text = head.reply.text.clone();
            return Some((vec![head], text));
        }
        // Names in arrival order, each person once.
        let mut ids: Vec<&str> = vec![user.id.as_str()];
        let mut names: Vec<&str> = vec![name(&user)];
        for &i in &candidates {
            if let Some(u) = &self.replies.queue[i].reply.user {
                if !ids.contains(&u.id.as_str()) {
                    ids.push(u.id.as_str());
                    names.push(name(u));
                }
            }
        }
        let (text, fitted) = fill_many(&many, &names, &self.replies.config.and);
        let named: Vec<String> = ids[..fitted].iter().map(|s| (*s).to_owned()).collect();
        // Ascending already: candidates were gathered in queue order.
        let taken: Vec<usize> = candidates
            .into_iter()
            .filter(|&i| {
                self.replies.queue[i]
                    .reply
                    .user
                    .as_ref()
                    .is_some_and(|u| named.contains(&u.id))
            })
            .collect();
        let mut batch = vec![head];
        for i in taken.into_iter().rev() {
            if let Some(e) = self.replies.queue.remove(i) {
                batch.insert(1, e);
            }
        }
        if batch.len() == 1 {
            let text = batch[0].reply.text.clone();
            return Some((batch, text));
        }
        if fitted == 1 {
            // The same person twice: their own text says it.
            let text = batch[0].reply.text.clone();
            return Some((batch, text));
        }
        Some((batch, text))
    }

    /// A reply message's fate.
    pub(super) fn reply_answered(&mut self, batch: Vec<Entry>, result: &CallResult, now_ms: u64) {
        let Some(kind) = batch.first().map(|e| e.reply.kind) else {
            return;
        };
        match result {
            CallResult::ChatSent => {
                let n: u64 = batch.iter().map(|e| e.reply.covers).sum();
                self.counters.chats_sent += 1;
                let c = self.counters.replies.of_mut(kind);
                c.messages += 1;
                c.people += n;
                if n > 1 {
                    c.merged += n;
                }
            }
            CallResult::Failed(failure) => {
                self.drop_entries(batch.into_iter().map(|e| e.reply), DropReason::of(failure));
            }
            _ => {}
        }
        self.touch_kit(now_ms);
    }

    /// Replies restored from the kit state go back in the queue (the stale
    /// ones are dropped, told, at the next poll).
    pub(super) fn restore_replies(&mut self, stored: Vec<QueuedReply>) {
        for reply in stored {
            let queued = reply.queued_ms;
            self.enqueue_reply(reply, queued);
        }
    }

    fn touch_kit(&mut self, now_ms: u64) {
        if let Some(kit) = &mut self.kit {
            kit.touch(now_ms);
        }
    }
}

fn name(user: &User) -> &str {
    user.nickname.as_deref().unwrap_or("friend")
}
