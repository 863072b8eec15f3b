// A scripted Bot session from Node with canned responses: consent, token
// exchange, the stream, events, chat, the one-refresh rule, misuse, stops,
// saved tokens.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Bot, MisuseError, CallError, ConfigError, TokensError, TimerError, fetchArgs } from 'onair';

const BASE = 'http://127.0.0.1:9';
const CLIENT_ID = '3f2504e0-4f89-11d3-9a0c-0305e82c3301';
const SCOPE = 'live.read listeners.read fans.read events.chat events.presence events.like events.donation chat.send';

/** @param {string} access @param {string} refresh */
const tokenBody = (access, refresh) =>
  JSON.stringify({ access_token: access, token_type: 'Bearer', expires_in: 3600, refresh_token: refresh, scope: SCOPE });

/** Polls until `wait`; returns the actions before it and the wait. @param {Bot} bot @param {number} now */
function drain(bot, now) {
  /** @type {import('onair').Action[]} */
  const actions = [];
  for (let i = 0; i < 100; i++) {
    const a = bot.poll(now);
    if (a.type === 'wait') return { actions, wait: a };
    actions.push(a);
    if (a.type === 'stopped' || a.type === 'needsAuthorization') return { actions, wait: null };
  }
  throw new Error('poll never returned wait');
}

/** @param {import('onair').Action[]} actions @param {string} type */
function one(actions, type) {
  const found = actions.filter((a) => a.type === type);
  assert.equal(found.length, 1, `one ${type} in ${JSON.stringify(actions.map((a) => a.type))}`);
  return found[0];
}

/** A bot through consent and the exchange, with its stream opened. */
function connected() {
  const bot = new Bot({ baseUrl: BASE, clientId: CLIENT_ID, clientSecret: 'shh', seed: 7 });
  assert.deepEqual(bot.poll(0), { type: 'needsAuthorization' });
  bot.authorize('code-1', 'https://bot.example/cb');
  const send = bot.poll(0);
  assert.ok(send.type === 'send');
  assert.equal(send.request.endpoint, 'token');
  assert.equal(send.request.method, 'POST');
  assert.equal(send.timeoutMs, 30_000);
  assert.match(send.request.body, /grant_type=authorization_code/);
  bot.onResponse(send.id, 200, [['content-type', 'application/json']], tokenBody('at-1', 'rt-1'), 10);
  const { actions } = drain(bot, 10);
  const persist = one(actions, 'persistTokens');
  assert.ok(persist.type === 'persistTokens');
  assert.equal(persist.generation, 1);
  const open = one(actions, 'openStream');
  assert.ok(open.type === 'openStream');
  assert.equal(open.request.url, `${BASE}/v1/live/events`);
  assert.ok(open.request.headers.some(([n, v]) => n.toLowerCase() === 'authorization' && v === 'Bearer at-1'));
  return { bot, streamId: open.id, tokens: persist.tokens };
}

test('consent, exchange, stream, events in order', () => {
  const { bot, streamId } = connected();
  bot.onStreamOpen(streamId, 200, { 'content-type': 'text/event-stream' }, 20);
  const frame =
    'id:1-0\nevent:chat\ndata:{"user":{"id":"u1","nickname":"Mina"},"isDj":false,"message":"!hello","sentTime":"t"}\n\n' +
    ':heartbeat\n\n' +
    'event:donation\ndata:{"user":{"id":"u1","nickname":null},"amount":500,"message":null,"time":"t"}\n\n' +
    'event:poll\ndata:{}\n\n';
  const bytes = new TextEncoder().encode(frame);
  bot.onStreamBytes(streamId, bytes.subarray(0, 50), 21);
  bot.onStreamBytes(streamId, bytes.subarray(50), 22);
  const { actions, wait } = drain(bot, 22);
  const types = actions.map((a) => (a.type === 'event' ? a.event : a.type));
  assert.deepEqual(types, ['chat', 'donation', 'notice']);
  const [chat, donation, notice] = actions;
  assert.ok(chat.type === 'event' && chat.event === 'chat');
  assert.equal(chat.data.message, '!hello');
  assert.equal(chat.id, '1-0');
  assert.ok(donation.type === 'event' && donation.event === 'donation');
  assert.equal(donation.data.amount, 500);
  assert.equal(donation.data.user.nickname, null);
  assert.ok(notice.type === 'notice' && notice.notice.kind === 'unknownEvent');
  assert.equal(notice.notice.event, 'poll');
  assert.ok(wait && wait.untilMs !== null && wait.untilMs > 22);
});

