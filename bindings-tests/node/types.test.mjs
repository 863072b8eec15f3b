// The .d.ts narrows: `tsc --noEmit --strict` (scripts/test-node) checks this
// file; each @ts-expect-error line must be an error, or tsc fails.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Decoder } from 'onair';

/** @param {import('onair').OnairItem} item @returns {string} */
function describe(item) {
  // @ts-expect-error -- `data` exists only once narrowed to an item that has it
  void item.data;
  switch (item.type) {
    case 'event':
      switch (item.event) {
        case 'chat':
          // @ts-expect-error -- a chat has no amount
          void item.data.amount;
          return `${item.data.user.nickname ?? item.data.user.id}: ${item.data.message}`;
        case 'donation': {
          /** @type {string | null} */
          const message = item.data.message;
          // @ts-expect-error -- a nullable field is `T | null`, not `T`
          /** @type {string} */ const notNull = item.data.message;
          void notNull;
          return `${item.data.amount} ${message ?? ''}`;
        }
        case 'like':
          return `${item.data.totalAmount} hearts (${item.data.combo ?? 'no'} combo)`;
        case 'presence':
          return `join ${item.data.fanRank ?? '-'} ${item.data.isManager}`;
        case 'end':
          return item.data.reason;
        default: {
          /** @type {never} */
          const unreachable = item;
          return unreachable;
        }
      }
    case 'unknown':
      return `${item.event}: ${item.data}`;
    case 'error':
      return `${item.error}: ${item.raw}`;
    case 'retry':
      return String(item.ms);
    case 'comment':
      return item.text;
    case 'heartbeat':
      return 'heartbeat';
    default: {
      /** @type {never} */
      const unreachable = item;
      return unreachable;
    }
  }
}

/** @param {import('onair').Action} action @returns {string} */
function act(action) {
  switch (action.type) {
    case 'send':
      return `${action.request.method} ${action.request.url} within ${action.timeoutMs} ms`;
    case 'wait':
      return action.untilMs === null ? 'until a report' : `until ${action.untilMs}`;
    case 'done':
      if (action.result.kind === 'failed' && action.result.failure === 'quota_blocked') return `${action.result.untilMs}`;
      return action.result.kind;
    case 'stopped':
      if (action.stop.code === 'reconsent') return action.stop.missing.join(' ');
      // @ts-expect-error -- only a reconsent stop names missing permissions
      return action.stop.missing;
    case 'event':
      return action.event;
    case 'command':
      // @ts-expect-error -- a command has no amount
      void action.amount;
      return `${action.name} ${action.args.join(' ')} by ${action.user.nickname ?? action.user.id} (${action.role})`;
    case 'arrival':
      return action.kind === 'back' ? `back after ${action.awayMs} ms` : `first in ${action.liveId}`;
    case 'milestone':
      if (action.kind === 'donated') return `${action.user.id} gave ${action.total}`;
      // @ts-expect-error -- a hearts milestone names no donor
      return `${action.reached} hearts ${action.user}`;
    case 'broadcastEnded':
      return `${action.liveId}: ${action.tally.hearts} hearts, ${action.event?.data.reason ?? 'inferred'}`;
    case 'persistState':
      return action.state;
    default:
      return action.type;
  }
}

/** The driver hands out no plumbing. @param {import('onair').DriverAction} action @returns {string} */
function driven(action) {
  switch (action.type) {
    // @ts-expect-error -- the driver sends requests itself
    case 'send':
      return 'never';
    case 'notice':
      return action.notice.kind === 'commandRefused' ? `${action.notice.name} needs ${action.notice.needed}` : action.notice.kind;
    case 'done':
      return action.result.kind === 'failed' && action.result.failure === 'stopped' ? action.result.stop.code : action.result.kind;
    default:
      return action.type;
  }
}

/** Handlers receive the narrowed action. @param {import('onair').Driver} driver */
function handlers(driver) {
  driver.on('donation', (ev) => void ev.data.amount);
  driver.on('arrival', (a) => void a.user.id);
  driver.command('hello', (c) => void c.args);
  // @ts-expect-error -- a chat has no amount
  driver.on('chat', (ev) => void ev.data.amount);
  // @ts-expect-error -- no such action or event
  driver.on('sent', () => {});
}
void driven;
void handlers;

test('the narrowed types describe real items', () => {
  const d = new Decoder();
  const items = d.push(
    'event:chat\ndata:{"user":{"id":"u","nickname":null},"isDj":false,"message":"hi","sentTime":"t"}\n\n:heartbeat\n\nretry:5\n\n',
  );
  assert.deepEqual(items.map(describe), ['u: hi', 'heartbeat', '5']);
  assert.equal(act({ type: 'wait', untilMs: null }), 'until a report');
});

/** The kit's configuration is typed from the core's KitConfig: every key optional but a command's name. */
function kitConfigs() {
  /** @type {import('onair').KitConfig} */
  const ok = { commands: [{ name: 'hello', aliases: ['hi'], allowed: 'managers', cooldown_ms: 5000 }], tally: true };
  /** @type {import('onair').KitConfig} */
  // @ts-expect-error -- `admins` is not who may run a command
  const wrongRole = { commands: [{ name: 'x', allowed: 'admins' }] };
  /** @type {import('onair').KitConfig} */
  // @ts-expect-error -- a command needs its name
  const noName = { commands: [{ aliases: ['x'] }] };
  return [ok, wrongRole, noName];
}
void kitConfigs;
