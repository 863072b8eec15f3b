"""The asyncio driver (onair.aio) against the emulator: iteration and handlers, the
kit's actions, a refresh mid-stream, every end reason, drops, a frozen stream,
429s, stops, consent later, stores, a restart, threads, and shutdown —
cancellation, Ctrl-C, revocation — leaving no task and no socket behind."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

import onair
import onair.aio
import pytest
from conftest import KIT, ROOT, Emulator, open_connections

T = TypeVar("T")
HERE = Path(__file__).resolve().parent


def run(coro: Coroutine[Any, Any, T], timeout: float = 90) -> T:
    """Runs a test's coroutine with a deadline; afterwards no task of it may be left."""

    async def main() -> T:
        result = await asyncio.wait_for(coro, timeout)
        left = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        assert left == [], f"tasks left behind: {left}"
        return result

    return asyncio.run(main())


def config(emu: Emulator, **kw: Any) -> onair.Config:
    return onair.Config(emu.base_url, emu.client_id, emu.client_secret, **kw)


class Runner:
    """A driver iterated in a task; everything it handed out, in order."""

    def __init__(self, driver: onair.aio.Driver) -> None:
        self.driver = driver
        self.seen: list[Any] = []
        self.task = asyncio.ensure_future(self._go())

    async def _go(self) -> None:
        async with self.driver:
            async for action in self.driver:
                self.seen.append(action)

    async def until(self, predicate: Callable[[Any], bool], after: int = 0, timeout: float = 20) -> Any:
        """The first action from ``after`` on that matches."""
        deadline = time.monotonic() + timeout
        while True:
            for action in self.seen[after:]:
                if predicate(action):
                    return action
            if self.task.done():
                self.task.result()
                raise AssertionError(f"the driver ended; seen: {self.seen[after:]}")
            if time.monotonic() > deadline:
                raise AssertionError(f"not seen within {timeout} s; seen: {self.seen[after:][-20:]}")
            await asyncio.sleep(0.02)

    def of(self, kind: type[T], after: int = 0) -> list[T]:
        return [a for a in self.seen[after:] if isinstance(a, kind)]

    async def stop(self) -> None:
        self.driver.shutdown()
        await asyncio.wait_for(self.task, 30)


async def actl(emu: Emulator, path: str, body: Any = None) -> Any:
    return await asyncio.to_thread(emu.ctl, path, body)


async def streaming(emu: Emulator, count: int = 1, timeout: float = 20) -> None:
    """Until the emulator serves ``count`` open streams."""
    await asyncio.to_thread(emu.wait, "/state", lambda s: s["openStreams"] >= count, timeout)


async def emit(emu: Emulator, event: str, **data: Any) -> None:
    r = await actl(emu, "/emit", {"event": event, "data": data})
    assert r["delivered"] >= 1, r


def who(user_id: str, nickname: str | None) -> dict[str, Any]:
    return {"id": user_id, "nickname": nickname}