test('a chat call goes out, 204 answers it', () => {
  const { bot } = connected();
  const call = bot.sendChat('hello there');
  assert.equal(bot.pendingCalls, 1);
  const { actions } = drain(bot, 30);
  const send = one(actions, 'send');
  assert.ok(send.type === 'send');
  assert.equal(send.request.endpoint, 'chat');
  assert.equal(JSON.parse(send.request.body).message, 'hello there');
  const [url, init] = fetchArgs(send.request);
  assert.equal(url, `${BASE}/v1/live/chat`);
  assert.equal(init.method, 'POST');
  assert.equal(init.body, send.request.body);
  bot.onResponse(send.id, 204, [], '', 40);
  const done = one(drain(bot, 40).actions, 'done');
  assert.ok(done.type === 'done');
  assert.equal(done.call, call);
  assert.deepEqual(done.result, { kind: 'chatSent' });
  assert.equal(bot.pendingCalls, 0);
});

test('a GET has no body for fetch', () => {
  const { bot } = connected();
  bot.fetchBroadcast();
  const send = one(drain(bot, 30).actions, 'send');
  assert.ok(send.type === 'send');
  const [, init] = fetchArgs(send.request, { signal: AbortSignal.timeout(1000) });
  assert.equal(init.method, 'GET');
  assert.equal('body' in init, false);
  assert.ok(init.signal);
  const body = {
    liveId: 42, title: 'Night', startedAt: 't', closeAirTime: 't', listenerCount: 3,
    totalListenerCount: 9, welcomeMessage: null, isChatFrozen: false, categories: [], tags: null,
  };
  bot.onResponse(send.id, 200, [], JSON.stringify(body), 31);
  const done = one(drain(bot, 31).actions, 'done');
  assert.ok(done.type === 'done' && done.result.kind === 'broadcast');
  assert.equal(done.result.broadcast.liveId, 42);
  assert.equal(done.result.broadcast.welcomeMessage, '');
  assert.deepEqual(done.result.broadcast.tags, []);
});

