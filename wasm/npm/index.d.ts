// Types of onair for Node. Every object here has the shape of the core's one
// JSON wire form (`onair decode` lines, the bot's actions, stops, tallies):
// switch on `type` (items, actions), `event` (events), `kind` (notices, call
// results), `failure`, `code` (stops) to narrow. Nullable wire fields are
// `T | null` and always present. Enum-like wire strings the service may grow
// (`type`, `reason`) are the known literals or any other string.

/** A wire string that may take values this version does not know. */
export type Open<T extends string> = T | (string & {});

// ---- stream events (spec 2.6, 4.6, 6) ---------------------------------------

/** The person behind an event; `id` is the stable key, `nickname` may change or be null. */
export interface User {
  id: string;
  nickname: string | null;
}

export interface ChatData {
  user: User;
  isDj: boolean;
  message: string;
  sentTime: string;
}

export interface PresenceData {
  user: User;
  type: Open<'JOIN'>;
  fanRank: number | null;
  isManager: boolean;
  favoriteTemperature: number | null;
  time: string;
}

export interface LikeData {
  user: User;
  type: Open<'PAID' | 'FREE'>;
  totalAmount: number;
  amount: number;
  extraAmount: number;
  combo: number | null;
  time: string;
}

export interface DonationData {
  user: User;
  amount: number;
  message: string | null;
  time: string;
}

export interface EndData {
  reason: Open<'LIVE_ENDED' | 'TOKEN_EXPIRED' | 'RECONNECT'>;
}

interface EventOf<N extends string, D> {
  type: 'event';
  event: N;
  /** The frame's id (`<epochMillis>-<offset>`), or null when it had none. */
  id: string | null;
  data: D;
}

export type ChatEvent = EventOf<'chat', ChatData>;
export type PresenceEvent = EventOf<'presence', PresenceData>;
export type LikeEvent = EventOf<'like', LikeData>;
export type DonationEvent = EventOf<'donation', DonationData>;
export type EndEvent = EventOf<'end', EndData>;

/** A typed service event: `switch (ev.event)` narrows `data`. */
export type OnairEvent = ChatEvent | PresenceEvent | LikeEvent | DonationEvent | EndEvent;
export type EventName = OnairEvent['event'];

/** A frame whose event name this version does not know, kept raw. */
export interface UnknownItem {
  type: 'unknown';
  event: string;
  id: string | null;
  data: string;
}
/** The service's `:heartbeat` comment. */
export interface HeartbeatItem {
  type: 'heartbeat';
}
/** Any other comment. */
export interface CommentItem {
  type: 'comment';
  text: string;
}
/** The server's reconnection time. */
export interface RetryItem {
  type: 'retry';
  ms: number;
}
export type DecodeErrorCode = 'invalid_json' | 'invalid_event' | 'frame_too_large' | 'incomplete_frame';
/** A frame that could not be decoded; the stream goes on. */
export interface ErrorItem {
  type: 'error';
  error: DecodeErrorCode;
  event: string | null;
  id: string | null;
  /** The frame's data as received (a prefix for an oversized frame). */
  raw: string;
  message: string;
}

/** One thing the stream said: `switch (item.type)` narrows. */
export type OnairItem = OnairEvent | UnknownItem | HeartbeatItem | CommentItem | RetryItem | ErrorItem;

export interface DecoderOptions {
  /** The largest frame kept, in bytes (default 256 KiB); larger ones become `frame_too_large`. */
  maxFrameBytes?: number;
}

/** SSE framing plus typed decoding. Chunks may split anywhere (inside a UTF-8 character too). */
export class Decoder {
  constructor(options?: DecoderOptions);
  /** Decodes a chunk; the items it completed, in order. */
  push(chunk: Uint8Array | string): OnairItem[];
  /** Ends the stream: `[]`, or one `incomplete_frame` error when a frame was pending. */
  finish(): OnairItem[];
  /** @internal The same items through the core's JSON serializer (the tests' oracle). */
  _pushJson(chunk: Uint8Array | string): OnairItem[];
  /** Frees the WebAssembly memory now (otherwise when garbage-collected). Idempotent; any other use afterwards throws. */
  free(): void;
  [Symbol.dispose](): void;
}

