// Generated from the Rust types by wasm/src/types.rs (ts-rs): do not edit.
// `cargo test -p onair-wasm` fails when this file differs from them;
// ONAIR_BLESS=1 cargo test -p onair-wasm types rewrites it.

/**
 * What to do next: `switch (action.type)` narrows; an `event` action is an
 * `OnairEvent`.
 */
export type Action = { "type": "send", id: number, request: OnairRequest, timeoutMs: number, } | { "type": "openStream", id: number, request: OnairRequest, } | { "type": "closeStream", id: number, reason: CloseReason, } | { "type": "event" } & EventLine | { "type": "notice", notice: Notice, } | { "type": "done", call: number, result: CallResult, } | { "type": "persistTokens", generation: number, tokens: string, } | { "type": "timer", tag: string, } | { "type": "needsAuthorization" } | { "type": "wait", untilMs: number | null, } | { "type": "stopped", stop: Stop, } | { "type": "command", name: string, args: Array<string>, rest: string, user: User, role: Role, event: ChatRef, } | { "type": "arrival", kind: ArrivalKind, awayMs: number | null, user: User, isManager: boolean, liveId: number | null, event: EventLine, } | { "type": "milestone" } & Milestone | { "type": "broadcastEnded", liveId: number | null, tally: TallyJson, event: EndRef | null, } | { "type": "persistState", state: string, };

/**
 * What the bot should do about a [`Problem`].
 */
export type Advice = "none" | "fix_request" | "refresh_token" | "reconsent" | "retry_soon" | "stop" | "wait_not_on_air" | "retry_backoff" | "retry_after" | "reauthorize";

/**
 * Who may run a command.
 */
export type Allowed = "anyone" | "managers" | "dj";

export type ArrivalKind = "first" | "back";

/**
 * The current broadcast (GET /v1/live, spec 2.2).
 *
 * `welcome_message`, `categories` and `tags` read `null` or a missing field
 * as empty: they are display data with a natural empty value, and a bot
 * should not lose the whole broadcast over them. The other fields are
 * required.
 */
export type Broadcast = { 
/**
 * Identifies this broadcast session: the key for "once per broadcast"
 * rules and for telling whether a reconnect is the same broadcast.
 */
liveId: number, 
/**
 * Broadcast title.
 */
title: string, 
/**
 * Start time.
 */
startedAt: Timestamp, 
/**
 * Scheduled end time.
 */
closeAirTime: Timestamp, 
/**
 * Listeners connected now.
 */
listenerCount: number, 
/**
 * Cumulative number of people who passed through; never decreases.
 */
totalListenerCount: number, 
/**
 * Greeting pinned by the DJ; empty when none.
 */
welcomeMessage: string, 
/**
 * Whether chat is frozen (posting would get 403 `OAPI_MNGR_0208`).
 */
isChatFrozen: boolean, 
/**
 * Broadcast categories.
 */
categories: Array<string>, 
/**
 * Hashtags added by the DJ.
 */
tags: Array<string>, };

/**
 * Why an app call failed: `switch (result.failure)` narrows.
 */
export type CallFailure = { "failure": "problem", problem: Explanation, } | { "failure": "quota_blocked", untilMs: number, } | { "failure": "invalid_body", message: string, } | { "failure": "pager", message: string, } | { "failure": "transport" } | { "failure": "cancelled" } | { "failure": "queue_full", message: string, } | { "failure": "stopped", stop: Stop, };

/**
 * The answer to an app call: `switch (result.kind)` narrows.
 */
export type CallResult = { "kind": "broadcast", broadcast: Broadcast, } | { "kind": "listeners", listeners: Array<Listener>, } | { "kind": "fans", fans: FanRanking, } | { "kind": "chatSent" } | { "kind": "failed" } & CallFailure;

/**
 * A chat message posted by a listener or the DJ.
 */
