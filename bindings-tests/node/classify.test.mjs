// The classification table from Node: status, detailCode, OAuth error,
// quota headers, bodies that are not JSON.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { classify, OnairError } from 'onair';

/** @param {string} code */
const detail = (code) => JSON.stringify({ status: 0, detailCode: code, message: 'm' });

/** @type {[import('onair').Endpoint, number, import('onair').HeadersLike, string, import('onair').ProblemKind, import('onair').Advice][]} */
const table = [
  ['chat', 204, [], '', 'ok', 'none'],
  ['live', 200, {}, '{}', 'ok', 'none'],
  ['chat', 400, [], detail('OAPI_MNGR_0103'), 'malformed_request', 'fix_request'],
  ['live', 405, [], '', 'malformed_request', 'fix_request'],
  ['chat', 400, [], detail('OAPI_MNGR_0108'), 'chat_empty', 'fix_request'],
  ['chat', 400, [], detail('OAPI_MNGR_0109'), 'chat_too_long', 'fix_request'],
  ['chat', 401, [], '', 'unauthorized', 'refresh_token'],
  ['events', 401, [], detail('OAPI_MNGR_0203'), 'unauthorized', 'refresh_token'],
  ['fans', 403, [], '', 'permission_missing', 'reconsent'],
  ['chat', 403, [], detail('OAPI_MNGR_0208'), 'chat_blocked', 'retry_soon'],
  ['events', 403, [], detail('OAPI_MNGR_0209'), 'join_forbidden', 'stop'],
  ['live', 404, [], detail('OAPI_MNGR_0301'), 'not_on_air', 'wait_not_on_air'],
  ['events', 404, [], '', 'not_on_air', 'wait_not_on_air'],
  ['chat', 429, [], detail('OAPI_MNGR_0302'), 'chat_rate_limited', 'retry_soon'],
  ['live', 429, [['Retry-After', '3600']], '', 'quota_daily', 'retry_after'],
  ['live', 429, { 'x-ratelimit-daily-scope': 'live.read' }, '', 'quota_daily', 'retry_after'],
  ['live', 429, [], '', 'quota_per_second', 'retry_backoff'],
  ['live', 500, [], '', 'server_error', 'retry_backoff'],
  ['chat', 502, [], '<html>Bad Gateway</html>', 'server_error', 'retry_backoff'],
  ['live', 502, [], detail('OAPI_MNGR_2302'), 'broadcast_server_error', 'retry_backoff'],
  ['chat', 502, [], detail('OAPI_MNGR_2303'), 'chat_server_error', 'retry_backoff'],
  ['chat', 429, [], detail('OAPI_MNGR_9999'), 'unexpected', 'retry_backoff'],
  ['live', 418, [], '', 'unexpected', 'stop'],
  ['token', 400, [], '{"error":"invalid_grant","error_description":"expired"}', 'invalid_grant', 'reauthorize'],
  ['token', 400, [], '{"error":"invalid_request"}', 'invalid_request', 'fix_request'],
  ['token', 400, [], '{"error":"unsupported_grant_type"}', 'unsupported_grant_type', 'fix_request'],
  ['token', 401, [], '{"error":"invalid_client"}', 'invalid_client', 'stop'],
  ['token', 401, [], 'not json', 'invalid_client', 'stop'],
];

for (const [endpoint, status, headers, body, kind, advice] of table) {
  test(`${endpoint} ${status} ${body.slice(0, 40)} -> ${kind}/${advice}`, () => {
    const e = classify(endpoint, status, headers, body);
    assert.equal(e.kind, kind);
    assert.equal(e.advice, advice);
    assert.equal(e.status, status);
  });
}

test('the explanation has every field, nulls included', () => {
  const e = classify('live', 429, new Headers({ 'retry-after': '30', 'x-ratelimit-daily-scope': 'live.read' }), '');
  assert.deepEqual(e, {
    kind: 'quota_daily',
    advice: 'retry_after',
    status: 429,
    detailCode: null,
    oauthError: null,
    retryAfterMs: 30000,
    quotaScope: 'live.read',
    recentlyRevoked: false,
  });
});

test('recently revoked, detail codes and OAuth errors are reported', () => {
  assert.equal(classify('chat', 401, [], detail('OAPI_MNGR_0203')).recentlyRevoked, true);
  assert.equal(classify('chat', 403, [], detail('OAPI_MNGR_0208')).detailCode, 'OAPI_MNGR_0208');
  assert.equal(classify('token', 400, [], '{"error":"invalid_grant"}').oauthError, 'invalid_grant');
});

test('an HTTP-date Retry-After needs the time', () => {
  const headers = [['retry-after', 'Thu, 01 Jan 1970 00:01:40 GMT']];
  assert.equal(classify('live', 429, headers, '').retryAfterMs, null);
  assert.equal(classify('live', 429, headers, '', 40_000).retryAfterMs, 60_000);
});

test('bodies as bytes, an SSE-style error body, and garbage', () => {
  const bytes = new TextEncoder().encode(detail('OAPI_MNGR_0301'));
  assert.equal(classify('live', 404, [], bytes).kind, 'not_on_air');
  const sse = 'data:{"status":403,"detailCode":"OAPI_MNGR_0209","message":"blocked"}\n\n';
  assert.equal(classify('events', 403, [], sse).kind, 'join_forbidden');
  assert.equal(classify('chat', 400, [], new Uint8Array([0xff, 0xfe, 0x00])).kind, 'unexpected');
});

test('an unknown endpoint is an OnairError', () => {
  assert.throws(
    () => classify(/** @type {any} */ ('nope'), 200),
    (e) => e instanceof OnairError && e.kind === 'unknown_endpoint',
  );
});
