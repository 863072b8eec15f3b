"""The core's JSON forms (``core/src/json.rs``) into this package's values.

libonair hands out every item and action in one documented JSON form; this module is
the one place that reads it. Internal: the public values are in ``events`` and
``actions``.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Callable, cast

from .actions import (
    Action,
    Arrival,
    Broadcast,
    BroadcastEnded,
    CallHeld,
    CallResult,
    ChatSent,
    CloseStream,
    Command,
    CommandRefused,
    Done,
    Failed,
    Fan,
    Fans,
    FrameSkipped,
    Listener,
    Listeners,
    Milestone,
    NeedsAuthorization,
    OpenStream,
    OtherAction,
    People,
    PersistState,
    PersistTokens,
    PersonTotals,
    Problem,
    ProblemNotice,
    DailyQuotaReached,
    GaveUp,
    Reachable,
    REPLY_KINDS,
    RepliesDropped,
    ReplyCounters,
    ReplyKind,
    ReconnectStormBraked,
    Request,
    Unreachable,
    Send,
    Stopped,
    Tally,
    TimedOut,
    Timer,
    UnknownEvent,
    Wait,
)
from .events import (
    Chat,
    Comment,
    Donation,
    End,
    EndReason,
    Event,
    FrameError,
    Heartbeat,
    Item,
    Like,
    LikeType,
    OtherEvent,
    Presence,
    PresenceType,
    Retry,
    UnknownFrame,
    User,
)

Json = dict[str, Any]

# A known value as its enum member; a newer one kept as its string.
_LIKE_TYPES: dict[str, LikeType | str] = {m.value: m for m in LikeType}
_PRESENCE_TYPES: dict[str, PresenceType | str] = {m.value: m for m in PresenceType}
_END_REASONS: dict[str, EndReason | str] = {m.value: m for m in EndReason}

# ---- the events: the hot path -------------------------------------------------------
#
# A frozen dataclass's __init__ sets each field through object.__setattr__ (~0.85 µs
# for a chat); a plain slots dataclass with the same fields sets them as attributes
# (~0.25 µs). So the decoder builds each event as its "twin" (the same slots, in the
# same order: the same memory layout) and then makes it what it is by assigning
# __class__, which CPython allows between classes of one layout. The result is the
# frozen class's instance, field for field what its constructor makes (the tests
# compare both on every fixture and on random events).


def _twin(cls: type) -> Any:
    """A plain slots dataclass with ``cls``'s fields in its order (the same layout)."""
    names = [f.name for f in fields(cls)]
    twin: Any = dataclass(slots=True)(type(f"_{cls.__name__}Twin", (), {"__annotations__": {n: Any for n in names}}))
    assert twin.__slots__ == cls.__slots__, cls  # type: ignore[attr-defined]
    return twin


_UserTwin, _ChatTwin, _PresenceTwin, _LikeTwin, _DonationTwin, _EndTwin = map(
    _twin, (User, Chat, Presence, Like, Donation, End)
)

# Users repeat (a chatty person, the regulars): one shared immutable User per
# (id, nickname) saves an object per event. Bounded; a dict's get/set are atomic.
_USERS: dict[tuple[str, str | None], User] = {}
_USERS_MAX = 4096


def _new_user(key: tuple[str, str | None]) -> User:
    if len(_USERS) >= _USERS_MAX:
        _USERS.clear()
    found: Any = _UserTwin(*key)
    found.__class__ = User
    _USERS[key] = found
    return found  # type: ignore[no-any-return]


def user(u: Json) -> User:
    key = (u["id"], u["nickname"])
    return _USERS.get(key) or _new_user(key)


# Each reader looks its user up inline (the cached case without a call).


def _chat(d: Json, id: str | None) -> Chat:
    u = d["user"]
    key = (u["id"], u["nickname"])
    e: Any = _ChatTwin(_USERS.get(key) or _new_user(key), d["isDj"], d["message"], d["sentTime"], id)
    e.__class__ = Chat
    return e  # type: ignore[no-any-return]


def _presence(d: Json, id: str | None) -> Presence:
    u = d["user"]
    key = (u["id"], u["nickname"])
    t: str = d["type"]
    e: Any = _PresenceTwin(
        _USERS.get(key) or _new_user(key), _PRESENCE_TYPES.get(t, t), d["fanRank"], d["isManager"],
        d["favoriteTemperature"], d["time"], id,
    )
    e.__class__ = Presence
    return e  # type: ignore[no-any-return]