export type Chat = { 
/**
 * The poster.
 */
user: User, 
/**
 * True when the DJ posted; use it to keep the DJ out of tallies.
 */
isDj: boolean, 
/**
 * The text as typed; always a string, even if it looks like JSON.
 */
message: string, 
/**
 * When it was sent.
 */
sentTime: Timestamp, };

/**
 * The chat behind a command.
 */
export type ChatRef = { "event": "chat", id: string | null, data: Chat, };

/**
 * Why the bot asks for a connection to be closed or a request dropped.
 */
export type CloseReason = "ended" | "silent" | "timed_out" | "stopping";

/**
 * One command.
 */
export type CommandConfig = { 
/**
 * Its name, compared case-insensitively (`!Hello` runs `hello`).
 */
name: string, 
/**
 * Other names that run it.
 */
aliases?: Array<string>, 
/**
 * Who may run it (default: anyone).
 */
allowed?: Allowed, 
/**
 * A person who ran it runs it again only after this long (ms); others
 * are not held back. Default: no cooldown.
 */
cooldown_ms?: number | null, 
/**
 * Once anyone ran it, nobody runs it again for this long (ms): a
 * `!top` fifty people type in a second is answered once. Default: no
 * room cooldown.
 */
room_cooldown_ms?: number | null, };

/**
 * Where the event stream stands.
 */
export type Connection = { "state": "needsAuthorization" } | { "state": "off" } | { "state": "waitingForBroadcast", 
/**
 * When the next connect goes (unix ms).
 */
nextAttemptMs: number, } | { "state": "connecting", 
/**
 * Since when (unix ms), when known.
 */
sinceMs: number | null, } | { "state": "connected", 
/**
 * Since when (unix ms).
 */
sinceMs: number, } | { "state": "backingOff", 
/**
 * When the next connect goes (unix ms).
 */
untilMs: number, } | { "state": "refreshing" } | { "state": "stopped", 
/**
 * The stop's code (`reauthorize`, `reconsent`, …).
 */
code: string, 
/**
 * What to tell that person.
 */
message: string, };

/**
 * What the bot has seen and done since it was created.
 */
export type Counters = { 
/**
 * `chat` events.
 */
chat: number, 
/**
 * `presence` events.
 */
presence: number, 
/**
 * `like` events.
 */
like: number, 
/**
 * `donation` events.
 */
donation: number, 
/**
 * Events with a name this version does not know.
 */
unknownEvents: number, 
/**
 * Frames that could not be decoded (skipped).
 */
decodeErrors: number, 
/**
 * `:heartbeat` comments.
 */
heartbeats: number, 
/**
 * When the last heartbeat came (unix ms).
 */
lastHeartbeatMs: number | null, 
/**
 * Stream connections opened (2xx).
 */
connects: number, 
/**
 * End frames `LIVE_ENDED`.
 */
endsLiveEnded: number, 
/**
 * End frames `TOKEN_EXPIRED`.
 */
endsTokenExpired: number, 
/**
 * End frames `RECONNECT`.
 */
endsReconnect: number, 
/**
 * Connections that ended without an end frame (dropped, or closed by
 * the watchdog).
 */
drops: number, 
/**
 * Chat messages the service took (replies' messages included).
 */
chatsSent: number, 
/**
 * Chat messages given up on (each reported with its reason).
 */
chatsFailed: number, 
/**
 * New token pairs (the exchange and every refresh).
 */
tokenPairs: number, 
/**
 * Requests that did not reach the service: not sent, no answer, or
 * none in time (stream connects included).
 */
unreached: number, 
/**
 * App calls given up on as cancelled: chat still queued when its
 * broadcast ended, or the bot stopped.
 */
gaveUpCancelled: number, 
/**
 * App calls given up on because a daily quota blocks them.
 */
gaveUpQuotaBlocked: number, 
/**
 * App calls the service refused.
 */
gaveUpRefused: number, 
/**
 * App calls refused at once because the call queue was full.
 */
gaveUpQueueFull: number, 
/**
 * App calls given up on for want of an answer.
 */
gaveUpTransport: number, 
/**
 * App calls whose answer could not be read.
 */
gaveUpInvalidAnswer: number, 
/**
 * Replies (the kit's and [`Bot::reply`]'s) per kind: messages sent,
 * people named, replies merged, replies dropped (and why).
 */
replies: RepliesCounters, };

