// Many bots of one app in one process share the app's daily quota: each
// bot's view merged into the app's (the core's merge, as `onair host` keeps
// it), and given back to every bot, it holds the calls it should.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Bot, OnairError, mergeDailyQuota } from 'onair';

const BASE = 'http://127.0.0.1:9';
const CLIENT_ID = '3f2504e0-4f89-11d3-9a0c-0305e82c3301';
const SCOPE = 'live.read listeners.read fans.read chat.send';
/** @type {[string, string][]} */
const JSON_TYPE = [['content-type', 'application/json']];
const TOKEN_BODY = JSON.stringify({ access_token: 'at', token_type: 'Bearer', expires_in: 3600, refresh_token: 'rt', scope: SCOPE });
const BROADCAST = JSON.stringify({
  liveId: 7, title: 'T', startedAt: 's', closeAirTime: 'c', listenerCount: 3, totalListenerCount: 9,
  welcomeMessage: '', isChatFrozen: false, categories: [], tags: [],
});
const T = 1_700_000_000_000;
const RESET = '1700003600'; // an hour after T, in seconds

/**
 * Polls until an action of `type`, moving the clock to each wait's end.
 * @template {import('onair').Action['type']} K
 * @param {Bot} bot @param {{ now: number }} clock @param {K} type
 * @returns {import('onair').ActionOf<K>}
 */
function pollUntil(bot, clock, type) {
  for (let i = 0; i < 80; i++) {
    const a = bot.poll(clock.now);
    if (a.type === type) return /** @type {import('onair').ActionOf<K>} */ (a);
    if (a.type === 'wait' && a.untilMs != null) clock.now = a.untilMs;
  }
  throw new Error(`no ${type}`);
}

/** A bot without the stream, its token exchange answered: it only calls. @param {{ now: number }} clock */
function callingBot(clock) {
  const bot = new Bot({ baseUrl: BASE, clientId: CLIENT_ID, clientSecret: 'shh', seed: 7, events: false });
  pollUntil(bot, clock, 'needsAuthorization');
  bot.authorize('code-1', 'https://bot.example/cb');
  const send = pollUntil(bot, clock, 'send');
  assert.equal(send.request.endpoint, 'token');
  bot.onResponse(send.id, 200, JSON_TYPE, TOKEN_BODY, clock.now);
  return bot;
}

/**
 * The next send of `endpoint` answered; the call's done.
 * @param {Bot} bot @param {{ now: number }} clock @param {string} endpoint @param {number} status
 * @param {import('onair').HeadersLike} headers @param {string} body
 */
function answer(bot, clock, endpoint, status, headers, body) {
  const send = pollUntil(bot, clock, 'send');
  assert.equal(send.request.endpoint, endpoint);
  bot.onResponse(send.id, status, headers, body, clock.now);
  return pollUntil(bot, clock, 'done');
}

test("two bots' views of the daily quota merged, and fed back, hold the calls they should", () => {
  const clockA = { now: T };
  const clockB = { now: T };
  const a = callingBot(clockA);
  const b = callingBot(clockB);
  assert.deepEqual(a.dailyQuota(clockA.now), { remaining: null, resetMs: null, blocks: [] });
  a.fetchBroadcast();
  answer(a, clockA, 'live', 200, [...JSON_TYPE, ['x-ratelimit-daily-remaining', '40'], ['x-ratelimit-daily-reset', RESET]], BROADCAST);
  a.fetchFans();
  answer(a, clockA, 'fans', 429, [['retry-after', '3600'], ['x-ratelimit-daily-scope', 'fans.read']], '');
  b.fetchBroadcast();
  answer(b, clockB, 'live', 200, [...JSON_TYPE, ['x-ratelimit-daily-remaining', '12'], ['x-ratelimit-daily-reset', RESET]], BROADCAST);
  b.listListeners();
  answer(b, clockB, 'listeners', 429, [['retry-after', '1800'], ['x-ratelimit-daily-scope', 'listeners.read']], '');
  const now = Math.max(clockA.now, clockB.now);

  const viewA = a.dailyQuota(now);
  const viewB = b.dailyQuota(now);
  assert.deepEqual([viewA.remaining, viewB.remaining], [40, 12]);
  const app = mergeDailyQuota(mergeDailyQuota(null, viewA, now), viewB, now);
  assert.deepEqual(app, {
    remaining: 12,
    resetMs: 1_700_003_600_000,
    blocks: [
      { scope: 'fans.read', untilMs: T + 3_600_000 },
      { scope: 'listeners.read', untilMs: T + 1_800_000 },
    ],
  });
  // The reset has come: the day's count and the blocks are gone.
  assert.deepEqual(mergeDailyQuota(app, { remaining: null, resetMs: null, blocks: [] }, 1_700_003_600_000), {
    remaining: null, resetMs: null, blocks: [],
  });

  // Given back, bot A holds what B learned: its listener call fails fast, no request.
  a.shareDailyQuota(app, now);
  const call = a.listListeners();
  const clock = { now };
  const done = pollUntil(a, clock, 'done');
  assert.equal(done.call, call);
  assert.deepEqual(done.result, { kind: 'failed', failure: 'quota_blocked', untilMs: T + 1_800_000 });
  a.fetchBroadcast();
  assert.equal(answer(a, clock, 'live', 200, JSON_TYPE, BROADCAST).result.kind, 'broadcast');
  assert.ok(a.dailyQuota(now).blocks.some((bl) => bl.scope === 'listeners.read' && bl.untilMs === T + 1_800_000));

  // Not a daily quota: the core says so; not an object: a TypeError.
  assert.throws(
    () => mergeDailyQuota(app, /** @type {any} */ ({ remaining: 'many' }), now),
    (e) => e instanceof OnairError && e.kind === 'invalid_argument' && /daily quota/.test(e.message),
  );
  assert.throws(() => a.shareDailyQuota(/** @type {any} */ ([40]), now), (e) => e instanceof TypeError && /^onair: /.test(e.message));
  a.free();
  b.free();
});
