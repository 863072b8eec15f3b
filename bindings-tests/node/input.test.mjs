// Bad input at every entry point of the package's WebAssembly API is one
// clear error of this package: a missing or mistyped option a ConfigError
// naming it (`key`), a mistyped argument a TypeError naming it; never a
// TypeError from the generated glue (passStringToWasm0 and the like), and
// never a secret in a message.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  Backoff, Bot, ConfigError, Decoder, Driver, classify, decodeBroadcast, parseQuota, requests, splitArgs, splitChat,
  truncateChat, utf16Len,
} from 'onair';

const BASE = 'http://127.0.0.1:8080';
const CLIENT_ID = '3f2504e0-4f89-11d3-9a0c-0305e82c3301';
const app = { baseUrl: BASE, clientId: CLIENT_ID, clientSecret: 'hunter2-secret' };

/** A ConfigError naming `key`, with `message`. @param {string} key @param {RegExp | string} message */
const configError = (key, message) => (/** @type {unknown} */ e) => {
  assert.ok(e instanceof ConfigError, `a ConfigError, not ${e}`);
  assert.equal(e.key, key);
  if (typeof message === 'string') assert.equal(e.message, message);
  else assert.match(e.message, message);
  assert.doesNotMatch(e.message, /hunter2/);
  return true;
};
/** A TypeError of this package (its message starts with "onair:"). @param {RegExp} message */
const argError = (message) => (/** @type {unknown} */ e) => {
  assert.ok(e instanceof TypeError, `a TypeError, not ${e}`);
  assert.match(e.message, /^onair: /);
  assert.match(e.message, message);
  assert.doesNotMatch(String(e.stack), /passStringToWasm|getArrayU8FromWasm|_assertNum/);
  return true;
};

test('new Bot: a missing or mistyped option is a ConfigError naming it', () => {
  for (const key of /** @type {const} */ (['baseUrl', 'clientId', 'clientSecret'])) {
    const options = { ...app, [key]: undefined };
    assert.throws(() => new Bot(/** @type {any} */ (options)), configError(key, new RegExp(`^onair: option ${key} is missing \\(`)));
    assert.throws(() => new Bot(/** @type {any} */ ({ ...app, [key]: 42 })), configError(key, `onair: option ${key} must be a string (${key === 'baseUrl' ? "the service's base URL" : key === 'clientId' ? "the app's client id" : "the app's client secret"}), not a number`));
  }
  assert.throws(() => new Bot(/** @type {any} */ (undefined)), (e) => e instanceof ConfigError && /^onair: the options must be an object/.test(e.message));
  /** @type {[string, unknown, RegExp][]} */
  const wrong = [
    ['tokens', 12, /^onair: option tokens must be a string \(the saved token pair\), not a number$/],
    ['kitState', {}, /^onair: option kitState must be a string \(the saved kit state\), not an object$/],
    ['kit', [1], /^onair: option kit must be an object or its JSON text, not an array$/],
    ['seed', 'x', /^onair: option seed must be a finite number, not a string$/],
    ['events', 'yes', /^onair: option events must be a boolean, not a string$/],
    ['checkCredentials', 1, /^onair: option checkCredentials must be a boolean, not a number$/],
    ['maxAttempts', -1, /^onair: option maxAttempts must be a whole number, not a number$/],
    ['maxQueuedCalls', 1.5, /^onair: option maxQueuedCalls must be a whole number, not a number$/],
    ['requestTimeoutMs', '30s', /^onair: option requestTimeoutMs must be a number of milliseconds, not a string$/],
    ['watchdogMs', NaN, /^onair: option watchdogMs must be a number of milliseconds, not NaN$/],
  ];
  for (const [key, value, message] of wrong) {
    assert.throws(() => new Bot(/** @type {any} */ ({ ...app, [key]: value })), configError(key, message), key);
  }
  // Values the core refuses name their option too.
  assert.throws(() => new Bot({ ...app, baseUrl: 'localhost:8080' }), configError('baseUrl', /^onair: option baseUrl: invalid base URL/));
  assert.throws(() => new Bot({ ...app, clientId: 'bot-1' }), configError('clientId', /^onair: option clientId: client_id must be a UUID/));
  assert.throws(() => new Bot({ ...app, clientSecret: '' }), configError('clientSecret', /^onair: option clientSecret: client_secret must not be empty$/));
});

test('checkCredentials: false opens the stream first; by default a resumed bot checks the credentials', () => {
  const tokens = JSON.stringify({
    format: 'onair.tokens', version: 1, generation: 1, access_token: 'AT', access_expires_at_ms: 1700003600000,
    issued_at_ms: 1700000000000, refresh_token: 'RT', refresh_expires_at_ms: 1702592000000, scope: 'events.chat',
  });
  const checked = new Bot({ ...app, tokens }).poll(1700000000000);
  assert.ok(checked.type === 'send' && checked.request.endpoint === 'revoke');
  assert.equal(new Bot({ ...app, tokens, checkCredentials: false }).poll(1700000000000).type, 'openStream');
});