export type DecodeErrorCode = "invalid_json" | "invalid_event" | "frame_too_large" | "incomplete_frame";

/**
 * A donation of the paid currency.
 */
export type Donation = { 
/**
 * The donor.
 */
user: User, 
/**
 * Total currency units, already multiplied out: never multiply again.
 */
amount: number, 
/**
 * The note sent along; `None` (never `""`) when there was none.
 */
message: string | null, 
/**
 * When sent.
 */
time: Timestamp, };

/**
 * The donation behind a milestone.
 */
export type DonationRef = { "event": "donation", id: string | null, data: Donation, };

/**
 * The final frame of a stream. Nothing follows it.
 */
export type End = { 
/**
 * Why the stream ends.
 */
reason: EndReason, };

/**
 * Why the stream is ending (spec 4.6). Each asks for a different reconnect.
 */
export type EndReason = "LIVE_ENDED" | "TOKEN_EXPIRED" | "RECONNECT" | string & {};

/**
 * The `LIVE_ENDED` frame behind a broadcast's end.
 */
export type EndRef = { "event": "end", id: string | null, data: End, };

/**
 * The endpoints (`onair explain`'s names).
 */
export type Endpoint = "token" | "revoke" | "live" | "listeners" | "fans" | "events" | "chat";

/**
 * A decode error as an item (`{"type":"error",…}`).
 */
export type ErrorItem = { "type": "error" } & ErrorLine;

/**
 * A frame that could not be decoded; the stream goes on.
 */
export type ErrorLine = { error: DecodeErrorCode, event: string | null, id: string | null, 
/**
 * The frame's data as received (a prefix for an oversized frame).
 */
raw: string, message: string, };

/**
 * A typed service event: `switch (ev.event)` narrows `data`.
 */
export type EventLine = { "event": "chat", 
/**
 * The frame's id (`<epochMillis>-<offset>`), or null when it had none.
 */
id: string | null, data: Chat, } | { "event": "presence", id: string | null, data: Presence, } | { "event": "like", id: string | null, data: Like, } | { "event": "donation", id: string | null, data: Donation, } | { "event": "end", id: string | null, data: End, };

/**
 * The JSON object `onair explain` prints for a [`Problem`]; field names and
 * order are a contract (`kind`, `advice`, `status`, `detailCode`,
 * `oauthError`, `retryAfterMs`, `quotaScope`, `recentlyRevoked`).
 */
export type Explanation = { 
/**
 * See [`Problem::kind`].
 */
kind: ProblemKind, 
/**
 * See [`Problem::advice`].
 */
advice: Advice, 
/**
 * The HTTP status.
 */
status: number, 
/**
 * See [`Problem::detail_code`].
 */
detailCode: string | null, 
/**
 * See [`Problem::oauth_error`].
 */
oauthError: string | null, 
/**
 * The Retry-After delay in milliseconds, when known.
 */
retryAfterMs: number | null, 
/**
 * The permission named by `x-ratelimit-daily-scope`.
 */
quotaScope: string | null, 
/**
 * See [`Problem::recently_revoked`].
 */
recentlyRevoked: boolean, };

/**
 * One entry of the donation ranking (spec 2.4).
 *
 * The currency field's wire name is `coinCount`; it is read and
 * written under exactly that name.
 */
export type Fan = { 
/**
 * Encrypted identifier (spec 2.5).
 */
id: string, 
/**
 * Nickname.
 */
nickname: string, 
/**
 * Rank, starting at 1.
 */
rank: number, 
/**
 * Units of the paid currency this listener spent in this broadcast;
 * `None` when absent or `null`.
 */
coinCount: number | null, };

/**
 * GET /v1/live/fans (spec 2.4, 4.5): at most 30 people present now, highest
 * cumulative donation first.
 */
