/*
 * libonair's threading contract from C, with pthreads (scripts/test-c runs
 * it under ThreadSanitizer, libonair itself instrumented too when nightly
 * Rust is at hand, and under ASan/UBSan):
 *
 * 1. Two threads hammering one decoder, then one bot with a kit (the loop
 *    polls, reports and answers commands with say() while the other thread
 *    queues calls and reads the status and the kit's tally),
 *    each retrying a call answered ONAIR_BUSY after sched_yield(), so
 *    that both threads' calls really run, interleaved: every result is
 *    ONAIR_OK, ONAIR_BUSY or a code the contract gives that call in that
 *    state, never a crash, never a race. ONAIR_BUSY is likely but not
 *    guaranteed (the scheduler decides), so it is counted and printed, not
 *    required.
 * 2. The same bot shared the documented way, with a lock of the caller's
 *    held from the call until what it lent is read: never ONAIR_BUSY, and
 *    every borrowed text is whole (NUL-terminated, printable).
 * 3. Threads with handles of their own: never ONAIR_BUSY, every item and
 *    its JSON line read.
 *
 * Prints "N passed, N failed"; exits 1 on any failure.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onair.h"

static int passed, failed; /* touched by the main thread only */

#define CHECK(cond)                                                       \
  do {                                                                    \
    if (cond) {                                                           \
      passed++;                                                           \
    } else {                                                              \
      failed++;                                                           \
      fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);     \
    }                                                                     \
  } while (0)

#define S(lit) (lit), (sizeof(lit) - 1)

#ifndef ROUNDS
#define ROUNDS 20000
#endif

static const char CLIENT_ID[] = "3f2504e0-4f89-11d3-9a0c-0305e82c3301";
static const char TOKEN_BODY[] =
    "{\"access_token\":\"AT-xyz\",\"token_type\":\"bearer\",\"refresh_token\":\"RT-xyz\","
    "\"expires_in\":3600,\"scope\":\"chat.send live.read events.chat events.presence "
    "events.like events.donation listeners.read fans.read\"}";
/* The kit: the loop's chat runs !hi; greetings and the tally. */
static const char KIT[] = "{\"commands\":[{\"name\":\"hi\"}],\"greetings\":{},\"tally\":true}";
static const char FRAMES[] =
    ":heartbeat\n\n"
    "id:1-0\nevent:chat\ndata:{\"user\":{\"id\":\"u-1\",\"nickname\":\"sky\"},\"isDj\":false,"
    "\"message\":\"!hi there\",\"sentTime\":\"t\"}\n\n";

/* What one thread saw: how many calls, how many answered busy, and the
   first result outside the allowed set (ONAIR_OK when none). */
typedef struct {
  long calls, busy;
  onair_result odd;
  const char *odd_call;
} tally_t;

static void seen(tally_t *t, const char *call, onair_result r, onair_result also1, onair_result also2) {
  t->calls++;
  if (r != ONAIR_OK && r != ONAIR_BUSY && r != also1 && r != also2 && t->odd == ONAIR_OK) {
    t->odd = r;
    t->odd_call = call;
  }
}

/* Calls `expr` until it is not answered ONAIR_BUSY (yielding between
   tries, a bounded number of times), counting the refusals; then `seen`. */
#define MAX_TRIES 1000000
#define CALL(t, name, r, expr, also1, also2)                   \
  do {                                                         \
    long tries_ = 0;                                           \
    while (((r) = (expr)) == ONAIR_BUSY && tries_++ < MAX_TRIES) { \
      (t)->busy++;                                             \
      sched_yield();                                           \
    }                                                          \
    seen((t), (name), (r), (also1), (also2));                  \
  } while (0)

static void report(const char *what, const tally_t *a, const tally_t *b) {
  printf("%s: %ld calls, %ld times answered ONAIR_BUSY first\n", what, a->calls + b->calls, a->busy + b->busy);
  if (a->odd != ONAIR_OK) fprintf(stderr, "%s: %s gave %u\n", what, a->odd_call, (unsigned)a->odd);
  if (b->odd != ONAIR_OK) fprintf(stderr, "%s: %s gave %u\n", what, b->odd_call, (unsigned)b->odd);
  CHECK(a->odd == ONAIR_OK && b->odd == ONAIR_OK);
}