def _like(d: Json, id: str | None) -> Like:
    u = d["user"]
    key = (u["id"], u["nickname"])
    t: str = d["type"]
    e: Any = _LikeTwin(
        _USERS.get(key) or _new_user(key), _LIKE_TYPES.get(t, t), d["totalAmount"], d["amount"],
        d["extraAmount"], d["combo"], d["time"], id,
    )
    e.__class__ = Like
    return e  # type: ignore[no-any-return]


def _donation(d: Json, id: str | None) -> Donation:
    u = d["user"]
    key = (u["id"], u["nickname"])
    e: Any = _DonationTwin(_USERS.get(key) or _new_user(key), d["amount"], d["message"], d["time"], id)
    e.__class__ = Donation
    return e  # type: ignore[no-any-return]


def _end(d: Json, id: str | None) -> End:
    r: str = d["reason"]
    e: Any = _EndTwin(_END_REASONS.get(r, r), id)
    e.__class__ = End
    return e  # type: ignore[no-any-return]


_EVENTS: dict[str, Callable[[Json, str | None], Event]] = {
    "chat": _chat,
    "presence": _presence,
    "like": _like,
    "donation": _donation,
    "end": _end,
}


def event(line: Json) -> Event:
    """An event line (``{"event","id","data"}``, with or without ``type``)."""
    name = line["event"]
    read = _EVENTS.get(name)
    if read is None:
        return OtherEvent(name, line["data"], line["id"])
    return read(line["data"], line["id"])


def frame_error(line: Json) -> FrameError:
    return FrameError(line["error"], line["message"], line["event"], line["id"], line["raw"])


def item(line: Json) -> Item:
    """A typed item line (``onair decode``'s)."""
    t = line["type"]
    if t == "event":
        return event(line)
    if t == "heartbeat":
        return _HEARTBEAT
    if t == "comment":
        return Comment(line["text"])
    if t == "retry":
        return Retry(line["ms"])
    if t == "unknown":
        return UnknownFrame(line["event"], line["data"], line["id"])
    return frame_error(line)


_HEARTBEAT = Heartbeat()


def items(lines: list[Json]) -> list[Item]:
    """A batch of item lines; events (the common case) without a second lookup."""
    events = _EVENTS
    out: list[Item] = []
    append = out.append
    for line in lines:
        if line["type"] == "event":
            read = events.get(line["event"])
            append(OtherEvent(line["event"], line["data"], line["id"]) if read is None else read(line["data"], line["id"]))
        else:
            append(item(line))
    return out


def problem(p: Json) -> Problem:
    return Problem(
        p["kind"],
        p["advice"],
        p["status"],
        p.get("detailCode"),
        p.get("oauthError"),
        p.get("retryAfterMs"),
        p.get("quotaScope"),
        bool(p.get("recentlyRevoked", False)),
    )


def stopped(s: Json) -> Stopped:
    p = s.get("problem")
    return Stopped(
        s["code"], s["message"], s.get("reason"), tuple(s.get("missing") or ()), problem(p) if p else None
    )


def request(r: Json) -> Request:
    return Request(
        r["endpoint"],
        r["method"],
        r["url"],
        tuple((n, v) for n, v in r["headers"]),
        r["body"].encode("utf-8"),
    )


def tally(t: Json) -> Tally:
    people = People(
        {
            pid: PersonTotals(
                p.get("nickname"),
                p.get("hearts", 0),
                p.get("paidHearts", 0),
                p.get("donated", 0),
                p.get("donations", 0),
                p.get("joins", 0),
                p.get("chats", 0),
            )
            for pid, p in (t.get("people") or {}).items()
        }
    )
    return Tally(t.get("hearts", 0), t.get("donated", 0), t.get("attendance", 0), people)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w.capitalize() for w in rest)


_COUNTER_KEYS = tuple((f.name, _camel(f.name)) for f in fields(ReplyCounters))


def reply_counters(status: Json) -> dict[ReplyKind, ReplyCounters]:
    """The status's ``counters.replies``, per kind (zeros for a kind it lacks)."""
    replies = (status.get("counters") or {}).get("replies") or {}
    out: dict[ReplyKind, ReplyCounters] = {}
    for kind in REPLY_KINDS:
        c = replies.get(_camel(kind)) or {}
        out[kind] = ReplyCounters(**{name: int(c.get(key, 0)) for name, key in _COUNTER_KEYS})
    return out


