#!/usr/bin/env python3
"""Writes the committed seed corpora, fuzz/corpus/<target>/, from the fixtures
(fixtures/streams/), the emulator's scenarios and wire shapes
(emulator/scenarios/*.json, emulator/README.md) and hand-made edge cases.

The input formats are those of the bodies in fuzz-support/src/ (bodies.rs,
and c_api.rs for the C API). Rerun after
changing a format: `python3 fuzz/seeds.py` (it rewrites only its own `seed-*`
files; regression inputs, `crash-*`, and coverage-merged inputs grown by
long runs, `min-*` (fuzz/corpus/bot/), are kept).
"""
import json
import os
import struct
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "fuzz", "corpus")


def read(*path):
    with open(os.path.join(ROOT, *path), "rb") as f:
        return f.read()


SERVICE = read("fixtures", "streams", "service.sse")
BROKEN = read("fixtures", "streams", "broken.sse")
SCENARIOS = {
    name[:-5]: json.loads(read("emulator", "scenarios", name))
    for name in sorted(os.listdir(os.path.join(ROOT, "emulator", "scenarios")))
    if name.endswith(".json")
}

seeds = {}


def seed(target, name, data):
    if isinstance(data, str):
        data = data.encode()
    seeds.setdefault(target, {})["seed-" + name] = data


# --- streams ---------------------------------------------------------------
STREAM_EDGES = {
    "crlf": b"id:1-0\r\nevent:chat\r\ndata:{}\r\n\r\n",
    "lone-cr": b"event:end\rdata:{\"reason\":\"RECONNECT\"}\r\r",
    "bom": b"\xef\xbb\xbf:heartbeat\n\nretry:1500\n\n",
    "long-line": b"data:" + b"x" * 300 + b"\n\n" + b":heartbeat\n\n",
    "no-final-blank": b"event:chat\ndata:{\"a\":1}",
    "nul-id": b"id:a\x00b\ndata:x\n\nid\ndata:y\n\n",
    "multi-data": b"data:a\ndata:b\ndata\n\n",
    "space-after-colon": b"event: like\ndata: {\"x\":1}\n\n",
    "bad-utf8": b"data:\xff\xfe\n\n:\xc3\n\n",
    "unknown-event": b"event:gift\ndata:{}\n\nevent:\n\n",
}
for seed_byte in (0, 1, 7, 16, 200):
    seed("sse_chunking", f"service-{seed_byte}", bytes([seed_byte]) + SERVICE)
    seed("event_decode", f"service-{seed_byte}", bytes([seed_byte]) + SERVICE)
for seed_byte in (3, 30):
    seed("sse_chunking", f"broken-{seed_byte}", bytes([seed_byte]) + BROKEN)
    seed("event_decode", f"broken-{seed_byte}", bytes([seed_byte]) + BROKEN)
for name, data in STREAM_EDGES.items():
    seed("sse_chunking", name, b"\x05" + data)
    seed("event_decode", name, b"\x02" + data)

# --- event JSON: the data lines of the fixtures, by event name -------------
NAMES = ["chat", "presence", "like", "donation", "end", "message"]
for i, stream in enumerate((SERVICE, BROKEN)):
    event = "message"
    n = 0
    for line in stream.replace(b"\r\n", b"\n").split(b"\n"):
        if line.startswith(b"event:"):
            event = line[6:].strip().decode(errors="replace")
        elif line.startswith(b"data:") and event in NAMES:
            seed("fast_json", f"fixture{i}-{n}-{event}", bytes([NAMES.index(event)]) + line[5:].lstrip())
            n += 1
        elif line == b"":
            event = "message"
for name, pick, data in [
    ("float-exp", 1, '{"user":{"id":"u"},"type":"JOIN","fanRank":null,"isManager":false,"favoriteTemperature":3.65e1,"time":"t"}'),
    ("escapes", 0, '{"user":{"id":"u\\u00e9","nickname":"\\ud83d\\ude00"},"isDj":false,"message":"a\\"b\\\\","sentTime":"t"}'),
    ("dup-key", 2, '{"user":{"id":"u"},"type":"FREE","type":"PAID","totalAmount":1,"amount":1,"extraAmount":0,"combo":null,"time":"t"}'),
    ("big-int", 3, '{"user":{"id":"u"},"amount":18446744073709551616,"message":null,"time":"t"}'),
]:
    seed("fast_json", name, bytes([pick]) + data.encode())

# --- classify: endpoint, status index, header block, body -------------------
ENDPOINTS = ["token", "revoke", "live", "listeners", "fans", "events", "chat"]
STATUSES = [200, 204, 400, 401, 403, 404, 405, 415, 429, 500, 502, 503, 504, 301, 418, 599]


def problem(status, code, path="/v1/live"):
    return json.dumps({"instance": path, "status": status, "title": "x", "detailCode": code,
                       "message": "m", "userId": None, "extra": None, "timestamp": 1})


def classify_seed(name, endpoint, status, headers, body):
    data = bytes([ENDPOINTS.index(endpoint), STATUSES.index(status), 0])
    data += "\n".join(f"{k}: {v}" for k, v in headers).encode() + b"\n\n" + body.encode()
    seed("classify", name, data)


