// The ready-made driver: the loop every Node bot would otherwise write around
// the sans-IO Bot, over the built-in fetch (Node >= 20, no HTTP package).
// One request or stream per action, an AbortController per request (aborted
// when the bot closes a stream, gives up on a request, or stops), no timeout
// shorter than the bot's own (none at all: the bot keeps every deadline and
// watches the stream), tokens and the kit's state saved through stores before
// the bot acts on what follows, SIGINT/SIGTERM shutting it down cleanly (what
// the stream already delivered handed to the bot first), a run that ends with
// the `reauthorize` stop when no new consent can come, and every notice of
// level `warn` logged (console.warn, or the `logger` option).
// Types: index.d.ts.
import { closeSync, fsyncSync, openSync, readFileSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { Bot, ConfigError, OnairError, StateError, TokensError, fetchArgs } from './bot.js';

// ---- stores --------------------------------------------------------------------

/** Keeps a saved text (tokens, kit state) in memory: a restart starts over. */
export class MemoryStore {
  #value;
  constructor(value = null) {
    this.#value = value;
  }
  load() {
    return this.#value;
  }
  save(text) {
    this.#value = text;
  }
  clear() {
    this.#value = null;
  }
}

/** Keeps a saved text in a file: mode 0600, replaced atomically (write, fsync, rename). */
export class FileStore {
  constructor(path) {
    this.path = String(path);
  }
  load() {
    try {
      return readFileSync(this.path, 'utf8');
    } catch (e) {
      if (e && e.code === 'ENOENT') return null;
      throw e;
    }
  }
  save(text) {
    const tmp = `${this.path}.${process.pid}.tmp`;
    const fd = openSync(tmp, 'w', 0o600);
    try {
      writeSync(fd, text);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, this.path);
  }
  clear() {
    try {
      unlinkSync(this.path);
    } catch (e) {
      if (!e || e.code !== 'ENOENT') throw e;
    }
  }
}

/** A store over your own functions (a database, a secret manager); each may return a promise. */
export class CallbackStore {
  #load;
  #save;
  #clear;
  constructor({ load, save, clear }) {
    this.#load = load;
    this.#save = save;
    this.#clear = clear;
  }
  load() {
    return this.#load();
  }
  save(text) {
    return this.#save(text);
  }
  clear() {
    return this.#clear?.();
  }
}

/** What `authorize` returned, checked: `[code, redirectUri]`. */
function checkConsent(consent) {
  for (const key of ['code', 'redirectUri']) {
    const v = consent[key];
    if (typeof v !== 'string' || v === '') {
      const meaning = key === 'code' ? "the DJ's consent code" : "the redirect URI registered for the app, where the code was sent";
      throw new ConfigError('invalid_consent', `onair: authorize() returned a consent without ${key} (${meaning}, a string)`, key);
    }
  }
  return [consent.code, consent.redirectUri];
}

/** A store option: a path, a store (`load`/`save`), or nothing. */
function store(s, key) {
  if (s == null) return null;
  if (typeof s === 'string') {
    if (s === '') throw new ConfigError('invalid_option', `onair: option ${key} is an empty path (a file path, a store, or leave it out)`, key);
    return new FileStore(s);
  }
  if (typeof s === 'object' && typeof s.load === 'function' && typeof s.save === 'function') return s;
  throw new ConfigError('invalid_option', `onair: option ${key} must be a file path or a store with load() and save()`, key);
}
const isPromise = (v) => v != null && typeof v.then === 'function';
/** Where a store keeps its text, for messages. */
const where = (s, what) => (s instanceof FileStore ? `the ${what} file ${s.path}` : `the ${what} from the store`);

/**
 * Errors of a fetch that never sent the request (the connection was never
 * made: refused, no such host, DNS down, connect timeout, TLS handshake):
 * the bot is told "not sent" (a consent code is not spent on it).
 */
const NOT_SENT = new Set([
  'ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EAI_NONAME', 'EAI_FAIL', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL',
  'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_SOCKET_CONNECT_TIMEOUT', 'ETIMEDOUT',
  'EPROTO', 'ERR_SSL_WRONG_VERSION_NUMBER', 'ERR_TLS_CERT_ALTNAME_INVALID', 'CERT_HAS_EXPIRED', 'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN', 'UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY', 'ERR_TLS_HANDSHAKE_TIMEOUT',
]);
/** Whether a fetch error says the request never left this machine. */
function notSent(error) {
  const cause = error?.cause ?? error;
  if (cause == null) return false;
  if (typeof cause.code === 'string' && NOT_SENT.has(cause.code)) return true;
  if (typeof cause.code === 'string' && cause.code.startsWith('ERR_SSL_')) return true;
  // fetch refuses some ports outright (the Fetch standard's "bad port" list): never sent.
  if (cause instanceof Error && cause.message === 'bad port') return true;
  // Several addresses tried (happy eyeballs): not sent when none connected.
  return Array.isArray(cause.errors) && cause.errors.length > 0 && cause.errors.every((e) => NOT_SENT.has(e?.code));
}

// ---- the driver ----------------------------------------------------------------

/** setTimeout's largest delay. */
const MAX_DELAY_MS = 0x7fffffff;
/** The longest a stop waits for what the stream already delivered (turns of the event loop, no timer). */
const DRAIN_TURNS = 200;
const turn = () => new Promise((resolve) => setImmediate(resolve));

/**
 * A Bot driven over fetch. Iterate it (`for await (const action of driver)`)
 * or register handlers (`on`, `command`) and `run()` it.
 */
export class Driver {
  #bot = null;
  #ready = null;
  #botOptions;
  #tokens;
  #state;
  #fetch;
  #now;
  #authorize;
  #signals;
  #waitForConsent;
  #logger;
  /** Requests and streams in flight: id -> { controller, stream, received }. */
  #inflight = new Map();
  /** The `reauthorize` stop the run ends with (kept through a shutdown). */
  #consentStop = null;
  /** driver.authorize was called while the author had a consent action. */
  #authorized = false;
  #shutting = null;
  #signalled = false;
  #wake = null;
  #timer = null;
  #pending = false;
  #said = false;
  #running = false;
  #finished = false;
  #failure = null;
  #revoke = false;
  /** The run's last stop was handed out already (a consent stop nothing will lift). */
  #stopTold = false;
  #handlers = new Map();
  #commands = new Map();

  constructor(options) {
    if (options === null || typeof options !== 'object') {
      throw new ConfigError('invalid_option', 'onair: the Driver options must be an object ({ baseUrl, clientId, clientSecret, … })');
    }
    const { tokens, state, fetch, now, authorize, signals, waitForConsent, logger, ...botOptions } = options;
    const fn = (v, key) => {
      if (v != null && typeof v !== 'function') throw new ConfigError('invalid_option', `onair: option ${key} must be a function`, key);
      return v ?? null;
    };
    const flag = (v, key) => {
      if (v != null && typeof v !== 'boolean') throw new ConfigError('invalid_option', `onair: option ${key} must be true or false`, key);
      return v;
    };
    if (logger != null && typeof logger.warn !== 'function') {
      throw new ConfigError('invalid_option', 'onair: option logger must have a warn(message) method (console, a pino or winston logger), or be null', 'logger');
    }
    this.#botOptions = botOptions;
    this.#tokens = store(tokens, 'tokens') ?? new MemoryStore();
    this.#state = store(state, 'state');
    this.#fetch = fn(fetch, 'fetch') ?? globalThis.fetch;
    this.#now = fn(now, 'now') ?? Date.now;
    this.#authorize = fn(authorize, 'authorize');
    this.#signals = flag(signals, 'signals') ?? true;
    this.#waitForConsent = flag(waitForConsent, 'waitForConsent') ?? false;
    this.#logger = logger === undefined ? console : logger;
    const saved = this.#load(this.#tokens, 'token', TokensError);
    const kitState = this.#state ? this.#load(this.#state, 'kit state', StateError) : null;
    if (isPromise(saved) || isPromise(kitState)) {
      this.#ready = Promise.all([saved, kitState]).then(([t, s]) => this.#make(t, s));
    } else {
      this.#make(saved, kitState);
    }
  }

  /** A store's text; a store that cannot be read is an error naming it. */
  #load(s, what, ErrorClass) {
    const fail = (e) => {
      const why = e && e.code === 'EACCES' ? 'permission denied' : e && e.code === 'EISDIR' ? 'it is a directory' : String(e?.message ?? e);
      throw new ErrorClass('unreadable', `onair: cannot read ${where(s, what)}: ${why}`);
    };
    let text;
    try {
      text = s.load();
    } catch (e) {
      fail(e);
    }
    return isPromise(text) ? text.catch(fail) : text;
  }

  #make(tokens, kitState) {
    try {
      this.#bot = new Bot({ ...this.#botOptions, tokens: tokens ?? null, kitState: kitState ?? undefined });
    } catch (e) {
      // What is wrong with a saved text, which one, and what to do.
      if (e instanceof TokensError) {
        throw new TokensError(e.kind, `onair: ${where(this.#tokens, 'token')} does not hold a token pair this bot saved (${e.message}): ` +
          'delete it and start the bot with a new consent code from the DJ, or put back the file the bot wrote');
      }
      if (e instanceof StateError) {
        throw new StateError(e.kind, `onair: ${where(this.#state, 'kit state')} does not hold a kit state this bot saved (${e.message}): ` +
          "delete it (the kit's memory of the current broadcast starts over: greetings and tallies) or put back the file the bot wrote");
      }
      throw e;
    }
  }

  /** The Bot, for its getters (`status`, `kit`, `stop`, …); once the stores have loaded. */
  get bot() {
    if (this.#bot === null) throw new Error('onair: the driver is still loading its stores (await driver.ready)');
    return this.#bot;
  }
  /** Resolves once the stores have loaded (at once for file and memory stores). */
  get ready() {
    return this.#ready ?? Promise.resolve();
  }
  /** The configured kit's current broadcast (`liveId`, `tally`), or null without a kit. */
  get kit() {
    return this.bot.kit;
  }
  /**
   * Why the run ended (what `run()` resolves with), or null while it goes on:
   * a `reauthorize` stop stays the answer through a later shutdown.
   */
  get stop() {
    return this.#consentStop ?? this.#bot?.stop ?? null;
  }

  // App commands: each wakes the loop, so what they queue goes out at once.
  say(text) {
    return this.#poke(this.bot.say(text));
  }
  /** A reply of `kind` naming `user`: merged with others of its kind when the chat limit holds them back. */
  reply(kind, user, text) {
    this.#poke(this.bot.reply(kind, user, text));
  }
  sendChat(message) {
    return this.#poke(this.bot.sendChat(message));
  }
  fetchBroadcast() {
    return this.#poke(this.bot.fetchBroadcast());
  }
  listListeners() {
    return this.#poke(this.bot.listListeners());
  }
  fetchFans() {
    return this.#poke(this.bot.fetchFans());
  }
  schedule(atMs, tag) {
    this.#poke(this.bot.schedule(atMs, tag));
  }
  every(periodMs, tag, firstAtMs, options) {
    this.#poke(this.bot.every(periodMs, tag, firstAtMs ?? this.#now() + periodMs, options));
  }
  cancelTimer(tag) {
    return this.#poke(this.bot.cancelTimer(tag));
  }
  requestReconnect() {
    this.#poke(this.bot.requestReconnect(this.#now()));
  }
  authorize(code, redirectUri) {
    this.#authorized = true;
    this.#consentStop = null; // a new code: the stop no longer stands
    this.#poke(this.bot.authorize(code, redirectUri));
  }
  /**
   * Stops the bot: what the stream already delivered is handed to it first
   * (nothing received is lost), then streams are closed, calls cancelled,
   * state saved; with `revoke` the tokens are revoked and the store cleared.
   * Resolves once the bot has been told (the run ends soon after).
   */
  shutdown(options = {}) {
    this.#revoke ||= Boolean(options?.revoke);
    const bot = this.bot;
    if (this.#shutting === null) {
      const stop = () => {
        bot.shutdown({ revoke: this.#revoke });
        this.#notify();
      };
      const streaming = [...this.#inflight.values()].some((e) => e.stream);
      // With no stream open there is nothing to drain: the bot stops at once.
      this.#shutting = streaming ? this.#drain().then(stop) : Promise.resolve(stop());
    } else if (this.#revoke) {
      this.#shutting = this.#shutting.then(() => this.#poke(bot.shutdown({ revoke: true })));
    }
    return this.#shutting;
  }

  /**
   * Before a stop: lets every open stream hand the bot what is already here —
   * the chunks its body holds and what the socket has received — in turns of
   * the event loop (no timer), until a turn brings nothing more.
   */
  async #drain() {
    const received = () => {
      let n = 0;
      for (const entry of this.#inflight.values()) if (entry.stream) n += entry.received;
      return n;
    };
    for (let i = 0, quiet = 0; i < DRAIN_TURNS && quiet < 2; i++) {
      if (![...this.#inflight.values()].some((e) => e.stream)) break;
      const before = received();
      await turn();
      quiet = received() === before ? quiet + 1 : 0;
    }
  }

  /** Logs a notice of level warn (and info, to a logger given). */
  #log(notice) {
    const logger = this.#logger;
    if (logger == null || typeof notice?.message !== 'string') return;
    if (notice.level === 'warn') logger.warn(`onair: ${notice.message}`);
    else if (logger !== console && typeof logger.info === 'function') logger.info(`onair: ${notice.message}`);
  }

  #poke(value) {
    this.#notify();
    return value;
  }

  /** `handler(action, driver)` for every action of `type`, or every event named so (`chat`, `donation`, …, `event` for all). */
  on(name, handler) {
    const list = this.#handlers.get(name) ?? [];
    list.push(handler);
    this.#handlers.set(name, list);
    return this;
  }
  /** `handler(command, driver)` for the configured command `name`. */
  command(name, handler) {
    this.#commands.set(name, handler);
    return this;
  }

  /**
   * Drives the bot, calling the handlers (each awaited, in order), until it
   * stops; the stop. A string a handler returns is said: as the reply the
   * action's `replyKind` names (the core says which), naming its person,
   * else with `say`.
   */
  async run() {
    for await (const action of this) {
      if (action.type === 'command') this.#answer(action, await this.#commands.get(action.name)?.(action, this));
      if (action.type === 'event') for (const h of this.#handlers.get('event') ?? []) this.#answer(action, await h(action, this));
      const key = action.type === 'event' ? action.event : action.type;
      for (const h of this.#handlers.get(key) ?? []) this.#answer(action, await h(action, this));
    }
    return this.stop;
  }

  /**
   * A handler's returned text: the reply the action's `replyKind` names,
   * naming the action's person (an event's is in its `data`), so it joins
   * the merging of its kind; `say` for an action without one; not a string:
   * nothing. A text that is not one chat message is said in parts (`say`).
   */
  #answer(action, text) {
    if (typeof text !== 'string') return;
    const user = action.type === 'event' ? action.data?.user : action.user;
    if (action.replyKind && user) {
      try {
        this.reply(action.replyKind, user, text);
        return;
      } catch (e) {
        if (!(e instanceof OnairError) || (e.kind !== 'chat_too_long' && e.kind !== 'chat_empty')) throw e;
      }
    }
    this.say(text);
  }

  /** The actions for the author, until the bot stops for good; the plumbing (send, streams, wait) is done here. */
  async *[Symbol.asyncIterator]() {
    await this.ready;
    if (this.#running) throw new Error('onair: this driver is already running');
    if (this.#finished) return;
    this.#running = true;
    // The first signal stops the bot cleanly; a second one exits at once.
    const onSignal = (signal) => {
      if (this.#signalled) process.exit(signal === 'SIGTERM' ? 143 : 130);
      this.#signalled = true;
      this.shutdown();
    };
    if (this.#signals) {
      process.on('SIGINT', onSignal);
      process.on('SIGTERM', onSignal);
    }
    try {
      while (!this.#finished) {
        if (this.#failure) throw this.#failure;
        const action = this.#bot.poll(this.#now());
        const repeat = action.type === 'needsAuthorization' || (action.type === 'stopped' && action.stop.code === 'reauthorize');
        if (!repeat) this.#said = false;
        switch (action.type) {
          case 'notice':
            this.#log(action.notice);
            yield action;
            break;
          case 'send':
            this.#send(action.id, action.request);
            break;
          case 'openStream':
            this.#openStream(action.id, action.request);
            break;
          case 'closeStream':
            this.#abort(action.id);
            break;
          case 'wait':
            await this.#sleep(action.untilMs);
            break;
          case 'persistTokens':
            await this.#tokens.save(action.tokens);
            this.#consentStop = null; // a new pair: the consent came
            yield action;
            break;
          case 'persistState':
            if (this.#state) await this.#state.save(action.state);
            yield action;
            break;
          case 'needsAuthorization':
          case 'stopped': {
            if (!repeat) {
              // Stopped for good, last: the bot dropped what it no longer
              // wanted and awaited a token request (or the revocation) first.
              await this.#finish();
              // After a consent stop, a shutdown still ends the run with that stop.
              if (!this.#stopTold) yield this.#consentStop ? { type: 'stopped', stop: this.#consentStop } : action;
              break;
            }
            if (this.#said) {
              // waitForConsent: until driver.authorize (or a shutdown) moves
              // the bot; the process stays up meanwhile (Ctrl-C ends it).
              const keepAlive = setInterval(() => {}, MAX_DELAY_MS);
              await this.#sleep(null);
              clearInterval(keepAlive);
              break;
            }
            this.#said = true;
            const consent = this.#authorize ? await this.#authorize() : null;
            if (consent) {
              this.#bot.authorize(...checkConsent(consent));
              break;
            }
            this.#consentStop = this.#bot.consentStop;
            this.#authorized = false;
            yield action;
            if (this.#authorized || this.#waitForConsent || this.#shutting !== null) break;
            // Nothing will bring a new consent: the run ends with the stop
            // (said once), after the bot's drain.
            this.#bot.shutdown({ revoke: false });
            this.#stopTold = action.type === 'stopped';
            break;
          }
          default:
            yield action;
        }
      }
    } finally {
      if (this.#signals) {
        process.off('SIGINT', onSignal);
        process.off('SIGTERM', onSignal);
      }
      this.#running = false;
      this.#clearTimer();
      // Stopped, or the author left the loop: nothing may keep the process alive.
      for (const id of [...this.#inflight.keys()]) this.#abort(id);
    }
  }

  /** The bot stopped for good: the run ends (with `revoke`, the token store cleared). */
  async #finish() {
    this.#finished = true;
    if (this.#revoke) await this.#tokens.clear?.();
  }

  #sleep(untilMs) {
    if (this.#pending) {
      this.#pending = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      this.#wake = () => {
        this.#clearTimer();
        this.#wake = null;
        resolve();
      };
      if (untilMs !== null) this.#timer = setTimeout(this.#wake, Math.min(MAX_DELAY_MS, Math.max(0, untilMs - this.#now())));
    });
  }

  #clearTimer() {
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
  }

  /** Something moved the bot: wake the loop (or let its next sleep return at once). */
  #notify() {
    if (this.#wake) this.#wake();
    else this.#pending = true;
  }

  /** A report on the bot; one it refuses is a bug of this driver, thrown from the loop. */
  #report(f) {
    try {
      f();
    } catch (e) {
      this.#failure ??= e;
    }
    this.#notify();
  }

  #abort(id) {
    const entry = this.#inflight.get(id);
    if (entry === undefined) return;
    this.#inflight.delete(id);
    entry.controller.abort();
  }

  #send(id, request) {
    const controller = new AbortController();
    this.#inflight.set(id, { controller });
    (async () => {
      try {
        // No timeout of its own: the bot keeps the deadline (closeStream, reason timed_out, aborts it).
        const res = await this.#fetch(...fetchArgs(request, { signal: controller.signal }));
        const body = new Uint8Array(await res.arrayBuffer());
        this.#inflight.delete(id);
        this.#report(() => this.#bot.onResponse(id, res.status, res.headers, body, this.#now()));
      } catch (e) {
        this.#inflight.delete(id);
        this.#failed(id, e, controller);
      }
    })();
  }

  /** A fetch that failed: not sent (nothing left this machine), or no answer (outcome unknown). */
  #failed(id, error, controller) {
    if (!controller.signal.aborted && notSent(error)) this.#report(() => this.#bot.onNotSent(id, this.#now()));
    else this.#report(() => this.#bot.onTransportError(id, this.#now()));
  }

  #openStream(id, request) {
    const controller = new AbortController();
    const entry = { controller, stream: false, received: 0 };
    this.#inflight.set(id, entry);
    (async () => {
      let res;
      try {
        // No timeout at all: the bot's connect timeout and heartbeat watchdog cover it.
        res = await this.#fetch(...fetchArgs(request, { signal: controller.signal }));
      } catch (e) {
        this.#inflight.delete(id);
        this.#failed(id, e, controller);
        return;
      }
      this.#report(() => this.#bot.onStreamOpen(id, res.status, res.headers, this.#now()));
      entry.stream = true;
      try {
        // Each chunk goes to the bot as soon as it is read (a stop drains
        // what is already here first: #drain).
        if (res.body) {
          for await (const chunk of res.body) {
            entry.received += chunk.length;
            this.#report(() => this.#bot.onStreamBytes(id, chunk, this.#now()));
          }
        }
      } catch {
        // Aborted by the bot's closeStream, or the network failed: the connection ended either way.
      }
      this.#inflight.delete(id);
      this.#report(() => this.#bot.onStreamClosed(id, this.#now()));
    })();
  }
}
