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
  CHECK(onair_decoder_free(NULL) == ONAIR_OK);
  CHECK(onair_bot_free(NULL) == ONAIR_OK);
  CHECK(onair_bot_config_free(NULL) == ONAIR_OK);
  CHECK(onair_backoff_free(NULL) == ONAIR_OK);
  CHECK(onair_string_list_free(NULL) == ONAIR_OK);
  CHECK(onair_sse_parser_free(NULL) == ONAIR_OK);
  CHECK(onair_decoder_pending(NULL) == 0);
  CHECK(onair_bot_pending_calls(NULL) == 0);
  /* A NULL out-parameter is refused and allocates nothing (ASan's leak
     check and valgrind would see a handle built first and dropped). */
  CHECK(onair_decoder_new(0, NULL) == ONAIR_NULL_PARAMETER);
  CHECK(onair_sse_parser_new(0, NULL) == ONAIR_NULL_PARAMETER);
  CHECK(onair_backoff_new(0, 0, 1, NULL) == ONAIR_NULL_PARAMETER);
  CHECK(onair_text_split(S("a b"), NULL) == ONAIR_NULL_PARAMETER);
  CHECK(onair_bot_new(NULL, NULL, 0, NULL, 0, 1, NULL) == ONAIR_NULL_PARAMETER);
  /* Codes added in ABI 3 have texts of their own. */
  CHECK(strcmp(onair_result_message(ONAIR_INVALID_KIT_CONFIG), onair_result_message(ONAIR_NO_KIT)) != 0);
}

/* ---- handles: freed and foreign ones are answered ----------------------------- */

/* A handle is a checked number, not an address: a double free, a call on a
   freed bot and a stale free after the slot is reused each get
   ONAIR_FREED_HANDLE, and nothing else is touched (under ASan and valgrind:
   no report, no leak). */
static void test_handles(void) {
  onair_bot_config *cfg = NULL;
  onair_bot *first = NULL, *second = NULL;
  onair_decoder *d = NULL;
  uint64_t id = 0;
  const char *text = NULL;
  size_t len = 0;
  CHECK(onair_bot_config_new(S("http://127.0.0.1:9"), S(CLIENT_ID), S("s"), &cfg) == ONAIR_OK);
  CHECK(onair_bot_new(cfg, NULL, 0, NULL, 0, 1, &first) == ONAIR_OK);
  CHECK(onair_bot_free(first) == ONAIR_OK);
  /* A double free. */
  CHECK(onair_bot_free(first) == ONAIR_FREED_HANDLE);
  /* A call on a freed bot: not ONAIR_BUSY. */
  CHECK(onair_bot_fetch_fans(first, &id) == ONAIR_FREED_HANDLE);
  CHECK(onair_bot_last_error(first, &text, &len) == ONAIR_FREED_HANDLE);
  CHECK(onair_bot_pending_calls(first) == 0);
  CHECK(strstr(onair_result_message(ONAIR_FREED_HANDLE), "freed") != NULL);
  /* The slot is reused by the next bot: a new handle value. */
  CHECK(onair_bot_new(cfg, NULL, 0, NULL, 0, 2, &second) == ONAIR_OK);
  CHECK(second != first);
  CHECK(onair_bot_fetch_fans(second, &id) == ONAIR_OK);
  /* A stale free after reuse frees nothing: the live bot keeps its call. */
  CHECK(onair_bot_free(first) == ONAIR_FREED_HANDLE);
  CHECK(onair_bot_pending_calls(second) == 1);
  CHECK(onair_bot_fetch_fans(second, &id) == ONAIR_OK);
  CHECK(onair_bot_pending_calls(second) == 2);
  /* Foreign pointers: another kind of handle, an address from malloc. */
  CHECK(onair_decoder_new(0, &d) == ONAIR_OK);
  CHECK(onair_bot_fetch_fans((onair_bot *)(void *)d, &id) == ONAIR_INVALID_HANDLE);
  CHECK(onair_bot_free((onair_bot *)(void *)d) == ONAIR_INVALID_HANDLE);
  CHECK(onair_decoder_pending(d) == 0 && onair_decoder_free(d) == ONAIR_OK);
  CHECK(onair_decoder_free(d) == ONAIR_FREED_HANDLE);
  uint64_t *heap = calloc(4, sizeof *heap);
  CHECK(heap != NULL);
  CHECK(onair_bot_fetch_fans((onair_bot *)(void *)heap, &id) == ONAIR_INVALID_HANDLE);
  CHECK(onair_bot_free((onair_bot *)(void *)heap) == ONAIR_INVALID_HANDLE);
  CHECK(heap[0] == 0 && heap[1] == 0);
  free(heap);
  CHECK(onair_bot_free(second) == ONAIR_OK);
  CHECK(onair_bot_config_free(cfg) == ONAIR_OK);
  CHECK(onair_bot_config_free(cfg) == ONAIR_FREED_HANDLE);
}