classify_seed("bearer-401", "live", 401, [], "")
classify_seed("revoked-401", "chat", 401, [], problem(401, "OAPI_MNGR_0203"))
classify_seed("permission-403", "fans", 403, [], problem(403, None))
classify_seed("not-on-air", "live", 404, [], problem(404, "OAPI_MNGR_0301"))
classify_seed("chat-blocked", "chat", 403, [], problem(403, "OAPI_MNGR_0208"))
classify_seed("chat-limit", "chat", 429, [], problem(429, "OAPI_MNGR_0302"))
classify_seed("quota-second", "live", 429, [("x-ratelimit-remaining", "0"), ("x-ratelimit-replenish-rate", "10"), ("x-ratelimit-burst-capacity", "20")], "")
classify_seed("quota-daily", "chat", 429, [("Retry-After", "3600"), ("x-ratelimit-daily-scope", "chat.send"), ("x-ratelimit-daily-limit", "10000"), ("x-ratelimit-daily-remaining", "0"), ("x-ratelimit-daily-reset", "1732320000")], "")
classify_seed("server-502", "live", 502, [], problem(502, "OAPI_MNGR_2302"))
classify_seed("chat-2303", "chat", 502, [], problem(502, "OAPI_MNGR_2303"))
classify_seed("html-502", "chat", 502, [], "<html>Bad Gateway</html>")
classify_seed("join-forbidden-sse", "events", 403, [], 'data:{"status":403,"detailCode":"OAPI_MNGR_0209","message":"blocked"}\n\n')
classify_seed("sse-multiline", "events", 500, [], 'data:{"status":500,\ndata:"detailCode":"OAPI_MNGR_1002"}\n\n')
classify_seed("invalid-grant", "token", 400, [], '{"error":"invalid_grant","error_description":"expired"}')
classify_seed("invalid-client", "token", 401, [], '{"error":"invalid_client"}')
classify_seed("token-401-empty", "token", 401, [], "")
classify_seed("unsupported-grant", "token", 400, [], '{"error":"unsupported_grant_type"}')
classify_seed("malformed", "chat", 400, [], problem(400, "OAPI_MNGR_0103"))
classify_seed("chat-empty", "chat", 400, [], problem(400, "OAPI_MNGR_0108"))
classify_seed("wrong-types", "live", 404, [], '{"detailCode":7,"message":["x"],"error":null}')
classify_seed("bom", "live", 404, [], '\ufeff {"detailCode":"OAPI_MNGR_0301"}')
classify_seed("ok", "listeners", 200, [("x-ratelimit-remaining", "5")], '{"listeners":[]}')
for step in SCENARIOS.get("faulty", {}).get("steps", []):
    if step.get("do") == "fail" and step.get("status") in STATUSES:
        path = step["path"]
        endpoint = {"/v1/live": "live", "/v1/live/events": "events", "/v1/live/chat": "chat",
                    "/v1/live/listeners": "listeners", "/v1/live/fans": "fans"}.get(path, "live")
        code = step.get("detailCode")
        body = "" if step["status"] == 429 and not code else problem(step["status"], code, path)
        if endpoint == "events":
            body = "data:" + body + "\n\n"
        classify_seed(f"faulty-{endpoint}-{step['status']}-{code}", endpoint, step["status"], [], body)

# --- quota headers: now (2 bytes), header block -----------------------------
for name, block in [
    ("delay", "Retry-After: 30"),
    ("date", "Retry-After: Sun, 06 Nov 1994 08:49:37 GMT"),
    ("date-future", "Retry-After: Fri, 22 Nov 2024 05:33:20 GMT"),
    ("huge", "Retry-After: 99999999999999999999999"),
    ("rfc850", "Retry-After: Sunday, 06-Nov-94 08:49:37 GMT"),
    ("asctime", "Retry-After: Sun Nov  6 08:49:37 1994"),
    ("all", "x-ratelimit-remaining: 0\nx-ratelimit-replenish-rate: 10\nx-ratelimit-burst-capacity: 20\n"
            "x-ratelimit-daily-limit: 10000\nx-ratelimit-daily-remaining: 3\nx-ratelimit-daily-reset: 1732320000\n"
            "x-ratelimit-daily-scope: chat.send\nRetry-After: 60"),
    ("dupes", "X-RateLimit-Remaining: 4\nx-ratelimit-remaining: 9\nretry-after: x\nRetry-After: 5"),
    ("junk", "x-ratelimit-remaining: -1\nx-ratelimit-daily-scope: \nRetry-After: \t 12 \t"),
    ("digits", "120"),
]:
    seed("quota_headers", name, b"\x01\x00" + block.encode())

# --- token responses and the token file -------------------------------------
SCOPES = "live.read listeners.read fans.read events.chat events.presence events.like events.donation chat.send"
for name, body in [
    ("full", {"access_token": "AT-x#1", "token_type": "Bearer", "expires_in": 3600, "refresh_token": "RT-y#2", "scope": SCOPES}),
    ("lower-bearer", {"access_token": "AT@abc", "token_type": "bearer", "refresh_token": "RT@def", "scope": "chat.send"}),
    ("no-refresh", {"access_token": "A", "token_type": "Bearer", "expires_in": 0}),
    ("mac", {"access_token": "AT~mac", "token_type": "mac"}),
    ("empty-token", {"access_token": "", "token_type": "Bearer"}),
    ("control", {"access_token": "AT\u0007bell", "token_type": "Bearer", "refresh_token": "RT|\n"}),
    ("wrong-type", {"access_token": 5, "token_type": "Bearer"}),
    ("huge-expiry", {"access_token": "A", "token_type": "Bearer", "expires_in": 18446744073709551615, "scope": "unknown.scope live.read"}),
]:
    seed("token_response", name, json.dumps(body, ensure_ascii=False))