test('every Bot method checks its arguments', () => {
  const bot = new Bot(app);
  /** @type {[() => unknown, RegExp][]} */
  const calls = [
    [() => bot.poll(/** @type {any} */ ('now')), /nowMs must be a finite number, not a string/],
    [() => bot.onResponse(/** @type {any} */ ('1'), 200, [], ''), /id must be a finite number, not a string/],
    [() => bot.onResponse(1, /** @type {any} */ (undefined), [], ''), /status must be a finite number, not undefined/],
    [() => bot.onTransportError(/** @type {any} */ (null)), /id must be a finite number, not null/],
    [() => bot.onNotSent(/** @type {any} */ ({})), /id must be a finite number, not an object/],
    [() => bot.onStreamOpen(1, /** @type {any} */ ('200'), []), /status must be a finite number/],
    [() => bot.onStreamBytes(/** @type {any} */ (undefined), 'x'), /id must be a finite number/],
    [() => bot.onStreamClosed(/** @type {any} */ (NaN)), /id must be a finite number, not NaN/],
    [() => bot.authorize(/** @type {any} */ (undefined), 'https://bot/cb'), /the consent code must be a string, not undefined/],
    [() => bot.authorize('code', /** @type {any} */ (undefined)), /the redirect URI must be a string, not undefined/],
    [() => bot.sendChat(/** @type {any} */ (5)), /the chat message must be a string, not a number/],
    [() => bot.say(/** @type {any} */ (undefined)), /the text to say must be a string, not undefined/],
    [() => bot.schedule(/** @type {any} */ ('soon'), 't'), /atMs must be a finite number/],
    [() => bot.schedule(1, /** @type {any} */ (1)), /the timer tag must be a string/],
    [() => bot.every(/** @type {any} */ (undefined), 't'), /periodMs must be a finite number, not undefined/],
    [() => bot.every(1000, 't', /** @type {any} */ ('x')), /firstAtMs must be a finite number/],
    [() => bot.cancelTimer(/** @type {any} */ (null)), /the timer tag must be a string, not null/],
    [() => bot.requestReconnect(/** @type {any} */ ('x')), /nowMs must be a finite number/],
    [() => bot.status(/** @type {any} */ ('x')), /nowMs must be a finite number/],
  ];
  for (const [call, message] of calls) assert.throws(call, argError(message), String(call));
  // Nothing changed: the bot still asks for consent.
  assert.equal(bot.poll(1).type, 'needsAuthorization');
});

test('the helpers check their arguments', () => {
  /** @type {[() => unknown, RegExp][]} */
  const calls = [
    [() => classify(/** @type {any} */ (undefined), 200), /the endpoint must be a string, not undefined/],
    [() => classify('live', /** @type {any} */ ('200')), /status must be a finite number/],
    [() => requests.live(/** @type {any} */ (undefined), 'AT'), /baseUrl must be a string, not undefined/],
    [() => requests.live(BASE, /** @type {any} */ (undefined)), /the access token must be a string, not undefined/],
    [() => requests.listeners(BASE, 'AT', /** @type {any} */ (3)), /the cursor must be a string/],
    [() => requests.chat(BASE, 'AT', /** @type {any} */ (undefined)), /the chat message must be a string/],
    [() => requests.issueToken(app, /** @type {any} */ (undefined), 'https://bot/cb'), /the consent code must be a string/],
    [() => requests.issueToken(app, 'code', /** @type {any} */ (undefined)), /the redirect URI must be a string/],
    [() => requests.refreshToken(app, /** @type {any} */ (null)), /the refresh token must be a string, not null/],
    [() => requests.revokeToken(/** @type {any} */ (null), 'x'), /the client must be an object/],
    [() => splitChat(/** @type {any} */ (undefined)), /the text must be a string/],
    [() => truncateChat('x', /** @type {any} */ ('5')), /limit must be a finite number/],
    [() => truncateChat('x', 5, /** @type {any} */ (null)), /the ellipsis must be a string/],
    [() => utf16Len(/** @type {any} */ (1)), /the text must be a string/],
    [() => splitArgs(/** @type {any} */ ({})), /the text must be a string/],
    [() => parseQuota([], /** @type {any} */ ('now')), /nowMs must be a finite number/],
    [() => new Backoff({ seed: /** @type {any} */ ('x') }), /seed must be a finite number/],
    [() => new Backoff().ceilingMs(/** @type {any} */ (undefined)), /attempt must be a finite number/],
    [() => new Decoder({ maxFrameBytes: /** @type {any} */ ('big') }), /maxFrameBytes must be a finite number/],
    [() => decodeBroadcast(/** @type {any} */ (7)), /body must be a Uint8Array/],
  ];
  for (const [call, message] of calls) assert.throws(call, (e) => e instanceof TypeError && message.test(e.message), String(call));
  // A token client missing its secret is a ConfigError naming it.
  assert.throws(() => requests.revokeToken(/** @type {any} */ ({ baseUrl: BASE, clientId: CLIENT_ID }), 'x'), configError('clientSecret', /^onair: option clientSecret is missing/));
});

test('new Driver: its own options are checked too, and the Bot options through it', () => {
  /** @type {[string, unknown, RegExp][]} */
  const wrong = [
    ['tokens', 5, /^onair: option tokens must be a file path or a store with load\(\) and save\(\)$/],
    ['state', '', /^onair: option state is an empty path/],
    ['authorize', 'code', /^onair: option authorize must be a function$/],
    ['fetch', {}, /^onair: option fetch must be a function$/],
    ['now', 0, /^onair: option now must be a function$/],
    ['signals', 'no', /^onair: option signals must be true or false$/],
    ['waitForConsent', 1, /^onair: option waitForConsent must be true or false$/],
    ['logger', {}, /^onair: option logger must have a warn\(message\) method/],
  ];
  for (const [key, value, message] of wrong) {
    assert.throws(() => new Driver(/** @type {any} */ ({ ...app, [key]: value })), configError(key, message), key);
  }
  assert.throws(() => new Driver(/** @type {any} */ ({ ...app, baseUrl: undefined })), configError('baseUrl', /^onair: option baseUrl is missing/));
  assert.throws(() => new Driver(/** @type {any} */ (null)), (e) => e instanceof ConfigError);
});
