// `onair serve` for the package's own tests (the guide and the first hour):
// started on an ephemeral port of 127.0.0.1, with its control API.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

/** The repository's root. */
export const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
/** The `onair` command the tests run (built by cargo). */
export const ONAIR = join(ROOT, 'target/debug/onair');

/**
 * @typedef {{ baseUrl: string, controlUrl: string, clientId: string, clientSecret: string, redirectUri: string,
 *   control: (path: string, body?: object) => Promise<any>, close: () => Promise<void> }} Emulator
 */

/** `onair serve --json --port 0 ...args` and its control API. @param {string[]} [args] @returns {Promise<Emulator>} */
export async function emulator(args = []) {
  const child = spawn(ONAIR, ['serve', '--json', '--port', '0', ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  const [line] = await once(createInterface({ input: child.stdout }), 'line');
  const info = JSON.parse(line);
  assert.match(info.baseUrl, /^http:\/\/127\.0\.0\.1:\d+$/);
  return {
    ...info,
    /** GET without a body, POST with one. @param {string} path @param {object} [body] */
    async control(path, body) {
      const init = body === undefined ? {} : { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) };
      const res = await fetch(`${info.controlUrl}${path}`, init);
      const json = await res.json();
      if (!res.ok) throw new Error(`${path}: ${res.status} ${JSON.stringify(json)}`);
      return json;
    },
    async close() {
      if (child.exitCode !== null) return;
      child.kill('SIGTERM');
      await once(child, 'exit');
    },
  };
}