seed("token_response", "truncated", '{"access_token":"AT#secret","token_type":"Bear')
for name, body in [
    ("full", {"format": "onair.tokens", "version": 1, "generation": 4, "access_token": "A#1", "access_expires_at_ms": 5000,
              "issued_at_ms": 1000, "refresh_token": "R#2", "refresh_expires_at_ms": 90000, "scope": SCOPES}),
    ("no-refresh", {"format": "onair.tokens", "version": 1, "generation": 0, "access_token": "A", "access_expires_at_ms": 0, "issued_at_ms": 0}),
    ("refresh-no-expiry", {"format": "onair.tokens", "version": 1, "generation": 1, "access_token": "A@x", "access_expires_at_ms": 1, "issued_at_ms": 0, "refresh_token": "R@y"}),
    ("version-2", {"format": "onair.tokens", "version": 2}),
    ("other-format", {"format": "onair.audience", "version": 1}),
    ("control", {"format": "onair.tokens", "version": 1, "generation": 1, "access_token": "A~\u0000", "access_expires_at_ms": 1, "issued_at_ms": 0}),
    ("unknown-fields", {"format": "onair.tokens", "version": 1, "generation": 1, "access_token": "A", "access_expires_at_ms": 1, "issued_at_ms": 0, "x": [1, 2], "scope": "a b a"}),
]:
    seed("token_file", name, json.dumps(body, ensure_ascii=False))
seed("token_file", "truncated", '{"format":"onair.tokens","version":1,"access_token":"A#sec')

# --- REST bodies --------------------------------------------------------------
BROADCAST = {"liveId": 1000001, "title": "Friday night request show 🎶", "startedAt": "2024-11-22T04:33:20Z",
             "closeAirTime": "2024-11-22T06:33:20Z", "listenerCount": 12, "totalListenerCount": 40,
             "welcomeMessage": "hi", "isChatFrozen": False, "categories": [], "tags": ["requests", "party"]}
seed("rest_bodies", "broadcast", b"\x00" + json.dumps(BROADCAST, ensure_ascii=False).encode())
seed("rest_bodies", "broadcast-nulls", b"\x00" + json.dumps(dict(BROADCAST, title=None, welcomeMessage=None, extra=1)).encode())
seed("rest_bodies", "listeners", b"\x01" + b'{"listeners":[{"id":"a","nickname":"A"},{"id":"b","nickname":null}],"nextCursor":"c2"}')
seed("rest_bodies", "listeners-empty-cursor", b"\x01" + b'{"listeners":[],"nextCursor":""}')
seed("rest_bodies", "fans", b"\x02" + b'{"totalCount":2,"fans":[{"id":"a","nickname":"A","rank":1,"coinCount":500},{"id":"b","nickname":"B","rank":2,"coinCount":null}]}')
seed("rest_bodies", "pager", b"\x07" + b'{"listeners":[{"id":"a","nickname":"A"}],"nextCursor":"n1"}\n{"listeners":[{"id":"a","nickname":"A"},{"id":"b","nickname":null}],"nextCursor":"n2"}\n{"listeners":[],"nextCursor":null}')
seed("rest_bodies", "pager-loop", b"\x03" + b'{"listeners":[],"nextCursor":"same"}\n{"listeners":[],"nextCursor":"same"}')
seed("rest_bodies", "pager-bad", b"\x0b" + b'{"listeners":[{"id":"a"}],"nextCursor":"n"}\n<html>')

# --- chat text: limit byte, text ---------------------------------------------
texts = {
    "short": "hello",
    "words": "word " * 50,
    "emoji": "😀" * 101,
    "flags": "Top donors tonight:\n" + "Mina 🇰🇷 500, " * 20,
    "zwj": "👩‍👩‍👧‍👦 " * 30,
    "combining": "e" + "\u0301" * 300,
    "whitespace": " \n\u3000\t",
    "lines": "line one\nline two\r\n" * 12,
    "cjk": "하늘이 좋아요 " * 30,
    "nbsp": "\u00a0".join(["x" * 190] * 3),
}
for name, text in texts.items():
    for limit in (200, 13):
        seed("chat_text", f"{name}-{limit}", bytes([limit]) + text.encode())
for step in SCENARIOS.get("quiet", {}).get("steps", []):
    msg = (step.get("data") or {}).get("message")
    if isinstance(msg, str) and msg:
        seed("chat_text", f"quiet-{len(seeds.get('chat_text', {}))}", b"\xc8" + msg.encode())


# --- commands: who, prefix, name, message ---------------------------------------
def command_seed(name, who, prefix, cmd, message):
    p, c = prefix.encode(), cmd.encode()
    seed("commands", name, bytes([who, len(p)]) + p + bytes([len(c)]) + c + message.encode())


