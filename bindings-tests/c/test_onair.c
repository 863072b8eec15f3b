/*
 * The C API from C: every function group, with its error paths (NULL,
 * invalid UTF-8, oversized frames, bad JSON, misuse of ids). Built with
 * -std=c11 -Wall -Wextra -Werror -pedantic; run under ASan/UBSan and under
 * valgrind by scripts/test-c. Prints "N passed, N failed"; exits 1 on any
 * failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onair.h"

static int passed, failed;

#define CHECK(cond)                                                       \
  do {                                                                    \
    if (cond) {                                                           \
      passed++;                                                           \
    } else {                                                              \
      failed++;                                                           \
      fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);     \
    }                                                                     \
  } while (0)

/* A string literal as (pointer, length). */
#define S(lit) (lit), (sizeof(lit) - 1)

static bool eq(onair_str s, const char *lit) {
  size_t n = strlen(lit);
  return s.ptr != NULL && s.len == n && memcmp(s.ptr, lit, n) == 0;
}

static bool contains(const char *hay, size_t len, const char *needle) {
  size_t n = strlen(needle);
  if (hay == NULL || n > len) return false;
  for (size_t i = 0; i + n <= len; i++)
    if (memcmp(hay + i, needle, n) == 0) return true;
  return false;
}

static const char BAD_UTF8[] = "\xff\xfe";
static const char CLIENT_ID[] = "3f2504e0-4f89-11d3-9a0c-0305e82c3301";

/* ---- conventions ---------------------------------------------------------- */

static void test_conventions(void) {
  CHECK(onair_abi_version() == ONAIR_ABI_VERSION);
  CHECK(strlen(onair_version()) > 0);
  CHECK(strcmp(onair_result_message(ONAIR_OK), "success") == 0);
  CHECK(strcmp(onair_result_message(ONAIR_NULL_PARAMETER), onair_result_message(ONAIR_PANIC)) != 0);
  CHECK(strcmp(onair_result_message(123456), "unknown result code") == 0);
  onair_string_free(NULL);
  onair_decoder_free(NULL);
  onair_bot_free(NULL);
  onair_bot_config_free(NULL);
  onair_backoff_free(NULL);
  onair_string_list_free(NULL);
  onair_audience_free(NULL);
  onair_commands_free(NULL);
  onair_milestones_free(NULL);
  onair_timers_free(NULL);
  onair_tally_free(NULL);
  onair_sse_parser_free(NULL);
  CHECK(onair_decoder_pending(NULL) == 0);
  CHECK(onair_bot_pending_calls(NULL) == 0);
  /* A NULL out-parameter is refused and allocates nothing (these four once
     leaked their handle: ASan's leak check and valgrind see it here). */
  CHECK(onair_timers_new(NULL) == ONAIR_NULL_PARAMETER);
  CHECK(onair_audience_new(NULL) == ONAIR_NULL_PARAMETER);
  CHECK(onair_commands_new(NULL) == ONAIR_NULL_PARAMETER);
  CHECK(onair_tally_new(NULL) == ONAIR_NULL_PARAMETER);
}

/* ---- decoder -------------------------------------------------------------- */

static const char STREAM[] =
    ":heartbeat\n\n"
    "id:1732250000000-0\nevent:chat\n"
    "data:{\"user\":{\"id\":\"u-dj\",\"nickname\":\"DJ Mina\"},\"isDj\":true,"
    "\"message\":\"Welcome!\",\"sentTime\":\"2024-11-22T04:33:20.123Z\"}\n\n"
    "id:1732250001000-1\nevent:presence\n"
    "data:{\"user\":{\"id\":\"u-1\",\"nickname\":null},\"type\":\"JOIN\",\"fanRank\":2,"
    "\"isManager\":true,\"favoriteTemperature\":36.5,\"time\":\"2024-11-22T04:33:21Z\"}\n\n"
    "id:1732250002000-2\nevent:like\n"
    "data:{\"user\":{\"id\":\"u-1\",\"nickname\":\"n\"},\"type\":\"PAID\",\"totalAmount\":60,"
    "\"amount\":10,\"extraAmount\":5,\"combo\":4,\"time\":\"t\"}\n\n"
    "id:1732250003000-3\nevent:donation\n"
    "data:{\"user\":{\"id\":\"u-2\",\"nickname\":\"q\"},\"amount\":500,\"message\":null,\"time\":\"t\"}\n\n"
    ": just a comment\n\n"
    "retry:3000\n\n"
    "event:poll\ndata:{\"q\":1}\n\n"
    "event:chat\ndata:{not json\n\n"
    "event:end\ndata:{\"reason\":\"LIVE_ENDED\"}\n\n";

