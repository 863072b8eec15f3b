"""Replies in a busy room, through the asyncio driver against the emulator: the
kit's configured replies greet, thank and answer with the default texts; when the
chat limit (429 OAPI_MNGR_0302) holds the queue, replies of one kind (a handler's
returned text included) go out as one message; a reply not out within its
freshness is dropped and logged at WARNING; ``reply`` refuses bad input; the
status counts it all per kind."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

import onair
import onair.aio
import pytest
from conftest import CLIENT_ID, Emulator
from test_aio import Runner, actl, config, emit, run, streaming, who

# The reference bots' kit (every language, the same).
REFERENCE_KIT: dict[str, Any] = {
    "commands": [{"name": "hello"}, {"name": "top"}],
    "greetings": {"welcome_back_after_ms": 600000},
    "milestones": {"hearts_every": 100, "donations_every": 1000},
    "tally": True,
    "replies": {"commands": {"hello": "Hello, {nickname}!", "top": "Top donors: {top}"}},
}


def said(emu: Emulator) -> list[str]:
    """The chat messages the service took, in order."""
    return [m["message"] for m in emu.ctl("/chat")["messages"]]


async def until_said(emu: Emulator, count: int, timeout: float = 30) -> list[str]:
    answer = await asyncio.to_thread(emu.wait, "/chat", lambda c: len(c["messages"]) >= count, timeout)
    return [m["message"] for m in answer["messages"]]


async def hold_chat(emu: Emulator, times: int) -> None:
    """The broadcast's chat limit answers the next ``times`` messages 429 OAPI_MNGR_0302."""
    await actl(emu, "/fail", {"path": "/v1/live/chat", "status": 429, "detailCode": "OAPI_MNGR_0302", "times": times})


async def live_id_known(driver: onair.aio.Driver) -> None:
    """Until the kit knows the broadcast (its own GET /v1/live)."""
    for _ in range(500):
        kit = driver.kit()
        if kit is not None and kit.live_id is not None:
            return
        await asyncio.sleep(0.02)
    raise AssertionError("the kit never learned the broadcast's liveId")


async def counted(
    driver: onair.aio.Driver, ok: Callable[[dict[onair.ReplyKind, onair.ReplyCounters]], bool], timeout: float = 10
) -> dict[onair.ReplyKind, onair.ReplyCounters]:
    """The reply counters once ``ok`` holds (the service's answer reaches the bot
    after the emulator recorded the message)."""
    deadline = time.monotonic() + timeout
    while True:
        counters = driver.reply_counters()
        if ok(counters) or time.monotonic() > deadline:
            return counters
        await asyncio.sleep(0.02)


def test_configured_replies_greet_thank_and_answer_with_the_default_texts(emulator: Emulator) -> None:
    async def main() -> dict[onair.ReplyKind, onair.ReplyCounters]:
        driver = onair.aio.Driver(
            config(emulator, kit=REFERENCE_KIT), code=emulator.code(), redirect_uri=emulator.redirect_uri
        )
        r = Runner(driver)  # no handler, no say: the kit replies by itself
        await streaming(emulator)
        await live_id_known(driver)
        await emit(emulator, "presence", user=who("u1", "Ana"))
        await until_said(emulator, 1)
        await emit(emulator, "presence", user=who("u2", None))
        await until_said(emulator, 2)
        await emit(emulator, "donation", user=who("u1", "Ana"), amount=300, message="🎵")
        await until_said(emulator, 3)
        await emit(emulator, "chat", user=who("u2", None), message="!hello")
        await until_said(emulator, 4)
        await emit(emulator, "chat", user=who("u2", None), message="!top")
        await until_said(emulator, 5)
        counters = await counted(driver, lambda c: c["command"].messages >= 2)
        await r.stop()
        return counters

    counters = run(main())
    assert said(emulator) == [
        "Welcome, Ana! 🎧",
        "Welcome, friend! 🎧",
        "Thank you, Ana!",
        "Hello, friend!",
        "Top donors: 1. Ana 300",
    ]
    assert counters["welcome"] == onair.ReplyCounters(messages=2, people=2)
    assert counters["thanks"] == onair.ReplyCounters(messages=1, people=1)
    assert counters["command"] == onair.ReplyCounters(messages=2, people=2)
    assert counters["welcome_back"] == counters["milestone"] == onair.ReplyCounters()


