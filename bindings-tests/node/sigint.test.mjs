// SIGINT in a child process: the driver (and the bare loop) shut down
// cleanly: streams aborted, the kit's state saved (mode 0600), and the
// process exits by itself, no timer, request or listener left to keep it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { interrupt } from './emulator.mjs';

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