command_seed("hello", 2, "", "", "!hello")
command_seed("reset-manager", 1, "", "", "!RESET now")
command_seed("stop-dj", 0, "", "", "  !stop")
command_seed("stop-denied", 2, "", "", "!stop")
command_seed("own", 3, "", "", "!hello")
command_seed("quotes", 2, "?", "add", '?add "Mina Kim" 500 “smart quotes” ＂x＂')
command_seed("odd-quote", 1, "!", "say", "!say it's 5\" tall")
command_seed("sigma", 2, "", "ΣΟΦΟΣ", "!σοφος x")
command_seed("long-s", 2, "", "ſtart", "!START")
command_seed("empty-name", 2, "", "", "! hello")
command_seed("json-chat", 2, "", "", '{"cmd":"!hello","n":1}')

# --- kit state: the stored form of the configured kit (onair.kit) ------------
seed("kit_state", "full", json.dumps({"format": "onair.kit", "version": 1, "live_id": 9, "dj_id": "dj",
     "people": {"u1": {"nickname": "Mina", "is_manager": True, "greeted": True, "last_seen_ms": 5000,
                       "donated_announced": 1000},
                "u2": {"nickname": None, "greeted": False}},
     "tally": {"live_id": 9, "dj_id": "dj", "people": {"u1": {"nickname": "Mina", "hearts": 250, "paidHearts": 200,
               "donated": 1500, "donations": 2, "joins": 1, "chats": 3}}},
     "hearts_announced": 200}).encode())
seed("kit_state", "empty", b'{"format":"onair.kit","version":1}')
seed("kit_state", "nulls", b'{"format":"onair.kit","version":1,"live_id":null,"dj_id":null,"people":{},"tally":{}}')
seed("kit_state", "dj-listed", b'{"format":"onair.kit","version":1,"dj_id":"u1","people":{"u1":{"greeted":true}}}')
seed("kit_state", "wrong-version", b'{"format":"onair.kit","version":9}')
seed("kit_state", "other-format", b'{"format":"onair.tokens","version":1}')

# --- the Bot: start byte, then operations (see fuzz::bot) ----------------------
# ops: 0 time(n, scale) 1 respond(pick, status, headers, kind) 2 transport(pick)
#      3 open(b, headers) 4 bytes(kind) 5 close 6 chat(kind, …) 7 fetch(k)
#      8 reconnect 9 authorize 10 timer(tag, u16, mode) 11 shutdown(b) 12 status
S = {s: i for i, s in enumerate(STATUSES)}
bot_seeds = {
    # A first authorization: consent code, token 200, stream open, chat frames, chat sent.
    "authorize-stream-chat": [0x00, 9, 1, 0, S[200], 0, 1, 3, 0, 4, 4, 1, 4, 0, 6, 0, 1, 0, S[204], 0, 0, 0, 5, 1],
    # Saved tokens; RECONNECT, TOKEN_EXPIRED, LIVE_ENDED, time passing.
    "saved-end-reasons": [0x01, 3, 0, 4, 4, 2, 0, 3, 1, 3, 0, 4, 4, 3, 1, 0, S[200], 0, 1, 0, 200, 2, 4, 4, 4, 0, 10, 1, 3, 0, 0],
    # Expired saved tokens: a refresh at once; 401s everywhere.
    "expired-401s": [0x02, 1, 0, S[401], 0, 2, 7, 0, 1, 0, S[401], 0, 9, 1, 0, S[200], 0, 1, 0, 100, 3],
    # Chat-only bot: limits and retries.
    "chat-only-limits": [0x81, 6, 3, 60, 6, 1, 150, 6, 5, 5, 104, 105, 108, 108, 111, 1, 0, S[429], 0, 4, 1, 0, S[403], 0, 3, 0, 5, 1, 1, 0, S[204], 0, 0],
    # Fetches, quotas, paging.
    "fetch-quota-paging": [0x01, 7, 0, 7, 1, 7, 2, 1, 0, S[429], 2, 0, 0, 30, 1, 1, 0, S[200], 0, 5, 1, 0, S[200], 0, 6, 1, 0, S[200], 0, 7, 1, 0, S[503], 1, 10],
    # Timers, shutdown with revoke.
    "timers-shutdown": [0x01, 10, 0, 0x10, 0x27, 1, 10, 1, 0, 0, 0, 0, 50, 1, 10, 2, 0, 0, 2, 11, 0, 1, 0, S[200], 0, 0],
    # Raw stream bytes and raw bodies.
    "raw-bytes": [0x01, 3, 0, 0, 4, 200, 12] + list(b"data:{}\n\nid:9") + [1, 0, S[200], 0, 200, 5] + list(b"{\"a\":") + [5, 0, 60, 2, 8],
    # Stream open failures: 403 join forbidden, 404 not on air.
    "stream-failures": [0x01, 3, 255, S[403], 0, 5, 0, 10, 1, 3, 255, S[404], 0, 0, 5, 1, 8, 3, 255, S[502], 0],
}
for name, ops in bot_seeds.items():
    seed("bot", name, bytes(b & 0xFF for b in ops))


