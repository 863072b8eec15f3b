'use strict';
// onair for Node: a thin JS layer over the WebAssembly build of the onair
// core (gen/, made by wasm-pack). Every rule of the service lives in the
// core; this file only converts arguments, parses the core's JSON wire form
// (the `onair decode` lines, the bot's actions) and turns errors into Error
// subclasses. Types: index.d.ts.
//
// Two modules (wasm/src/lib.rs), each loaded the first time something of it
// is used: the decoder (`Decoder`, built for speed) and the bot module (the
// rest of the API, built for size). A program that only decodes never loads
// the bot module; a bot that never makes a `Decoder` never loads the decoder.

let decoderModule;
let botModule;
/** The decoder module (gen/onair_decoder_bg.wasm), loaded on first use. */
const dec = () => (decoderModule ??= require('./gen/onair_decoder.js'));
/** The bot module (gen/onair_bot_bg.wasm), loaded on first use. */
const wasm = () => (botModule ??= require('./gen/onair_bot.js'));

const encoder = new TextEncoder();
// ignoreBOM: a text that starts with U+FEFF keeps it (the tape's offsets count it).
const utf8 = new TextDecoder('utf-8', { ignoreBOM: true });
/** The decoder module's WebAssembly.Memory (its buffer changes when it grows). */
let decoderMemory;
const hasDispose = typeof Symbol.dispose === 'symbol';

// ---- errors ------------------------------------------------------------------

/** Base class of every error onair throws; `kind` is a stable code. */
class OnairError extends Error {
  constructor(kind, message) {
    super(message);
    this.name = 'OnairError';
    this.kind = kind;
  }
}
/** A call the machine's contract does not allow (nothing changed). */
class MisuseError extends OnairError {
  constructor(kind, message) {
    super(kind, message);
    this.name = 'MisuseError';
  }
}
/** An app call refused at once (chat too long or empty, queue full, stopped). */
class CallError extends OnairError {
  constructor(kind, message) {
    super(kind, message);
    this.name = 'CallError';
  }
}
/** A bad base URL or bad client credentials. */
class ConfigError extends OnairError {
  constructor(kind, message) {
    super(kind, message);
    this.name = 'ConfigError';
  }
}
/** Stored tokens that could not be loaded. */
class TokensError extends OnairError {
  constructor(kind, message) {
    super(kind, message);
    this.name = 'TokensError';
  }
}
/** A timer that cannot be set (too many, a bad tag, a zero period). */
class TimerError extends OnairError {
  constructor(kind, message) {
    super(kind, message);
    this.name = 'TimerError';
  }
}
/** A request that cannot be built (an empty token, a bad chat message, an empty cursor). */
class RequestError extends OnairError {
  constructor(kind, message) {
    super(kind, message);
    this.name = 'RequestError';
  }
}
/** A 2xx body that did not decode. */
class ResponseError extends OnairError {
  constructor(kind, message) {
    super(kind, message);
    this.name = 'ResponseError';
  }
}
/** Stored kit state (audience, milestones) that could not be loaded. */
class StateError extends OnairError {
  constructor(kind, message) {
    super(kind, message);
    this.name = 'StateError';
  }
}

const errorClasses = { OnairError, MisuseError, CallError, ConfigError, TokensError, StateError, TimerError, RequestError, ResponseError };

/** The core throws `["name","kind","message"]` as a string; make it an Error. */
function toError(e) {
  if (typeof e === 'string' && e.charCodeAt(0) === 91 /* [ */) {
    let parsed;
    try {
      parsed = JSON.parse(e);
    } catch {
      return new OnairError('unknown', e);
    }
    const [name, kind, message] = parsed;
    const Class = errorClasses[name] || OnairError;
    return new Class(kind, message);
  }
  return e;
}

function guard(f) {
  try {
    return f();
  } catch (e) {
    throw toError(e);
  }
}

// ---- argument conversion -----------------------------------------------------

/** Headers as `[name, value, name, value, …]` for the core. */
function flatHeaders(headers) {
  const out = [];
  if (headers == null) return out;
  if (typeof headers[Symbol.iterator] === 'function') {
    for (const [name, value] of headers) out.push(String(name), String(value));
    return out;
  }
  for (const name of Object.keys(headers)) {
    const value = headers[name];
    if (value == null) continue;
    if (Array.isArray(value)) for (const v of value) out.push(name, String(v));
    else out.push(name, String(value));
  }
  return out;
}