static void test_decoder(void) {
  onair_decoder *d = NULL;
  CHECK(onair_decoder_new(0, NULL) == ONAIR_NULL_PARAMETER);
  CHECK(onair_decoder_new(0, &d) == ONAIR_OK && d != NULL);
  CHECK(onair_decoder_feed(NULL, (const uint8_t *)"x", 1) == ONAIR_NULL_PARAMETER);
  CHECK(onair_decoder_feed(d, NULL, 5) == ONAIR_NULL_PARAMETER);
  CHECK(onair_decoder_feed(d, NULL, 0) == ONAIR_OK);

  onair_item item;
  const char *json;
  size_t json_len;
  CHECK(onair_decoder_item_json(d, &json, &json_len) == ONAIR_NO_CURRENT);
  CHECK(onair_decoder_next(d, NULL) == ONAIR_NULL_PARAMETER);

  /* Feed one byte at a time: frames split anywhere. */
  bool fed = true;
  for (size_t i = 0; i < sizeof(STREAM) - 1; i++)
    fed = fed && onair_decoder_feed(d, (const uint8_t *)STREAM + i, 1) == ONAIR_OK;
  CHECK(fed);
  CHECK(onair_decoder_pending(d) == 10);

  CHECK(onair_decoder_next(d, &item) == ONAIR_OK && item.kind == ONAIR_ITEM_HEARTBEAT);
  CHECK(onair_decoder_item_json(d, &json, &json_len) == ONAIR_OK);
  CHECK(strcmp(json, "{\"type\":\"heartbeat\"}") == 0 && json_len == strlen(json));

  CHECK(onair_decoder_next(d, &item) == ONAIR_OK && item.kind == ONAIR_ITEM_EVENT);
  CHECK(item.event.kind == ONAIR_EVENT_CHAT && item.event.is_dj);
  CHECK(eq(item.event.nickname, "DJ Mina") && eq(item.event.message, "Welcome!"));
  CHECK(eq(item.event.id, "1732250000000-0") && eq(item.id, "1732250000000-0"));
  CHECK(eq(item.event.name, "chat") && item.event.opaque != NULL);
  CHECK(onair_decoder_item_json(d, &json, &json_len) == ONAIR_OK);
  CHECK(contains(json, json_len, "\"type\":\"event\"") && contains(json, json_len, "\"isDj\":true"));
  char *owned = NULL;
  size_t owned_len = 0;
  CHECK(onair_event_json(&item.event, &owned, &owned_len) == ONAIR_OK);
  CHECK(owned != NULL && owned_len == json_len && strcmp(owned, json) == 0);
  onair_string_free(owned);

  CHECK(onair_decoder_next(d, &item) == ONAIR_OK && item.event.kind == ONAIR_EVENT_PRESENCE);
  CHECK(item.event.nickname.ptr == NULL && item.event.is_manager);
  CHECK(item.event.has_fan_rank && item.event.fan_rank == 2);
  CHECK(item.event.has_favorite_temperature && item.event.favorite_temperature == 36.5);
  CHECK(eq(item.event.presence_type, "JOIN"));

  CHECK(onair_decoder_next(d, &item) == ONAIR_OK && item.event.kind == ONAIR_EVENT_LIKE);
  CHECK(item.event.is_paid && eq(item.event.like_type, "PAID"));
  CHECK(item.event.total_amount == 60 && item.event.amount == 10 && item.event.extra_amount == 5);
  CHECK(item.event.has_combo && item.event.combo == 4);

  CHECK(onair_decoder_next(d, &item) == ONAIR_OK && item.event.kind == ONAIR_EVENT_DONATION);
  CHECK(item.event.amount == 500 && item.event.message.ptr == NULL);

  CHECK(onair_decoder_next(d, &item) == ONAIR_OK && item.kind == ONAIR_ITEM_COMMENT);
  CHECK(eq(item.text, " just a comment"));
  CHECK(onair_decoder_next(d, &item) == ONAIR_OK && item.kind == ONAIR_ITEM_RETRY && item.retry_ms == 3000);
  CHECK(onair_decoder_next(d, &item) == ONAIR_OK && item.kind == ONAIR_ITEM_UNKNOWN);
  CHECK(eq(item.name, "poll") && eq(item.text, "{\"q\":1}"));
  /* Bad JSON is an error item; the stream goes on. */
  CHECK(onair_decoder_next(d, &item) == ONAIR_OK && item.kind == ONAIR_ITEM_ERROR);
  CHECK(eq(item.error_code, "invalid_json") && eq(item.name, "chat") && item.error_message.len > 0);
  CHECK(onair_decoder_next(d, &item) == ONAIR_OK && item.event.kind == ONAIR_EVENT_END);
  CHECK(item.event.is_live_ended && eq(item.event.end_reason, "LIVE_ENDED"));
  CHECK(item.event.user_id.ptr == NULL);
  CHECK(onair_decoder_next(d, &item) == ONAIR_OK && item.kind == ONAIR_ITEM_NONE);
  CHECK(onair_decoder_item_json(d, &json, &json_len) == ONAIR_NO_CURRENT);

  /* A cut-off frame at the end of the stream. */
  CHECK(onair_decoder_feed(d, (const uint8_t *)"event:chat\ndata:{", 17) == ONAIR_OK);
  CHECK(onair_decoder_finish(NULL) == ONAIR_NULL_PARAMETER);
  CHECK(onair_decoder_finish(d) == ONAIR_OK);
  CHECK(onair_decoder_next(d, &item) == ONAIR_OK && item.kind == ONAIR_ITEM_ERROR);
  CHECK(eq(item.error_code, "incomplete_frame"));
  onair_decoder_free(d);

  /* Oversized frames are skipped, memory stays bounded, the next frame decodes. */
  CHECK(onair_decoder_new(64, &d) == ONAIR_OK);
  char big[4096];
  memcpy(big, "event:chat\ndata:", 16);
  memset(big + 16, 'x', sizeof(big) - 18);
  big[sizeof(big) - 2] = '\n';
  big[sizeof(big) - 1] = '\n';
  CHECK(onair_decoder_feed(d, (const uint8_t *)big, sizeof(big)) == ONAIR_OK);
  CHECK(onair_decoder_feed(d, (const uint8_t *)":heartbeat\n\n", 12) == ONAIR_OK);
  CHECK(onair_decoder_next(d, &item) == ONAIR_OK && item.kind == ONAIR_ITEM_ERROR);
  CHECK(eq(item.error_code, "frame_too_large"));
  CHECK(onair_decoder_next(d, &item) == ONAIR_OK && item.kind == ONAIR_ITEM_HEARTBEAT);
  onair_decoder_free(d);
}

/* onair_decoder_take_marshal, onair_decoder_feed_marshal and onair_decoder_take_json:
   every pending item in one call. The marshal batch is checked byte for byte on
   small streams (its reader is Python's marshal.loads; the Python tests read it). */
static bool bytes_are(const uint8_t *b, size_t n, const char *expected, size_t en) {
  return b != NULL && n == en && memcmp(b, expected, n) == 0;
}
#define BYTES_ARE(b, n, lit) bytes_are((b), (n), (lit), sizeof(lit) - 1)

