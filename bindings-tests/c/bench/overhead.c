/*
 * The C side of the C API's overhead benchmark (scripts/bench-c): the same
 * work as ffi/examples/overhead.rs, through libonair. (1) Feed a 4 KiB chunk
 * of chat frames to an onair_decoder and take every item (reading each
 * chat's message length); (2) a full Bot turn: one chat frame in
 * (onair_bot_on_stream_bytes), onair_bot_poll until ONAIR_ACTION_WAIT.
 * Prints "c <name> <ns per op>" lines (the median of 7 batches).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "onair.h"

#define T0 1732250000000ull

static const char CHAT[] =
    "id:1732250000000-17\nevent:chat\ndata:{\"user\":{\"id\":\"3b1f9c0e7a2d4b8f\","
    "\"nickname\":\"\xED\x95\x98\xEB\x8A\x98\"},\"isDj\":false,\"message\":\"\xEC\x95\x88\xEB\x85\x95"
    "\xED\x95\x98\xEC\x84\xB8\xEC\x9A\x94! first time here \xF0\x9F\x91\x8B\","
    "\"sentTime\":\"2024-11-22T04:33:20.123Z\"}\n\n";

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static volatile size_t sink;

static void must(onair_result r, const char *what) {
  if (r != ONAIR_OK) {
    fprintf(stderr, "%s: %s\n", what, onair_result_message(r));
    exit(1);
  }
}

static onair_decoder *decoder;
static unsigned char chunk[4096];

static void decode_4k(void) {
  onair_item item;
  must(onair_decoder_feed(decoder, chunk, sizeof chunk), "feed");
  for (;;) {
    must(onair_decoder_next(decoder, &item), "next");
    if (item.kind == ONAIR_ITEM_NONE) break;
    if (item.kind == ONAIR_ITEM_EVENT) sink += item.event.message.len;
  }
}

static onair_bot *bot;
static uint64_t stream, now;

static void bot_turn(void) {
  onair_action a;
  now++;
  must(onair_bot_on_stream_bytes(bot, stream, (const uint8_t *)CHAT, sizeof CHAT - 1, now), "bytes");
  for (;;) {
    must(onair_bot_poll(bot, now, &a), "poll");
    if (a.kind == ONAIR_ACTION_WAIT) break;
    if (a.kind != ONAIR_ACTION_EVENT) { fprintf(stderr, "unexpected action %u\n", a.kind); exit(1); }
    sink += a.event.message.len;
  }
}

static double median_ns(unsigned iters, void (*f)(void)) {
  double runs[7];
  for (unsigned i = 0; i < iters / 10; i++) f();
  for (int r = 0; r < 7; r++) {
    double start = now_ns();
    for (unsigned i = 0; i < iters; i++) f();
    runs[r] = (now_ns() - start) / iters;
  }
  qsort(runs, 7, sizeof runs[0], cmp);
  return runs[3];
}

static void streaming_bot(void) {
  static const char PAIR[] =
      "{\"access_token\":\"at\",\"token_type\":\"Bearer\",\"expires_in\":3600,\"refresh_token\":\"rt\","
      "\"scope\":\"events.chat events.like events.donation events.presence\"}";
  onair_bot_config *cfg;
  onair_action a;
  must(onair_bot_config_new("https://api.region.test", 23, "3f2504e0-4f89-11d3-9a0c-0305e82c3301", 36,
                            "client-secret", 13, &cfg), "config");
  must(onair_bot_new(cfg, NULL, 0, NULL, 0, 1, &bot), "bot");
  onair_bot_config_free(cfg);
  must(onair_bot_poll(bot, T0, &a), "poll");
  must(onair_bot_authorize(bot, "code", 4, "https://bot.test/cb", 19), "authorize");
  must(onair_bot_poll(bot, T0, &a), "poll");
  must(onair_bot_on_response(bot, a.request_id, 200, NULL, 0, (const uint8_t *)PAIR, sizeof PAIR - 1, T0), "pair");
  do must(onair_bot_poll(bot, T0, &a), "poll");
  while (a.kind != ONAIR_ACTION_OPEN_STREAM && a.kind != ONAIR_ACTION_WAIT);
  if (a.kind != ONAIR_ACTION_OPEN_STREAM) { fprintf(stderr, "no stream\n"); exit(1); }
  stream = a.request_id;
  must(onair_bot_on_stream_open(bot, stream, 200, NULL, 0, T0), "open");
  now = T0;
}

int main(void) {
  size_t n = 0, frame = sizeof CHAT - 1;
  while (n + frame + 8 <= sizeof chunk) { memcpy(chunk + n, CHAT, frame); n += frame; }
  chunk[n++] = ':';
  while (n < sizeof chunk - 2) chunk[n++] = 'x';
  chunk[n++] = '\n';
  chunk[n++] = '\n';

  must(onair_decoder_new(0, &decoder), "decoder");
  printf("c decode_4k %.0f\n", median_ns(20000, decode_4k));
  onair_decoder_free(decoder);

  streaming_bot();
  printf("c bot_turn %.0f\n", median_ns(200000, bot_turn));
  onair_bot_free(bot);
  return sink == 0;
}