/* ---- 1a. one decoder, two threads, no lock ---------------------------------- */

typedef struct {
  onair_decoder *d;
  tally_t t;
} decoder_job;

static void *hammer_decoder(void *arg) {
  decoder_job *job = arg;
  onair_decoder *d = job->d;
  tally_t *t = &job->t;
  for (int i = 0; i < ROUNDS; i++) {
    onair_item item;
    const char *json;
    size_t len;
    onair_result r;
    /* Only result codes are looked at: what a call lends may be taken back
       by the other thread's next call at any time. */
    CALL(t, "feed", r, onair_decoder_feed(d, (const uint8_t *)S(FRAMES)), ONAIR_OK, ONAIR_OK);
    CALL(t, "next", r, onair_decoder_next(d, &item), ONAIR_OK, ONAIR_OK);
    CALL(t, "item_json", r, onair_decoder_item_json(d, &json, &len), ONAIR_NO_CURRENT, ONAIR_OK);
    CALL(t, "take_json", r, onair_decoder_take_json(d, &json, &len), ONAIR_OK, ONAIR_OK);
    (void)onair_decoder_pending(d);
  }
  return NULL;
}

static void test_shared_decoder(void) {
  decoder_job a = {0}, b = {0};
  CHECK(onair_decoder_new(0, &a.d) == ONAIR_OK);
  b.d = a.d;
  pthread_t ta, tb;
  CHECK(pthread_create(&ta, NULL, hammer_decoder, &a) == 0);
  CHECK(pthread_create(&tb, NULL, hammer_decoder, &b) == 0);
  pthread_join(ta, NULL);
  pthread_join(tb, NULL);
  report("one decoder, two threads", &a.t, &b.t);
  /* The decoder is whole afterwards: everything left comes out. */
  onair_item item;
  int left = 0;
  while (onair_decoder_next(a.d, &item) == ONAIR_OK && item.kind != ONAIR_ITEM_NONE) left++;
  CHECK(left >= 0 && onair_decoder_pending(a.d) == 0);
  onair_decoder_free(a.d);
}

/* ---- 1b and 2. one bot: the loop and an app thread -------------------------- */

static onair_bot *bot_with_tokens(void) {
  onair_bot_config *cfg = NULL;
  onair_bot *bot = NULL;
  onair_action a;
  if (onair_bot_config_new(S("http://127.0.0.1:9"), S(CLIENT_ID), S("secret"), &cfg) != ONAIR_OK) return NULL;
  onair_bot_config_set_max_queued_calls(cfg, 1000000);
  onair_bot_config_set_kit_json(cfg, S(KIT));
  onair_result r = onair_bot_new(cfg, NULL, 0, NULL, 0, 7, &bot);
  onair_bot_config_free(cfg);
  if (r != ONAIR_OK) return NULL;
  onair_bot_poll(bot, 1000, &a);
  onair_bot_authorize(bot, S("code"), S("https://bot.example/cb"));
  if (onair_bot_poll(bot, 1000, &a) != ONAIR_OK || a.kind != ONAIR_ACTION_SEND) return bot;
  onair_header ct = {S("Content-Type"), S("application/json")};
  onair_bot_on_response(bot, a.request_id, 200, &ct, 1, (const uint8_t *)TOKEN_BODY, strlen(TOKEN_BODY), 1000);
  return bot;
}

typedef struct {
  onair_bot *bot;
  pthread_mutex_t *lock; /* NULL: no lock of the caller's */
  tally_t t;
  long texts_bad, commands;
} bot_job;

static void lock(bot_job *job) {
  if (job->lock) pthread_mutex_lock(job->lock);
}
static void unlock(bot_job *job) {
  if (job->lock) pthread_mutex_unlock(job->lock);
}

/* A borrowed text is whole: `len` bytes, then a NUL, no control byte. */
static bool whole(const char *s, size_t len) {
  if (s == NULL || s[len] != '\0') return false;
  for (size_t i = 0; i < len; i++)
    if ((unsigned char)s[i] < 0x20) return false;
  return true;
}

/* The driver loop: poll, answer every request with a transport error, open
   the stream and feed it, answer each command with say(), follow WAIT. */
