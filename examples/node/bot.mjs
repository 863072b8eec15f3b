// The reference bot in Node over onair: greets first joins once, welcomes
// rejoiners back, answers !hello, thanks donors with their running total,
// prints a summary when a broadcast ends. Built-in fetch with streaming
// bodies; the onair Bot keeps every rule (tokens, the one-refresh rule,
// quota, backoff, reconnects) and every deadline.
//
// Environment: ONAIR_BASE_URL, ONAIR_CLIENT_ID, ONAIR_CLIENT_SECRET, and
// either ONAIR_TOKENS_FILE holding saved tokens or ONAIR_CODE +
// ONAIR_REDIRECT_URI from the DJ's consent. Optional ONAIR_TALLY_OUT: on
// SIGTERM/SIGINT the bot shuts down (no revoke) and writes
// {"broadcasts":[tally, …]} there (a fresh tally at start and after every
// LIVE_ENDED).
import { readFileSync, writeFileSync } from 'node:fs';
import { Audience, Bot, CallError, Commands, Milestones, Tally, fetchArgs, splitChat } from 'onair';

const env = process.env;
/** @param {string} name */
function required(name) {
  const value = env[name];
  if (!value) {
    console.error(`${name} is required`);
    process.exit(2);
  }
  return value;
}

/** @returns {string | null} */
function savedTokens() {
  if (!env.ONAIR_TOKENS_FILE) return null;
  try {
    return readFileSync(env.ONAIR_TOKENS_FILE, 'utf8');
  } catch {
    return null;
  }
}

const bot = new Bot({
  baseUrl: required('ONAIR_BASE_URL'),
  clientId: required('ONAIR_CLIENT_ID'),
  clientSecret: required('ONAIR_CLIENT_SECRET'),
  tokens: savedTokens(),
});
const audience = new Audience();
const milestones = new Milestones();
const commands = new Commands().add('hello');
/** One tally per broadcast: a fresh one at start and after every LIVE_ENDED. */
const tallies = [new Tally()];
let authorized = false;

const log = (/** @type {string} */ line) => console.log(`[bot] ${line}`);
/** @param {{ nickname: string | null }} user */
const nameOf = (user) => user.nickname ?? 'friend';

/** Chat messages queued, and refused locally (the queue is full in a busy broadcast: the chat limit paces it). */
const chats = { queued: 0, refused: 0 };

/** Queues a chat reply, split so every part fits; a refusal is counted, never lost silently. @param {string} text */
function say(text) {
  for (const part of splitChat(text)) {
    try {
      bot.sendChat(part);
      chats.queued++;
    } catch (e) {
      if (!(e instanceof CallError)) throw e;
      log(`chat not sent (${e.kind}): ${e.message}`);
    }
  }
}

/** @param {import('onair').OnairEvent} ev */
function onEvent(ev) {
  tallies[tallies.length - 1].record(ev);
  const greeting = audience.onEvent(ev);
  if (greeting) {
    const name = nameOf(greeting.presence.user);
    say(greeting.greeting === 'first' ? `Welcome, ${name}!` : `Welcome back, ${name}!`);
  }
  milestones.onEvent(ev);
  switch (ev.event) {
    case 'chat': {
      const command = commands.match(ev, audience);
      if (command && command.ok && command.name === 'hello') say(`Hello, ${nameOf(command.user)}!`);
      break;
    }
    case 'donation': {
      const total = milestones.donatedBy(ev.data.user.id);
      say(`Thank you for the ${ev.data.amount}, ${nameOf(ev.data.user)}! ${total} from you today.`);
      break;
    }
    case 'end':
      log(`stream end: ${ev.data.reason}`);
      if (ev.data.reason === 'LIVE_ENDED') {
        const t = tallies[tallies.length - 1].toJSON();
        const donors = Object.values(t.people).filter((p) => p.donations > 0).length;
        log(`summary: ${t.attendance} joined, ${t.hearts} hearts, ${t.donated} donated by ${donors} people; chat: ${chats.queued} queued, ${chats.refused} refused`);
        tallies.push(new Tally());
      }
      break;
    case 'presence':
    case 'like':
      break;
  }
}

// ---- I/O: fetch, streams, and waking the loop ------------------------------

