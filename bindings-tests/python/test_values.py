"""The values: every JSON line the core pins becomes its dataclass; dataclasses are
frozen, slotted, equal by their fields, hashable, copyable, picklable; kinds are
enums or literals; secrets stay out of repr; the decoder's fast construction
(the "twin" classes) makes exactly what the constructors make."""

from __future__ import annotations

import copy
import dataclasses
import json
import pickle
from typing import Any

import onair
import pytest
from conftest import ROOT
from hypothesis import given, settings
from hypothesis import strategies as st
from onair import _json

SNAPSHOT = ROOT / "core" / "tests" / "snapshots" / "json_formats__every_json_line_format_is_pinned.snap"


def pinned(section: str) -> list[dict[str, Any]]:
    """The JSON lines of one ``# section`` of the core's pinned snapshot."""
    lines, inside = [], False
    for line in SNAPSHOT.read_text(encoding="utf-8").split("\n"):
        if line.startswith("# "):
            inside = line[2:].startswith(section)
            continue
        if inside and line.startswith("{"):
            lines.append(json.loads(line))
    assert lines, section
    return lines


def test_every_pinned_action_line_is_a_value() -> None:
    lines = pinned("actions") + pinned("the kit's actions")
    values = [_json.action(line) for line in lines if line.get("type")]
    assert not [v for v in values if isinstance(v, onair.OtherAction)]
    kinds = {type(v).__name__ for v in values}
    assert {
        "Send", "OpenStream", "CloseStream", "Chat", "Presence", "Like", "Donation", "End", "FrameSkipped",
        "UnknownEvent", "ProblemNotice", "CallHeld", "ReconnectStormBraked", "Done",
        "PersistTokens", "Timer", "NeedsAuthorization", "Wait", "Stopped", "Command", "CommandRefused",
        "Arrival", "Milestone", "BroadcastEnded", "PersistState",
    } <= kinds, kinds
    by = {type(v).__name__: v for v in reversed(values)}
    send = by["Send"]
    assert isinstance(send, onair.Send) and send.timeout_ms == 30000 and send.request.endpoint == "token"
    assert send.request.body.startswith(b"grant_type=authorization_code")
    assert "M2YyNTA0" not in repr(send) and "code%2F1" not in repr(send)  # header values and body hidden
    command = by["Command"]
    assert isinstance(command, onair.Command)
    assert command.args == ("dear DJ", "now") and command.user.nickname == 'Mi"na\x01한🎧'
    assert isinstance(command.event, onair.Chat) and command.event.id == "1732250000000-3"
    arrivals = [v for v in values if isinstance(v, onair.Arrival)]
    assert [(a.kind, a.away_ms, a.live_id) for a in arrivals] == [("first", None, 42), ("back", 600000, None)]
    assert isinstance(arrivals[0].event, onair.Presence) and isinstance(arrivals[1].event, onair.Chat)
    milestones = [v for v in values if isinstance(v, onair.Milestone)]
    assert [(m.kind, m.reached, m.total, m.user is None) for m in milestones] == [
        ("hearts", 100, 130, True), ("donated", 1000, 1500, False)
    ]
    assert isinstance(milestones[0].event, onair.Like) and isinstance(milestones[1].event, onair.Donation)
    ended = [v for v in values if isinstance(v, onair.BroadcastEnded)]
    assert ended[0].live_id == 42 and ended[0].tally.hearts == 31 and ended[0].tally.attendance == 3
    assert ended[0].tally.people["u2"].paid_hearts == 30 and isinstance(ended[0].event, onair.End)
    assert ended[1].event is None and ended[1].tally == onair.Tally()
    assert ended[0].tally.donors()[0][0] == "u1" and ended[0].tally.donated == 2**64 - 1
    tally_line = next(line for line in pinned("tally") if "people" in line and line["people"])
    assert _json.tally(tally_line).to_dict() == tally_line
    done = [v for v in values if isinstance(v, onair.Done)]
    results = {type(d.result).__name__ for d in done}
    assert results == {"Broadcast", "Listeners", "Fans", "ChatSent", "Failed"}
    failures = [d.result.failure for d in done if isinstance(d.result, onair.Failed)]
    assert failures == ["problem", "quota_blocked", "invalid_body", "pager", "transport", "cancelled",
                        "queue_full", "stopped"]
    fans = next(d.result for d in done if isinstance(d.result, onair.Fans))
    assert fans.fans[1].coin_count is None and fans.total_count == 2
    stops = [v for v in values if isinstance(v, onair.Stopped)]
    assert [s.code for s in stops] == [
        "reauthorize", "reauthorize", "reconsent", "join_forbidden", "invalid_client", "fix_request",
        "unexpected", "shut_down",
    ]
    assert stops[0].resumes_with_new_consent and not stops[2].resumes_with_new_consent
    assert stops[2].missing == ("events.chat", "x.y") and stops[5].problem is not None
    tokens = by["PersistTokens"]
    assert isinstance(tokens, onair.PersistTokens) and "R/2" not in repr(tokens) and "A\\" not in repr(tokens)
    refused = by["CommandRefused"]
    assert isinstance(refused, onair.CommandRefused) and (refused.role, refused.needed) == ("manager", "dj")
    assert isinstance(refused, onair.Notice)
    assert onair.ends_drain(by["Wait"]) and onair.ends_drain(by["Stopped"]) and not onair.ends_drain(send)


