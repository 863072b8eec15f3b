// The Node guide (docs/node.md) runs, so no example in it rots. Every ```js
// block is a whole program, written to a temporary directory whose
// node_modules/onair is this package, and run with `node`: it must exit 0.
// A block marked ```js emulator is a bot: it gets an emulator of its own
// (target/debug/onair serve --json --port 0, on 127.0.0.1) with the DJ on air
// and the ONAIR_* variables it reads; a join, a "!hi" and a donation must
// earn a welcome, "Hello, Mina!" and a thanks naming Mina, its token and
// state files must appear (mode 0600), and SIGINT must make it exit 0 by
// itself. Every other block runs with target/debug on PATH (`onair`). Every
// ```ts block is type-checked with tsc --strict.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ONAIR, ROOT, emulator } from './emulator.mjs';

const PACKAGE = join(ROOT, 'wasm/npm');
const GUIDE = join(ROOT, 'docs/node.md');
const TSC = join(ROOT, 'bindings-tests/node/node_modules/.bin/tsc');

/**
 * The fenced blocks of the guide: language, the words after it, code, line.
 * @param {string} markdown
 */
function blocks(markdown) {
  /** @type {{ lang: string, words: string[], code: string, line: number }[]} */
  const out = [];
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\w+)(.*)$/.exec(lines[i]);
    if (!open) continue;
    const start = i + 1;
    while (i + 1 < lines.length && lines[i + 1] !== '```') i++;
    out.push({ lang: open[1], words: open[2].trim().split(/\s+/).filter(Boolean), code: lines.slice(start, i + 1).join('\n') + '\n', line: start });
    i++;
  }
  return out;
}

/** A directory where `import ... from 'onair'` is this package. */
function workdir() {
  const dir = mkdtempSync(join(tmpdir(), 'onair-guide-'));
  mkdirSync(join(dir, 'node_modules'));
  symlinkSync(PACKAGE, join(dir, 'node_modules', 'onair'), 'dir');
  return dir;
}

/** The environment of a child: PATH finds `onair`; no node:test context leaks into it. @param {NodeJS.ProcessEnv} [extra] */
function childEnv(extra = {}) {
  /** @type {NodeJS.ProcessEnv} */
  const env = { ...process.env, PATH: `${join(ROOT, 'target/debug')}${delimiter}${process.env.PATH ?? ''}`, ...extra };
  delete env.NODE_TEST_CONTEXT;
  return env;
}

/** Runs `node file` in `dir`; its exit code, signal and output. @param {string} file @param {string} dir @param {NodeJS.ProcessEnv} env */
async function run(file, dir, env, ms = 60_000) {
  const child = spawn(process.execPath, [file], { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (d) => (output += d));
  child.stderr.on('data', (d) => (output += d));
  const timer = setTimeout(() => child.kill('SIGKILL'), ms);
  const [code, signal] = await once(child, 'exit');
  clearTimeout(timer);
  return { code, signal, output };
}

/** Waits until `condition()` holds (every 20 ms); fails after `ms`. @param {string} what @param {() => unknown} condition */
async function until(what, condition, ms = 15_000) {
  for (const deadline = Date.now() + ms; !(await condition()); await sleep(20)) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
  }
}