// ---- classification ---------------------------------------------------------

export type Endpoint = 'token' | 'revoke' | 'live' | 'listeners' | 'fans' | 'events' | 'chat';

export type ProblemKind =
  | 'ok'
  | 'malformed_request'
  | 'chat_empty'
  | 'chat_too_long'
  | 'unauthorized'
  | 'permission_missing'
  | 'chat_blocked'
  | 'join_forbidden'
  | 'not_on_air'
  | 'chat_rate_limited'
  | 'quota_per_second'
  | 'quota_daily'
  | 'server_error'
  | 'broadcast_server_error'
  | 'chat_server_error'
  | 'invalid_request'
  | 'unsupported_grant_type'
  | 'invalid_grant'
  | 'invalid_client'
  | 'unexpected';

export type Advice =
  | 'none'
  | 'fix_request'
  | 'refresh_token'
  | 'reconsent'
  | 'retry_soon'
  | 'stop'
  | 'wait_not_on_air'
  | 'retry_backoff'
  | 'retry_after'
  | 'reauthorize';

/** A classified response (the object `onair explain` prints). */
export interface Explanation {
  kind: ProblemKind;
  advice: Advice;
  status: number;
  detailCode: string | null;
  oauthError: string | null;
  retryAfterMs: number | null;
  quotaScope: string | null;
  recentlyRevoked: boolean;
}

/**
 * Response headers: a fetch `Headers`, an array of `[name, value]` pairs, or
 * an object (Node's `IncomingHttpHeaders`).
 */
export type HeadersLike =
  | Iterable<readonly [string, string] | readonly string[]>
  | Record<string, string | readonly string[] | undefined>;

export type BodyLike = Uint8Array | ArrayBuffer | ArrayBufferView | string | null | undefined;

/**
 * Classifies one response of `endpoint`. `nowMs` turns an HTTP-date
 * `Retry-After` into `retryAfterMs`. Throws `OnairError` (`unknown_endpoint`).
 */
export function classify(
  endpoint: Endpoint,
  status: number,
  headers?: HeadersLike,
  body?: BodyLike,
  nowMs?: number,
): Explanation;

// ---- the bot ----------------------------------------------------------------

/** A request to send, ready for `fetch` (see `fetchArgs`). Holds secrets: never log it. */
export interface OnairRequest {
  endpoint: Endpoint;
  method: 'GET' | 'POST';
  url: string;
  headers: [string, string][];
  /** The body as text; `""` for a GET (which `fetch` must not be given). */
  body: string;
}

export type StopCode =
  | 'reauthorize'
  | 'reconsent'
  | 'join_forbidden'
  | 'invalid_client'
  | 'fix_request'
  | 'unexpected'
  | 'shut_down';

/** Why the bot stopped; `switch (stop.code)` narrows. */
export type Stop =
  | { code: 'reauthorize'; message: string; reason: string }
  | { code: 'reconsent'; message: string; missing: string[] }
  | { code: 'fix_request' | 'unexpected'; message: string; problem: Explanation }
  | { code: 'join_forbidden' | 'invalid_client' | 'shut_down'; message: string };

/** Worth a log line; needs no action. `switch (notice.kind)` narrows. */
export type Notice =
  | { kind: 'frameSkipped'; error: ErrorItem }
  | { kind: 'unknownEvent'; event: string; data: string }
  | { kind: 'problem'; endpoint: Endpoint; problem: Explanation }
  | { kind: 'callHeld'; call: number }
  | { kind: 'reconnectStormBraked'; untilMs: number };