/** A body as bytes. */
function bytes(body) {
  if (body == null) return new Uint8Array(0);
  if (typeof body === 'string') return encoder.encode(body);
  if (body instanceof Uint8Array) return body;
  if (body instanceof ArrayBuffer) return new Uint8Array(body);
  if (ArrayBuffer.isView(body)) return new Uint8Array(body.buffer, body.byteOffset, body.byteLength);
  throw new TypeError('body must be a Uint8Array, an ArrayBuffer or a string');
}

function now(nowMs) {
  return nowMs === undefined ? Date.now() : nowMs;
}

/** An event object's `event` and `data` (JSON text) for the kit. */
function eventParts(ev) {
  if (ev == null || typeof ev.event !== 'string') {
    throw new TypeError('expected an event object ({type: "event", event, data})');
  }
  return [ev.event, JSON.stringify(ev.data)];
}

function addDispose(Class) {
  if (hasDispose) {
    Object.defineProperty(Class.prototype, Symbol.dispose, {
      value() {
        this.free();
      },
      configurable: true,
      writable: true,
    });
  }
}

// ---- decoder -----------------------------------------------------------------

/**
 * Builds the items of one `push` from the core's tape (see wasm/src/tape.rs):
 * the same objects `JSON.parse` makes of the `onair decode` lines, built
 * directly (the JSON path, `_pushJson`, is the tests' oracle).
 */
function buildItems(n, t) {
  const out = [];
  let i = 0;
  const str = () => {
    const a = n[i];
    const b = n[i + 1];
    i += 2;
    return t.slice(a, b);
  };
  const optStr = () => (n[i + 1] === -1 ? ((i += 2), null) : str());
  const optNum = () => {
    const v = n[i] === 1 ? n[i + 1] : null;
    i += 2;
    return v;
  };
  const user = () => ({ id: str(), nickname: optStr() });
  while (i < n.length) {
    switch (n[i++]) {
      case 0: {
        const id = optStr();
        out.push({
          type: 'event',
          event: 'chat',
          id,
          data: { user: user(), isDj: n[i++] === 1, message: str(), sentTime: str() },
        });
        break;
      }
      case 1: {
        const id = optStr();
        out.push({
          type: 'event',
          event: 'presence',
          id,
          data: {
            user: user(),
            type: str(),
            fanRank: optNum(),
            isManager: n[i++] === 1,
            favoriteTemperature: optNum(),
            time: str(),
          },
        });
        break;
      }
      case 2: {
        const id = optStr();
        out.push({
          type: 'event',
          event: 'like',
          id,
          data: {
            user: user(),
            type: str(),
            totalAmount: n[i++],
            amount: n[i++],
            extraAmount: n[i++],
            combo: optNum(),
            time: str(),
          },
        });
        break;
      }
      case 3: {
        const id = optStr();
        out.push({
          type: 'event',
          event: 'donation',
          id,
          data: { user: user(), amount: n[i++], message: optStr(), time: str() },
        });
        break;
      }
      case 4: {
        const id = optStr();
        out.push({ type: 'event', event: 'end', id, data: { reason: str() } });
        break;
      }
      case 5:
        out.push({ type: 'unknown', event: str(), id: optStr(), data: str() });
        break;
      case 6:
        out.push({ type: 'heartbeat' });
        break;
      case 7:
        out.push({ type: 'comment', text: str() });
        break;
      case 8:
        out.push({ type: 'retry', ms: n[i++] });
        break;
      case 9:
        out.push({ type: 'error', error: str(), event: optStr(), id: optStr(), raw: str(), message: str() });
        break;
      default:
        throw new Error('onair: corrupt item tape');
    }
  }
  return out;
}

