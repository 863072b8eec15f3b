"""The bare Bot through the package: the C tests' loop, from Python."""

from __future__ import annotations

from typing import Any, TypeVar

import onair
import pytest
from conftest import BOT_STREAM, CLIENT_ID, KIT, TOKEN_BODY

JSON = [("Content-Type", "application/json")]
A = TypeVar("A")


def new_bot(seed: int = 7, tokens: str | None = None, kit: Any = None, **kw: Any) -> onair.Bot:
    return onair.Bot(onair.Config("http://127.0.0.1:9", CLIENT_ID, "secret", kit=kit, **kw), tokens, seed)


def poll_until(bot: onair.Bot, now: list[int], kind: type[A]) -> A:
    for _ in range(80):
        a = bot.poll(now[0])
        if isinstance(a, kind):
            return a
        if isinstance(a, onair.Wait):
            assert a.until_ms is not None
            now[0] = a.until_ms
    raise AssertionError(f"no {kind.__name__}")


BROADCAST = (
    b'{"liveId":7,"title":"T","startedAt":"s","closeAirTime":"c","listenerCount":3,'
    b'"totalListenerCount":9,"welcomeMessage":"","isChatFrozen":false,"categories":["m"],"tags":[]}'
)


def streaming(bot: onair.Bot, now: list[int]) -> int:
    """Authorizes with a code, answers the exchange, opens the stream (and, with a kit,
    answers the broadcast it asks for): the stream's id."""
    assert isinstance(bot.poll(now[0]), onair.NeedsAuthorization)
    bot.authorize("consent-code", "https://bot.example/cb")
    send = poll_until(bot, now, onair.Send)
    bot.on_response(send.request_id, 200, JSON, TOKEN_BODY, now[0])
    op = poll_until(bot, now, onair.OpenStream)
    bot.on_stream_open(op.request_id, 200, [], now[0])
    if bot.kit() is not None:
        live = poll_until(bot, now, onair.Send)
        assert live.request.endpoint == "live"
        bot.on_response(live.request_id, 200, JSON, BROADCAST, now[0])
    return op.request_id


def test_config_errors() -> None:
    with pytest.raises(onair.InvalidConfig) as e:
        onair.Config("ftp://x", CLIENT_ID, "s")
    assert e.value.kind == "invalid_base_url" and "absolute http(s) URL" in str(e.value)
    with pytest.raises(onair.InvalidConfig) as e:
        onair.Config("http://127.0.0.1:9", "not-a-uuid", "s")
    assert e.value.kind == "invalid_client_id" and "client_id must be a UUID" in str(e.value)
    with pytest.raises(onair.InvalidConfig) as e:
        onair.Config("http://127.0.0.1:9", CLIENT_ID, "")
    assert e.value.kind == "invalid_client_secret"
    with pytest.raises(onair.OnairError) as e2:
        onair.Config("http://127.0.0.1:9", CLIENT_ID, "s", request_timeout_ms=0)
    assert e2.value.kind == "invalid_argument"
    config = onair.Config("http://127.0.0.1:9", CLIENT_ID, "top-secret-value")
    assert "top-secret-value" not in repr(config)
    with pytest.raises(onair.InvalidConfig) as e:
        onair.Bot(config, "{", seed=1)
    assert e.value.kind == "invalid_tokens"