def test_a_stale_reply_is_dropped_and_logged_at_warning(emulator: Emulator, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="onair")
    kit = {"greetings": {}, "replies": {"fresh_ms": {"welcome": 300}}}

    async def main() -> tuple[list[onair.RepliesDropped], dict[onair.ReplyKind, onair.ReplyCounters]]:
        driver = onair.aio.Driver(config(emulator, kit=kit), code=emulator.code(), redirect_uri=emulator.redirect_uri)
        r = Runner(driver)
        await streaming(emulator)
        await live_id_known(driver)
        # The chat limit holds every message for longer than a welcome stays fresh.
        await hold_chat(emulator, 100)
        for n, name in enumerate(["Ana", "민지", "Jörg"]):
            await emit(emulator, "presence", user=who(f"u{n}", name))
        await r.until(lambda _: sum(d.people for d in r.of(onair.RepliesDropped)) >= 3, timeout=30)
        counters = driver.reply_counters()
        await r.stop()
        return r.of(onair.RepliesDropped), counters

    dropped, counters = run(main())
    # The first welcome (sent, held back) and the two waiting behind it: told per drop.
    assert [(d.reply_kind, d.reason) for d in dropped] == [("welcome", "stale")] * len(dropped)
    assert sum(d.people for d in dropped) == 3
    logged = [rec.getMessage() for rec in caplog.records if rec.name == "onair" and rec.levelno == logging.WARNING]
    for d in dropped:
        count = f"{d.people} welcome repl{'y' if d.people == 1 else 'ies'}"
        assert f"dropped {count}: not sent within their freshness (the chat limit held them back)" in logged
    assert counters["welcome"] == onair.ReplyCounters(dropped=3, dropped_stale=3)
    assert said(emulator) == []  # never sent late


def test_a_handlers_text_joins_the_merge_when_the_limit_holds_the_queue(emulator: Emulator) -> None:
    # No configured replies: the handler's texts are the welcomes (the default text for many).
    driver = onair.aio.Driver(
        config(emulator, kit={"greetings": {}}), code=emulator.code(), redirect_uri=emulator.redirect_uri
    )

    @driver.on_arrival
    def welcome(a: onair.Arrival) -> str:
        return f"Hi {a.user.nickname}, welcome to the show!"

    async def main() -> dict[onair.ReplyKind, onair.ReplyCounters]:
        task = asyncio.ensure_future(driver.run(signals=False))
        await streaming(emulator)
        await live_id_known(driver)
        await emit(emulator, "presence", user=who("u0", "Zed"))
        await until_said(emulator, 1)  # alone: as the handler wrote it
        await hold_chat(emulator, 1)
        for n, name in enumerate(["Ana", "민지", "Jörg"], 1):
            await emit(emulator, "presence", user=who(f"u{n}", name))
        await until_said(emulator, 2)
        counters = await counted(driver, lambda c: c["welcome"].people >= 4)
        driver.shutdown()
        await asyncio.wait_for(task, 30)
        return counters

    counters = run(main())
    assert said(emulator) == ["Hi Zed, welcome to the show!", "Welcome, Ana, 민지 and Jörg! 🎧"]
    assert counters["welcome"] == onair.ReplyCounters(messages=2, people=4, merged=3)


