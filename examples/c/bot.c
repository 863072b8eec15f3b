/*
 * The reference bot in C, over libonair and libcurl (multi interface):
 * greets first joins once and welcomes back rejoiners, answers !hello,
 * thanks donors with their running total, keeps a tally per broadcast and
 * prints a short summary at the end. All the rules (tokens, 401s, quotas,
 * reconnects, chat limits) are the core's; this file is a driver loop and
 * handlers.
 *
 * Environment: ONAIR_BASE_URL, ONAIR_CLIENT_ID, ONAIR_CLIENT_SECRET,
 * ONAIR_CODE (consent code), ONAIR_REDIRECT_URI, and optionally
 * ONAIR_TALLY_OUT (written at exit: {"broadcasts":[T, …]}, one core tally
 * per broadcast) and ONAIR_TOKENS_FILE (the token file, loaded at start and
 * saved on every PERSIST_TOKENS). SIGTERM or SIGINT: shut down (no
 * revoke), write the tally, exit 0.
 *
 * Build: cc -std=c11 -Iinclude examples/c/bot.c target/debug/libonair.a \
 *        $(curl-config --libs) -lpthread -lm -ldl -o bot
 */
#define _POSIX_C_SOURCE 200809L
#include <curl/curl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "onair.h"

/* ---- small helpers ------------------------------------------------------- */

static volatile sig_atomic_t stop_requested;
static void on_signal(int sig) { (void)sig; stop_requested = 1; }

static uint64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static const char *env(const char *name) {
  const char *v = getenv(name);
  if (v == NULL || *v == '\0') {
    fprintf(stderr, "bot: %s is not set\n", name);
    exit(2);
  }
  return v;
}

static void die(const char *what, onair_result r) {
  fprintf(stderr, "bot: %s: %s\n", what, onair_result_message(r));
  exit(1);
}

/* A growable byte buffer. */
typedef struct { char *data; size_t len, cap; } buf;
static void buf_add(buf *b, const void *p, size_t n) {
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + n + 1) cap *= 2;
    char *data = realloc(b->data, cap);
    if (data == NULL) { perror("realloc"); exit(1); }
    b->data = data;
    b->cap = cap;
  }
  memcpy(b->data + b->len, p, n);
  b->len += n;
  b->data[b->len] = '\0';
}

/* ---- HTTP: one easy handle per request the bot asks for ------------------- */

#define MAX_HEADERS 64
typedef struct transfer {
  CURL *easy;
  struct curl_slist *request_headers;
  uint64_t id;
  bool stream, opened;
  buf head; /* response header lines, "Name: value\r\n" each */
  buf body; /* plain requests: the response body */
  struct transfer *next;
} transfer;

static CURLM *multi;
static transfer *transfers;
static onair_bot *bot;

/* The header block as onair_header pairs (pointing into t->head). */
static size_t parse_headers(transfer *t, onair_header *out) {
  size_t n = 0;
  char *line = t->head.data;
  while (line != NULL && *line != '\0' && n < MAX_HEADERS) {
    char *end = strstr(line, "\r\n");
    size_t len = end ? (size_t)(end - line) : strlen(line);
    char *colon = memchr(line, ':', len);
    if (colon != NULL) {
      char *value = colon + 1;
      while (value < line + len && (*value == ' ' || *value == '\t')) value++;
      out[n++] = (onair_header){line, (size_t)(colon - line), value, (size_t)(line + len - value)};
    }
    line = end ? end + 2 : NULL;
  }
  return n;
}

static size_t on_header(char *data, size_t size, size_t n, void *user) {
  transfer *t = user;
  size_t len = size * n;
  if (len >= 5 && memcmp(data, "HTTP/", 5) == 0) {
    t->head.len = 0; /* a new header block (after a 100 or a redirect) */
  } else if (len == 2 && data[0] == '\r' && data[1] == '\n') {
    if (t->stream && !t->opened) { /* the stream's status and headers are in */
      long status = 0;
      curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &status);
      onair_header h[MAX_HEADERS];
      size_t count = parse_headers(t, h);
      t->opened = true;
      onair_bot_on_stream_open(bot, t->id, (uint16_t)status, h, count, now_ms());
    }
  } else {
    buf_add(&t->head, data, len);
  }
  return len;
}

