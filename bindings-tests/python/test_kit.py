"""The kit's configuration and state, the text helpers, the decisions."""

from __future__ import annotations

import gc
import weakref

import onair
import pytest
from conftest import CLIENT_ID, KIT


def config(kit: object) -> onair.Config:
    return onair.Config("http://127.0.0.1:9", CLIENT_ID, "secret", kit=kit)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kit", "key"),
    [
        ({"prefix": ""}, "prefix"),
        ({"prefx": "!"}, "prefx"),
        ({"commands": {}}, "commands"),
        ({"commands": [{"name": "a b"}]}, "commands[0].name"),
        ({"commands": [{"name": "a"}, {"name": "A"}]}, "commands[1].name"),
        ({"commands": [{"name": "x", "allowed": "admins"}]}, "commands[0].allowed"),
        ({"greetings": {"first": "yes"}}, "greetings.first"),
        ({"milestones": {"hearts_every": 0}}, "milestones.hearts_every"),
        ({"tally": 1}, "tally"),
    ],
)
def test_a_bad_kit_config_names_its_key(kit: object, key: str) -> None:
    with pytest.raises(onair.KitConfigError) as e:
        config(kit)
    assert e.value.key == key and e.value.message and e.value.kind == "invalid_kit_config"
    assert isinstance(e.value, onair.InvalidConfig) and f"kit config: {key}" in str(e.value)
    assert "secret" not in str(e.value)


def test_a_kit_config_that_is_not_json() -> None:
    with pytest.raises(onair.KitConfigError) as e:
        config("{")
    assert e.value.message and "kit config" in str(e.value)


def test_the_kit_config_is_kept_as_json() -> None:
    c = config(KIT)
    assert isinstance(c.kit, str) and c.kit_config() == KIT
    assert config(c.kit).kit_config() == KIT
    assert config(None).kit_config() == {}
    assert c == config(KIT) and hash(c) == hash(config(KIT))


def test_a_bad_kit_state_is_refused() -> None:
    with pytest.raises(onair.OnairError) as e:
        onair.Bot(config(KIT), None, 1, kit_state='{"format":"onair.kit","version":99}')
    assert e.value.kind == "kit_state_too_new" and "version 99" in str(e.value)
    with pytest.raises(onair.OnairError) as e:
        onair.Bot(config(KIT), None, 1, kit_state="{")
    assert e.value.kind == "invalid_state"
    bot = onair.Bot(config(KIT), None, 1, kit_state='{"format":"onair.kit","version":1,"live_id":7}')
    kit = bot.kit()
    assert kit is not None and kit.live_id == 7 and kit.tally == onair.Tally()
    bot.close()


def test_split_truncate_utf16() -> None:
    text = "😀" * 101
    parts = onair.split_chat(text)
    assert [len(p) for p in parts] == [100, 1]
    assert all(onair.utf16_len(p) <= 200 for p in parts)
    assert onair.utf16_len("😀😀") == 4
    assert onair.truncate("hello wonderful world", 12) == "hello wonde…"
    assert onair.split_chat("   ") == []


def test_classify_and_quota() -> None:
    body = b'{"status":404,"detailCode":"OAPI_MNGR_0301","message":"not live"}'
    p = onair.classify("live", 404, [("Content-Type", "application/json")], body)
    assert (p.kind, p.advice, p.status, p.is_ok) == ("not_on_air", "wait_not_on_air", 404, False)
    assert p.detail_code == "OAPI_MNGR_0301"
    match p:
        case onair.Problem("not_on_air", advice):
            assert advice == "wait_not_on_air"
    ex = onair.explain("live", 404, None, body)
    assert ex["kind"] == "not_on_air" and ex["detailCode"] == "OAPI_MNGR_0301"
    q = onair.parse_quota({"x-ratelimit-remaining": "3", "Retry-After": "2"})
    assert q.remaining == 3 and q.retry_after_ms == 2000 and q.daily_limit is None and q.retry_after_present
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
    real = _ffi.lib.onair_backoff_free

    def spy(h: int) -> None:
        freed.append(h)
        real(h)

    monkeypatch.setattr(onair.Backoff, "_free", staticmethod(spy))
    t = onair.Backoff()
    h = t._h
    assert h is not None
    t.close()
    t.close()
    assert freed == [h]
    t2 = onair.Backoff()
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


def test_an_error_text_says_each_thing_once() -> None:
    # The kind is `.kind`, not in the text; the advice is there only where the
    # library's message does not say it already.
    from onair.errors import _CODES, error

    for code, (kind, advice) in _CODES.items():
        text = str(error(code))
        assert f"({kind};" not in text and f"{kind}:" not in text, text
        assert text.endswith(f": {advice}") if advice else not text.endswith(":"), text
        words = text.lower().replace(":", " ").split()
        assert not any(words[i : i + 4] == words[j : j + 4] for i in range(len(words) - 3) for j in range(i + 1, len(words) - 3)), text
    assert onair.library_version() and onair.abi_version() == 4