# --- the C API: operations of (group, function, faults, arguments…) ------------
# See onair_fuzz_support::c_api (fuzz-support/src/c_api.rs). Groups:
# 0 conventions, 1 decisions, 2 backoff, 3 text, 4 decoder, 5 raw SSE parser,
# 6 bot config, 7 bot loop and reports, 8 bot commands and getters, 9 the
# kit's configuration (0 set from KITS or raw JSON, 1 the config's last
# error), 10 onair_bot_say (function byte 0xD0-0xDF onair_bot_reply,
# 0xE0-0xEF onair_bot_reply_counters, 0xF0-0xFF the daily quota: by % 3 the
# bot's JSON, share, merge), 11 onair_bot_donor, 12 a bot from saved kit
# state, 13 onair_bot_tally_json, 14 onair_event_json, 15 time. Faults:
# 0 none, 0xE0 + k spoils argument k (0 handle, 1 out, 2 second out,
# 3 (NULL, 0), 4 (NULL, n), 5/6 the same for the second buffer, 7 header
# array, 8 header name, 9 header value, 10 NULL event, 11 event-less view,
# 12 aux).
def op(group, fn, *args, faults=0):
    return [group, fn, faults] + [a for arg in args for a in (arg if isinstance(arg, (list, bytes)) else [arg])]


def raw(data):
    """A raw buffer argument: a pick byte past every table, then length + bytes."""
    if isinstance(data, str):
        data = data.encode()
    assert len(data) < 256
    return [0xFF, len(data)] + list(data)


def u16(n):
    return [n & 0xFF, n >> 8]


NOW = 3                # number(): the current time
ZERO, ONE, MAX = 0, 1, 2
N16 = 5                # number(): a u16 follows


def num16(n):
    return [N16] + u16(n)


C_STATUS = {s: i for i, s in enumerate([200, 204, 400, 401, 403, 404, 429, 500, 502, 503, 301, 599])}
NO_HEADERS = [0]
BROADCAST = 6          # BODIES: GET /v1/live's broadcast (liveId 1)
TOKEN_PAIR = 1         # BODIES: a token pair
CHUNKS = 16            # canned stream chunks
KIT_FULL, KIT_REF, KIT_NONE = 0, 1, 2  # KITS: every part, the reference bots', none


def headers(*picks):
    return [len(picks)] + list(picks)


def drain():
    return op(7, 3)


# The kit's getters and say() on the current bot.
KIT_CALLS = op(13, 0) + op(11, 0, 0) + op(11, 0, 1) + op(10, 0, 0) + op(10, 0, [0xF0, 120])


def kit_bot(kit, tokens=0, state=None):
    """A config with `kit`, a bot (from saved tokens `tokens`; from the
    saved kit state `state` when given), its stream open and GET /v1/live
    answered."""
    ops = op(6, 0, 0, 0, 0) + op(9, 0, kit) + op(9, 1)
    ops += op(7, 0, tokens, ONE) if state is None else op(12, 0, tokens, state, ONE)
    ops += drain() + op(7, 7, 2, 0, NO_HEADERS) + drain()
    ops += op(7, 5, 0, C_STATUS[200], NO_HEADERS, BROADCAST) + drain()
    return ops


c_api = {}
# The typed decoder over every canned chunk, each event read back.
ops = op(4, 0, 0)
for chunk in range(CHUNKS):
    ops += op(4, 1, chunk) + op(4, 6)
    ops += (op(4, 3) + op(4, 4) + op(14, 0)) * 2
ops += op(4, 2) + op(4, 5) + op(4, 3) + op(4, 4) + op(14, 0, faults=0xEB) + op(14, 0, faults=0xEA)
c_api["decoder-chunks"] = ops
# The fixtures through the decoder and the raw parser, in raw pieces.
for name, stream in (("service", SERVICE), ("broken", BROKEN)):
    for group in (4, 5):
        ops = op(group, 0, 3 if group == 4 else 1)
        for at in range(0, len(stream), 200):
            ops += op(group, 1, raw(stream[at:at + 200])) + op(group, 3) + op(group, 4) + op(group, 5)
            if group == 4:
                ops += op(14, 0)
        ops += op(group, 2) + (op(group, 3) + op(group, 4)) * 3 + op(group, 5 if group == 4 else 6)
        c_api[f"{'decoder' if group == 4 else 'sse'}-{name}"] = ops + op(group, 7)
# A small frame cap and a huge one.
c_api["decoder-caps"] = (op(4, 0, 1) + op(4, 1, raw(b"data:" + b"x" * 100 + b"\n\n")) + op(4, 3) + op(4, 4)
                         + op(4, 0, 5) + op(4, 1, 1) + op(4, 3) + op(4, 4) + op(5, 0, 2) + op(5, 1, 1) + op(5, 3) + op(5, 4))
# Decisions: every endpoint and status, header sets, bodies; classify, its JSON, quota, Retry-After.
ops = []
for endpoint in range(7):
    for status, body in ((200, 0), (401, 0), (403, 3), (429, 4), (400, 2), (401, 2), (503, 7)):
        ops += op(1, 0, NOW, endpoint, C_STATUS[status], headers(0, 2, 3), body)
        ops += op(1, 1, NOW, endpoint, C_STATUS[status], headers(1, 8), body)
