// The kit from Node: its pure helpers (chat splitting, truncation, UTF-16
// length, arguments) and the configured kit inside the Bot (commands,
// greetings, milestones, the tally, its state across a restart, say).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Bot, ConfigError, StateError, splitArgs, splitChat, truncateChat, utf16Len } from 'onair';

const BASE = 'http://127.0.0.1:9';
const CLIENT_ID = '3f2504e0-4f89-11d3-9a0c-0305e82c3301';
const SCOPE = 'live.read events.chat events.presence events.like events.donation chat.send';
const TOKENS = JSON.stringify({ access_token: 'at', token_type: 'Bearer', expires_in: 3600, refresh_token: 'rt', scope: SCOPE });
const KIT = {
  commands: [{ name: 'hello', aliases: ['hi'] }, { name: 'skip', allowed: /** @type {const} */ ('managers') }],
  greetings: { welcome_back_after_ms: 600_000 },
  milestones: { hearts_every: 100, donations_every: 1000 },
  tally: true,
};

/** @param {string} id @param {string | null} nick @param {boolean} [manager] */
const join = (id, nick, manager = false) =>
  `event:presence\ndata:${JSON.stringify({ user: { id, nickname: nick }, type: 'JOIN', fanRank: null, isManager: manager, favoriteTemperature: null, time: 't' })}\n\n`;
/** @param {string} id @param {string} message @param {boolean} [isDj] */
const chat = (id, message, isDj = false) =>
  `event:chat\ndata:${JSON.stringify({ user: { id, nickname: 'n' }, isDj, message, sentTime: 't' })}\n\n`;
/** @param {string} id @param {number} amount */
const donation = (id, amount) =>
  `event:donation\ndata:${JSON.stringify({ user: { id, nickname: 'Dee' }, amount, message: null, time: 't' })}\n\n`;
/** @param {string} id @param {number} hearts */
const like = (id, hearts) =>
  `event:like\ndata:${JSON.stringify({ user: { id, nickname: 'L' }, type: 'PAID', totalAmount: hearts, amount: hearts, extraAmount: 0, combo: 1, time: 't' })}\n\n`;

/** Polls until the drain ends; the actions before. @param {Bot} bot @param {number} now */
function drain(bot, now) {
  /** @type {import('onair').Action[]} */
  const out = [];
  for (let i = 0; i < 1000; i++) {
    const a = bot.poll(now);
    if (a.type === 'wait' || a.type === 'stopped' || a.type === 'needsAuthorization') return out;
    out.push(a);
  }
  throw new Error('poll never ended the drain');
}

/** A bot with saved tokens, the kit configured, its stream open (GET /v1/live answered with `liveId`). */
function streaming(/** @type {string | undefined} */ kitState, liveId = 42) {
  const bot = new Bot({ baseUrl: BASE, clientId: CLIENT_ID, clientSecret: 's', seed: 1, tokens: tokenFile(), kit: KIT, kitState });
  const first = drain(bot, 1000);
  const open = first.find((a) => a.type === 'openStream');
  assert.ok(open && open.type === 'openStream');
  bot.onStreamOpen(open.id, 200, [], 1001);
  const more = drain(bot, 1001);
  const live = [...first, ...more].find((a) => a.type === 'send' && a.request.endpoint === 'live');
  if (live && live.type === 'send') {
    bot.onResponse(live.id, 200, [], JSON.stringify({ liveId, title: 't', startedAt: 't', closeAirTime: 't', listenerCount: 1, totalListenerCount: 1, welcomeMessage: '', isChatFrozen: false, categories: [], tags: [] }), 1002);
    drain(bot, 1002);
  }
  return { bot, stream: open.id };
}

/** The stored form of a token pair, from a bot that exchanged a code. */
function tokenFile() {
  const bot = new Bot({ baseUrl: BASE, clientId: CLIENT_ID, clientSecret: 's', seed: 1 });
  bot.poll(0);
  bot.authorize('code', 'https://bot/cb');
  const send = bot.poll(0);
  assert.ok(send.type === 'send');
  bot.onResponse(send.id, 200, [], TOKENS, 0);
  const persist = drain(bot, 0).find((a) => a.type === 'persistTokens');
  assert.ok(persist && persist.type === 'persistTokens');
  return persist.tokens;
}

test('splitChat never cuts an emoji and keeps every piece within 200 UTF-16 units', () => {
  const text = '👩‍👩‍👧 '.repeat(60);
  const parts = splitChat(text);
  assert.ok(parts.length > 1);
  for (const p of parts) {
    assert.ok(utf16Len(p) <= 200, `${p.length}`);
    assert.equal(utf16Len(p), p.length);
    assert.ok(!p.startsWith('\u200d'));
  }
  assert.equal(parts.join('').replace(/\s/g, ''), text.replace(/\s/g, ''));
});

test('truncateChat adds the ellipsis within the limit; splitArgs groups quoted words', () => {
  const t = truncateChat('🎵'.repeat(150));
  assert.ok(t.length <= 200);
  assert.ok(t.endsWith('…'));
  assert.equal(truncateChat('short'), 'short');
  assert.equal(truncateChat('abcdef', 4, '.'), 'abc.');
  assert.deepEqual(splitArgs('play "my song" now'), ['play', 'my song', 'now']);
  assert.equal(utf16Len('hi 😀'), 5);
});