static void *bot_loop(void *arg) {
  bot_job *job = arg;
  tally_t *t = &job->t;
  onair_bot *bot = job->bot;
  uint64_t now = 1000;
  for (int i = 0; i < ROUNDS; i++) {
    onair_action a;
    onair_result r;
    lock(job);
    CALL(t, "poll", r, onair_bot_poll(bot, now, &a), ONAIR_OK, ONAIR_OK);
    onair_action_kind kind = a.kind;
    uint64_t id = a.request_id, until = a.has_until_ms ? a.until_ms : now + 1;
    if (r == ONAIR_OK && job->lock && kind == ONAIR_ACTION_SEND && !whole(a.request.url.ptr, a.request.url.len))
      job->texts_bad++;
    if (r == ONAIR_OK && job->lock && kind == ONAIR_ACTION_COMMAND &&
        (a.args_len != 1 || a.args[0].len != 5 || memcmp(a.args[0].ptr, "there", 5) != 0))
      job->texts_bad++;
    unlock(job);
    if (r != ONAIR_OK) continue;
    lock(job);
    if (kind == ONAIR_ACTION_SEND)
      CALL(t, "on_transport_error", r, onair_bot_on_transport_error(bot, id, now), ONAIR_OK, ONAIR_OK);
    else if (kind == ONAIR_ACTION_OPEN_STREAM) {
      CALL(t, "on_stream_open", r, onair_bot_on_stream_open(bot, id, 200, NULL, 0, now), ONAIR_OK, ONAIR_OK);
      CALL(t, "on_stream_bytes", r, onair_bot_on_stream_bytes(bot, id, (const uint8_t *)S(FRAMES), now),
           ONAIR_OK, ONAIR_OK);
    } else if (kind == ONAIR_ACTION_COMMAND) {
      size_t parts;
      job->commands++;
      CALL(t, "say", r, onair_bot_say(bot, S("Hello, sky!"), NULL, 0, &parts), ONAIR_OK, ONAIR_OK);
    } else if (kind == ONAIR_ACTION_WAIT)
      now = until;
    unlock(job);
  }
  return NULL;
}

/* The app thread: queue calls and replies, set timers, read the status, the reply counters, the kit's
   tally, the last error and the tokens (read only under the caller's lock). */
static void *bot_app(void *arg) {
  bot_job *job = arg;
  tally_t *t = &job->t;
  onair_bot *bot = job->bot;
  for (int i = 0; i < ROUNDS; i++) {
    uint64_t call;
    bool found;
    const char *text;
    size_t len;
    onair_result r;
    lock(job);
    CALL(t, "send_chat", r, onair_bot_send_chat(bot, S("hello there"), &call), ONAIR_OK, ONAIR_OK);
    CALL(t, "fetch_broadcast", r, onair_bot_fetch_broadcast(bot, &call), ONAIR_OK, ONAIR_OK);
    CALL(t, "reply", r, onair_bot_reply(bot, ONAIR_REPLY_WELCOME, S("u-9"), S("Mia"), S("Welcome, Mia!")), ONAIR_OK,
         ONAIR_OK);
    onair_reply_counters counters;
    CALL(t, "reply_counters", r, onair_bot_reply_counters(bot, ONAIR_REPLY_WELCOME, &counters), ONAIR_OK, ONAIR_OK);
    unlock(job);
    lock(job);
    CALL(t, "status_json", r, onair_bot_status_json(bot, 1000, &text, &len), ONAIR_OK, ONAIR_OK);
    if (r == ONAIR_OK && job->lock && !whole(text, len)) job->texts_bad++;
    unlock(job);
    lock(job);
    CALL(t, "tally_json", r, onair_bot_tally_json(bot, &text, &len), ONAIR_OK, ONAIR_OK);
    if (r == ONAIR_OK && job->lock && (!whole(text, len) || text[0] != '{')) job->texts_bad++;
    unlock(job);
    lock(job);
    CALL(t, "last_error", r, onair_bot_last_error(bot, &text, &len), ONAIR_OK, ONAIR_OK);
    if (r == ONAIR_OK && job->lock && !whole(text, len)) job->texts_bad++;
    unlock(job);
    lock(job);
    CALL(t, "tokens_json", r, onair_bot_tokens_json(bot, &text, &len), ONAIR_NO_TOKENS, ONAIR_OK);
    if (r == ONAIR_OK && job->lock && !whole(text, len)) job->texts_bad++;
    CALL(t, "schedule", r, onair_bot_schedule(bot, 5000, S("tick")), ONAIR_OK, ONAIR_OK);
    CALL(t, "cancel_timer", r, onair_bot_cancel_timer(bot, S("tick"), &found), ONAIR_OK, ONAIR_OK);
    (void)onair_bot_pending_calls(bot);
    unlock(job);
  }
  return NULL;
}