export interface Broadcast {
  liveId: number;
  title: string;
  startedAt: string;
  closeAirTime: string;
  listenerCount: number;
  totalListenerCount: number;
  welcomeMessage: string;
  isChatFrozen: boolean;
  categories: string[];
  tags: string[];
}
export interface Listener {
  id: string;
  nickname: string;
}
export interface Fan {
  id: string;
  nickname: string;
  rank: number;
  coinCount: number | null;
}
export interface FanRanking {
  totalCount: number;
  fans: Fan[];
}

/** Why an app call failed: `switch (result.failure)` narrows. */
export type CallFailure =
  | { kind: 'failed'; failure: 'problem'; problem: Explanation }
  | { kind: 'failed'; failure: 'quota_blocked'; untilMs: number }
  | { kind: 'failed'; failure: 'invalid_body' | 'pager'; message: string }
  | { kind: 'failed'; failure: 'queue_full'; message: string }
  | { kind: 'failed'; failure: 'stopped'; stop: Stop }
  | { kind: 'failed'; failure: 'transport' | 'cancelled' };

/** The answer to an app call: `switch (result.kind)` narrows. */
export type CallResult =
  | { kind: 'broadcast'; broadcast: Broadcast }
  | { kind: 'listeners'; listeners: Listener[] }
  | { kind: 'fans'; fans: FanRanking }
  | { kind: 'chatSent' }
  | CallFailure;

/** Send `request`; report with `onResponse` or `onTransportError`. */
export interface SendAction {
  type: 'send';
  id: number;
  request: OnairRequest;
  /** The bot keeps this deadline itself; give the client no shorter timeout. */
  timeoutMs: number;
}
/** Open this streaming GET (no whole-body timeout); report with `onStream*`. */
export interface OpenStreamAction {
  type: 'openStream';
  id: number;
  request: OnairRequest;
}
/** Close this stream connection (abort it); late reports are harmless. */
export interface CloseStreamAction {
  type: 'closeStream';
  id: number;
}
/** The bot gave up on request `id` (no report within its timeout): abort it; a late report is ignored. */
export interface TimedOutAction {
  type: 'timedOut';
  id: number;
  endpoint: Endpoint;
}
export interface NoticeAction {
  type: 'notice';
  notice: Notice;
}
export interface DoneAction {
  type: 'done';
  call: number;
  result: CallResult;
}
/** Save `tokens` (the stored form); pass it as `tokens` to `new Bot` on restart. A secret. */
export interface PersistTokensAction {
  type: 'persistTokens';
  generation: number;
  tokens: string;
}
/** An app timer set with `schedule` or `every` is due. */
export interface TimerAction {
  type: 'timer';
  tag: string;
}
/** Get a consent code from the DJ and give it to `bot.authorize`. */
export interface NeedsAuthorizationAction {
  type: 'needsAuthorization';
}
/** Sleep until `untilMs` or until a report arrives; `null`: only a report moves the bot. */
export interface WaitAction {
  type: 'wait';
  untilMs: number | null;
}
/** The bot stopped; a person must act. Sticky. */
export interface StoppedAction {
  type: 'stopped';
  stop: Stop;
}

/** What to do next: `switch (action.type)` narrows; an `event` action is an `OnairEvent`. */
export type Action =
  | SendAction
  | OpenStreamAction
  | CloseStreamAction
  | TimedOutAction
  | OnairEvent
  | NoticeAction
  | DoneAction
  | PersistTokensAction
  | TimerAction
  | NeedsAuthorizationAction
  | WaitAction
  | StoppedAction;

/** Where the stream stands: `switch (connection.state)` narrows. */
export type Connection =
  | { state: 'needsAuthorization' }
  | { state: 'off' }
  | { state: 'waitingForBroadcast'; nextAttemptMs: number }
  | { state: 'connecting'; sinceMs: number | null }
  | { state: 'connected'; sinceMs: number }
  | { state: 'backingOff'; untilMs: number }
  | { state: 'refreshing' }
  | { state: 'stopped'; code: StopCode; message: string };

