// The emulator for the driver tests: `target/debug/onair serve --json` on
// 127.0.0.1 with an ephemeral port (scripts/test-node builds it), its control
// API, and a wait helper. Not a test file (node --test skips it).
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';

// One launcher for every Node test: the package's own (wasm/npm/tests).
import { emulator, ONAIR } from '../../wasm/npm/tests/emulator.mjs';

export { ONAIR };

/**
 * @typedef {{ baseUrl: string, controlUrl: string, clientId: string, clientSecret: string, redirectUri: string,
 *   control: (path: string, body?: object) => Promise<any>, close: () => Promise<void> }} Emulator
 */

/** Starts `onair serve --json ...args`; resolves once it says where it is. */
export const startEmulator = emulator;

/** Waits until `condition()` is truthy (checked every 20 ms); fails after `ms`. @param {() => unknown} condition @param {string} what */
export async function until(condition, what, ms = 15_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await condition()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** This app's bots' totals per broadcast in the ledger. @param {Emulator} emu */
export async function ledgerTotals(emu) {
  const ledger = await emu.control(`/ledger?clientId=${emu.clientId}`);
  /** @type {{ liveId: number, totals: any }[]} */
  const out = [];
  for (const b of ledger.broadcasts ?? []) for (const bot of b.bots ?? []) out.push({ liveId: b.liveId, totals: bot.totals });
  return out;
}

/**
 * Runs `node script` (in `cwd`, with `env` added) against a fresh emulator
 * until its stream is open and it greeted someone, then sends SIGINT; its
 * exit code, output, how long it took to exit, and the directory of its
 * token and state files.
 * @param {string} script @param {string} cwd @param {NodeJS.ProcessEnv} [env]
 */
export async function interrupt(script, cwd, env = process.env) {
  const emu = await startEmulator();
  try {
    const { code } = await emu.control('/consent', {});
    await emu.control('/state', { botManager: true });
    await emu.control('/live/start', {});
    const dir = mkdtempSync(join(tmpdir(), 'onair-sigint-'));
    const child = spawn(process.execPath, [script], {
      cwd,
      env: {
        ...env,
        ONAIR_BASE_URL: emu.baseUrl,
        ONAIR_CLIENT_ID: emu.clientId,
        ONAIR_CLIENT_SECRET: emu.clientSecret,
        ONAIR_CODE: code,
        ONAIR_REDIRECT_URI: emu.redirectUri,
        ONAIR_TOKENS_FILE: join(dir, 'tokens.json'),
        ONAIR_STATE_FILE: join(dir, 'state.json'),
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    await until(async () => (await emu.control('/state')).openStreams === 1, 'the child connected');
    await emu.control('/emit', { event: 'presence', data: { user: { id: 'u1', nickname: 'Mina' } } });
    await until(async () => (await emu.control('/chat')).messages.length === 1, 'the greeting');
    const started = Date.now();
    child.kill('SIGINT');
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    const [exitCode, signal] = await once(child, 'exit');
    clearTimeout(timer);
    await until(async () => (await emu.control('/state')).openStreams === 0, 'the stream closed');
    return { exitCode, signal, ms: Date.now() - started, output, dir };
  } finally {
    await emu.close();
  }
}