def test_bot_errors() -> None:
    with new_bot(max_queued_calls=1) as bot:
        assert bot.last_error() == ""
        assert bot.tokens_json() is None
        with pytest.raises(onair.MisuseError) as e:
            bot.on_response(999, 200, None, b"")
        assert e.value.kind == "unknown_request" and "never issued" in str(e.value)
        for call in (
            lambda: bot.on_transport_error(999),
            lambda: bot.on_stream_open(999, 200, []),
            lambda: bot.on_stream_bytes(999, b"x"),
            lambda: bot.on_stream_closed(999),
        ):
            with pytest.raises(onair.MisuseError):
                call()
        with pytest.raises(onair.ChatRejected) as c:
            bot.send_chat("  \n")
        assert c.value.kind == "chat_empty"
        with pytest.raises(onair.ChatRejected) as c:
            bot.send_chat("a" * 201)
        assert c.value.kind == "chat_too_long" and "split" in c.value.advice
        assert bot.fetch_fans() == 1
        # A full queue is the call's Done, never a silent drop.
        assert bot.list_listeners() == 2
        assert bot.pending_calls == 1
        actions = [bot.poll(0), bot.poll(0)]
        assert onair.Done(2, onair.Failed("queue_full", message="the call queue is full (1 calls waiting)")) in actions
        assert onair.CallHeld(1) in actions


def test_bot_loop() -> None:
    now = [1000]
    bot = new_bot()
    assert isinstance(bot.poll(now[0]), onair.NeedsAuthorization)
    assert bot.action_json() == {"type": "needsAuthorization"}
    bot.authorize("consent-code", "https://bot.example/cb")
    send = bot.poll(now[0])
    match send:
        case onair.Send(token_id, request):
            pass
        case _:
            raise AssertionError(send)
    assert request.endpoint == "token" and request.method == "POST" and "/v1/oauth/token" in request.url
    assert b"grant_type=authorization_code" in request.body and send.timeout_ms == 30000
    assert "consent-code" not in repr(send) and "Authorization" in repr(send)
    wait = bot.poll(now[0])
    assert wait == onair.Wait(now[0] + 30000)
    with pytest.raises(onair.MisuseError) as e:
        bot.on_stream_bytes(token_id, b"x")
    assert e.value.kind == "not_a_stream"
    bot.on_response(token_id, 200, JSON, TOKEN_BODY, now[0])
    persist = bot.poll(now[0])
    assert isinstance(persist, onair.PersistTokens) and "RT-xyz" in persist.tokens and persist.generation == 1
    assert "RT-xyz" not in repr(persist) and "AT-xyz" not in repr(persist)
    saved = persist.tokens

    op = poll_until(bot, now, onair.OpenStream)
    stream = op.request_id
    assert op.request.endpoint == "events" and op.request.method == "GET"
    assert ("Authorization", "Bearer AT-xyz") in op.request.headers
    assert "AT-xyz" not in repr(op)
    with pytest.raises(onair.MisuseError) as e:
        bot.on_stream_bytes(stream, b"x")
    assert e.value.kind == "stream_not_started"
    bot.on_stream_open(stream, 200, [], now[0])
    bot.on_stream_bytes(stream, BOT_STREAM, now[0])
    seen: list[Any] = []
    for _ in range(20):
        a = bot.poll(now[0])
        if isinstance(a, onair.Wait):
            break
        seen.append(a)
    assert [type(a).__name__ for a in seen] == [
        "Presence", "Chat", "Presence", "Donation", "Chat", "FrameSkipped"
    ], seen
    assert seen[1] == onair.Chat(onair.User("u-1", "sky"), False, "!Hello  there", "t")
    skipped = seen[-1]
    assert isinstance(skipped, onair.FrameSkipped) and skipped.error.code == "invalid_json"

    call = bot.send_chat("Hello, sky! 😀")
    s = poll_until(bot, now, onair.Send)
    assert s.request.endpoint == "chat" and "Hello, sky!".encode() in s.request.body
    bot.on_response(s.request_id, 204, None, b"", now[0])
    d = poll_until(bot, now, onair.Done)
    assert d == onair.Done(call, onair.ChatSent()) and d.ok

    call = bot.fetch_fans()
    s = poll_until(bot, now, onair.Send)
    bot.on_response(s.request_id, 403, JSON, b'{"status":403,"message":"no permission"}', now[0])
    d = poll_until(bot, now, onair.Done)
    assert d.call_id == call and not d.ok
    match d.result:
        case onair.Failed("problem", onair.Problem(kind="permission_missing", advice=advice)):
            assert advice == "reconsent"
        case _:
            raise AssertionError(d)

    call = bot.fetch_broadcast()
    s = poll_until(bot, now, onair.Send)
    bot.on_response(s.request_id, 200, JSON, BROADCAST, now[0])
    d = poll_until(bot, now, onair.Done)
    assert isinstance(d.result, onair.Broadcast) and d.result.live_id == 7 and d.result.categories == ("m",)

    tokens = bot.tokens_json()
    assert tokens and "RT-xyz" in tokens
    with new_bot(9, saved) as resumed:
        check = resumed.poll(now[0])  # the app's credentials, checked first
        assert isinstance(check, onair.Send) and check.request.endpoint == "revoke"
        assert check.request.body == b"token=onair-credentials-check"
        assert isinstance(resumed.poll(now[0]), onair.OpenStream)
    with new_bot(9, saved, check_credentials=False) as unchecked:
        assert isinstance(unchecked.poll(now[0]), onair.OpenStream)

    bot.schedule(now[0] + 10, "greet-all")
    bot.every(60000, "tick", now[0] + 60000)
    bot.set_timer("online", now[0] + 5, 0, True)
    with pytest.raises(onair.OnairError) as bt:
        bot.schedule(now[0], "")
    assert bt.value.kind == "bad_tag"
    assert poll_until(bot, now, onair.Timer) == onair.Timer("online")
    assert poll_until(bot, now, onair.Timer) == onair.Timer("greet-all")
    assert bot.action_json() == {"type": "timer", "tag": "greet-all"}
    assert bot.cancel_timer("tick") and not bot.cancel_timer("tick")
    status = bot.status(now[0])
    assert "connection" in status and "AT-xyz" not in str(status)

    bot.request_reconnect(now[0])
    bot.shutdown(revoke=False)
    st2 = poll_until(bot, now, onair.Stopped)
    match st2:
        case onair.Stopped("shut_down", message):
            assert message and not st2.resumes_with_new_consent
        case _:
            raise AssertionError(st2)
    late = bot.send_chat("late")
    refused = bot.poll(now[0])
    assert isinstance(refused, onair.Done) and refused.call_id == late
    assert isinstance(refused.result, onair.Failed) and refused.result.failure == "stopped"
    assert refused.result.stop is not None and refused.result.stop.code == "shut_down"
    bot.on_stream_closed(stream, now[0])
    bot.close()
    bot.close()
    assert bot.closed
    with pytest.raises(ValueError):
        bot.poll()