export type FanRanking = { 
/**
 * The size of the returned list (at most 30), not the number of fans.
 */
totalCount: number, 
/**
 * The ranking, highest first.
 */
fans: Array<Fan>, };

/**
 * How long a reply of each kind may wait for the chat limit (ms) before it
 * is dropped, with a notice, instead of going out late.
 */
export type FreshConfig = { 
/**
 * Welcomes (default 60 000).
 */
welcome?: number, 
/**
 * Welcomes back (default 60 000).
 */
welcome_back?: number, 
/**
 * Thanks (default 180 000).
 */
thanks?: number, 
/**
 * Milestones (default 120 000).
 */
milestone?: number, 
/**
 * Command answers (default 30 000).
 */
command?: number, };

/**
 * Why app calls were given up on.
 */
export type GiveUpReason = "cancelled" | "quota_blocked" | "refused" | "queue_full" | "transport" | "invalid_answer";

/**
 * When to greet.
 */
export type GreetingsConfig = { 
/**
 * Greet a person's first sign in a broadcast (default true): their join
 * when the bot is a manager (presence needs manager level), otherwise
 * their first chat.
 */
first?: boolean, 
/**
 * Welcome a person back when they join (or chat) after at least this
 * long without a sign of them (ms); `None`: never.
 */
welcome_back_after_ms?: number | null, };

/**
 * The kit's configuration; all of it optional. The default configures
 * nothing: the bot then behaves as a bot without a kit (no kit actions, no
 * kit state).
 */
export type KitConfig = { 
/**
 * What starts a command (default `!`), right before its name.
 */
prefix?: string, 
/**
 * The commands, each with who may run it.
 */
commands?: Array<CommandConfig>, 
/**
 * Ids whose chat is never a command (other bots: two bots answering
 * each other loop).
 */
ignore?: Array<string>, 
/**
 * Greetings, when set.
 */
greetings?: GreetingsConfig | null, 
/**
 * Milestones, when set.
 */
milestones?: MilestonesConfig | null, 
/**
 * The per-broadcast tally, handed out with the broadcast's end.
 */
tally?: boolean, 
/**
 * The replies the bot says by itself, when set (see
 * [`RepliesConfig`](super::replies::RepliesConfig)): greetings, thanks,
 * milestones and command answers go out without a handler, merged
 * when chat is behind, dropped with a notice when no longer fresh.
 */
replies?: RepliesConfig | null, };

/**
 * The configured kit's current broadcast (`bot.kit`).
 */
export type KitView = { liveId: number | null, tally: TallyJson, };

/**
 * A notice's level: log its `message` as a warning (something was lost,
 * refused or cannot be reached) or as information.
 */
export type Level = "warn" | "info";

/**
 * Hearts sent to the broadcast.
 */
export type Like = { 
/**
 * The sender.
 */
user: User, 
/**
 * Paid or free.
 */
type: LikeType, 
/**
 * Hearts added this time: (amount + extraAmount) × combo. Tally this one.
 */
totalAmount: number, 
/**
 * Hearts one item gives.
 */
amount: number, 
/**
 * Hearts added by a boost item; 0 when none.
 */
extraAmount: number, 
/**
 * How many were stacked; `None` for free tapped hearts.
 */
combo: number | null, 
/**
 * When sent.
 */
time: Timestamp, };

/**
 * The hearts behind a milestone.
 */
export type LikeRef = { "event": "like", id: string | null, data: Like, };

/**
 * `like.type`.
 */
export type LikeType = "PAID" | "FREE" | string & {};

/**
 * A person in the room (spec 2.3). `id` is the stable key (spec 2.5).
 */
export type Listener = { 
/**
 * Encrypted identifier, scoped to (bot, DJ); the same value as
 * `user.id` in stream events.
 */
id: string, 
/**
 * Nickname: changes and repeats, never a key.
 */
nickname: string, };

/**
 * One page of GET /v1/live/listeners (spec 2.3, 4.4).
 */