static size_t on_body(char *data, size_t size, size_t n, void *user) {
  transfer *t = user;
  size_t len = size * n;
  if (t->stream)
    onair_bot_on_stream_bytes(bot, t->id, (const uint8_t *)data, len, now_ms());
  else
    buf_add(&t->body, data, len);
  return len;
}

static void start(uint64_t id, const onair_request *r, bool stream) {
  transfer *t = calloc(1, sizeof(*t));
  if (t == NULL) { perror("calloc"); exit(1); }
  t->id = id;
  t->stream = stream;
  t->easy = curl_easy_init();
  for (size_t i = 0; i < r->headers_len; i++)
    t->request_headers = curl_slist_append(t->request_headers, r->header_lines[i]);
  curl_easy_setopt(t->easy, CURLOPT_URL, r->url.ptr);
  curl_easy_setopt(t->easy, CURLOPT_CUSTOMREQUEST, r->method.ptr);
  curl_easy_setopt(t->easy, CURLOPT_HTTPHEADER, t->request_headers);
  if (r->body_len > 0) {
    curl_easy_setopt(t->easy, CURLOPT_POSTFIELDSIZE, (long)r->body_len);
    curl_easy_setopt(t->easy, CURLOPT_COPYPOSTFIELDS, (const char *)r->body);
  }
  curl_easy_setopt(t->easy, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(t->easy, CURLOPT_HEADERDATA, t);
  curl_easy_setopt(t->easy, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(t->easy, CURLOPT_WRITEDATA, t);
  curl_easy_setopt(t->easy, CURLOPT_PRIVATE, t);
  curl_easy_setopt(t->easy, CURLOPT_NOSIGNAL, 1L);
  /* No client timeout: the bot keeps its own deadlines and watchdog. */
  curl_multi_add_handle(multi, t->easy);
  t->next = transfers;
  transfers = t;
}

static void finish(transfer *t) {
  transfer **p = &transfers;
  while (*p != t) p = &(*p)->next;
  *p = t->next;
  curl_multi_remove_handle(multi, t->easy);
  curl_easy_cleanup(t->easy);
  curl_slist_free_all(t->request_headers);
  free(t->head.data);
  free(t->body.data);
  free(t);
}

static void close_stream(uint64_t id) {
  for (transfer *t = transfers; t != NULL; t = t->next)
    if (t->id == id) { finish(t); return; }
}

/* Reports every finished transfer to the bot. */
static void reap(void) {
  CURLMsg *msg;
  int left;
  while ((msg = curl_multi_info_read(multi, &left)) != NULL) {
    if (msg->msg != CURLMSG_DONE) continue;
    transfer *t = NULL;
    curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&t);
    if (t->stream) {
      onair_bot_on_stream_closed(bot, t->id, now_ms());
    } else if (msg->data.result != CURLE_OK) {
      onair_bot_on_transport_error(bot, t->id, now_ms());
    } else {
      long status = 0;
      curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &status);
      onair_header h[MAX_HEADERS];
      size_t count = parse_headers(t, h);
      onair_bot_on_response(bot, t->id, (uint16_t)status, h, count,
                            (const uint8_t *)t->body.data, t->body.len, now_ms());
    }
    finish(t);
  }
}

/* ---- the bot's own state and handlers ---------------------------------------- */

static onair_audience *audience;
static onair_commands *commands;
static onair_milestones *milestones;
static onair_tally *tally;
static buf tallies;       /* finished broadcasts' tally JSON, comma-separated */
static size_t broadcasts; /* finished broadcasts */
static uint64_t events_seen, chats_sent, calls_failed, chats_dropped;

/* A nickname (or "friend") as a printf argument pair. */
#define NAME(s) (int)((s).ptr ? (s).len : 6), ((s).ptr ? (s).ptr : "friend")