def test_iterating_events_and_the_kit(emulator: Emulator) -> None:
    tokens, state = onair.MemoryStore(), onair.MemoryStore()

    async def main() -> None:
        driver = onair.aio.Driver(
            config(emulator, kit=KIT), tokens=tokens, state=state,
            code=emulator.code(), redirect_uri=emulator.redirect_uri,
        )
        r = Runner(driver)
        await streaming(emulator)
        # The kit learns the broadcast's liveId from its own GET /v1/live,
        # which may be answered after the stream's first events (an arrival
        # then carries live_id None): wait for it.
        for _ in range(500):
            kit_now = driver.kit()
            if kit_now is not None and kit_now.live_id is not None:
                break
            await asyncio.sleep(0.02)
        await emit(emulator, "presence", user=who("u1", "Mina"))
        await emit(emulator, "chat", user=who("u1", "Mina"), message="!HI there  now")
        await emit(emulator, "like", user=who("u2", None), type="PAID", amount=10, extraAmount=5, combo=8)
        await emit(emulator, "donation", user=who("u1", "Mina"), amount=600, message="🎵")
        await emit(emulator, "chat", user=who("u2", None), message="!stop")
        arrival = await r.until(lambda a: isinstance(a, onair.Arrival))
        assert (arrival.kind, arrival.user, arrival.away_ms) == ("first", onair.User("u1", "Mina"), None)
        assert isinstance(arrival.event, onair.Presence) and arrival.live_id is not None
        command = await r.until(lambda a: isinstance(a, onair.Command))
        assert (command.name, command.args, command.rest, command.role) == ("hello", ("there", "now"), "there  now", "listener")
        assert isinstance(command.event, onair.Chat) and command.event.message == "!HI there  now"
        hearts = await r.until(lambda a: isinstance(a, onair.Milestone) and a.kind == "hearts")
        assert (hearts.reached, hearts.total, hearts.user) == (100, 120, None) and hearts.event.is_paid
        gave = await r.until(lambda a: isinstance(a, onair.Milestone) and a.kind == "donated")
        assert (gave.reached, gave.total, gave.user) == (500, 600, onair.User("u1", "Mina"))
        refused = await r.until(lambda a: isinstance(a, onair.CommandRefused))
        assert (refused.name, refused.needed, refused.role) == ("stop", "dj", "listener")
        # Each kit action comes after its raw event, and after the state it depends on.
        kinds = [type(a).__name__ for a in r.seen]
        assert kinds.index("Presence") < kinds.index("Arrival") and kinds.index("Chat") < kinds.index("Command")
        calls = driver.say("Hello, Mina! 🎧 " * 20)  # 320 UTF-16 units: two messages
        assert len(calls) == 2
        for call in calls:
            done = await r.until(lambda a, c=call: isinstance(a, onair.Done) and a.call_id == c)
            assert done.ok and done.result == onair.ChatSent()
        said = [m["message"] for m in (await actl(emulator, "/chat"))["messages"]]
        assert said[0].startswith("Hello, Mina!") and len(said) == 2
        kit = driver.kit()
        assert kit is not None and kit.live_id == arrival.live_id
        ledger = emulator.ledger_totals()[-1]
        assert kit.tally.to_dict() == {k: v for k, v in ledger.items() if k != "liveId"}
        assert kit.tally.donors()[0][0] == "u1"
        await r.stop()
        assert isinstance(r.seen[-1], onair.Stopped) and r.seen[-1].code == "shut_down"

    run(main())
    saved = tokens.load()
    assert saved is not None and json.loads(saved)["format"] == "onair.tokens"
    kit_state = state.load()
    assert kit_state is not None and json.loads(kit_state)["format"] == "onair.kit"
    assert not [r for r in emulator.requests() if r["path"] == "/v1/oauth/revoke"]  # no revoke unless asked


def test_refresh_mid_stream_every_end_reason_and_drops(emulator: Emulator) -> None:
    tokens = onair.MemoryStore()

    async def main() -> None:
        driver = onair.aio.Driver(
            config(emulator, kit={"tally": True}), tokens=tokens,
            code=emulator.code(), redirect_uri=emulator.redirect_uri,
        )
        r = Runner(driver)
        await streaming(emulator)
        first = json.loads(tokens.load() or "{}")["generation"]

        async def delivered(message: str) -> None:
            mark = len(r.seen)
            await emit(emulator, "chat", user=who("u1", "Mina"), message=message)
            await r.until(lambda a: isinstance(a, onair.Chat) and a.message == message, after=mark)

        await delivered("before")
        # TOKEN_EXPIRED: one refresh, the new pair saved, the stream back.
        mark = len(r.seen)
        await actl(emulator, "/streams/end", {"reason": "TOKEN_EXPIRED"})
        end = await r.until(lambda a: isinstance(a, onair.End), after=mark)
        assert end.reason == onair.EndReason.TOKEN_EXPIRED and not end.is_live_ended
        renewed = await r.until(lambda a: isinstance(a, onair.PersistTokens), after=mark)
        assert renewed.generation == first + 1 and json.loads(tokens.load() or "{}")["generation"] == first + 1
        await streaming(emulator)
        await delivered("after the refresh")
        # RECONNECT: at once.
        mark = len(r.seen)
        await actl(emulator, "/streams/end", {"reason": "RECONNECT"})
        assert (await r.until(lambda a: isinstance(a, onair.End), after=mark)).reason == "RECONNECT"
        await streaming(emulator)
        await delivered("after RECONNECT")
        # A drop (no end frame): a reconnect after a backoff.
        await actl(emulator, "/streams/drop", {})
        await asyncio.sleep(0.2)
        await streaming(emulator)
        await delivered("after the drop")
        # LIVE_ENDED: the broadcast's tally, then the next broadcast.
        mark = len(r.seen)
        await actl(emulator, "/live/end", {})
        ended = await r.until(lambda a: isinstance(a, onair.BroadcastEnded), after=mark)
        assert isinstance(ended.event, onair.End) and ended.event.is_live_ended
        await actl(emulator, "/live/start", {"title": "second"})
        await streaming(emulator, timeout=30)
        await delivered("the second broadcast")
        ledger = emulator.ledger_totals()
        assert ended.tally.to_dict() == {k: v for k, v in ledger[0].items() if k != "liveId"}
        assert ended.live_id == ledger[0]["liveId"]
        await r.stop()

    run(main())
    grants = [q.get("grant") for q in emulator.requests("/v1/oauth/token")]
    assert grants == ["authorization_code", "refresh_token"], grants