static void test_decoder_batches(void) {
  onair_decoder *d = NULL;
  const uint8_t *b = NULL;
  size_t n = 1;
  CHECK(onair_decoder_new(0, &d) == ONAIR_OK);
  CHECK(onair_decoder_take_marshal(NULL, &b, &n) == ONAIR_NULL_PARAMETER);
  CHECK(onair_decoder_take_marshal(d, NULL, &n) == ONAIR_NULL_PARAMETER);
  CHECK(onair_decoder_take_marshal(d, &b, NULL) == ONAIR_NULL_PARAMETER);
  /* No items: ("", ()) */
  CHECK(onair_decoder_take_marshal(d, &b, &n) == ONAIR_OK && BYTES_ARE(b, n, ")\x02z\x00)\x00"));

  /* ("hr", ((), (3000,))) */
  CHECK(onair_decoder_feed(d, (const uint8_t *)S(":heartbeat\n\nretry:3000\n\n")) == ONAIR_OK);
  CHECK(onair_decoder_pending(d) == 2);
  CHECK(onair_decoder_take_marshal(d, &b, &n) == ONAIR_OK);
  CHECK(BYTES_ARE(b, n, ")\x02z\x02hr)\x02)\x00)\x01i\xb8\x0b\x00\x00"));
  CHECK(onair_decoder_pending(d) == 0);

  /* ("c", (("7-1", "u", None, True, "hi é", "t"),)): non-ASCII text is `u` + UTF-8 */
  static const char CHAT[] =
      "id:7-1\nevent:chat\ndata:{\"user\":{\"id\":\"u\",\"nickname\":null},\"isDj\":true,"
      "\"message\":\"hi \xc3\xa9\",\"sentTime\":\"t\"}\n\n";
  CHECK(onair_decoder_feed(d, (const uint8_t *)S(CHAT)) == ONAIR_OK);
  CHECK(onair_decoder_take_marshal(d, &b, &n) == ONAIR_OK);
  CHECK(BYTES_ARE(b, n, ")\x02z\x01" "c)\x01)\x06z\x03" "7-1z\x01uNTu\x05\x00\x00\x00hi \xc3\xa9z\x01t"));

  /* A like with a u64 past i32 (`l`, 15-bit digits) and a null combo; a float. */
  static const char LIKE[] =
      "event:like\ndata:{\"user\":{\"id\":\"u\",\"nickname\":\"n\"},\"type\":\"PAID\","
      "\"totalAmount\":2147483648,\"amount\":1,\"extraAmount\":0,\"combo\":null,\"time\":\"t\"}\n\n"
      "event:presence\ndata:{\"user\":{\"id\":\"u\",\"nickname\":\"n\"},\"type\":\"JOIN\",\"fanRank\":null,"
      "\"isManager\":false,\"favoriteTemperature\":0.5,\"time\":\"t\"}\n\n";
  CHECK(onair_decoder_feed(d, (const uint8_t *)S(LIKE)) == ONAIR_OK);
  CHECK(onair_decoder_take_marshal(d, &b, &n) == ONAIR_OK);
  CHECK(BYTES_ARE(b, n,
                  ")\x02z\x02lp)\x02"
                  ")\x09Nz\x01uz\x01nz\x04PAIDl\x03\x00\x00\x00\x00\x00\x00\x00\x02\x00i\x01\x00\x00\x00"
                  "i\x00\x00\x00\x00Nz\x01t"
                  ")\x08Nz\x01uz\x01nz\x04JOINNFg\x00\x00\x00\x00\x00\x00\xe0\x3fz\x01t"));
  const char *json;
  size_t json_len;
  CHECK(onair_decoder_item_json(d, &json, &json_len) == ONAIR_NO_CURRENT);

  /* feed_marshal: feed + take in one call; the same batches as feed then take_marshal. */
  onair_decoder *a = NULL;
  CHECK(onair_decoder_new(0, &a) == ONAIR_OK);
  CHECK(onair_decoder_feed_marshal(NULL, (const uint8_t *)"x", 1, &b, &n) == ONAIR_NULL_PARAMETER);
  CHECK(onair_decoder_feed_marshal(d, NULL, 5, &b, &n) == ONAIR_NULL_PARAMETER);
  CHECK(onair_decoder_feed_marshal(d, (const uint8_t *)STREAM, sizeof(STREAM) - 1, NULL, &n) == ONAIR_NULL_PARAMETER);
  CHECK(onair_decoder_feed_marshal(d, (const uint8_t *)STREAM, sizeof(STREAM) - 1, &b, NULL) == ONAIR_NULL_PARAMETER);
  CHECK(onair_decoder_pending(d) == 0); /* nothing was fed */
  bool same = true;
  size_t items = 0;
  static uint8_t expected[4096];
  for (size_t at = 0; at < sizeof(STREAM) - 1; at += 13) {
    size_t len = sizeof(STREAM) - 1 - at < 13 ? sizeof(STREAM) - 1 - at : 13;
    same = same && onair_decoder_feed(a, (const uint8_t *)STREAM + at, len) == ONAIR_OK;
    same = same && onair_decoder_take_marshal(a, &b, &n) == ONAIR_OK && n < sizeof(expected);
    if (!same) break;
    memcpy(expected, b, n);
    size_t en = n;
    same = same && onair_decoder_feed_marshal(d, (const uint8_t *)STREAM + at, len, &b, &n) == ONAIR_OK;
    same = same && n == en && memcmp(b, expected, n) == 0;
    items += b[3]; /* the tags' length: one per item */
  }
  CHECK(same && items == 10);
  /* Items queued by onair_decoder_feed come first. */
  CHECK(onair_decoder_feed(d, (const uint8_t *)S(":heartbeat\n\n")) == ONAIR_OK);
  CHECK(onair_decoder_feed_marshal(d, (const uint8_t *)S("retry:3000\n\n"), &b, &n) == ONAIR_OK);
  CHECK(BYTES_ARE(b, n, ")\x02z\x02hr)\x02)\x00)\x01i\xb8\x0b\x00\x00"));
  CHECK(onair_decoder_pending(d) == 0);
  onair_decoder_free(a);

  /* take_json: every pending item's canonical line. */
  CHECK(onair_decoder_feed(d, (const uint8_t *)S(":heartbeat\n\nretry:5\n\n")) == ONAIR_OK);
  CHECK(onair_decoder_take_json(NULL, &json, &json_len) == ONAIR_NULL_PARAMETER);
  CHECK(onair_decoder_take_json(d, &json, &json_len) == ONAIR_OK && json[json_len] == '\0');
  CHECK(strcmp(json, "{\"type\":\"heartbeat\"}\n{\"type\":\"retry\",\"ms\":5}\n") == 0);
  CHECK(onair_decoder_take_json(d, &json, &json_len) == ONAIR_OK && json_len == 0);
  onair_decoder_free(d);
}

static void test_sse_parser(void) {
  onair_sse_parser *p = NULL;
  onair_sse_item it;
  const char *json;
  size_t len;
  onair_str last;
  static const char RAW[] =
      "\xEF\xBB\xBFid: 7\r\nevent: poll\r\ndata: a\r\ndata: b\r\n\r\n"
      ":hi\n\nretry: 250\n\ndata: plain\n\n";
  CHECK(onair_sse_parser_new(0, NULL) == ONAIR_NULL_PARAMETER);
  CHECK(onair_sse_parser_new(0, &p) == ONAIR_OK);
  CHECK(onair_sse_parser_item_json(p, &json, &len) == ONAIR_NO_CURRENT);
  CHECK(onair_sse_parser_feed(p, (const uint8_t *)RAW, 20) == ONAIR_OK);
  CHECK(onair_sse_parser_feed(p, (const uint8_t *)RAW + 20, sizeof(RAW) - 21) == ONAIR_OK);
  CHECK(onair_sse_parser_pending(p) == 4);
  CHECK(onair_sse_parser_next(p, &it) == ONAIR_OK && it.kind == ONAIR_SSE_EVENT);
  CHECK(eq(it.event, "poll") && eq(it.data, "a\nb") && eq(it.id, "7") && eq(it.last_event_id, "7"));
  CHECK(onair_sse_parser_item_json(p, &json, &len) == ONAIR_OK && contains(json, len, "\"lastEventId\":\"7\""));
  CHECK(onair_sse_parser_next(p, &it) == ONAIR_OK && it.kind == ONAIR_SSE_COMMENT && eq(it.text, "hi"));
  CHECK(onair_sse_parser_next(p, &it) == ONAIR_OK && it.kind == ONAIR_SSE_RETRY && it.retry_ms == 250);
  CHECK(onair_sse_parser_next(p, &it) == ONAIR_OK && eq(it.event, "message") && it.id.ptr == NULL);
  CHECK(onair_sse_parser_last_event_id(p, &last) == ONAIR_OK && eq(last, "7"));
  CHECK(onair_sse_parser_next(p, &it) == ONAIR_OK && it.kind == ONAIR_SSE_NONE);
  CHECK(onair_sse_parser_feed(p, (const uint8_t *)"data: cut", 9) == ONAIR_OK && onair_sse_parser_finish(p) == ONAIR_OK);
  CHECK(onair_sse_parser_next(p, &it) == ONAIR_OK && it.kind == ONAIR_SSE_ERROR && eq(it.error_code, "incomplete_frame"));
  CHECK(onair_sse_parser_feed(NULL, NULL, 0) == ONAIR_NULL_PARAMETER);
  onair_sse_parser_free(p);
}