def test_the_kit_through_the_bare_bot() -> None:
    now = [1000]
    bot = new_bot(kit=KIT)
    stream = streaming(bot, now)
    bot.on_stream_bytes(stream, BOT_STREAM, now[0])
    seen: list[Any] = []
    for _ in range(40):
        a = bot.poll(now[0])
        if isinstance(a, onair.Wait):
            break
        seen.append(a)
    kinds = [type(a).__name__ for a in seen]
    assert "Arrival" in kinds and "Command" in kinds and "CommandRefused" in kinds and "Milestone" in kinds
    command = next(a for a in seen if isinstance(a, onair.Command))
    assert command.name == "hello" and command.args == ("there",) and command.user == onair.User("u-1", "sky")
    milestone = next(a for a in seen if isinstance(a, onair.Milestone))
    assert (milestone.kind, milestone.reached, milestone.total) == ("donated", 500, 700)
    assert milestone.user == onair.User("u-1", "sky") and isinstance(milestone.event, onair.Donation)
    kit = bot.kit()
    assert kit is not None and kit.live_id == 7 and kit.tally.donated == 700 and kit.tally.attendance == 1
    assert kit.tally.people["u-1"].joins == 2 and kit.tally.people["u-1"].chats == 2
    # say(): split at grapheme clusters, every part queued.
    calls = bot.say("🎧" * 150)
    assert len(calls) == 2 and bot.say("   ") == []
    # The stopping bot hands out its last state; a restart with it greets nobody twice.
    bot.shutdown()
    last: list[Any] = []
    for _ in range(40):
        a = bot.poll(now[0])
        last.append(a)
        if isinstance(a, onair.Stopped):
            break
    state = [a for a in [*seen, *last] if isinstance(a, onair.PersistState)][-1].state
    again = onair.Bot(onair.Config("http://127.0.0.1:9", CLIENT_ID, "secret", kit=KIT), bot.tokens_json(), 3,
                      kit_state=state)
    restarted = again.kit()
    assert restarted is not None and restarted.tally == kit.tally
    bot.close()
    again.close()
    with new_bot() as plain:
        assert plain.kit() is None  # no kit configured


