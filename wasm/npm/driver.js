// The ready-made driver: the loop every Node bot would otherwise write around
// the sans-IO Bot, over the built-in fetch (Node >= 20, no HTTP package).
// One request or stream per action, an AbortController per request (aborted
// when the bot closes a stream, gives up on a request, or stops), no timeout
// shorter than the bot's own (none at all: the bot keeps every deadline and
// watches the stream), tokens and the kit's state saved through stores before
// the bot acts on what follows, SIGINT/SIGTERM shutting it down cleanly.
// Types: index.d.ts.
import { closeSync, fsyncSync, openSync, readFileSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { Bot, fetchArgs } from './bot.js';

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

const store = (s) => (s == null ? null : typeof s === 'string' ? new FileStore(s) : s);
const isPromise = (v) => v != null && typeof v.then === 'function';

// ---- the driver ----------------------------------------------------------------

/** The longest a shutdown waits for a token request in flight (its new pair must be saved). */
const SHUTDOWN_WAIT_MS = 30_000;
/** setTimeout's largest delay. */
const MAX_DELAY_MS = 0x7fffffff;

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
  /** Requests and streams in flight: id -> { controller, endpoint }. */
  #inflight = new Map();
  #wake = null;
  #timer = null;
  #pending = false;
  #said = false;
  #running = false;
  #finished = false;
  #failure = null;
  #revoke = false;
  #handlers = new Map();
  #commands = new Map();

  constructor(options) {
    const { tokens, state, fetch, now, authorize, signals, ...botOptions } = options || {};
    this.#botOptions = botOptions;
    this.#tokens = store(tokens) ?? new MemoryStore();
    this.#state = store(state);
    this.#fetch = fetch ?? globalThis.fetch;
    this.#now = now ?? Date.now;
    this.#authorize = authorize ?? null;
    this.#signals = signals ?? true;
    const saved = this.#tokens.load();
    const kitState = this.#state ? this.#state.load() : null;
    if (isPromise(saved) || isPromise(kitState)) {
      this.#ready = Promise.all([saved, kitState]).then(([t, s]) => this.#make(t, s));
    } else {
      this.#make(saved, kitState);
    }
  }

  #make(tokens, kitState) {
    this.#bot = new Bot({ ...this.#botOptions, tokens: tokens ?? null, kitState: kitState ?? undefined });
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

  // App commands: each wakes the loop, so what they queue goes out at once.
  say(text) {
    return this.#poke(this.bot.say(text));
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
  every(periodMs, tag, firstAtMs) {
    this.#poke(this.bot.every(periodMs, tag, firstAtMs ?? this.#now() + periodMs));
  }
  cancelTimer(tag) {
    return this.#poke(this.bot.cancelTimer(tag));
  }
  requestReconnect() {
    this.#poke(this.bot.requestReconnect(this.#now()));
  }
  authorize(code, redirectUri) {
    this.#poke(this.bot.authorize(code, redirectUri));
  }
  /** Stops the bot: streams closed, calls cancelled, state saved; with `revoke` the tokens are revoked and the store cleared. */
  shutdown(options = {}) {
    this.#revoke ||= Boolean(options.revoke);
    this.#poke(this.bot.shutdown({ revoke: this.#revoke }));
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

  /** Drives the bot, calling the handlers (each awaited, in order), until it stops; the stop. */
  async run() {
    for await (const action of this) {
      if (action.type === 'command') await this.#commands.get(action.name)?.(action, this);
      if (action.type === 'event') for (const h of this.#handlers.get('event') ?? []) await h(action, this);
      const key = action.type === 'event' ? action.event : action.type;
      for (const h of this.#handlers.get(key) ?? []) await h(action, this);
    }
    return this.#bot.stop;
  }

  /** The actions for the author, until the bot stops for good; the plumbing (send, streams, wait) is done here. */
  async *[Symbol.asyncIterator]() {
    await this.ready;
    if (this.#running) throw new Error('onair: this driver is already running');
    if (this.#finished) return;
    this.#running = true;
    const onSignal = () => this.shutdown();
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
          case 'send':
            this.#send(action.id, action.request);
            break;
          case 'openStream':
            this.#openStream(action.id, action.request);
            break;
          case 'closeStream':
            this.#abort(action.id);
            break;
          case 'timedOut':
            this.#abort(action.id);
            yield action;
            break;
          case 'wait':
            await this.#sleep(action.untilMs);
            break;
          case 'persistTokens':
            await this.#tokens.save(action.tokens);
            yield action;
            break;
          case 'persistState':
            if (this.#state) await this.#state.save(action.state);
            yield action;
            break;
          case 'needsAuthorization':
          case 'stopped':
            if (repeat && this.#said) {
              await this.#sleep(null);
              break;
            }
            if (repeat) {
              this.#said = true;
              const consent = this.#authorize ? await this.#authorize() : null;
              if (consent) {
                this.#bot.authorize(consent.code, consent.redirectUri);
                break;
              }
            } else {
              await this.#finish();
            }
            yield action;
            break;
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

  /**
   * The bot stopped for good: save what it still hands out, wait (at most
   * 30 s) for a token request in flight (a new pair it brings must be saved)
   * or the revocation, abort everything else.
   */
  async #finish() {
    this.#finished = true;
    const deadline = this.#now() + SHUTDOWN_WAIT_MS;
    for (;;) {
      for (;;) {
        const action = this.#bot.poll(this.#now());
        if (action.type === 'stopped' || action.type === 'wait') break;
        if (action.type === 'send') this.#send(action.id, action.request);
        else if (action.type === 'persistTokens') await this.#tokens.save(action.tokens);
        else if (action.type === 'persistState' && this.#state) await this.#state.save(action.state);
        else if (action.type === 'closeStream' || action.type === 'timedOut') this.#abort(action.id);
      }
      for (const [id, { endpoint }] of this.#inflight) if (endpoint !== 'token' && endpoint !== 'revoke') this.#abort(id);
      if (this.#inflight.size === 0 || this.#now() >= deadline) break;
      await this.#sleep(deadline);
    }
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
    this.#inflight.set(id, { controller, endpoint: request.endpoint });
    (async () => {
      try {
        // No timeout of its own: the bot keeps the deadline (timedOut aborts it).
        const res = await this.#fetch(...fetchArgs(request, { signal: controller.signal }));
        const body = new Uint8Array(await res.arrayBuffer());
        this.#inflight.delete(id);
        this.#report(() => this.#bot.onResponse(id, res.status, res.headers, body, this.#now()));
      } catch {
        this.#inflight.delete(id);
        this.#report(() => this.#bot.onTransportError(id, this.#now()));
      }
    })();
  }

  #openStream(id, request) {
    const controller = new AbortController();
    this.#inflight.set(id, { controller, endpoint: request.endpoint });
    (async () => {
      let res;
      try {
        // No timeout at all: the bot's connect timeout and heartbeat watchdog cover it.
        res = await this.#fetch(...fetchArgs(request, { signal: controller.signal }));
      } catch {
        this.#inflight.delete(id);
        this.#report(() => this.#bot.onTransportError(id, this.#now()));
        return;
      }
      this.#report(() => this.#bot.onStreamOpen(id, res.status, res.headers, this.#now()));
      try {
        if (res.body) for await (const chunk of res.body) this.#report(() => this.#bot.onStreamBytes(id, chunk, this.#now()));
      } catch {
        // Aborted by the bot's closeStream, or the network failed: the connection ended either way.
      }
      this.#inflight.delete(id);
      this.#report(() => this.#bot.onStreamClosed(id, this.#now()));
    })();
  }
}
