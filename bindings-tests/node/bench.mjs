// onair's Decoder (bytes -> typed event objects, in WebAssembly) against npm
// eventsource-parser + JSON.parse on the service-typical stream in 4 KiB
// chunks, side by side in one run. Each contender runs one pass in turn;
// each one's fastest pass is reported (the figure that moves least on a
// busy machine), with the median. See BENCHMARKS.md.
//   node bindings-tests/node/bench.mjs [passes]   (after scripts/test-node)
import { readFileSync } from 'node:fs';
import { createParser } from 'eventsource-parser';
import { Decoder } from 'onair';

const PASSES = Number(process.argv[2] ?? 60);
const STREAM_BYTES = 2 << 20;
const CHUNK = 4096;
const KNOWN = new Set(['chat', 'presence', 'like', 'donation', 'end']);

// The service fixture (every event kind, heartbeats, an unknown event),
// repeated to 2 MiB with fresh frame ids.
const fixture = readFileSync(new URL('../../fixtures/streams/service.sse', import.meta.url), 'utf8');
let text = '';
for (let n = 0; text.length < STREAM_BYTES; n++) text += fixture.replace(/^id:(\d+)-(\d+)$/gm, (_, t, o) => `id:${t}-${Number(o) + n * 100}`);
const bytes = new TextEncoder().encode(text);
/** @type {Uint8Array[]} */
const chunks = [];
for (let i = 0; i < bytes.length; i += CHUNK) chunks.push(bytes.slice(i, i + CHUNK));

/** Touches what a bot reads of an event: the event name and the user's id. @param {string} name @param {any} data */
const touch = (name, data) => name.length + (data.user ? data.user.id.length : data.reason.length);

function onair() {
  const decoder = new Decoder();
  let events = 0;
  let sum = 0;
  for (const chunk of chunks) {
    for (const item of decoder.push(chunk)) {
      if (item.type === 'event') {
        events++;
        sum += touch(item.event, item.data);
      }
    }
  }
  decoder.free();
  return [events, sum];
}

function peer() {
  const utf8 = new TextDecoder();
  let events = 0;
  let sum = 0;
  const parser = createParser({
    onEvent(ev) {
      const name = ev.event ?? 'message';
      if (!KNOWN.has(name)) return;
      const data = JSON.parse(ev.data);
      events++;
      sum += touch(name, data);
    },
  });
  for (const chunk of chunks) parser.feed(utf8.decode(chunk, { stream: true }));
  return [events, sum];
}

const a = onair();
const b = peer();
if (a[0] !== b[0] || a[1] !== b[1]) throw new Error(`contenders disagree: onair ${a} vs peer ${b}`);

/** @type {Record<string, number[]>} */
const times = { onair: [], peer: [] };
for (let i = 0; i < PASSES; i++) {
  for (const [name, f] of /** @type {const} */ ([['onair', onair], ['peer', peer]])) {
    const t0 = process.hrtime.bigint();
    f();
    times[name].push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
}
/** @param {number[]} xs */
const min = (xs) => Math.min(...xs);
/** @param {number[]} xs */
const median = (xs) => [...xs].sort((x, y) => x - y)[xs.length >> 1];
const mb = (/** @type {number} */ ms) => (bytes.length / 1e6 / (ms / 1e3)).toFixed(0);
console.log(`stream: ${bytes.length} bytes in ${chunks.length} chunks of ${CHUNK} B, ${a[0]} typed events; ${PASSES} interleaved passes; node ${process.version}`);
for (const name of ['onair', 'peer']) {
  console.log(`${name === 'onair' ? 'onair Decoder (wasm)          ' : 'eventsource-parser + JSON.parse'}: fastest ${min(times[name]).toFixed(2)} ms (${mb(min(times[name]))} MB/s), median ${median(times[name]).toFixed(2)} ms`);
}
console.log(`ratio (peer / onair, fastest): ${(min(times.peer) / min(times.onair)).toFixed(2)}x; medians: ${(median(times.peer) / median(times.onair)).toFixed(2)}x`);