/* ---- classify, quota, retry-after, backoff ---------------------------------- */

static void test_decisions(void) {
  onair_problem p;
  static const char NOT_LIVE[] =
      "{\"status\":404,\"detailCode\":\"OAPI_MNGR_0301\",\"message\":\"not live\"}";
  onair_header ct = {S("Content-Type"), S("application/json")};
  CHECK(onair_classify(S("live"), 404, &ct, 1, (const uint8_t *)NOT_LIVE, strlen(NOT_LIVE), 0, &p) == ONAIR_OK);
  CHECK(eq(p.kind, "not_on_air") && eq(p.advice, "wait_not_on_air") && p.status == 404 && !p.is_ok);

  onair_header daily[2] = {{S("Retry-After"), S("120")}, {S("x-ratelimit-daily-scope"), S("fans.read")}};
  CHECK(onair_classify(S("fans"), 429, daily, 2, NULL, 0, 0, &p) == ONAIR_OK);
  CHECK(eq(p.kind, "quota_daily") && p.has_retry_after_ms && p.retry_after_ms == 120000);
  CHECK(onair_classify(S("chat"), 204, NULL, 0, NULL, 0, 0, &p) == ONAIR_OK && p.is_ok);

  char *json = NULL;
  size_t len = 0;
  CHECK(onair_classify_json(S("fans"), 429, daily, 2, NULL, 0, 0, &json, &len) == ONAIR_OK);
  CHECK(contains(json, len, "\"quotaScope\":\"fans.read\"") && contains(json, len, "\"retryAfterMs\":120000"));
  onair_string_free(json);
  /* Body bytes may be anything, even invalid UTF-8. */
  CHECK(onair_classify(S("chat"), 502, NULL, 0, (const uint8_t *)BAD_UTF8, 2, 0, &p) == ONAIR_OK);
  CHECK(eq(p.kind, "server_error"));

  /* Error paths; nothing is written. */
  p.status = 7;
  CHECK(onair_classify(S("nope"), 404, NULL, 0, NULL, 0, 0, &p) == ONAIR_UNKNOWN_ENDPOINT && p.status == 7);
  CHECK(onair_classify(BAD_UTF8, 2, 404, NULL, 0, NULL, 0, 0, &p) == ONAIR_INVALID_UTF8);
  CHECK(onair_classify(NULL, 4, 404, NULL, 0, NULL, 0, 0, &p) == ONAIR_NULL_PARAMETER);
  /* (NULL, 0) too: a NULL endpoint is not the empty name (fuzz finding). */
  CHECK(onair_classify(NULL, 0, 404, NULL, 0, NULL, 0, 0, &p) == ONAIR_NULL_PARAMETER);
  CHECK(onair_classify(S("live"), 404, NULL, 3, NULL, 0, 0, &p) == ONAIR_NULL_PARAMETER);
  CHECK(onair_classify(S("live"), 404, NULL, 0, NULL, 9, 0, &p) == ONAIR_NULL_PARAMETER);
  CHECK(onair_classify(S("live"), 404, NULL, 0, NULL, 0, 0, NULL) == ONAIR_NULL_PARAMETER);
  onair_header broken = {NULL, 3, S("x")};
  CHECK(onair_classify(S("live"), 404, &broken, 1, NULL, 0, 0, &p) == ONAIR_NULL_PARAMETER);

  onair_quota q;
  onair_header quota[3] = {
      {S("X-RateLimit-Remaining"), S("0")},
      {S("x-ratelimit-daily-remaining"), S("-1")},
      {S("x-ratelimit-replenish-rate"), S("10")},
  };
  CHECK(onair_quota_parse(quota, 3, 0, &q) == ONAIR_OK);
  CHECK(q.has_remaining && q.remaining == 0 && q.has_replenish_rate && q.replenish_rate == 10);
  CHECK(!q.has_daily_remaining && !q.retry_after_present);
  CHECK(onair_quota_parse(quota, 3, 0, NULL) == ONAIR_NULL_PARAMETER);

  uint64_t ms = 0;
  CHECK(onair_retry_after_ms((const uint8_t *)"30", 2, 0, &ms) == ONAIR_OK && ms == 30000);
  static const char DATE[] = "Thu, 01 Jan 1970 00:01:00 GMT";
  CHECK(onair_retry_after_ms((const uint8_t *)DATE, strlen(DATE), 15000, &ms) == ONAIR_OK && ms == 45000);
  ms = 1;
  CHECK(onair_retry_after_ms((const uint8_t *)"soon", 4, 0, &ms) == ONAIR_INVALID_ARGUMENT && ms == 1);

  onair_backoff *b = NULL, *b2 = NULL;
  CHECK(onair_backoff_new(0, 5, 1, &b) == ONAIR_INVALID_ARGUMENT && b == NULL);
  CHECK(onair_backoff_new(0, 0, 42, &b) == ONAIR_OK && onair_backoff_new(0, 0, 42, &b2) == ONAIR_OK);
  bool same = true, bounded = true;
  for (int i = 0; i < 8; i++) {
    uint64_t x = 0, y = 0;
    same = same && onair_backoff_next_delay_ms(b, &x) == ONAIR_OK &&
           onair_backoff_next_delay_ms(b2, &y) == ONAIR_OK && x == y;
    bounded = bounded && x <= 30000;
  }
  CHECK(same && bounded && onair_backoff_attempt(b) == 8);
  onair_backoff_reset(b);
  CHECK(onair_backoff_attempt(b) == 0);
  CHECK(onair_backoff_next_delay_ms(b, NULL) == ONAIR_NULL_PARAMETER);
  onair_backoff_free(b);
  onair_backoff_free(b2);
}

/* ---- the bot ---------------------------------------------------------------- */

static const char TOKEN_BODY[] =
    "{\"access_token\":\"AT-xyz\",\"token_type\":\"bearer\",\"refresh_token\":\"RT-xyz\","
    "\"expires_in\":3600,\"scope\":\"chat.send live.read events.chat events.presence "
    "events.like events.donation listeners.read fans.read\"}";

static const char BOT_STREAM[] =
    "event:presence\ndata:{\"user\":{\"id\":\"u-1\",\"nickname\":\"sky\"},\"type\":\"JOIN\","
    "\"fanRank\":null,\"isManager\":false,\"favoriteTemperature\":null,\"time\":\"t\"}\n\n"
    "event:chat\ndata:{\"user\":{\"id\":\"u-1\",\"nickname\":\"sky\"},\"isDj\":false,"
    "\"message\":\"!Hello  there\",\"sentTime\":\"t\"}\n\n"
    "event:presence\ndata:{\"user\":{\"id\":\"u-1\",\"nickname\":\"sky\"},\"type\":\"JOIN\","
    "\"fanRank\":null,\"isManager\":false,\"favoriteTemperature\":null,\"time\":\"t\"}\n\n"
    "event:donation\ndata:{\"user\":{\"id\":\"u-1\",\"nickname\":\"sky\"},\"amount\":700,"
    "\"message\":\"hi\",\"time\":\"t\"}\n\n"
    "event:chat\ndata:{\"user\":{\"id\":\"u-1\",\"nickname\":\"sky\"},\"isDj\":false,"
    "\"message\":\"!stop\",\"sentTime\":\"t\"}\n\n"
    "event:chat\ndata:{broken\n\n";