export interface StatusCounters {
  chat: number;
  presence: number;
  like: number;
  donation: number;
  unknownEvents: number;
  decodeErrors: number;
  heartbeats: number;
  lastHeartbeatMs: number | null;
  connects: number;
  endsLiveEnded: number;
  endsTokenExpired: number;
  endsReconnect: number;
  drops: number;
  chatsSent: number;
  chatsFailed: number;
  tokenPairs: number;
}

/** A snapshot for dashboards and logs (`bot.status(now)`). Holds no secret. */
export interface Status {
  connection: Connection;
  counters: StatusCounters;
  /** The permissions granted. */
  scope: string[];
  /** What the bot cannot do with them, in words. */
  cannot: string[];
  notes: string[];
  pendingCalls: number;
  tokenGeneration: number | null;
  accessExpiresAtMs: number | null;
  refreshAtMs: number | null;
  quotaBlocks: { scope: string | null; untilMs: number }[];
}

export interface BotOptions {
  /** The region's base address, e.g. `https://…`. */
  baseUrl: string;
  clientId: string;
  clientSecret: string;
  /** The stored form of a `persistTokens` action, to resume without new consent. */
  tokens?: string | null;
  /** Fixes every jitter (tests); default: random. */
  seed?: number;
  /** Open the event stream (default true). */
  events?: boolean;
  /** Tries per call when the server says retry (default 3). */
  maxAttempts?: number;
  /** Per-request deadline (default 30 000 ms). */
  requestTimeoutMs?: number;
  /** Queued app calls allowed (default 100). */
  maxQueuedCalls?: number;
}

/**
 * The sans-IO bot machine. After any `on*` report or app command, call
 * `poll(now)` until it returns a `wait` action; only then sleep. Times are
 * unix milliseconds (default `Date.now()`). Reports throw `MisuseError` for
 * an id the bot never issued or one that does not fit; nothing changes then.
 *
 * A bot belongs to the thread that created it: it lives in that thread's
 * WebAssembly instance, which cannot be shared with `worker_threads`
 * Workers. Do not post or transfer it to a Worker (a structured clone is not
 * a bot); keep it on one thread and message that thread from the others.
 */
export class Bot {
  /** Throws `ConfigError` (bad URL, credentials) or `TokensError` (bad stored tokens). */
  constructor(options: BotOptions);
  poll(nowMs?: number): Action;
  onResponse(id: number, status: number, headers: HeadersLike, body: BodyLike, nowMs?: number): void;
  onTransportError(id: number, nowMs?: number): void;
  onStreamOpen(id: number, status: number, headers: HeadersLike, nowMs?: number): void;
  onStreamBytes(id: number, chunk: Uint8Array | string, nowMs?: number): void;
  onStreamClosed(id: number, nowMs?: number): void;
  /** Exchanges a consent code (single use). */
  authorize(code: string, redirectUri: string): void;
  /** Queues a chat message; its call id. Throws `CallError` (`chat_too_long`, `chat_empty`: nothing queued). A full queue or a stopped bot is the call's `done` (`queue_full`, `stopped`). */
  sendChat(message: string): number;
  /** Queues `GET /v1/live`; its call id. Every call is answered by one `done` (a full queue or a stopped bot included); made while the bot waits for consent it is held (notice `callHeld`). */
  fetchBroadcast(): number;
  listListeners(): number;
  fetchFans(): number;
  /** Reconnects the stream at once (e.g. after being made a manager). */
  requestReconnect(nowMs?: number): void;
  /** A `timer` action with `tag` once at `atMs` (folded into `wait`). Setting a tag again replaces it. Throws `TimerError`. */
  schedule(atMs: number, tag: string): void;
  /** A `timer` action with `tag` every `periodMs`, first at `firstAtMs` (default: one period from now). Throws `TimerError`. */
  every(periodMs: number, tag: string, firstAtMs?: number): void;
  /** Cancels the timer `tag`; false when there was none. */
  cancelTimer(tag: string): boolean;
  /** Stops: cancels calls, closes the stream; with `revoke` the tokens are revoked. */
  shutdown(options?: { revoke?: boolean }): void;
  /** Why the bot stopped, or null. */
  readonly stop: Stop | null;
  /** App calls queued and not yet answered. */
  readonly pendingCalls: number;
  /** A snapshot for dashboards and logs. */
  status(nowMs?: number): Status;
  /** The current token pair in its stored form (a secret), or null. */
  tokens(): string | null;
  free(): void;
  [Symbol.dispose](): void;
}