def test_on_not_sent_keeps_the_code_and_says_the_service_is_unreachable() -> None:
    bot = new_bot()
    now = [1_000]
    assert isinstance(bot.poll(now[0]), onair.NeedsAuthorization)
    bot.authorize("fresh-code", "https://bot.example/cb")
    send = poll_until(bot, now, onair.Send)
    bot.on_not_sent(send.request_id, now[0])
    notice = bot.poll(now[0])
    assert isinstance(notice, onair.Unreachable), notice
    assert (notice.endpoint, notice.failure, notice.failures, notice.since_ms) == ("token", "not_sent", 1, 1_000)
    assert notice.level == "warn"
    assert notice.message == "the service cannot be reached (token: connection failed, not sent); retrying"
    again = poll_until(bot, now, onair.Send)  # the same code, after a backoff
    assert again.request_id != send.request_id
    assert b"code=fresh-code" in again.request.body
    with pytest.raises(onair.MisuseError):
        bot.on_not_sent(999, now[0])
    # Answered: the pair is in, and the service is reachable again (an info notice).
    bot.on_response(again.request_id, 200, JSON, TOKEN_BODY, now[0])
    back = poll_until(bot, now, onair.Reachable)
    assert back.level == "info" and back.failures == 1 and "reachable again" in back.message


def test_a_daily_quota_block_is_told_once_and_the_calls_given_up_are_counted() -> None:
    bot = new_bot(events=False)
    now = [1_000]
    assert isinstance(bot.poll(now[0]), onair.NeedsAuthorization)
    bot.authorize("consent-code", "https://bot.example/cb")
    send = poll_until(bot, now, onair.Send)
    bot.on_response(send.request_id, 200, JSON, TOKEN_BODY, now[0])
    bot.fetch_fans()
    fans = poll_until(bot, now, onair.Send)
    assert fans.request.endpoint == "fans"
    daily = [("Retry-After", "3600"), ("x-ratelimit-daily-scope", "fans.read")]
    bot.on_response(fans.request_id, 429, daily, b"", now[0])
    seen: list[onair.Notice] = []
    while not isinstance(a := bot.poll(now[0]), onair.Wait):
        if isinstance(a, onair.Notice):
            seen.append(a)
    reached = [n for n in seen if isinstance(n, onair.DailyQuotaReached)]
    assert reached == [onair.DailyQuotaReached("fans.read", now[0] + 3_600_000)]
    assert reached[0].level == "warn" and "fans.read" in reached[0].message
    assert onair.GaveUp("fans", "quota_blocked", 1) in seen
    bot.fetch_fans()  # held back at once, no second quota notice
    while not isinstance(a := bot.poll(now[0] + 1), onair.Wait):
        assert not isinstance(a, onair.DailyQuotaReached)
    assert bot.status(now[0] + 1)["counters"]["gaveUpQuotaBlocked"] == 2


def test_the_consent_stop_of_a_bot_without_tokens() -> None:
    """What a driver with no code to give ends its run with: the core's stop, not a copy."""
    bot = new_bot()
    stop = bot.consent_stop()
    assert stop is not None and stop.code == "reauthorize" and stop.resumes_with_new_consent
    assert stop.reason == "not authorized yet: DJ consent is needed"
    bot.shutdown()
    while not isinstance(bot.poll(), onair.Stopped):
        pass
    assert bot.consent_stop() is None  # a shutdown needs no consent


