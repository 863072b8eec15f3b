// Request builders, response decoders, backoff and quota headers from Node.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  Backoff, ConfigError, RequestError, ResponseError, decodeBroadcast, decodeFans, decodeListeners, fetchArgs, parseQuota,
  requests,
} from 'onair';

const BASE = 'https://api.example';
const client = { baseUrl: BASE, clientId: '3f2504e0-4f89-11d3-9a0c-0305e82c3301', clientSecret: 'shh' };

test('bearer requests carry the token and the right method and path', () => {
  const live = requests.live(BASE, 'at');
  assert.equal(live.endpoint, 'live');
  assert.equal(live.method, 'GET');
  assert.equal(live.url, `${BASE}/v1/live`);
  assert.ok(live.headers.some(([n, v]) => n === 'Authorization' && v === 'Bearer at'));
  assert.equal(requests.listeners(BASE, 'at', 'c 1/2').url, `${BASE}/v1/live/listeners?cursor=c%201%2F2`);
  assert.equal(requests.listeners(BASE, 'at').url, `${BASE}/v1/live/listeners`);
  assert.equal(requests.fans(BASE, 'at').url, `${BASE}/v1/live/fans`);
  assert.equal(requests.events(BASE, 'at').url, `${BASE}/v1/live/events`);
  const chat = requests.chat(BASE, 'at', 'hi 🎵');
  assert.equal(chat.method, 'POST');
  assert.deepEqual(JSON.parse(chat.body), { message: 'hi 🎵' });
  const [url, init] = fetchArgs(chat);
  assert.equal(url, `${BASE}/v1/live/chat`);
  assert.equal(init.body, chat.body);
});

test('token requests: issue, refresh, revoke', () => {
  const issue = requests.issueToken(client, 'code', 'https://bot/cb');
  assert.equal(issue.url, `${BASE}/v1/oauth/token`);
  assert.match(issue.body, /grant_type=authorization_code&code=code&redirect_uri=https%3A%2F%2Fbot%2Fcb/);
  assert.match(requests.refreshToken(client, 'rt').body, /grant_type=refresh_token/);
  assert.equal(requests.revokeToken(client, 'rt').url, `${BASE}/v1/oauth/revoke`);
});

test('bad input throws RequestError or ConfigError', () => {
  assert.throws(() => requests.chat(BASE, 'at', ' '), (e) => e instanceof RequestError && e.kind === 'chat_empty');
  assert.throws(() => requests.listeners(BASE, 'at', ''), (e) => e instanceof RequestError && e.kind === 'empty_cursor');
  assert.throws(() => requests.live(BASE, ''), (e) => e instanceof RequestError && e.kind === 'empty_value');
  assert.throws(() => requests.live('ftp://x', 'at'), (e) => e instanceof ConfigError);
});

test('response decoders: nulls become defaults, errors are typed', () => {
  const b = decodeBroadcast(
    '{"liveId":1,"title":"t","startedAt":"s","closeAirTime":"c","listenerCount":1,"totalListenerCount":2,"welcomeMessage":null,"isChatFrozen":false,"categories":null,"tags":["x"],"extra":1}',
  );
  assert.equal(b.welcomeMessage, '');
  assert.deepEqual(b.categories, []);
  assert.deepEqual(b.tags, ['x']);
  const page = decodeListeners('{"listeners":[{"id":"u","nickname":"n"}],"nextCursor":""}');
  assert.deepEqual(page, { listeners: [{ id: 'u', nickname: 'n' }], nextCursor: null });
  const fans = decodeFans('{"totalCount":1,"fans":[{"id":"u","nickname":"n","rank":1}]}');
  assert.equal(fans.fans[0].coinCount, null);
  assert.throws(() => decodeFans('{'), (e) => e instanceof ResponseError && e.kind === 'invalid_json');
  assert.throws(() => decodeBroadcast('{}'), (e) => e instanceof ResponseError && e.kind === 'invalid_body');
});

test('backoff: seeded, full jitter under the doubling ceiling, reset', () => {
  const a = new Backoff({ seed: 5 });
  const b = new Backoff({ seed: 5 });
  for (let i = 0; i < 8; i++) {
    const ceiling = a.ceilingMs(i);
    const d = a.nextDelayMs();
    assert.equal(d, b.nextDelayMs());
    assert.ok(d >= 0 && d <= ceiling && ceiling <= 30_000, `${d} <= ${ceiling}`);
  }
  assert.equal(a.attempt, 8);
  a.reset();
  assert.equal(a.attempt, 0);
  assert.ok(new Backoff({ seed: 1, baseMs: 10, capMs: 20 }).ceilingMs(5) <= 20);
});

test('quota headers: counters, scope, Retry-After as a delay; unreadable values are null', () => {
  const q = parseQuota(
    {
      'X-RateLimit-Remaining': '0',
      'x-ratelimit-replenish-rate': '10',
      'x-ratelimit-daily-remaining': '-1',
      'x-ratelimit-burst-capacity': 'lots',
      'x-ratelimit-daily-limit': '5000',
      'x-ratelimit-daily-reset': '1732300000',
      'x-ratelimit-daily-scope': 'chat.send',
      'Retry-After': 'Sun, 06 Nov 1994 08:49:37 GMT',
    },
    784_111_777_000 - 5000,
  );
  assert.deepEqual(q, {
    remaining: 0,
    replenishRate: 10,
    burstCapacity: null,
    dailyLimit: 5000,
    dailyRemaining: null,
    dailyResetS: 1732300000,
    dailyScope: 'chat.send',
    retryAfterPresent: true,
    retryAfterMs: 5000,
  });
  // The first of a repeated name wins; an unreadable Retry-After is present but unknown.
  const again = parseQuota([['x-ratelimit-remaining', '3'], ['X-RATELIMIT-REMAINING', '9'], ['retry-after', 'soon']]);
  assert.equal(again.remaining, 3);
  assert.equal(again.retryAfterPresent, true);
  assert.equal(again.retryAfterMs, null);
  assert.equal(parseQuota({ 'retry-after': '120' }).retryAfterMs, 120_000);
  assert.equal(parseQuota([]).retryAfterPresent, false);
});
