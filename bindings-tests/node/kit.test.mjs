// The kit and the tally from Node: chat splitting, commands, greet-once,
// milestones, per-broadcast totals.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  Audience, Commands, Decoder, Milestones, Tally, Timers, splitArgs, splitChat, truncateChat, OnairError, StateError,
  TimerError,
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

test('audience: people and one person, in JS idiom', () => {
  const audience = new Audience();
  audience.startBroadcast(7);
  const warm = `event:presence\ndata:${JSON.stringify({ user: { id: 'u3', nickname: 'Ari' }, type: 'JOIN', fanRank: 2, isManager: true, favoriteTemperature: 36.6, time: 't' })}\n\n`;
  for (const e of events(join('u1', 'Mina') + chat('u2', 'hi') + warm + join('u1', 'Mina'))) audience.onEvent(e);
  assert.deepEqual(audience.person('u3'), {
    user: { id: 'u3', nickname: 'Ari' }, joins: 1, isManager: true, fanRank: 2, favoriteTemperature: 36.6,
  });
  assert.equal(audience.person('nobody'), null);
  // Longest-unseen first: u2 (chat), u3, then u1 (seen again last).
  assert.deepEqual(audience.people().map((p) => [p.user.id, p.joins]), [['u2', 0], ['u3', 1], ['u1', 2]]);
  assert.deepEqual(Audience.fromJSON(audience.toJSON()).people(), audience.people());
  assert.deepEqual(new Audience().people(), []);
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
  assert.deepEqual(m.donor('u1'), { user: { id: 'u1', nickname: 'd' }, donated: 1200, donations: 2, announced: 1000 });
  assert.equal(m.donor('u9'), null);
  assert.deepEqual(m.donors().map((d) => [d.user.id, d.donated]), [['u1', 1200], ['u2', 30]]);
  // Stored and loaded; the steps are given again.
  const again = Milestones.fromJSON(m.toJSON(), { donationsEvery: 1000 });
  assert.deepEqual(again.donors(), m.donors());
  const more = again.onEvent(events(donation('u2', 1000))[0]);
  assert.ok(more && more.milestone === 'donated' && more.total === 1030 && more.reached === 1000);
  assert.throws(() => Milestones.fromJSON('{"format":"onair.audience"}'), (e) => e instanceof StateError);
  again.endBroadcast();
  assert.deepEqual([again.donors(), again.totalDonated], [[], 0]);
});

test('timers: one-shot and repeating, in deadline order, on schedule', () => {
  const timers = new Timers();
  timers.every(1000, 'tick', 0);
  timers.schedule(500, 'once');
  timers.schedule(100, 'live', { whileConnected: true });
  assert.equal(timers.size, 3);
  assert.deepEqual(timers.tags().sort(), ['live', 'once', 'tick']);
  assert.equal(timers.nextDeadline(), 0);
  assert.equal(timers.deadline('once'), 500);
  assert.equal(timers.deadline('none'), null);
  assert.equal(timers.popDue(0), 'tick');
  assert.equal(timers.popDue(0), null);
  // Disconnected: the while-connected timer waits, the others fire.
  assert.equal(timers.popDue(600, false), 'once');
  assert.equal(timers.popDue(600, false), null);
  assert.equal(timers.popDue(600, true), 'live');
  // A long pause fires a repeating timer once, then it keeps its phase.
  assert.equal(timers.popDue(5500), 'tick');
  assert.equal(timers.popDue(5500), null);
  assert.equal(timers.deadline('tick'), 6000);
  assert.equal(timers.cancel('tick'), true);
  assert.equal(timers.cancel('tick'), false);
  assert.equal(timers.nextDeadline(), null);
  assert.throws(() => timers.every(0, 'x', 0), (e) => e instanceof TimerError && e.kind === 'zero_period');
  assert.throws(() => timers.schedule(0, ''), (e) => e instanceof TimerError && e.kind === 'bad_tag');
  timers.free();
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