export type ListenersPage = { 
/**
 * The people on this page.
 */
listeners: Array<Listener>, 
/**
 * The cursor of the next page; `None` on the last page. An empty string
 * is read as `None`, because it must never be sent back as `cursor`.
 */
nextCursor: string | null, };

export type Method = "GET" | "POST";

/**
 * A configured milestone was crossed: `switch (m.kind)` narrows.
 */
export type Milestone = { "kind": "hearts", reached: number, total: number, event: LikeRef, } | { "kind": "donated", reached: number, total: number, user: User, event: DonationRef, };

/**
 * When to call a milestone.
 */
export type MilestonesConfig = { 
/**
 * Every this many hearts for the broadcast (by `totalAmount`).
 */
hearts_every?: number | null, 
/**
 * Every this many currency units one person donated in the broadcast.
 */
donations_every?: number | null, };

/**
 * Worth a log line; needs no action. `switch (notice.kind)` narrows.
 * Every notice ends with `message` (its log line) and `level`, so one of
 * any kind is logged by printing its message at its level.
 */
export type Notice = { "kind": "frameSkipped", error: ErrorItem, message: string, level: Level, } | { "kind": "unknownEvent", event: string, data: string, message: string, level: Level, } | { "kind": "problem", endpoint: Endpoint, problem: Explanation, message: string, level: Level, } | { "kind": "callHeld", call: number, message: string, level: Level, } | { "kind": "reconnectStormBraked", untilMs: number, message: string, level: Level, } | { "kind": "commandRefused", name: string, user: User, role: Role, needed: Allowed, message: string, level: Level, } | { "kind": "unreachable", endpoint: Endpoint, failure: Unreached, failures: number, sinceMs: number, message: string, level: Level, } | { "kind": "reachable", failures: number, sinceMs: number, message: string, level: Level, } | { "kind": "gaveUp", endpoint: Endpoint, reason: GiveUpReason, count: number, message: string, level: Level, } | { "kind": "repliesDropped", replyKind: ReplyKind, people: number, reason: ReplyDropReason, message: string, level: Level, } | { "kind": "dailyQuotaReached", scope: string | null, untilMs: number, message: string, level: Level, };

/**
 * One thing the stream said (`onair decode`'s lines): `switch (item.type)`
 * narrows.
 */
export type OnairItem = { "type": "event" } & EventLine | { "type": "unknown", event: string, id: string | null, data: string, } | { "type": "heartbeat" } | { "type": "comment", text: string, } | { "type": "retry", ms: number, } | { "type": "error" } & ErrorLine;

/**
 * A request to send, ready for `fetch` (see `fetchArgs`). Holds secrets:
 * never log it.
 */
export type OnairRequest = { endpoint: Endpoint, method: Method, url: string, headers: Array<[string, string]>, 
/**
 * The body as text; `""` for a GET (which `fetch` must not be given).
 */
body: string, };

/**
 * What one person did in this broadcast. Its JSON form (camelCase) is the
 * one of the emulator's ledger.
 */
export type PersonTotals = { 
/**
 * The latest nickname seen (it changes; `None` when never sent).
 */
nickname: string | null, 
/**
 * Hearts added, by `totalAmount` (paid and free).
 */
hearts: number, 
/**
 * Of those, hearts from `PAID` items.
 */
paidHearts: number, 
/**
 * Currency units donated (each donation's `amount`, never multiplied).
 */
donated: number, 
/**
 * Number of donations.
 */
donations: number, 
/**
 * Number of `presence` joins (a rejoin counts again here, not in
 * [`Tally::joined`]).
 */
joins: number, 
/**
 * Number of chat messages.
 */
chats: number, };

/**
 * A listener joined (delivered only when the bot is a manager).
 */
export type Presence = { 
/**
 * Who joined.
 */
user: User, 
/**
 * The kind of presence change.
 */
type: PresenceType, 
/**
 * Rank in this broadcast's donation ranking; `None` with no donations.
 */
fanRank: number | null, 
/**
 * Whether the DJ made this listener a manager.
 */
isManager: boolean, 
/**
 * Affinity score across broadcasts (may be fractional); `None` if unknown.
 */
favoriteTemperature: number | null, 
/**
 * Join time.
 */
time: Timestamp, };