/** `[url, init]` for `fetch(...)`: method, headers, and the body unless GET. */
export function fetchArgs(
  request: OnairRequest,
  init?: RequestInit,
): [string, RequestInit & { method: string; headers: [string, string][] }];

// ---- request builders, response decoders, backoff ---------------------------

/** The app's token client: where and who. */
export interface TokenClientOptions {
  baseUrl: string;
  clientId: string;
  clientSecret: string;
}

/** Request builders (the core's; no rule is re-written here). Throw `RequestError`, `ConfigError`. */
export const requests: {
  live(baseUrl: string, accessToken: string): OnairRequest;
  /** One page; `cursor` is the previous page's `nextCursor` (never empty). */
  listeners(baseUrl: string, accessToken: string, cursor?: string | null): OnairRequest;
  fans(baseUrl: string, accessToken: string): OnairRequest;
  events(baseUrl: string, accessToken: string): OnairRequest;
  /** Validates the message first (`chat_empty`, `chat_too_long`). */
  chat(baseUrl: string, accessToken: string, message: string): OnairRequest;
  issueToken(client: TokenClientOptions, code: string, redirectUri: string): OnairRequest;
  refreshToken(client: TokenClientOptions, refreshToken: string): OnairRequest;
  revokeToken(client: TokenClientOptions, token: string): OnairRequest;
};

export interface ListenersPage {
  listeners: Listener[];
  /** The next page's cursor; null on the last page. */
  nextCursor: string | null;
}
/** Decodes a 2xx body of `GET /v1/live`. Throws `ResponseError`. */
export function decodeBroadcast(body: BodyLike): Broadcast;
/** Decodes one 2xx page of `GET /v1/live/listeners`. Throws `ResponseError`. */
export function decodeListeners(body: BodyLike): ListenersPage;
/** Decodes a 2xx body of `GET /v1/live/fans`. Throws `ResponseError`. */
export function decodeFans(body: BodyLike): FanRanking;

/** Jittered exponential backoff (full jitter), seeded: the same seed gives the same delays. */
export class Backoff {
  constructor(options?: { seed?: number; baseMs?: number; capMs?: number });
  nextDelayMs(): number;
  /** The largest delay of attempt `attempt` (0-based). */
  ceilingMs(attempt: number): number;
  readonly attempt: number;
  reset(): void;
  free(): void;
  [Symbol.dispose](): void;
}

// ---- tally and kit ----------------------------------------------------------

export interface PersonTotals {
  nickname: string | null;
  hearts: number;
  paidHearts: number;
  donated: number;
  donations: number;
  joins: number;
  chats: number;
}
/** One broadcast's totals (the emulator ledger's `totals` shape). */
export interface TallyJson {
  hearts: number;
  donated: number;
  attendance: number;
  people: Record<string, PersonTotals>;
}

/** Per-broadcast totals by person (DJ excluded, keyed by id). */
export class Tally {
  constructor();
  /** Ties the tally to a broadcast; `true` when a different one started it over. */
  startBroadcast(liveId: number): boolean;
  /** Counts one event; `false` when it is not a valid event. */
  record(event: OnairEvent): boolean;
  toJSON(): TallyJson;
  free(): void;
  [Symbol.dispose](): void;
}

export type Greeting =
  | { greeting: 'first'; presence: PresenceData }
  | { greeting: 'welcomeBack'; presence: PresenceData };

