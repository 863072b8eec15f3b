// Replies from Node: the kit's configured replies said by the bot itself
// (the default texts), a handler's returned text joining the merging of its
// kind while the broadcast's chat limit (429 OAPI_MNGR_0302, injected through
// the emulator's control API) holds the queue back, a stale reply dropped and
// logged at warn with its kind and count, the per-kind counters in the
// status, and what `reply` refuses. Against `onair serve` on 127.0.0.1.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Bot, CallError, Driver } from 'onair';
import { startEmulator, until } from './emulator.mjs';

/** The reference bots' kit (every language the same). */
const KIT = {
  commands: [{ name: 'hello' }, { name: 'top' }],
  greetings: { welcome_back_after_ms: 600000 },
  milestones: { hearts_every: 100, donations_every: 1000 },
  tally: true,
  replies: { commands: { hello: 'Hello, {nickname}!', top: 'Top donors: {top}' } },
};

/** @typedef {import('./emulator.mjs').Emulator} Emulator */

/**
 * An emulator on air with the bot one of the DJ's managers, and a driver on
 * it with `kit` (and `logger`), connected; the running `run()`.
 * @param {import('node:test').TestContext} t @param {object} kit @param {import('onair').DriverOptions['logger']} [logger]
 */
async function connected(t, kit, logger) {
  const emu = await startEmulator();
  /** @type {Driver | null} */
  let started = null;
  t.after(async () => {
    // A failed test leaves nothing running: the driver first, then the emulator.
    if (started !== null && started.stop === null) await started.shutdown();
    await emu.close();
  });
  const { code } = await emu.control('/consent', {});
  await emu.control('/state', { botManager: true });
  await emu.control('/live/start', {});
  const driver = new Driver({
    baseUrl: emu.baseUrl,
    clientId: emu.clientId,
    clientSecret: emu.clientSecret,
    signals: false,
    seed: 3,
    kit,
    logger,
    authorize: () => ({ code, redirectUri: emu.redirectUri }),
  });
  started = driver;
  const running = driver.run();
  await until(() => driver.bot.status().connection.state === 'connected', 'the stream');
  return { emu, driver, running };
}

/** The chat messages the emulator took, in order. @param {Emulator} emu @returns {Promise<string[]>} */
const chatLog = async (emu) => (await emu.control('/chat')).messages.map((/** @type {{ message: string }} */ m) => m.message);

/** @param {Emulator} emu @param {string} id @param {string} nickname */
const arrive = (emu, id, nickname) => emu.control('/emit', { event: 'presence', data: { user: { id, nickname } } });
/** @param {Emulator} emu @param {string} id @param {string} nickname @param {number} amount */
const donate = (emu, id, nickname, amount) => emu.control('/emit', { event: 'donation', data: { user: { id, nickname }, amount } });
/** @param {Emulator} emu @param {string} id @param {string | null} nickname @param {string} message */
const chat = (emu, id, nickname, message) => emu.control('/emit', { event: 'chat', data: { user: { id, nickname }, message } });

test('configured replies: the bot greets, thanks and answers with the default texts, no handler; driver.reply wakes the loop', async (t) => {
  const { emu, driver, running } = await connected(t, KIT);
  /** @param {number} n */
  const said = (n) => until(async () => (await chatLog(emu)).length >= n, `${n} chat messages`);
  await arrive(emu, 'u1', 'Mina');
  await said(1);
  await donate(emu, 'u2', 'Lucas', 500);
  await said(2);
  await chat(emu, 'u1', 'Mina', '!hello');
  await said(3);
  await chat(emu, 'u3', null, '!top');
  await said(5);
  driver.reply('welcome', { id: 'u9', nickname: 'Zoë' }, 'Zoë! Long time no see.');
  await said(6);
  // A donation is no greeting; a first chat is (a missing nickname is "friend").
  assert.deepEqual(await chatLog(emu), [
    'Welcome, Mina! 🎧',
    'Thank you, Lucas!',
    'Hello, Mina!',
    'Welcome, friend! 🎧',
    'Top donors: 1. Lucas 500',
    'Zoë! Long time no see.',
  ]);
  const replies = driver.bot.status().counters.replies;
  assert.deepEqual(
    [replies.welcome.messages, replies.welcome.people, replies.thanks.messages, replies.command.messages, replies.command.people],
    [3, 3, 1, 2, 2],
  );
  assert.equal(replies.welcome.merged + replies.thanks.merged + replies.welcome.dropped, 0);
  driver.shutdown();
  assert.equal((await running)?.code, 'shut_down');
});