/**
 * `presence.type`: only `JOIN` is sent today.
 */
export type PresenceType = "JOIN" | string & {};

/**
 * What went wrong (or `Ok`), as decided from status, code and headers.
 */
export type ProblemKind = "ok" | "malformed_request" | "chat_empty" | "chat_too_long" | "unauthorized" | "permission_missing" | "chat_blocked" | "join_forbidden" | "not_on_air" | "chat_rate_limited" | "quota_per_second" | "quota_daily" | "server_error" | "broadcast_server_error" | "chat_server_error" | "invalid_request" | "unsupported_grant_type" | "invalid_grant" | "invalid_client" | "unexpected";

/**
 * The quota headers of a response (absent or unreadable: null).
 */
export type Quota = { 
/**
 * `x-ratelimit-remaining`: per-second tokens left.
 */
remaining: number | null, 
/**
 * `x-ratelimit-replenish-rate`: tokens refilled per second.
 */
replenishRate: number | null, 
/**
 * `x-ratelimit-burst-capacity`: the burst ceiling.
 */
burstCapacity: number | null, 
/**
 * `x-ratelimit-daily-limit`.
 */
dailyLimit: number | null, 
/**
 * `x-ratelimit-daily-remaining`.
 */
dailyRemaining: number | null, 
/**
 * `x-ratelimit-daily-reset`: next reset, epoch seconds.
 */
dailyResetS: number | null, 
/**
 * `x-ratelimit-daily-scope`: the permission a daily 429 hit.
 */
dailyScope: string | null, 
/**
 * Whether a `Retry-After` header was present (even unreadable).
 */
retryAfterPresent: boolean, 
/**
 * The `Retry-After` delay from `nowMs` (capped at one day), or null.
 */
retryAfterMs: number | null, };

/**
 * A daily-quota block in force.
 */
export type QuotaBlock = { 
/**
 * The blocked permission; `None`: the whole app.
 */
scope: string | null, 
/**
 * Until when (unix ms).
 */
untilMs: number, };

/**
 * The replies the bot says by itself (the same keys as `onair host`'s
 * `[bot.replies]`). Every text is optional; the defaults are below. An
 * empty text says nothing.
 */
export type RepliesConfig = { 
/**
 * A person's first arrival (`{nickname}`); default `Welcome, {nickname}! 🎧`.
 */
welcome?: string, 
/**
 * A return (`{nickname}`); default `Welcome back, {nickname}!`.
 */
welcome_back?: string, 
/**
 * Each donation (`{nickname}`); default `Thank you, {nickname}!`.
 */
thanks?: string, 
/**
 * A hearts milestone (`{reached}`); default `{reached} hearts tonight! 💜`.
 */
hearts?: string, 
/**
 * A person's donation milestone (`{nickname}`, `{reached}`).
 */
donated?: string, 
/**
 * What `{top}` says when nobody donated yet.
 */
no_donors?: string, 
/**
 * An answer per configured command name (`{nickname}`, `{rest}`: the
 * text after the name, `{top}`: the broadcast's top ten donors).
 */
commands?: { [key in string]?: string }, 
/**
 * Several welcomes in one message (`{nicknames}`); default: `welcome`
 * with `{nickname}` read as `{nicknames}`.
 */
welcome_many?: string | null, 
/**
 * Several welcomes back in one message (`{nicknames}`).
 */
welcome_back_many?: string | null, 
/**
 * Several thanks in one message (`{nicknames}`).
 */
thanks_many?: string | null, 
/**
 * Joins the last name to the others (default `" and "`); the others
 * are joined by `", "`.
 */
and?: string, 
/**
 * How long each kind stays worth saying.
 */
fresh_ms?: FreshConfig, };

/**
 * Reply counters per kind.
 */