/** Greet once, welcome back once, per person per broadcast. */
export class Audience {
  constructor();
  /** Throws `StateError`. */
  static fromJSON(json: string | object): Audience;
  toJSON(): object;
  startBroadcast(liveId: number): boolean;
  endBroadcast(): void;
  /** Feeds an event; a greeting for a join that deserves one, else null. */
  onEvent(event: OnairEvent): Greeting | null;
  isPresent(id: string): boolean;
  isManager(id: string): boolean;
  readonly size: number;
  /** What the stream showed of one person in this broadcast, or null. */
  person(id: string): Person | null;
  /** Everyone seen in this broadcast, longest-unseen first. */
  people(): Person[];
  free(): void;
  [Symbol.dispose](): void;
}

/** One person of an `Audience`. */
export interface Person {
  /** The person, with the latest nickname seen. */
  user: User;
  /** `JOIN`s seen in this broadcast (0: seen only through chat, hearts or donations). */
  joins: number;
  /** `isManager` of their latest join. */
  isManager: boolean;
  /** `fanRank` of their latest join, as sent. */
  fanRank: number | null;
  /** `favoriteTemperature` of their latest join, as sent. */
  favoriteTemperature: number | null;
}

/** One donor's running total in this broadcast. */
export interface Donor {
  /** The donor, with the nickname of their latest donation. */
  user: User;
  /** Currency units donated. */
  donated: number;
  /** Number of donations. */
  donations: number;
  /** The highest multiple of the donation step announced for them. */
  announced: number;
}

export type MilestoneReached =
  | { milestone: 'hearts'; reached: number; total: number }
  | { milestone: 'donated'; user: User; reached: number; total: number };

/** Heart and donation milestones with running donor totals. */
export interface MilestonesOptions {
  /** A milestone every this many hearts of the broadcast (0 or absent: none). */
  heartsEvery?: number;
  /** A milestone every this many units one person donated (0 or absent: none). */
  donationsEvery?: number;
}

export class Milestones {
  constructor(options?: MilestonesOptions);
  /** Loads stored milestones (`toJSON()`); the steps are configuration, given again. Throws `StateError`. */
  static fromJSON(json: string | object, options?: MilestonesOptions): Milestones;
  startBroadcast(liveId: number): boolean;
  /** Forgets the broadcast's totals. */
  endBroadcast(): void;
  /** One person's donations this broadcast, or null. */
  donor(id: string): Donor | null;
  /** Donors, highest total first (ties by id). */
  donors(): Donor[];
  onEvent(event: OnairEvent): MilestoneReached | null;
  readonly hearts: number;
  readonly totalDonated: number;
  /** What one person donated this broadcast. */
  donatedBy(id: string): number;
  toJSON(): object;
  free(): void;
  [Symbol.dispose](): void;
}

export type Allowed = 'anyone' | 'managers' | 'dj';
export type Role = 'listener' | 'manager' | 'dj';
export type CommandMatch =
  | { ok: true; name: string; args: string[]; rest: string; user: User; role: Role }
  | { ok: false; name: string; needed: Allowed; user: User; role: Role };

/** `!name args` chat commands and who may run them. */
export class Commands {
  constructor(options?: { prefix?: string; ownId?: string });
  /** Adds a command (default: anyone). Throws `OnairError` for another `allowed`. */
  add(name: string, allowed?: Allowed): this;
  /** Matches a chat event; null when it is no command. Managers come from `audience`. */
  match(event: OnairEvent, audience?: Audience): CommandMatch | null;
  free(): void;
  [Symbol.dispose](): void;
}

export interface TimerOptions {
  /** Fires only while the stream is connected (due while disconnected: once, at the next connected `popDue`). */
  whileConnected?: boolean;
}

/**
 * Named one-shot and repeating app timers, as data (a `Bot` hosts its own set):
 * fold `nextDeadline()` into your wait, then `popDue(now)` until it is null.
 * A tag names one timer; setting it again replaces it. Throws `TimerError`
 * (`too_many`, `bad_tag`, `zero_period`).
 */
