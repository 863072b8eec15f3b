"""Kit and decisions through the package."""

from __future__ import annotations

import gc
import weakref

import onair
import pytest


def test_split_truncate_utf16() -> None:
    text = "😀" * 101
    parts = onair.split_chat(text)
    assert [len(p) for p in parts] == [100, 1]
    assert all(onair.utf16_len(p) <= 200 for p in parts)
    assert onair.utf16_len("😀😀") == 4
    assert onair.truncate("hello wonderful world", 12) == "hello wonde…"
    assert onair.split_chat("   ") == []


def test_commands_prefix_and_ignore() -> None:
    with onair.Commands("?") as c:
        c.add_prefix("!")
        c.ignore("bot-self")
        c.add("hi")
        assert repr(c) == "Commands(closed=False)"
    assert c.closed


def test_timers() -> None:
    with onair.Timers() as t:
        t.schedule(100, "once")
        t.every(50, "tick", 20)
        with pytest.raises(onair.OnairError) as e:
            t.schedule(1, "bad\ntag")
        assert e.value.kind == "bad_tag"
        assert t.next_deadline() == 20
        assert t.pop_due(10) == []
        assert t.pop_due(100) == ["tick", "once"]
        assert t.cancel("tick") and not t.cancel("tick")
        assert t.next_deadline() is None
        n = 0
        with pytest.raises(onair.OnairError) as e:
            while n < 100000:
                t.schedule(5, f"t{n}")
                n += 1
        assert e.value.kind == "too_many_timers" and n > 0


def test_classify_and_quota() -> None:
    body = b'{"status":404,"detailCode":"OAPI_MNGR_0301","message":"not live"}'
    p = onair.classify("live", 404, [("Content-Type", "application/json")], body)
    assert (p.kind, p.advice, p.status, p.is_ok) == ("not_on_air", "wait_not_on_air", 404, False)
    match p:
        case onair.Problem("not_on_air", advice):
            assert advice == "wait_not_on_air"
    ex = onair.explain("live", 404, None, body)
    assert ex["kind"] == "not_on_air" and ex["detailCode"] == "OAPI_MNGR_0301"
    q = onair.parse_quota({"x-ratelimit-remaining": "3", "Retry-After": "2"})
    assert q.remaining == 3 and q.retry_after_ms == 2000 and q.daily_limit is None
    assert onair.retry_after_ms("120") == 120000 and onair.retry_after_ms("soon") is None
    with pytest.raises(onair.OnairError) as e:
        onair.classify("nope", 200)
    assert e.value.kind == "unknown_endpoint"


def test_backoff_is_seeded() -> None:
    a, b = onair.Backoff(seed=3), onair.Backoff(seed=3)
    da = [a.next_delay_ms() for _ in range(6)]
    assert da == [b.next_delay_ms() for _ in range(6)] and a.attempt == 6
    assert all(0 <= d <= 30000 for d in da)
    a.reset()
    assert a.attempt == 0


def test_handles_freed_on_close_and_gc(monkeypatch: pytest.MonkeyPatch) -> None:
    from onair import _ffi

    freed: list[int] = []
    real = _ffi.lib.onair_tally_free

    def spy(h: int) -> None:
        freed.append(h)
        real(h)

    monkeypatch.setattr(onair.Tally, "_free", staticmethod(spy))
    t = onair.Tally()
    h = t._h
    t.close()
    t.close()
    assert freed == [h]
    t2 = onair.Tally()
    h2 = t2._h
    ref = weakref.ref(t2)
    del t2
    gc.collect()
    assert ref() is None and freed == [h, h2]


def test_errors_have_kind_and_advice() -> None:
    from onair.errors import error

    e = error(12, "over 200")
    assert isinstance(e, onair.ChatRejected) and e.kind == "chat_too_long" and e.code == 12
    assert "over 200" in str(e) and e.advice in str(e)
    assert onair.library_version() and onair.abi_version() == 2