def test_a_frozen_stream_is_replaced_within_the_watchdog(emulator: Emulator) -> None:
    async def main() -> None:
        driver = onair.aio.Driver(
            config(emulator, watchdog_ms=1500), code=emulator.code(), redirect_uri=emulator.redirect_uri
        )
        r = Runner(driver)
        await streaming(emulator)
        opened = len([q for q in emulator.requests("/v1/live/events") if q["status"] == 200])
        await actl(emulator, "/streams/stall", {})
        stalled_at = time.monotonic()
        await asyncio.to_thread(
            emulator.wait, "/requests?path=/v1/live/events",
            lambda a: len([q for q in a["requests"] if q["status"] == 200]) > opened, 10,
        )
        assert time.monotonic() - stalled_at < 1.5 + 5
        await streaming(emulator)
        mark = len(r.seen)
        await emit(emulator, "chat", message="back")
        await r.until(lambda a: isinstance(a, onair.Chat) and a.message == "back", after=mark)
        await r.stop()

    run(main())


def test_429s_and_502s_are_the_bots_business(emulator: Emulator) -> None:
    async def main() -> None:
        driver = onair.aio.Driver(config(emulator), code=emulator.code(), redirect_uri=emulator.redirect_uri)
        r = Runner(driver)
        await streaming(emulator)
        await actl(emulator, "/fail", {"path": "/v1/live/chat", "status": 429, "detailCode": "OAPI_MNGR_0302", "times": 1})
        await actl(emulator, "/fail", {"path": "/v1/live/chat", "status": 429, "times": 1})  # the per-second quota
        await actl(emulator, "/fail", {"path": "/v1/live/fans", "status": 502, "times": 1})
        chat = driver.send_chat("through the limits")
        fans = driver.fetch_fans()
        done = await r.until(lambda a: isinstance(a, onair.Done) and a.call_id == chat)
        assert done.ok
        answer = await r.until(lambda a: isinstance(a, onair.Done) and a.call_id == fans)
        assert isinstance(answer.result, onair.Fans)
        assert r.of(onair.ProblemNotice)  # each one said, none an error
        statuses = [q["status"] for q in emulator.requests("/v1/live/chat")]
        assert statuses == [429, 429, 204], statuses
        # A daily block fails the call at once (it would wait for hours).
        await actl(emulator, "/quota", {"daily": {"perPermission": {"chat.send": 0}}})
        blocked = driver.send_chat("tomorrow")
        failed = await r.until(lambda a: isinstance(a, onair.Done) and a.call_id == blocked)
        assert isinstance(failed.result, onair.Failed) and failed.result.failure in ("problem", "quota_blocked")
        await r.stop()

    run(main())


def test_a_stop_ends_the_iteration_and_consent_can_come_later(emulator: Emulator) -> None:
    async def main() -> None:
        driver = onair.aio.Driver(config(emulator), wait_for_consent=True)  # no code: it asks, once
        r = Runner(driver)
        await r.until(lambda a: isinstance(a, onair.NeedsAuthorization))
        await asyncio.sleep(0.3)
        assert len(r.of(onair.NeedsAuthorization)) == 1
        code = emulator.code()
        # From another thread (a web handler receiving the redirect, say).
        await asyncio.to_thread(driver.authorize, code, emulator.redirect_uri)
        await streaming(emulator)
        await actl(emulator, "/state", {"botBlocked": True})
        await actl(emulator, "/streams/drop", {})
        stopped = await r.until(lambda a: isinstance(a, onair.Stopped), timeout=30)
        assert stopped.code == "join_forbidden" and not stopped.resumes_with_new_consent
        await asyncio.wait_for(r.task, 30)  # the iteration ended by itself, and released everything

    run(main())


