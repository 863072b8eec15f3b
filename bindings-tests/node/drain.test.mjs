// A stop loses nothing the driver has received: chunks already in the
// stream's body when shutdown() is called (here put there in the same tick,
// before the read loop could take them) reach the bot before it stops, so
// the kit counts them and the state it saves holds them. The stream is a
// `fetch` of our own (the driver's `fetch` option), so the moment is exact.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Bot, Driver, MemoryStore } from 'onair';

const BASE = 'http://127.0.0.1:9';
const CLIENT_ID = '3f2504e0-4f89-11d3-9a0c-0305e82c3301';
const SCOPE = 'live.read events.chat events.presence events.like events.donation chat.send';
const encoder = new TextEncoder();
const like = (/** @type {string} */ id, /** @type {number} */ hearts) =>
  `event:like\ndata:${JSON.stringify({ user: { id, nickname: id }, type: 'PAID', totalAmount: hearts, amount: hearts, extraAmount: 0, combo: 1, time: 't' })}\n\n`;

/** The stored form of a token pair (of `scope`), from a bot that exchanged a code `agoMs` ago. */
function tokenFile(scope = SCOPE, agoMs = 0) {
  const bot = new Bot({ baseUrl: BASE, clientId: CLIENT_ID, clientSecret: 's', seed: 1 });
  const now = Date.now() - agoMs;
  bot.poll(now);
  bot.authorize('code', 'https://bot/cb');
  const send = bot.poll(now);
  assert.ok(send.type === 'send');
  bot.onResponse(send.id, 200, [], JSON.stringify({ access_token: 'at', token_type: 'Bearer', expires_in: 3600, refresh_token: 'rt', scope }), now);
  for (let i = 0; i < 100; i++) {
    const a = bot.poll(now);
    if (a.type === 'persistTokens') return a.tokens;
  }
  throw new Error('no token pair');
}

test('shutdown(): chunks the stream already holds are handed to the bot before it stops, counted and saved', async () => {
  /** @type {ReadableStreamDefaultController<Uint8Array> | null} */
  let stream = null;
  /** @param {string | URL | Request} input @param {RequestInit} [init] */
  const fetch = async (input, init) => {
    const url = String(input);
    if (url.endsWith('/v1/live/events')) {
      const body = new ReadableStream({ start: (c) => void (stream = c) });
      init?.signal?.addEventListener('abort', () => stream?.error(new Error('aborted')));
      return new Response(body, { status: 200, headers: { 'content-type': 'text/event-stream' } });
    }
    if (url.endsWith('/v1/live')) {
      const live = { liveId: 42, title: 't', startedAt: 't', closeAirTime: 't', listenerCount: 1, totalListenerCount: 1, welcomeMessage: '', isChatFrozen: false, categories: [], tags: [] };
      return new Response(JSON.stringify(live), { status: 200, headers: { 'content-type': 'application/json' } });
    }
    return new Response('{}', { status: 200, headers: { 'content-type': 'application/json' } });
  };
  const state = new MemoryStore();
  const driver = new Driver({
    baseUrl: BASE, clientId: CLIENT_ID, clientSecret: 's', seed: 1, fetch, signals: false, checkCredentials: false,
    tokens: new MemoryStore(tokenFile()), state, kit: { tally: true },
  });
  const running = driver.run();
  for (const deadline = Date.now() + 5_000; !(stream && driver.kit?.liveId === 42); await new Promise((r) => setTimeout(r, 10))) {
    assert.ok(Date.now() < deadline, `the stream and the broadcast: ${JSON.stringify(driver.bot.status())} ${JSON.stringify(driver.kit)} ${stream}`);
  }
  const open = /** @type {ReadableStreamDefaultController<Uint8Array>} */ (/** @type {unknown} */ (stream));
  // 50 frames arrive, and the stop comes in the same tick: none read yet.
  for (let i = 0; i < 50; i++) open.enqueue(encoder.encode(like(`u${i % 5}`, 3)));
  const stopping = driver.shutdown();
  assert.equal(driver.kit?.tally.hearts, 0, 'nothing read before the shutdown');
  await stopping;
  const stop = await running;
  assert.equal(stop?.code, 'shut_down');
  assert.equal(driver.kit?.tally.hearts, 150, 'every frame the stream held was counted');
  const saved = JSON.parse(state.load() ?? '{}');
  assert.equal(saved.format, 'onair.kit');
  const restarted = new Bot({ baseUrl: BASE, clientId: CLIENT_ID, clientSecret: 's', kit: { tally: true }, kitState: state.load() });
  assert.equal(restarted.kit?.tally.hearts, 150, 'and the state saved as it stopped holds them');
});

test('shutdown(): the bot drops a call that never answers, awaits the refresh in flight, and its pair is saved before the stop', async () => {
  const scope = 'fans.read chat.send';
  let refreshes = 0;
  let fansSent = false;
  /** @type {() => void} */
  let refreshSent = () => {};
  const refreshing = new Promise((resolve) => void (refreshSent = () => resolve(undefined)));
  /** @param {string | URL | Request} input @param {RequestInit} [init] */
  const fetch = async (input, init) => {
    if (String(input).endsWith('/v1/oauth/token')) {
      refreshes++;
      refreshSent();
      await new Promise((resolve) => setTimeout(resolve, 400)); // answered after the shutdown
      const pair = { access_token: 'at2', token_type: 'Bearer', expires_in: 3600, refresh_token: 'rt2', scope };
      return new Response(JSON.stringify(pair), { status: 200, headers: { 'content-type': 'application/json' } });
    }
    fansSent = true;
    /** @type {Promise<Response>} */
    const never = new Promise((_, reject) => init?.signal?.addEventListener('abort', () => reject(new DOMException('aborted', 'AbortError'))));
    return never;
  };
  // Issued 55 minutes ago: the refresh is due at once.
  const tokens = new MemoryStore(tokenFile(scope, 55 * 60_000));
  const driver = new Driver({
    baseUrl: BASE, clientId: CLIENT_ID, clientSecret: 's', seed: 1, fetch, signals: false, checkCredentials: false, events: false, tokens, logger: null,
  });
  driver.fetchFans();
  /** @type {string[]} */
  const seen = [];
  const running = (async () => {
    for await (const action of driver) {
      seen.push(action.type === 'done' && action.result.kind === 'failed' ? `done ${action.result.failure}` : action.type);
    }
  })();
  await refreshing;
  for (const deadline = Date.now() + 5_000; !fansSent; await new Promise((r) => setTimeout(r, 10))) {
    assert.ok(Date.now() < deadline, 'the call is sent');
  }
  const started = Date.now();
  await driver.shutdown();
  await running;
  assert.ok(seen.includes('done cancelled'), `the call dropped is answered: ${seen}`);
  assert.deepEqual(seen.slice(-2), ['persistTokens', 'stopped'], `the pair, then the stop, last: ${seen}`);
  assert.equal(refreshes, 1);
  assert.equal(JSON.parse(tokens.load() ?? '{}').access_token, 'at2', 'the new pair is saved');
  assert.ok(Date.now() - started >= 200, 'the refresh was awaited');
});