ops += op(1, 0, NOW, raw("nope"), C_STATUS[200], NO_HEADERS, 0)
ops += op(1, 0, NOW, raw(b"\xff"), C_STATUS[200], NO_HEADERS, 0)
ops += op(1, 2, NOW, headers(0, 1, 2, 3, 4)) + op(1, 2, NOW, headers(5, 6, 7, 8, 9)) + op(1, 2, MAX, headers(1, 1))
ops += op(1, 2, NOW, [2] + raw("retry-after") + raw("  12 ") + raw("X-RateLimit-Remaining") + raw("-1"))
for value in range(4):
    ops += op(1, 3, NOW, value) + op(1, 3, ZERO, value)
ops += op(1, 3, NOW, raw("Wed, 21 Oct 2015 07:28:00 GMT")) + op(1, 3, NOW, raw(""))
c_api["decisions"] = ops
# Every argument spoiled once, on every stateless call, on fresh handles and a kit bot.
for k in range(13):
    f = 0xE0 + k
    ops = []
    ops += op(1, 0, NOW, 3, C_STATUS[429], headers(0, 2), 4, faults=f)
    ops += op(1, 1, NOW, 3, C_STATUS[401], headers(1), 2, faults=f)
    ops += op(1, 2, NOW, headers(0, 3), faults=f) + op(1, 3, NOW, 0, faults=f)
    ops += op(3, 0, 3, faults=f) + op(3, 1, 0, faults=f) + op(3, 3, 6, num16(20), 0, faults=f) + op(3, 4, 0, faults=f)
    ops += op(2, 0, num16(10), num16(100), ONE, faults=f) + op(2, 1, faults=f) + op(2, 3, faults=f)
    ops += op(4, 0, 0, faults=f) + op(4, 1, 2, faults=f) + op(4, 3, faults=f) + op(4, 4, faults=f) + op(4, 5, faults=f)
    ops += op(14, 0, faults=f)
    ops += op(5, 0, 0, faults=f) + op(5, 1, 0, faults=f) + op(5, 3, faults=f) + op(5, 4, faults=f) + op(5, 5, faults=f)
    ops += op(6, 0, 0, 0, 0, faults=f) + op(6, 2, ZERO, faults=f) + op(6, 3, num16(3), faults=f)
    ops += op(9, 0, KIT_FULL, faults=f) + op(9, 0, 4, faults=f) + op(9, 1, faults=f)
    ops += op(7, 0, 0, ONE, faults=f) + op(12, 0, 0, 1, 0, ONE, faults=f) + op(7, 2, faults=f) + op(7, 4, faults=f)
    ops += op(8, 1, 0, faults=f) + op(8, 7, 0, NOW, ONE, 0, faults=f) + op(8, 11, faults=f) + op(8, 13, faults=f)
    ops += op(10, 0, 0, faults=f) + op(11, 0, 0, faults=f) + op(13, 0, faults=f)
    c_api[f"fault-{k}"] = ops
# Text: split, the list, truncate, UTF-16 length.
ops = []
for t in list(range(7)) + [[0xF0, 120], [0xF1, 90], [0xF2, 150], [0xF3, 255]]:
    ops += op(3, 0, t) + op(3, 1, 0) + op(3, 1, 1) + op(3, 1, 9) + op(3, 4, t)
    ops += op(3, 3, t, num16(200), 0) + op(3, 3, t, num16(7), 2) + op(3, 3, t, ZERO, 1) + op(3, 3, t, MAX, 3)
ops += op(3, 0, raw(b"a\x00b " * 60)) + op(3, 3, raw(b"x\x00y"), ONE, 0) + op(3, 2)
c_api["text"] = ops
# Backoff, and the bot's timers.
ops = op(2, 0, ZERO, ZERO, num16(7)) + (op(2, 1) + op(2, 3)) * 8 + op(2, 2) + op(2, 1)
ops += op(2, 0, num16(100), num16(1000), ONE) + op(2, 1) * 3 + op(2, 0, MAX, MAX, MAX) + op(2, 1) * 3
ops += op(2, 0, ZERO, ONE, ONE) + op(2, 4)
ops += op(6, 0, 0, 0, 0) + op(7, 0, 0, ONE) + drain()
for tag in range(5):
    ops += op(8, 7, tag, NOW, ONE, 0) + op(8, 8, tag, NOW, num16(500), 0) + op(8, 8, tag, NOW, ZERO, 0)
ops += op(8, 9, 0, NOW, num16(5), 1) + op(8, 10, 0, NOW, ONE, 0) + op(8, 10, 1, NOW, ONE, 0)
for n in range(70):
    ops += op(8, 7, raw(f"t{n}"), num16(n), ONE, 0)
ops += op(15, 1, 0, 100) + drain() + op(7, 4)
c_api["backoff-timers"] = ops
# The kit's configuration: each in turn, the refusals naming their keys;
# bots from saved kit state (the last one handed out, canned, newer, junk).
ops = op(6, 0, 0, 0, 0)
for kit in range(7):
    ops += op(9, 0, kit) + op(9, 1)
ops += op(9, 0, raw("{\"commands\":[{\"name\":\"\"}]}")) + op(9, 1) + op(9, 0, raw(b"\xff")) + op(9, 1)
ops += op(9, 0, KIT_FULL) + op(13, 0)
for state in ([0], [1, 0], [1, 1], [1, 2], [1] + raw("{\"format\":\"onair.kit\"}"), [1] + raw("[")):
    ops += op(12, 0, 0, state, ONE) + op(9, 1) + op(13, 0) + op(11, 0, 0)
