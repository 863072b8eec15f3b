/*
 * The reference bot in C, over libonair and libcurl (multi interface), on the
 * kit configured in the bot: its configured replies greet, thank, call
 * milestones and answer !hello and !top by themselves (the core sends them,
 * merged when the chat limit holds them back, dropped with a notice when no
 * longer fresh); the bot posts a reminder every 30 minutes and keeps the
 * tally. Every rule (tokens, 401s, quotas, reconnects, chat limits, who was
 * greeted) is the core's; this file is a driver loop and what it writes.
 * Environment, files and output: the contract of scripts/e2e.d/README.md;
 * ONAIR_TOKENS_FILE and ONAIR_STATE_FILE are required (exit 2 without them:
 * a restart would re-send a spent consent code, or greet everyone again).
 * Every notice is printed to stderr ("bot: warning: …" or "bot: notice: …"),
 * dropped replies too ("bot: warning: dropped 3 welcome replies: …").
 * SIGTERM or SIGINT: shut down (no revoke), save the state, write the tally,
 * exit 0; a second signal exits at once (130).
 *
 * Build against an installed libonair (scripts/install-c PREFIX; set
 * PKG_CONFIG_PATH=PREFIX/lib/pkgconfig unless PREFIX is /usr or /usr/local),
 * with an rpath so the binary finds libonair.so under PREFIX:
 *   cc -std=c11 examples/c/bot.c $(pkg-config --cflags --libs onair) $(curl-config --libs) \
 *      -Wl,-rpath,$(pkg-config --variable=libdir onair) -o bot
 * or in the checkout: cc -std=c11 -Iinclude examples/c/bot.c target/debug/libonair.a \
 *      $(curl-config --libs) -lpthread -lm -ldl -o bot
 */
#define _POSIX_C_SOURCE 200809L
#include <curl/curl.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <onair.h>

/* The replies' texts are the core's defaults ("Welcome, Ana! 🎧", "Thank you,
   Ana!", …) but for the two commands' answers. */
static const char KIT[] = "{\"commands\":[{\"name\":\"hello\"},{\"name\":\"top\"}],"
                          "\"greetings\":{\"welcome_back_after_ms\":600000},"
                          "\"milestones\":{\"hearts_every\":100,\"donations_every\":1000},\"tally\":true,"
                          "\"replies\":{\"commands\":{\"hello\":\"Hello, {nickname}!\",\"top\":\"Top donors: {top}\"}}}";

/* The bot's own message, every 30 minutes while connected. */
static const char REMINDER[] = "Say !hello to say hi, or !top for tonight's top donors.";
#define REMINDER_EVERY_MS (30u * 60u * 1000u)

/* ---- small helpers ------------------------------------------------------- */

static volatile sig_atomic_t stop_requested;
/* The first SIGINT/SIGTERM asks for a clean stop; a second one exits at once. */
static void on_signal(int sig) {
  (void)sig;
  if (stop_requested) _exit(130);
  stop_requested = 1;
}

static uint64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* An environment variable; NULL when unset or empty. */
static const char *env(const char *name, bool required) {
  const char *v = getenv(name);
  if ((v == NULL || *v == '\0') && required) { fprintf(stderr, "bot: %s is not set\n", name); exit(2); }
  return v != NULL && *v != '\0' ? v : NULL;
}

/* A required setting: one line saying what it is for, and exit 2 without it. */
static const char *need(const char *name, const char *what) {
  const char *v = env(name, false);
  if (v == NULL) { fprintf(stderr, "bot: %s is not set: %s\n", name, what); exit(2); }
  return v;
}

/* A growable buffer, always NUL-terminated: bytes, or text printf-style. */
typedef struct { char *data; size_t len, cap; } buf;
static char *buf_room(buf *b, size_t n) {
  if (b->len + n + 1 > b->cap) {
    while (b->len + n + 1 > b->cap) b->cap = b->cap ? 2 * b->cap : 256;
    if ((b->data = realloc(b->data, b->cap)) == NULL) { perror("realloc"); exit(1); }
  }
  return b->data + b->len;
}
static void buf_add(buf *b, const void *p, size_t n) {
  memcpy(buf_room(b, n), p, n);
  b->data[b->len += n] = '\0';
}
static void buf_vfmt(buf *b, const char *fmt, va_list ap) {
  va_list again;
  va_copy(again, ap);
  int n = vsnprintf(NULL, 0, fmt, again);
  va_end(again);
  if (n >= 0) b->len += (size_t)vsnprintf(buf_room(b, (size_t)n), (size_t)n + 1, fmt, ap);
}
static void buf_fmt(buf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  buf_vfmt(b, fmt, ap);
  va_end(ap);
}
/* (pointer, length) as printf arguments for %.*s. */
#define STR(s) (int)(s).len, (s).ptr