test('the chat limit held: arrivals merge into one welcome, donation handlers\' texts into one thanks; alone, a text goes out as written', async (t) => {
  // The configured thanks is off (an empty text): the handler's own words
  // thank each donor, merged with the kit's text for many when chat is behind.
  const kit = { ...KIT, replies: { ...KIT.replies, thanks: '', thanks_many: 'Thank you, {nicknames}! 💜' } };
  const { emu, driver, running } = await connected(t, kit);
  driver.on('donation', (ev) => `Thank you for the ${ev.data.amount}, ${ev.data.user.nickname ?? 'friend'}!`);
  // A chat handler's text names nobody: said as it is.
  driver.on('chat', (ev) => (ev.data.message === 'ping' ? 'pong' : undefined));
  // The next three chat messages meet the broadcast's chat limit.
  await emu.control('/fail', { path: '/v1/live/chat', status: 429, detailCode: 'OAPI_MNGR_0302', times: 3 });
  await arrive(emu, 'a', 'Ana');
  await arrive(emu, 'b', '민지');
  await arrive(emu, 'c', 'Jörg');
  await donate(emu, 'a', 'Ana', 100);
  await donate(emu, 'b', '민지', 200);
  await until(async () => (await chatLog(emu)).length >= 2, 'the merged replies');
  await donate(emu, 'c', 'Jörg', 300);
  await chat(emu, 'b', '민지', 'ping');
  await until(async () => (await chatLog(emu)).length >= 4, 'the lone thanks and the pong');
  assert.deepEqual(await chatLog(emu), [
    'Welcome, Ana, 민지 and Jörg! 🎧',
    'Thank you, Ana and 민지! 💜',
    'Thank you for the 300, Jörg!',
    'pong',
  ]);
  const limited = (await emu.control('/requests?path=/v1/live/chat')).requests.filter((/** @type {{ status: number }} */ r) => r.status === 429);
  assert.equal(limited.length, 3, 'the limit was met three times');
  const replies = driver.bot.status().counters.replies;
  assert.deepEqual([replies.welcome.messages, replies.welcome.people, replies.welcome.merged], [1, 3, 3]);
  assert.deepEqual([replies.thanks.messages, replies.thanks.people, replies.thanks.merged], [2, 3, 2]);
  driver.shutdown();
  assert.equal((await running)?.code, 'shut_down');
});

test("handlers' returned texts: an arrival's is a welcome, a command's an answer, a text too long for one message is said in parts, anything else is ignored", async (t) => {
  const kit = {
    commands: [{ name: 'hello' }, { name: 'story' }],
    greetings: {},
    replies: { welcome: '', welcome_many: 'Hi {nicknames}!' },
  };
  const { emu, driver, running } = await connected(t, kit);
  const story = 'Once upon a time, '.repeat(15).trim();
  driver
    .on('arrival', (a) => `Hi ${a.user.nickname ?? 'friend'}, welcome to the booth!`)
    // @ts-expect-error: a handler returning what is not a string: nothing is said
    .on('presence', () => 42)
    .command('hello', async (c) => `Hello, ${c.user.nickname ?? 'friend'}!`)
    .command('story', () => story);
  await arrive(emu, 'a', 'Ana');
  await until(async () => (await chatLog(emu)).length >= 1, 'the welcome');
  await chat(emu, 'a', 'Ana', '!hello');
  await until(async () => (await chatLog(emu)).length >= 2, 'the answer');
  await chat(emu, 'a', 'Ana', '!story');
  await until(async () => (await chatLog(emu)).length >= 4, 'the story in two messages');
  const log = await chatLog(emu);
  assert.deepEqual(log.slice(0, 2), ['Hi Ana, welcome to the booth!', 'Hello, Ana!']);
  assert.equal(log.slice(2).join(' '), story);
  const replies = driver.bot.status().counters.replies;
  assert.deepEqual([replies.welcome.messages, replies.welcome.people, replies.command.messages], [1, 1, 1]);
  driver.shutdown();
  assert.equal((await running)?.code, 'shut_down');
});