ops += op(12, 0, 2, [1, 0], ONE) + op(9, 1) + op(12, 0, 0, [1, 0], ONE, faults=0xE5) + op(7, 1) + op(6, 8)
c_api["kit-state"] = ops
# Configurations: every setter at its edges; a bot from each.
ops = op(6, 0, 0, 0, 0)
for setter in range(1, 8):
    for value in (ZERO, ONE, MAX, num16(30000)):
        ops += op(6, setter, value)
ops += op(6, 0, 2, 0, 0) + op(6, 0, 3, 0, 0) + op(6, 0, 0, 1, 0) + op(6, 0, 0, 0, 1) + op(6, 0, 1, 0, 0)
ops += op(7, 0, 2, ONE) + op(9, 1) + op(7, 0, raw("{"), ONE) + op(9, 1) + op(7, 0, 0, MAX) + drain() + op(8, 12) + op(8, 11)
ops += op(6, 8) + op(7, 0, 0, ONE) + op(7, 1)
c_api["config"] = ops
# A first authorization with the full kit: the token, the stream, GET /v1/live,
# every chunk and its kit actions (each event read back), chat, say, the
# tally and donors, fetches, time for the state's checkpoint, shutdown.
ops = op(6, 0, 0, 0, 0) + op(9, 0, KIT_FULL) + op(7, 0, 0, ONE, faults=0xE3) + drain() + op(7, 4) + op(8, 11)
ops += op(8, 0, 0, 0) + drain() + op(7, 5, 0, C_STATUS[200], NO_HEADERS, TOKEN_PAIR) + drain() + op(8, 11)
ops += op(7, 7, 2, 0, NO_HEADERS) + drain() + op(7, 5, 0, C_STATUS[200], NO_HEADERS, BROADCAST)
for chunk in list(range(CHUNKS)) + [1, 4, 14, 15, 3, 6]:
    ops += op(7, 8, 2, chunk)
    for _ in range(4):
        ops += op(7, 2) + op(14, 0) + op(7, 4)
    ops += drain() + KIT_CALLS
ops += op(8, 1, 0) + op(8, 1, 2) + op(8, 1, [0xF0, 150]) + op(8, 1, 5) + drain()
ops += op(7, 5, 0, C_STATUS[204], NO_HEADERS, 0) + drain() + op(7, 4)
ops += op(8, 2) + op(8, 3) + op(8, 4) + drain()
ops += op(7, 5, 0, C_STATUS[200], NO_HEADERS, 6) + op(7, 5, 0, C_STATUS[200], NO_HEADERS, 5) + op(7, 5, 0, C_STATUS[429], headers(0, 2), 4) + drain()
ops += op(7, 6, 0) + op(7, 5, 9, C_STATUS[200], NO_HEADERS, 0) + op(7, 8, 9, 0) + op(7, 9, 9) + op(8, 13)
ops += op(15, 1, 0, 60) + drain() + op(8, 12) + op(8, 13) + KIT_CALLS
ops += op(7, 9, 2) + drain() + op(15, 3, 0, 2) + drain() + op(8, 5) + drain() + op(8, 6, 0) + drain() + op(7, 4) + op(8, 1, 0)
ops += op(13, 0) + op(10, 0, 0)
c_api["bot-authorize-stream-chat"] = ops
# The reference bots' kit, then a restart from the state it handed out:
# the same people join again, a new one too.
ops = kit_bot(KIT_REF)
for chunk in (2, 1, 14, 3, 4, 15, 11):
    ops += op(7, 8, 2, chunk) + (op(7, 2) + op(14, 0)) * 4 + drain()
ops += op(15, 1, 0, 5) + drain() + KIT_CALLS + op(8, 6, 1) + drain()
ops += kit_bot(KIT_REF, 0, [0])
for chunk in (2, 1, 6):
    ops += op(7, 8, 2, chunk) + (op(7, 2) + op(14, 0)) * 4 + drain()
ops += KIT_CALLS
# Then the full kit, nobody a manager: !TOP refused, the DJ's !stop run.
ops += kit_bot(KIT_FULL)
for chunk in (14, 11, 14, 1, 1):
    ops += op(7, 8, 2, chunk) + (op(7, 2) + op(14, 0)) * 4 + drain()
c_api["kit-restart"] = ops
# Saved tokens, expired ones, 401s, stream failures, storms of time.
ops = op(6, 0, 0, 0, 0) + op(6, 1, ONE) + op(7, 0, 1, num16(42)) + drain()
ops += op(7, 5, 0, C_STATUS[401], NO_HEADERS, 2) + drain() + op(7, 5, 0, C_STATUS[200], NO_HEADERS, 1) + drain()
ops += op(7, 7, 2, 0xC0, C_STATUS[403], NO_HEADERS) + op(7, 8, 2, raw('{"status":403,"detailCode":"OAPI_MNGR_0209"}')) + op(7, 9, 2) + drain()
for _ in range(6):
    ops += op(15, 2, 0, 200) + drain() + op(7, 7, 2, 0, headers(9)) + op(7, 8, 2, 5) + drain() + op(7, 9, 2) + drain()
