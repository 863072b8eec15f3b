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

/** The stored form of a token pair, from a bot that exchanged a code. */
function tokenFile() {
  const bot = new Bot({ baseUrl: BASE, clientId: CLIENT_ID, clientSecret: 's', seed: 1 });
  const now = Date.now();
  bot.poll(now);
  bot.authorize('code', 'https://bot/cb');
  const send = bot.poll(now);
  assert.ok(send.type === 'send');
  bot.onResponse(send.id, 200, [], JSON.stringify({ access_token: 'at', token_type: 'Bearer', expires_in: 3600, refresh_token: 'rt', scope: SCOPE }), now);
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
