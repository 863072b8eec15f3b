// The driver and consent: with nothing set up to bring a new code the run
// ends with the reauthorize stop; waitForConsent keeps it running until
// driver.authorize brings one; a shutdown after such a stop still resolves
// with that stop. And the notices of level warn reach the logger: a dead
// port, the daily chat quota, replies given up at a broadcast's end.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { Driver, MemoryStore } from 'onair';
import { startEmulator, until } from './emulator.mjs';

const here = fileURLToPath(new URL('.', import.meta.url));

test('no code and nothing waiting: run() resolves with the reauthorize stop, and says it in a stopped action', async (t) => {
  const emu = await startEmulator();
  t.after(() => emu.close());
  /** @type {string[]} */
  const seen = [];
  const driver = new Driver({ baseUrl: emu.baseUrl, clientId: emu.clientId, clientSecret: emu.clientSecret, signals: false, authorize: () => null });
  driver.on('needsAuthorization', () => void seen.push('needsAuthorization'));
  driver.on('stopped', (s) => void seen.push(`stopped ${s.stop.code}`));
  const stop = await driver.run();
  assert.equal(stop?.code, 'reauthorize');
  assert.ok(stop?.code === 'reauthorize' && stop.reason === 'not authorized yet: DJ consent is needed');
  assert.equal(stop?.message, 're-authorize: not authorized yet: DJ consent is needed');
  assert.deepEqual(seen, ['needsAuthorization', 'stopped reauthorize']);
  assert.deepEqual(driver.stop, stop);
});

test('an expired code and nothing waiting: run() resolves with the reauthorize stop of the failed exchange', async (t) => {
  const emu = await startEmulator();
  t.after(() => emu.close());
  const { code } = await emu.control('/consent', {});
  await emu.control('/clock/advance', { ms: 61_000 });
  let asked = 0;
  const driver = new Driver({
    baseUrl: emu.baseUrl, clientId: emu.clientId, clientSecret: emu.clientSecret, signals: false, logger: null,
    authorize: () => (asked++ === 0 ? { code, redirectUri: emu.redirectUri } : null),
  });
  const stop = await driver.run();
  assert.ok(stop?.code === 'reauthorize' && stop.reason.startsWith('code exchange failed'), JSON.stringify(stop));
  assert.equal(asked, 2, 'asked again after the refusal, then ended');
});

test('waitForConsent: the run waits for driver.authorize; a shutdown while waiting resolves with the reauthorize stop', async (t) => {
  const emu = await startEmulator();
  t.after(() => emu.close());
  await emu.control('/live/start', {});
  const driver = new Driver({ baseUrl: emu.baseUrl, clientId: emu.clientId, clientSecret: emu.clientSecret, signals: false, waitForConsent: true });
  /** @type {string[]} */
  const seen = [];
  driver.on('needsAuthorization', () => void seen.push('needsAuthorization'));
  driver.on('stopped', (s) => void seen.push(`stopped ${s.stop.code}`));
  let settled = false;
  const running = driver.run().finally(() => (settled = true));
  await until(() => seen.length > 0, 'the needsAuthorization action');
  await new Promise((resolve) => setTimeout(resolve, 300));
  assert.equal(settled, false, 'still waiting for a code');
  assert.deepEqual(seen, ['needsAuthorization'], 'asked once');
  // A Ctrl-C now: the run ends with the stop that stands, not shut_down.
  await driver.shutdown();
  const stop = await running;
  assert.equal(stop?.code, 'reauthorize');
  assert.deepEqual(seen, ['needsAuthorization', 'stopped reauthorize']);

  // Waiting, then a code from the web handler: the bot connects.
  const { code } = await emu.control('/consent', {});
  const tokens = new MemoryStore();
  const again = new Driver({ baseUrl: emu.baseUrl, clientId: emu.clientId, clientSecret: emu.clientSecret, signals: false, waitForConsent: true, tokens });
  const run2 = again.run();
  await until(() => again.bot.status().connection.state === 'needsAuthorization', 'waiting');
  await new Promise((resolve) => setTimeout(resolve, 200));
  again.authorize(code, emu.redirectUri);
  await until(() => again.bot.status().connection.state === 'connected', 'the stream');
  assert.match(tokens.load() ?? '', /"format":"onair.tokens"/);
  await again.shutdown();
  assert.equal((await run2)?.code, 'shut_down', 'consent came: a shutdown is a shutdown');
});

test('waitForConsent after a refused code: Ctrl-C resolves with that reauthorize stop', async (t) => {
  const emu = await startEmulator();
  t.after(() => emu.close());
  const { code } = await emu.control('/consent', {});
  await emu.control('/clock/advance', { ms: 61_000 });
  let handed = false;
  const driver = new Driver({
    baseUrl: emu.baseUrl, clientId: emu.clientId, clientSecret: emu.clientSecret, signals: false, waitForConsent: true, logger: null,
    authorize: () => (handed ? null : ((handed = true), { code, redirectUri: emu.redirectUri })),
  });
  const running = driver.run();
  await until(() => driver.bot.stop?.code === 'reauthorize', 'the refused exchange');
  await new Promise((resolve) => setTimeout(resolve, 200));
  await driver.shutdown();
  const stop = await running;
  assert.ok(stop?.code === 'reauthorize' && stop.reason.startsWith('code exchange failed'), JSON.stringify(stop));
});