/* Queues a chat, split into messages the service takes. */
static void say(const char *text) {
  onair_string_list *parts = NULL;
  if (onair_text_split(text, strlen(text), &parts) != ONAIR_OK) return;
  for (size_t i = 0; i < onair_string_list_len(parts); i++) {
    onair_str part;
    uint64_t call;
    onair_string_list_get(parts, i, &part);
    if (onair_bot_send_chat(bot, part.ptr, part.len, &call) != ONAIR_OK) chats_dropped++; /* queue full */
  }
  onair_string_list_free(parts);
}

static void close_tally(void) {
  char *json = NULL;
  size_t len = 0;
  if (onair_tally_json(tally, &json, &len) == ONAIR_OK) {
    if (broadcasts++ > 0) buf_add(&tallies, ",", 1);
    buf_add(&tallies, json, len);
    onair_string_free(json);
  }
  onair_tally_free(tally);
  tally = NULL;
  if (onair_tally_new(&tally) != ONAIR_OK) exit(1);
}

static void on_event(const onair_event *ev) {
  char line[512];
  events_seen++;
  onair_tally_record(tally, ev);

  onair_greeting g;
  if (onair_audience_on_event(audience, ev, &g) == ONAIR_OK && g.kind != ONAIR_GREETING_NONE) {
    snprintf(line, sizeof line, g.kind == ONAIR_GREETING_FIRST ? "Welcome, %.*s!" : "Welcome back, %.*s!",
             NAME(g.nickname));
    say(line);
  }
  onair_invocation cmd;
  if (onair_commands_match(commands, audience, ev, &cmd) == ONAIR_OK && cmd.kind == ONAIR_COMMAND_RUN) {
    snprintf(line, sizeof line, "Hello, %.*s!", NAME(cmd.nickname));
    say(line);
  }
  onair_milestone m;
  onair_milestones_on_event(milestones, ev, &m);
  if (ev->kind == ONAIR_EVENT_DONATION) {
    uint64_t total = onair_milestones_donated_by(milestones, ev->user_id.ptr, ev->user_id.len);
    snprintf(line, sizeof line, "Thank you, %.*s, for %llu! You have given %llu tonight.",
             NAME(ev->nickname), (unsigned long long)ev->amount, (unsigned long long)total);
    say(line);
  }
  if (ev->kind == ONAIR_EVENT_END && ev->is_live_ended) { /* the broadcast is over */
    printf("broadcast over: %llu hearts, %llu donated, %zu joined\n",
           (unsigned long long)onair_tally_hearts(tally), (unsigned long long)onair_tally_donated(tally),
           onair_tally_attendance(tally));
    close_tally();
    onair_audience_end_broadcast(audience);
    onair_milestones_end_broadcast(milestones);
  }
}

static void save_tokens(onair_str json) {
  const char *path = getenv("ONAIR_TOKENS_FILE");
  if (path == NULL || *path == '\0') return;
  FILE *f = fopen(path, "w");
  if (f == NULL) { perror(path); return; }
  fwrite(json.ptr, 1, json.len, f);
  fclose(f);
}

static char *load_file(const char *path, size_t *len) {
  FILE *f = path && *path ? fopen(path, "r") : NULL;
  if (f == NULL) return NULL;
  buf b = {0};
  char chunk[4096];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) buf_add(&b, chunk, n);
  fclose(f);
  *len = b.len;
  return b.data;
}

static void write_tally(void) {
  const char *path = getenv("ONAIR_TALLY_OUT");
  char *json = NULL;
  size_t len = 0;
  if (onair_tally_json(tally, &json, &len) != ONAIR_OK) return;
  FILE *f = path && *path ? fopen(path, "w") : NULL;
  if (f != NULL) { /* the current broadcast last; the checker skips empty ones */
    fprintf(f, "{\"broadcasts\":[%s%s%s]}\n", tallies.len ? tallies.data : "", tallies.len ? "," : "", json);
    fclose(f);
  }
  onair_string_free(json);
}

/* ---- the driver loop ----------------------------------------------------------- */

