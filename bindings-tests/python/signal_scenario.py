"""Real signals in the middle of calls (run by test_threads.py in a subprocess,
with a deadline: a deadlock fails the test instead of hanging the suite).

The main thread drives bot after bot (polls, reports, the kit, send_chat) as
densely as it can while SIGALRM fires every 200 µs (an interval timer) and a
thread sends SIGUSR1 every millisecond. The handler calls ``shutdown()`` on
the bot in use, then a read-only method, which must raise
``ReentrantCallError`` when the signal landed inside a call on that bot. Each
bot must then stop with ``shut_down``, its actions whole. Last, the handler ``close()``s a bot from inside one of
its calls: the call must return whole, the next raise ``ClosedError``.

Prints one JSON line: the counts and the failures.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from typing import Any

import onair
from conftest import BOT_STREAM, CLIENT_ID, KIT, TOKEN_BODY

JSON = [("Content-Type", "application/json")]


def streaming_bot(now: list[int]) -> tuple[onair.Bot, int]:
    bot = onair.Bot(onair.Config("http://127.0.0.1:9", CLIENT_ID, "secret", kit=KIT), None, seed=5)
    bot.poll(now[0])
    bot.authorize("code", "https://bot.example/cb")
    send = bot.poll(now[0])
    assert isinstance(send, onair.Send)
    bot.on_response(send.request_id, 200, JSON, TOKEN_BODY, now[0])
    for _ in range(50):
        a = bot.poll(now[0])
        if isinstance(a, onair.OpenStream):
            bot.on_stream_open(a.request_id, 200, [], now[0])
            return bot, a.request_id
        if isinstance(a, onair.Wait) and a.until_ms is not None:
            now[0] = a.until_ms
    raise AssertionError("the stream never opened")


def main(seconds: float) -> dict[str, Any]:
    stats: dict[str, Any] = {
        "signals": 0,
        "interrupted_calls": 0,
        "reentrant_refused": 0,
        "bots": 0,
        "shutdowns_seen": 0,
        "closed_in_a_call": False,
        "failures": [],
    }
    state: dict[str, Any] = {"bot": None, "mode": "shutdown"}

    def handler(signum: int, frame: object) -> None:
        stats["signals"] += 1
        bot = state["bot"]
        if bot is None:
            return
        inside = bot._lock._is_owned()  # this thread is inside a call on the bot
        stats["interrupted_calls"] += inside
        if state["mode"] == "close":
            if inside and not bot.closed:
                bot.close()
                stats["closed_in_a_call"] = True
            return
        bot.shutdown()
        try:
            bot.status(0)
            if inside:
                stats["failures"].append("a call from inside a call was not refused")
        except onair.ReentrantCallError:
            stats["reentrant_refused"] += 1
            if not inside:
                stats["failures"].append("refused outside a call")

    signal.signal(signal.SIGALRM, handler)
    signal.signal(signal.SIGUSR1, handler)
    done = threading.Event()

    def sender() -> None:
        while not done.is_set():
            os.kill(os.getpid(), signal.SIGUSR1)
            time.sleep(0.001)

    threading.Thread(target=sender, daemon=True).start()
    signal.setitimer(signal.ITIMER_REAL, 0.0002, 0.0002)
    fail = stats["failures"].append
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            now = [1000]
            state["bot"] = None  # no shutdown while setting up
            bot, stream = streaming_bot(now)
            state["bot"] = bot
            stats["bots"] += 1
            for i in range(100000):
                a = bot.poll(now[0])
                match a:
                    case onair.Stopped(code, message):
                        if code != "shut_down" or not message:
                            fail(f"stopped: {a!r}")
                        stats["shutdowns_seen"] += 1
                        break
                    case onair.Send(rid, request):
                        if not request.url.startswith("http://127.0.0.1:9/"):
                            fail(f"a torn request: {request!r}")
                        status, body = {"chat": (204, b""), "token": (200, TOKEN_BODY)}.get(request.endpoint, (200, b"{}"))
                        bot.on_response(rid, status, JSON, body, now[0])
                    case onair.OpenStream(rid, _):
                        bot.on_stream_open(rid, 200, [], now[0])
                        stream = rid
                    case onair.Command(name=name):
                        bot.say(f"answering {name}")
                    case onair.Wait(until):
                        if i % 3 == 0:
                            bot.send_chat("hello there")
                        try:
                            bot.on_stream_bytes(stream, BOT_STREAM, now[0])
                        except onair.MisuseError:
                            pass  # the stream is gone (shut down)
                        now[0] = until if until is not None else now[0] + 1
                    case _:
                        pass
            else:
                fail("a bot never stopped")
            state["bot"] = None
            if bot.pending_calls != 0:
                fail("calls left after the stop")
            bot.close()

        # close() from the handler, inside a call.
        now = [1000]
        bot, stream = streaming_bot(now)
        state["mode"] = "close"
        state["bot"] = bot
        closed_at = time.monotonic() + 30
        while time.monotonic() < closed_at:
            try:
                a = bot.poll(now[0])
                if isinstance(a, onair.Send) and not a.request.url.startswith("http://"):
                    fail(f"a torn request after close: {a!r}")
                bot.status(now[0])
                bot.on_stream_bytes(stream, BOT_STREAM, now[0])
            except onair.ClosedError:
                break
        else:
            fail("close() from the handler never happened inside a call")
        if not bot.closed:
            fail("not closed")
    except BaseException as e:
        fail(f"{type(e).__name__}: {e}")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0, 0)
        done.set()
        signal.signal(signal.SIGALRM, signal.SIG_IGN)
        signal.signal(signal.SIGUSR1, signal.SIG_IGN)
    return stats


if __name__ == "__main__":
    print(json.dumps(main(float(sys.argv[1]) if len(sys.argv) > 1 else 2.0)))