/* Polls until the action is of `kind`, at most 50 times, moving the clock
   to each WAIT's deadline. */
static bool poll_until(onair_bot *bot, uint64_t *now, onair_action_kind kind, onair_action *a) {
  for (int i = 0; i < 50; i++) {
    if (onair_bot_poll(bot, *now, a) != ONAIR_OK) return false;
    if (a->kind == kind) return true;
    if (a->kind == ONAIR_ACTION_WAIT) {
      if (!a->has_until_ms) return false;
      *now = a->until_ms;
    }
  }
  return false;
}

static void test_bot_errors(void) {
  onair_bot_config *cfg = NULL;
  CHECK(onair_bot_config_new(S("ftp://x"), S(CLIENT_ID), S("s"), &cfg) == ONAIR_INVALID_BASE_URL && cfg == NULL);
  CHECK(onair_bot_config_new(S("http://127.0.0.1:9"), S("not-a-uuid"), S("s"), &cfg) == ONAIR_INVALID_CREDENTIALS);
  CHECK(onair_bot_config_new(S("http://127.0.0.1:9"), S(CLIENT_ID), "", 0, &cfg) == ONAIR_INVALID_CREDENTIALS);
  CHECK(onair_bot_config_new(NULL, 0, S(CLIENT_ID), S("s"), &cfg) == ONAIR_NULL_PARAMETER);
  CHECK(onair_bot_config_new(BAD_UTF8, 2, S(CLIENT_ID), S("s"), &cfg) == ONAIR_INVALID_UTF8);
  CHECK(onair_bot_config_new(S("http://127.0.0.1:9"), S(CLIENT_ID), S("s"), NULL) == ONAIR_NULL_PARAMETER);
  CHECK(onair_bot_config_new(S("http://127.0.0.1:9"), S(CLIENT_ID), S("s"), &cfg) == ONAIR_OK);
  CHECK(onair_bot_config_set_request_timeout_ms(cfg, 0) == ONAIR_INVALID_ARGUMENT);
  CHECK(onair_bot_config_set_max_attempts(cfg, 0) == ONAIR_INVALID_ARGUMENT);
  CHECK(onair_bot_config_set_max_attempts(cfg, 2) == ONAIR_OK);
  CHECK(onair_bot_config_set_max_queued_calls(cfg, 1) == ONAIR_OK);
  CHECK(onair_bot_config_set_watchdog_ms(cfg, 0) == ONAIR_INVALID_ARGUMENT);
  CHECK(onair_bot_config_set_watchdog_ms(cfg, 60000) == ONAIR_OK);
  CHECK(onair_bot_config_set_connect_timeout_ms(cfg, 0) == ONAIR_INVALID_ARGUMENT);
  CHECK(onair_bot_config_set_connect_timeout_ms(cfg, 10000) == ONAIR_OK);
  CHECK(onair_bot_config_set_refresh_margin_ms(cfg, 300000) == ONAIR_OK);
  CHECK(onair_bot_config_set_refresh_margin_ms(NULL, 1) == ONAIR_NULL_PARAMETER);
  CHECK(onair_bot_config_set_events(NULL, true) == ONAIR_NULL_PARAMETER);

  onair_bot *bot = NULL;
  CHECK(onair_bot_new(cfg, S("{"), 1, &bot) == ONAIR_INVALID_TOKENS && bot == NULL);
  CHECK(onair_bot_new(cfg, S("{\"format\":\"other\"}"), 1, &bot) == ONAIR_INVALID_TOKENS);
  CHECK(onair_bot_new(NULL, NULL, 0, 1, &bot) == ONAIR_NULL_PARAMETER);
  CHECK(onair_bot_new(cfg, NULL, 0, 1, &bot) == ONAIR_OK);
  onair_bot_config_free(cfg);

  const char *text;
  size_t len;
  CHECK(onair_bot_last_error(bot, &text, &len) == ONAIR_OK && len == 0 && text[0] == '\0');
  CHECK(onair_bot_action_json(bot, &text, &len) == ONAIR_NO_CURRENT);
  CHECK(onair_bot_tokens_json(bot, &text, &len) == ONAIR_NO_TOKENS);
  /* Misuse of ids: nothing changes, the error is a code with a detail. */
  CHECK(onair_bot_on_response(bot, 999, 200, NULL, 0, NULL, 0, 0) == ONAIR_UNKNOWN_REQUEST);
  CHECK(onair_bot_last_error(bot, &text, &len) == ONAIR_OK && contains(text, len, "never issued"));
  CHECK(onair_bot_on_transport_error(bot, 999, 0) == ONAIR_UNKNOWN_REQUEST);
  CHECK(onair_bot_on_stream_open(bot, 999, 200, NULL, 0, 0) == ONAIR_UNKNOWN_REQUEST);
  CHECK(onair_bot_on_stream_bytes(bot, 999, (const uint8_t *)"x", 1, 0) == ONAIR_UNKNOWN_REQUEST);
  CHECK(onair_bot_on_stream_closed(bot, 999, 0) == ONAIR_UNKNOWN_REQUEST);
  CHECK(onair_bot_on_stream_bytes(bot, 999, NULL, 1, 0) == ONAIR_NULL_PARAMETER);
  /* Chat checked locally. */
  uint64_t call = 77;
  CHECK(onair_bot_send_chat(bot, S("  \n"), &call) == ONAIR_CHAT_EMPTY && call == 77);
  char longer[201];
  memset(longer, 'a', sizeof(longer));
  CHECK(onair_bot_send_chat(bot, longer, sizeof(longer), &call) == ONAIR_CHAT_TOO_LONG && call == 77);
  CHECK(onair_bot_last_error(bot, &text, &len) == ONAIR_OK && contains(text, len, "chat_too_long"));
  CHECK(onair_bot_send_chat(bot, BAD_UTF8, 2, &call) == ONAIR_INVALID_UTF8);
  CHECK(onair_bot_send_chat(bot, NULL, 0, &call) == ONAIR_NULL_PARAMETER);
  CHECK(onair_bot_send_chat(bot, S("hi"), NULL) == ONAIR_NULL_PARAMETER);
  /* A queue of one. */
  CHECK(onair_bot_fetch_fans(bot, &call) == ONAIR_OK && call == 1);
  /* The second is taken and refused by its DONE, never dropped silently. */
  CHECK(onair_bot_list_listeners(bot, &call) == ONAIR_OK && call == 2);
  CHECK(onair_bot_pending_calls(bot) == 1);
  {
    onair_action full;
    /* Not authorized yet: the first is held, and said so. */
    CHECK(onair_bot_poll(bot, 0, &full) == ONAIR_OK && full.kind == ONAIR_ACTION_NOTICE);
    CHECK(full.notice == ONAIR_NOTICE_CALL_HELD && full.call_id == 1);
    CHECK(onair_bot_poll(bot, 0, &full) == ONAIR_OK && full.kind == ONAIR_ACTION_DONE && full.call_id == 2);
    CHECK(full.done == ONAIR_DONE_FAILED && full.failure == ONAIR_FAILURE_QUEUE_FULL);
    CHECK(contains(full.message.ptr, full.message.len, "full"));
  }
  CHECK(onair_bot_authorize(bot, NULL, 0, S("x")) == ONAIR_NULL_PARAMETER);
  CHECK(onair_bot_authorize(bot, S("c"), BAD_UTF8, 2) == ONAIR_INVALID_UTF8);
  CHECK(onair_bot_poll(bot, 0, NULL) == ONAIR_NULL_PARAMETER);
  CHECK(onair_bot_shutdown(NULL, false) == ONAIR_NULL_PARAMETER);
  CHECK(onair_bot_request_reconnect(NULL, 0) == ONAIR_NULL_PARAMETER);
  onair_bot_free(bot);
}

