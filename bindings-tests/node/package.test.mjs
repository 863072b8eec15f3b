// The package as its users get it: `npm install ./onair-x.y.z.tgz` in an
// empty directory, with no cargo on PATH, gives a working bot (against the
// emulator, then SIGINT) and types that resolve under `moduleResolution`
// node16 and bundler with tsc --strict.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { interrupt } from './emulator.mjs';

const here = fileURLToPath(new URL('.', import.meta.url));
const npmDir = fileURLToPath(new URL('../../target/npm/', import.meta.url));
const tarball = join(npmDir, readdirSync(npmDir).find((f) => /^onair-.*\.tgz$/.test(f)) ?? 'missing.tgz');
const tsc = join(here, 'node_modules/.bin/tsc');
/** PATH without any directory that holds cargo (or rustc). */
const PATH = (process.env.PATH ?? '')
  .split(delimiter)
  .filter((d) => d && !existsSync(join(d, 'cargo')) && !existsSync(join(d, 'rustc')))
  .join(delimiter);
const env = { ...process.env, PATH, CARGO_HOME: '/nonexistent', RUSTUP_HOME: '/nonexistent' };

/** An empty directory with the tarball installed into it (npm, offline, no cargo). */
function installed() {
  const dir = mkdtempSync(join(tmpdir(), 'onair-package-'));
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'my-bot', private: true, type: 'module' }));
  assert.throws(() => execFileSync('sh', ['-c', 'command -v cargo'], { env, stdio: 'pipe' }), 'cargo is not on PATH');
  execFileSync('npm', ['install', '--offline', '--no-audit', '--no-fund', '--loglevel=error', tarball], { cwd: dir, env, stdio: 'pipe' });
  return dir;
}

test('npm install of the tarball in an empty directory, without cargo, runs a bot', async () => {
  const dir = installed();
  copyFileSync(join(here, 'fixtures/sigint-bot.mjs'), join(dir, 'bot.mjs'));
  const r = await interrupt('bot.mjs', dir, env);
  assert.equal(r.exitCode, 0, r.output);
  assert.match(r.output, /stopped: shut_down/);
});

test('the types resolve under moduleResolution node16, bundler and nodenext with only Node\'s globals (tsc --strict, the package checked too)', () => {
  const dir = installed();
  writeFileSync(
    join(dir, 'bot.ts'),
    `import { Driver, Decoder, type Action, type DriverAction } from 'onair';
export function describe(action: Action | DriverAction): string {
  switch (action.type) {
    case 'event':
      return action.event === 'chat' ? action.data.message : action.event;
    case 'command':
      return action.args.join(' ');
    case 'stopped':
      return action.stop.code === 'reconsent' ? action.stop.missing.join() : action.stop.message;
    default:
      return action.type;
  }
}
export const make = () => new Driver({ baseUrl: '', clientId: '', clientSecret: '', kit: { commands: [{ name: 'hi' }] } });
export const items = () => new Decoder().push(':heartbeat\\n\\n').map((i) => i.type);
`,
  );
  const base = { strict: true, noEmit: true, skipLibCheck: false, target: 'es2022', lib: ['es2022', 'esnext.disposable', 'dom'], types: [] };
  // Node's own globals instead of the DOM's (fetch, RequestInit, Symbol.dispose from @types/node).
  const nodeOnly = { ...base, lib: ['es2022'], types: ['node'], typeRoots: [join(here, 'node_modules/@types')] };
  /** @type {[object, string, string][]} */
  const configs = [
    [base, 'node16', 'node16'],
    [base, 'esnext', 'bundler'],
    [nodeOnly, 'nodenext', 'nodenext'],
  ];
  for (const [options, module, moduleResolution] of configs) {
    writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions: { ...options, module, moduleResolution }, files: ['bot.ts'] }));
    try {
      execFileSync(tsc, ['-p', dir], { env, stdio: 'pipe', encoding: 'utf8' });
    } catch (e) {
      assert.fail(`tsc (${moduleResolution}): ${/** @type {{ stdout?: string }} */ (e).stdout}`);
    }
  }
});
