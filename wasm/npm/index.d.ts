// onair for Node. The types of everything that crosses as JSON (events,
// actions, notices, call results, stops, the status, the tally, the kit's
// configuration) are generated from the core's Rust types: types.d.ts. This
// file declares the classes and functions over them.
import type {
  Action, Broadcast, Endpoint, Explanation, FanRanking, KitConfig, KitView, ListenersPage, OnairItem,
  OnairRequest, Quota, QuotaBlock, ReplyKind, Status, Stop, User,
} from './types.js';

export * from './types.js';

/** A typed service event (an item or action of type `event`): `switch (ev.event)` narrows `data`. */
export type OnairEvent = Extract<OnairItem, { type: 'event' }>;
export type EventName = OnairEvent['event'];
export type ChatEvent = Extract<OnairEvent, { event: 'chat' }>;
export type PresenceEvent = Extract<OnairEvent, { event: 'presence' }>;
export type LikeEvent = Extract<OnairEvent, { event: 'like' }>;
export type DonationEvent = Extract<OnairEvent, { event: 'donation' }>;
export type EndEvent = Extract<OnairEvent, { event: 'end' }>;
/** The action of one `type`, e.g. `ActionOf<'command'>`. */
export type ActionOf<T extends Action['type']> = Extract<Action, { type: T }>;

// ---- the decoder ------------------------------------------------------------

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
  /**
   * With saved tokens, check the app's credentials at start (default true):
   * one `POST /v1/oauth/revoke` of a token that does not exist (form
   * `token=onair-credentials-check`), so a wrong client secret stops the bot
   * with `invalid_client` at once, not at the first refresh an hour later.
   */
  checkCredentials?: boolean;
  /** Tries per call when the server says retry (default 3). */
  maxAttempts?: number;
  /** Per-request deadline (default 30 000 ms). */
  requestTimeoutMs?: number;
  /** Queued app calls allowed (default 100). */
  maxQueuedCalls?: number;
  /** The stream's heartbeat watchdog (default 45 000 ms): a silent stream is closed and reopened after it. */
  watchdogMs?: number;
  /**
   * How long a bot stopping for good waits for a token request or the
   * revocation still in flight before it says `stopped` (default 30 000 ms);
   * every other request is dropped at once.
   */
  shutdownGraceMs?: number;
  /**
   * The kit: commands, greetings, milestones, the tally, delivered as
   * `command`, `arrival`, `milestone`, `broadcastEnded` actions (object or
   * JSON text). Throws `ConfigError` (kind `kit`, `key`) for a mistake.
   */
  kit?: KitConfig | string;
  /** The stored form of a `persistState` action, so a restart greets nobody twice. Throws `StateError`. */
  kitState?: string | null;
}

/**
 * The sans-IO bot machine. After any `on*` report or app command, call
 * `poll(now)` until it returns a `wait`, `needsAuthorization` or `stopped`
 * action; only then sleep. Times are unix milliseconds (default
 * `Date.now()`). Reports throw `MisuseError` for an id the bot never issued
 * or one that does not fit; nothing changes then. `Driver` runs this loop
 * over fetch for you.
 *
 * A bot belongs to the thread that created it: it lives in that thread's
 * WebAssembly instance, which cannot be shared with `worker_threads`
 * Workers. Do not post or transfer it to a Worker (a structured clone is not
 * a bot); keep it on one thread and message that thread from the others.
 */