test('401 on a call: one refresh, then the call once more', () => {
  const { bot } = connected();
  const call = bot.fetchFans();
  const first = one(drain(bot, 30).actions, 'send');
  assert.ok(first.type === 'send');
  bot.onResponse(first.id, 401, [], '{"status":401,"detailCode":"OAPI_MNGR_0201","message":"expired"}', 31);
  const { actions } = drain(bot, 31);
  const refresh = one(actions, 'send');
  assert.ok(refresh.type === 'send');
  assert.equal(refresh.request.endpoint, 'token');
  assert.match(refresh.request.body, /grant_type=refresh_token/);
  assert.ok(actions.some((a) => a.type === 'notice' && a.notice.kind === 'problem' && a.notice.problem.kind === 'unauthorized'));
  bot.onResponse(refresh.id, 200, [], tokenBody('at-2', 'rt-2'), 32);
  const after = drain(bot, 32).actions;
  one(after, 'persistTokens');
  const retry = after.find((a) => a.type === 'send' && a.request.endpoint === 'fans');
  assert.ok(retry && retry.type === 'send');
  assert.ok(retry.request.headers.some(([, v]) => v === 'Bearer at-2'));
  bot.onResponse(retry.id, 401, [], '', 33);
  const stopped = drain(bot, 33);
  const stop = stopped.actions.find((a) => a.type === 'stopped');
  assert.ok(stop && stop.type === 'stopped');
  assert.equal(stop.stop.code, 'reauthorize');
  assert.ok(bot.stop && bot.stop.code === 'reauthorize');
  assert.equal(typeof (bot.stop.code === 'reauthorize' && bot.stop.reason), 'string');
  // A new consent code resumes the bot and the call completes.
  bot.authorize('code-2', 'https://bot.example/cb');
  const exchange = one(drain(bot, 40).actions, 'send');
  assert.ok(exchange.type === 'send' && exchange.request.endpoint === 'token');
  bot.onResponse(exchange.id, 200, [], tokenBody('at-3', 'rt-3'), 41);
  const resumed = drain(bot, 41).actions;
  const again = resumed.find((a) => a.type === 'send' && a.request.endpoint === 'fans');
  assert.ok(again && again.type === 'send');
  bot.onResponse(again.id, 200, [], '{"totalCount":1,"fans":[{"id":"u1","nickname":"M","rank":1,"coinCount":null}]}', 42);
  const done = drain(bot, 42).actions.find((a) => a.type === 'done');
  assert.ok(done && done.type === 'done');
  assert.equal(done.call, call);
  assert.ok(done.result.kind === 'fans');
  assert.deepEqual(done.result.fans.fans[0], { id: 'u1', nickname: 'M', rank: 1, coinCount: null });
});

test('a failed call narrows to its failure', () => {
  const { bot } = connected();
  bot.fetchBroadcast();
  const send = one(drain(bot, 30).actions, 'send');
  assert.ok(send.type === 'send');
  bot.onResponse(send.id, 404, [], '{"status":404,"detailCode":"OAPI_MNGR_0301","message":"off air"}', 31);
  const done = one(drain(bot, 31).actions, 'done');
  assert.ok(done.type === 'done' && done.result.kind === 'failed');
  assert.ok(done.result.failure === 'problem');
  assert.equal(done.result.problem.kind, 'not_on_air');
});

test('a stream ended by RECONNECT reconnects at once', () => {
  const { bot, streamId } = connected();
  bot.onStreamOpen(streamId, 200, [], 20);
  bot.onStreamBytes(streamId, 'event:end\ndata:{"reason":"RECONNECT"}\n\n', 21);
  const { actions } = drain(bot, 21);
  assert.deepEqual(actions.map((a) => a.type), ['event', 'closeStream', 'openStream']);
  const [end, close, next] = actions;
  assert.ok(end.type === 'event' && end.event === 'end' && end.data.reason === 'RECONNECT');
  assert.ok(close.type === 'closeStream' && close.id === streamId);
  assert.ok(next.type === 'openStream' && next.id !== streamId);
  // The close of the old connection, reported late, is harmless.
  bot.onStreamClosed(streamId, 22);
  assert.deepEqual(drain(bot, 22).actions, []);
});

test('misuse throws MisuseError and changes nothing', () => {
  const { bot, streamId } = connected();
  assert.throws(() => bot.onResponse(999, 200, [], '', 20), (e) => e instanceof MisuseError && e.kind === 'unknown_request');
  assert.throws(() => bot.onStreamBytes(streamId, 'x', 20), (e) => e instanceof MisuseError && e.kind === 'stream_not_started');
  bot.onStreamOpen(streamId, 200, [], 21);
  bot.onStreamBytes(streamId, ':heartbeat\n\n', 21);
});