ops += op(8, 1, 0) + drain() + op(7, 6, 0) + op(15, 3, 0, 255) + drain() + op(8, 12)
ops += op(7, 0, 1, ONE) + drain() + op(7, 5, 0, C_STATUS[401], headers(0), 0) + op(7, 5, 0, C_STATUS[400], NO_HEADERS, 2) + drain() + op(8, 13) + op(8, 0, 0, 0) + drain()
c_api["bot-saved-expired"] = ops
# Replies on the reference kit's bot (each kind, merged while chat waits,
# refused kinds, ids, nicknames and texts), their counters; the app's daily
# quota: the bot's view, merges (canned, the last one, refusals), shared
# back, its blocked calls, the reset passing.
REPLY, COUNTERS, QUOTA_JSON, QUOTA_SHARE, QUOTA_MERGE = 0xD0, 0xE0, 0xF0, 0xF1, 0xF2
LAST_QUOTA = 0xF0      # quota_arg: the last quota JSON handed out


def quota_raw(data):
    """A raw quota argument: a pick byte past the table (under 0xF0), then length + bytes."""
    assert len(data) < 256
    return [0x20, len(data)] + list(data.encode() if isinstance(data, str) else data)


ops = kit_bot(KIT_REF)
for kind, user, nick, text in ((1, 0, 0, 0), (1, 1, 1, 0), (2, 0, 2, 3), (3, 1, 0, 4), (4, 0, 0, 0), (5, 1, 1, 0)):
    ops += op(10, REPLY, kind, user, nick, text)
ops += drain()
for user in (0, 1, 0):
    ops += op(10, REPLY, 1, user, 0, 0) + op(10, REPLY, 3, user, 2, 0)
ops += drain() + op(15, 1, 30) + drain()
ops += op(10, REPLY, 0, 0, 0, 0) + op(10, REPLY, 6, 0, 0, 0) + op(10, REPLY, 1, 2, 0, 0) + op(10, REPLY, 2, 0, 0, 1)
ops += op(10, REPLY, 5, 0, 0, [0xF0, 120]) + op(10, REPLY, 1, 0, 3, 0) + op(10, REPLY, 1, 3, 0, 0) + op(10, REPLY, 3, 0, 0, 5)
ops += op(15, 2, 30) + drain() + op(8, 13)
for kind in range(7):
    ops += op(10, COUNTERS, kind)
ops += op(10, QUOTA_JSON, NOW) + op(10, QUOTA_MERGE, NOW, LAST_QUOTA, 0) + op(10, QUOTA_MERGE, NOW, LAST_QUOTA, 1)
ops += op(10, QUOTA_MERGE, NOW, LAST_QUOTA, 2) + op(10, QUOTA_MERGE, NOW, LAST_QUOTA, 3)
ops += op(10, QUOTA_SHARE, NOW, LAST_QUOTA) + op(8, 3) + op(8, 4) + op(8, 2) + drain() + op(10, QUOTA_JSON, NOW) + op(8, 13)
for bad in range(5, 10):
    ops += op(10, QUOTA_SHARE, NOW, bad) + op(8, 13) + op(10, QUOTA_MERGE, NOW, 4, bad) + op(10, QUOTA_MERGE, NOW, bad, 0)
ops += op(10, QUOTA_MERGE, NOW, quota_raw(b"\xff"), 0) + op(10, QUOTA_SHARE, NOW, quota_raw('{"blocks":[{"scope":"chat.send","untilMs":1}]}'))
ops += op(10, QUOTA_MERGE, ZERO, 2, 1) + op(10, QUOTA_MERGE, MAX, 2, 1) + op(10, QUOTA_SHARE, MAX, 3)
ops += op(15, 3, 10) + drain() + op(10, QUOTA_JSON, NOW) + op(10, QUOTA_MERGE, NOW, 1, LAST_QUOTA)
c_api["replies-quota"] = ops
# The same calls, each argument spoiled once.
ops = kit_bot(KIT_REF)
for k in range(13):
    f = 0xE0 + k
    ops += op(10, REPLY, 1, 0, 0, 0, faults=f) + op(10, REPLY, 3, 1, 2, 3, faults=f) + op(10, COUNTERS, 1, faults=f)
    ops += op(10, QUOTA_JSON, NOW, faults=f) + op(10, QUOTA_SHARE, NOW, 1, faults=f)
    ops += op(10, QUOTA_MERGE, NOW, 0, 1, faults=f) + op(10, QUOTA_MERGE, NOW, 1, 4, faults=f)
ops += drain()
c_api["replies-quota-faults"] = ops
# Conventions.
c_api["conventions"] = op(0, 0, u16(0)) + op(0, 0, u16(23)) + op(0, 0, u16(27)) + op(0, 0xFF, u16(0xFFFF))
for name, ops in c_api.items():
    seed("c_api", name, bytes(b & 0xFF for b in ops))


def main():
    total = 0
    for target, files in sorted(seeds.items()):
        folder = os.path.join(CORPUS, target)
        os.makedirs(folder, exist_ok=True)
        for old in os.listdir(folder):
            if old.startswith("seed-"):
                os.remove(os.path.join(folder, old))
        for name, data in files.items():
            safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
            with open(os.path.join(folder, safe), "wb") as f:
                f.write(data)
            total += len(data)
        print(f"{target}: {len(files)} seeds")
    print(f"{total} bytes in all", file=sys.stderr)


if __name__ == "__main__":
    main()