test('a bad kit configuration throws a ConfigError naming the key', () => {
  /** @param {any} kit */
  const refused = (kit) => {
    try {
      new Bot({ baseUrl: BASE, clientId: CLIENT_ID, clientSecret: 's', kit });
    } catch (e) {
      assert.ok(e instanceof ConfigError, String(e));
      assert.equal(e.kind, 'kit');
      return e.key;
    }
    assert.fail('no error');
  };
  assert.equal(refused({ commands: [{ name: 'x', allowed: 'admins' }] }), 'commands[0].allowed');
  assert.equal(refused({ commands: [{ name: 'a' }, { name: 'A' }] }), 'commands[1].name');
  assert.equal(refused({ milestones: { hearts_every: 0 } }), 'milestones.hearts_every');
  assert.equal(refused({ tally: 1 }), 'tally');
  assert.equal(refused('{"prefx":"!"}'), 'prefx');
  assert.throws(
    () => new Bot({ baseUrl: BASE, clientId: CLIENT_ID, clientSecret: 's', kit: KIT, kitState: '{"format":"onair.kit","version":9}' }),
    (e) => e instanceof StateError && /version 9/.test(e.message),
  );
});

test('the configured kit: arrivals, commands (aliases, roles), milestones, behind the state they depend on', () => {
  const { bot, stream } = streaming(undefined);
  assert.equal(bot.kit?.liveId, 42);
  bot.onStreamBytes(stream, join('m1', 'Mod', true) + chat('m1', '!skip now') + chat('u1', '!HI there') + chat('u1', '!skip'), 2000);
  const actions = drain(bot, 2000);
  // When the kit hands out its state (persistState) is the core's rule (and its tests'): left out here.
  const types = actions
    .filter((a) => a.type !== 'persistState')
    .map((a) => (a.type === 'event' ? a.event : a.type === 'notice' ? a.notice.kind : a.type));
  assert.deepEqual(types, ['presence', 'arrival', 'chat', 'command', 'chat', 'arrival', 'command', 'chat', 'commandRefused']);
  const [skip, hi] = actions.filter((a) => a.type === 'command');
  assert.ok(skip.type === 'command' && skip.name === 'skip' && skip.role === 'manager');
  assert.deepEqual(skip.args, ['now']);
  assert.ok(hi.type === 'command' && hi.name === 'hello' && hi.event.data.message === '!HI there');
  const arrival = actions.find((a) => a.type === 'arrival');
  assert.ok(arrival && arrival.type === 'arrival');
  assert.equal(arrival.kind, 'first');
  assert.equal(arrival.liveId, 42);
  assert.equal(arrival.user.nickname, 'Mod');

  bot.onStreamBytes(stream, like('u2', 60) + like('u2', 60) + donation('u1', 700) + donation('u1', 400), 3000);
  const milestones = drain(bot, 3000).filter((a) => a.type === 'milestone');
  assert.equal(milestones.length, 2);
  const [hearts, given] = milestones;
  assert.ok(hearts.type === 'milestone' && hearts.kind === 'hearts');
  assert.equal(hearts.reached, 100);
  assert.ok(given.type === 'milestone' && given.kind === 'donated');
  assert.equal(given.user.id, 'u1');
  assert.equal(given.total, 1100);
  const tally = bot.kit?.tally;
  assert.ok(tally);
  assert.equal(tally.hearts, 120);
  assert.equal(tally.donated, 1100);
  assert.equal(tally.people.u1?.donations, 2);
});

test('the kit state: a restart greets nobody twice; LIVE_ENDED hands out the final tally', () => {
  const first = streaming(undefined);
  first.bot.onStreamBytes(first.stream, join('u1', 'Ann') + like('u1', 5), 2000);
  drain(first.bot, 2000);
  first.bot.shutdown();
  const states = drain(first.bot, 2001).filter((a) => a.type === 'persistState');
  const saved = first.bot.kitState();
  assert.ok(saved);
  if (states.length) assert.deepEqual(states.map((a) => a.type === 'persistState' && a.state).pop(), saved);

  const again = streaming(saved);
  again.bot.onStreamBytes(again.stream, join('u1', 'Ann') + join('u2', 'Bo'), 3000);
  const arrivals = drain(again.bot, 3000).filter((a) => a.type === 'arrival');
  assert.deepEqual(arrivals.map((a) => a.type === 'arrival' && a.user.id), ['u2']);
  again.bot.onStreamBytes(again.stream, 'event:end\ndata:{"reason":"LIVE_ENDED"}\n\n', 4000);
  const ended = drain(again.bot, 4000).find((a) => a.type === 'broadcastEnded');
  assert.ok(ended && ended.type === 'broadcastEnded');
  assert.equal(ended.liveId, 42);
  assert.equal(ended.tally.hearts, 5);
  assert.equal(ended.tally.attendance, 2);
  assert.equal(ended.event?.data.reason, 'LIVE_ENDED');
  assert.equal(again.bot.kit?.tally.hearts, 0);
});

test('say splits a long reply and queues every part; a blank one queues nothing', () => {
  const { bot } = streaming(undefined);
  const calls = bot.say('🎧'.repeat(150));
  assert.equal(calls.length, 2);
  assert.ok(calls.every((c) => typeof c === 'number'));
  assert.deepEqual(bot.say('   '), []);
  const sends = drain(bot, 5000).filter((a) => a.type === 'send' && a.request.endpoint === 'chat');
  assert.ok(sends.length >= 1);
  assert.equal(new Bot({ baseUrl: BASE, clientId: CLIENT_ID, clientSecret: 's' }).kit, null);
});
