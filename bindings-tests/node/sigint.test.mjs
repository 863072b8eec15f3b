// SIGINT in a child process: the driver (and the bare loop) shut down
// cleanly: streams aborted, the kit's state saved (mode 0600), and the
// process exits by itself, no timer, request or listener left to keep it;
// a second SIGINT before the shutdown has finished exits at once (130).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { interrupt, startEmulator, until } from './emulator.mjs';

const here = fileURLToPath(new URL('.', import.meta.url));

test('SIGINT: the driver shuts down, saves the state (0600), aborts the stream, and the process exits by itself', async () => {
  const r = await interrupt('fixtures/sigint-bot.mjs', here);
  assert.equal(r.signal, null, 'not killed');
  assert.equal(r.exitCode, 0);
  assert.ok(r.ms < 5_000, `${r.ms} ms`);
  assert.match(r.output, /stopped: shut_down/);
  for (const file of ['tokens.json', 'state.json']) assert.equal(statSync(join(r.dir, file)).mode & 0o777, 0o600, file);
  const state = JSON.parse(readFileSync(join(r.dir, 'state.json'), 'utf8'));
  assert.equal(state.format, 'onair.kit');
  assert.equal(state.people.u1.greeted, true);
});

test('SIGINT: the bare-loop example shuts down and exits by itself too', async () => {
  const r = await interrupt('../../examples/node/bare-loop.mjs', here);
  assert.equal(r.signal, null, 'not killed');
  assert.equal(r.exitCode, 0);
  assert.match(r.output, /stopped: shut down/);
});

test('a second SIGINT exits at once (130) while the shutdown has not finished', async (t) => {
  const emu = await startEmulator();
  t.after(() => emu.close());
  const { code } = await emu.control('/consent', {});
  await emu.control('/state', { botManager: true });
  await emu.control('/live/start', {});
  /** @type {NodeJS.ProcessEnv} */
  const env = { ...process.env, ONAIR_BASE_URL: emu.baseUrl, ONAIR_CLIENT_ID: emu.clientId, ONAIR_CLIENT_SECRET: emu.clientSecret, ONAIR_CODE: code, ONAIR_REDIRECT_URI: emu.redirectUri };
  delete env.NODE_TEST_CONTEXT;
  const child = spawn(process.execPath, ['fixtures/second-signal-bot.mjs'], { cwd: here, env, stdio: ['ignore', 'pipe', 'inherit'] });
  let output = '';
  child.stdout.on('data', (d) => (output += d));
  const exited = once(child, 'exit');
  const killer = setTimeout(() => child.kill('SIGKILL'), 20_000);
  try {
    await until(async () => (await emu.control('/state')).openStreams === 1, 'the child connected');
    await emu.control('/emit', { event: 'presence', data: { user: { id: 'u1', nickname: 'Mina' } } });
    await until(async () => (await emu.control('/chat')).messages.length === 1, 'the greeting');
    child.kill('SIGINT');
    await until(() => output.includes('first signal'), 'the first signal');
    await new Promise((resolve) => setTimeout(resolve, 500));
    assert.equal(child.exitCode, null, `still shutting down (its stopped handler hangs): ${output}`);
    const started = Date.now();
    child.kill('SIGINT');
    const [exitCode, signal] = await exited;
    assert.equal(signal, null);
    assert.equal(exitCode, 130, output);
    assert.ok(Date.now() - started < 2_000, 'at once');
    assert.doesNotMatch(output, /stopped:/);
  } finally {
    clearTimeout(killer);
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
});
