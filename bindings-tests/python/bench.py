"""Decoding the service-typical stream (4 KiB chunks) into event objects, side by side:

- onair: ``onair.Decoder`` (libonair's framing and decoding; typed event objects out);
- httpx-sse + json.loads: ``httpx_sse.EventSource`` over an ``httpx`` response whose
  body is the same pre-cut chunks (``httpx.MockTransport``: no sockets), each
  event's data through ``json.loads``;
- sseclient-py + json.loads: ``sseclient.SSEClient`` over an iterator of the chunks.

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


# ---- contenders: each returns the number of events it produced ----------------------


def run_onair(chunks: list[bytes]) -> int:
    n = 0
    with onair.Decoder() as dec:
        for chunk in chunks:
            for item in dec.feed(chunk):
                if isinstance(item, onair.Event):
                    n += 1
    return n


try:
    from httpx import SyncByteStream as _SyncByteStream
except ImportError:  # the benchmark's venv has httpx; the test venv may not
    _SyncByteStream = object  # type: ignore[assignment,misc]


def run_onair_views(chunks: list[bytes]) -> int:
    """Reference row: the tagged-struct path (one ctypes call per item, fields read one by one)."""
    n = 0
    with onair.Decoder(kit_views=True) as dec:
        for chunk in chunks:
            for item in dec.feed(chunk):
                if isinstance(item, onair.Event):
                    n += 1
    return n


def run_httpx_sse(chunks: list[bytes]) -> int:
    import httpx
    from httpx_sse import EventSource

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=_Stream(chunks))

    n = 0
    with httpx.Client(transport=httpx.MockTransport(handler)) as client:
        with client.stream("GET", "http://bench/v1/events") as response:
            for sse in EventSource(response).iter_sse():
                if not sse.data:  # a comment's blank line: no event
                    continue
                obj = json.loads(sse.data)
                if obj is not None:
                    n += 1
    return n


def run_sseclient(chunks: list[bytes]) -> int:
    import sseclient

    n = 0
    for event in sseclient.SSEClient(iter(chunks)).events():
        if not event.data:
            continue
        obj = json.loads(event.data)
        if obj is not None:
            n += 1
    return n


class _Stream(_SyncByteStream):
    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.chunks)

    def close(self) -> None:
        pass


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bytes", type=int, default=2 << 20)
    ap.add_argument("--passes", type=int, default=7)
    args = ap.parse_args()
    data, events = service_stream(args.bytes)
    chunks = chunked(data)
    contenders: list[tuple[str, Callable[[list[bytes]], int]]] = [
        ("onair (typed event objects)", run_onair),
        ("httpx-sse + json.loads", run_httpx_sse),
        ("sseclient-py + json.loads", run_sseclient),
        ("onair, struct path (kit_views)", run_onair_views),
    ]
    for name, fn in contenders:
        got = fn(chunks)
        assert got == events, (name, got, events)
    best = [float("inf")] * len(contenders)
    for _ in range(args.passes):
        for i, (_, fn) in enumerate(contenders):
            t0 = time.perf_counter()
            fn(chunks)
            best[i] = min(best[i], time.perf_counter() - t0)
    print(f"service-typical stream: {len(data)} bytes in {len(chunks)} chunks of {CHUNK} B, {events} events; "
          f"fastest of {args.passes} interleaved passes; onair {onair.library_version()} from {onair._ffi.LIB_PATH}")
    print(f"{'contender':32} {'µs/event':>9} {'events/s':>11}  onair is")
    for (name, _), t in zip(contenders, best):
        per = t / events * 1e6
        print(f"{name:32} {per:9.2f} {events / t:11,.0f}  {t / best[0]:.2f}× faster" if name != contenders[0][0]
              else f"{name:32} {per:9.2f} {events / t:11,.0f}  —")
    peer = min(best[1:3])
    print(f"ratio vs the faster peer: {peer / best[0]:.2f}×")
    _: Any = None


if __name__ == "__main__":
    main()