def test_a_reauthorize_stop_ends_the_run_unless_waiting_is_asked_for(emulator: Emulator) -> None:
    """A reauthorize stop ends the iteration and the run by default. With
    wait_for_consent (or an on_needs_authorization handler) the driver waits for
    authorize(); shutdown() (Ctrl-C in onair.run), or aclose() from another task, ends
    it instead: the bot stops for good, and run() returns the reauthorize stop."""

    async def ends() -> None:
        driver = onair.aio.Driver(config(emulator), code="never-issued", redirect_uri=emulator.redirect_uri)
        r = Runner(driver)
        await asyncio.wait_for(r.task, 10)
        assert [s.code for s in r.of(onair.Stopped)] == ["reauthorize"]
        stop = await onair.aio.Driver(config(emulator)).run(signals=False)  # no code at all
        assert stop is not None and stop.code == "reauthorize" and stop.reason == "not authorized yet: DJ consent is needed"

    async def iterate() -> None:
        driver = onair.aio.Driver(
            config(emulator), code="never-issued", redirect_uri=emulator.redirect_uri, wait_for_consent=True
        )
        r = Runner(driver)
        stopped = await r.until(lambda a: isinstance(a, onair.Stopped))
        assert stopped.code == "reauthorize" and stopped.reason and "code exchange failed" in stopped.reason
        await asyncio.sleep(0.2)
        assert not r.task.done()  # it waits for a new code
        await asyncio.to_thread(driver.shutdown)
        await asyncio.wait_for(r.task, 10)
        assert [s.code for s in r.of(onair.Stopped)] == ["reauthorize", "shut_down"]

    async def close_from_another_task() -> None:
        driver = onair.aio.Driver(
            config(emulator), code="never-issued", redirect_uri=emulator.redirect_uri, wait_for_consent=True
        )
        r = Runner(driver)
        await r.until(lambda a: isinstance(a, onair.Stopped))
        await asyncio.wait_for(driver.aclose(), 10)
        await asyncio.wait_for(r.task, 10)

    async def handlers() -> None:
        driver = onair.aio.Driver(config(emulator), code="never-issued", redirect_uri=emulator.redirect_uri)
        asked: list[onair.NeedsAuthorization] = []

        @driver.on_needs_authorization  # waits for a code: this handler would get one
        def ask(n: onair.NeedsAuthorization) -> None:
            asked.append(n)
            asyncio.get_running_loop().call_later(0.2, driver.shutdown)

        stop = await driver.run(signals=False)
        assert stop is not None and stop.code == "reauthorize" and len(asked) == 1

    async def resumed_by_a_handler() -> None:
        driver = onair.aio.Driver(config(emulator), code="never-issued", redirect_uri=emulator.redirect_uri)

        @driver.on_needs_authorization
        def ask(_: onair.NeedsAuthorization) -> None:
            driver.authorize(emulator.code(), emulator.redirect_uri)

        @driver.on(onair.PersistTokens)
        def authorized(_: onair.PersistTokens) -> None:
            driver.shutdown()

        stop = await driver.run(signals=False)
        assert stop is not None and stop.code == "shut_down"  # authorized again: nobody needs to act

    run(ends())
    run(iterate())
    run(close_from_another_task())
    run(handlers())
    run(resumed_by_a_handler())