test('a chat the server would refuse throws CallError; every other call is answered by its done', () => {
  const bot = new Bot({ baseUrl: BASE, clientId: CLIENT_ID, clientSecret: 's', seed: 1 });
  assert.throws(() => bot.sendChat('   '), (e) => e instanceof CallError && e.kind === 'chat_empty');
  assert.throws(() => bot.sendChat('a'.repeat(201)), (e) => e instanceof CallError && e.kind === 'chat_too_long');
  const chat = bot.sendChat('a'.repeat(200));
  assert.equal(typeof chat, 'number');
  bot.shutdown();
  const fans = bot.fetchFans();
  const held = bot.poll(1);
  assert.ok(held.type === 'notice' && held.notice.kind === 'callHeld' && held.notice.call === chat);
  const cancelled = bot.poll(1);
  assert.ok(cancelled.type === 'done' && cancelled.result.kind === 'failed');
  assert.equal(cancelled.result.failure, 'cancelled');
  // Every call given up on is said at level warn (what the driver logs).
  const gaveUp = bot.poll(1);
  assert.ok(gaveUp.type === 'notice' && gaveUp.notice.kind === 'gaveUp' && gaveUp.notice.endpoint === 'chat' && gaveUp.notice.count === 1);
  assert.equal(gaveUp.notice.level, 'warn');
  assert.equal(gaveUp.notice.message, 'gave up 1 chat message: cancelled (its broadcast ended, or the bot stopped)');
  const refused = bot.poll(1);
  assert.ok(refused.type === 'done' && refused.call === fans && refused.result.kind === 'failed');
  assert.ok(refused.result.failure === 'stopped' && refused.result.stop.code === 'shut_down');
  const gaveUpFans = bot.poll(1);
  assert.ok(gaveUpFans.type === 'notice' && gaveUpFans.notice.kind === 'gaveUp' && gaveUpFans.notice.endpoint === 'fans');
  const stopped = bot.poll(1);
  assert.ok(stopped.type === 'stopped' && stopped.stop.code === 'shut_down');
  assert.deepEqual(bot.poll(2), stopped, 'sticky');
});

test('bad configuration and bad stored tokens throw typed errors', () => {
  assert.throws(
    () => new Bot({ baseUrl: 'not a url', clientId: CLIENT_ID, clientSecret: 's' }),
    (e) => e instanceof ConfigError && e.kind === 'invalid_base_url',
  );
  assert.throws(
    () => new Bot({ baseUrl: BASE, clientId: CLIENT_ID, clientSecret: 's', tokens: '{"format":"other"}' }),
    (e) => e instanceof TokensError,
  );
});

test('saved tokens resume without consent; the stored form is a string', () => {
  const { tokens } = connected();
  assert.equal(typeof tokens, 'string');
  const bot = new Bot({ baseUrl: BASE, clientId: CLIENT_ID, clientSecret: 'shh', tokens, seed: 3 });
  assert.equal(bot.tokens(), tokens);
  const { actions } = drain(bot, 20);
  assert.ok(!actions.some((a) => a.type === 'needsAuthorization'));
  const open = one(actions, 'openStream');
  assert.ok(open.type === 'openStream');
  assert.ok(open.request.headers.some(([, v]) => v === 'Bearer at-1'));
});

test('a stream-only bot never asks for GET /v1/live', () => {
  const { bot, streamId } = connected();
  bot.onStreamOpen(streamId, 200, [], 20);
  /** @type {string[]} */
  const endpoints = [];
  let now = 20;
  for (let i = 0; i < 50; i++) {
    now += 5_000;
    bot.onStreamBytes(streamId, ':heartbeat\n\n', now);
    for (const a of drain(bot, now).actions) {
      if (a.type === 'send' || a.type === 'openStream') endpoints.push(a.request.endpoint);
    }
  }
  assert.ok(!endpoints.includes('live'), endpoints.join(','));
});