/* onair_bot_last_error describes the previous call only. */
static void test_last_error(void) {
  onair_bot_config *cfg = NULL;
  onair_bot *bot = NULL;
  const char *text = NULL;
  size_t len = 0;
  uint64_t id = 0;
  CHECK(onair_bot_config_new(S("http://127.0.0.1:9"), S(CLIENT_ID), S("s"), &cfg) == ONAIR_OK);
  CHECK(onair_bot_config_set_kit_json(cfg, S("{\"nope\":1}")) == ONAIR_INVALID_KIT_CONFIG);
  CHECK(onair_bot_config_last_error(cfg, &text, &len) == ONAIR_OK && len > 0);
  CHECK(onair_bot_config_set_events(cfg, true) == ONAIR_OK);
  CHECK(onair_bot_config_last_error(cfg, &text, &len) == ONAIR_OK && len == 0 && text[0] == '\0');
  CHECK(onair_bot_new(cfg, NULL, 0, NULL, 0, 1, &bot) == ONAIR_OK);
  CHECK(onair_bot_on_transport_error(bot, 4242, 1) == ONAIR_UNKNOWN_REQUEST);
  CHECK(onair_bot_last_error(bot, &text, &len) == ONAIR_OK && len > 0);
  CHECK(onair_bot_last_error(bot, &text, &len) == ONAIR_OK && len > 0); /* reading keeps it */
  CHECK(onair_bot_send_chat(bot, NULL, 3, &id) == ONAIR_NULL_PARAMETER);
  CHECK(onair_bot_last_error(bot, &text, &len) == ONAIR_OK && len == 0); /* not the older text */
  CHECK(onair_bot_on_transport_error(bot, 4242, 1) == ONAIR_UNKNOWN_REQUEST);
  CHECK(onair_bot_fetch_fans(bot, &id) == ONAIR_OK);
  CHECK(onair_bot_last_error(bot, &text, &len) == ONAIR_OK && len == 0);
  CHECK(onair_bot_free(bot) == ONAIR_OK);
  CHECK(onair_bot_config_free(cfg) == ONAIR_OK);
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

/* onair_event_json of the current item's event is its item line. */
static bool event_line_is_item_line(onair_decoder *d, const onair_item *item) {
  const char *json;
  size_t json_len;
  char *owned = NULL;
  size_t owned_len = 0;
  bool same = onair_decoder_item_json(d, &json, &json_len) == ONAIR_OK &&
              onair_event_json(&item->event, &owned, &owned_len) == ONAIR_OK && owned_len == json_len &&
              strcmp(owned, json) == 0;
  onair_string_free(owned);
  return same;
}

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
  CHECK(eq(item.event.name, "chat"));
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
  CHECK(event_line_is_item_line(d, &item));
  /* A view is plain fields: one without an event, or with a field its kind
     needs missing, is refused; invalid UTF-8 too. */
  onair_event copy = item.event;
  char *owned2 = NULL;
  copy.kind = ONAIR_EVENT_NONE;
  CHECK(onair_event_json(&copy, &owned2, NULL) == ONAIR_NO_EVENT);
  copy.kind = ONAIR_EVENT_OTHER;
  CHECK(onair_event_json(&copy, &owned2, NULL) == ONAIR_NO_EVENT);
  copy = item.event;
  copy.user_id.ptr = NULL;
  copy.user_id.len = 0;
  CHECK(onair_event_json(&copy, &owned2, NULL) == ONAIR_INVALID_ARGUMENT);
  copy = item.event;
  copy.time.ptr = BAD_UTF8;
  copy.time.len = 2;
  CHECK(onair_event_json(&copy, &owned2, NULL) == ONAIR_INVALID_UTF8);
  CHECK(onair_event_json(NULL, &owned2, NULL) == ONAIR_NULL_PARAMETER);
  CHECK(onair_event_json(&item.event, NULL, NULL) == ONAIR_NULL_PARAMETER && owned2 == NULL);

  CHECK(onair_decoder_next(d, &item) == ONAIR_OK && item.event.kind == ONAIR_EVENT_LIKE);
  CHECK(item.event.is_paid && eq(item.event.like_type, "PAID"));
  CHECK(item.event.total_amount == 60 && item.event.amount == 10 && item.event.extra_amount == 5);
  CHECK(item.event.has_combo && item.event.combo == 4);
  CHECK(event_line_is_item_line(d, &item));

  CHECK(onair_decoder_next(d, &item) == ONAIR_OK && item.event.kind == ONAIR_EVENT_DONATION);
  CHECK(item.event.amount == 500 && item.event.message.ptr == NULL);
  CHECK(event_line_is_item_line(d, &item));

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
  CHECK(event_line_is_item_line(d, &item));
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

/* onair_decoder_take_json: every pending item's canonical line in one call. */
static void test_decoder_batches(void) {
  onair_decoder *d = NULL;
  const char *json;
  size_t json_len;
  CHECK(onair_decoder_new(0, &d) == ONAIR_OK);
  CHECK(onair_decoder_take_json(d, NULL, &json_len) == ONAIR_NULL_PARAMETER);
  CHECK(onair_decoder_take_json(d, &json, NULL) == ONAIR_NULL_PARAMETER);
  CHECK(onair_decoder_item_json(d, &json, &json_len) == ONAIR_NO_CURRENT);

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

static const char BROADCAST_42[] =
    "{\"liveId\":42,\"title\":\"t\",\"startedAt\":\"2024-01-01T00:00:00Z\","
    "\"closeAirTime\":\"2024-01-01T01:00:00Z\",\"listenerCount\":2,\"totalListenerCount\":5,"
    "\"welcomeMessage\":\"hi\",\"isChatFrozen\":false,\"categories\":[],\"tags\":[]}";

/* The kit of the reference bots (scripts/e2e.d/README.md), !top for managers. */
static const char KIT[] =
    "{\"commands\":[{\"name\":\"hello\",\"aliases\":[\"hi\"]},{\"name\":\"top\",\"allowed\":\"managers\"}],"
    "\"greetings\":{\"welcome_back_after_ms\":600000},"
    "\"milestones\":{\"hearts_every\":100,\"donations_every\":1000},\"tally\":true}";

#define JOIN(id, nick)                                                                     \
  "event:presence\ndata:{\"user\":{\"id\":\"" id "\",\"nickname\":\"" nick "\"},\"type\":\"JOIN\"," \
  "\"fanRank\":null,\"isManager\":false,\"favoriteTemperature\":null,\"time\":\"t\"}\n\n"
#define CHAT(id, dj, text)                                                                 \
  "event:chat\ndata:{\"user\":{\"id\":\"" id "\",\"nickname\":\"sky\"},\"isDj\":" dj ","   \
  "\"message\":\"" text "\",\"sentTime\":\"t\"}\n\n"

/* A broadcast: a join, a command, a refused one, hearts over 100, a donation
   over 1000, the DJ's chat, a broken frame. Then (SESSION_END) its end. */
static const char SESSION[] =
    JOIN("u-1", "sky")
    CHAT("u-1", "false", "!Hello  there")
    CHAT("u-1", "false", "!top")
    "id:9-3\nevent:like\ndata:{\"user\":{\"id\":\"u-2\",\"nickname\":null},\"type\":\"PAID\",\"totalAmount\":120,"
    "\"amount\":10,\"extraAmount\":0,\"combo\":12,\"time\":\"t\"}\n\n"
    "event:donation\ndata:{\"user\":{\"id\":\"u-1\",\"nickname\":\"sky\"},\"amount\":1500,"
    "\"message\":\"hi\",\"time\":\"t\"}\n\n"
    CHAT("dj", "true", "Welcome!")
    "event:chat\ndata:{broken\n\n";
static const char SESSION_END[] = "id:9-9\nevent:end\ndata:{\"reason\":\"LIVE_ENDED\"}\n\n";

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

static onair_bot_config *config(void) {
  onair_bot_config *cfg = NULL;
  if (onair_bot_config_new(S("http://127.0.0.1:9"), S(CLIENT_ID), S("secret"), &cfg) != ONAIR_OK) return NULL;
  return cfg;
}

/* The config's last error holds `needle`. */
static bool config_error_says(onair_bot_config *cfg, const char *needle) {
  const char *text;
  size_t len;
  return onair_bot_config_last_error(cfg, &text, &len) == ONAIR_OK && text[len] == '\0' && contains(text, len, needle);
}

static void test_bot_errors(void) {
  onair_bot_config *cfg = NULL;
  CHECK(onair_bot_config_new(S("ftp://x"), S(CLIENT_ID), S("s"), &cfg) == ONAIR_INVALID_BASE_URL && cfg == NULL);
  CHECK(strstr(onair_result_message(ONAIR_INVALID_BASE_URL), "base_url") != NULL);
  CHECK(onair_bot_config_new(S("http://127.0.0.1:9"), S("not-a-uuid"), S("s"), &cfg) == ONAIR_INVALID_CLIENT_ID);
  CHECK(strstr(onair_result_message(ONAIR_INVALID_CLIENT_ID), "client_id must be a UUID") != NULL);
  CHECK(onair_bot_config_new(S("http://127.0.0.1:9"), S(CLIENT_ID), "", 0, &cfg) == ONAIR_INVALID_CLIENT_SECRET);
  CHECK(strstr(onair_result_message(ONAIR_INVALID_CLIENT_SECRET), "client_secret") != NULL);
  CHECK(cfg == NULL);
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

  /* The kit's configuration: every refusal names its key, nothing changes. */
  const char *text;
  size_t len;
  CHECK(onair_bot_config_last_error(cfg, &text, &len) == ONAIR_OK && len == 0 && text[0] == '\0');
  CHECK(onair_bot_config_set_kit_json(cfg, S("{\"commands\":[{\"name\":\"x\",\"allowed\":\"admins\"}]}")) ==
        ONAIR_INVALID_KIT_CONFIG);
  CHECK(config_error_says(cfg, "commands[0].allowed"));
  CHECK(onair_bot_config_set_kit_json(cfg, S("{\"milestones\":{\"hearts_every\":0}}")) == ONAIR_INVALID_KIT_CONFIG);
  CHECK(config_error_says(cfg, "milestones.hearts_every"));
  CHECK(onair_bot_config_set_kit_json(cfg, S("{\"greetngs\":{}}")) == ONAIR_INVALID_KIT_CONFIG);
  CHECK(config_error_says(cfg, "greetngs"));
  CHECK(onair_bot_config_set_kit_json(cfg, S("{")) == ONAIR_INVALID_KIT_CONFIG);
  CHECK(onair_bot_config_set_kit_json(cfg, BAD_UTF8, 2) == ONAIR_INVALID_UTF8);
  CHECK(onair_bot_config_set_kit_json(cfg, NULL, 0) == ONAIR_NULL_PARAMETER);
  CHECK(onair_bot_config_set_kit_json(NULL, S("{}")) == ONAIR_NULL_PARAMETER);
  CHECK(onair_bot_config_last_error(cfg, NULL, &len) == ONAIR_NULL_PARAMETER);

  onair_bot *bot = NULL;
  CHECK(onair_bot_new(cfg, S("{"), NULL, 0, 1, &bot) == ONAIR_INVALID_TOKENS && bot == NULL);
  CHECK(config_error_says(cfg, "line 1"));
  CHECK(onair_bot_new(cfg, S("{\"format\":\"other\"}"), NULL, 0, 1, &bot) == ONAIR_INVALID_TOKENS);
  /* The saved kit state: junk, another format, a newer version. */
  CHECK(onair_bot_new(cfg, NULL, 0, S("{"), 1, &bot) == ONAIR_INVALID_STATE && bot == NULL);
  CHECK(onair_bot_new(cfg, NULL, 0, S("{\"format\":\"onair.audience\",\"version\":1}"), 1, &bot) == ONAIR_INVALID_STATE);
  CHECK(onair_bot_new(cfg, NULL, 0, S("{\"format\":\"onair.kit\",\"version\":3}"), 1, &bot) == ONAIR_KIT_STATE_TOO_NEW);
  CHECK(config_error_says(cfg, "version 3"));
  CHECK(strcmp(onair_result_message(ONAIR_KIT_STATE_TOO_NEW), onair_result_message(ONAIR_INVALID_STATE)) != 0);
  CHECK(onair_bot_new(NULL, NULL, 0, NULL, 0, 1, &bot) == ONAIR_NULL_PARAMETER);
  CHECK(onair_bot_new(cfg, NULL, 0, NULL, 0, 1, &bot) == ONAIR_OK);
  onair_bot_config_free(cfg);

  CHECK(onair_bot_last_error(bot, &text, &len) == ONAIR_OK && len == 0 && text[0] == '\0');
  CHECK(onair_bot_action_json(bot, &text, &len) == ONAIR_NO_CURRENT);
  CHECK(onair_bot_tokens_json(bot, &text, &len) == ONAIR_NO_TOKENS);
  /* No kit configured: no tally, no donors. */
  onair_donor donor;
  CHECK(onair_bot_tally_json(bot, &text, &len) == ONAIR_NO_KIT);
  CHECK(onair_bot_donor(bot, 0, &donor) == ONAIR_NO_KIT);
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
  size_t count = 77;
  CHECK(onair_bot_say(bot, BAD_UTF8, 2, NULL, 0, &count) == ONAIR_INVALID_UTF8 && count == 77);
  CHECK(onair_bot_say(bot, NULL, 0, NULL, 0, &count) == ONAIR_NULL_PARAMETER && count == 77);
  CHECK(onair_bot_say(bot, S(" \n "), NULL, 0, &count) == ONAIR_OK && count == 0);
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

/* A bot with the kit `kit` from saved tokens and kit state (or none): the
   token exchange answered when it has no tokens, the stream opened and
   GET /v1/live answered with liveId 42. The stream's request id goes to
   *stream; NULL when a step went wrong. */
static onair_bot *kit_bot_with(const char *kit, const char *tokens, size_t tokens_len, const char *state,
                               size_t state_len, uint64_t *now, uint64_t *stream) {
  onair_bot_config *cfg = config();
  onair_bot *bot = NULL;
  bool ok = cfg != NULL && onair_bot_config_set_kit_json(cfg, kit, strlen(kit)) == ONAIR_OK &&
            onair_bot_new(cfg, tokens, tokens_len, state, state_len, 7, &bot) == ONAIR_OK;
  onair_bot_config_free(cfg);
  if (!ok) return NULL;
  onair_action a;
  onair_header ct = {S("Content-Type"), S("application/json")};
  bool live = false, open = false;
  for (int i = 0; i < 60 && !(live && open); i++) {
    if (onair_bot_poll(bot, *now, &a) != ONAIR_OK) break;
    if (a.kind == ONAIR_ACTION_NEEDS_AUTHORIZATION) {
      onair_bot_authorize(bot, S("consent-code"), S("https://bot.example/cb"));
    } else if (a.kind == ONAIR_ACTION_SEND && eq(a.request.endpoint, "token")) {
      onair_bot_on_response(bot, a.request_id, 200, &ct, 1, (const uint8_t *)TOKEN_BODY, strlen(TOKEN_BODY), *now);
    } else if (a.kind == ONAIR_ACTION_SEND && eq(a.request.endpoint, "live")) {
      live = onair_bot_on_response(bot, a.request_id, 200, &ct, 1, (const uint8_t *)BROADCAST_42,
                                   strlen(BROADCAST_42), *now) == ONAIR_OK;
    } else if (a.kind == ONAIR_ACTION_OPEN_STREAM) {
      *stream = a.request_id;
      open = onair_bot_on_stream_open(bot, a.request_id, 200, NULL, 0, *now) == ONAIR_OK;
    } else if (a.kind == ONAIR_ACTION_WAIT && a.has_until_ms) {
      *now = a.until_ms;
    }
  }
  if (!(live && open)) {
    onair_bot_free(bot);
    return NULL;
  }
  return bot;
}

static onair_bot *kit_bot(const char *tokens, size_t tokens_len, const char *state, size_t state_len, uint64_t *now,
                          uint64_t *stream) {
  return kit_bot_with(KIT, tokens, tokens_len, state, state_len, now, stream);
}

/* What a drain of kit actions held. */
typedef struct {
  int events, arrivals, firsts, commands, refused, milestones, ended, states, skipped;
  char *state; /* the last PERSIST_STATE's JSON, malloc'ed */
  size_t state_len;
} seen_t;

/* Polls until WAIT, checking every kit action's fields and JSON form. */
static void drain_kit(onair_bot *bot, uint64_t now, seen_t *s) {
  onair_action a;
  const char *json;
  size_t json_len;
  for (int i = 0; i < 60; i++) {
    CHECK(onair_bot_poll(bot, now, &a) == ONAIR_OK);
    if (a.kind == ONAIR_ACTION_WAIT) return;
    bool has_json = onair_bot_action_json(bot, &json, &json_len) == ONAIR_OK;
    switch (a.kind) {
    case ONAIR_ACTION_EVENT:
      s->events++;
      break;
    case ONAIR_ACTION_PERSIST_STATE:
      s->states++;
      CHECK(a.state_json.len == strlen(a.state_json.ptr) && contains(a.state_json.ptr, a.state_json.len, "\"onair.kit\""));
      free(s->state);
      s->state = malloc(a.state_json.len);
      s->state_len = a.state_json.len;
      if (s->state != NULL) memcpy(s->state, a.state_json.ptr, a.state_json.len);
      CHECK(has_json && contains(json, json_len, "\"type\":\"persistState\""));
      break;
    case ONAIR_ACTION_ARRIVAL:
      s->arrivals++;
      if (a.arrival == ONAIR_ARRIVAL_FIRST) s->firsts++;
      CHECK(a.has_live_id && a.live_id == 42 && a.away_ms == 0 && !a.is_manager);
      CHECK(a.event.kind == ONAIR_EVENT_PRESENCE);
      CHECK(a.event.user_id.len == a.user_id.len && memcmp(a.event.user_id.ptr, a.user_id.ptr, a.user_id.len) == 0);
      CHECK(has_json && contains(json, json_len, "\"type\":\"arrival\"") && contains(json, json_len, "\"liveId\":42"));
      /* The reply that greets them, as the core names it. */
      CHECK(contains(json, json_len, a.arrival == ONAIR_ARRIVAL_FIRST ? "\"replyKind\":\"welcome\"" : "\"replyKind\":\"welcome_back\""));
      break;
    case ONAIR_ACTION_COMMAND:
      s->commands++;
      CHECK(eq(a.name, "hello") && eq(a.rest, "there") && a.args_len == 1 && eq(a.args[0], "there"));
      CHECK(eq(a.user_id, "u-1") && eq(a.nickname, "sky") && a.role == ONAIR_ROLE_LISTENER);
      CHECK(a.event.kind == ONAIR_EVENT_CHAT && eq(a.event.message, "!Hello  there"));
      CHECK(has_json && contains(json, json_len, "\"type\":\"command\"") && contains(json, json_len, "\"args\":[\"there\"]"));
      CHECK(contains(json, json_len, "\"replyKind\":\"command\""));
      break;
    case ONAIR_ACTION_NOTICE:
      if (a.notice == ONAIR_NOTICE_FRAME_SKIPPED) s->skipped++;
      if (a.notice == ONAIR_NOTICE_COMMAND_REFUSED) {
        s->refused++;
        CHECK(eq(a.name, "top") && eq(a.user_id, "u-1") && a.role == ONAIR_ROLE_LISTENER);
        CHECK(a.needed == ONAIR_ALLOWED_MANAGERS && a.message.len > 0 && a.event.kind == ONAIR_EVENT_NONE);
        CHECK(has_json && contains(json, json_len, "\"kind\":\"commandRefused\""));
      }
      break;
    case ONAIR_ACTION_MILESTONE:
      s->milestones++;
      if (a.milestone == ONAIR_MILESTONE_HEARTS) {
        CHECK(a.reached == 100 && a.total == 120 && a.user_id.ptr == NULL);
        CHECK(a.event.kind == ONAIR_EVENT_LIKE && a.event.total_amount == 120 && eq(a.event.id, "9-3"));
        CHECK(has_json && contains(json, json_len, "\"kind\":\"hearts\""));
      } else {
        CHECK(a.milestone == ONAIR_MILESTONE_DONATED && a.reached == 1000 && a.total == 1500);
        CHECK(eq(a.user_id, "u-1") && eq(a.nickname, "sky") && a.event.kind == ONAIR_EVENT_DONATION);
        CHECK(has_json && contains(json, json_len, "\"kind\":\"donated\""));
      }
      break;
    case ONAIR_ACTION_BROADCAST_ENDED: {
      s->ended++;
      const char *t = a.tally_json.ptr;
      size_t n = a.tally_json.len;
      CHECK(a.has_live_id && a.live_id == 42 && t != NULL && t[n] == '\0');
      CHECK(strncmp(t, "{\"liveId\":42,\"hearts\":120,\"donated\":1500,\"attendance\":1,\"people\":{", 66) == 0);
      CHECK(contains(t, n, "\"u-2\"") && !contains(t, n, "\"dj\""));
      CHECK(a.event.kind == ONAIR_EVENT_END && a.event.is_live_ended && eq(a.event.id, "9-9"));
      /* The event view reads back as its canonical line. */
      char *line = NULL;
      CHECK(onair_event_json(&a.event, &line, NULL) == ONAIR_OK);
      CHECK(line != NULL && strcmp(line, "{\"type\":\"event\",\"event\":\"end\",\"id\":\"9-9\",\"data\":{\"reason\":\"LIVE_ENDED\"}}") == 0);
      onair_string_free(line);
      CHECK(has_json && contains(json, json_len, "\"type\":\"broadcastEnded\""));
      break;
    }
    default:
      break;
    }
  }
  CHECK(!"the drain never reached WAIT");
}

static void test_bot_loop(void) {
  onair_bot_config *cfg = config();
  onair_bot *bot = NULL;
  CHECK(onair_bot_new(cfg, NULL, 0, NULL, 0, 7, &bot) == ONAIR_OK);
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

  /* Without a kit: events only, no kit action. */
  CHECK(onair_bot_on_stream_bytes(bot, stream, (const uint8_t *)S(SESSION), now) == ONAIR_OK);
  seen_t plain = {0};
  drain_kit(bot, now, &plain);
  CHECK(plain.events == 6 && plain.skipped == 1);
  CHECK(plain.arrivals + plain.commands + plain.refused + plain.milestones + plain.states == 0);
  free(plain.state);

  /* A chat goes out and is answered. */
  uint64_t call = 0;
  CHECK(onair_bot_send_chat(bot, S("Hello, sky! 😀"), &call) == ONAIR_OK && call > 0);
  CHECK(poll_until(bot, &now, ONAIR_ACTION_SEND, &a));
  CHECK(eq(a.request.endpoint, "chat") && contains((const char *)a.request.body, a.request.body_len, "Hello, sky!"));
  CHECK(onair_bot_on_response(bot, a.request_id, 204, NULL, 0, NULL, 0, now) == ONAIR_OK);
  CHECK(poll_until(bot, &now, ONAIR_ACTION_DONE, &a));
  CHECK(a.call_id == call && a.done == ONAIR_DONE_CHAT_SENT && a.failure == ONAIR_FAILURE_NONE);
  CHECK(onair_bot_action_json(bot, &json, &json_len) == ONAIR_OK && contains(json, json_len, "\"chatSent\""));

  /* say: split between grapheme clusters, every part queued. */
  char text[404];
  for (int i = 0; i < 101; i++) memcpy(text + 4 * i, "\xF0\x9F\x98\x80", 4); /* 101 x U+1F600 */
  size_t count = 0;
  CHECK(onair_bot_say(bot, text, sizeof(text), NULL, 0, &count) == ONAIR_OK && count == 2);
  CHECK(onair_bot_say(bot, S("one"), NULL, 0, NULL) == ONAIR_OK);
  CHECK(onair_bot_pending_calls(bot) == 3);
  /* The call ids: as many as fit, every part queued all the same. */
  uint64_t ids[2] = {0, 0};
  CHECK(onair_bot_say(bot, S("two"), ids, 0, &count) == ONAIR_OK && count == 1 && ids[0] == 0);
  CHECK(onair_bot_say(bot, text, sizeof(text), ids, 1, &count) == ONAIR_OK && count == 2);
  CHECK(ids[0] != 0 && ids[1] == 0);
  CHECK(onair_bot_say(bot, S("x"), NULL, 1, &count) == ONAIR_NULL_PARAMETER);
  CHECK(onair_bot_pending_calls(bot) == 6);
  uint64_t more[8];
  CHECK(onair_bot_say(bot, text, sizeof(text), more, 8, &count) == ONAIR_OK && count == 2);
  CHECK(more[1] == more[0] + 1 && more[0] > ids[0]);
  CHECK(onair_bot_pending_calls(bot) == 8);
  CHECK(poll_until(bot, &now, ONAIR_ACTION_SEND, &a) && eq(a.request.endpoint, "chat"));
  CHECK(onair_bot_on_response(bot, a.request_id, 204, NULL, 0, NULL, 0, now) == ONAIR_OK);

  /* A call the service refuses for good. */
  CHECK(onair_bot_fetch_fans(bot, &call) == ONAIR_OK);
  static const char FORBIDDEN[] = "{\"status\":403,\"message\":\"no permission\"}";
  bool refused = false;
  for (int i = 0; i < 50 && !refused; i++) {
    CHECK(onair_bot_poll(bot, now, &a) == ONAIR_OK);
    if (a.kind == ONAIR_ACTION_SEND && eq(a.request.endpoint, "fans"))
      CHECK(onair_bot_on_response(bot, a.request_id, 403, &ct, 1, (const uint8_t *)FORBIDDEN, strlen(FORBIDDEN), now) == ONAIR_OK);
    else if (a.kind == ONAIR_ACTION_SEND) /* the chat parts */
      CHECK(onair_bot_on_response(bot, a.request_id, 204, NULL, 0, NULL, 0, now) == ONAIR_OK);
    else if (a.kind == ONAIR_ACTION_DONE && a.call_id == call) {
      refused = a.done == ONAIR_DONE_FAILED && a.failure == ONAIR_FAILURE_PROBLEM;
      CHECK(eq(a.code, "permission_missing") && a.message.len > 0);
    } else if (a.kind == ONAIR_ACTION_WAIT && a.has_until_ms)
      now = a.until_ms;
  }
  CHECK(refused);

  /* Tokens saved and loaded. */
  const char *tokens;
  size_t tokens_len;
  CHECK(onair_bot_tokens_json(bot, &tokens, &tokens_len) == ONAIR_OK && tokens_len > 0);
  onair_bot_config *cfg2 = config();
  onair_bot *resumed = NULL;
  CHECK(onair_bot_new(cfg2, saved, saved_len, NULL, 0, 9, &resumed) == ONAIR_OK);
  /* With saved tokens the bot checks the client credentials first: a revoke
     of a token that does not exist (200 for an authenticated client). */
  CHECK(onair_bot_poll(resumed, now, &a) == ONAIR_OK && a.kind == ONAIR_ACTION_SEND && eq(a.request.endpoint, "revoke"));
  CHECK(contains((const char *)a.request.body, a.request.body_len, "token=onair-credentials-check"));
  CHECK(onair_bot_on_response(resumed, a.request_id, 200, NULL, 0, NULL, 0, now) == ONAIR_OK);
  do CHECK(onair_bot_poll(resumed, now, &a) == ONAIR_OK); while (a.kind == ONAIR_ACTION_NOTICE);
  CHECK(a.kind == ONAIR_ACTION_OPEN_STREAM);
  onair_bot_free(resumed);
  onair_bot_config_free(cfg2);

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
  onair_bot_free(bot);
  free(saved);
}

/* ---- the kit, configured on the bot ------------------------------------------ */

static void test_kit_session(void) {
  uint64_t now = 1000, stream = 0;
  onair_bot *bot = kit_bot(NULL, 0, NULL, 0, &now, &stream);
  CHECK(bot != NULL);
  if (bot == NULL) return;
  const char *json;
  size_t len;
  CHECK(onair_bot_tally_json(bot, &json, &len) == ONAIR_OK);
  CHECK(strcmp(json, "{\"liveId\":42,\"hearts\":0,\"donated\":0,\"attendance\":0,\"people\":{}}") == 0 && len == strlen(json));
  const char *tokens;
  size_t tokens_len;
  CHECK(onair_bot_tokens_json(bot, &tokens, &tokens_len) == ONAIR_OK);
  char *saved_tokens = malloc(tokens_len);
  if (saved_tokens != NULL) memcpy(saved_tokens, tokens, tokens_len);

  /* The broadcast, fed in odd pieces. */
  bool fed = true;
  for (size_t at = 0; at < sizeof(SESSION) - 1; at += 37) {
    size_t n = sizeof(SESSION) - 1 - at < 37 ? sizeof(SESSION) - 1 - at : 37;
    fed = fed && onair_bot_on_stream_bytes(bot, stream, (const uint8_t *)SESSION + at, n, now) == ONAIR_OK;
  }
  CHECK(fed);
  seen_t s = {0};
  drain_kit(bot, now, &s);
  CHECK(s.events == 6 && s.skipped == 1);
  CHECK(s.arrivals == 1 && s.firsts == 1 && s.commands == 1 && s.refused == 1 && s.milestones == 2);
  /* The state is handed out at the latest a few seconds after a change. */
  now += 5000;
  drain_kit(bot, now, &s);
  CHECK(s.states >= 1 && s.state != NULL && s.ended == 0 && contains(s.state, s.state_len, "\"u-1\""));

  /* The tally and its donors, now. */
  CHECK(onair_bot_tally_json(bot, &json, &len) == ONAIR_OK);
  CHECK(strncmp(json, "{\"liveId\":42,\"hearts\":120,\"donated\":1500,\"attendance\":1,", 56) == 0);
  CHECK(contains(json, len, "\"u-1\":{\"nickname\":\"sky\",\"hearts\":0,\"paidHearts\":0,\"donated\":1500,\"donations\":1,\"joins\":1,\"chats\":2}"));
  onair_donor donor;
  CHECK(onair_bot_donor(bot, 0, &donor) == ONAIR_OK && eq(donor.user_id, "u-1") && eq(donor.nickname, "sky"));
  CHECK(donor.donated == 1500 && donor.donations == 1);
  CHECK(onair_bot_donor(bot, 1, &donor) == ONAIR_OUT_OF_RANGE);
  CHECK(onair_bot_donor(bot, 0, NULL) == ONAIR_NULL_PARAMETER);
  CHECK(onair_bot_tally_json(bot, NULL, &len) == ONAIR_NULL_PARAMETER);

  /* The end: the final tally, and a new broadcast's empty memory. */
  CHECK(onair_bot_on_stream_bytes(bot, stream, (const uint8_t *)S(SESSION_END), now) == ONAIR_OK);
  seen_t end = {0};
  drain_kit(bot, now, &end);
  CHECK(end.ended == 1 && end.events == 1 && end.states >= 1);
  CHECK(onair_bot_tally_json(bot, &json, &len) == ONAIR_OK && contains(json, len, "\"people\":{}"));
  CHECK(onair_bot_donor(bot, 0, &donor) == ONAIR_OUT_OF_RANGE);
  free(end.state);
  onair_bot_free(bot);

  /* A restart mid-broadcast, from the state saved before the end: u-1 is
     not greeted again, u-3 is; the totals go on. */
  onair_bot *again = kit_bot(saved_tokens, tokens_len, s.state, s.state_len, &now, &stream);
  CHECK(again != NULL);
  if (again != NULL) {
    static const char REJOIN[] = JOIN("u-1", "sky") JOIN("u-3", "mo");
    CHECK(onair_bot_on_stream_bytes(again, stream, (const uint8_t *)S(REJOIN), now) == ONAIR_OK);
    seen_t r = {0};
    drain_kit(again, now, &r);
    CHECK(r.events == 2 && r.arrivals == 1 && r.firsts == 1);
    CHECK(onair_bot_tally_json(again, &json, &len) == ONAIR_OK);
    CHECK(contains(json, len, "\"donated\":1500") && contains(json, len, "\"attendance\":2"));
    free(r.state);
    onair_bot_free(again);
  }
  free(s.state);
  free(saved_tokens);
}

/* ---- configured replies, merged when chat is behind ------------------------------ */

/* The reference bots' kit (scripts/e2e.d/README.md): the bot greets, thanks,
   calls milestones and answers !hello and !top by itself. */
#define REPLIES_KIT_WITH(extra)                                                                        \
  "{\"commands\":[{\"name\":\"hello\"},{\"name\":\"top\"}],"                                          \
  "\"greetings\":{\"welcome_back_after_ms\":600000},"                                                  \
  "\"milestones\":{\"hearts_every\":100,\"donations_every\":1000},\"tally\":true,"                     \
  "\"replies\":{\"commands\":{\"hello\":\"Hello, {nickname}!\",\"top\":\"Top donors: {top}\"}" extra "}}"
static const char REPLIES_KIT[] = REPLIES_KIT_WITH("");

#define NCHAT(id, nick, text)                                                                    \
  "event:chat\ndata:{\"user\":{\"id\":\"" id "\",\"nickname\":\"" nick "\"},\"isDj\":false,"      \
  "\"message\":\"" text "\",\"sentTime\":\"t\"}\n\n"
#define DONATION(id, nick, amount)                                                                \
  "event:donation\ndata:{\"user\":{\"id\":\"" id "\",\"nickname\":\"" nick "\"},\"amount\":" amount \
  ",\"message\":null,\"time\":\"t\"}\n\n"

/* The service's answer when the broadcast's chat limit holds a message. */
static const char CHAT_LIMITED[] =
    "{\"instance\":\"/v1/live/chat\",\"status\":429,\"title\":\"Too Many Requests\",\"detailCode\":\"OAPI_MNGR_0302\","
    "\"message\":\"chat limit\",\"userId\":null,\"extra\":null,\"timestamp\":1}";

/* What the service took and what the bot said it dropped. */
typedef struct {
  char messages[16][256]; /* the chat bodies taken, in order, NUL-terminated */
  int taken, limited;     /* messages taken; 429 OAPI_MNGR_0302 answers */
  uint64_t next_ok;       /* when the service takes the next message */
  int dropped_notices;
  uint64_t dropped_people;
  char dropped_kind[32], dropped_reason[32]; /* of the last drop notice */
  bool dropped_json;                         /* its JSON form said repliesDropped */
} chat_log_t;

static void copy_str(char *dst, size_t cap, onair_str s) {
  size_t n = s.ptr == NULL ? 0 : (s.len < cap - 1 ? s.len : cap - 1);
  if (n > 0) memcpy(dst, s.ptr, n);
  dst[n] = '\0';
}

/* Runs the bot from *now to `until`, the service taking one chat message
   every `every_ms` (0: none at all) and answering 429 OAPI_MNGR_0302 to the
   rest, as the broadcast's chat limit does. */
static void run_chat(onair_bot *bot, uint64_t *now, uint64_t until, uint64_t every_ms, chat_log_t *log) {
  onair_header ct = {S("Content-Type"), S("application/json")};
  onair_action a;
  const char *json;
  size_t json_len;
  for (int i = 0; i < 5000 && *now < until; i++) {
    if (onair_bot_poll(bot, *now, &a) != ONAIR_OK) break;
    if (a.kind == ONAIR_ACTION_SEND && eq(a.request.endpoint, "chat")) {
      if (every_ms > 0 && *now >= log->next_ok) {
        log->next_ok = *now + every_ms;
        if (log->taken < 16) {
          size_t n = a.request.body_len < 255 ? a.request.body_len : 255;
          memcpy(log->messages[log->taken], a.request.body, n);
          log->messages[log->taken][n] = '\0';
        }
        log->taken++;
        CHECK(onair_bot_on_response(bot, a.request_id, 204, NULL, 0, NULL, 0, *now) == ONAIR_OK);
      } else {
        log->limited++;
        CHECK(onair_bot_on_response(bot, a.request_id, 429, &ct, 1, (const uint8_t *)CHAT_LIMITED,
                                    strlen(CHAT_LIMITED), *now) == ONAIR_OK);
      }
    } else if (a.kind == ONAIR_ACTION_NOTICE && a.notice == ONAIR_NOTICE_REPLIES_DROPPED) {
      log->dropped_notices++;
      log->dropped_people += a.count;
      copy_str(log->dropped_kind, sizeof(log->dropped_kind), a.name);
      copy_str(log->dropped_reason, sizeof(log->dropped_reason), a.code);
      CHECK(a.is_warning && a.message.len > 0);
      log->dropped_json = onair_bot_action_json(bot, &json, &json_len) == ONAIR_OK &&
                          contains(json, json_len, "\"kind\":\"repliesDropped\"") &&
                          contains(json, json_len, "\"replyKind\":\"");
    } else if (a.kind == ONAIR_ACTION_WAIT) {
      *now = a.has_until_ms && a.until_ms < until ? a.until_ms : until;
    } else if (a.kind == ONAIR_ACTION_SEND || a.kind == ONAIR_ACTION_STOPPED) {
      CHECK(!"an unexpected request or stop");
      break;
    }
  }
}

/* The log holds a chat message with exactly this text. */
static bool said(const chat_log_t *log, const char *text) {
  char body[300];
  snprintf(body, sizeof(body), "{\"message\":\"%s\"}", text);
  for (int i = 0; i < log->taken && i < 16; i++)
    if (strcmp(log->messages[i], body) == 0) return true;
  fprintf(stderr, "not said: %s; said:\n", text);
  for (int i = 0; i < log->taken && i < 16; i++) fprintf(stderr, "  %s\n", log->messages[i]);
  return false;
}

/* Feeds one stream chunk, then lets the service take every message. */
static void feed_and_run(onair_bot *bot, uint64_t stream, const char *chunk, uint64_t *now, chat_log_t *log) {
  CHECK(onair_bot_on_stream_bytes(bot, stream, (const uint8_t *)chunk, strlen(chunk), *now) == ONAIR_OK);
  run_chat(bot, now, *now + 2000, 1, log);
}

static void test_replies_configured(void) {
  uint64_t now = 1000, stream = 0;
  onair_bot *bot = kit_bot_with(REPLIES_KIT, NULL, 0, NULL, 0, &now, &stream);
  CHECK(bot != NULL);
  if (bot == NULL) return;
  chat_log_t log = {0};
  /* The defaults: the texts the reference bots said by hand. */
  feed_and_run(bot, stream, JOIN("u-1", "Ana"), &now, &log);
  feed_and_run(bot, stream,
               "event:presence\ndata:{\"user\":{\"id\":\"u-2\",\"nickname\":null},\"type\":\"JOIN\","
               "\"fanRank\":null,\"isManager\":false,\"favoriteTemperature\":null,\"time\":\"t\"}\n\n",
               &now, &log);
  feed_and_run(bot, stream, NCHAT("u-1", "Ana", "!hello"), &now, &log);
  feed_and_run(bot, stream, NCHAT("u-1", "Ana", "!top"), &now, &log);
  feed_and_run(bot, stream,
               "event:like\ndata:{\"user\":{\"id\":\"u-2\",\"nickname\":null},\"type\":\"PAID\",\"totalAmount\":120,"
               "\"amount\":10,\"extraAmount\":0,\"combo\":12,\"time\":\"t\"}\n\n",
               &now, &log);
  feed_and_run(bot, stream, DONATION("u-1", "Ana", "1500"), &now, &log);
  CHECK(said(&log, "Welcome, Ana! 🎧"));
  CHECK(said(&log, "Welcome, friend! 🎧"));
  CHECK(said(&log, "Hello, Ana!"));
  CHECK(said(&log, "Top donors: No donations yet tonight."));
  CHECK(said(&log, "100 hearts tonight! 💜"));
  CHECK(said(&log, "Thank you, Ana!"));
  CHECK(said(&log, "Ana has given 1000 tonight!"));
  CHECK(log.taken == 7 && log.dropped_notices == 0);
  /* Counted per kind, in the typed counters and in the status JSON. */
  onair_reply_counters c;
  CHECK(onair_bot_reply_counters(bot, ONAIR_REPLY_WELCOME, &c) == ONAIR_OK);
  CHECK(c.messages == 2 && c.people == 2 && c.merged == 0 && c.dropped == 0);
  CHECK(onair_bot_reply_counters(bot, ONAIR_REPLY_COMMAND, &c) == ONAIR_OK && c.messages == 2);
  CHECK(onair_bot_reply_counters(bot, ONAIR_REPLY_MILESTONE, &c) == ONAIR_OK && c.messages == 2);
  CHECK(onair_bot_reply_counters(bot, ONAIR_REPLY_THANKS, &c) == ONAIR_OK && c.messages == 1 && c.people == 1);
  const char *json;
  size_t len;
  CHECK(onair_bot_status_json(bot, now, &json, &len) == ONAIR_OK);
  CHECK(contains(json, len, "\"replies\":{\"welcome\":{\"messages\":2,\"people\":2,\"merged\":0,\"dropped\":0,"));

  /* !top is one message now, the donors in it. */
  feed_and_run(bot, stream, NCHAT("u-2", "Mo", "!top"), &now, &log);
  CHECK(log.taken == 8 && strncmp(log.messages[7], "{\"message\":\"Top donors: 1. Ana 1500", 35) == 0);
  onair_bot_free(bot);
}

static void test_replies_merged(void) {
  uint64_t now = 1000, stream = 0;
  onair_bot *bot = kit_bot_with(REPLIES_KIT, NULL, 0, NULL, 0, &now, &stream);
  CHECK(bot != NULL);
  if (bot == NULL) return;
  /* Mina's welcome goes out at once; while it is in flight, three more
     arrive, one greeted by a handler's own text. */
  static const char MINA[] = JOIN("u-0", "Mina");
  CHECK(onair_bot_on_stream_bytes(bot, stream, (const uint8_t *)S(MINA), now) == ONAIR_OK);
  onair_action a;
  CHECK(poll_until(bot, &now, ONAIR_ACTION_SEND, &a) && eq(a.request.endpoint, "chat"));
  CHECK(contains((const char *)a.request.body, a.request.body_len, "Welcome, Mina! 🎧"));
  uint64_t first = a.request_id;
  static const char CROWD[] = JOIN("u-1", "Ana") JOIN("u-2", "Jörg");
  CHECK(onair_bot_on_stream_bytes(bot, stream, (const uint8_t *)S(CROWD), now) == ONAIR_OK);
  CHECK(onair_bot_reply(bot, ONAIR_REPLY_WELCOME, S("u-3"), S("Mia"), S("Mia! Good to see you again.")) == ONAIR_OK);
  /* A donation between them: thanks never merge with welcomes. */
  static const char GIFT[] = DONATION("u-1", "Ana", "5");
  CHECK(onair_bot_on_stream_bytes(bot, stream, (const uint8_t *)S(GIFT), now) == ONAIR_OK);
  CHECK(onair_bot_reply(bot, ONAIR_REPLY_THANKS, S("u-4"), NULL, 0, S("Thanks, kind stranger!")) == ONAIR_OK);
  CHECK(onair_bot_on_response(bot, first, 204, NULL, 0, NULL, 0, now) == ONAIR_OK);
  /* The chat limit: one message every 5 s, 0302 to the rest. */
  chat_log_t log = {0};
  run_chat(bot, &now, now + 30000, 5000, &log);
  CHECK(log.limited >= 1);
  CHECK(log.taken == 2);
  CHECK(said(&log, "Welcome, Ana, Jörg and Mia! 🎧"));
  CHECK(said(&log, "Thank you, Ana and friend!"));
  onair_reply_counters c;
  CHECK(onair_bot_reply_counters(bot, ONAIR_REPLY_WELCOME, &c) == ONAIR_OK);
  CHECK(c.messages == 2 && c.people == 4 && c.merged == 3 && c.dropped == 0);
  CHECK(onair_bot_reply_counters(bot, ONAIR_REPLY_THANKS, &c) == ONAIR_OK);
  CHECK(c.messages == 1 && c.people == 2 && c.merged == 2);

  /* Alone, a handler's text goes out as written. */
  CHECK(onair_bot_reply(bot, ONAIR_REPLY_THANKS, S("u-1"), S("Ana"), S("Ana, you are a star!")) == ONAIR_OK);
  run_chat(bot, &now, now + 10000, 5000, &log);
  CHECK(log.taken == 3 && said(&log, "Ana, you are a star!"));
  onair_bot_free(bot);
}

static void test_replies_dropped(void) {
  uint64_t now = 1000, stream = 0;
  onair_bot *bot =
      kit_bot_with(REPLIES_KIT_WITH(",\"fresh_ms\":{\"welcome\":10000}"), NULL, 0, NULL, 0, &now, &stream);
  CHECK(bot != NULL);
  if (bot == NULL) return;
  static const char CROWD[] = JOIN("u-1", "Ana") JOIN("u-2", "Jörg") JOIN("u-3", "Mia");
  CHECK(onair_bot_on_stream_bytes(bot, stream, (const uint8_t *)S(CROWD), now) == ONAIR_OK);
  CHECK(onair_bot_reply(bot, ONAIR_REPLY_WELCOME, S("u-4"), S("Zoë"), S("Zoë, welcome!")) == ONAIR_OK);
  /* The chat limit holds everything: after 10 s the welcomes are dropped,
     told once for the kind and reason, never sent late. */
  chat_log_t log = {0};
  run_chat(bot, &now, now + 30000, 0, &log);
  CHECK(log.taken == 0 && log.limited >= 1);
  CHECK(log.dropped_notices == 1 && log.dropped_people == 4);
  CHECK(strcmp(log.dropped_kind, "welcome") == 0 && strcmp(log.dropped_reason, "stale") == 0);
  CHECK(log.dropped_json);
  onair_reply_counters c;
  CHECK(onair_bot_reply_counters(bot, ONAIR_REPLY_WELCOME, &c) == ONAIR_OK);
  CHECK(c.messages == 0 && c.dropped == 4 && c.dropped_stale == 4 && c.dropped_ended == 0);
  const char *json;
  size_t len;
  CHECK(onair_bot_status_json(bot, now, &json, &len) == ONAIR_OK && contains(json, len, "\"droppedStale\":4"));

  /* What is still queued at the end is dropped the same way (`ended`). */
  static const char LATE[] = JOIN("u-5", "Lucas") DONATION("u-5", "Lucas", "5");
  CHECK(onair_bot_on_stream_bytes(bot, stream, (const uint8_t *)S(LATE), now) == ONAIR_OK);
  CHECK(onair_bot_on_stream_bytes(bot, stream, (const uint8_t *)S(SESSION_END), now) == ONAIR_OK);
  chat_log_t end = {0};
  run_chat(bot, &now, now + 1000, 0, &end);
  CHECK(end.dropped_notices == 2 && end.dropped_people == 2 && strcmp(end.dropped_reason, "ended") == 0);
  CHECK(onair_bot_reply_counters(bot, ONAIR_REPLY_THANKS, &c) == ONAIR_OK && c.dropped_ended == 1);
  onair_bot_free(bot);
}

static void test_reply_errors(void) {
  uint64_t now = 1000, stream = 0;
  onair_bot *bot = kit_bot_with(REPLIES_KIT, NULL, 0, NULL, 0, &now, &stream);
  CHECK(bot != NULL);
  if (bot == NULL) return;
  const char *text;
  size_t len;
  CHECK(onair_bot_reply(NULL, ONAIR_REPLY_WELCOME, S("u"), S("n"), S("hi")) == ONAIR_NULL_PARAMETER);
  CHECK(onair_bot_reply(bot, 0, S("u"), S("n"), S("hi")) == ONAIR_INVALID_ARGUMENT);
  CHECK(onair_bot_last_error(bot, &text, &len) == ONAIR_OK && contains(text, len, "onair_reply_kind"));
  CHECK(onair_bot_reply(bot, 6, S("u"), S("n"), S("hi")) == ONAIR_INVALID_ARGUMENT);
  CHECK(onair_bot_reply(bot, 0xFFFFFFFFu, S("u"), S("n"), S("hi")) == ONAIR_INVALID_ARGUMENT);
  CHECK(onair_bot_reply(bot, ONAIR_REPLY_WELCOME, NULL, 0, S("n"), S("hi")) == ONAIR_NULL_PARAMETER);
  CHECK(onair_bot_reply(bot, ONAIR_REPLY_WELCOME, "", 0, S("n"), S("hi")) == ONAIR_INVALID_ARGUMENT);
  CHECK(onair_bot_reply(bot, ONAIR_REPLY_WELCOME, S("u"), NULL, 3, S("hi")) == ONAIR_NULL_PARAMETER);
  CHECK(onair_bot_reply(bot, ONAIR_REPLY_WELCOME, S("u"), S("n"), NULL, 0) == ONAIR_NULL_PARAMETER);
  CHECK(onair_bot_reply(bot, ONAIR_REPLY_WELCOME, BAD_UTF8, 2, S("n"), S("hi")) == ONAIR_INVALID_UTF8);
  CHECK(onair_bot_reply(bot, ONAIR_REPLY_WELCOME, S("u"), BAD_UTF8, 2, S("hi")) == ONAIR_INVALID_UTF8);
  CHECK(onair_bot_reply(bot, ONAIR_REPLY_WELCOME, S("u"), S("n"), BAD_UTF8, 2) == ONAIR_INVALID_UTF8);
  CHECK(onair_bot_reply(bot, ONAIR_REPLY_THANKS, S("u"), S("n"), S(" \n ")) == ONAIR_CHAT_EMPTY);
  char longer[201];
  memset(longer, 'a', sizeof(longer));
  CHECK(onair_bot_reply(bot, ONAIR_REPLY_COMMAND, S("u"), S("n"), longer, sizeof(longer)) == ONAIR_CHAT_TOO_LONG);
  CHECK(onair_bot_last_error(bot, &text, &len) == ONAIR_OK && contains(text, len, "chat_too_long"));
  /* 200 UTF-16 units is one message: taken. */
  CHECK(onair_bot_reply(bot, ONAIR_REPLY_COMMAND, S("u"), NULL, 0, longer, 200) == ONAIR_OK);
  CHECK(onair_bot_last_error(bot, &text, &len) == ONAIR_OK && len == 0);
  onair_reply_counters c = {0};
  c.messages = 77;
  CHECK(onair_bot_reply_counters(bot, 0, &c) == ONAIR_INVALID_ARGUMENT && c.messages == 77);
  CHECK(onair_bot_reply_counters(bot, ONAIR_REPLY_COMMAND, NULL) == ONAIR_NULL_PARAMETER);
  CHECK(onair_bot_reply_counters(NULL, ONAIR_REPLY_COMMAND, &c) == ONAIR_NULL_PARAMETER);
  /* Only the good one went out. */
  chat_log_t log = {0};
  run_chat(bot, &now, now + 5000, 1, &log);
  CHECK(log.taken == 1 && log.limited == 0 && strlen(log.messages[0]) == strlen("{\"message\":\"\"}") + 200);
  CHECK(onair_bot_reply_counters(bot, ONAIR_REPLY_COMMAND, &c) == ONAIR_OK && c.messages == 1 && c.people == 1);
  CHECK(onair_bot_reply_counters(bot, ONAIR_REPLY_WELCOME, &c) == ONAIR_OK && c.messages == 0 && c.dropped == 0);
  onair_bot_free(bot);
}

/* ---- text helpers -------------------------------------------------------------- */

/* ---- the app's daily quota, shared between bots ----------------------------- */

/* A bot without the stream, its token exchange answered: it only calls. */
static onair_bot *calling_bot(uint64_t *now) {
  onair_bot_config *cfg = config();
  onair_bot *bot = NULL;
  bool ok = cfg != NULL && onair_bot_config_set_events(cfg, false) == ONAIR_OK &&
            onair_bot_new(cfg, NULL, 0, NULL, 0, 7, &bot) == ONAIR_OK;
  onair_bot_config_free(cfg);
  if (!ok) return NULL;
  onair_action a;
  onair_header ct = {S("Content-Type"), S("application/json")};
  ok = poll_until(bot, now, ONAIR_ACTION_NEEDS_AUTHORIZATION, &a) &&
       onair_bot_authorize(bot, S("consent-code"), S("https://bot.example/cb")) == ONAIR_OK &&
       poll_until(bot, now, ONAIR_ACTION_SEND, &a) && eq(a.request.endpoint, "token") &&
       onair_bot_on_response(bot, a.request_id, 200, &ct, 1, (const uint8_t *)TOKEN_BODY, strlen(TOKEN_BODY), *now) ==
           ONAIR_OK;
  if (!ok) {
    onair_bot_free(bot);
    return NULL;
  }
  return bot;
}

/* The next SEND of `endpoint` answered with `status`, `headers` and `body`;
   then polled until the call's DONE. */
static bool answer(onair_bot *bot, uint64_t *now, const char *endpoint, uint16_t status, const onair_header *headers,
                   size_t headers_len, const char *body) {
  onair_action a;
  for (int i = 0; i < 20; i++) {
    if (!poll_until(bot, now, ONAIR_ACTION_SEND, &a)) return false;
    if (eq(a.request.endpoint, endpoint)) break;
  }
  if (!eq(a.request.endpoint, endpoint)) return false;
  return onair_bot_on_response(bot, a.request_id, status, headers, headers_len, (const uint8_t *)body,
                               strlen(body), *now) == ONAIR_OK &&
         poll_until(bot, now, ONAIR_ACTION_DONE, &a);
}

static void test_daily_quota_shared(void) {
  const uint64_t T = 1700000000000; /* the daily reset below is an hour later */
  uint64_t now_a = T, now_b = T;
  onair_bot *a = calling_bot(&now_a), *b = calling_bot(&now_b);
  CHECK(a != NULL && b != NULL);
  if (a == NULL || b == NULL) {
    onair_bot_free(a);
    onair_bot_free(b);
    return;
  }
  const char *json;
  size_t len;
  CHECK(onair_bot_daily_quota_json(a, now_a, &json, &len) == ONAIR_OK);
  CHECK(strcmp(json, "{\"remaining\":null,\"resetMs\":null,\"blocks\":[]}") == 0);

  /* Each bot learns its part: the same day's count (40, then 12 left), and
     a daily 429 for one permission each. */
  onair_header ct = {S("Content-Type"), S("application/json")};
  onair_header day_a[] = {ct, {S("x-ratelimit-daily-remaining"), S("40")},
                          {S("x-ratelimit-daily-reset"), S("1700003600")}};
  onair_header day_b[] = {ct, {S("x-ratelimit-daily-remaining"), S("12")},
                          {S("x-ratelimit-daily-reset"), S("1700003600")}};
  onair_header fans_out[] = {{S("Retry-After"), S("3600")}, {S("x-ratelimit-daily-scope"), S("fans.read")}};
  onair_header listeners_out[] = {{S("Retry-After"), S("1800")},
                                  {S("x-ratelimit-daily-scope"), S("listeners.read")}};
  uint64_t call;
  CHECK(onair_bot_fetch_broadcast(a, &call) == ONAIR_OK && answer(a, &now_a, "live", 200, day_a, 3, BROADCAST_42));
  CHECK(onair_bot_fetch_fans(a, &call) == ONAIR_OK && answer(a, &now_a, "fans", 429, fans_out, 2, ""));
  CHECK(onair_bot_fetch_broadcast(b, &call) == ONAIR_OK && answer(b, &now_b, "live", 200, day_b, 3, BROADCAST_42));
  CHECK(onair_bot_list_listeners(b, &call) == ONAIR_OK && answer(b, &now_b, "listeners", 429, listeners_out, 2, ""));
  uint64_t now = now_a > now_b ? now_a : now_b;

  /* The app's view: the merge of both, the lower count on the same reset,
     a block per scope. */
  char *app = NULL, *merged = NULL;
  size_t app_len = 0, merged_len = 0;
  bool changed = false;
  CHECK(onair_bot_daily_quota_json(a, now, &json, &len) == ONAIR_OK && contains(json, len, "\"remaining\":40"));
  CHECK(onair_daily_quota_merge(NULL, 0, json, len, now, &app, &app_len, &changed) == ONAIR_OK && changed);
  CHECK(onair_bot_daily_quota_json(b, now, &json, &len) == ONAIR_OK && contains(json, len, "\"remaining\":12"));
  CHECK(onair_daily_quota_merge(app, app_len, json, len, now, &merged, &merged_len, &changed) == ONAIR_OK && changed);
  CHECK(merged != NULL && strlen(merged) == merged_len);
  CHECK(contains(merged, merged_len, "\"remaining\":12,\"resetMs\":1700003600000"));
  CHECK(contains(merged, merged_len, "{\"scope\":\"fans.read\",\"untilMs\":1700003600000}"));
  CHECK(contains(merged, merged_len, "{\"scope\":\"listeners.read\",\"untilMs\":1700001800000}"));
  /* Merging the same again changes nothing. */
  char *again = NULL;
  CHECK(onair_daily_quota_merge(merged, merged_len, json, len, now, &again, NULL, &changed) == ONAIR_OK && !changed);
  CHECK(again != NULL && strcmp(again, merged) == 0);
  onair_string_free(again);

  /* Fed back, bot A holds what bot B learned: its listener call fails fast
     as quota_blocked (no request), its other calls still go. */
  CHECK(onair_bot_share_daily_quota_json(a, merged, merged_len, now) == ONAIR_OK);
  uint64_t blocked = 0;
  onair_action act;
  CHECK(onair_bot_list_listeners(a, &blocked) == ONAIR_OK);
  CHECK(poll_until(a, &now, ONAIR_ACTION_DONE, &act) && act.call_id == blocked && act.done == ONAIR_DONE_FAILED &&
        act.failure == ONAIR_FAILURE_QUOTA_BLOCKED && act.has_until_ms && act.until_ms == 1700001800000);
  CHECK(onair_bot_fetch_broadcast(a, &call) == ONAIR_OK && answer(a, &now, "live", 200, &ct, 1, BROADCAST_42));
  CHECK(onair_bot_daily_quota_json(a, now, &json, &len) == ONAIR_OK &&
        contains(json, len, "{\"scope\":\"listeners.read\",\"untilMs\":1700001800000}"));

  /* Errors: not a daily quota's JSON object, NULL, not UTF-8. */
  char *none = NULL;
  CHECK(onair_daily_quota_merge(S("[40,1700003600000,[]]"), S("{}"), now, &none, NULL, NULL) == ONAIR_INVALID_ARGUMENT);
  CHECK(onair_daily_quota_merge(S("{}"), S("{\"remaining\":\"many\"}"), now, &none, NULL, NULL) ==
        ONAIR_INVALID_ARGUMENT);
  CHECK(onair_daily_quota_merge(S("{}"), S("{}"), now, NULL, NULL, NULL) == ONAIR_NULL_PARAMETER);
  CHECK(onair_daily_quota_merge(NULL, 2, S("{}"), now, &none, NULL, NULL) == ONAIR_NULL_PARAMETER);
  CHECK(onair_daily_quota_merge(S(BAD_UTF8), S("{}"), now, &none, NULL, NULL) == ONAIR_INVALID_UTF8);
  CHECK(none == NULL);
  CHECK(onair_bot_share_daily_quota_json(b, S("blocks"), now) == ONAIR_INVALID_ARGUMENT);
  const char *detail;
  size_t detail_len;
  CHECK(onair_bot_last_error(b, &detail, &detail_len) == ONAIR_OK && contains(detail, detail_len, "daily quota"));
  CHECK(onair_bot_share_daily_quota_json(b, NULL, 0, now) == ONAIR_NULL_PARAMETER);
  CHECK(onair_bot_daily_quota_json(b, now, NULL, &len) == ONAIR_NULL_PARAMETER);
  onair_string_free(app);
  onair_string_free(merged);
  onair_bot_free(a);
  onair_bot_free(b);
}

static void test_text(void) {
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
}

/* ---- a shutdown waits for a token request, at most the configured grace --- */

static void test_shutdown_grace(void) {
  CHECK(onair_bot_config_set_shutdown_grace_ms(NULL, 5) == ONAIR_NULL_PARAMETER);
  uint64_t graces[2] = {500, 0};
  for (int i = 0; i < 2; i++) {
    onair_bot_config *cfg = config();
    CHECK(cfg != NULL && onair_bot_config_set_shutdown_grace_ms(cfg, graces[i]) == ONAIR_OK);
    onair_bot *bot = NULL;
    CHECK(onair_bot_new(cfg, NULL, 0, NULL, 0, 5, &bot) == ONAIR_OK);
    onair_bot_config_free(cfg);
    if (bot == NULL) return;
    onair_action a;
    uint64_t now = 1000;
    CHECK(onair_bot_poll(bot, now, &a) == ONAIR_OK && a.kind == ONAIR_ACTION_NEEDS_AUTHORIZATION);
    CHECK(onair_bot_authorize(bot, S("consent-code"), S("https://bot.example/cb")) == ONAIR_OK);
    CHECK(onair_bot_poll(bot, now, &a) == ONAIR_OK && a.kind == ONAIR_ACTION_SEND && eq(a.request.endpoint, "token"));
    /* The token request stays in flight: the shutdown waits for it, at most the grace. */
    CHECK(onair_bot_shutdown(bot, false) == ONAIR_OK);
    CHECK(poll_until(bot, &now, ONAIR_ACTION_STOPPED, &a) && eq(a.code, "shut_down"));
    CHECK(now == 1000 + graces[i]);
    onair_bot_free(bot);
  }
}

int main(void) {
  test_conventions();
  test_handles();
  test_last_error();
  test_decoder();
  test_decoder_batches();
  test_sse_parser();
  test_decisions();
  test_bot_errors();
  test_bot_loop();
  test_kit_session();
  test_replies_configured();
  test_replies_merged();
  test_replies_dropped();
  test_reply_errors();
  test_daily_quota_shared();
  test_shutdown_grace();
  test_text();
  printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