def test_handlers_and_threads(emulator: Emulator, caplog: pytest.LogCaptureFixture) -> None:
    driver = onair.aio.Driver(
        config(emulator, kit={"greetings": {}}), code=emulator.code(), redirect_uri=emulator.redirect_uri
    )
    seen: list[str] = []

    @driver.command("hello", "hi")
    def hello(c: onair.Command) -> str:
        return f"Hello, {c.user.nickname or 'friend'}!"

    @driver.on_arrival
    async def welcome(a: onair.Arrival) -> str:
        await asyncio.sleep(0)
        return f"Welcome, {a.user.nickname}!"

    @driver.on_donation
    def thanks(d: onair.Donation) -> None:
        seen.append(f"donation {d.amount}")

    @driver.on(onair.Chat, onair.Like)
    def chats(e: onair.Chat | onair.Like) -> None:
        seen.append(type(e).__name__)

    @driver.on_like
    def boom(like: onair.Like) -> None:
        raise ValueError("a bug in a handler")

    async def main() -> onair.Stopped | None:
        task = asyncio.ensure_future(driver.run(signals=False))
        await streaming(emulator)
        await emit(emulator, "presence", user=who("u7", "Jo"))
        await emit(emulator, "like", user=who("u7", "Jo"))  # its handler raises: logged, the bot goes on
        await emit(emulator, "chat", user=who("u7", "Jo"), message="!hi")
        await emit(emulator, "donation", user=who("u7", "Jo"), amount=300)

        def from_threads(k: int) -> None:
            for i in range(4):
                driver.say(f"thread {k} says {i}")

        threads = [threading.Thread(target=from_threads, args=(k,)) for k in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        await asyncio.to_thread(
            emulator.wait, "/chat", lambda c: len(c["messages"]) >= 14, 30
        )
        driver.shutdown()
        return await asyncio.wait_for(task, 30)

    stopped = run(main())
    assert stopped is not None and stopped.code == "shut_down"
    said = [m["message"] for m in emulator.ctl("/chat")["messages"]]
    assert "Welcome, Jo!" in said and "Hello, Jo!" in said
    assert sorted(m for m in said if m.startswith("thread")) == sorted(
        f"thread {k} says {i}" for k in range(3) for i in range(4)
    )
    assert "donation 300" in seen and "Chat" in seen and "Like" in seen
    assert "the handler boom failed on Like" in caplog.text and "a bug in a handler" in caplog.text


def test_cancellation_leaves_no_task_and_no_socket(emulator: Emulator, tmp_path: Path) -> None:
    tokens, state = onair.FileStore(tmp_path / "tokens.json"), onair.FileStore(tmp_path / "kit.json")

    async def main() -> None:
        driver = onair.aio.Driver(
            config(emulator, kit={"greetings": {}, "tally": True}), tokens=tokens, state=state,
            code=emulator.code(), redirect_uri=emulator.redirect_uri,
        )
        r = Runner(driver)
        await streaming(emulator)
        await emit(emulator, "presence", user=who("u1", "Mina"))
        await r.until(lambda a: isinstance(a, onair.Arrival))
        assert open_connections(emulator.port) >= 1
        r.task.cancel()  # what Ctrl-C does to asyncio.run's main task
        with pytest.raises(asyncio.CancelledError):
            await r.task
        assert open_connections(emulator.port) == 0
        await asyncio.to_thread(emulator.wait, "/state", lambda s: s["openStreams"] == 0, 10)

    run(main())  # asserts no task is left
    assert (tmp_path / "tokens.json").stat().st_mode & 0o777 == 0o600
    assert json.loads(state.load() or "{}")["format"] == "onair.kit"
    assert not [r for r in emulator.requests() if r["path"] == "/v1/oauth/revoke"]


def test_revoke_when_asked(emulator: Emulator, tmp_path: Path) -> None:
    tokens = onair.FileStore(tmp_path / "tokens.json")

    async def main() -> None:
        driver = onair.aio.Driver(config(emulator), tokens=tokens, code=emulator.code(), redirect_uri=emulator.redirect_uri)
        r = Runner(driver)
        await streaming(emulator)
        await r.until(lambda a: isinstance(a, onair.PersistTokens))
        assert tokens.load() is not None
        driver.shutdown(revoke=True)
        await asyncio.wait_for(r.task, 30)
        assert isinstance(r.seen[-1], onair.Stopped) and r.seen[-1].code == "shut_down"

    run(main())
    assert [q["path"] for q in emulator.requests("/v1/oauth/revoke")] == ["/v1/oauth/revoke"]
    assert tokens.load() is None  # revoked: the store cleared


def test_a_restart_greets_nobody_twice_and_keeps_the_totals(emulator: Emulator, tmp_path: Path) -> None:
    tokens, state = onair.FileStore(tmp_path / "t.json"), onair.FileStore(tmp_path / "s.json")
    kit = {"greetings": {}, "tally": True}

    async def main() -> None:
        first = Runner(onair.aio.Driver(
            config(emulator, kit=kit), tokens=tokens, state=state, code=emulator.code(),
            redirect_uri=emulator.redirect_uri,
        ))
        await streaming(emulator)
        await emit(emulator, "presence", user=who("u1", "Mina"))
        await emit(emulator, "like", user=who("u1", "Mina"), type="PAID", amount=10, combo=2)
        await first.until(lambda a: isinstance(a, onair.Like))
        await first.stop()
        second = Runner(onair.aio.Driver(config(emulator, kit=kit), tokens=tokens, state=state))
        await streaming(emulator)
        await emit(emulator, "presence", user=who("u1", "Mina"))
        await emit(emulator, "presence", user=who("u2", "Jo"))
        arrival = await second.until(lambda a: isinstance(a, onair.Arrival))
        assert arrival.user.id == "u2", arrival  # Mina was greeted before the restart
        assert second.driver.kit() is not None
        now = second.driver.kit()
        assert now is not None and now.tally.hearts == 20 and now.tally.attendance == 2
        assert not second.of(onair.NeedsAuthorization)
        await second.stop()

    run(main())
    assert [q.get("grant") for q in emulator.requests("/v1/oauth/token")] == ["authorization_code"]


def test_store_failures_are_said_without_the_secret(emulator: Emulator) -> None:
    def refuse(text: str) -> None:
        raise OSError("disk full")

    async def main() -> None:
        driver = onair.aio.Driver(
            config(emulator), tokens=onair.CallbackStore(lambda: None, refuse),
            code=emulator.code(), redirect_uri=emulator.redirect_uri,
        )
        async with driver:
            async for action in driver:
                if isinstance(action, onair.aio.StoreFailed):
                    assert action.what == "tokens" and "disk full" in action.error
                    tok = driver.bot.tokens_json() or ""
                    assert json.loads(tok)["access_token"] not in repr(action)
                    break

    run(main())


BOT_SCRIPT = """
import asyncio, json, os, sys
import onair, onair.aio
sys.path.insert(0, {here!r})
from conftest import open_connections

async def main():
    config = onair.Config(os.environ["BASE"], os.environ["ID"], os.environ["SECRET"], kit={{"greetings": {{}}}})
    bot = onair.aio.Driver(config, tokens=onair.FileStore(os.environ["TOKENS"]), state=onair.FileStore(os.environ["STATE"]),
                           code=os.environ["CODE"], redirect_uri=os.environ["URI"])

    @bot.on_arrival
    def hi(a):
        print("arrival", flush=True)

    stop = await bot.run()  # SIGINT: a clean shutdown
    left = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    print(json.dumps({{"stop": stop.code if stop else None, "tasks": len(left),
                      "sockets": open_connections(int(os.environ["PORT"]))}}), flush=True)

asyncio.run(main())
"""


def test_ctrl_c_stops_cleanly(emulator: Emulator, tmp_path: Path) -> None:
    env = dict(os.environ)
    env.update(
        BASE=emulator.base_url, ID=emulator.client_id, SECRET=emulator.client_secret, CODE=emulator.code(),
        URI=emulator.redirect_uri, TOKENS=str(tmp_path / "tokens.json"), STATE=str(tmp_path / "kit.json"),
        PORT=str(emulator.port),
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", BOT_SCRIPT.format(here=str(HERE))], env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        emulator.wait("/state", lambda s: s["openStreams"] >= 1)
        emulator.ctl("/emit", {"event": "presence", "data": {"user": who("u1", "Mina")}})
        assert proc.stdout is not None and proc.stdout.readline().strip() == "arrival"
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, out
    report = json.loads(out.strip().splitlines()[-1])
    assert report == {"stop": "shut_down", "tasks": 0, "sockets": 0}, report
    assert json.loads((tmp_path / "kit.json").read_text())["format"] == "onair.kit"
    assert (tmp_path / "tokens.json").stat().st_mode & 0o777 == 0o600
    emulator.wait("/state", lambda s: s["openStreams"] == 0, 10)
    assert not [r for r in emulator.requests() if r["path"] == "/v1/oauth/revoke"]


def test_the_bare_loop_example(tmp_path: Path) -> None:
    """examples/python/bare_loop.py through the quiet scenario: its tally is the ledger's."""
    emu = Emulator("--scenario", "quiet", "--speed", "10")
    try:
        env = dict(os.environ)
        env.update(
            ONAIR_BASE_URL=emu.base_url, ONAIR_CLIENT_ID=emu.client_id, ONAIR_CLIENT_SECRET=emu.client_secret,
            ONAIR_CODE=emu.code(), ONAIR_REDIRECT_URI=emu.redirect_uri, ONAIR_TALLY_OUT=str(tmp_path / "tally.json"),
        )
        proc = subprocess.Popen(
            [sys.executable, str(ROOT / "examples" / "python" / "bare_loop.py")], env=env,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )
        try:
            emu.wait("/scenario", lambda s: s["done"], 60)
            time.sleep(0.5)
            proc.send_signal(signal.SIGTERM)
            out, _ = proc.communicate(timeout=20)
        finally:
            if proc.poll() is None:
                proc.kill()
        assert proc.returncode == 0, out
        tally = json.loads((tmp_path / "tally.json").read_text())["broadcasts"]
        mine = [t for t in tally if t["people"]]
        ledger = [t for t in emu.ledger_totals() if t["people"]]
        assert mine == ledger
        said = [m["message"] for m in emu.ctl("/chat")["messages"]]
        assert any(m.startswith("Welcome, ") for m in said), said
    finally:
        emu.close()


def test_a_bad_saved_file_is_refused_at_the_start(tmp_path: Path) -> None:
    """A token file or kit state that does not load: the driver raises as it starts,
    and leaves nothing behind (no task, no client)."""
    cfg = onair.Config("http://127.0.0.1:9", "3f2504e0-4f89-11d3-9a0c-0305e82c3301", "s", kit={"tally": True})

    async def main() -> None:
        with pytest.raises(onair.InvalidConfig) as e:
            async with onair.aio.Driver(cfg, tokens=onair.MemoryStore("{")):
                pass
        assert e.value.kind == "invalid_tokens"
        newer = onair.MemoryStore('{"format":"onair.kit","version":99}')
        with pytest.raises(onair.OnairError) as e2:
            async for _ in onair.aio.Driver(cfg, state=newer):
                pass
        assert e2.value.kind == "kit_state_too_new"

    run(main())


def test_the_reference_bot_and_ctrl_c(tmp_path: Path) -> None:
    """examples/python/bot.py (onair.run) through the quiet scenario, stopped with SIGINT
    (Ctrl-C): exit 0, its tally the ledger's, its state and tokens saved, no revoke."""
    emu = Emulator("--scenario", "quiet", "--speed", "10")
    try:
        env = dict(os.environ)
        env.update(
            ONAIR_BASE_URL=emu.base_url, ONAIR_CLIENT_ID=emu.client_id, ONAIR_CLIENT_SECRET=emu.client_secret,
            ONAIR_CODE=emu.code(), ONAIR_REDIRECT_URI=emu.redirect_uri, ONAIR_TALLY_OUT=str(tmp_path / "tally.json"),
            ONAIR_TOKENS_FILE=str(tmp_path / "tokens.json"), ONAIR_STATE_FILE=str(tmp_path / "kit.json"),
            ONAIR_ENDS_OUT=str(tmp_path / "ends"),
        )
        proc = subprocess.Popen(
            [sys.executable, str(ROOT / "examples" / "python" / "bot.py")], env=env,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )
        try:
            emu.wait("/scenario", lambda s: s["done"], 60)
            time.sleep(0.5)
            proc.send_signal(signal.SIGINT)
            out, _ = proc.communicate(timeout=20)
        finally:
            if proc.poll() is None:
                proc.kill()
        assert proc.returncode == 0, out
        written = json.loads((tmp_path / "tally.json").read_text())
        mine = [t for t in written["broadcasts"] if t["people"]]
        assert mine == [t for t in emu.ledger_totals() if t["people"]]
        assert {a["kind"] for a in written["arrivals"]} == {"first"} and written["arrivals"]
        assert [json.loads(line) for line in (tmp_path / "ends").read_text().splitlines()] == [
            {"liveId": mine[0]["liveId"]}
        ]
        assert (tmp_path / "tokens.json").stat().st_mode & 0o777 == 0o600
        assert json.loads((tmp_path / "kit.json").read_text())["format"] == "onair.kit"
        said = [m["message"] for m in emu.ctl("/chat")["messages"]]
        assert any(m.startswith("Welcome, ") and m.endswith("! 🎧") for m in said), said
        assert any(m.startswith("Thank you, ") for m in said), said
        assert not emu.requests("/v1/oauth/revoke")
    finally:
        emu.close()