test('app timers come as timer actions, folded into wait', () => {
  const { bot } = connected();
  bot.schedule(5_000, 'once');
  bot.every(2_000, 'tick', 3_000);
  const early = drain(bot, 100);
  assert.ok(early.wait && early.wait.untilMs !== null && early.wait.untilMs <= 3_000);
  const at3 = drain(bot, 3_000).actions;
  assert.deepEqual(at3, [{ type: 'timer', tag: 'tick' }]);
  const at5 = drain(bot, 5_000).actions.filter((a) => a.type === 'timer');
  assert.deepEqual(at5.map((a) => a.type === 'timer' && a.tag).sort(), ['once', 'tick']);
  assert.equal(bot.cancelTimer('tick'), true);
  assert.equal(bot.cancelTimer('tick'), false);
  assert.deepEqual(drain(bot, 9_000).actions.filter((a) => a.type === 'timer'), []);
  assert.throws(() => bot.every(0, 'z', 1), (e) => e instanceof TimerError && e.kind === 'zero_period');
  assert.throws(() => bot.schedule(1, ''), (e) => e instanceof TimerError && e.kind === 'bad_tag');
});

test('a timer set whileConnected fires only while the stream is connected', () => {
  const { bot, streamId } = connected();
  bot.every(1_000, 'remind', 2_000, { whileConnected: true });
  bot.every(1_000, 'always', 2_000);
  const timers = (/** @type {number} */ now) => drain(bot, now).actions.flatMap((a) => (a.type === 'timer' ? [a.tag] : []));
  assert.deepEqual(timers(2_500), ['always'], 'the stream is not open yet');
  bot.onStreamOpen(streamId, 200, [], 2_600);
  assert.deepEqual(timers(3_000).sort(), ['always', 'remind']);
  assert.throws(() => bot.every(1_000, 'x', 0, { whileConnected: /** @type {any} */ ('yes') }), /whileConnected must be true or false, not a string/);
});

test('status: the connection narrows by state, counters count', () => {
  const fresh = new Bot({ baseUrl: BASE, clientId: CLIENT_ID, clientSecret: 's', seed: 1 });
  assert.deepEqual(fresh.status(0).connection, { state: 'needsAuthorization' });
  const { bot, streamId } = connected();
  bot.onStreamOpen(streamId, 200, [], 20);
  bot.onStreamBytes(streamId, ':heartbeat\n\nevent:like\ndata:{"user":{"id":"u"},"type":"FREE","totalAmount":1,"amount":1,"extraAmount":0,"combo":null,"time":"t"}\n\n', 21);
  drain(bot, 21);
  const status = bot.status(22);
  assert.ok(status.connection.state === 'connected');
  assert.equal(status.connection.sinceMs, 20);
  assert.equal(status.counters.like, 1);
  assert.equal(status.counters.heartbeats, 1);
  assert.equal(status.tokenGeneration, 1);
  assert.ok(status.scope.includes('chat.send'));
  assert.ok(!JSON.stringify(status).includes('at-1'), 'no secret in the status');
  bot.shutdown();
  const stopped = bot.status(23).connection;
  assert.ok(stopped.state === 'stopped' && stopped.code === 'shut_down');
});

test('shutdownGraceMs: a shutdown waits that long for a token request in flight, then stops', () => {
  for (const grace of [500, 0]) {
    const bot = new Bot({ baseUrl: BASE, clientId: CLIENT_ID, clientSecret: 'shh', seed: 7, shutdownGraceMs: grace });
    assert.deepEqual(bot.poll(1000), { type: 'needsAuthorization' });
    bot.authorize('code-1', 'https://bot.example/cb');
    assert.equal(bot.poll(1000).type, 'send');
    bot.shutdown();
    let now = 1000;
    let stopped = null;
    for (let i = 0; i < 20 && stopped === null; i++) {
      const a = bot.poll(now);
      if (a.type === 'stopped') stopped = a;
      else if (a.type === 'wait' && a.untilMs != null) now = a.untilMs;
    }
    assert.equal(stopped?.stop.code, 'shut_down');
    assert.equal(now, 1000 + grace, `stopped after the grace of ${grace} ms`);
  }
  assert.throws(
    () => new Bot({ baseUrl: BASE, clientId: CLIENT_ID, clientSecret: 'shh', shutdownGraceMs: -1 }),
    (e) => e instanceof ConfigError && e.key === 'shutdownGraceMs',
  );
});