def test_which_reply_a_handlers_text_is(emulator: Emulator) -> None:
    """A command's text is a command answer, a donation's a thanks naming the donor, a
    chat handler's is said (no reply); a text over one message is said, split."""
    driver = onair.aio.Driver(config(emulator), code=emulator.code(), redirect_uri=emulator.redirect_uri)
    long_thanks = "Thank you so much, Bo! " + "💜" * 120

    @driver.command("hello")
    def hello(c: onair.Command) -> str:
        return f"Hello, {c.user.nickname}!"

    @driver.on_donation
    def thanks(d: onair.Donation) -> str:
        return f"Thank you, {d.user.nickname}!" if d.amount < 1000 else long_thanks

    @driver.on_chat
    def echo(c: onair.Chat) -> str | None:
        return "Nice one!" if c.message == "nice" else None

    async def main() -> dict[onair.ReplyKind, onair.ReplyCounters]:
        task = asyncio.ensure_future(driver.run(signals=False))
        await streaming(emulator)
        await emit(emulator, "chat", user=who("u1", "Ana"), message="!hello")
        await until_said(emulator, 1)
        await emit(emulator, "donation", user=who("u2", "Bo"), amount=300)
        await until_said(emulator, 2)
        await emit(emulator, "chat", user=who("u1", "Ana"), message="nice")
        await until_said(emulator, 3)
        await emit(emulator, "donation", user=who("u2", "Bo"), amount=5000)
        await until_said(emulator, 6)
        counters = await counted(driver, lambda c: c["thanks"].messages >= 1 and c["command"].messages >= 1)
        driver.shutdown()
        await asyncio.wait_for(task, 30)
        return counters

    counters = run(main())
    got = said(emulator)
    assert got[:3] == ["Hello, Ana!", "Thank you, Bo!", "Nice one!"]
    assert got[3:] == onair.split_chat(long_thanks)  # three messages
    assert counters["command"] == onair.ReplyCounters(messages=1, people=1)
    assert counters["thanks"] == onair.ReplyCounters(messages=1, people=1)  # the long one was said
    assert sum(c.messages for c in counters.values()) == 2  # "Nice one!" is no reply


def test_a_handlers_text_is_the_reply_the_core_names_and_merges_with_the_kits(emulator: Emulator) -> None:
    """The core names the reply an action's person gets (``reply_kind``): a handler's
    text for an arrival, a donation or a command is that reply, so it merges with the
    kit's configured replies of its kind waiting with it (one message names both
    people); a heart's has no reply kind and is said as written."""
    kit = {"greetings": {}, "commands": [{"name": "hello"}], "replies": {"commands": {"hello": "Hello, {nickname}!"}}}
    driver = onair.aio.Driver(config(emulator, kit=kit), code=emulator.code(), redirect_uri=emulator.redirect_uri)
    kinds: list[tuple[str, str | None]] = []

    def note(action: Any) -> None:
        kinds.append((f"{type(action).__name__} {action.user.nickname}", action.reply_kind))

    @driver.on_arrival
    def welcome(a: onair.Arrival) -> str | None:
        note(a)
        return "Hi Bo, lovely to see you!" if a.user.nickname == "Bo" else None  # Ana: the kit's alone

    @driver.on_donation
    def thanks(d: onair.Donation) -> str | None:
        note(d)
        return "Bo, you star!" if d.user.nickname == "Bo" else None

    @driver.command("top")
    def top(c: onair.Command) -> str:
        note(c)
        return f"Top donors, asked by {c.user.nickname}: Bo."

    @driver.on_like
    def hearts(h: onair.Like) -> str:
        note(h)
        return "Thanks for the hearts!"

    async def main() -> dict[onair.ReplyKind, onair.ReplyCounters]:
        task = asyncio.ensure_future(driver.run(signals=False))
        await streaming(emulator)
        await live_id_known(driver)
        # Each pair: the first message is held back by the chat limit, the second
        # person's replies join it while it waits.
        await hold_chat(emulator, 1)
        await emit(emulator, "presence", user=who("u1", "Ana"))
        await emit(emulator, "presence", user=who("u2", "Bo"))
        await until_said(emulator, 1)
        await hold_chat(emulator, 1)
        await emit(emulator, "donation", user=who("u1", "Ana"), amount=300)
        await emit(emulator, "donation", user=who("u2", "Bo"), amount=500)
        await until_said(emulator, 2)
        await emit(emulator, "chat", user=who("u1", "Ana"), message="!hello")
        await until_said(emulator, 3)
        await emit(emulator, "chat", user=who("u2", "Bo"), message="!top")
        await until_said(emulator, 4)
        await emit(emulator, "like", user=who("u1", "Ana"))
        await until_said(emulator, 5)
        counters = await counted(driver, lambda c: c["command"].messages >= 2)
        driver.shutdown()
        await asyncio.wait_for(task, 30)
        return counters

    counters = run(main())
    assert said(emulator) == [
        "Welcome, Ana and Bo! 🎧",  # the kit's for Ana, the handler's (and the kit's) for Bo
        "Thank you, Ana and Bo!",
        "Hello, Ana!",  # the kit's configured answer
        "Top donors, asked by Bo: Bo.",  # the handler's, a command answer (never merged)
        "Thanks for the hearts!",  # no reply kind: said
    ]
    assert kinds == [
        ("Arrival Ana", "welcome"),
        ("Arrival Bo", "welcome"),
        ("Donation Ana", "thanks"),
        ("Donation Bo", "thanks"),
        ("Command Bo", "command"),
        ("Like Ana", None),
    ]
    # Bo's two welcomes (the kit's, the handler's) and Ana's went out as one message.
    assert counters["welcome"] == onair.ReplyCounters(messages=1, people=3, merged=3)
    assert counters["thanks"] == onair.ReplyCounters(messages=1, people=3, merged=3)
    assert counters["command"] == onair.ReplyCounters(messages=2, people=2)
    assert sum(c.messages for c in counters.values()) == 4  # the hearts' text is no reply


