// The Decoder from Node: every event kind, nulls, chunking at every byte,
// oversized frames, bad JSON, string chunks, the end of the stream.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { Decoder } from 'onair';

const root = new URL('../../', import.meta.url);
const service = readFileSync(new URL('fixtures/streams/service.sse', root));
const broken = readFileSync(new URL('fixtures/streams/broken.sse', root));

/** @param {Uint8Array} bytes @param {number[]} cuts */
function decodeCut(bytes, cuts) {
  const d = new Decoder();
  const out = [];
  let at = 0;
  for (const cut of [...cuts, bytes.length]) {
    out.push(...d.push(bytes.subarray(at, cut)));
    at = cut;
  }
  out.push(...d.finish());
  d.free();
  return out;
}

test('every event kind of the service fixture, typed', () => {
  const items = decodeCut(service, []);
  /** @type {string[]} */
  const kinds = items.map((i) => (i.type === 'event' ? i.event : i.type));
  for (const k of ['chat', 'presence', 'like', 'donation', 'end', 'heartbeat', 'unknown']) {
    assert.ok(kinds.includes(k), `missing ${k} in ${kinds}`);
  }
  for (const item of items) {
    if (item.type !== 'event') continue;
    switch (item.event) {
      case 'chat':
        assert.equal(typeof item.data.message, 'string');
        assert.equal(typeof item.data.isDj, 'boolean');
        assert.equal(typeof item.data.sentTime, 'string');
        break;
      case 'presence':
        assert.equal(item.data.type, 'JOIN');
        assert.ok(item.data.fanRank === null || typeof item.data.fanRank === 'number');
        assert.ok('favoriteTemperature' in item.data);
        break;
      case 'like':
        assert.ok(item.data.totalAmount >= item.data.amount);
        assert.ok('combo' in item.data);
        break;
      case 'donation':
        assert.equal(typeof item.data.amount, 'number');
        assert.ok('message' in item.data);
        break;
      case 'end':
        assert.equal(typeof item.data.reason, 'string');
        break;
    }
  }
});

test('nullable fields are present as null; unknown fields are dropped', () => {
  const items = decodeCut(service, []);
  const like = items.find((i) => i.type === 'event' && i.event === 'like' && i.data.type === 'PAID');
  assert.ok(like && like.type === 'event' && like.event === 'like');
  assert.equal(like.data.user.nickname, null);
  assert.equal(like.data.combo, 4);
  assert.equal(/** @type {any} */ (like.data).itemCode, undefined);
  const first = items.find((i) => i.type === 'event' && i.event === 'presence');
  assert.ok(first && first.type === 'event' && first.event === 'presence');
  assert.equal(first.data.fanRank, null);
  assert.equal(first.data.favoriteTemperature, null);
  const quiet = items.find((i) => i.type === 'event' && i.event === 'donation' && i.data.message === null);
  assert.ok(quiet, 'a donation with a null message');
  assert.equal(first.id, '1732250001250-1');
});

test('chunking at every byte gives the same items', () => {
  const whole = decodeCut(service, []);
  for (let cut = 0; cut <= service.length; cut++) {
    assert.deepEqual(decodeCut(service, [cut]), whole, `cut at ${cut}`);
  }
  const everyByte = Array.from({ length: service.length }, (_, i) => i);
  assert.deepEqual(decodeCut(service, everyByte), whole);
});

test('string chunks decode like bytes', () => {
  const text = service.toString('utf8');
  const d = new Decoder();
  const out = [];
  for (let i = 0; i < text.length; i += 7) out.push(...d.push(text.slice(i, i + 7)));
  out.push(...d.finish());
  assert.deepEqual(out, decodeCut(service, []));
});

test('the broken fixture: errors are values and the stream goes on', () => {
  const items = decodeCut(broken, []);
  const errors = items.filter((i) => i.type === 'error');
  assert.ok(errors.length > 0);
  for (const e of errors) {
    if (e.type !== 'error') continue;
    assert.ok(['invalid_json', 'invalid_event', 'frame_too_large', 'incomplete_frame'].includes(e.error));
    assert.equal(typeof e.raw, 'string');
    assert.equal(typeof e.message, 'string');
  }
  for (let cut = 0; cut <= broken.length; cut++) {
    assert.deepEqual(decodeCut(broken, [cut]), items, `cut at ${cut}`);
  }
});

test('bad JSON and a missing field are told apart', () => {
  const d = new Decoder();
  const items = d.push('event:chat\ndata:{not json\n\nevent:chat\ndata:{"user":{"id":"u"}}\n\n');
  assert.equal(items.length, 2);
  const [bad, missing] = items;
  assert.ok(bad.type === 'error' && missing.type === 'error');
  assert.equal(bad.error, 'invalid_json');
  assert.equal(bad.event, 'chat');
  assert.equal(bad.raw, '{not json');
  assert.equal(missing.error, 'invalid_event');
});

test('an oversized frame is skipped with a frame_too_large error', () => {
  const d = new Decoder({ maxFrameBytes: 64 });
  const big = 'x'.repeat(200);
  const items = d.push(`event:chat\ndata:${big}\n\nretry:1500\n\n:hello\n\n`);
  assert.equal(items[0].type, 'error');
  if (items[0].type === 'error') assert.equal(items[0].error, 'frame_too_large');
  assert.deepEqual(items.slice(1), [
    { type: 'retry', ms: 1500 },
    { type: 'comment', text: 'hello' },
  ]);
});