test('a reply not out within its freshness is dropped, never sent late, and logged at warn with its kind and count', async (t) => {
  /** @type {string[]} */
  const warned = [];
  const kit = { ...KIT, replies: { ...KIT.replies, fresh_ms: { welcome: 1000 } } };
  const { emu, driver, running } = await connected(t, kit, { warn: (m) => void warned.push(m) });
  /** @type {import('onair').Notice[]} */
  const notices = [];
  driver.on('notice', (n) => void notices.push(n.notice));
  // The chat limit holds every message for longer than a welcome stays fresh.
  await emu.control('/fail', { path: '/v1/live/chat', status: 429, detailCode: 'OAPI_MNGR_0302', times: 1000 });
  await arrive(emu, 'a', 'Ana');
  await arrive(emu, 'b', 'Lucas');
  await until(() => driver.bot.status().counters.replies.welcome.dropped === 2, 'the two welcomes dropped');
  // Told at once for the first drop, the rest summed in the next notice (at most 5 s later).
  const dropped = () => notices.filter((n) => n.kind === 'repliesDropped');
  const told = () => dropped().reduce((sum, n) => sum + (n.kind === 'repliesDropped' ? n.people : 0), 0);
  await until(() => told() === 2, 'both drops told', 10_000);
  assert.deepEqual(
    dropped().map((n) => n.kind === 'repliesDropped' && [n.replyKind, n.reason, n.level]),
    dropped().map(() => ['welcome', 'stale', 'warn']),
  );
  const lines = warned.filter((m) => m.includes('welcome repl'));
  assert.equal(lines.length, dropped().length, warned.join('\n'));
  for (const line of lines) {
    assert.match(line, /^onair: dropped [12] welcome repl(y|ies): not sent within their freshness \(the chat limit held them back\)$/);
  }
  assert.equal(driver.bot.status().counters.replies.welcome.droppedStale, 2);
  driver.shutdown();
  assert.equal((await running)?.code, 'shut_down');
  assert.deepEqual(await chatLog(emu), [], 'no welcome went out late');
});

test('reply refuses bad input with a clear error and queues nothing', () => {
  const bot = new Bot({ baseUrl: 'http://127.0.0.1:9', clientId: '3f2504e0-4f89-11d3-9a0c-0305e82c3301', clientSecret: 's', kit: KIT });
  const ana = { id: 'a', nickname: 'Ana' };
  /** @type {[unknown, unknown, unknown, Function, string | RegExp][]} */
  const cases = [
    ['hello', ana, 'Hi', CallError, /^onair: the reply kind must be one of welcome, welcome_back, thanks, milestone, command$/],
    ['thanks', ana, '  ', CallError, /chat_empty/],
    ['thanks', ana, 'x'.repeat(201), CallError, /201 UTF-16 code units, at most 200/],
    ['thanks', null, 'Hi', TypeError, 'onair: the user must be an object ({ id, nickname }), not null'],
    ['thanks', { nickname: 'Ana' }, 'Hi', TypeError, 'onair: the user id must be a string, not undefined'],
    ['thanks', { id: 'a', nickname: 7 }, 'Hi', TypeError, 'onair: the nickname must be a string, not a number'],
    [undefined, ana, 'Hi', TypeError, 'onair: the reply kind must be a string, not undefined'],
    ['thanks', ana, 42, TypeError, 'onair: the reply text must be a string, not a number'],
  ];
  for (const [kind, user, text, Class, message] of cases) {
    /** @type {any} */
    let error = null;
    try {
      // @ts-expect-error: wrong on purpose
      bot.reply(kind, user, text);
    } catch (e) {
      error = e;
    }
    const isClass = error instanceof Class; // (not narrowed: `error` stays any)
    assert.ok(isClass, `${kind} ${text}: ${error}`);
    if (typeof message === 'string') assert.equal(error.message, message);
    else assert.match(error.message, message);
    if (Class === CallError) assert.ok(['unknown_reply_kind', 'chat_empty', 'chat_too_long'].includes(error.kind), error.kind);
  }
  // A nickname may be missing (null or left out).
  bot.reply('welcome', { id: 'z' }, 'Hi there!');
  bot.reply('welcome_back', { id: 'y', nickname: null }, 'Back again!');
  // Stopped before it ever connected, the bot drops what waits: the two
  // replies above, nothing of the refused ones.
  bot.shutdown();
  for (let i = 0; i < 100 && bot.poll(1000).type !== 'stopped'; i++);
  const replies = bot.status().counters.replies;
  assert.deepEqual(
    [replies.welcome.droppedStopped, replies.welcomeBack.droppedStopped, replies.thanks.dropped],
    [1, 1, 0],
  );
});