def calling_bot(now: list[int]) -> onair.Bot:
    """A bot without the stream, its token exchange answered: it only calls."""
    bot = new_bot(events=False)
    assert isinstance(bot.poll(now[0]), onair.NeedsAuthorization)
    bot.authorize("consent-code", "https://bot.example/cb")
    send = poll_until(bot, now, onair.Send)
    bot.on_response(send.request_id, 200, JSON, TOKEN_BODY, now[0])
    return bot


def answer(bot: onair.Bot, now: list[int], endpoint: str, status: int, headers: Any, body: bytes) -> onair.Done:
    send = poll_until(bot, now, onair.Send)
    assert send.request.endpoint == endpoint
    bot.on_response(send.request_id, status, headers, body, now[0])
    return poll_until(bot, now, onair.Done)


def test_two_bots_share_the_apps_daily_quota() -> None:
    """Two bots of one app in one process: each one's view merged into the app's (the
    core's merge, as onair host keeps it), and given back, it holds the calls it should."""
    t = 1_700_000_000_000
    reset = "1700003600"  # an hour after t, in seconds
    now_a, now_b = [t], [t]
    a, b = calling_bot(now_a), calling_bot(now_b)
    assert a.daily_quota(now_a[0]) == onair.DailyQuota()
    a.fetch_broadcast()
    day_a = [*JSON, ("x-ratelimit-daily-remaining", "40"), ("x-ratelimit-daily-reset", reset)]
    assert answer(a, now_a, "live", 200, day_a, BROADCAST).ok
    a.fetch_fans()
    fans_out = [("Retry-After", "3600"), ("x-ratelimit-daily-scope", "fans.read")]
    assert not answer(a, now_a, "fans", 429, fans_out, b"").ok
    b.fetch_broadcast()
    day_b = [*JSON, ("x-ratelimit-daily-remaining", "12"), ("x-ratelimit-daily-reset", reset)]
    assert answer(b, now_b, "live", 200, day_b, BROADCAST).ok
    b.list_listeners()
    listeners_out = [("Retry-After", "1800"), ("x-ratelimit-daily-scope", "listeners.read")]
    assert not answer(b, now_b, "listeners", 429, listeners_out, b"").ok
    now = max(now_a[0], now_b[0])

    view_a, view_b = a.daily_quota(now), b.daily_quota(now)
    assert (view_a.remaining, view_b.remaining) == (40, 12)
    app = onair.DailyQuota().merge(view_a, now).merge(view_b, now)
    assert app == onair.DailyQuota(
        12,
        1_700_003_600_000,
        (onair.QuotaBlock("fans.read", t + 3_600_000), onair.QuotaBlock("listeners.read", t + 1_800_000)),
    )
    assert app.merge(view_b, now) == app  # nothing new: unchanged
    assert onair.DailyQuota.from_json(app.to_json()) == app
    # The reset has come: the day's count and the blocks are gone.
    assert app.merge(onair.DailyQuota(), 1_700_003_600_000) == onair.DailyQuota()

    # Given back, bot A holds what B learned: its listener call fails fast, no request.
    a.share_daily_quota(app, now)
    call = a.list_listeners()
    done = poll_until(a, [now], onair.Done)
    assert done.call_id == call
    assert done.result == onair.Failed("quota_blocked", until_ms=t + 1_800_000)
    a.fetch_broadcast()
    assert answer(a, [now], "live", 200, JSON, BROADCAST).ok
    assert onair.QuotaBlock("listeners.read", t + 1_800_000) in a.daily_quota(now).blocks

    with pytest.raises(onair.OnairError) as e:
        onair.DailyQuota.from_json("[40, 1700003600000, []]")
    assert e.value.kind == "invalid_argument"