test('finish reports a frame cut short', () => {
  const d = new Decoder();
  assert.deepEqual(d.push('event:end\ndata:{"reason":"LIVE_ENDED"}\n'), []);
  const [item] = d.finish();
  assert.ok(item.type === 'error');
  assert.equal(item.error, 'incomplete_frame');
  assert.deepEqual(d.finish(), []);
});

test('an unknown event is kept raw; unknown enum values are kept', () => {
  const d = new Decoder();
  const items = d.push(
    'event:poll\nid:5-1\ndata:{"q":1}\n\nevent:end\ndata:{"reason":"MAINTENANCE"}\n\n',
  );
  assert.deepEqual(items[0], { type: 'unknown', event: 'poll', id: '5-1', data: '{"q":1}' });
  assert.ok(items[1].type === 'event' && items[1].event === 'end');
  assert.equal(items[1].data.reason, 'MAINTENANCE');
  assert.equal(items[1].id, null);
});

test('a UTF-8 character split across chunks survives', () => {
  const bytes = new TextEncoder().encode(
    'event:chat\ndata:{"user":{"id":"u","nickname":"별"},"isDj":false,"message":"🎵","sentTime":"t"}\n\n',
  );
  const at = bytes.indexOf(0xf0) + 2;
  const d = new Decoder();
  const items = [...d.push(bytes.subarray(0, at)), ...d.push(bytes.subarray(at))];
  assert.ok(items[0].type === 'event' && items[0].event === 'chat');
  assert.equal(items[0].data.message, '🎵');
  assert.equal(items[0].data.user.nickname, '별');
});

test('a text that starts with U+FEFF keeps it (the tape is read in place)', () => {
  const d = new Decoder();
  const [item] = d.push('event:chat\ndata:{"user":{"id":"\uFEFFu","nickname":null},"isDj":false,"message":"\uFEFF","sentTime":"t"}\n\n');
  assert.ok(item.type === 'event' && item.event === 'chat');
  assert.equal(item.data.user.id, '\uFEFFu');
  assert.equal(item.data.message, '\uFEFF');
  assert.equal(item.data.sentTime, 't');
});

test('Symbol.dispose frees the decoder; free is idempotent; use after free throws', () => {
  const d = new Decoder();
  assert.equal(typeof d[Symbol.dispose], 'function');
  d[Symbol.dispose]();
  d.free();
  assert.throws(() => d.push(':heartbeat\n\n'), TypeError);
});

// The fast path (items built from the core's number tape) against the
// core's JSON serializer, the oracle: equal on every fixture, at every cut,
// and on random chunkings of a mixed stream.
test('the item tape equals the JSON wire form', () => {
  for (const bytes of [service, broken]) {
    for (let cut = 0; cut <= bytes.length; cut += 3) {
      const fast = new Decoder();
      const slow = new Decoder();
      for (const part of [bytes.subarray(0, cut), bytes.subarray(cut)]) {
        assert.equal(JSON.stringify(fast.push(part)), JSON.stringify(slow._pushJson(part)));
      }
    }
  }
  let seed = 42;
  const random = (/** @type {number} */ n) => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed % n;
  };
  const text = new TextEncoder().encode(
    `${service}${broken}event:presence\ndata:{"user":{"id":"u","nickname":"é🎵"},"type":"LEAVE","fanRank":3,"isManager":true,"favoriteTemperature":-0.5,"time":"t"}\n\n` +
      'event:like\nid:1-1\ndata:{"user":{"id":"u"},"type":"GIFT","totalAmount":9007199254740993,"amount":1,"extraAmount":0,"time":"t"}\n\nretry:99\n\n: c\n\n',
  );
  for (let round = 0; round < 50; round++) {
    const maxFrameBytes = 200 + random(400);
    const fast = new Decoder({ maxFrameBytes });
    const slow = new Decoder({ maxFrameBytes });
    let at = 0;
    const fastItems = [];
    const slowItems = [];
    while (at < text.length) {
      const end = Math.min(text.length, at + 1 + random(300));
      fastItems.push(...fast.push(text.subarray(at, end)));
      slowItems.push(...slow._pushJson(text.subarray(at, end)));
      at = end;
    }
    // Same keys in the same order, same values.
    assert.equal(JSON.stringify(fastItems), JSON.stringify(slowItems));
  }
});

// The package is two modules, each loaded on first use (wasm/npm/bot.js):
// decoding alone never loads the bot module, and the other way round.
test('decoding loads only the decoder module; the bot only the bot module', () => {
  const loaded = (/** @type {string} */ code) =>
    execFileSync(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `import * as o from 'onair'; import { createRequire } from 'node:module'; ${code}; console.log(Object.keys(createRequire(import.meta.url).cache).filter((p) => p.includes('onair_')).map((p) => p.split(/[\\\\/]/).pop()).sort().join())`,
      ],
      { cwd: new URL('.', import.meta.url), encoding: 'utf8' },
    ).trim();
  assert.equal(loaded(`new o.Decoder().push(':heartbeat\\n\\n')`), 'onair_decoder.js');
  assert.equal(loaded(`o.splitChat('hi'); new o.Bot({ baseUrl: 'http://127.0.0.1:9', clientId: '3f2504e0-4f89-11d3-9a0c-0305e82c3301', clientSecret: 's' })`), 'onair_bot.js');
  assert.equal(loaded(`void o`), '');
});