static void run_bot(const char *what, pthread_mutex_t *mutex) {
  bot_job loop = {0}, app = {0};
  loop.bot = app.bot = bot_with_tokens();
  CHECK(loop.bot != NULL);
  if (loop.bot == NULL) return;
  loop.lock = app.lock = mutex;
  pthread_t ta, tb;
  CHECK(pthread_create(&ta, NULL, bot_loop, &loop) == 0);
  CHECK(pthread_create(&tb, NULL, bot_app, &app) == 0);
  pthread_join(ta, NULL);
  pthread_join(tb, NULL);
  report(what, &loop.t, &app.t);
  CHECK(loop.commands > 0); /* the kit ran !hi, answered with say() */
  if (mutex) {
    CHECK(loop.t.busy + app.t.busy == 0); /* the caller's lock serializes: never busy */
    CHECK(loop.texts_bad + app.texts_bad == 0);
  }
  onair_action a;
  CHECK(onair_bot_shutdown(loop.bot, false) == ONAIR_OK);
  CHECK(onair_bot_poll(loop.bot, 1000, &a) == ONAIR_OK);
  onair_bot_free(loop.bot);
}

/* ---- 3. a decoder each ------------------------------------------------------- */

typedef struct {
  tally_t t;
  long events, lines_bad;
} own_job;

static void *own_decoder(void *arg) {
  own_job *job = arg;
  onair_decoder *d = NULL;
  if (onair_decoder_new(0, &d) != ONAIR_OK) {
    job->t.odd = ONAIR_PANIC;
    return NULL;
  }
  for (int i = 0; i < ROUNDS / 4; i++) {
    onair_item item;
    const char *json;
    size_t len;
    seen(&job->t, "feed", onair_decoder_feed(d, (const uint8_t *)S(FRAMES)), ONAIR_OK, ONAIR_OK);
    for (;;) {
      onair_result r = onair_decoder_next(d, &item);
      seen(&job->t, "next", r, ONAIR_OK, ONAIR_OK);
      if (r != ONAIR_OK || item.kind == ONAIR_ITEM_NONE) break;
      if (item.kind == ONAIR_ITEM_EVENT) {
        job->events++;
        if (item.event.message.len != 9 || memcmp(item.event.message.ptr, "!hi there", 9) != 0) job->lines_bad++;
      }
      r = onair_decoder_item_json(d, &json, &len);
      seen(&job->t, "item_json", r, ONAIR_OK, ONAIR_OK);
      if (r == ONAIR_OK && (!whole(json, len) || json[0] != '{')) job->lines_bad++;
    }
  }
  onair_decoder_free(d);
  return NULL;
}

static void test_own_decoders(void) {
  own_job a = {0}, b = {0};
  pthread_t ta, tb;
  CHECK(pthread_create(&ta, NULL, own_decoder, &a) == 0);
  CHECK(pthread_create(&tb, NULL, own_decoder, &b) == 0);
  pthread_join(ta, NULL);
  pthread_join(tb, NULL);
  report("a decoder each", &a.t, &b.t);
  CHECK(a.t.busy + b.t.busy == 0);
  CHECK(a.events == ROUNDS / 4 && b.events == ROUNDS / 4);
  CHECK(a.lines_bad + b.lines_bad == 0);
}

int main(void) {
  CHECK(strcmp(onair_result_message(ONAIR_BUSY), onair_result_message(ONAIR_OK)) != 0);
  test_shared_decoder();
  run_bot("one bot, loop and app threads, no lock", NULL);
  pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
  run_bot("one bot, loop and app threads, the caller's lock", &mutex);
  test_own_decoders();
  printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
