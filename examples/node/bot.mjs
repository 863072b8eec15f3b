// The Node reference bot (scripts/e2e.d/README.md) on the ready-made driver
// and the configured kit: greets arrivals, answers !hello and !top, thanks
// donors, calls milestones; tokens and the kit's state in files; on SIGINT or
// SIGTERM it shuts down and writes its tally and arrivals to ONAIR_TALLY_OUT.
// A consent failure (no code, an expired or used one) ends it with exit 1.
import { appendFileSync, writeFileSync } from 'node:fs';
import { Driver } from 'onair';

const env = process.env;
const name = (/** @type {{ nickname: string | null }} */ user) => user.nickname ?? 'friend';
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
  },
  // The consent code is single use: only the first time the bot asks.
  authorize() {
    const consent = code ? { code, redirectUri: env.ONAIR_REDIRECT_URI ?? '' } : null;
    code = undefined;
    return consent;
  },
});
/** @type {{ broadcasts: object[], arrivals: object[] }} */ const out = { broadcasts: [], arrivals: [] };

driver
  .command('hello', (c) => void driver.say(`Hello, ${name(c.user)}!`))
  .command('top', () => {
    const people = Object.entries(driver.kit?.tally.people ?? {}).filter(([, p]) => p.donated > 0);
    people.sort(([, a], [, b]) => b.donated - a.donated);
    const top = people.slice(0, 10).map(([id, p], i) => `${i + 1}. ${p.nickname ?? id} ${p.donated}`);
    driver.say(top.length ? `Top donors: ${top.join(' · ')}` : 'No donations yet tonight.');
  })
  .on('arrival', (a) => {
    out.arrivals.push({ liveId: a.liveId, id: a.user.id, kind: a.kind });
    driver.say(a.kind === 'first' ? `Welcome, ${name(a.user)}! 🎧` : `Welcome back, ${name(a.user)}!`);
  })
  .on('donation', (ev) => void driver.say(`Thank you, ${name(ev.data.user)}!`))
  .on('milestone', (m) => {
    driver.say(m.kind === 'hearts' ? `${m.reached} hearts tonight! 💜` : `${name(m.user)} has given ${m.reached} tonight!`);
  })
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
