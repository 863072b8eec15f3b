// onair for Node: the thin JS layer over the WebAssembly build of the onair
// core (gen/, made by wasm-pack). Every rule of the service lives in the
// core; this file only converts arguments, parses the core's JSON wire form
// (the `onair decode` lines, the bot's actions: their types are generated,
// types.d.ts) and turns errors into Error subclasses. The ready-made driver
// is driver.js.
//
// Two modules (wasm/src/lib.rs), each loaded the first time something of it
// is used: the decoder (`Decoder`, built for speed) and the bot module (the
// rest of the API, built for size). A program that only decodes never loads
// the bot module; a bot that never makes a `Decoder` never loads the decoder.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
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
/** A bad base URL, bad client credentials, or a kit configuration refused (`kind` `kit`, `key` where). */
class ConfigError extends OnairError {
  constructor(kind, message, key) {
    super(kind, message);
    this.name = 'ConfigError';
    if (key !== undefined) this.key = key;
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
/** Stored kit state (`kitState`) that could not be loaded. */
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
    const [name, kind, message, key] = parsed;
    const Class = errorClasses[name] || OnairError;
    return new Class(kind, message, key);
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
    guard(() => wasm().classify(endpoint, status, headers ?? undefined, bytes(body), nowMs ?? undefined)),
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
          o.watchdogMs,
          o.kit == null ? undefined : typeof o.kit === 'string' ? o.kit : JSON.stringify(o.kit),
          o.kitState ?? undefined,
        ),
    );
  }
  poll(nowMs) {
    return JSON.parse(this.#inner.poll(now(nowMs)));
  }
  onResponse(id, status, headers, body, nowMs) {
    guard(() => this.#inner.onResponse(id, status, headers ?? undefined, bytes(body), now(nowMs)));
  }
  onTransportError(id, nowMs) {
    guard(() => this.#inner.onTransportError(id, now(nowMs)));
  }
  onStreamOpen(id, status, headers, nowMs) {
    guard(() => this.#inner.onStreamOpen(id, status, headers ?? undefined, now(nowMs)));
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
  say(text) {
    return this.#inner.say(text);
  }
  get kit() {
    const json = this.#inner.kitJson();
    return json === undefined ? null : JSON.parse(json);
  }
  kitState() {
    return this.#inner.kitState() ?? null;
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

// ---- quota headers and the kit's pure helpers -------------------------------

/** The quota headers of a response; `nowMs` turns an HTTP-date `Retry-After` into a delay. */
function parseQuota(headers, nowMs) {
  return JSON.parse(wasm().parseQuota(headers ?? undefined, now(nowMs)));
}

function splitChat(text) {
  return wasm().splitChat(text);
}
function truncateChat(text, limit, ellipsis = '…') {
  return wasm().truncateChat(text, limit, ellipsis);
}
function utf16Len(text) {
  return wasm().utf16Len(text);
}
function splitArgs(text) {
  return wasm().splitArgs(text);
}

export {
  Decoder, classify, Bot, fetchArgs, parseQuota, splitChat, truncateChat, utf16Len, splitArgs, requests,
  decodeBroadcast, decodeListeners, decodeFans, Backoff, OnairError, MisuseError, CallError, ConfigError,
  TokensError, StateError, TimerError, RequestError, ResponseError,
};