def test_every_pinned_item_line_is_a_value() -> None:
    items = [_json.item(line) for line in pinned("typed items")]
    kinds = [type(i).__name__ for i in items]
    assert kinds == ["Heartbeat", "Comment", "Retry", "Chat", "UnknownFrame", "FrameError", "UnknownFrame",
                     "End", "FrameError", "FrameError"]
    error = items[5]
    assert isinstance(error, onair.FrameError) and error.code == "invalid_event" and error.event == "like"


def test_kinds_are_enums_and_newer_values_are_kept() -> None:
    like = _json.event({"event": "like", "id": None, "data": {
        "user": {"id": "u", "nickname": None}, "type": "PAID", "totalAmount": 3, "amount": 3,
        "extraAmount": 0, "combo": 1, "time": "t"}})
    assert isinstance(like, onair.Like) and like.type is onair.LikeType.PAID and like.type == "PAID"
    assert like.is_paid and str(like.type) == "PAID" and f"{like.type}" == "PAID"
    end = _json.event({"event": "end", "id": None, "data": {"reason": "SOMETHING_NEW"}})
    assert isinstance(end, onair.End) and end.reason == "SOMETHING_NEW" and not end.is_live_ended
    newer = _json.event({"event": "poll", "id": "1-0", "data": {"q": 1}})
    assert newer == onair.OtherEvent("poll", {"q": 1}, "1-0")
    match like:
        case onair.Like(type=onair.LikeType.PAID, total_amount=n):
            assert n == 3
        case _:
            raise AssertionError(like)


def all_values() -> list[Any]:
    lines = pinned("actions") + pinned("the kit's actions")
    return [_json.action(line) for line in lines if line.get("type")] + [
        _json.item(line) for line in pinned("typed items")
    ]


def test_values_are_frozen_slotted_hashable_and_copyable() -> None:
    for value in all_values():
        assert dataclasses.is_dataclass(value), value
        assert not hasattr(value, "__dict__"), type(value)
        params = type(value).__dataclass_params__  # type: ignore[attr-defined]
        assert params.frozen, type(value)
        name = dataclasses.fields(value)[0].name if dataclasses.fields(value) else None
        if name is not None:
            with pytest.raises(dataclasses.FrozenInstanceError):
                setattr(value, name, None)
        assert copy.copy(value) == value and copy.deepcopy(value) == value
        assert pickle.loads(pickle.dumps(value)) == value
        if not isinstance(value, (onair.OtherAction, onair.OtherEvent)):
            hash(value)  # every value hashes (OtherAction/OtherEvent hold the core's JSON dict)


def test_the_secret_is_never_in_a_repr() -> None:
    config = onair.Config("http://127.0.0.1:9", "3f2504e0-4f89-11d3-9a0c-0305e82c3301", "top-secret-value")
    assert "top-secret-value" not in repr(config) and "top-secret-value" not in str(config)
    with pytest.raises(onair.InvalidConfig) as e:
        onair.Config("ftp://x", "3f2504e0-4f89-11d3-9a0c-0305e82c3301", "top-secret-value")
    assert "top-secret-value" not in str(e.value) and e.value.kind == "invalid_base_url"
    assert "s3cr3t" not in repr(onair.MemoryStore("s3cr3t"))