static char *load_file(const char *path, size_t *len) {
  FILE *f = path ? fopen(path, "r") : NULL;
  if (f == NULL) return NULL;
  buf b = {0};
  char chunk[4096];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) buf_add(&b, chunk, n);
  fclose(f);
  *len = b.len;
  return b.data;
}

/* Replaces the file at `path` (mode 0600: the tokens are secrets) at once. */
static void save_file(const char *path, onair_str text) {
  if (path == NULL) return;
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  bool ok = fd >= 0 && write(fd, text.ptr, text.len) == (ssize_t)text.len;
  if (fd >= 0) close(fd);
  if (!ok || rename(tmp, path) != 0) perror(path);
}

/* `s` as a JSON string. */
static void buf_json(buf *b, onair_str s) {
  buf_fmt(b, "\"");
  for (size_t i = 0; i < s.len; i++) {
    unsigned char c = (unsigned char)s.ptr[i];
    buf_fmt(b, c == '"' || c == '\\' || c < 0x20 ? "\\u%04x" : "%c", c);
  }
  buf_fmt(b, "\"");
}

/* ---- HTTP: one easy handle per request the bot asks for ------------------- */

#define MAX_HEADERS 64
typedef struct transfer {
  CURL *easy;
  struct curl_slist *request_headers;
  uint64_t id;
  bool stream, opened;
  buf body; /* plain requests: the response body */
  struct transfer *next;
} transfer;

static CURLM *multi;
static transfer *transfers;
static onair_bot *bot;

/* The response's headers as onair_header pairs (libcurl's strings). */
static size_t headers_of(CURL *easy, onair_header *out) {
  size_t n = 0;
  for (struct curl_header *h = NULL; n < MAX_HEADERS && (h = curl_easy_nextheader(easy, CURLH_HEADER, -1, h));)
    out[n++] = (onair_header){h->name, strlen(h->name), h->value, strlen(h->value)};
  return n;
}

/* The blank line after a stream's headers: its status and headers are in. */
static size_t on_header(char *data, size_t size, size_t n, void *user) {
  transfer *t = user;
  if (t->stream && !t->opened && size * n == 2 && data[0] == '\r') {
    long status = 0;
    onair_header h[MAX_HEADERS];
    curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &status);
    t->opened = true;
    onair_bot_on_stream_open(bot, t->id, (uint16_t)status, h, headers_of(t->easy, h), now_ms());
  }
  return size * n;
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

/* A failure that surely sent nothing: no connection was made (refused, no
   such host, TLS handshake, or the connect timed out). Anything else may have
   reached the service: "no answer, outcome unknown". */
static bool not_sent(CURL *easy, CURLcode rc) {
  if (rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST || rc == CURLE_SSL_CONNECT_ERROR) return true;
  curl_off_t connected = 0;
  return rc == CURLE_OPERATION_TIMEDOUT && curl_easy_getinfo(easy, CURLINFO_CONNECT_TIME_T, &connected) == CURLE_OK &&
         connected == 0;
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
  /* Only a connect timeout (a connection never made sends nothing); the bot
     keeps its own deadlines and watchdog for the rest. */
  curl_easy_setopt(t->easy, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
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
  free(t->body.data);
  free(t);
}

/* Drops a transfer the bot is done with (a closed stream, a timed-out request). */
static void drop(uint64_t id) {
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
    if (msg->data.result != CURLE_OK && !t->opened && not_sent(t->easy, msg->data.result)) {
      onair_bot_on_not_sent(bot, t->id, now_ms()); /* a code or a message may go again */
    } else if (t->stream) {
      onair_bot_on_stream_closed(bot, t->id, now_ms());
    } else if (msg->data.result != CURLE_OK) {
      onair_bot_on_transport_error(bot, t->id, now_ms());
    } else {
      long status = 0;
      onair_header h[MAX_HEADERS];
      curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &status);
      onair_bot_on_response(bot, t->id, (uint16_t)status, h, headers_of(t->easy, h),
                            (const uint8_t *)t->body.data, t->body.len, now_ms());
    }
    finish(t);
  }
}

/* ---- what the bot does itself, and what it writes -------------------------------- */

static buf broadcasts, arrivals; /* each ended broadcast's tally, each arrival: JSON, comma-separated */
static bool reminding;           /* the reminder timer is set */

/* The kit's configured replies answer arrivals, donations, milestones and
   commands by themselves: no handler says them. */