export class Bot {
  /**
   * Throws `ConfigError` (an option missing or of the wrong type, `kind`
   * `missing_option` / `invalid_option` with `key` naming it; a bad URL,
   * credentials, kit), `TokensError` or `StateError` (bad stored tokens or
   * state). Every method checks its arguments: a string or number of the
   * wrong type is a `TypeError` naming the argument.
   */
  constructor(options: BotOptions);
  poll(nowMs?: number): Action;
  onResponse(id: number, status: number, headers: HeadersLike, body: BodyLike, nowMs?: number): void;
  /**
   * No response after the request may have been sent (a reset, a lost
   * connection): the outcome is unknown, so a consent code counts as spent
   * and a chat message is not sent again.
   */
  onTransportError(id: number, nowMs?: number): void;
  /**
   * The request never left this machine (a fetch failure whose cause is
   * ECONNREFUSED, ENOTFOUND, EAI_AGAIN or UND_ERR_CONNECT_TIMEOUT, a TLS
   * failure): nothing was spent. A consent code's exchange goes again while
   * the code is fresh, a chat message may be sent again, a stream open is a
   * failed connect; it counts toward the `unreachable` notice.
   */
  onNotSent(id: number, nowMs?: number): void;
  onStreamOpen(id: number, status: number, headers: HeadersLike, nowMs?: number): void;
  onStreamBytes(id: number, chunk: Uint8Array | string, nowMs?: number): void;
  onStreamClosed(id: number, nowMs?: number): void;
  /** Exchanges a consent code (single use). */
  authorize(code: string, redirectUri: string): void;
  /** Queues a chat message; its call id. Throws `CallError` (`chat_too_long`, `chat_empty`: nothing queued). A full queue or a stopped bot is the call's `done` (`queue_full`, `stopped`). */
  sendChat(message: string): number;
  /** Queues a reply of any length, split between grapheme clusters into messages the service takes; one call id per message (none for a blank text). */
  say(text: string): number[];
  /**
   * Queues a reply of `kind` naming `user` (a person of an action: `{ id,
   * nickname }`). Alone it goes out as written; when the chat limit holds
   * it back with replies of its kind (`welcome`, `welcome_back`, `thanks`),
   * one message names them all, in arrival order, with the kind's `_many`
   * text (the kit's `replies`, or its defaults). Not out within its kind's
   * freshness, it is dropped with a `repliesDropped` notice, never sent
   * late. `text` must be one chat message: throws `CallError`
   * (`chat_too_long`, `chat_empty`, `unknown_reply_kind`; nothing queued),
   * a `TypeError` for an argument of the wrong type.
   */
  reply(kind: ReplyKind, user: Pick<User, 'id'> & { nickname?: string | null }, text: string): void;
  /** Queues `GET /v1/live`; its call id. Every call is answered by one `done` (a full queue or a stopped bot included); made while the bot waits for consent it is held (notice `callHeld`). */
  fetchBroadcast(): number;
  listListeners(): number;
  fetchFans(): number;
  /** Reconnects the stream at once (e.g. after being made a manager). */
  requestReconnect(nowMs?: number): void;
  /** A `timer` action with `tag` once at `atMs` (folded into `wait`). Setting a tag again replaces it. Throws `TimerError`. */
  schedule(atMs: number, tag: string): void;
  /**
   * A `timer` action with `tag` every `periodMs`, first at `firstAtMs`
   * (default: one period from now); with `whileConnected`, only while the
   * stream is connected (a reminder that would go to an empty room waits).
   * Throws `TimerError`.
   */
  every(periodMs: number, tag: string, firstAtMs?: number | null, options?: { whileConnected?: boolean }): void;
  /** Cancels the timer `tag`; false when there was none. */
  cancelTimer(tag: string): boolean;
  /** Stops: cancels calls, closes the stream, hands out the kit's state; with `revoke` the tokens are revoked. */
  shutdown(options?: { revoke?: boolean }): void;
  /** Why the bot stopped, or null. */
  readonly stop: Stop | null;
  /** The `reauthorize` stop a run ends with when no new consent comes (with no tokens yet: reason "not authorized yet"), or null when the bot needs no consent. */
  readonly consentStop: Extract<Stop, { code: 'reauthorize' }> | null;
  /** App calls queued and not yet answered. */
  readonly pendingCalls: number;
  /** The configured kit's current broadcast (its `liveId`, its tally so far), or null without a kit. */
  readonly kit: KitView | null;
  /** The configured kit's state now (what `persistState` saves), or null without a kit. */
  kitState(): string | null;
  /** A snapshot for dashboards and logs. */
  status(nowMs?: number): Status;
  /**
   * What this bot knows of the app's daily quota: the daily counters last
   * seen (while their reset is ahead) and the daily blocks in force. The
   * service counts the quota for the whole app: merge the views of its bots
   * with `mergeDailyQuota` and give the result to each with `shareDailyQuota`.
   */
  dailyQuota(nowMs?: number): DailyQuota;
  /**
   * Takes what the app's other bots learned of its daily quota: calls needing
   * a blocked permission, or every call once the day's calls are used up, are
   * answered `failed` (`quota_blocked`) until the reset; the stream is never
   * held back. Then poll. Throws `OnairError` (`invalid_argument`) for an
   * object that is not a daily quota, a `TypeError` for a non-object.
   */
  shareDailyQuota(quota: DailyQuota, nowMs?: number): void;
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

// ---- the driver -------------------------------------------------------------

/** Where the driver keeps a saved text (the token pair, the kit's state); each method may return a promise. */
export interface Store {
  load(): string | null | Promise<string | null>;
  save(text: string): void | Promise<void>;
  clear?(): void | Promise<void>;
}
/** A file: mode 0600, replaced atomically (write, fsync, rename). */
export class FileStore implements Store {
  constructor(path: string);
  readonly path: string;
  load(): string | null;
  save(text: string): void;
  clear(): void;
}
/** Memory only: a restart starts over (tests, one-off runs). */
export class MemoryStore implements Store {
  constructor(value?: string | null);
  load(): string | null;
  save(text: string): void;
  clear(): void;
}
/** Your own functions (a database, a secret manager). */
export class CallbackStore implements Store {
  constructor(callbacks: {
    load(): string | null | Promise<string | null>;
    save(text: string): void | Promise<void>;
    clear?(): void | Promise<void>;
  });
  load(): string | null | Promise<string | null>;
  save(text: string): void | Promise<void>;
  clear(): void | Promise<void>;
}

/** What the driver hands its author: every action but the plumbing (`send`, `openStream`, `closeStream`, `wait`), which it does itself. */
export type DriverAction = Exclude<Action, { type: 'send' | 'openStream' | 'closeStream' | 'wait' }>;
/** A handler's name: a driver action's `type`, an event's name, or `event` for every event. */
export type HandlerName = DriverAction['type'] | EventName;
/** An event as the driver hands it out: its line, with `replyKind` (`thanks`) on a donation. */
export type EventAction = Extract<DriverAction, { type: 'event' }>;
/** What a handler of `N` receives. */
export type HandlerAction<N extends HandlerName> = N extends EventName
  ? Extract<EventAction, { event: N }>
  : N extends 'event'
    ? EventAction
    : Extract<DriverAction, { type: N }>;
/**
 * A handler: a string it returns (or resolves to) is said. Where the action
 * names a person, as the reply its `replyKind` names (the bot's choice),
 * which joins the merging of its kind: an `arrival`'s text is a `welcome`
 * (`first`) or `welcome_back` (`back`), a `donation` event's a `thanks` to
 * the donor, a `command`'s a `command` answer; any other action's text (no
 * `replyKind`), or one longer than a chat message, goes out with `say`.
 */
export type Handler<A> = (action: A, driver: Driver) => void | string | Promise<void | string>;

export interface DriverOptions extends Omit<BotOptions, 'tokens' | 'kitState'> {
  /** Where the token pair is kept (a path is a `FileStore`); default: memory. Saved before anything goes out with a new pair. */
  tokens?: Store | string;
  /** Where the kit's state is kept (a path is a `FileStore`); saved on every `persistState`, before the bot acts on what follows. */
  state?: Store | string;
  /**
   * Called when the bot needs the DJ's consent (at first, and after a
   * `reauthorize` stop): a code, or null. With null the author gets the
   * `needsAuthorization` / `stopped` action; unless a handler calls
   * `driver.authorize` then (or `waitForConsent` is set), the run ends with
   * the `reauthorize` stop. A consent without a string `code` and
   * `redirectUri` is a `ConfigError` (kind `invalid_consent`) from the loop.
   */
  authorize?: () => { code: string; redirectUri: string } | null | Promise<{ code: string; redirectUri: string } | null>;
  /**
   * Keep running after a consent failure (no code, an expired or reused one)
   * until `driver.authorize(code, redirectUri)` brings a new code (a web
   * handler receiving the DJ's redirect). Default false: the run ends with
   * the `reauthorize` stop.
   */
  waitForConsent?: boolean;
  /**
   * Where notices of level `warn` are logged (`logger.warn(message)`; with a
   * logger given, `info` ones too if it has `info`): default `console`;
   * null logs nothing (the `notice` actions still come).
   */
  logger?: { warn(message: string): void; info?(message: string): void } | null;
  /**
   * The `fetch` to use (default: the built-in one). Give it no timeout: the
   * bot keeps every deadline. (The built-in fetch gives up on its own after
   * 300 s without a byte, undici's defaults: longer than the bot's deadlines
   * unless `watchdogMs` or `requestTimeoutMs` is set above that.)
   */
  fetch?: typeof globalThis.fetch;
  /** The clock, unix ms (default `Date.now`), running at real speed: e.g. shifted with an emulator's clock in tests. */
  now?: () => number;
  /** Shut down on SIGINT and SIGTERM while running (default true): what the stream delivered handed to the bot, streams aborted, state saved, the loop ends; a second signal exits at once (status 130 / 143). */
  signals?: boolean;
}

/**
 * The ready-made driver: a `Bot` over the built-in `fetch`, one request or
 * stream per action, aborted when the bot closes it, tokens and the kit's
 * state saved through stores. Two ways to write a bot:
 *
 * ```js
 * for await (const action of driver) {
 *   switch (action.type) {
 *     case 'command': driver.say(`Hello, ${action.user.nickname ?? 'friend'}!`); break;
 *     case 'event': if (action.event === 'donation') driver.say('Thank you!'); break;
 *   }
 * }
 * // or
 * // A returned text is said: a command's as its answer, a donation's as a thanks (see `Handler`).
 * driver.command('hello', (c) => `Hello, ${c.user.nickname ?? 'friend'}!`);
 * driver.on('donation', (ev) => `Thank you, ${ev.data.user.nickname ?? 'friend'}!`);
 * await driver.run();
 * ```
 *
 * The loop ends when the bot stops for good (after its `stopped` action):
 * `shutdown()`, SIGINT/SIGTERM, a stop a new consent does not lift, or a
 * consent failure with nothing set up to bring a new code (the `reauthorize`
 * stop; see `waitForConsent`).
 */
export class Driver implements AsyncIterable<DriverAction> {
  /**
   * Throws what `new Bot` throws (a store that loads asynchronously: from
   * the loop instead); a token or state file that cannot be read or holds
   * something else is a `TokensError` / `StateError` naming the file, what
   * is wrong and what to do; a Driver option of the wrong type a `ConfigError`.
   */
  constructor(options: DriverOptions);
  /** Resolves once the stores have loaded. */
  readonly ready: Promise<void>;
  /** The Bot, for its getters (`status`, `stop`, `kit`, `pendingCalls`). */
  readonly bot: Bot;
  /** The configured kit's current broadcast (`liveId`, `tally`), or null without a kit. */
  readonly kit: KitView | null;
  [Symbol.asyncIterator](): AsyncIterator<DriverAction>;
  /** Calls the handlers (each awaited, in order; a string one returns is said, see `Handler`) until the bot stops; resolves to the stop (`driver.stop`). */
  run(): Promise<Stop | null>;
  /** Why the run ended, or null while it goes on; a `reauthorize` stop stays the answer through a later shutdown (Ctrl-C). */
  readonly stop: Stop | null;
  on<N extends HandlerName>(name: N, handler: Handler<HandlerAction<N>>): this;
  /** A handler for one configured command (by its configured name). */
  command(name: string, handler: Handler<ActionOf<'command'>>): this;
  say(text: string): number[];
  /** `Bot.reply`, waking the loop: a reply of `kind` naming `user`, merged with its kind's when the chat is behind. */
  reply(kind: ReplyKind, user: Pick<User, 'id'> & { nickname?: string | null }, text: string): void;
  sendChat(message: string): number;
  fetchBroadcast(): number;
  listListeners(): number;
  fetchFans(): number;
  schedule(atMs: number, tag: string): void;
  every(periodMs: number, tag: string, firstAtMs?: number | null, options?: { whileConnected?: boolean }): void;
  cancelTimer(tag: string): boolean;
  requestReconnect(): void;
  authorize(code: string, redirectUri: string): void;
  /**
   * Stops: what the open stream has already received (its body's chunks, the
   * socket's bytes) handed to the bot first, then streams aborted, calls
   * cancelled, the kit's state saved; waits at most 30 s for a token request
   * in flight. With `revoke`, the tokens are revoked and the store cleared.
   * Resolves once the bot is told (the loop then ends).
   */
  shutdown(options?: { revoke?: boolean }): Promise<void>;
}

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

// ---- quota headers and the kit's pure helpers -------------------------------

/**
 * Reads the quota headers (`x-ratelimit-*`, `Retry-After`; names in any case,
 * the first of a repeated name wins). `nowMs` (default `Date.now()`) turns an
 * HTTP-date `Retry-After` into `retryAfterMs`.
 */
export function parseQuota(headers: HeadersLike, nowMs?: number): Quota;

/**
 * The app's daily quota as one bot knows it (`Bot.dailyQuota`), or as the
 * app keeps it (`mergeDailyQuota`): calls left today and the next reset (unix
 * ms; null when unknown), and the daily blocks in force.
 */
export interface DailyQuota {
  remaining: number | null;
  resetMs: number | null;
  blocks: QuotaBlock[];
}

/**
 * Merges what one bot `learned` of the app's daily quota into the app's view
 * `app` (null when nothing is known yet) at `nowMs` (default `Date.now()`),
 * as `onair host` keeps it for many bots: the later reset wins with its
 * count, the same reset keeps the lower count, blocks merge by scope (the
 * later end wins), what has passed is dropped. Throws `OnairError`
 * (`invalid_argument`) for an object that is not a daily quota.
 */
export function mergeDailyQuota(app: DailyQuota | null, learned: DailyQuota, nowMs?: number): DailyQuota;

/** Splits text into chat messages the service takes, at grapheme boundaries. */
export function splitChat(text: string): string[];
/** Truncates text to `limit` UTF-16 units (default 200) at a grapheme boundary, adding `ellipsis`. */
export function truncateChat(text: string, limit?: number, ellipsis?: string): string;
/** The length of `text` in UTF-16 units, as the service counts chat (`text.length`, from the core). */
export function utf16Len(text: string): number;
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
  readonly kind: 'chat_too_long' | 'chat_empty' | 'unknown_reply_kind';
}
/**
 * An option missing or of the wrong type (`missing_option`, `invalid_option`;
 * `key` names it, e.g. `baseUrl`), a consent from `authorize` without its
 * code or redirect URI (`invalid_consent`), a bad base URL or bad
 * credentials; a kit configuration refused (`kind` `kit`, `key` names where,
 * e.g. `commands[0].allowed`).
 */
export class ConfigError extends OnairError {
  readonly kind: 'missing_option' | 'invalid_option' | 'invalid_consent' | 'invalid_base_url' | 'invalid_credentials' | 'kit';
  readonly key?: string;
}
/** Stored tokens that could not be read (`unreadable`: the store failed) or are not a token pair. */
export class TokensError extends OnairError {
  readonly kind: 'json' | 'unknown_format' | 'unsupported_version' | 'invalid' | 'unreadable';
}
/** Stored kit state (`kitState`) that could not be read, or is of a newer version. */
export class StateError extends OnairError {}
export class RequestError extends OnairError {}
export class ResponseError extends OnairError {
  readonly kind: 'invalid_json' | 'invalid_body' | 'unsupported_token_type';
}
export class TimerError extends OnairError {
  readonly kind: 'too_many' | 'bad_tag' | 'zero_period' | 'timer';
}