/** SSE framing plus typed decoding: bytes in, items out. */
class Decoder {
  #inner;
  #head;
  #maxFrameBytes;
  #json = null;
  constructor(options = {}) {
    this.#maxFrameBytes = options.maxFrameBytes;
    this.#inner = new (dec().Decoder)(options.maxFrameBytes);
    this.#head = this.#inner.head;
  }
  push(chunk) {
    const inner = this.#inner;
    const n = typeof chunk === 'string' ? inner.pushText(chunk) : inner.push(bytes(chunk));
    return n === 0 ? [] : this.#items();
  }
  /** The items of the tape the last call left in wasm memory (read in place, before any other call). */
  #items() {
    const buf = (decoderMemory ??= dec().wasmMemory()).buffer;
    const head = new Uint32Array(buf, this.#head, 4);
    const nums = new Float64Array(buf, head[0], head[1]);
    return buildItems(nums, utf8.decode(new Uint8Array(buf, head[2], head[3])));
  }
  /**
   * The same items through the core's JSON serializer, in the bot module (the
   * oracle of the tests): a second decoder, fed only by this method.
   */
  _pushJson(chunk) {
    this.#json ??= new (wasm().JsonDecoder)(this.#maxFrameBytes);
    return JSON.parse(this.#json.push(typeof chunk === 'string' ? encoder.encode(chunk) : bytes(chunk)));
  }
  finish() {
    return this.#inner.finish() === 0 ? [] : this.#items();
  }
  free() {
    const inner = this.#inner;
    if (inner === null) return;
    this.#inner = null;
    inner.free();
    if (this.#json !== null) this.#json.free();
    this.#json = null;
  }
}
addDispose(Decoder);

// ---- classification ----------------------------------------------------------

function classify(endpoint, status, headers, body, nowMs) {
  return JSON.parse(
    guard(() => wasm().classify(endpoint, status, flatHeaders(headers), bytes(body), nowMs ?? undefined)),
  );
}

// ---- the bot -----------------------------------------------------------------

function randomSeed() {
  const words = new Uint32Array(2);
  globalThis.crypto.getRandomValues(words);
  return (words[0] & 0x1fffff) * 0x100000000 + words[1];
}

/** The bot machine; drive it with the loop in the README. */
class Bot {
  #inner;
  constructor(options) {
    const o = options || {};
    this.#inner = guard(
      () =>
        new (wasm().Bot)(
          o.baseUrl,
          o.clientId,
          o.clientSecret,
          o.tokens ?? undefined,
          o.seed ?? randomSeed(),
          o.events,
          o.maxAttempts,
          o.requestTimeoutMs,
          o.maxQueuedCalls,
        ),
    );
  }
  poll(nowMs) {
    return JSON.parse(this.#inner.poll(now(nowMs)));
  }
  onResponse(id, status, headers, body, nowMs) {
    guard(() => this.#inner.onResponse(id, status, flatHeaders(headers), bytes(body), now(nowMs)));
  }
  onTransportError(id, nowMs) {
    guard(() => this.#inner.onTransportError(id, now(nowMs)));
  }
  onStreamOpen(id, status, headers, nowMs) {
    guard(() => this.#inner.onStreamOpen(id, status, flatHeaders(headers), now(nowMs)));
  }
  onStreamBytes(id, chunk, nowMs) {
    guard(() => this.#inner.onStreamBytes(id, bytes(chunk), now(nowMs)));
  }
  onStreamClosed(id, nowMs) {
    guard(() => this.#inner.onStreamClosed(id, now(nowMs)));
  }
  authorize(code, redirectUri) {
    this.#inner.authorize(code, redirectUri);
  }
  sendChat(message) {
    return guard(() => this.#inner.sendChat(message));
  }
  fetchBroadcast() {
    return guard(() => this.#inner.fetchBroadcast());
  }
  listListeners() {
    return guard(() => this.#inner.listListeners());
  }
  fetchFans() {
    return guard(() => this.#inner.fetchFans());
  }
  requestReconnect(nowMs) {
    this.#inner.requestReconnect(now(nowMs));
  }
  schedule(atMs, tag) {
    guard(() => this.#inner.schedule(atMs, tag));
  }
  every(periodMs, tag, firstAtMs) {
    guard(() => this.#inner.every(periodMs, tag, firstAtMs === undefined ? Date.now() + periodMs : firstAtMs));
  }
  cancelTimer(tag) {
    return this.#inner.cancelTimer(tag);
  }
  shutdown(options = {}) {
    this.#inner.shutdown(Boolean(options.revoke));
  }
  get stop() {
    const json = this.#inner.stopJson();
    return json === undefined ? null : JSON.parse(json);
  }
  status(nowMs) {
    return JSON.parse(this.#inner.statusJson(now(nowMs)));
  }
  get pendingCalls() {
    return this.#inner.pendingCalls();
  }
  tokens() {
    return this.#inner.tokensJson() ?? null;
  }
  free() {
    const inner = this.#inner;
    if (inner === null) return;
    this.#inner = null;
    inner.free();
  }
}
addDispose(Bot);

/** `[url, init]` for `fetch` from a request of a `send` or `openStream` action. */
function fetchArgs(request, init = {}) {
  const out = { ...init, method: request.method, headers: request.headers };
  if (request.method !== 'GET' && request.method !== 'HEAD') out.body = request.body;
  return [request.url, out];
}

// ---- request builders, response decoders, backoff ---------------------------

const parseGuarded = (f) => JSON.parse(guard(f));

/** Request builders: each returns a request ready for `fetchArgs`. */
const requests = Object.freeze({
  live: (baseUrl, accessToken) => parseGuarded(() => wasm().buildRequest('live', baseUrl, accessToken)),
  listeners: (baseUrl, accessToken, cursor) =>
    parseGuarded(() => wasm().buildRequest('listeners', baseUrl, accessToken, cursor ?? undefined)),
  fans: (baseUrl, accessToken) => parseGuarded(() => wasm().buildRequest('fans', baseUrl, accessToken)),
  events: (baseUrl, accessToken) => parseGuarded(() => wasm().buildRequest('events', baseUrl, accessToken)),
  chat: (baseUrl, accessToken, message) =>
    parseGuarded(() => wasm().buildRequest('chat', baseUrl, accessToken, message)),
  issueToken: (client, code, redirectUri) =>
    parseGuarded(() =>
      wasm().buildTokenRequest('issue', client.baseUrl, client.clientId, client.clientSecret, code, redirectUri),
    ),
  refreshToken: (client, refreshToken) =>
    parseGuarded(() =>
      wasm().buildTokenRequest('refresh', client.baseUrl, client.clientId, client.clientSecret, refreshToken),
    ),
  revokeToken: (client, token) =>
    parseGuarded(() => wasm().buildTokenRequest('revoke', client.baseUrl, client.clientId, client.clientSecret, token)),
});

function decodeBroadcast(body) {
  return parseGuarded(() => wasm().decodeBody('live', bytes(body)));
}
function decodeListeners(body) {
  return parseGuarded(() => wasm().decodeBody('listeners', bytes(body)));
}
function decodeFans(body) {
  return parseGuarded(() => wasm().decodeBody('fans', bytes(body)));
}

/** Jittered exponential backoff, seeded (1 s doubling to 30 s by default). */
class Backoff {
  #inner;
  constructor(options = {}) {
    this.#inner = new (wasm().Backoff)(options.seed ?? randomSeed(), options.baseMs, options.capMs);
  }
  nextDelayMs() {
    return this.#inner.nextDelayMs();
  }
  ceilingMs(attempt) {
    return this.#inner.ceilingMs(attempt);
  }
  get attempt() {
    return this.#inner.attempt;
  }
  reset() {
    this.#inner.reset();
  }
  free() {
    const inner = this.#inner;
    if (inner === null) return;
    this.#inner = null;
    inner.free();
  }
}
addDispose(Backoff);

// ---- tally and kit -----------------------------------------------------------

class Tally {
  #inner = new (wasm().Tally)();
  startBroadcast(liveId) {
    return this.#inner.startBroadcast(liveId);
  }
  record(ev) {
    const [event, data] = eventParts(ev);
    return this.#inner.record(event, data);
  }
  toJSON() {
    return JSON.parse(this.#inner.toJson());
  }
  free() {
    const inner = this.#inner;
    if (inner === null) return;
    this.#inner = null;
    inner.free();
  }
}
addDispose(Tally);

class Audience {
  #inner;
  constructor(inner) {
    this.#inner = inner instanceof wasm().Audience ? inner : new (wasm().Audience)();
  }
  static fromJSON(json) {
    return new Audience(guard(() => wasm().Audience.fromJson(typeof json === 'string' ? json : JSON.stringify(json))));
  }
  toJSON() {
    return JSON.parse(this.#inner.toJson());
  }
  startBroadcast(liveId) {
    return this.#inner.startBroadcast(liveId);
  }
  endBroadcast() {
    this.#inner.endBroadcast();
  }
  onEvent(ev) {
    const [event, data] = eventParts(ev);
    const json = this.#inner.onEvent(event, data);
    return json === undefined ? null : JSON.parse(json);
  }
  isPresent(id) {
    return this.#inner.isPresent(id);
  }
  isManager(id) {
    return this.#inner.isManager(id);
  }
  get size() {
    return this.#inner.size;
  }
  person(id) {
    const json = this.#inner.person(id);
    return json === undefined ? null : JSON.parse(json);
  }
  people() {
    return JSON.parse(this.#inner.people());
  }
  /** @internal */
  get _inner() {
    return this.#inner;
  }
  free() {
    const inner = this.#inner;
    if (inner === null) return;
    this.#inner = null;
    inner.free();
  }
}
addDispose(Audience);

class Milestones {
  #inner;
  constructor(options = {}, inner = undefined) {
    this.#inner = inner instanceof wasm().Milestones
      ? inner
      : new (wasm().Milestones)(options.heartsEvery ?? 0, options.donationsEvery ?? 0);
  }
  static fromJSON(json, options = {}) {
    const text = typeof json === 'string' ? json : JSON.stringify(json);
    const inner = guard(() => wasm().Milestones.fromJson(text, options.heartsEvery ?? 0, options.donationsEvery ?? 0));
    return new Milestones(options, inner);
  }
  startBroadcast(liveId) {
    return this.#inner.startBroadcast(liveId);
  }
  endBroadcast() {
    this.#inner.endBroadcast();
  }
  donor(id) {
    const json = this.#inner.donor(id);
    return json === undefined ? null : JSON.parse(json);
  }
  donors() {
    return JSON.parse(this.#inner.donors());
  }
  onEvent(ev) {
    const [event, data] = eventParts(ev);
    const json = this.#inner.onEvent(event, data);
    return json === undefined ? null : JSON.parse(json);
  }
  get hearts() {
    return this.#inner.hearts;
  }
  get totalDonated() {
    return this.#inner.totalDonated;
  }
  donatedBy(id) {
    return this.#inner.donatedBy(id);
  }
  toJSON() {
    return JSON.parse(this.#inner.toJson());
  }
  free() {
    const inner = this.#inner;
    if (inner === null) return;
    this.#inner = null;
    inner.free();
  }
}
addDispose(Milestones);

let emptyAudience;

class Commands {
  #inner = new (wasm().Commands)();
  constructor(options = {}) {
    if (options.prefix !== undefined) this.#inner.prefix(options.prefix);
    if (options.ownId !== undefined) this.#inner.ownId(options.ownId);
  }
  add(name, allowed = 'anyone') {
    guard(() => this.#inner.add(name, allowed));
    return this;
  }
  match(ev, audience) {
    if (ev == null || ev.event !== 'chat') return null;
    const a = audience ? audience._inner : (emptyAudience ??= new (wasm().Audience)());
    const json = this.#inner.matchChat(JSON.stringify(ev.data), a);
    return json === undefined ? null : JSON.parse(json);
  }
  free() {
    const inner = this.#inner;
    if (inner === null) return;
    this.#inner = null;
    inner.free();
  }
}
addDispose(Commands);

/** Named one-shot and repeating app timers (a `Bot` hosts its own). */
class Timers {
  #inner = new (wasm().Timers)();
  schedule(atMs, tag, options = {}) {
    guard(() => this.#inner.set(tag, atMs, undefined, Boolean(options.whileConnected)));
  }
  every(periodMs, tag, firstAtMs, options = {}) {
    const first = firstAtMs === undefined ? Date.now() + periodMs : firstAtMs;
    guard(() => this.#inner.set(tag, first, periodMs, Boolean(options.whileConnected)));
  }
  cancel(tag) {
    return this.#inner.cancel(tag);
  }
  deadline(tag) {
    return this.#inner.deadline(tag) ?? null;
  }
  nextDeadline(connected = true) {
    return this.#inner.nextDeadline(connected) ?? null;
  }
  popDue(nowMs, connected = true) {
    return this.#inner.popDue(now(nowMs), connected) ?? null;
  }
  get size() {
    return this.#inner.size;
  }
  tags() {
    return this.#inner.tags();
  }
  free() {
    const inner = this.#inner;
    if (inner === null) return;
    this.#inner = null;
    inner.free();
  }
}
addDispose(Timers);

/** The quota headers of a response; `nowMs` turns an HTTP-date `Retry-After` into a delay. */
function parseQuota(headers, nowMs) {
  return JSON.parse(wasm().parseQuota(flatHeaders(headers), now(nowMs)));
}

function splitChat(text) {
  return wasm().splitChat(text);
}
function truncateChat(text, limit, ellipsis = '…') {
  return wasm().truncateChat(text, limit, ellipsis);
}
function splitArgs(text) {
  return wasm().splitArgs(text);
}

// One `exports.X = X` per name, so Node's ESM `import { X } from 'onair'` sees them.
exports.Decoder = Decoder;
exports.classify = classify;
exports.Bot = Bot;
exports.fetchArgs = fetchArgs;
exports.Tally = Tally;
exports.Audience = Audience;
exports.Milestones = Milestones;
exports.Commands = Commands;
exports.Timers = Timers;
exports.parseQuota = parseQuota;
exports.splitChat = splitChat;
exports.truncateChat = truncateChat;
exports.splitArgs = splitArgs;
exports.OnairError = OnairError;
exports.MisuseError = MisuseError;
exports.CallError = CallError;
exports.ConfigError = ConfigError;
exports.TokensError = TokensError;
exports.StateError = StateError;
exports.TimerError = TimerError;
exports.RequestError = RequestError;
exports.ResponseError = ResponseError;
exports.requests = requests;
exports.decodeBroadcast = decodeBroadcast;
exports.decodeListeners = decodeListeners;
exports.decodeFans = decodeFans;
exports.Backoff = Backoff;
