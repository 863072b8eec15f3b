"""The Bot through the package: the C tests' loop, from Python."""

from __future__ import annotations

import onair
import pytest
from conftest import BOT_STREAM, CLIENT_ID, TOKEN_BODY

JSON = [("Content-Type", "application/json")]


def new_bot(seed: int = 7, saved: str | None = None, **kw: int) -> onair.Bot:
    config = onair.Config("http://127.0.0.1:9", CLIENT_ID, "secret", **kw)  # type: ignore[arg-type]
    with_config = onair.Bot(config, saved, seed=seed)
    config.close()
    return with_config


def poll_until(bot: onair.Bot, now: list[int], kind: type) -> onair.Action:
    for _ in range(50):
        a = bot.poll(now[0])
        if isinstance(a, kind):
            return a
        if isinstance(a, onair.Wait):
            assert a.until_ms is not None
            now[0] = a.until_ms
    raise AssertionError(f"no {kind.__name__}")


def test_config_errors() -> None:
    with pytest.raises(onair.InvalidConfig) as e:
        onair.Config("ftp://x", CLIENT_ID, "s")
    assert e.value.kind == "invalid_base_url" and "URL" in e.value.advice
    with pytest.raises(onair.InvalidConfig) as e:
        onair.Config("http://127.0.0.1:9", "not-a-uuid", "s")
    assert e.value.kind == "invalid_credentials"
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
        assert any(isinstance(a, onair.Done) and a.call_id == 2 and a.failure == "queue_full" for a in actions)
        assert any(isinstance(a, onair.Notice) and a.kind == "call_held" and a.call_id == 1 for a in actions)


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
    assert isinstance(wait, onair.Wait) and wait.until_ms == now[0] + 30000
    with pytest.raises(onair.MisuseError) as e:
        bot.on_stream_bytes(token_id, b"x")
    assert e.value.kind == "not_a_stream"
    bot.on_response(token_id, 200, JSON, TOKEN_BODY, now[0])
    persist = bot.poll(now[0])
    assert isinstance(persist, onair.PersistTokens) and "RT-xyz" in persist.tokens_json
    assert "RT-xyz" not in repr(persist) and "AT-xyz" not in repr(persist)
    saved = persist.tokens_json

    op = poll_until(bot, now, onair.OpenStream)
    assert isinstance(op, onair.OpenStream)
    stream = op.request_id
    assert op.request.endpoint == "events" and op.request.method == "GET"
    assert ("Authorization", "Bearer AT-xyz") in op.request.headers
    assert "AT-xyz" not in repr(op)
    with pytest.raises(onair.MisuseError) as e:
        bot.on_stream_bytes(stream, b"x")
    assert e.value.kind == "stream_not_started"
    bot.on_stream_open(stream, 200, [], now[0])

    audience, commands, milestones, tally = onair.Audience(), onair.Commands(), onair.Milestones(1000, 500), onair.Tally()
    commands.add("hello")
    commands.add("stop", "dj")
    with pytest.raises(ValueError):
        commands.add("x", "everyone-ish")
    bot.on_stream_bytes(stream, BOT_STREAM, now[0])
    events = firsts = welcomes = runs = denials = donors = skipped = 0
    for _ in range(20):
        a = bot.poll(now[0])
        match a:
            case onair.Wait():
                break
            case onair.Notice("frame_skipped"):
                skipped += 1
                assert a.code == "invalid_json" and a.message
            case onair.EventAction(ev):
                events += 1
                tally.record(ev)
                g = audience.on_event(ev)
                if g is not None:
                    assert (g.user_id, g.nickname) == ("u-1", "sky")
                    firsts += g.kind == "first"
                    welcomes += g.kind == "welcome_back"
                inv = commands.match(ev, audience)
                if inv is not None and inv.kind == "run":
                    runs += 1
                    assert inv.name == "hello" and inv.rest == "there" and inv.args == ["there"]
                    assert inv.role == "listener" and inv.user_id == "u-1"
                if inv is not None and inv.kind == "denied":
                    denials += 1
                    assert inv.name == "stop" and inv.needed == "dj"
                m = milestones.on_event(ev)
                if m is not None:
                    donors += 1
                    assert (m.kind, m.reached, m.total, m.user_id) == ("donated", 500, 700, "u-1")
                    assert milestones.donated_by("u-1") == 700
    assert (events, firsts, welcomes, runs, denials, donors, skipped) == (5, 1, 1, 1, 1, 1, 1)
    assert len(audience) == 1 and not audience.is_manager("u-1")
    assert milestones.total_donated == 700 and milestones.hearts == 0
    assert (tally.donated, tally.attendance, tally.hearts) == (700, 1, 0)
    assert tally.to_dict()["people"]["u-1"]["donated"] == 700

    stored = audience.to_json()
    with onair.Audience(stored) as again:
        assert len(again) == 1
    with pytest.raises(onair.OnairError) as st:
        onair.Audience('{"format":1}')
    assert st.value.kind == "invalid_state"
    with onair.Milestones(stored=milestones.to_json()) as m2:
        assert m2.donated_by("u-1") == 700
    assert audience.start_broadcast(42) in (True, False)
    milestones.start_broadcast(42)
    audience.end_broadcast()
    milestones.end_broadcast()

    call = bot.send_chat("Hello, sky! 😀")
    s = poll_until(bot, now, onair.Send)
    assert isinstance(s, onair.Send) and s.request.endpoint == "chat" and "Hello, sky!".encode() in s.request.body
    bot.on_response(s.request_id, 204, None, b"", now[0])
    d = poll_until(bot, now, onair.Done)
    assert isinstance(d, onair.Done) and d.call_id == call and d.kind == "chat_sent" and d.ok

    call = bot.fetch_fans()
    s = poll_until(bot, now, onair.Send)
    assert isinstance(s, onair.Send)
    bot.on_response(s.request_id, 403, JSON, b'{"status":403,"message":"no permission"}', now[0])
    d = poll_until(bot, now, onair.Done)
    assert isinstance(d, onair.Done) and d.call_id == call and d.kind == "failed" and not d.ok
    assert d.failure == "problem" and d.code == "permission_missing" and d.message

    tokens = bot.tokens_json()
    assert tokens and "RT-xyz" in tokens
    with new_bot(9, saved) as resumed:
        assert isinstance(resumed.poll(now[0]), onair.OpenStream)

    bot.schedule(now[0] + 10, "greet-all")
    bot.every(60000, "tick", now[0] + 60000)
    bot.set_timer("online", now[0] + 5, 0, True)
    with pytest.raises(onair.OnairError) as bt:
        bot.schedule(now[0], "")
    assert bt.value.kind == "bad_tag"
    t = poll_until(bot, now, onair.Timer)
    assert t == onair.Timer("online")
    t = poll_until(bot, now, onair.Timer)
    assert t == onair.Timer("greet-all") and bot.action_json() == {"type": "timer", "tag": "greet-all"}
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
    assert isinstance(refused, onair.Done) and refused.call_id == late and refused.failure == "stopped"
    bot.on_stream_closed(stream, now[0])
    for h in (audience, commands, milestones, tally):
        h.close()
    bot.close()
    bot.close()
    assert bot.closed
    with pytest.raises(ValueError):
        bot.poll()


def test_event_from_bot_goes_stale() -> None:
    now = [1000]
    bot = new_bot()
    bot.poll(now[0])
    bot.authorize("c", "https://bot.example/cb")
    s = bot.poll(now[0])
    assert isinstance(s, onair.Send)
    bot.on_response(s.request_id, 200, JSON, TOKEN_BODY, now[0])
    op = poll_until(bot, now, onair.OpenStream)
    assert isinstance(op, onair.OpenStream)
    bot.on_stream_open(op.request_id, 200, [], now[0])
    bot.on_stream_bytes(op.request_id, BOT_STREAM, now[0])
    ev = poll_until(bot, now, onair.EventAction)
    assert isinstance(ev, onair.EventAction)
    with onair.Tally() as tally:
        tally.record(ev.event)
        bot.poll(now[0])
        with pytest.raises(onair.StaleEventError):
            tally.record(ev.event)
    bot.close()