static void test_bot_loop(void) {
  onair_bot_config *cfg = NULL;
  CHECK(onair_bot_config_new(S("http://127.0.0.1:9"), S(CLIENT_ID), S("secret"), &cfg) == ONAIR_OK);
  onair_bot *bot = NULL;
  CHECK(onair_bot_new(cfg, NULL, 0, 7, &bot) == ONAIR_OK);
  onair_bot_config_free(cfg);

  onair_action a;
  uint64_t now = 1000;
  const char *json;
  size_t json_len;
  CHECK(onair_bot_poll(bot, now, &a) == ONAIR_OK && a.kind == ONAIR_ACTION_NEEDS_AUTHORIZATION);
  CHECK(onair_bot_action_json(bot, &json, &json_len) == ONAIR_OK);
  CHECK(strcmp(json, "{\"type\":\"needsAuthorization\"}") == 0);

  CHECK(onair_bot_authorize(bot, S("consent-code"), S("https://bot.example/cb")) == ONAIR_OK);
  CHECK(onair_bot_poll(bot, now, &a) == ONAIR_OK && a.kind == ONAIR_ACTION_SEND);
  uint64_t token_id = a.request_id;
  CHECK(eq(a.request.endpoint, "token") && strcmp(a.request.method.ptr, "POST") == 0);
  CHECK(a.request.url.len == strlen(a.request.url.ptr) && contains(a.request.url.ptr, a.request.url.len, "/v1/oauth/token"));
  CHECK(a.request.headers_len > 0 && a.timeout_ms == 30000);
  bool lines_ok = true;
  for (size_t i = 0; i < a.request.headers_len; i++) {
    onair_header h = a.request.headers[i];
    const char *line = a.request.header_lines[i];
    lines_ok = lines_ok && strlen(line) == h.name_len + 2 + h.value_len &&
               memcmp(line, h.name, h.name_len) == 0 && h.name[h.name_len] == '\0';
  }
  CHECK(lines_ok);
  CHECK(contains((const char *)a.request.body, a.request.body_len, "grant_type=authorization_code"));
  CHECK(onair_bot_poll(bot, now, &a) == ONAIR_OK && a.kind == ONAIR_ACTION_WAIT);
  CHECK(a.has_until_ms && a.until_ms == now + 30000);

  onair_header ct = {S("Content-Type"), S("application/json")};
  CHECK(onair_bot_on_stream_bytes(bot, token_id, (const uint8_t *)"x", 1, now) == ONAIR_NOT_A_STREAM);
  CHECK(onair_bot_on_response(bot, token_id, 200, &ct, 1, (const uint8_t *)TOKEN_BODY, strlen(TOKEN_BODY), now) == ONAIR_OK);
  CHECK(onair_bot_poll(bot, now, &a) == ONAIR_OK && a.kind == ONAIR_ACTION_PERSIST_TOKENS);
  CHECK(a.tokens_json.len > 0 && strlen(a.tokens_json.ptr) == a.tokens_json.len);
  char *saved = malloc(a.tokens_json.len);
  size_t saved_len = a.tokens_json.len;
  if (saved != NULL) memcpy(saved, a.tokens_json.ptr, saved_len);

  CHECK(poll_until(bot, &now, ONAIR_ACTION_OPEN_STREAM, &a));
  uint64_t stream = a.request_id;
  CHECK(eq(a.request.endpoint, "events") && strcmp(a.request.method.ptr, "GET") == 0);
  bool bearer = false;
  for (size_t i = 0; i < a.request.headers_len; i++)
    bearer = bearer || strcmp(a.request.header_lines[i], "Authorization: Bearer AT-xyz") == 0;
  CHECK(bearer);
  CHECK(onair_bot_on_stream_bytes(bot, stream, (const uint8_t *)"x", 1, now) == ONAIR_STREAM_NOT_STARTED);
  CHECK(onair_bot_on_stream_open(bot, stream, 200, NULL, 0, now) == ONAIR_OK);
  CHECK(onair_bot_on_stream_open(bot, stream, 200, NULL, 0, now) == ONAIR_NOT_A_STREAM);

  /* Kit handles fed by the bot's events. */
  onair_audience *audience = NULL;
  onair_commands *commands = NULL;
  onair_milestones *milestones = NULL;
  onair_tally *tally = NULL;
  CHECK(onair_audience_new(&audience) == ONAIR_OK && onair_commands_new(&commands) == ONAIR_OK);
  CHECK(onair_milestones_new(1000, 500, &milestones) == ONAIR_OK && onair_tally_new(&tally) == ONAIR_OK);
  CHECK(onair_commands_add(commands, S("hello"), ONAIR_ALLOWED_ANYONE) == ONAIR_OK);
  CHECK(onair_commands_add(commands, S("stop"), ONAIR_ALLOWED_DJ) == ONAIR_OK);
  CHECK(onair_commands_add(commands, S("x"), 9) == ONAIR_INVALID_ARGUMENT);

  CHECK(onair_bot_on_stream_bytes(bot, stream, (const uint8_t *)BOT_STREAM, strlen(BOT_STREAM), now) == ONAIR_OK);
  int events = 0, firsts = 0, welcomes = 0, runs = 0, denials = 0, donors = 0, skipped = 0;
  for (int i = 0; i < 20; i++) {
    CHECK(onair_bot_poll(bot, now, &a) == ONAIR_OK);
    if (a.kind == ONAIR_ACTION_WAIT) break;
    if (a.kind == ONAIR_ACTION_NOTICE && a.notice == ONAIR_NOTICE_FRAME_SKIPPED) {
      skipped++;
      CHECK(eq(a.code, "invalid_json") && a.message.len > 0);
      continue;
    }
    if (a.kind != ONAIR_ACTION_EVENT) continue;
    events++;
    CHECK(onair_tally_record(tally, &a.event) == ONAIR_OK);
    onair_greeting g;
    CHECK(onair_audience_on_event(audience, &a.event, &g) == ONAIR_OK);
    if (g.kind == ONAIR_GREETING_FIRST) firsts++;
    if (g.kind == ONAIR_GREETING_WELCOME_BACK) welcomes++;
    if (g.kind != ONAIR_GREETING_NONE) CHECK(eq(g.user_id, "u-1") && eq(g.nickname, "sky"));
    onair_invocation inv;
    CHECK(onair_commands_match(commands, audience, &a.event, &inv) == ONAIR_OK);
    if (inv.kind == ONAIR_COMMAND_RUN) {
      runs++;
      CHECK(eq(inv.name, "hello") && eq(inv.rest, "there") && inv.args_len == 1 && eq(inv.args[0], "there"));
      CHECK(inv.role == ONAIR_ROLE_LISTENER && eq(inv.user_id, "u-1"));
    }
    if (inv.kind == ONAIR_COMMAND_DENIED) {
      denials++;
      CHECK(eq(inv.name, "stop") && inv.needed == ONAIR_ALLOWED_DJ);
    }
    onair_milestone m;
    CHECK(onair_milestones_on_event(milestones, &a.event, &m) == ONAIR_OK);
    if (m.kind == ONAIR_MILESTONE_DONATED) {
      donors++;
      CHECK(m.reached == 500 && m.total == 700 && eq(m.user_id, "u-1"));
      CHECK(onair_milestones_donated_by(milestones, a.event.user_id.ptr, a.event.user_id.len) == 700);
    }
  }
  CHECK(events == 5 && firsts == 1 && welcomes == 1 && runs == 1 && denials == 1 && donors == 1 && skipped == 1);
  CHECK(onair_audience_len(audience) == 1 && !onair_audience_is_manager(audience, S("u-1")));
  CHECK(onair_milestones_total_donated(milestones) == 700 && onair_milestones_hearts(milestones) == 0);
  CHECK(onair_tally_donated(tally) == 700 && onair_tally_attendance(tally) == 1 && onair_tally_hearts(tally) == 0);
  char *tally_json = NULL;
  size_t tally_len = 0;
  CHECK(onair_tally_json(tally, &tally_json, &tally_len) == ONAIR_OK);
  CHECK(contains(tally_json, tally_len, "\"donated\":700") && contains(tally_json, tally_len, "\"u-1\""));
  onair_string_free(tally_json);

  /* Stored kit state round-trips; bad state is refused. */
  char *stored = NULL;
  size_t stored_len = 0;
  onair_audience *again = NULL;
  CHECK(onair_audience_to_json(audience, &stored, &stored_len) == ONAIR_OK);
  CHECK(onair_audience_from_json(stored, stored_len, &again) == ONAIR_OK && onair_audience_len(again) == 1);
  onair_string_free(stored);
  onair_audience_free(again);
  again = NULL;
  CHECK(onair_audience_from_json(S("{\"format\":1}"), &again) == ONAIR_INVALID_STATE && again == NULL);
  onair_milestones *m2 = NULL;
  CHECK(onair_milestones_to_json(milestones, &stored, &stored_len) == ONAIR_OK);
  CHECK(onair_milestones_from_json(stored, stored_len, &m2) == ONAIR_OK);
  CHECK(onair_milestones_donated_by(m2, S("u-1")) == 700);
  onair_string_free(stored);
  onair_milestones_free(m2);
  CHECK(onair_milestones_from_json(S("nope"), &m2) == ONAIR_INVALID_STATE);
  bool fresh = false;
  CHECK(onair_audience_start_broadcast(audience, 42, &fresh) == ONAIR_OK);
  CHECK(onair_milestones_start_broadcast(milestones, 42, NULL) == ONAIR_OK);
  CHECK(onair_audience_end_broadcast(audience) == ONAIR_OK && onair_milestones_end_broadcast(milestones) == ONAIR_OK);
  onair_event empty = {0};
  onair_greeting g;
  CHECK(onair_audience_on_event(audience, &empty, &g) == ONAIR_NO_EVENT);
  CHECK(onair_tally_record(tally, NULL) == ONAIR_NULL_PARAMETER);

  /* A chat goes out and is answered. */
  uint64_t call = 0;
  CHECK(onair_bot_send_chat(bot, S("Hello, sky! 😀"), &call) == ONAIR_OK && call > 0);
  CHECK(poll_until(bot, &now, ONAIR_ACTION_SEND, &a));
  CHECK(eq(a.request.endpoint, "chat") && contains((const char *)a.request.body, a.request.body_len, "Hello, sky!"));
  CHECK(onair_bot_on_response(bot, a.request_id, 204, NULL, 0, NULL, 0, now) == ONAIR_OK);
  CHECK(poll_until(bot, &now, ONAIR_ACTION_DONE, &a));
  CHECK(a.call_id == call && a.done == ONAIR_DONE_CHAT_SENT && a.failure == ONAIR_FAILURE_NONE);
  CHECK(onair_bot_action_json(bot, &json, &json_len) == ONAIR_OK && contains(json, json_len, "\"chatSent\""));

  /* A call the service refuses for good. */
  CHECK(onair_bot_fetch_fans(bot, &call) == ONAIR_OK);
  CHECK(poll_until(bot, &now, ONAIR_ACTION_SEND, &a));
  static const char FORBIDDEN[] = "{\"status\":403,\"message\":\"no permission\"}";
  CHECK(onair_bot_on_response(bot, a.request_id, 403, &ct, 1, (const uint8_t *)FORBIDDEN, strlen(FORBIDDEN), now) == ONAIR_OK);
  CHECK(poll_until(bot, &now, ONAIR_ACTION_DONE, &a));
  CHECK(a.call_id == call && a.done == ONAIR_DONE_FAILED && a.failure == ONAIR_FAILURE_PROBLEM);
  CHECK(eq(a.code, "permission_missing") && a.message.len > 0);

  /* Tokens saved and loaded. */
  const char *tokens;
  size_t tokens_len;
  CHECK(onair_bot_tokens_json(bot, &tokens, &tokens_len) == ONAIR_OK && tokens_len > 0);
  onair_bot_config *cfg2 = NULL;
  onair_bot *resumed = NULL;
  CHECK(onair_bot_config_new(S("http://127.0.0.1:9"), S(CLIENT_ID), S("secret"), &cfg2) == ONAIR_OK);
  CHECK(onair_bot_new(cfg2, saved, saved_len, 9, &resumed) == ONAIR_OK);
  CHECK(onair_bot_poll(resumed, now, &a) == ONAIR_OK && a.kind == ONAIR_ACTION_OPEN_STREAM);
  onair_bot_free(resumed);
  onair_bot_config_free(cfg2);
  free(saved);

  /* App timers in the same loop; the status snapshot. */
  CHECK(onair_bot_schedule(bot, now + 10, S("greet-all")) == ONAIR_OK);
  CHECK(onair_bot_every(bot, 60000, S("tick"), now + 60000) == ONAIR_OK);
  CHECK(onair_bot_set_timer(bot, S("online"), now + 5, 0, true) == ONAIR_OK);
  CHECK(onair_bot_schedule(bot, now, "", 0) == ONAIR_BAD_TAG);
  CHECK(onair_bot_last_error(bot, &json, &json_len) == ONAIR_OK && json_len > 0);
  CHECK(onair_bot_every(bot, 5, BAD_UTF8, 2, 0) == ONAIR_INVALID_UTF8);
  /* A period of 0 is an argument out of range, not a bad tag (fuzz finding). */
  CHECK(onair_bot_every(bot, 0, S("zero"), now) == ONAIR_INVALID_ARGUMENT);
  CHECK(poll_until(bot, &now, ONAIR_ACTION_TIMER, &a) && eq(a.tag, "online"));
  CHECK(poll_until(bot, &now, ONAIR_ACTION_TIMER, &a) && eq(a.tag, "greet-all"));
  CHECK(onair_bot_action_json(bot, &json, &json_len) == ONAIR_OK);
  CHECK(strcmp(json, "{\"type\":\"timer\",\"tag\":\"greet-all\"}") == 0);
  bool found = false;
  CHECK(onair_bot_cancel_timer(bot, S("tick"), &found) == ONAIR_OK && found);
  CHECK(onair_bot_cancel_timer(bot, S("tick"), NULL) == ONAIR_OK);
  CHECK(onair_bot_status_json(bot, now, &json, &json_len) == ONAIR_OK);
  CHECK(json_len == strlen(json) && contains(json, json_len, "\"connection\"") && !contains(json, json_len, "AT-xyz"));
  CHECK(onair_bot_status_json(bot, now, NULL, &json_len) == ONAIR_NULL_PARAMETER);

  /* Shutdown: the stream is closed, the bot stops for good. */
  CHECK(onair_bot_request_reconnect(bot, now) == ONAIR_OK);
  CHECK(onair_bot_shutdown(bot, false) == ONAIR_OK);
  CHECK(poll_until(bot, &now, ONAIR_ACTION_STOPPED, &a));
  CHECK(eq(a.code, "shut_down") && !a.resumes_with_new_consent && a.message.len > 0);
  CHECK(onair_bot_send_chat(bot, S("late"), &call) == ONAIR_OK);
  CHECK(onair_bot_poll(bot, now, &a) == ONAIR_OK && a.kind == ONAIR_ACTION_DONE && a.call_id == call);
  CHECK(a.failure == ONAIR_FAILURE_STOPPED && eq(a.code, "shut_down"));
  /* A late report for the closed stream is harmless. */
  CHECK(onair_bot_on_stream_closed(bot, stream, now) == ONAIR_OK);

  onair_audience_free(audience);
  onair_commands_free(commands);
  onair_milestones_free(milestones);
  onair_tally_free(tally);
  onair_bot_free(bot);
}

