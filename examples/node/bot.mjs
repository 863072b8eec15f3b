// The Node reference bot (scripts/e2e.d/README.md) on the ready-made driver
// and the configured kit, whose replies do the talking: the core greets
// arrivals, thanks donors, answers !hello and !top and calls milestones (when
// the chat limit holds replies back, it names several people in one message,
// and drops what is no longer fresh: the driver logs that at warn). The bot
// itself posts a reminder every 30 minutes while connected, keeps tokens and
// the kit's state in files, and on SIGINT or SIGTERM shuts down and writes
// its tally and arrivals to ONAIR_TALLY_OUT. A consent failure (no code, an
// expired or used one) ends it with exit 1.
import { appendFileSync, writeFileSync } from 'node:fs';
import { Driver } from 'onair';

const env = process.env;
/** The bot's own message, every 30 minutes. */
const REMINDER = "Say !hello to say hi, or !top for tonight's top donors.";
const REMINDER_EVERY_MS = 30 * 60 * 1000;
let code = env.ONAIR_CODE;
const driver = new Driver({
  baseUrl: env.ONAIR_BASE_URL ?? '',
  clientId: env.ONAIR_CLIENT_ID ?? '',
  clientSecret: env.ONAIR_CLIENT_SECRET ?? '',
  tokens: env.ONAIR_TOKENS_FILE,
  state: env.ONAIR_STATE_FILE,
  watchdogMs: env.ONAIR_WATCHDOG_MS ? Number(env.ONAIR_WATCHDOG_MS) : undefined,
  kit: {
    commands: [{ name: 'hello' }, { name: 'top' }],
    greetings: { welcome_back_after_ms: 600000 },
    milestones: { hearts_every: 100, donations_every: 1000 },
    tally: true,
    replies: { commands: { hello: 'Hello, {nickname}!', top: 'Top donors: {top}' } },
  },
  // The consent code is single use: only the first time the bot asks.
  authorize() {
    const consent = code ? { code, redirectUri: env.ONAIR_REDIRECT_URI ?? '' } : null;
    code = undefined;
    return consent;
  },
});
/** @type {{ broadcasts: object[], arrivals: object[] }} */ const out = { broadcasts: [], arrivals: [] };

let reminding = false;

driver
  .on('arrival', (a) => void out.arrivals.push({ liveId: a.liveId, id: a.user.id, kind: a.kind }))
  .on('event', () => {
    // From the first event on, while connected: the reminder (a string a timer handler returns is said).
    if (!reminding) driver.every(REMINDER_EVERY_MS, 'announce', null, { whileConnected: true });
    reminding = true;
  })
  .on('timer', (t) => (t.tag === 'announce' ? REMINDER : undefined))
  .on('broadcastEnded', (b) => {
    out.broadcasts.push({ liveId: b.liveId, ...b.tally });
    if (env.ONAIR_ENDS_OUT) appendFileSync(env.ONAIR_ENDS_OUT, `${JSON.stringify({ liveId: b.liveId })}\n`);
  })
  .on('notice', (n) => void (n.notice.kind === 'problem' && console.log(`[bot] ${n.notice.endpoint}: ${n.notice.problem.kind}`)));

const stop = await driver.run();
if (driver.kit) out.broadcasts.push({ liveId: driver.kit.liveId, ...driver.kit.tally });
if (env.ONAIR_TALLY_OUT) writeFileSync(env.ONAIR_TALLY_OUT, JSON.stringify(out));
console.log(`[bot] stopped: ${stop?.message}`);
if (stop?.code === 'reauthorize') console.error('[bot] the DJ must approve the app again; start the bot with ONAIR_CODE set to the fresh code');
process.exitCode = stop?.code === 'shut_down' ? 0 : 1;