def test_reply_refuses_bad_input_and_queues_nothing() -> None:
    bot = onair.Bot(onair.Config("http://127.0.0.1:9", CLIENT_ID, "secret"))  # nothing is sent
    ana = onair.User("u1", "Ana")
    with pytest.raises(ValueError, match="unknown reply kind 'greeting': use one of welcome, welcome_back"):
        bot.reply("greeting", ana, "Hi Ana!")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="user must be an onair.User"):
        bot.reply("welcome", {"id": "u1"}, "Hi Ana!")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="user_id is empty"):
        bot.reply("welcome", onair.User("", "Ana"), "Hi Ana!")
    with pytest.raises(onair.ChatRejected) as blank:
        bot.reply("thanks", ana, "   ")
    assert blank.value.kind == "chat_empty"
    with pytest.raises(onair.ChatRejected) as long:
        bot.reply("thanks", ana, "x" * 201)
    assert long.value.kind == "chat_too_long"
    bot.reply("welcome", onair.User("u2", None), "Hi friend!")  # a missing nickname is fine
    # Only that one was queued: the stop drops it, and says so.
    bot.shutdown()
    seen = []
    while not isinstance(action := bot.poll(), onair.Stopped):
        seen.append(action)
    dropped = [a for a in seen if isinstance(a, onair.RepliesDropped)]
    assert [(d.reply_kind, d.people, d.reason) for d in dropped] == [("welcome", 1, "stopped")]
    counters = bot.reply_counters()
    assert list(counters) == ["welcome", "welcome_back", "thanks", "milestone", "command"]
    assert counters["welcome"] == onair.ReplyCounters(dropped=1, dropped_stopped=1)
    assert all(c == onair.ReplyCounters() for k, c in counters.items() if k != "welcome")
    bot.close()


def test_a_room_cooldown_answers_a_crowd_once(emulator: Emulator) -> None:
    driver = onair.aio.Driver(config(emulator), code=emulator.code(), redirect_uri=emulator.redirect_uri)

    @driver.command("top", room_cooldown_ms=60000)
    def top(c: onair.Command) -> str:
        return f"Top donors, asked by {c.user.nickname}: nobody yet."

    async def main() -> dict[onair.ReplyKind, onair.ReplyCounters]:
        task = asyncio.ensure_future(driver.run(signals=False))
        await streaming(emulator)
        for n in range(8):  # eight people type !top at once
            await emit(emulator, "chat", user=who(f"u{n}", f"P{n}"), message="!top")
        await until_said(emulator, 1)
        await asyncio.sleep(0.5)  # time for a second answer, were there one
        counters = await counted(driver, lambda c: c["command"].messages >= 1)
        driver.shutdown()
        await asyncio.wait_for(task, 30)
        return counters

    counters = run(main())
    assert said(emulator) == ["Top donors, asked by P0: nobody yet."]
    assert counters["command"] == onair.ReplyCounters(messages=1, people=1)