/* ---- kit: text, commands, timers ---------------------------------------------- */

static void test_kit(void) {
  onair_string_list *list = NULL;
  char text[404];
  for (int i = 0; i < 101; i++) memcpy(text + 4 * i, "\xF0\x9F\x98\x80", 4); /* 101 x U+1F600 */
  CHECK(onair_text_split(text, sizeof(text), &list) == ONAIR_OK && onair_string_list_len(list) == 2);
  onair_str part;
  CHECK(onair_string_list_get(list, 0, &part) == ONAIR_OK && part.len == 400);
  CHECK(onair_string_list_get(list, 1, &part) == ONAIR_OK && part.len == 4);
  CHECK(onair_string_list_get(list, 2, &part) == ONAIR_OUT_OF_RANGE);
  onair_string_list_free(list);
  CHECK(onair_text_split(BAD_UTF8, 2, &list) == ONAIR_INVALID_UTF8);
  CHECK(onair_text_split(NULL, 0, &list) == ONAIR_NULL_PARAMETER);

  size_t units = 0;
  CHECK(onair_text_utf16_len(text, 8, &units) == ONAIR_OK && units == 4);
  char *cut = NULL;
  size_t cut_len = 0;
  CHECK(onair_text_truncate(S("hello wonderful world"), 12, S("\xE2\x80\xA6"), &cut, &cut_len) == ONAIR_OK);
  CHECK(cut != NULL && strcmp(cut, "hello wonde\xE2\x80\xA6") == 0 && cut_len == strlen(cut));
  onair_string_free(cut);
  CHECK(onair_text_truncate(S("x"), 1, NULL, 0, &cut, NULL) == ONAIR_NULL_PARAMETER);

  onair_commands *c = NULL;
  CHECK(onair_commands_new(&c) == ONAIR_OK);
  CHECK(onair_commands_set_prefix(c, S("?")) == ONAIR_OK && onair_commands_add_prefix(c, S("!")) == ONAIR_OK);
  CHECK(onair_commands_ignore(c, S("bot-self")) == ONAIR_OK);
  CHECK(onair_commands_set_prefix(c, BAD_UTF8, 2) == ONAIR_INVALID_UTF8);
  onair_invocation inv;
  onair_event none = {0};
  CHECK(onair_commands_match(c, NULL, &none, &inv) == ONAIR_NO_EVENT);
  onair_commands_free(c);

  onair_timers *t = NULL;
  CHECK(onair_timers_new(&t) == ONAIR_OK);
  CHECK(onair_timers_schedule(t, 100, S("once")) == ONAIR_OK);
  CHECK(onair_timers_every(t, 50, S("tick"), 20) == ONAIR_OK);
  CHECK(onair_timers_schedule(t, 1, "", 0) == ONAIR_BAD_TAG);
  CHECK(onair_timers_schedule(t, 1, S("bad\ntag")) == ONAIR_BAD_TAG);
  CHECK(onair_timers_every(t, 0, S("zero"), 1) == ONAIR_INVALID_ARGUMENT);
  bool has = false, found = false;
  uint64_t at = 0;
  CHECK(onair_timers_next_deadline(t, true, &has, &at) == ONAIR_OK && has && at == 20);
  onair_str tag;
  CHECK(onair_timers_pop_due(t, 10, true, &tag) == ONAIR_OK && tag.ptr == NULL);
  CHECK(onair_timers_pop_due(t, 100, true, &tag) == ONAIR_OK && eq(tag, "tick"));
  CHECK(onair_timers_pop_due(t, 100, true, &tag) == ONAIR_OK && eq(tag, "once"));
  CHECK(onair_timers_cancel(t, S("tick"), &found) == ONAIR_OK && found);
  CHECK(onair_timers_cancel(t, S("tick"), &found) == ONAIR_OK && !found);
  CHECK(onair_timers_next_deadline(t, true, &has, &at) == ONAIR_OK && !has);
  CHECK(onair_timers_next_deadline(t, true, NULL, &at) == ONAIR_NULL_PARAMETER);
  int set = 0;
  onair_result r = ONAIR_OK;
  char name[16];
  while (r == ONAIR_OK && set < 100000) {
    int n = snprintf(name, sizeof(name), "t%d", set);
    r = onair_timers_schedule(t, 5, name, (size_t)n);
    if (r == ONAIR_OK) set++;
  }
  CHECK(r == ONAIR_TOO_MANY_TIMERS && set > 0);
  onair_timers_free(t);
}

int main(void) {
  test_conventions();
  test_decoder();
  test_decoder_batches();
  test_sse_parser();
  test_decisions();
  test_bot_errors();
  test_bot_loop();
  test_kit();
  printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