/** @type {(() => void) | null} */
let wake = null;
function notify() {
  if (wake) wake();
}
/** Sleeps until `untilMs`, or until a report arrives. @param {number | null} untilMs */
function sleep(untilMs) {
  return new Promise((resolve) => {
    /** @type {NodeJS.Timeout | undefined} */
    let timer;
    wake = () => {
      clearTimeout(timer);
      wake = null;
      resolve(undefined);
    };
    if (untilMs !== null) timer = setTimeout(wake, Math.max(0, untilMs - Date.now()));
  });
}

/** Runs a report on the bot; a report it refuses is a bug worth a line. @param {() => void} report */
function report(report) {
  try {
    report();
  } catch (e) {
    log(`report refused: ${e instanceof Error ? e.message : e}`);
  }
  notify();
}

/** @param {number} id @param {import('onair').OnairRequest} request */
async function send(id, request) {
  try {
    // No client timeout: the bot keeps the deadline (timeoutMs) itself.
    const res = await fetch(...fetchArgs(request));
    const body = new Uint8Array(await res.arrayBuffer());
    report(() => bot.onResponse(id, res.status, res.headers, body, Date.now()));
  } catch {
    report(() => bot.onTransportError(id, Date.now()));
  }
}

/** @type {Map<number, AbortController>} */
const streams = new Map();

/** @param {number} id @param {import('onair').OnairRequest} request */
async function openStream(id, request) {
  const controller = new AbortController();
  streams.set(id, controller);
  try {
    // No whole-body timeout: the bot's connect timeout and heartbeat watchdog cover it.
    const res = await fetch(...fetchArgs(request, { signal: controller.signal }));
    report(() => bot.onStreamOpen(id, res.status, res.headers, Date.now()));
    const reader = res.body?.getReader();
    for (;;) {
      if (!reader) break;
      const { done, value } = await reader.read();
      if (done) break;
      report(() => bot.onStreamBytes(id, value, Date.now()));
    }
  } catch {
    // Aborted by us, or the network failed: either way the connection ended.
  }
  streams.delete(id);
  report(() => bot.onStreamClosed(id, Date.now()));
}

let stopping = false;
function stop() {
  if (stopping) return;
  stopping = true;
  log('shutting down');
  bot.shutdown({ revoke: false });
  notify();
}
process.on('SIGTERM', stop);
process.on('SIGINT', stop);

function finish() {
  for (const controller of streams.values()) controller.abort();
  if (env.ONAIR_TALLY_OUT) {
    writeFileSync(env.ONAIR_TALLY_OUT, JSON.stringify({ broadcasts: tallies.map((t) => t.toJSON()) }));
  }
}

// ---- the driver loop ---------------------------------------------------------

for (;;) {
  const action = bot.poll(Date.now());
  switch (action.type) {
    case 'send':
      void send(action.id, action.request);
      break;
    case 'openStream':
      void openStream(action.id, action.request);
      break;
    case 'closeStream':
    case 'timedOut':
      streams.get(action.id)?.abort();
      break;
    case 'event':
      onEvent(action);
      break;
    case 'notice':
      if (action.notice.kind !== 'unknownEvent') log(`notice: ${JSON.stringify(action.notice)}`);
      break;
    case 'done': {
      const result = action.result;
      if (result.kind !== 'failed' || result.failure === 'cancelled') break;
      if (result.failure === 'queue_full' && chats.refused++ > 0) break;
      // e.g. chat after the broadcast ended: not_on_air.
      log(`call ${action.call} failed: ${result.failure === 'problem' ? result.problem.kind : result.failure}`);
      break;
    }
    case 'persistTokens':
      if (env.ONAIR_TOKENS_FILE) writeFileSync(env.ONAIR_TOKENS_FILE, action.tokens, { mode: 0o600 });
      break;
    case 'needsAuthorization':
      if (authorized || !env.ONAIR_CODE) {
        console.error('the bot needs a consent code from the DJ (ONAIR_CODE)');
        finish();
        process.exit(1);
      }
      authorized = true;
      bot.authorize(env.ONAIR_CODE, required('ONAIR_REDIRECT_URI'));
      break;
    case 'stopped':
      finish();
      if (action.stop.code === 'shut_down') {
        log(`bye (chat: ${chats.queued} queued, ${chats.refused} refused)`);
        process.exit(0);
      }
      console.error(`stopped (${action.stop.code}): ${action.stop.message}`);
      process.exit(1);
      break;
    case 'timer':
      break;
    case 'wait':
      await sleep(action.untilMs);
      break;
  }
}
