// What a newcomer meets in the first hour, through the guide's bot (the first
// bot of docs/node.md, run as a child process against target/debug/onair
// serve on 127.0.0.1) and the reference bot (examples/node/bot.mjs): each bad
// input or consent failure ends with one clear line and exit status 1; a dead
// port is said on stderr and spends no consent code; SIGINT in the middle of
// a busy broadcast, then a restart, greets nobody twice and loses nothing the
// bot had received. The messages asserted here are the ones docs/node.md's
// table shows.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ONAIR, ROOT, emulator } from './emulator.mjs';

/** @typedef {import('./emulator.mjs').Emulator} Emulator */

const PACKAGE = join(ROOT, 'wasm/npm');
const REFERENCE_BOT = join(ROOT, 'examples/node/bot.mjs');

/** The guide's bot: the first ```js emulator block of docs/node.md. */
const GUIDE_BOT = (() => {
  const doc = readFileSync(join(ROOT, 'docs/node.md'), 'utf8');
  const m = /^```js emulator\n([\s\S]*?)^```$/m.exec(doc);
  if (!m) throw new Error('docs/node.md has no ```js emulator block');
  return m[1];
})();

/** A directory where `import ... from 'onair'` is this package, with the guide's bot as bot.mjs. */
function workdir() {
  const dir = mkdtempSync(join(tmpdir(), 'onair-first-hour-'));
  mkdirSync(join(dir, 'node_modules'));
  symlinkSync(PACKAGE, join(dir, 'node_modules', 'onair'), 'dir');
  writeFileSync(join(dir, 'bot.mjs'), GUIDE_BOT);
  copyFileSync(REFERENCE_BOT, join(dir, 'reference.mjs'));
  return dir;
}

/** The environment of the guide's bot for `emu` (each value may be overridden or removed with undefined). @param {Emulator} emu @param {Record<string, string | undefined>} [extra] */
function envFor(emu, extra = {}) {
  /** @type {NodeJS.ProcessEnv} */
  const env = { ...process.env };
  delete env.NODE_TEST_CONTEXT;
  for (const key of Object.keys(env)) if (key.startsWith('ONAIR_')) delete env[key];
  /** @type {Record<string, string | undefined>} */
  const values = {
    ONAIR_BASE_URL: emu.baseUrl,
    ONAIR_CLIENT_ID: emu.clientId,
    ONAIR_CLIENT_SECRET: emu.clientSecret,
    ONAIR_REDIRECT_URI: emu.redirectUri,
    ...extra,
  };
  for (const [key, value] of Object.entries(values)) if (value !== undefined) env[key] = value;
  return env;
}

/**
 * A bot as a child process: its output so far, and its exit.
 * @param {string} dir @param {NodeJS.ProcessEnv} env @param {string} [file]
 */