static void on_action(const onair_action *a) {
  char live[24] = "null";
  if (a->has_live_id) snprintf(live, sizeof live, "%llu", (unsigned long long)a->live_id);
  switch (a->kind) {
  case ONAIR_ACTION_EVENT: /* the first event: the reminder from now on, while connected */
    if (!reminding)
      reminding = onair_bot_set_timer(bot, "announce", 8, now_ms() + REMINDER_EVERY_MS, REMINDER_EVERY_MS, true) ==
                  ONAIR_OK;
    break;
  case ONAIR_ACTION_TIMER: onair_bot_say(bot, REMINDER, strlen(REMINDER), NULL, 0, NULL); break;
  case ONAIR_ACTION_ARRIVAL: /* greeted by the kit; recorded for the tally file */
    buf_fmt(&arrivals, "%s{\"liveId\":%s,\"id\":", arrivals.len ? "," : "", live);
    buf_json(&arrivals, a->user_id);
    buf_fmt(&arrivals, ",\"kind\":\"%s\"}", a->arrival == ONAIR_ARRIVAL_FIRST ? "first" : "back");
    break;
  case ONAIR_ACTION_BROADCAST_ENDED: {
    buf_fmt(&broadcasts, "%s%.*s", broadcasts.len ? "," : "", STR(a->tally_json));
    const char *path = env("ONAIR_ENDS_OUT", false);
    FILE *f = path ? fopen(path, "a") : NULL;
    if (f != NULL) fprintf(f, "{\"liveId\":%s}\n", live), fclose(f);
    break;
  }
  case ONAIR_ACTION_PERSIST_TOKENS: save_file(env("ONAIR_TOKENS_FILE", false), a->tokens_json); break;
  case ONAIR_ACTION_PERSIST_STATE: save_file(env("ONAIR_STATE_FILE", false), a->state_json); break;
  /* Every notice, a drop of replies included (ONAIR_NOTICE_REPLIES_DROPPED,
     a warning: "dropped 3 welcome replies: not sent within their freshness …"). */
  case ONAIR_ACTION_NOTICE: fprintf(stderr, "bot: %s: %.*s\n", a->is_warning ? "warning" : "notice", STR(a->message)); break;
  default: break;
  }
}

/* {"broadcasts":[every ended one, then the current one],"arrivals":[…]} */
static void write_tally(void) {
  const char *path = env("ONAIR_TALLY_OUT", false), *current = NULL;
  size_t len = 0;
  FILE *f = path ? fopen(path, "w") : NULL;
  if (f == NULL) return;
  onair_bot_tally_json(bot, &current, &len);
  fprintf(f, "{\"broadcasts\":[%s%s%s],\"arrivals\":[%s]}\n", broadcasts.len ? broadcasts.data : "",
          broadcasts.len && current ? "," : "", current ? current : "", arrivals.len ? arrivals.data : "");
  fclose(f);
}

/* ---- the driver loop ----------------------------------------------------------- */

/* Why onair_bot_config_new or onair_bot_new refused, naming the setting. */
static void refused(onair_result r, onair_bot_config *cfg) {
  const char *detail = "", *tokens = getenv("ONAIR_TOKENS_FILE"), *state = getenv("ONAIR_STATE_FILE");
  size_t len = 0;
  if (cfg) onair_bot_config_last_error(cfg, &detail, &len);
  if (r == ONAIR_INVALID_BASE_URL) fprintf(stderr, "bot: ONAIR_BASE_URL: %s\n", onair_result_message(r));
  else if (r == ONAIR_INVALID_CLIENT_ID) fprintf(stderr, "bot: ONAIR_CLIENT_ID: %s\n", onair_result_message(r));
  else if (r == ONAIR_INVALID_CLIENT_SECRET) fprintf(stderr, "bot: ONAIR_CLIENT_SECRET: %s\n", onair_result_message(r));
  else if (r == ONAIR_INVALID_TOKENS)
    fprintf(stderr, "bot: ONAIR_TOKENS_FILE %s: the saved tokens did not load (%.*s): restore the file, or delete it "
            "and start with a new consent code in ONAIR_CODE\n", tokens, (int)len, detail);
  else if (r == ONAIR_INVALID_STATE || r == ONAIR_KIT_STATE_TOO_NEW)
    fprintf(stderr, "bot: ONAIR_STATE_FILE %s: the saved kit state did not load (%.*s): restore the file, or delete "
            "it (everyone is then greeted again)\n", state, (int)len, detail);
  else fprintf(stderr, "bot: %s %.*s\n", onair_result_message(r), (int)len, detail);
}

