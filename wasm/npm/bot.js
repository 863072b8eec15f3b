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
  return nowMs === undefined ? Date.now() : num(nowMs, 'nowMs');
}

/** What a value is, for an error (never the value itself: it may be a secret). */
function what(value) {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'number' && Number.isNaN(value)) return 'NaN';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}
/** An argument that must be a string; a TypeError naming it otherwise. */
function str(value, name) {
  if (typeof value !== 'string') throw new TypeError(`onair: ${name} must be a string, not ${value === undefined ? 'undefined' : what(value)}`);
  return value;
}
/** An argument that must be a finite number; a TypeError naming it otherwise. */
function num(value, name) {
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw new TypeError(`onair: ${name} must be a finite number, not ${value === undefined ? 'undefined' : what(value)}`);
  }
  return value;
}
const optStr = (value, name) => (value == null ? undefined : str(value, name));
const optNum = (value, name) => (value == null ? undefined : num(value, name));

/**
 * The Bot's options checked before they reach the WebAssembly glue: a
 * missing or mistyped option is a ConfigError whose `key` names it.
 */
function checkOptions(o) {
  if (o === null || typeof o !== 'object' || Array.isArray(o)) {
    throw new ConfigError('invalid_option', `onair: the options must be an object ({ baseUrl, clientId, clientSecret, … }), not ${o === undefined ? 'undefined' : what(o)}`);
  }
  const described = {
    baseUrl: "the service's base URL",
    clientId: "the app's client id",
    clientSecret: "the app's client secret",
  };
  for (const [key, meaning] of Object.entries(described)) {
    const v = o[key];
    if (v == null) throw new ConfigError('missing_option', `onair: option ${key} is missing (${meaning}, a string)`, key);
    if (typeof v !== 'string') throw new ConfigError('invalid_option', `onair: option ${key} must be a string (${meaning}), not ${what(v)}`, key);
  }
  const check = (key, ok, expected) => {
    const v = o[key];
    if (v != null && !ok(v)) throw new ConfigError('invalid_option', `onair: option ${key} must be ${expected}, not ${what(v)}`, key);
  };
  const count = (v) => typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= 0xffffffff;
  const ms = (v) => typeof v === 'number' && Number.isFinite(v) && v >= 0;
  check('tokens', (v) => typeof v === 'string', 'a string (the saved token pair)');
  check('kitState', (v) => typeof v === 'string', 'a string (the saved kit state)');
  check('kit', (v) => typeof v === 'string' || (typeof v === 'object' && !Array.isArray(v)), 'an object or its JSON text');
  check('seed', (v) => typeof v === 'number' && Number.isFinite(v), 'a finite number');
  check('events', (v) => typeof v === 'boolean', 'a boolean');
  check('checkCredentials', (v) => typeof v === 'boolean', 'a boolean');
  check('maxAttempts', count, 'a whole number');
  check('maxQueuedCalls', count, 'a whole number');
  check('requestTimeoutMs', ms, 'a number of milliseconds');
  check('watchdogMs', ms, 'a number of milliseconds');
  check('shutdownGraceMs', ms, 'a number of milliseconds');
  return o;
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
    this.#maxFrameBytes = optNum(options.maxFrameBytes, 'maxFrameBytes');
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
  str(endpoint, 'the endpoint');
  num(status, 'status');
  return JSON.parse(
    guard(() => wasm().classify(endpoint, status, headers ?? undefined, bytes(body), optNum(nowMs, 'nowMs'))),
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
    const o = checkOptions(options);
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
          o.checkCredentials ?? undefined,
          o.shutdownGraceMs,
        ),
    );
  }
  poll(nowMs) {
    return JSON.parse(this.#inner.poll(now(nowMs)));
  }
  onResponse(id, status, headers, body, nowMs) {
    guard(() => this.#inner.onResponse(num(id, 'id'), num(status, 'status'), headers ?? undefined, bytes(body), now(nowMs)));
  }
  onTransportError(id, nowMs) {
    guard(() => this.#inner.onTransportError(num(id, 'id'), now(nowMs)));
  }
  onNotSent(id, nowMs) {
    guard(() => this.#inner.onNotSent(num(id, 'id'), now(nowMs)));
  }
  onStreamOpen(id, status, headers, nowMs) {
    guard(() => this.#inner.onStreamOpen(num(id, 'id'), num(status, 'status'), headers ?? undefined, now(nowMs)));
  }
  onStreamBytes(id, chunk, nowMs) {
    guard(() => this.#inner.onStreamBytes(num(id, 'id'), bytes(chunk), now(nowMs)));
  }
  onStreamClosed(id, nowMs) {
    guard(() => this.#inner.onStreamClosed(num(id, 'id'), now(nowMs)));
  }
  authorize(code, redirectUri) {
    this.#inner.authorize(str(code, 'the consent code'), str(redirectUri, 'the redirect URI'));
  }
  sendChat(message) {
    return guard(() => this.#inner.sendChat(str(message, 'the chat message')));
  }
  say(text) {
    return this.#inner.say(str(text, 'the text to say'));
  }
  reply(kind, user, text) {
    str(kind, 'the reply kind');
    if (user === null || typeof user !== 'object' || Array.isArray(user)) {
      throw new TypeError(`onair: the user must be an object ({ id, nickname }), not ${user === undefined ? 'undefined' : what(user)}`);
    }
    const id = str(user.id, 'the user id');
    const nickname = user.nickname == null ? undefined : str(user.nickname, 'the nickname');
    guard(() => this.#inner.reply(kind, id, nickname, str(text, 'the reply text')));
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
    guard(() => this.#inner.schedule(num(atMs, 'atMs'), str(tag, 'the timer tag')));
  }
  every(periodMs, tag, firstAtMs, options = {}) {
    num(periodMs, 'periodMs');
    const first = firstAtMs == null ? Date.now() + periodMs : num(firstAtMs, 'firstAtMs');
    const whileConnected = options?.whileConnected;
    if (whileConnected != null && typeof whileConnected !== 'boolean') {
      throw new TypeError(`onair: whileConnected must be true or false, not ${what(whileConnected)}`);
    }
    guard(() => this.#inner.every(periodMs, str(tag, 'the timer tag'), first, whileConnected ?? undefined));
  }
  cancelTimer(tag) {
    return this.#inner.cancelTimer(str(tag, 'the timer tag'));
  }
  shutdown(options = {}) {
    this.#inner.shutdown(Boolean(options.revoke));
  }
  get stop() {
    const json = this.#inner.stopJson();
    return json === undefined ? null : JSON.parse(json);
  }
  /**
   * The stop a run ends with when no new consent comes: the bot's
   * `reauthorize` stop, or (no tokens yet) a `reauthorize` stop whose reason
   * is "not authorized yet"; null when the bot needs no consent.
   */
  get consentStop() {
    const json = this.#inner.consentStopJson();
    return json === undefined ? null : JSON.parse(json);
  }
  status(nowMs) {
    return JSON.parse(this.#inner.statusJson(now(nowMs)));
  }
  dailyQuota(nowMs) {
    return JSON.parse(this.#inner.dailyQuotaJson(now(nowMs)));
  }
  shareDailyQuota(quota, nowMs) {
    const json = quotaJson(quota, 'the daily quota');
    guard(() => this.#inner.shareDailyQuotaJson(json, now(nowMs)));
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

const bearer = (endpoint, baseUrl, accessToken, arg, argName) =>
  parseGuarded(() =>
    wasm().buildRequest(endpoint, str(baseUrl, 'baseUrl'), str(accessToken, 'the access token'), argName ? optStr(arg, argName) : undefined),
  );
const token = (kind, client, arg, argName, arg2, arg2Name) => {
  if (client === null || typeof client !== 'object') throw new TypeError(`onair: the client must be an object ({ baseUrl, clientId, clientSecret }), not ${what(client)}`);
  const { baseUrl, clientId, clientSecret } = checkOptions({ baseUrl: client.baseUrl, clientId: client.clientId, clientSecret: client.clientSecret });
  return parseGuarded(() =>
    wasm().buildTokenRequest(kind, baseUrl, clientId, clientSecret, str(arg, argName), arg2Name ? str(arg2, arg2Name) : undefined),
  );
};

/** Request builders: each returns a request ready for `fetchArgs`. */
const requests = Object.freeze({
  live: (baseUrl, accessToken) => bearer('live', baseUrl, accessToken),
  listeners: (baseUrl, accessToken, cursor) => bearer('listeners', baseUrl, accessToken, cursor, 'the cursor'),
  fans: (baseUrl, accessToken) => bearer('fans', baseUrl, accessToken),
  events: (baseUrl, accessToken) => bearer('events', baseUrl, accessToken),
  chat: (baseUrl, accessToken, message) => bearer('chat', baseUrl, accessToken, str(message, 'the chat message'), 'the chat message'),
  issueToken: (client, code, redirectUri) => token('issue', client, code, 'the consent code', redirectUri, 'the redirect URI'),
  refreshToken: (client, refreshToken) => token('refresh', client, refreshToken, 'the refresh token'),
  revokeToken: (client, token_) => token('revoke', client, token_, 'the token'),
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
    const seed = optNum(options.seed, 'seed') ?? randomSeed();
    this.#inner = new (wasm().Backoff)(seed, optNum(options.baseMs, 'baseMs'), optNum(options.capMs, 'capMs'));
  }
  nextDelayMs() {
    return this.#inner.nextDelayMs();
  }
  ceilingMs(attempt) {
    return this.#inner.ceilingMs(num(attempt, 'attempt'));
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
  return wasm().splitChat(str(text, 'the text'));
}
function truncateChat(text, limit, ellipsis = '…') {
  return wasm().truncateChat(str(text, 'the text'), optNum(limit, 'limit'), str(ellipsis, 'the ellipsis'));
}
/** A daily quota object as its JSON (the core reads and checks it). */
function quotaJson(quota, name) {
  if (quota === null || typeof quota !== 'object' || Array.isArray(quota)) {
    throw new TypeError(`onair: ${name} must be an object ({ remaining, resetMs, blocks }), not ${what(quota)}`);
  }
  return JSON.stringify(quota);
}
/** The core's merge of what one bot learned of the app's daily quota into the app's view (null: none yet). */
function mergeDailyQuota(app, learned, nowMs) {
  const appJson = app == null ? '' : quotaJson(app, "the app's daily quota");
  const learnedJson = quotaJson(learned, 'the learned daily quota');
  return JSON.parse(guard(() => wasm().mergeDailyQuota(appJson, learnedJson, now(nowMs))));
}
function utf16Len(text) {
  return wasm().utf16Len(str(text, 'the text'));
}
function splitArgs(text) {
  return wasm().splitArgs(str(text, 'the text'));
}

export {
  Decoder, classify, Bot, fetchArgs, parseQuota, mergeDailyQuota, splitChat, truncateChat, utf16Len, splitArgs, requests,
  decodeBroadcast, decodeListeners, decodeFans, Backoff, OnairError, MisuseError, CallError, ConfigError,
  TokensError, StateError, TimerError, RequestError, ResponseError,
};