test("a handler's text is the reply the core names (replyKind), merged with the kit's of its kind; a heart's is said", async (t) => {
  // The kit's configured replies are on: Ana gets only the kit's, Bo the
  // handler's too; while the chat limit holds the first message, both join it.
  const kit = { commands: [{ name: 'hello' }, { name: 'top' }], greetings: {}, replies: { commands: { hello: 'Hello, {nickname}!' } } };
  const { emu, driver, running } = await connected(t, kit);
  /** @type {[string, string | undefined][]} */
  const kinds = [];
  driver
    .on('arrival', (a) => {
      kinds.push([`arrival ${a.user.nickname}`, a.replyKind]);
      return a.user.nickname === 'Bo' ? 'Hi Bo, lovely to see you!' : undefined;
    })
    .on('donation', (ev) => {
      kinds.push([`donation ${ev.data.user.nickname}`, ev.replyKind]);
      return ev.data.user.nickname === 'Bo' ? 'Bo, you star!' : undefined;
    })
    .command('top', (c) => {
      kinds.push([`command ${c.user.nickname}`, c.replyKind]);
      return `Top donors, asked by ${c.user.nickname}: Bo.`;
    })
    .on('like', (ev) => {
      kinds.push([`like ${ev.data.user.nickname}`, ev.replyKind]);
      return 'Thanks for the hearts!';
    });
  /** @param {number} n */
  const said = (n) => until(async () => (await chatLog(emu)).length >= n, `${n} chat messages`);
  const holdOne = () => emu.control('/fail', { path: '/v1/live/chat', status: 429, detailCode: 'OAPI_MNGR_0302', times: 1 });
  await holdOne();
  await arrive(emu, 'u1', 'Ana');
  await arrive(emu, 'u2', 'Bo');
  await said(1);
  await holdOne();
  await donate(emu, 'u1', 'Ana', 300);
  await donate(emu, 'u2', 'Bo', 500);
  await said(2);
  await chat(emu, 'u1', 'Ana', '!hello');
  await said(3);
  await chat(emu, 'u2', 'Bo', '!top');
  await said(4);
  await emu.control('/emit', { event: 'like', data: { user: { id: 'u1', nickname: 'Ana' } } });
  await said(5);
  assert.deepEqual(await chatLog(emu), [
    'Welcome, Ana and Bo! 🎧', // the kit's for Ana, the handler's (and the kit's) for Bo
    'Thank you, Ana and Bo!',
    'Hello, Ana!',
    'Top donors, asked by Bo: Bo.', // a command answer: never merged
    'Thanks for the hearts!', // no replyKind: said
  ]);
  assert.deepEqual(kinds, [
    ['arrival Ana', 'welcome'],
    ['arrival Bo', 'welcome'],
    ['donation Ana', 'thanks'],
    ['donation Bo', 'thanks'],
    ['command Bo', 'command'],
    ['like Ana', undefined],
  ]);
  await until(() => driver.bot.status().counters.replies.command.messages >= 2, 'the answers counted');
  const replies = driver.bot.status().counters.replies;
  assert.deepEqual([replies.welcome.messages, replies.welcome.people, replies.welcome.merged], [1, 3, 3]);
  assert.deepEqual([replies.thanks.messages, replies.thanks.people, replies.thanks.merged], [1, 3, 3]);
  assert.deepEqual([replies.command.messages, replies.command.people], [2, 2]);
  driver.shutdown();
  assert.equal((await running)?.code, 'shut_down');
});