def build(cls: type, values: dict[str, Any]) -> Any:
    """The event through its constructor (the oracle of the fast path)."""
    return cls(**values)


users = st.builds(onair.User, st.text(min_size=1, max_size=8), st.none() | st.text(max_size=8))
ids = st.none() | st.text(max_size=12)
times = st.text(max_size=10)
events = st.one_of(
    st.builds(onair.Chat, users, st.booleans(), st.text(max_size=30), times, ids),
    st.builds(onair.Presence, users, st.sampled_from(["JOIN", "LEAVE"]), st.none() | st.integers(0, 10**6),
              st.booleans(), st.none() | st.floats(allow_nan=False), times, ids),
    st.builds(onair.Like, users, st.sampled_from(["FREE", "PAID", "GIFT"]), st.integers(0, 2**64 - 1),
              st.integers(0, 10**9), st.integers(0, 10**9), st.none() | st.integers(0, 99), times, ids),
    st.builds(onair.Donation, users, st.integers(0, 2**64 - 1), st.none() | st.text(max_size=20), times, ids),
    st.builds(onair.End, st.sampled_from(["LIVE_ENDED", "TOKEN_EXPIRED", "RECONNECT", "NEW"]), ids),
)


def wire(e: Any) -> dict[str, Any]:
    """An event's line as the core writes it."""
    user = lambda: {"id": e.user.id, "nickname": e.user.nickname}  # noqa: E731
    if isinstance(e, onair.Chat):
        data = {"user": user(), "isDj": e.is_dj, "message": e.message, "sentTime": e.sent_time}
    elif isinstance(e, onair.Presence):
        data = {"user": user(), "type": str(e.type), "fanRank": e.fan_rank, "isManager": e.is_manager,
                "favoriteTemperature": e.favorite_temperature, "time": e.time}
    elif isinstance(e, onair.Like):
        data = {"user": user(), "type": str(e.type), "totalAmount": e.total_amount, "amount": e.amount,
                "extraAmount": e.extra_amount, "combo": e.combo, "time": e.time}
    elif isinstance(e, onair.Donation):
        data = {"user": user(), "amount": e.amount, "message": e.message, "time": e.time}
    else:
        data = {"reason": str(e.reason)}
    return {"type": "event", "event": e.NAME, "id": e.id, "data": data}


@settings(max_examples=300, deadline=None)
@given(st.lists(events, max_size=20))
def test_the_fast_construction_makes_what_the_constructors_make(made: list[Any]) -> None:
    lines = json.loads(json.dumps([wire(e) for e in made]))
    fast = _json.items(lines)
    assert len(fast) == len(made)
    for got, want in zip(fast, made):
        assert type(got) is type(want)
        assert got == want and hash(got) == hash(want)
        values = {f.name: getattr(got, f.name) for f in dataclasses.fields(got)}
        assert build(type(got), values) == got
        assert type(got.user) is onair.User if hasattr(got, "user") else True
        with pytest.raises(dataclasses.FrozenInstanceError):
            got.id = "x"
        assert pickle.loads(pickle.dumps(got)) == got


def test_a_tally_reads_and_writes_the_ledger_shape() -> None:
    line = {"hearts": 3, "donated": 10, "attendance": 1, "people": {"b": {
        "nickname": None, "hearts": 3, "paidHearts": 0, "donated": 0, "donations": 0, "joins": 1, "chats": 0},
        "a": {"nickname": "A", "hearts": 0, "paidHearts": 0, "donated": 10, "donations": 1, "joins": 0,
              "chats": 2}}}
    tally = _json.tally(line)
    assert list(tally.people) == ["a", "b"] and tally.to_dict() == line
    assert json.loads(tally.to_json()) == line and tally.donors() == [("a", tally.people["a"])]
    assert hash(tally) == hash(_json.tally(line)) and len({tally, _json.tally(line)}) == 1
