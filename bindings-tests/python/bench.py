"""Decoding the service-typical stream (4 KiB chunks) into event objects, side by side:

- onair: ``onair.Decoder`` (libonair's framing and decoding, its JSON batch per chunk,
  one ``json.loads``; frozen dataclasses out);
- httpx-sse + json.loads: ``httpx_sse.EventSource`` over an ``httpx`` response whose
  body is the same pre-cut chunks (``httpx.MockTransport``: no sockets), each
  event's data through ``json.loads``;
- sseclient-py + json.loads: ``sseclient.SSEClient`` over an iterator of the chunks.

Each contender reads the same fields of every event (``MODES``: none, a bot's, all);
onair's values are complete when ``feed`` returns them, the peers' ``json.loads``
dicts too.

The stream is a port of ``core/benches/common::service_stream`` (same RNG, same
mix: 55 % chat, 25 % like, 10 % presence, 10 % donation, heartbeats every 15 s,
Korean/emoji text, nulls where the spec allows, a final ``end``). Every
contender must see the same event count (asserted) and touch every event. Each
figure is the fastest of interleaved passes (the least disturbed by other load).

Run: ``scripts/bench-python`` (a venv with the package, httpx-sse and sseclient-py).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable, Iterator
from typing import Any

import onair

CHUNK = 4096
NICKNAMES = ["별빛소녀🌟", "nightowl_92", "감자튀김", "DJ팬클럽회장", "moonlight", "🎧음악좋아", "하늘바라기",
             "cozy_listener", "초코우유", "청취자1234"]
MESSAGES = [
    "안녕하세요! 오늘도 방송 잘 보고 있어요 ❤️",
    "this song is so good, what's the title?",
    "ㅋㅋㅋㅋㅋ 진짜 웃기다",
    '{"looks":"like json","but":"is chat"}',
    "퇴근하고 바로 들어왔어요~ 오늘 플리 최고 👍👍",
    "hello from Busan 🌊 first time here",
    "신청곡 있어요!! 아이유 - 밤편지 부탁드려요 🙏",
    'lol "quoted" text and a backslash \\ here',
    "👏👏👏👏👏",
    "good evening everyone, DJ sounds great tonight",
]
NOTES = ["항상 좋은 방송 감사합니다 💝", "for the next song request!", "생일 축하해요 🎂🎉"]
DJ_ID = "dj_Qm9iV2hpdGVfTGl2ZUJyb2FkY2FzdF9ESg"
M64 = (1 << 64) - 1


class Rng:
    """splitmix64, as the Rust benches."""

    def __init__(self, seed: int) -> None:
        self.s = seed

    def next(self) -> int:
        self.s = (self.s + 0x9E3779B97F4A7C15) & M64
        z = self.s
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
        return z ^ (z >> 31)

    def below(self, n: int) -> int:
        return self.next() % n

    def pick(self, items: list[str]) -> str:
        return items[self.below(len(items))]


def js(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)


def user(rng: Rng) -> str:
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    seed = Rng(rng.below(300))
    uid = "".join(alphabet[seed.below(64)] for _ in range(43))
    nick = "null" if rng.below(12) == 0 else js(rng.pick(NICKNAMES))
    return f'{{"id":"{uid}","nickname":{nick}}}'


def timestamp(ms: int) -> str:
    secs = ms // 1000
    h, m, s = (secs // 3600) % 24, (secs // 60) % 60, secs % 60
    return f"2024-11-22T{h:02}:{m:02}:{s:02}.{ms % 1000:03}Z"


def service_stream(target: int) -> tuple[bytes, int]:
    rng = Rng(0x0A1B2C3D4E5F6071)
    out: list[str] = []
    size = events = 0
    now = 1_732_250_000_000
    next_heartbeat = now + 15_000
    offset = 0
    while size < target:
        now += rng.below(400)
        if now >= next_heartbeat:
            out.append(":heartbeat\n\n")
            size += 12
            next_heartbeat += 15_000
        t = js(timestamp(now % 86_400_000))
        roll = rng.below(100)
        if roll <= 54:
            dj = rng.below(20) == 0
            u = f'{{"id":"{DJ_ID}","nickname":"오늘의DJ🎙️"}}' if dj else user(rng)
            data = f'{{"user":{u},"isDj":{"true" if dj else "false"},"message":{js(rng.pick(MESSAGES))},"sentTime":{t}}}'
            name = "chat"
        elif roll <= 79:
            paid = rng.below(3) == 0
            if paid:
                amount, extra, combo = 10 * (1 + rng.below(10)), 5 * rng.below(2), 1 + rng.below(5)
            else:
                amount, extra, combo = 1, 0, None
            total = (amount + extra) * (combo or 1)
            u = user(rng)
            c = "null" if combo is None else str(combo)
            data = (f'{{"user":{u},"type":"{"PAID" if paid else "FREE"}","totalAmount":{total},'
                    f'"amount":{amount},"extraAmount":{extra},"combo":{c},"time":{t}}}')
            name = "like"
        elif roll <= 89:
            u = user(rng)
            rank = "null" if rng.below(3) == 0 else str(1 + rng.below(50))
            k = rng.below(4)
            if k == 0:
                temp = "null"
            elif k == 1:
                temp = str(30 + rng.below(60))
            else:
                a = 30 + rng.below(60)
                temp = f"{a}.{rng.below(10)}"
            manager = "true" if rng.below(10) == 0 else "false"
            data = (f'{{"user":{u},"type":"JOIN","fanRank":{rank},"isManager":{manager},'
                    f'"favoriteTemperature":{temp},"time":{t}}}')
            name = "presence"
        else:
            u = user(rng)
            amount = 100 * (1 + rng.below(100))
            note = "null" if rng.below(3) == 0 else js(rng.pick(NOTES))
            data = f'{{"user":{u},"amount":{amount},"message":{note},"time":{t}}}'
            name = "donation"
        offset += 1
        frame = f"id:{now}-{offset}\nevent:{name}\ndata:{data}\n\n"
        out.append(frame)
        size += len(frame.encode())
        events += 1
    out.append('event:end\ndata:{"reason":"LIVE_ENDED"}\n\n')
    return "".join(out).encode(), events + 1


def chunked(data: bytes) -> list[bytes]:
    return [data[i : i + CHUNK] for i in range(0, len(data), CHUNK)]


# ---- what each contender reads of every event ----------------------------------------
#
# Every contender reads the same fields of every event, in three modes:
#   count  no field (the item's type only);
#   bot    what a bot reads: user id and nickname, chat message and is_dj, like
#          total_amount, presence fan_rank, donation amount and message, end reason;
#   all    every field of every event, the frame id included.
# The read functions are looked up per event the same way for everyone (a dict by
# class or by event name), and their values are compared across contenders first.

Reads = dict[Any, Callable[..., Any]]

ONAIR_READS: dict[str, Reads] = {
    "bot": {
        onair.Chat: lambda e: (e.user.id, e.user.nickname, e.is_dj, e.message),
        onair.Like: lambda e: (e.user.id, e.user.nickname, e.total_amount),
        onair.Presence: lambda e: (e.user.id, e.user.nickname, e.fan_rank),
        onair.Donation: lambda e: (e.user.id, e.user.nickname, e.amount, e.message),
        onair.End: lambda e: (e.reason,),
    },
    "all": {
        onair.Chat: lambda e: (e.id, e.user.id, e.user.nickname, e.is_dj, e.message, e.sent_time),
        onair.Like: lambda e: (e.id, e.user.id, e.user.nickname, e.type, e.total_amount, e.amount, e.extra_amount,
                               e.combo, e.time),
        onair.Presence: lambda e: (e.id, e.user.id, e.user.nickname, e.type, e.fan_rank, e.is_manager,
                                   e.favorite_temperature, e.time),
        onair.Donation: lambda e: (e.id, e.user.id, e.user.nickname, e.amount, e.message, e.time),
        # (no id: httpx-sse gives the last event id, not the frame's own; one event in 8 999)
        onair.End: lambda e: (e.reason,),
    },
}

# (frame id, decoded data) → the same values, from json.loads' dicts.
JSON_READS: dict[str, Reads] = {
    "bot": {
        "chat": lambda i, o: (o["user"]["id"], o["user"]["nickname"], o["isDj"], o["message"]),
        "like": lambda i, o: (o["user"]["id"], o["user"]["nickname"], o["totalAmount"]),
        "presence": lambda i, o: (o["user"]["id"], o["user"]["nickname"], o["fanRank"]),
        "donation": lambda i, o: (o["user"]["id"], o["user"]["nickname"], o["amount"], o["message"]),
        "end": lambda i, o: (o["reason"],),
    },
    "all": {
        "chat": lambda i, o: (i, o["user"]["id"], o["user"]["nickname"], o["isDj"], o["message"], o["sentTime"]),
        "like": lambda i, o: (i, o["user"]["id"], o["user"]["nickname"], o["type"], o["totalAmount"], o["amount"],
                              o["extraAmount"], o["combo"], o["time"]),
        "presence": lambda i, o: (i, o["user"]["id"], o["user"]["nickname"], o["type"], o["fanRank"],
                                  o["isManager"], o["favoriteTemperature"], o["time"]),
        "donation": lambda i, o: (i, o["user"]["id"], o["user"]["nickname"], o["amount"], o["message"], o["time"]),
        "end": lambda i, o: (o["reason"],),
    },
}
MODES = ("count", "bot", "all")


# ---- contenders: each returns the events it produced (and, with `seen`, what it read) --


EVENTS = (onair.Chat, onair.Presence, onair.Like, onair.Donation, onair.End, onair.OtherEvent)


def run_onair(chunks: list[bytes], mode: str, seen: list[Any] | None = None) -> int:
    """onair.Decoder: a JSON batch per chunk, one json.loads, frozen dataclasses."""
    n = 0
    with onair.Decoder() as dec:
        if mode == "count":
            for chunk in chunks:
                for item in dec.feed(chunk):
                    if isinstance(item, EVENTS):
                        n += 1
            return n
        reads = ONAIR_READS[mode]
        for chunk in chunks:
            for item in dec.feed(chunk):
                read = reads.get(type(item))
                if read is not None:
                    value = read(item)
                    n += 1
                    if seen is not None:
                        seen.append(value)
    return n


try:
    from httpx import SyncByteStream as _SyncByteStream
except ImportError:  # the benchmark's venv has httpx; the test venv may not
    _SyncByteStream = object  # type: ignore[assignment,misc]


def _peer(events: Iterator[Any], mode: str, seen: list[Any] | None) -> int:
    """Each SSE event's data through json.loads, then the mode's reads."""
    n = 0
    loads = json.loads
    if mode == "count":
        for sse in events:
            if not sse.data:  # a comment's blank line: no event
                continue
            obj = loads(sse.data)
            if obj is not None:
                n += 1
        return n
    reads = JSON_READS[mode]
    for sse in events:
        if not sse.data:
            continue
        obj = loads(sse.data)
        read = reads.get(sse.event)
        if read is not None:
            value = read(sse.id or None, obj)
            n += 1
            if seen is not None:
                seen.append(value)
    return n


def run_httpx_sse(chunks: list[bytes], mode: str, seen: list[Any] | None = None) -> int:
    import httpx
    from httpx_sse import EventSource

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=_Stream(chunks))

    with httpx.Client(transport=httpx.MockTransport(handler)) as client:
        with client.stream("GET", "http://bench/v1/events") as response:
            return _peer(EventSource(response).iter_sse(), mode, seen)


def run_sseclient(chunks: list[bytes], mode: str, seen: list[Any] | None = None) -> int:
    import sseclient

    return _peer(sseclient.SSEClient(iter(chunks)).events(), mode, seen)


class _Stream(_SyncByteStream):
    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.chunks)

    def close(self) -> None:
        pass


# ---- where onair's time goes ----------------------------------------------------------


def profile(chunks: list[bytes], events: int, passes: int) -> None:
    """Each stage of the Decoder alone (fastest CPU time of `passes`), in µs/event."""
    import ctypes
    import json as json_

    from onair import _ffi, _json

    lib = _ffi.lib
    p, n = ctypes.c_void_p(), ctypes.c_size_t()
    pn = (ctypes.byref(p), ctypes.byref(n))

    def best(fn: Callable[[], Any]) -> float:
        return min(_timed(fn) for _ in range(passes)) / events * 1e6

    def feed_only() -> None:  # Rust: framing + typed decoding (items queued, taken at the end)
        with onair.Decoder() as dec:
            h = dec._h
            for chunk in chunks:
                lib.onair_decoder_feed(h, chunk, len(chunk))

    batches: list[bytes] = []

    def feed_and_take() -> None:  # + each chunk's items as JSON lines, copied out
        batches.clear()
        with onair.Decoder() as dec:
            h = dec._h
            for chunk in chunks:
                lib.onair_decoder_feed(h, chunk, len(chunk))
                lib.onair_decoder_take_json(h, *pn)
                if n.value:
                    batches.append(ctypes.string_at(p.value or 0, n.value - 1))

    feed_and_take()

    def loads() -> None:  # json.loads of each batch as one array
        for b in batches:
            json_.loads(b"[" + b.replace(b"\n", b",") + b"]")

    lists = [json_.loads(b"[" + b.replace(b"\n", b",") + b"]") for b in batches]

    def values() -> None:  # the frozen dataclasses from the dicts
        for rows in lists:
            _json.items(rows)

    items = [_json.items(rows) for rows in lists]
    t_feed, t_take = best(feed_only), best(feed_and_take)
    stages: list[tuple[str, float]] = [
        ("onair_decoder_feed (Rust: framing + typed decoding)", t_feed),
        ("onair_decoder_take_json: + the JSON lines, copied", t_take - t_feed),
        ("json.loads (one array per chunk)", best(loads)),
        ("the dataclasses (twin construction, users shared)", best(values)),
        ("bench loop, count mode (isinstance)", best(lambda: [isinstance(i, EVENTS) for b in items for i in b])),
    ]
    whole = best(lambda: run_onair(chunks, "count"))
    for mode in ("bot", "all"):
        reads = ONAIR_READS[mode]
        stages.append((f"reads, {mode} mode (attribute reads)",
                       best(lambda: [reads[type(i)](i) for b in items for i in b if type(i) in reads])))
    print("\nwhere onair's time goes (each stage alone, fastest CPU time of", passes, "passes):")
    for name, us_ in stages:
        print(f"  {name:62} {us_:6.3f} µs/event")
    print(f"  {'sum of the stages before the reads':62} {sum(t for _, t in stages[:5]):6.3f} µs/event")
    print(f"  {'the whole Decoder loop, count mode (run_onair)':62} {whole:6.3f} µs/event")


def _timed(fn: Callable[[], Any]) -> float:
    """CPU time of this process (steadier than wall time on a loaded machine)."""
    t0 = time.process_time()
    fn()
    return time.process_time() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bytes", type=int, default=2 << 20)
    ap.add_argument("--passes", type=int, default=7)
    ap.add_argument("--modes", default=",".join(MODES), help="count,bot,all")
    ap.add_argument("--no-profile", action="store_true")
    args = ap.parse_args()
    data, events = service_stream(args.bytes)
    chunks = chunked(data)
    modes = args.modes.split(",")
    contenders: list[tuple[str, Callable[..., int]]] = [
        ("onair (frozen dataclasses)", run_onair),
        ("httpx-sse + json.loads", run_httpx_sse),
        ("sseclient-py + json.loads", run_sseclient),
    ]
    for mode in modes:
        reference: list[Any] | None = None
        for name, fn in contenders:
            seen: list[Any] = []
            got = fn(chunks, mode, seen)
            assert got == events, (name, mode, got, events)
            if mode != "count":
                if reference is None:
                    reference = seen
                assert seen == reference, (name, mode, "read other values than onair")
    # Two clocks: wall time, and this process's CPU time (time.process_time), which
    # leaves out the time other processes hold the CPU: on a shared, loaded machine
    # the fastest CPU time is the steadier figure; both are printed.
    clocks = {"wall": time.perf_counter, "cpu": time.process_time}
    best = {(clock, mode, name): float("inf") for clock in clocks for mode in modes for name, _ in contenders}
    for _ in range(args.passes):
        for mode in modes:
            for name, fn in contenders:
                w0, c0 = time.perf_counter(), time.process_time()
                fn(chunks, mode)
                c1, w1 = time.process_time(), time.perf_counter()
                best["wall", mode, name] = min(best["wall", mode, name], w1 - w0)
                best["cpu", mode, name] = min(best["cpu", mode, name], c1 - c0)
    print(f"service-typical stream: {len(data)} bytes in {len(chunks)} chunks of {CHUNK} B, {events} events; "
          f"fastest of {args.passes} interleaved passes; onair {onair.library_version()} from {onair._ffi.LIB_PATH}; "
          f"load average {os.getloadavg()[0]:.1f}")
    for mode in modes:
        print(f"\nmode {mode!r}:")
        print(f"  {'contender':32} {'µs/event':>9} {'events/s':>11}  onair is   | CPU µs/event  onair is")
        first = {c: best[c, mode, contenders[0][0]] for c in clocks}
        for name, _ in contenders:
            t, tc = best["wall", mode, name], best["cpu", mode, name]
            per, perc = t / events * 1e6, tc / events * 1e6
            if name == contenders[0][0]:
                rel, relc = "—", "—"
            else:
                rel, relc = f"{t / first['wall']:.2f}× faster", f"{tc / first['cpu']:.2f}× faster"
            print(f"  {name:32} {per:9.2f} {events / t:11,.0f}  {rel:>12} | {perc:9.2f}  {relc:>12}")
        ratios = []
        for c in clocks:
            peer = min(best[c, mode, contenders[1][0]], best[c, mode, contenders[2][0]])
            ratios.append(f"{peer / first[c]:.2f}× ({c})")
        print(f"  ratio vs the faster peer ({mode}): {', '.join(ratios)}")
    if not args.no_profile:
        profile(chunks, events, args.passes)


if __name__ == "__main__":
    main()