export type RepliesCounters = { 
/**
 * Welcomes.
 */
welcome: ReplyCounters, 
/**
 * Welcomes back.
 */
welcomeBack: ReplyCounters, 
/**
 * Thanks.
 */
thanks: ReplyCounters, 
/**
 * Milestones.
 */
milestone: ReplyCounters, 
/**
 * Command answers.
 */
command: ReplyCounters, };

/**
 * One kind's reply counters.
 */
export type ReplyCounters = { 
/**
 * Messages the service took.
 */
messages: number, 
/**
 * Replies (people) named in those messages.
 */
people: number, 
/**
 * Replies that went out merged with others of their kind (milestones:
 * replaced by a later one about the same, whose message said them).
 */
merged: number, 
/**
 * Replies dropped, for any reason.
 */
dropped: number, 
/**
 * … not sent within their freshness.
 */
droppedStale: number, 
/**
 * … still queued when the broadcast ended.
 */
droppedEnded: number, 
/**
 * … refused by the service.
 */
droppedRefused: number, 
/**
 * … given up (no answer, the daily quota).
 */
droppedGivenUp: number, 
/**
 * … the reply queue was full.
 */
droppedQueueFull: number, 
/**
 * … the bot stopped.
 */
droppedStopped: number, };

/**
 * Why replies were dropped, never sent.
 */
export type ReplyDropReason = "stale" | "ended" | "refused" | "given_up" | "queue_full" | "stopped";

/**
 * What a reply is for: its freshness, and whether replies of its kind may
 * be merged into one message (welcome, welcome back, thanks).
 */
export type ReplyKind = "welcome" | "welcome_back" | "thanks" | "milestone" | "command";

/**
 * What the poster of a chat is, as far as the bot can tell.
 */
export type Role = "listener" | "manager" | "dj";

/**
 * A snapshot of the bot. See [`Bot::status`](super::Bot::status).
 */
export type Status = { 
/**
 * The event stream's state.
 */
connection: Connection, 
/**
 * Counters since the bot was created.
 */
counters: Counters, 
/**
 * The permissions the DJ granted (as of the last token pair).
 */
scope: Array<string>, 
/**
 * What the bot cannot do with that scope, one line each.
 */
cannot: Array<string>, 
/**
 * What the bot cannot know from the service, one line each.
 */
notes: Array<string>, 
/**
 * App calls queued or in flight.
 */
pendingCalls: number, 
/**
 * The token pair's generation, when there is one.
 */
tokenGeneration: number | null, 
/**
 * When the access token expires (unix ms).
 */
accessExpiresAtMs: number | null, 
/**
 * When the next refresh is due (unix ms).
 */
refreshAtMs: number | null, 
/**
 * Daily-quota blocks in force.
 */
quotaBlocks: Array<QuotaBlock>, };

/**
 * Why the bot stopped; `switch (stop.code)` narrows.
 */
export type Stop = { "code": "reauthorize", message: string, reason: string, } | { "code": "reconsent", message: string, missing: Array<string>, } | { "code": "join_forbidden", message: string, } | { "code": "invalid_client", message: string, } | { "code": "fix_request", message: string, problem: Explanation, } | { "code": "unexpected", message: string, problem: Explanation, } | { "code": "shut_down", message: string, };

/**
 * One broadcast's totals (the emulator ledger's `totals` shape).
 */
export type TallyJson = { hearts: number, donated: number, attendance: number, 
/**
 * By person id (visited as a dependency in `render`).
 */
people: Record<string, PersonTotals>, };

/**
 * An ISO-8601 timestamp as the service sent it.
 */
export type Timestamp = string;

/**
 * How a request failed to reach the service.
 */
export type Unreached = "not_sent" | "no_response" | "timed_out";

/**
 * The person behind an event. `id` is the stable key (spec 2.5); the
 * nickname changes, repeats, and may be `null`.
 */
export type User = { 
/**
 * Encrypted identifier, scoped to (bot, DJ). Use it as the key.
 */
id: string, 
/**
 * Nickname; `None` when the service sent `null` (never an empty string).
 */
nickname: string | null, };