int main(void) {
  const char *base = need("ONAIR_BASE_URL", "the service's URL (onair serve prints it)");
  const char *id = need("ONAIR_CLIENT_ID", "the app's client id");
  const char *secret = need("ONAIR_CLIENT_SECRET", "the app's client secret");
  const char *tokens_path = need("ONAIR_TOKENS_FILE", "the file that keeps the DJ's tokens (without it a restart "
                                 "would re-send a spent consent code)");
  const char *state_path = need("ONAIR_STATE_FILE", "the file that keeps the kit's memory (without it a restart "
                                "would greet everyone again)");
  const char *watchdog = env("ONAIR_WATCHDOG_MS", false);
  if (onair_abi_version() != ONAIR_ABI_VERSION) { fprintf(stderr, "bot: libonair ABI mismatch\n"); return 1; }
  signal(SIGTERM, on_signal);
  signal(SIGINT, on_signal);

  onair_bot_config *cfg = NULL;
  onair_result r = onair_bot_config_new(base, strlen(base), id, strlen(id), secret, strlen(secret), &cfg);
  if (r == ONAIR_OK && watchdog) r = onair_bot_config_set_watchdog_ms(cfg, strtoull(watchdog, NULL, 10));
  if (r == ONAIR_OK) r = onair_bot_config_set_kit_json(cfg, KIT, strlen(KIT));
  size_t tokens_len = 0, state_len = 0;
  char *tokens = load_file(tokens_path, &tokens_len);
  char *state = load_file(state_path, &state_len);
  if (r == ONAIR_OK) r = onair_bot_new(cfg, tokens, tokens_len, state, state_len, now_ms() ^ (uint64_t)clock(), &bot);
  free(tokens);
  free(state);
  if (r != ONAIR_OK) {
    refused(r, cfg);
    onair_bot_config_free(cfg);
    return 2;
  }
  onair_bot_config_free(cfg);
  curl_global_init(CURL_GLOBAL_DEFAULT);
  multi = curl_multi_init();

  bool authorized = false, shutting_down = false;
  int exit_code = 0;
  for (;;) {
    onair_action a;
    if (onair_bot_poll(bot, now_ms(), &a) != ONAIR_OK) { exit_code = 1; break; }
    if (a.kind == ONAIR_ACTION_SEND || a.kind == ONAIR_ACTION_OPEN_STREAM) {
      start(a.request_id, &a.request, a.kind == ONAIR_ACTION_OPEN_STREAM);
    } else if (a.kind == ONAIR_ACTION_CLOSE_STREAM) {
      drop(a.request_id);
    } else if (a.kind == ONAIR_ACTION_NEEDS_AUTHORIZATION) {
      const char *code = env("ONAIR_CODE", false), *uri = env("ONAIR_REDIRECT_URI", false);
      if (authorized || code == NULL || uri == NULL) {
        fprintf(stderr, "bot: the DJ must consent: %s\n",
                authorized ? "the consent code was not accepted; set ONAIR_CODE to a new code and restart"
                : code == NULL ? "no saved tokens and no ONAIR_CODE; set ONAIR_CODE to a fresh consent code"
                : "ONAIR_REDIRECT_URI is not set (the redirect URI the code was issued for)");
        exit_code = 1;
        break;
      }
      onair_bot_authorize(bot, code, strlen(code), uri, strlen(uri));
      authorized = true;
    } else if (a.kind == ONAIR_ACTION_STOPPED) {
      if (!shutting_down) {
        fprintf(stderr, "bot: stopped (%.*s): %.*s%s\n", STR(a.code), STR(a.message),
                a.resumes_with_new_consent ? "; set ONAIR_CODE to a fresh consent code and restart" : "");
        exit_code = 1;
      }
      break;
    } else if (a.kind == ONAIR_ACTION_WAIT) {
      if (stop_requested && !shutting_down) {
        int running = 0; /* hand the bot what the sockets already hold, then stop */
        curl_multi_perform(multi, &running);
        reap();
        shutting_down = true;
        onair_bot_shutdown(bot, false);
        continue;
      }
      uint64_t now = now_ms();
      int timeout = 250, running = 0; /* wake up now and then to notice SIGTERM */
      if (a.has_until_ms) { /* a deadline already past: no sleep at all */
        uint64_t left = a.until_ms > now ? a.until_ms - now : 0;
        if (left < (uint64_t)timeout) timeout = (int)left;
      }
      curl_multi_poll(multi, NULL, 0, timeout, NULL);
      curl_multi_perform(multi, &running);
      reap();
    } else {
      on_action(&a);
    }
  }

  write_tally();
  while (transfers != NULL) finish(transfers);
  curl_multi_cleanup(multi);
  curl_global_cleanup();
  onair_bot_free(bot);
  free(broadcasts.data);
  free(arrivals.data);
  return exit_code;
}