export class Timers {
  constructor();
  /** Fires `tag` once at `atMs`. */
  schedule(atMs: number, tag: string, options?: TimerOptions): void;
  /** Fires `tag` every `periodMs`, first at `firstAtMs` (default: one period from now), on that schedule. */
  every(periodMs: number, tag: string, firstAtMs?: number, options?: TimerOptions): void;
  /** Cancels `tag`; false when there was none. */
  cancel(tag: string): boolean;
  /** When `tag` is next due, or null. */
  deadline(tag: string): number | null;
  /** When the next timer is due (default: connected), or null. */
  nextDeadline(connected?: boolean): number | null;
  /** The tag of a timer due at `nowMs` (default `Date.now()`), earliest first, or null. */
  popDue(nowMs?: number, connected?: boolean): string | null;
  readonly size: number;
  tags(): string[];
  free(): void;
  [Symbol.dispose](): void;
}

/** The quota headers of a response (absent or unreadable: null). */
export interface Quota {
  /** `x-ratelimit-remaining`: per-second tokens left. */
  remaining: number | null;
  /** `x-ratelimit-replenish-rate`: tokens refilled per second. */
  replenishRate: number | null;
  /** `x-ratelimit-burst-capacity`: the burst ceiling. */
  burstCapacity: number | null;
  /** `x-ratelimit-daily-limit`. */
  dailyLimit: number | null;
  /** `x-ratelimit-daily-remaining`. */
  dailyRemaining: number | null;
  /** `x-ratelimit-daily-reset`: next reset, epoch seconds. */
  dailyResetS: number | null;
  /** `x-ratelimit-daily-scope`: the permission a daily 429 hit. */
  dailyScope: string | null;
  /** Whether a `Retry-After` header was present (even unreadable). */
  retryAfterPresent: boolean;
  /** The `Retry-After` delay from `nowMs` (capped at one day), or null. */
  retryAfterMs: number | null;
}

/**
 * Reads the quota headers (`x-ratelimit-*`, `Retry-After`; names in any case,
 * the first of a repeated name wins). `nowMs` (default `Date.now()`) turns an
 * HTTP-date `Retry-After` into `retryAfterMs`.
 */
export function parseQuota(headers: HeadersLike, nowMs?: number): Quota;

/** Splits text into chat messages the service takes, at grapheme boundaries. */
export function splitChat(text: string): string[];
/** Truncates text to `limit` UTF-16 units (default 200) at a grapheme boundary, adding `ellipsis`. */
export function truncateChat(text: string, limit?: number, ellipsis?: string): string;
/** Splits command arguments (double quotes group words). */
export function splitArgs(text: string): string[];

// ---- errors -----------------------------------------------------------------

/** Base of every error onair throws; `kind` is a stable code. */
export class OnairError extends Error {
  readonly kind: string;
}
export type MisuseKind =
  | 'unknown_request'
  | 'not_a_stream'
  | 'stream_not_started'
  | 'not_connecting'
  | 'not_refreshing'
  | 'token_request_in_flight'
  | 'no_token_request_in_flight'
  | 'misuse';
export class MisuseError extends OnairError {
  readonly kind: MisuseKind;
}
export class CallError extends OnairError {
  readonly kind: 'chat_too_long' | 'chat_empty';
}
export class ConfigError extends OnairError {
  readonly kind: 'invalid_base_url' | 'invalid_credentials';
}
export class TokensError extends OnairError {
  readonly kind: 'json' | 'unknown_format' | 'unsupported_version' | 'invalid';
}
export class StateError extends OnairError {}
export class RequestError extends OnairError {}
export class ResponseError extends OnairError {
  readonly kind: 'invalid_json' | 'invalid_body' | 'unsupported_token_type';
}
export class TimerError extends OnairError {
  readonly kind: 'too_many' | 'bad_tag' | 'zero_period' | 'timer';
}