function start(dir, env, file = 'bot.mjs') {
  const child = spawn(process.execPath, [file], { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const out = { stdout: '', stderr: '' };
  child.stdout.on('data', (d) => (out.stdout += d));
  child.stderr.on('data', (d) => (out.stderr += d));
  const exited = once(child, 'exit').then(([code, signal]) => ({ code, signal }));
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  void exited.then(() => clearTimeout(timer));
  return { child, out, exited };
}

/** Runs a bot to its end (killed after `ms`); exit status, signal, stdout, stderr, how long. @param {string} dir @param {NodeJS.ProcessEnv} env */
async function runToEnd(dir, env, ms = 20_000) {
  const started = Date.now();
  const bot = start(dir, env);
  const timer = setTimeout(() => bot.child.kill('SIGKILL'), ms);
  const { code, signal } = await bot.exited;
  clearTimeout(timer);
  return { code, signal, ...bot.out, ms: Date.now() - started };
}

/** @param {string} what @param {() => unknown} condition */
async function until(what, condition, ms = 15_000) {
  for (const deadline = Date.now() + ms; !(await condition()); await sleep(20)) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
  }
}

/** One line of stderr, no stack trace. @param {string} stderr */
function oneLine(stderr) {
  const lines = stderr.trim().split('\n');
  assert.equal(lines.length, 1, `one line on stderr, got:\n${stderr}`);
  assert.doesNotMatch(stderr, /^\s+at /m, 'no stack trace');
  return lines[0];
}

/** The last line of stderr, no stack trace before it. @param {string} stderr */
function lastLine(stderr) {
  assert.doesNotMatch(stderr, /^\s+at /m, 'no stack trace');
  return stderr.trim().split('\n').at(-1);
}

const DJ_LINE = 'The DJ must approve the app again; then start the bot with ONAIR_CODE set to the fresh code (it lasts 60 s).';

/** A stored token pair that works against `emu`: the guide's bot run once with a code, stopped with SIGINT. @param {Emulator} emu @param {string} dir */
async function savedTokens(emu, dir) {
  const { code } = await emu.control('/consent', {});
  const bot = start(dir, envFor(emu, { ONAIR_CODE: code }));
  await until('tokens.json', () => existsSync(join(dir, 'tokens.json')));
  bot.child.kill('SIGINT');
  assert.equal((await bot.exited).code, 0, bot.out.stderr);
}

test('no consent code and no tokens: the reauthorize stop at once, the DJ line, exit 1', async (t) => {
  const emu = await emulator();
  const dir = workdir();
  t.after(async () => (await emu.close(), rmSync(dir, { recursive: true, force: true })));
  const r = await runToEnd(dir, envFor(emu));
  assert.equal(r.signal, null);
  assert.equal(r.code, 1, r.stdout + r.stderr);
  assert.ok(r.ms < 10_000, `${r.ms} ms`);
  assert.match(r.stdout, /^stopped: re-authorize: not authorized yet: DJ consent is needed$/m);
  assert.equal(oneLine(r.stderr), DJ_LINE);
  assert.equal((await emu.control('/requests?path=/v1/oauth/token')).requests.length, 0);
});

test('an expired consent code: the exchange refused, the reauthorize stop, the DJ line, exit 1', async (t) => {
  const emu = await emulator();
  const dir = workdir();
  t.after(async () => (await emu.close(), rmSync(dir, { recursive: true, force: true })));
  const { code } = await emu.control('/consent', {});
  await emu.control('/clock/advance', { ms: 61_000 });
  const r = await runToEnd(dir, envFor(emu, { ONAIR_CODE: code }));
  assert.equal(r.code, 1, r.stdout + r.stderr);
  assert.equal(r.stdout, 'stopped: re-authorize: code exchange failed (HTTP 400 invalid_grant): a new consent code is needed\n');
  assert.equal(r.stderr, `onair: token: invalid_grant (HTTP 400, invalid_grant): reauthorize\n${DJ_LINE}\n`);
  assert.ok(!existsSync(join(dir, 'tokens.json')));
});

test('a consent code already used: the reauthorize stop, the DJ line, exit 1', async (t) => {
  const emu = await emulator();
  const dir = workdir();
  t.after(async () => (await emu.close(), rmSync(dir, { recursive: true, force: true })));
  const { code } = await emu.control('/consent', {});
  const { requests, fetchArgs } = await import('../index.js');
  const first = await fetch(...fetchArgs(requests.issueToken(emu, code, emu.redirectUri)));
  assert.equal(first.status, 200);
  const r = await runToEnd(dir, envFor(emu, { ONAIR_CODE: code }));
  assert.equal(r.code, 1, r.stdout + r.stderr);
  assert.match(r.stdout, /^stopped: re-authorize: code exchange failed/m);
  assert.equal(lastLine(r.stderr), DJ_LINE);
});

test('a wrong client secret: the invalid_client stop, exit 1', async (t) => {
  const emu = await emulator();
  const dir = workdir();
  t.after(async () => (await emu.close(), rmSync(dir, { recursive: true, force: true })));
  const { code } = await emu.control('/consent', {});
  const r = await runToEnd(dir, envFor(emu, { ONAIR_CODE: code, ONAIR_CLIENT_SECRET: 'not-the-secret' }));
  assert.equal(r.code, 1, r.stdout + r.stderr);
  assert.equal(r.stdout, 'stopped: client credentials rejected: fix the configuration\n');
  assert.equal(r.stderr, 'onair: token: invalid_client (HTTP 401, invalid_client): stop\n');
});

test('a wrong client secret with saved tokens: found at start (the credentials check), exit 1', async (t) => {
  const emu = await emulator();
  const dir = workdir();
  t.after(async () => (await emu.close(), rmSync(dir, { recursive: true, force: true })));
  await savedTokens(emu, dir);
  const r = await runToEnd(dir, envFor(emu, { ONAIR_CLIENT_SECRET: 'not-the-secret' }), 15_000);
  assert.equal(r.signal, null, `still running after 15 s: ${r.stdout}${r.stderr}`);
  assert.equal(r.code, 1, r.stdout + r.stderr);
  assert.ok(r.ms < 10_000, `${r.ms} ms`);
  assert.match(r.stdout, /^stopped: client credentials rejected: fix the configuration$/m);
  const revokes = (await emu.control('/requests?path=/v1/oauth/revoke')).requests;
  assert.ok(revokes.length >= 1, 'the credentials were checked with a revoke');
});

test('a garbage token file: one line naming the file, what is wrong and what to do; exit 1', async (t) => {
  const emu = await emulator();
  const dir = workdir();
  t.after(async () => (await emu.close(), rmSync(dir, { recursive: true, force: true })));
  writeFileSync(join(dir, 'tokens.json'), 'garbage');
  const r = await runToEnd(dir, envFor(emu));
  assert.equal(r.code, 1, r.stdout + r.stderr);
  assert.equal(
    oneLine(r.stderr),
    'onair: the token file tokens.json does not hold a token pair this bot saved (stored tokens are not valid (error at line 1 column 1)): ' +
      'delete it and start the bot with a new consent code from the DJ, or put back the file the bot wrote',
  );
});

test('a garbage kit state file: one line naming the file, what is wrong and what to do; exit 1', async (t) => {
  const emu = await emulator();
  const dir = workdir();
  t.after(async () => (await emu.close(), rmSync(dir, { recursive: true, force: true })));
  writeFileSync(join(dir, 'state.json'), 'garbage');
  const r = await runToEnd(dir, envFor(emu));
  assert.equal(r.code, 1, r.stdout + r.stderr);
  assert.equal(
    oneLine(r.stderr),
    "onair: the kit state file state.json does not hold a kit state this bot saved (stored kit state: not valid (error at line 1 column 1)): " +
      "delete it (the kit's memory of the current broadcast starts over: greetings and tallies) or put back the file the bot wrote",
  );
});

/** @type {[string, string][]} */
const MISSING = [
  ['ONAIR_BASE_URL', "onair: option baseUrl is missing (the service's base URL, a string)"],
  ['ONAIR_CLIENT_ID', "onair: option clientId is missing (the app's client id, a string)"],
  ['ONAIR_CLIENT_SECRET', "onair: option clientSecret is missing (the app's client secret, a string)"],
  ['ONAIR_REDIRECT_URI', 'onair: authorize() returned a consent without redirectUri (the redirect URI registered for the app, where the code was sent, a string)'],
];
for (const [variable, message] of MISSING) {
  test(`${variable} unset: one line naming the option, exit 1`, async (t) => {
    const emu = await emulator();
    const dir = workdir();
    t.after(async () => (await emu.close(), rmSync(dir, { recursive: true, force: true })));
    const { code } = await emu.control('/consent', {});
    const r = await runToEnd(dir, envFor(emu, { ONAIR_CODE: code, [variable]: undefined }));
    assert.equal(r.code, 1, r.stdout + r.stderr);
    assert.equal(oneLine(r.stderr), message);
    assert.equal((await emu.control('/requests?path=/v1/oauth/token')).requests.length, 0, 'the code was not sent');
  });
}

/** @type {[string, string, string][]} */
const MALFORMED = [
  ['ONAIR_BASE_URL', 'localhost:8080', 'onair: option baseUrl: invalid base URL: must start with http:// or https://'],
  ['ONAIR_CLIENT_ID', 'my-bot', 'onair: option clientId: client_id must be a UUID (8-4-4-4-12 hexadecimal digits); the server answers anything else with invalid_client'],
];
for (const [variable, value, message] of MALFORMED) {
  test(`${variable}=${value}: one line naming the option, exit 1`, async (t) => {
    const emu = await emulator();
    const dir = workdir();
    t.after(async () => (await emu.close(), rmSync(dir, { recursive: true, force: true })));
    const r = await runToEnd(dir, envFor(emu, { [variable]: value }));
    assert.equal(r.code, 1, r.stdout + r.stderr);
    assert.equal(oneLine(r.stderr), message);
  });
}

/** A port nothing listens on (bound, then closed). */
async function deadPort() {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  assert.ok(address !== null && typeof address === 'object');
  server.close();
  await once(server, 'close');
  return address.port;
}

test('a dead port with saved tokens: a warning on stderr, the bot keeps trying, SIGINT exits 0', async (t) => {
  const emu = await emulator();
  const dir = workdir();
  t.after(async () => (await emu.close(), rmSync(dir, { recursive: true, force: true })));
  await savedTokens(emu, dir);
  const port = await deadPort();
  const bot = start(dir, envFor(emu, { ONAIR_BASE_URL: `http://127.0.0.1:${port}` }));
  await until('the warning', () => /^onair: /m.test(bot.out.stderr), 10_000);
  assert.match(bot.out.stderr, /^onair: the service cannot be reached \((events|revoke): connection failed, not sent\); retrying$/m);
  assert.equal(bot.child.exitCode, null, 'still running');
  bot.child.kill('SIGINT');
  const { code } = await bot.exited;
  assert.equal(code, 0, bot.out.stdout + bot.out.stderr);
  assert.match(bot.out.stdout, /stopped: shut down/);
});

test('a dead port without tokens: a warning, the code is not spent: once the port answers, the same code is exchanged', async (t) => {
  const emu = await emulator();
  const dir = workdir();
  /** @type {import('node:net').Server | null} */
  let proxy = null;
  t.after(async () => {
    proxy?.close();
    await emu.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const { code } = await emu.control('/consent', {});
  const port = await deadPort();
  const bot = start(dir, envFor(emu, { ONAIR_BASE_URL: `http://127.0.0.1:${port}`, ONAIR_CODE: code }));
  await until('the warning', () => /^onair: /m.test(bot.out.stderr), 10_000);
  assert.equal(bot.out.stderr, 'onair: the service cannot be reached (token: connection failed, not sent); retrying\n');
  assert.equal(bot.child.exitCode, null, 'still running: the code was not counted as spent');
  // The service comes up on that port: a plain TCP relay to the emulator.
  const target = new URL(emu.baseUrl);
  proxy = createServer((socket) => {
    const upstream = connect(Number(target.port), '127.0.0.1');
    socket.pipe(upstream).pipe(socket);
    socket.on('error', () => upstream.destroy());
    upstream.on('error', () => socket.destroy());
  });
  proxy.listen(port, '127.0.0.1');
  await once(proxy, 'listening');
  await emu.control('/live/start', {});
  await until('the exchange and the stream', async () => (await emu.control('/state')).openStreams === 1, 20_000);
  const exchanges = (await emu.control('/requests?path=/v1/oauth/token')).requests;
  assert.equal(exchanges.length, 1);
  assert.equal(exchanges[0].status, 200);
  bot.child.kill('SIGINT');
  assert.equal((await bot.exited).code, 0, bot.out.stdout + bot.out.stderr);
});

test('SIGINT while frames flow, then a restart: every frame written before the signal is in the tally, nobody greeted twice', async (t) => {
  const dir = workdir();
  // A packed broadcast: 20 000 events from 100 people, one every emulator ms
  // at four times real speed.
  const scenario = {
    name: 'packed',
    steps: [
      { do: 'state', botManager: true },
      { do: 'liveStart', title: 'packed' },
      { do: 'waitForStream', timeoutMs: 60000 },
      { afterMs: 200, do: 'generate', seed: 7, count: 20000, intervalMs: 1, people: 100, djChatEvery: 500 },
      { afterMs: 1000, do: 'waitForStream', timeoutMs: 60000 },
      { afterMs: 500, do: 'liveEnd' },
    ],
  };
  writeFileSync(join(dir, 'packed.json'), JSON.stringify(scenario));
  const emu = await emulator(['--scenario', join(dir, 'packed.json'), '--speed', '4']);
  t.after(async () => (await emu.close(), rmSync(dir, { recursive: true, force: true })));
  const { code } = await emu.control('/consent', {});
  const env = (/** @type {string} */ out, /** @type {string | undefined} */ consent) =>
    envFor(emu, {
      ONAIR_CODE: consent,
      ONAIR_TOKENS_FILE: join(dir, 'tokens.json'),
      ONAIR_STATE_FILE: join(dir, 'state.json'),
      ONAIR_TALLY_OUT: join(dir, out),
      ONAIR_ENDS_OUT: join(dir, 'ends.jsonl'),
    });

  const first = start(dir, env('first.json', code), 'reference.mjs');
  await until('frames flowing', async () => (await emu.control('/mark', {})).writeSeq > 4000, 30_000);
  // The mark, then the signal at once, while frames flow: every frame
  // numbered up to the mark was written to the bot's socket before it.
  const mark = (await emu.control('/mark', {})).writeSeq;
  first.child.kill('SIGINT');
  assert.equal((await first.exited).code, 0, first.out.stdout + first.out.stderr);
  assert.equal(JSON.parse(readFileSync(join(dir, 'state.json'), 'utf8')).format, 'onair.kit');

  const second = start(dir, env('second.json', undefined), 'reference.mjs');
  await until('the broadcast end', () => existsSync(join(dir, 'ends.jsonl')), 60_000);
  second.child.kill('SIGINT');
  assert.equal((await second.exited).code, 0, second.out.stdout + second.out.stderr);

  // What the bot must have: every frame numbered up to the mark, and every
  // frame of a connection opened after it (the restarted bot's).
  /** @type {{ writeSeq: number, connection: number, id: string, userId: string | null, hearts: number, donated: number }[]} */
  const frames = (await emu.control(`/frames?clientId=${emu.clientId}`)).frames;
  const before = new Set(frames.filter((f) => f.writeSeq <= mark).map((f) => f.connection));
  /** @type {Map<string, { hearts: number, donated: number }>} */
  const must = new Map();
  const seen = new Set();
  let afterSignal = 0;
  for (const f of frames) {
    if (f.writeSeq > mark && before.has(f.connection)) {
      afterSignal++;
      continue;
    }
    if (f.userId === null || (f.hearts === 0 && f.donated === 0) || seen.has(f.id)) continue;
    seen.add(f.id);
    const p = must.get(f.userId) ?? { hearts: 0, donated: 0 };
    p.hearts += f.hearts;
    p.donated += f.donated;
    must.set(f.userId, p);
  }
  const out = JSON.parse(readFileSync(join(dir, 'second.json'), 'utf8'));
  const ledger = await emu.control(`/ledger?clientId=${emu.clientId}`);
  const broadcast = ledger.broadcasts[0];
  const tally = out.broadcasts.find((/** @type {{ liveId: number }} */ b) => b.liveId === broadcast.liveId);
  const totals = broadcast.bots[0].totals;
  /** @type {string[]} */
  const short = [];
  for (const [id, p] of must) {
    const got = tally.people[id] ?? { hearts: 0, donated: 0 };
    if (got.hearts < p.hearts || got.donated < p.donated) short.push(`${id} ${got.hearts}/${p.hearts} hearts ${got.donated}/${p.donated} donated`);
    const truth = totals.people[id] ?? { hearts: 0, donated: 0 };
    assert.ok(got.hearts <= truth.hearts && got.donated <= truth.donated, `${id}: no more than the ledger`);
  }
  assert.deepEqual(short, [], `people short of what was written before the signal (${afterSignal} frames written after it)`);
  // Nobody greeted twice: every arrival of both runs, by person.
  const first_ = JSON.parse(readFileSync(join(dir, 'first.json'), 'utf8'));
  /** @type {Map<string, number>} */
  const greeted = new Map();
  for (const a of [...first_.arrivals, ...out.arrivals]) greeted.set(a.id, (greeted.get(a.id) ?? 0) + 1);
  assert.ok(first_.arrivals.length > 0, 'the first run greeted people');
  for (const [who, n] of greeted) assert.equal(n, 1, `${who} greeted ${n} times`);
});

test("the reference bot's own reminder, while connected (a second here, 30 minutes there), beside the kit's configured welcome", async (t) => {
  const emu = await emulator();
  const dir = workdir();
  t.after(async () => (await emu.close(), rmSync(dir, { recursive: true, force: true })));
  const source = readFileSync(REFERENCE_BOT, 'utf8');
  assert.ok(source.includes('30 * 60 * 1000'));
  writeFileSync(join(dir, 'reminding.mjs'), source.replace('30 * 60 * 1000', '1000'));
  const { code } = await emu.control('/consent', {});
  await emu.control('/state', { botManager: true });
  await emu.control('/live/start', {});
  const bot = start(dir, envFor(emu, { ONAIR_CODE: code }), 'reminding.mjs');
  const said = async () => (await emu.control('/chat')).messages.map((/** @type {{ message: string }} */ m) => m.message);
  await until('the stream', async () => (await emu.control('/state')).openStreams === 1);
  await emu.control('/emit', { event: 'presence', data: { user: { id: 'u1', nickname: 'Mina' } } });
  await until('the welcome and two reminders', async () => (await said()).length >= 3);
  bot.child.kill('SIGINT');
  assert.equal((await bot.exited).code, 0, bot.out.stdout + bot.out.stderr);
  const reminder = "Say !hello to say hi, or !top for tonight's top donors.";
  assert.deepEqual((await said()).slice(0, 3), ['Welcome, Mina! 🎧', reminder, reminder]);
});
