"""Any thread, any time: one Bot, one Decoder, one Driver hammered from several
threads (every report method, every command, say, status, the kit, tokens,
close); copies and pickles refused for handle owners, values shared freely; a
signal handler's shutdown()/close() in the middle of a call, deterministically
(a hook inside the call) and with real signals (a subprocess with a deadline,
so a deadlock fails instead of hanging the suite).

Before the objects had locks, `hammer.py`-like use of one Bot from two threads
crashed CPython (segfault, double free) or put garbage bytes in last_error().
"""

from __future__ import annotations

import copy
import json
import os
import pickle
import random
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import onair
import pytest
from conftest import BOT_STREAM, CLIENT_ID, KIT, TOKEN_BODY, Emulator

HERE = Path(__file__).resolve().parent
JSON = [("Content-Type", "application/json")]
SECONDS = float(os.environ.get("ONAIR_HAMMER_SECONDS", "2"))


def clean(text: str) -> bool:
    """A whole, printable text: no control characters, no stray bytes."""
    return text.isprintable() and "\ufffd" not in text


def streaming_bot(**kw: Any) -> tuple[onair.Bot, int, list[int]]:
    """A bot with the kit, holding tokens, its stream open: (bot, stream id, [now])."""
    now = [1000]
    bot = onair.Bot(onair.Config("http://127.0.0.1:9", CLIENT_ID, "secret", kit=KIT, **kw), None, seed=3)
    assert isinstance(bot.poll(now[0]), onair.NeedsAuthorization)
    bot.authorize("consent-code", "https://bot.example/cb")
    send = bot.poll(now[0])
    assert isinstance(send, onair.Send)
    bot.on_response(send.request_id, 200, JSON, TOKEN_BODY, now[0])
    for _ in range(50):
        a = bot.poll(now[0])
        if isinstance(a, onair.OpenStream):
            bot.on_stream_open(a.request_id, 200, [], now[0])
            return bot, a.request_id, now
        if isinstance(a, onair.Wait) and a.until_ms is not None:
            now[0] = a.until_ms
    raise AssertionError("the stream never opened")