int main(void) {
  const char *base = env("ONAIR_BASE_URL"), *id = env("ONAIR_CLIENT_ID");
  const char *secret = env("ONAIR_CLIENT_SECRET");
  if (onair_abi_version() != ONAIR_ABI_VERSION) { fprintf(stderr, "bot: libonair ABI mismatch\n"); return 1; }
  signal(SIGTERM, on_signal);
  signal(SIGINT, on_signal);
  curl_global_init(CURL_GLOBAL_DEFAULT);
  multi = curl_multi_init();

  onair_bot_config *cfg = NULL;
  onair_result r = onair_bot_config_new(base, strlen(base), id, strlen(id), secret, strlen(secret), &cfg);
  if (r != ONAIR_OK) die("config", r);
  size_t saved_len = 0;
  char *saved = load_file(getenv("ONAIR_TOKENS_FILE"), &saved_len);
  if ((r = onair_bot_new(cfg, saved, saved_len, now_ms() ^ (uint64_t)clock(), &bot)) != ONAIR_OK) die("bot", r);
  free(saved);
  onair_bot_config_free(cfg);
  if (onair_audience_new(&audience) || onair_commands_new(&commands) ||
      onair_milestones_new(1000, 1000, &milestones) || onair_tally_new(&tally) ||
      onair_commands_add(commands, "hello", 5, ONAIR_ALLOWED_ANYONE))
    die("kit", ONAIR_NULL_PARAMETER);

  bool authorized = false, shutting_down = false;
  int exit_code = 0;
  for (;;) {
    onair_action a;
    if ((r = onair_bot_poll(bot, now_ms(), &a)) != ONAIR_OK) die("poll", r);
    switch (a.kind) {
    case ONAIR_ACTION_SEND: start(a.request_id, &a.request, false); continue;
    case ONAIR_ACTION_OPEN_STREAM: start(a.request_id, &a.request, true); continue;
    case ONAIR_ACTION_CLOSE_STREAM: close_stream(a.request_id); continue;
    case ONAIR_ACTION_EVENT: on_event(&a.event); continue;
    case ONAIR_ACTION_NOTICE: fprintf(stderr, "notice: %.*s\n", (int)a.message.len, a.message.ptr ? a.message.ptr : ""); continue;
    case ONAIR_ACTION_PERSIST_TOKENS: save_tokens(a.tokens_json); continue;
    case ONAIR_ACTION_DONE:
      if (a.done == ONAIR_DONE_CHAT_SENT) chats_sent++;
      if (a.done == ONAIR_DONE_FAILED) calls_failed++;
      continue;
    case ONAIR_ACTION_NEEDS_AUTHORIZATION: {
      if (authorized) { fprintf(stderr, "bot: needs a new consent code\n"); exit_code = 1; break; }
      const char *code = env("ONAIR_CODE"), *uri = env("ONAIR_REDIRECT_URI");
      onair_bot_authorize(bot, code, strlen(code), uri, strlen(uri));
      authorized = true;
      continue;
    }
    case ONAIR_ACTION_STOPPED:
      if (!shutting_down) {
        fprintf(stderr, "bot stopped (%.*s): %.*s\n", (int)a.code.len, a.code.ptr, (int)a.message.len, a.message.ptr);
        exit_code = 1;
      }
      break;
    case ONAIR_ACTION_WAIT: {
      if (stop_requested && !shutting_down) { shutting_down = true; onair_bot_shutdown(bot, false); continue; }
      uint64_t now = now_ms();
      int timeout = 250; /* wake up now and then to notice SIGTERM */
      if (a.has_until_ms && a.until_ms - now < (uint64_t)timeout) timeout = (int)(a.until_ms - now);
      int running = 0;
      curl_multi_poll(multi, NULL, 0, timeout, NULL);
      curl_multi_perform(multi, &running);
      reap();
      continue;
    }
    default: continue;
    }
    break; /* stopped */
  }

  write_tally();
  printf("summary: %llu events, %zu broadcasts ended, %llu chats sent, %llu failed, %llu not queued\n",
         (unsigned long long)events_seen, broadcasts, (unsigned long long)chats_sent,
         (unsigned long long)calls_failed, (unsigned long long)chats_dropped);
  while (transfers != NULL) finish(transfers);
  curl_multi_cleanup(multi);
  curl_global_cleanup();
  onair_bot_free(bot);
  onair_audience_free(audience);
  onair_commands_free(commands);
  onair_milestones_free(milestones);
  onair_tally_free(tally);
  free(tallies.data);
  return exit_code;
}
