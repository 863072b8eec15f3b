// The bare loop, for authors who bring their own HTTP stack: the sans-IO Bot
// driven by hand (here over fetch, as the Driver does it for you). On the
// reference bots' kit, whose configured replies the core sends itself: it
// greets arrivals, thanks donors, answers !hello and !top, calls milestones,
// merges replies of one kind when the chat limit holds them back and drops
// those no longer fresh (a `repliesDropped` notice, printed here). Every rule
// (tokens, the one-refresh rule, quota, backoff, reconnects) and every
// deadline stays in the Bot. On SIGINT/SIGTERM it shuts down and exits.
//
// Environment: ONAIR_BASE_URL, ONAIR_CLIENT_ID, ONAIR_CLIENT_SECRET,
// ONAIR_CODE and ONAIR_REDIRECT_URI (the DJ's consent).
import { Bot, fetchArgs } from 'onair';

const env = process.env;
const bot = new Bot({
  baseUrl: env.ONAIR_BASE_URL ?? '',
  clientId: env.ONAIR_CLIENT_ID ?? '',
  clientSecret: env.ONAIR_CLIENT_SECRET ?? '',
  kit: {
    commands: [{ name: 'hello' }, { name: 'top' }],
    greetings: { welcome_back_after_ms: 600000 },
    milestones: { hearts_every: 100, donations_every: 1000 },
    tally: true,
    replies: { commands: { hello: 'Hello, {nickname}!', top: 'Top donors: {top}' } },
  },
});

/** @type {(() => void) | null} */
let wake = null;
/** Runs a report on the bot, then wakes the loop. @param {() => void} report */
function report(report) {
  report();
  wake?.();
}
/** Sleeps until `untilMs` (null: until a report). @param {number | null} untilMs */
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

/** @type {Map<number, AbortController>} */
const inflight = new Map();
/** One request (or stream) per action; no timeout of its own: the bot keeps the deadlines. @param {number} id @param {import('onair').OnairRequest} request @param {boolean} stream */
async function go(id, request, stream) {
  const controller = new AbortController();
  inflight.set(id, controller);
  try {
    const res = await fetch(...fetchArgs(request, { signal: controller.signal }));
    if (!stream) {
      const body = new Uint8Array(await res.arrayBuffer());
      return report(() => bot.onResponse(id, res.status, res.headers, body));
    }
    report(() => bot.onStreamOpen(id, res.status, res.headers));
    try {
      const reader = res.body?.getReader();
      for (;;) {
        const chunk = await reader?.read();
        if (!chunk || chunk.done) break;
        report(() => bot.onStreamBytes(id, chunk.value));
      }
    } catch {
      // Aborted (closeStream) or dropped: the connection ended either way.
    }
    report(() => bot.onStreamClosed(id));
  } catch {
    report(() => bot.onTransportError(id));
  } finally {
    inflight.delete(id);
  }
}

const stop = () => report(() => bot.shutdown());
process.on('SIGINT', stop).on('SIGTERM', stop);

for (let running = true; running; ) {
  const action = bot.poll(Date.now());
  switch (action.type) {
    case 'send':
    case 'openStream':
      void go(action.id, action.request, action.type === 'openStream');
      break;
    case 'closeStream':
      inflight.get(action.id)?.abort();
      break;
    case 'notice':
      // Replies not sent in time, a service out of reach, …: one line each.
      if (action.notice.level === 'warn') console.warn(`[bare-loop] ${action.notice.message}`);
      break;
    case 'needsAuthorization':
      if (!env.ONAIR_CODE) throw new Error('the bot needs a consent code (ONAIR_CODE)');
      bot.authorize(env.ONAIR_CODE, env.ONAIR_REDIRECT_URI ?? '');
      env.ONAIR_CODE = '';
      break;
    case 'stopped':
      console.log(`[bare-loop] stopped: ${action.stop.message}`);
      for (const controller of inflight.values()) controller.abort();
      running = false;
      break;
    case 'wait':
      await sleep(action.untilMs);
      break;
    default:
      // Events, commands, arrivals (the kit's replies answer them), call results, tokens
      // (persist them to survive a restart), state, timers.
      break;
  }
}
process.off('SIGINT', stop).off('SIGTERM', stop);