class Failures:
    """What threads saw that they should not have: collected, asserted at the end."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.seen: list[str] = []

    def add(self, what: str) -> None:
        with self.lock:
            self.seen.append(what)

    def error(self, e: BaseException, closed_ok: bool) -> None:
        """An exception from a call: an OnairError with clean text, or ClosedError once closing."""
        if isinstance(e, onair.ClosedError) and closed_ok:
            return
        if isinstance(e, onair.OnairError):
            if not (clean(str(e)) and clean(e.detail)):
                self.add(f"garbage in an error: {str(e)!r}")
            return
        self.add(f"{type(e).__name__}: {e}")


def run_threads(targets: list[Callable[[], None]], failures: Failures) -> None:
    def wrap(f: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            try:
                f()
            except BaseException as e:  # a thread's own bug, reported
                failures.add(f"thread died: {type(e).__name__}: {e}")

        return run

    threads = [threading.Thread(target=wrap(f)) for f in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
        assert not t.is_alive(), "a thread hung"


def test_one_bot_from_many_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    freed: list[int] = []
    real_free = onair.Bot._free
    monkeypatch.setattr(onair.Bot, "_free", staticmethod(lambda h: (freed.append(h), real_free(h))))
    bot, _, now = streaming_bot(max_queued_calls=100000)
    handle = bot._h
    failures = Failures()
    stop = threading.Event()
    closing = threading.Event()
    counts = {"polls": 0, "events": 0, "calls": 0}

    def loop() -> None:
        while not stop.is_set():
            try:
                a = bot.poll(now[0])
                counts["polls"] += 1
                match a:
                    case onair.Send(rid, request):
                        if not request.url.startswith("http://127.0.0.1:9/") or not clean(request.url):
                            failures.add(f"a torn request: {request!r}")
                        bot.on_transport_error(rid, now[0])
                    case onair.OpenStream(rid, _):
                        bot.on_stream_open(rid, 200, [], now[0])
                        bot.on_stream_bytes(rid, BOT_STREAM, now[0])
                    case onair.Chat() | onair.Presence() | onair.Donation() | onair.Command() | onair.Arrival():
                        counts["events"] += 1
                    case onair.Stopped(_, message):
                        if not clean(message):
                            failures.add(f"garbage in an action: {message!r}")
                    case onair.Wait(until):
                        now[0] = until if until is not None else now[0] + 1
                    case _:
                        pass
            except BaseException as e:
                failures.error(e, closing.is_set())
                if closing.is_set():
                    return

    rid = 10**9  # a request id never issued: every report is a MisuseError
    ops: list[Callable[[], Any]] = [
        lambda: bot.send_chat("hello there"),
        lambda: bot.say("hello there " * 30),
        lambda: bot.kit(),
        lambda: bot.send_chat("  "),
        lambda: bot.send_chat("x" * 201),
        bot.fetch_broadcast,
        bot.list_listeners,
        bot.fetch_fans,
        lambda: bot.request_reconnect(now[0]),
        lambda: bot.status(now[0]),
        bot.tokens_json,
        bot.action_json,
        lambda: bot.pending_calls,
        lambda: bot.schedule(now[0] + 5, "once"),
        lambda: bot.every(60000, "tick", now[0] + 60000),
        lambda: bot.set_timer("online", now[0] + 5, 0, True),
        lambda: bot.cancel_timer("once"),
        lambda: bot.on_response(rid, 200, JSON, b"{}", now[0]),
        lambda: bot.on_transport_error(rid, now[0]),
        lambda: bot.on_stream_open(rid, 200, [], now[0]),
        lambda: bot.on_stream_bytes(rid, b"x", now[0]),
        lambda: bot.on_stream_closed(rid, now[0]),
    ]

    def app(seed: int) -> None:
        rng = random.Random(seed)
        while not stop.is_set():
            try:
                rng.choice(ops)()
                counts["calls"] += 1
                text = bot.last_error()
                if not clean(text):
                    failures.add(f"garbage in last_error(): {text!r}")
            except BaseException as e:
                failures.error(e, closing.is_set())
                if closing.is_set():
                    return

    def conductor() -> None:
        time.sleep(SECONDS * 0.6)
        bot.authorize("another-code", "https://bot.example/cb")
        time.sleep(SECONDS * 0.2)
        bot.shutdown(revoke=True)
        time.sleep(SECONDS * 0.2)
        closing.set()
        bot.close()  # while the others are calling
        time.sleep(0.05)
        stop.set()

    run_threads([loop, lambda: app(1), lambda: app(2), conductor], failures)
    assert failures.seen == []
    assert bot.closed and freed == [handle]
    assert counts["polls"] > 100 and counts["calls"] > 100 and counts["events"] > 0
    with pytest.raises(onair.ClosedError):
        bot.poll()
    assert bot.pending_calls == 0 and bot.last_error() == ""


def test_one_decoder_from_many_threads(service_stream: bytes) -> None:
    # Threads feeding one decoder interleave their chunks: chunks of whole frames,
    # so that every item any thread gets is one the stream holds (a torn frame
    # would be a torn input, not a torn item).
    frames = [f + b"\n\n" for f in service_stream.split(b"\n\n") if f]
    assert b"".join(frames) == service_stream
    failures = Failures()
    stop = threading.Event()
    closing = threading.Event()
    decoders = [onair.Decoder(), onair.Decoder()]
    seen = [0]
    with onair.Decoder() as one:
        expected = set(one.feed(service_stream))

    def feeder(dec: onair.Decoder, seed: int) -> Callable[[], None]:
        def run() -> None:
            rng = random.Random(seed)
            while not stop.is_set():
                try:
                    at = 0
                    while at < len(frames):
                        step = rng.randint(1, 4)
                        for item in dec.feed(b"".join(frames[at : at + step])):
                            seen[0] += 1
                            if item not in expected:
                                failures.add(f"a torn item: {item!r}")
                        at += step
                    if rng.random() < 0.3:
                        for item in dec.finish():
                            if item not in expected:
                                failures.add(f"a torn item: {item!r}")
                    assert dec.pending >= 0
                except BaseException as e:
                    failures.error(e, closing.is_set())
                    if closing.is_set():
                        return

        return run

    def conductor() -> None:
        time.sleep(SECONDS)
        closing.set()
        for d in decoders:
            d.close()  # while the feeders are feeding
        time.sleep(0.05)
        stop.set()

    targets = [feeder(d, 10 * i + k) for i, d in enumerate(decoders) for k in range(3)]
    run_threads([*targets, conductor], failures)
    assert failures.seen == []
    assert all(d.closed for d in decoders) and seen[0] > 100
    with pytest.raises(onair.ClosedError):
        decoders[0].feed(b":x\n\n")


def test_one_driver_from_many_threads(emulator: Emulator) -> None:
    """The driver's loop runs; threads say, send, call, read the kit and the status;
    one of them shuts it down. Every message said is delivered, nothing raises."""
    import asyncio

    import onair.aio

    config = onair.Config(emulator.base_url, emulator.client_id, emulator.client_secret, kit=KIT)
    driver = onair.aio.Driver(config, code=emulator.code(), redirect_uri=emulator.redirect_uri)
    failures = Failures()
    said: list[str] = []
    said_lock = threading.Lock()
    started = threading.Event()

    def user(k: int) -> None:
        started.wait(30)
        rng = random.Random(k)
        for i in range(15):
            try:
                match rng.randrange(6):
                    case 0 | 1:
                        text = f"thread {k} message {i}"
                        driver.say(text)
                        with said_lock:
                            said.append(text)
                    case 2:
                        driver.fetch_fans()
                    case 3:
                        kit = driver.kit()
                        assert kit is not None and kit.tally.hearts >= 0
                    case 4:
                        assert "connection" in driver.status()
                    case _:
                        driver.set_timer(f"t{k}", onair.now_ms() + 5)
            except BaseException as e:
                failures.error(e, False)
            time.sleep(rng.random() * 0.01)

    async def main() -> None:
        async with driver:
            async for action in driver:
                if isinstance(action, onair.PersistTokens):
                    started.set()
                if isinstance(action, onair.Stopped):
                    break

    threads = [threading.Thread(target=user, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()

    def conductor() -> None:
        for t in threads:
            t.join(60)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if len(emulator.ctl("/chat")["messages"]) >= len(said):
                break
            time.sleep(0.05)
        driver.shutdown()  # from a thread

    c = threading.Thread(target=conductor)
    c.start()
    asyncio.run(asyncio.wait_for(main(), 90))
    c.join(30)
    assert failures.seen == []
    delivered = {m["message"] for m in emulator.ctl("/chat")["messages"]}
    assert set(said) <= delivered and len(said) > 5


def test_copies_and_pickles_are_refused(service_stream: bytes) -> None:
    bot = onair.Bot(onair.Config("http://127.0.0.1:9", CLIENT_ID, "secret"), None, seed=1)
    owners: list[Any] = [bot, onair.Decoder(), onair.Backoff()]
    for o in owners:
        name = type(o).__name__
        with pytest.raises(TypeError, match=f"a {name} owns a libonair handle"):
            copy.copy(o)
        with pytest.raises(TypeError, match="cannot be copied"):
            copy.deepcopy(o)
        with pytest.raises(TypeError, match="cannot be pickled"):
            pickle.dumps(o)
        with pytest.raises(TypeError):
            copy.deepcopy([o])  # inside a container too
        assert not o.closed  # the refusal left the object as it was
    # Values copy and pickle as usual, and are shared between threads as they are.
    action = bot.poll(1000)
    items = onair.Decoder().feed(service_stream)
    values: list[Any] = [
        action,
        *items,
        onair.classify("live", 200),
        onair.Send(1, onair.Request("chat", "POST", "http://x", (("a", "b"),), b"body"), 5),
        onair.Config("http://127.0.0.1:9", CLIENT_ID, "secret", kit=KIT),
    ]
    for v in values:
        assert copy.copy(v) == v and copy.deepcopy(v) == v
        assert pickle.loads(pickle.dumps(v)) == v
    for o in owners:
        o.close()
        o.close()
        assert o.closed


# ---- signal handlers -------------------------------------------------------------


def hooked(monkeypatch: pytest.MonkeyPatch, hook: Callable[[], None]) -> list[int]:
    """Runs `hook` once from inside Bot.poll while it reads its action (as a
    signal handler would run, between two bytecodes of the call)."""
    import onair.bot as bot_module

    fired = [0]
    real = bot_module._read_action

    def read(text: bytes) -> Any:
        if not fired[0]:
            fired[0] = 1
            hook()
        return real(text)

    monkeypatch.setattr(bot_module, "_read_action", read)
    return fired


def test_shutdown_from_inside_a_call_waits_for_it(monkeypatch: pytest.MonkeyPatch) -> None:
    bot, _, now = streaming_bot()
    bot.fetch_fans()
    reentered: list[BaseException] = []

    def handler() -> None:
        bot.shutdown()  # recorded: the call in progress goes on reading its action
        try:
            bot.status(now[0])
        except onair.ReentrantCallError as e:
            reentered.append(e)

    fired = hooked(monkeypatch, handler)
    a = bot.poll(now[0])  # the fan call's request: read in full, then the shutdown applies
    assert fired[0] == 1
    # (with the kit, the broadcast's GET /v1/live goes first)
    assert isinstance(a, onair.Send) and a.request.endpoint in ("live", "fans") and a.request.url.startswith("http://")
    assert len(reentered) == 1 and "signal handler" in str(reentered[0])
    stopped = None
    for _ in range(20):
        b = bot.poll(now[0])
        if isinstance(b, onair.Stopped):
            stopped = b
            break
        if isinstance(b, onair.Send):
            bot.on_response(b.request_id, 200, [], b"", now[0])
    assert stopped is not None and stopped.code == "shut_down"
    bot.close()


def test_close_from_inside_a_call_frees_after_it(monkeypatch: pytest.MonkeyPatch) -> None:
    freed: list[int] = []
    real_free = onair.Bot._free
    monkeypatch.setattr(onair.Bot, "_free", staticmethod(lambda h: (freed.append(h), real_free(h))))
    bot, _, now = streaming_bot()
    handle = bot._h
    bot.fetch_broadcast()
    hooked(monkeypatch, bot.close)
    a = bot.poll(now[0])
    assert isinstance(a, onair.Send) and a.request.endpoint == "live"  # whole, read before the free
    assert bot.closed and freed == [handle]
    with pytest.raises(onair.ClosedError, match="the Bot is closed"):
        bot.poll(now[0])
    bot.close()
    assert freed == [handle]


def test_real_signals_in_the_middle_of_calls() -> None:
    """SIGALRM every 200 µs and SIGUSR1 from another thread while the main thread
    drives bots; the handlers call shutdown() (then, at the end, close()); a
    deadlock would hit the subprocess's deadline."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), env.get("PYTHONPATH", "")])
    r = subprocess.run(
        [sys.executable, str(HERE / "signal_scenario.py"), str(SECONDS)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    report = json.loads(r.stdout.strip().splitlines()[-1])
    assert report["failures"] == []
    assert report["signals"] > 50 and report["interrupted_calls"] > 0
    assert report["shutdowns_seen"] > 0 and report["reentrant_refused"] > 0
    assert report["closed_in_a_call"] is True
