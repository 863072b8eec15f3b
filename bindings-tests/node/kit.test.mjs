// The kit and the tally from Node: chat splitting, commands, greet-once,
// milestones, per-broadcast totals.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  Audience, Commands, Decoder, Milestones, Tally, splitArgs, splitChat, truncateChat, OnairError, StateError,
} from 'onair';

/** @param {string} sse @returns {import('onair').OnairEvent[]} */
function events(sse) {
  const d = new Decoder();
  /** @type {import('onair').OnairEvent[]} */
  const out = [];
  for (const item of d.push(sse)) if (item.type === 'event') out.push(item);
  return out;
}

/** @param {string} id @param {string | null} nick @param {boolean} [manager] */
const join = (id, nick, manager = false) =>
  `event:presence\ndata:${JSON.stringify({ user: { id, nickname: nick }, type: 'JOIN', fanRank: null, isManager: manager, favoriteTemperature: null, time: 't' })}\n\n`;
/** @param {string} id @param {string} message @param {boolean} [isDj] */
const chat = (id, message, isDj = false) =>
  `event:chat\ndata:${JSON.stringify({ user: { id, nickname: 'n' }, isDj, message, sentTime: 't' })}\n\n`;
/** @param {string} id @param {number} amount */
const donation = (id, amount) =>
  `event:donation\ndata:${JSON.stringify({ user: { id, nickname: 'd' }, amount, message: null, time: 't' })}\n\n`;

test('splitChat never cuts an emoji and keeps every piece within 200 UTF-16 units', () => {
  const text = '👩‍👩‍👧 '.repeat(60);
  const parts = splitChat(text);
  assert.ok(parts.length > 1);
  for (const p of parts) {
    assert.ok(p.length <= 200, `${p.length}`);
    assert.ok(!p.startsWith('\u200d'));
  }
  assert.equal(parts.join('').replace(/\s/g, ''), text.replace(/\s/g, ''));
});

test('truncateChat adds the ellipsis within the limit', () => {
  const t = truncateChat('🎵'.repeat(150));
  assert.ok(t.length <= 200);
  assert.ok(t.endsWith('…'));
  assert.equal(truncateChat('short'), 'short');
  assert.equal(truncateChat('abcdef', 4, '.'), 'abc.');
});

test('splitArgs groups quoted words', () => {
  assert.deepEqual(splitArgs('play "my song" now'), ['play', 'my song', 'now']);
});

test('commands: prefix, args, roles from the audience', () => {
  const commands = new Commands().add('hello').add('skip', 'managers');
  const audience = new Audience();
  audience.startBroadcast(1);
  const evs = events(join('m1', 'Mod', true) + chat('m1', '!skip now') + chat('u1', '!SKIP') + chat('u1', '!hello  a "b c"') + chat('u1', 'hello'));
  audience.onEvent(evs[0]);
  const [skipOk, skipDenied, hello, none] = evs.slice(1).map((e) => commands.match(e, audience));
  assert.ok(skipOk && skipOk.ok);
  assert.equal(skipOk.role, 'manager');
  assert.deepEqual(skipOk.args, ['now']);
  assert.ok(skipDenied && !skipDenied.ok);
  assert.equal(skipDenied.needed, 'managers');
  assert.ok(hello && hello.ok);
  assert.equal(hello.name, 'hello');
  assert.deepEqual(hello.args, ['a', 'b c']);
  assert.equal(hello.user.id, 'u1');
  assert.equal(none, null);
  assert.equal(commands.match(evs[0]), null);
  assert.throws(() => commands.add('x', /** @type {any} */ ('root')), (e) => e instanceof OnairError);
});

test('audience: greet once, welcome back once', () => {
  const audience = new Audience();
  audience.startBroadcast(7);
  const evs = events(join('u1', 'Mina') + join('u1', 'Mina') + join('u1', 'Mina') + join('u2', null));
  const greetings = evs.map((e) => audience.onEvent(e));
  assert.deepEqual(greetings.map((g) => g && g.greeting), ['first', 'welcomeBack', null, 'first']);
  const first = greetings[0];
  assert.ok(first);
  assert.equal(first.presence.user.nickname, 'Mina');
  assert.equal(greetings[3]?.presence.user.nickname, null);
  assert.ok(audience.isPresent('u1'));
  assert.equal(audience.size, 2);
  const restored = Audience.fromJSON(audience.toJSON());
  assert.equal(restored.onEvent(evs[0]), null, 'remembered across a restart');
  assert.throws(() => Audience.fromJSON('{"format":"nope"}'), (e) => e instanceof StateError);
});

test('milestones: running donor totals and steps', () => {
  const m = new Milestones({ donationsEvery: 1000 });
  m.startBroadcast(1);
  const evs = events(donation('u1', 600) + donation('u1', 600) + donation('u2', 30));
  const reached = evs.map((e) => m.onEvent(e));
  assert.equal(reached[0], null);
  const r = reached[1];
  assert.ok(r && r.milestone === 'donated');
  assert.equal(r.user.id, 'u1');
  assert.equal(r.total, 1200);
  assert.equal(m.donatedBy('u1'), 1200);
  assert.equal(m.totalDonated, 1230);
});

test('tally: totals by person, the DJ excluded, in the ledger shape', () => {
  const tally = new Tally();
  tally.startBroadcast(1);
  const evs = events(join('u1', 'Mina') + join('u1', 'Mina') + donation('u1', 500) + chat('dj', 'hi', true) + chat('u1', 'yo'));
  for (const e of evs) assert.equal(tally.record(e), true);
  assert.deepEqual(tally.toJSON(), {
    hearts: 0,
    donated: 500,
    attendance: 1,
    people: { u1: { nickname: 'n', hearts: 0, paidHearts: 0, donated: 500, donations: 1, joins: 2, chats: 1 } },
  });
  assert.equal(JSON.stringify(new Tally()), '{"hearts":0,"donated":0,"attendance":0,"people":{}}');
});