def _result(r: Json) -> CallResult:
    kind = r["kind"]
    if kind == "chatSent":
        return _CHAT_SENT
    if kind == "broadcast":
        b = r["broadcast"]
        return Broadcast(
            b["liveId"], b["title"], b["startedAt"], b["closeAirTime"], b["listenerCount"],
            b["totalListenerCount"], b["welcomeMessage"], b["isChatFrozen"], tuple(b["categories"]),
            tuple(b["tags"]),
        )
    if kind == "listeners":
        return Listeners(tuple(Listener(x["id"], x["nickname"]) for x in r["listeners"]))
    if kind == "fans":
        f = r["fans"]
        return Fans(f["totalCount"], tuple(Fan(x["id"], x["nickname"], x["rank"], x["coinCount"]) for x in f["fans"]))
    p, s = r.get("problem"), r.get("stop")
    return Failed(r["failure"], problem(p) if p else None, r.get("untilMs"), r.get("message"), stopped(s) if s else None)


_CHAT_SENT = ChatSent()
_NEEDS_AUTHORIZATION = NeedsAuthorization()


def _notice(n: Json) -> Action:
    kind = n["kind"]
    m, lv = str(n.get("message", "")), str(n.get("level", "info"))
    if kind == "frameSkipped":
        return FrameSkipped(frame_error(n["error"]), message=m, level=lv)
    if kind == "unknownEvent":
        return UnknownEvent(n["event"], n["data"], message=m, level=lv)
    if kind == "problem":
        return ProblemNotice(n["endpoint"], problem(n["problem"]), message=m, level=lv)
    if kind == "commandRefused":
        return CommandRefused(n["name"], user(n["user"]), n["role"], n["needed"], message=m, level=lv)
    if kind == "callHeld":
        return CallHeld(n["call"], message=m, level=lv)
    if kind == "reconnectStormBraked":
        return ReconnectStormBraked(n["untilMs"], message=m, level=lv)
    if kind == "unreachable":
        return Unreachable(n["endpoint"], n["failure"], n["failures"], n["sinceMs"], message=m, level=lv)
    if kind == "reachable":
        return Reachable(n["failures"], n["sinceMs"], message=m, level=lv)
    if kind == "gaveUp":
        return GaveUp(n["endpoint"], n["reason"], n["count"], message=m, level=lv)
    if kind == "repliesDropped":
        return RepliesDropped(n["replyKind"], n["people"], n["reason"], message=m, level=lv)
    if kind == "dailyQuotaReached":
        return DailyQuotaReached(n.get("scope"), n["untilMs"], message=m, level=lv)
    return OtherAction({"type": "notice", "notice": n})


def action(a: Json) -> Action | OtherEvent:
    """An action line (``ActionJson``)."""
    t = a["type"]
    if t == "event":
        return event(a)
    if t == "wait":
        return Wait(a["untilMs"])
    if t == "send":
        return Send(a["id"], request(a["request"]), a["timeoutMs"])
    if t == "openStream":
        return OpenStream(a["id"], request(a["request"]))
    if t == "closeStream":
        return CloseStream(a["id"])
    if t == "timedOut":
        return TimedOut(a["id"], a["endpoint"])
    if t == "done":
        return Done(a["call"], _result(a["result"]))
    if t == "notice":
        return _notice(a["notice"])
    if t == "persistTokens":
        return PersistTokens(a["tokens"], a.get("generation", 0))
    if t == "needsAuthorization":
        return _NEEDS_AUTHORIZATION
    if t == "stopped":
        return stopped(a["stop"])
    if t == "timer":
        return Timer(a["tag"])
    if t == "command":
        return Command(a["name"], tuple(a["args"]), a["rest"], user(a["user"]), a["role"], cast(Chat, event(a["event"])))
    if t == "arrival":
        return Arrival(a["kind"], a.get("awayMs"), user(a["user"]), a["isManager"], a.get("liveId"), event(a["event"]))
    if t == "milestone":
        u = a.get("user")
        return Milestone(
            a["kind"], a["reached"], a["total"], user(u) if u else None, cast("Like | Donation", event(a["event"]))
        )
    if t == "broadcastEnded":
        e = a.get("event")
        return BroadcastEnded(a.get("liveId"), tally(a["tally"]), cast(End, event(e)) if e else None)
    if t == "persistState":
        return PersistState(a["state"])
    return OtherAction(a)