/** A bot block against its own emulator: greets, answers, thanks, saves its files, exits 0 on SIGINT. */
async function runBot(/** @type {string} */ file, /** @type {string} */ dir) {
  const emu = await emulator();
  /** @type {import('node:child_process').ChildProcess | undefined} */
  let child;
  try {
    const { code } = await emu.control('/consent', {});
    await emu.control('/state', { botManager: true });
    await emu.control('/live/start', {});
    child = spawn(process.execPath, [file], {
      cwd: dir,
      env: childEnv({
        ONAIR_BASE_URL: emu.baseUrl,
        ONAIR_CLIENT_ID: emu.clientId,
        ONAIR_CLIENT_SECRET: emu.clientSecret,
        ONAIR_CODE: code,
        ONAIR_REDIRECT_URI: emu.redirectUri,
      }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout?.on('data', (d) => (output += d));
    child.stderr?.on('data', (d) => (output += d));
    const exited = once(child, 'exit');
    try {
      await until('the bot\'s stream', async () => (await emu.control('/state')).openStreams === 1);
    } catch (e) {
      throw new Error(`${e instanceof Error ? e.message : e}; the bot said: ${output}`);
    }
    const mina = { id: 'u1', nickname: 'Mina' };
    /** @type {[string, object][]} */
    const events = [
      ['presence', { user: mina }],
      ['chat', { user: mina, message: '!hi' }],
      ['donation', { user: mina, amount: 500 }],
    ];
    for (const [event, data] of events) {
      assert.equal((await emu.control('/emit', { event, data })).delivered, 1, event);
    }
    const said = async () => (await emu.control('/chat')).messages.map((/** @type {any} */ m) => m.message);
    await until('three answers', async () => (await said()).length >= 3);
    // The kit's texts or the bot's own: a welcome, the answer, a thanks, each naming Mina.
    const [welcome, hello, thanks, ...more] = await said();
    assert.match(welcome, /^Welcome, Mina!/);
    assert.equal(hello, 'Hello, Mina!');
    assert.match(thanks, /^Thank you\b.*\bMina!$/);
    assert.deepEqual(more, []);
    await until('the kit state file', () => existsSync(join(dir, 'state.json')));
    const bot = child;
    bot.kill('SIGINT');
    const timer = setTimeout(() => bot.kill('SIGKILL'), 10_000);
    const [exitCode, signal] = await exited;
    clearTimeout(timer);
    assert.equal(signal, null, `killed: ${output}`);
    assert.equal(exitCode, 0, output);
    assert.match(output, /stopped: shut down/);
    for (const name of ['tokens.json', 'state.json']) assert.equal(statSync(join(dir, name)).mode & 0o777, 0o600, name);
    assert.equal(JSON.parse(readFileSync(join(dir, 'tokens.json'), 'utf8')).format, 'onair.tokens');
    assert.equal(JSON.parse(readFileSync(join(dir, 'state.json'), 'utf8')).people.u1.greeted, true);
  } finally {
    if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await emu.close();
  }
}

const guide = blocks(readFileSync(GUIDE, 'utf8'));
const js = guide.filter((b) => b.lang === 'js');
const ts = guide.filter((b) => b.lang === 'ts');

test('the guide has its programs: a bot against the emulator, a test, the TypeScript', () => {
  assert.ok(js.filter((b) => b.words.includes('emulator')).length >= 1);
  assert.ok(js.some((b) => b.code.includes("from 'node:test'")));
  assert.ok(ts.length >= 1);
  for (const b of guide) assert.ok(['js', 'ts', 'sh'].includes(b.lang), `docs/node.md:${b.line}: a ${b.lang} block is not run`);
});

for (const block of js) {
  const kind = block.words.includes('emulator') ? 'a bot against the emulator' : 'a program';
  test(`docs/node.md:${block.line}: ${kind}, exit 0`, async () => {
    const dir = workdir();
    try {
      writeFileSync(join(dir, 'block.mjs'), block.code);
      if (block.words.includes('emulator')) {
        await runBot('block.mjs', dir);
      } else {
        const r = await run('block.mjs', dir, childEnv());
        assert.equal(r.signal, null, `killed: ${r.output}`);
        assert.equal(r.code, 0, r.output);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
}

for (const block of ts) {
  test(`docs/node.md:${block.line}: TypeScript, tsc --strict`, async () => {
    assert.ok(existsSync(TSC), `${TSC}: scripts/test-node installs it`);
    const dir = workdir();
    try {
      writeFileSync(join(dir, 'block.ts'), block.code);
      const tsconfig = {
        compilerOptions: {
          noEmit: true, strict: true, target: 'es2022', lib: ['es2022', 'esnext.disposable', 'dom', 'dom.iterable'],
          module: 'nodenext', moduleResolution: 'nodenext', types: [],
        },
        files: ['block.ts'],
      };
      writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify(tsconfig));
      writeFileSync(join(dir, 'package.json'), '{ "type": "module" }');
      const child = spawn(TSC, ['-p', dir], { stdio: ['ignore', 'pipe', 'pipe'] });
      let output = '';
      child.stdout.on('data', (d) => (output += d));
      child.stderr.on('data', (d) => (output += d));
      const [code] = await once(child, 'exit');
      assert.equal(code, 0, output);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
}
