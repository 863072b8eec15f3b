// The ready-made driver (wasm/npm/driver.js) against the emulator on
// 127.0.0.1: consent, the configured kit's actions and replies, every end
// reason, a refresh mid-stream, a drop, 429s, the tally against the ledger,
// stores, both ways of writing a bot, and a clean end.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CallbackStore, Driver, FileStore, MemoryStore } from 'onair';
import { ledgerTotals, startEmulator, until } from './emulator.mjs';

test('handlers: kit replies, RECONNECT, TOKEN_EXPIRED (one refresh, the new pair saved), a drop, 429s, LIVE_ENDED with the ledger tally', async (t) => {
  const emu = await startEmulator(['--heartbeat-ms', '1000']);
  t.after(() => emu.close());
  const { code } = await emu.control('/consent', {});
  await emu.control('/state', { botManager: true });
  await emu.control('/live/start', { title: 'driver test' });
  const tokens = new MemoryStore();
  const state = new MemoryStore();
  /** @type {string[]} */
  const log = [];
  /** @type {import('onair').ActionOf<'broadcastEnded'> | null} */
  let ended = null;
  const driver = new Driver({
    baseUrl: emu.baseUrl,
    clientId: emu.clientId,
    clientSecret: emu.clientSecret,
    tokens,
    state,
    signals: false,
    seed: 7,
    kit: { commands: [{ name: 'hello' }], greetings: {}, milestones: { hearts_every: 10 }, tally: true },
    authorize: () => ({ code, redirectUri: emu.redirectUri }),
  });
  driver
    .command('hello', (c) => void driver.say(`Hello, ${c.user.nickname ?? 'friend'}!`))
    .on('arrival', (a) => void driver.say(`Welcome, ${a.user.nickname ?? 'friend'}!`))
    .on('milestone', (m) => void driver.say(`${m.reached} hearts!`))
    .on('end', (e) => void log.push(`end ${e.data.reason}`))
    .on('persistTokens', (p) => void log.push(`tokens ${p.generation}`))
    .on('notice', (n) => void (n.notice.kind === 'problem' && log.push(`problem ${n.notice.problem.kind}`)))
    .on('broadcastEnded', (b) => void (ended = b));
  const running = driver.run();
  const connects = () => driver.bot.status().counters.connects;
  const connected = () => driver.bot.status().connection.state === 'connected';
  const said = async (/** @type {string} */ text) => (await emu.control('/chat')).messages.some((/** @type {any} */ m) => m.message === text);

  await until(connected, 'the stream');
  assert.deepEqual(log, ['tokens 1']);
  await emu.control('/emit', { event: 'presence', data: { user: { id: 'u1', nickname: 'Mina' } } });
  await emu.control('/emit', { event: 'chat', data: { user: { id: 'u1', nickname: 'Mina' }, message: '!hello' } });
  await emu.control('/emit', { event: 'like', data: { user: { id: 'u2', nickname: null }, type: 'PAID', amount: 4, combo: 3 } });
  await until(() => said('Welcome, Mina!'), 'the welcome');
  await until(() => said('Hello, Mina!'), 'the command reply');
  await until(() => said('10 hearts!'), 'the milestone');

  // RECONNECT: at once, with the same token.
  let before = connects();
  await emu.control('/streams/end', { reason: 'RECONNECT' });
  await until(() => connects() > before && connected(), 'the reconnect');
  assert.ok(log.includes('end RECONNECT'));
  assert.ok(!log.includes('tokens 2'));

  // TOKEN_EXPIRED mid-stream (the emulator's clock jumps past the expiry):
  // one refresh, the new pair saved before it is used, a reconnect.
  before = connects();
  await emu.control('/clock/advance', { ms: 3_700_000 });
  await until(() => connects() > before && connected(), 'the reconnect after the refresh');
  assert.ok(log.includes('end TOKEN_EXPIRED'));
  assert.equal(JSON.parse(tokens.load() ?? '{}').generation, 2);
  const refreshes = (await emu.control('/requests?path=/v1/oauth/token')).requests.length;
  assert.equal(refreshes, 2, 'the exchange and one refresh');

  // A drop (no end frame): a backoff of at most a second, then a reconnect.
  before = connects();
  await emu.control('/streams/drop', {});
  await until(() => connects() > before && connected(), 'the reconnect after the drop');
  assert.equal(driver.bot.status().counters.drops, 1);

  // 429s: the per-second quota's empty body and the broadcast's chat limit; both retried.
  await emu.control('/fail', { path: '/v1/live/chat', status: 429, times: 1 });
  driver.say('after a quota 429');
  await until(() => said('after a quota 429'), 'the chat after a 429');
  await emu.control('/fail', { path: '/v1/live/chat', status: 429, detailCode: 'OAPI_MNGR_0302', times: 1 });
  driver.say('after a chat-limit 429');
  await until(() => said('after a chat-limit 429'), 'the chat after a chat-limit 429');
  assert.ok(log.includes('problem quota_per_second'), log.join(', '));
  assert.ok(log.includes('problem chat_rate_limited'), log.join(', '));

  // LIVE_ENDED: the final tally, equal to the ledger's.
  await emu.control('/live/end', {});
  await until(() => ended !== null, 'the broadcast end');
  const end = /** @type {import('onair').ActionOf<'broadcastEnded'>} */ (/** @type {unknown} */ (ended));
  const truth = (await ledgerTotals(emu)).find((b) => b.liveId === end.liveId);
  assert.ok(truth);
  assert.deepEqual(end.tally, truth.totals);
  assert.equal(end.tally.hearts, 12);

  driver.shutdown();
  const stop = await running;
  assert.equal(stop?.code, 'shut_down');
  assert.match(state.load() ?? '', /^\{"format":"onair\.kit","version":1,/);
  assert.equal((await emu.control('/state')).openStreams, 0, 'the stream was aborted');
});

test('a refresh due mid-stream: the new pair saved, the stream left open', async (t) => {
  const emu = await startEmulator(['--heartbeat-ms', '500']);
  t.after(() => emu.close());
  const { code } = await emu.control('/consent', {});
  await emu.control('/live/start', {});
  const tokens = new MemoryStore();
  let offset = 0;
  /** @type {string[]} */
  const ends = [];
  const driver = new Driver({
    baseUrl: emu.baseUrl,
    clientId: emu.clientId,
    clientSecret: emu.clientSecret,
    tokens,
    signals: false,
    now: () => Date.now() + offset,
    authorize: () => ({ code, redirectUri: emu.redirectUri }),
  });
  driver.on('end', (e) => void ends.push(e.data.reason));
  const running = driver.run();
  await until(() => driver.bot.status().connection.state === 'connected', 'the stream');
  const refreshAt = driver.bot.status().refreshAtMs ?? 0;
  assert.ok(refreshAt < (driver.bot.status().accessExpiresAtMs ?? 0), 'a refresh is scheduled before the expiry');
  // 55 minutes later on both clocks (the token lives 60; the bot refreshes 10 before):
  // the heartbeats the emulator writes at once wake the driver at the new time.
  const jump = 3_300_000;
  offset += jump;
  await emu.control('/clock/advance', { ms: jump });
  await until(() => JSON.parse(tokens.load() ?? '{}').generation === 2, 'the refresh');
  assert.equal(driver.bot.status().counters.connects, 1, 'the same stream connection');
  assert.equal(driver.bot.status().connection.state, 'connected');
  assert.deepEqual(ends, []);
  driver.shutdown();
  assert.equal((await running)?.code, 'shut_down');
});

test('for await: needsAuthorization handed to the author, events narrowed, leaving the loop aborts the stream; file stores', async (t) => {
  const emu = await startEmulator();
  t.after(() => emu.close());
  const { code } = await emu.control('/consent', {});
  await emu.control('/live/start', {});
  const dir = mkdtempSync(join(tmpdir(), 'onair-driver-'));
  const driver = new Driver({
    baseUrl: emu.baseUrl,
    clientId: emu.clientId,
    clientSecret: emu.clientSecret,
    tokens: join(dir, 'tokens.json'),
    state: new FileStore(join(dir, 'state.json')),
    signals: false,
    kit: { tally: true },
  });
  /** @type {string[]} */
  const seen = [];
  const emitted = until(() => driver.bot.status().connection.state === 'connected', 'the stream').then(() =>
    emu.control('/emit', { event: 'donation', data: { user: { id: 'u9', nickname: 'Dee' }, amount: 500, message: 'hi' } }),
  );
  for await (const action of driver) {
    switch (action.type) {
      case 'needsAuthorization':
        seen.push('needsAuthorization');
        driver.authorize(code, emu.redirectUri);
        break;
      case 'event':
        if (action.event === 'donation') seen.push(`donation ${action.data.amount} ${action.data.message}`);
        break;
      default:
        seen.push(action.type);
    }
    if (seen.some((s) => s.startsWith('donation'))) break;
  }
  await emitted;
  assert.deepEqual(seen.filter((s) => s !== 'notice' && s !== 'persistState'), ['needsAuthorization', 'persistTokens', 'donation 500 hi']);
  await until(async () => (await emu.control('/state')).openStreams === 0, 'the stream aborted when the loop was left');
  const mode = statSync(join(dir, 'tokens.json')).mode & 0o777;
  assert.equal(mode, 0o600);
  assert.equal(JSON.parse(readFileSync(join(dir, 'tokens.json'), 'utf8')).format, 'onair.tokens');
  // A second run resumes from the files: no consent asked.
  const again = new Driver({
    baseUrl: emu.baseUrl,
    clientId: emu.clientId,
    clientSecret: emu.clientSecret,
    tokens: new CallbackStore({ load: async () => readFileSync(join(dir, 'tokens.json'), 'utf8'), save: () => {} }),
    signals: false,
  });
  await again.ready;
  setTimeout(() => again.shutdown(), 300);
  /** @type {string[]} */
  const types = [];
  for await (const action of again) types.push(action.type);
  assert.ok(!types.includes('needsAuthorization'), types.join());
  assert.equal(types[types.length - 1], 'stopped');
});