test('a dead port: the warning reaches the logger option; a code is not spent on a connection never made', async () => {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  assert.ok(address !== null && typeof address === 'object');
  server.close();
  /** @type {string[]} */
  const warned = [];
  const driver = new Driver({
    baseUrl: `http://127.0.0.1:${address.port}`, clientId: '3f2504e0-4f89-11d3-9a0c-0305e82c3301', clientSecret: 's',
    signals: false, logger: { warn: (m) => void warned.push(m) },
    authorize: () => ({ code: 'a-fresh-code', redirectUri: 'https://bot.example/cb' }),
  });
  const running = driver.run();
  await until(() => warned.length > 0, 'the warning');
  assert.equal(warned[0], 'onair: the service cannot be reached (token: connection failed, not sent); retrying');
  assert.equal(driver.bot.stop, null, 'not stopped: the code was not spent');
  await driver.shutdown();
  assert.equal((await running)?.code, 'shut_down');
});

test('waitForConsent in a process with nothing else to do: it stays up, and SIGINT ends it with the reauthorize stop (exit 1)', async (t) => {
  const emu = await startEmulator();
  t.after(() => emu.close());
  /** @type {NodeJS.ProcessEnv} */
  const env = { ...process.env, ONAIR_BASE_URL: emu.baseUrl, ONAIR_CLIENT_ID: emu.clientId, ONAIR_CLIENT_SECRET: emu.clientSecret };
  delete env.NODE_TEST_CONTEXT;
  const child = spawn(process.execPath, ['fixtures/wait-for-consent-bot.mjs'], { cwd: here, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (d) => (output += d));
  child.stderr.on('data', (d) => (output += d));
  const exited = once(child, 'exit');
  const killer = setTimeout(() => child.kill('SIGKILL'), 20_000);
  try {
    await until(() => output.includes('waiting for a consent code'), 'the needsAuthorization action');
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    assert.equal(child.exitCode, null, `still waiting: ${output}`);
    child.kill('SIGINT');
    const [code, signal] = await exited;
    assert.equal(signal, null);
    assert.equal(code, 1, output);
    assert.equal(output, 'waiting for a consent code\nstopped: re-authorize: not authorized yet: DJ consent is needed\n');
  } finally {
    clearTimeout(killer);
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
});

/** A driver connected to a fresh emulator's broadcast, its warn lines collected. @param {import('node:test').TestContext} t */
async function connected(t) {
  const emu = await startEmulator();
  t.after(() => emu.close());
  const { code } = await emu.control('/consent', {});
  await emu.control('/live/start', {});
  /** @type {string[]} */
  const warned = [];
  const driver = new Driver({
    baseUrl: emu.baseUrl, clientId: emu.clientId, clientSecret: emu.clientSecret, signals: false,
    logger: { warn: (m) => void warned.push(m) },
    authorize: () => ({ code, redirectUri: emu.redirectUri }),
  });
  const running = driver.run();
  await until(() => driver.bot.status().connection.state === 'connected', 'the stream');
  return { emu, driver, running, warned };
}

test('the daily chat quota is logged once with its reset time, and the replies it holds back in one line', async (t) => {
  const { emu, driver, running, warned } = await connected(t);
  await emu.control('/quota', { daily: { perPermission: { 'chat.send': 0 } } });
  driver.say('one');
  await until(() => warned.some((m) => m.startsWith('onair: daily quota')), 'the daily quota line');
  for (let i = 0; i < 20; i++) driver.say(`reply ${i}`);
  await until(() => warned.some((m) => /^onair: gave up 2\d chat messages/.test(m)), 'the gave-up line', 10_000);
  const quota = warned.filter((m) => m.startsWith('onair: daily quota'));
  assert.equal(quota.length, 1, warned.join('\n'));
  assert.match(quota[0], /^onair: daily quota reached for chat\.send: calls needing it are held back until \w{3}, \d\d \w{3} \d{4} 00:00:00 GMT$/);
  assert.ok(warned.includes('onair: gave up 20 chat messages: held back by the daily quota'), warned.join('\n'));
  assert.ok(driver.bot.status().counters.gaveUpQuotaBlocked >= 20);
  await driver.shutdown();
  await running;
});

test('replies given up at the end of a broadcast are logged, a storm in few lines', async (t) => {
  const { emu, driver, running, warned } = await connected(t);
  await emu.control('/state', { chatFrozen: true });
  for (let i = 0; i < 20; i++) driver.say(`reply ${i}`);
  await emu.control('/live/end', {});
  // Each reply is cancelled (the broadcast ended first) or refused (not on air any more); every one is said.
  const said = () => warned.reduce((n, m) => n + Number(/^onair: gave up (\d+) chat messages?: (cancelled|refused)/.exec(m)?.[1] ?? 0), 0);
  await until(() => said() === 20, 'twenty replies said given up', 15_000);
  const counters = driver.bot.status().counters;
  assert.equal(counters.gaveUpCancelled + counters.gaveUpRefused + counters.gaveUpQueueFull, 20);
  assert.ok(counters.gaveUpCancelled > 0);
  const lines = warned.filter((m) => m.startsWith('onair: gave up'));
  assert.ok(lines.length <= 6, `a storm in few lines:\n${lines.join('\n')}`);
  assert.ok(lines.some((m) => /^onair: gave up \d+ chat messages?: cancelled \(its broadcast ended, or the bot stopped\)$/.test(m)), lines.join('\n'));
  await driver.shutdown();
  await running;
});
