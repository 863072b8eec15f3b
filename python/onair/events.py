"""Stream items: typed events (the spec's fields in snake_case) and the other SSE items.

Every event class has ``NAME`` (the SSE event name) and ``WIRE`` (each
attribute's wire name in the spec's JSON, e.g. ``"sent_time": "sentTime"``);
nullable wire fields are ``Optional``. Match them with ``match``::

    match item:
        case Chat(user_id=uid, message=text): ...
        case Donation(amount=amount): ...
        case End(reason="LIVE_ENDED"): ...
"""

from __future__ import annotations

from typing import Any, ClassVar, Protocol


class _Source(Protocol):
    _gen: int


class _Value:
    """Slots value: repr and equality over the public fields."""

    __slots__ = ()
    _fields: ClassVar[tuple[str, ...]] = ()

    def __repr__(self) -> str:
        args = ", ".join(f"{f}={getattr(self, f)!r}" for f in self._fields)
        return f"{type(self).__name__}({args})"

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, f) == getattr(other, f) for f in self._fields)

    def __hash__(self) -> int:
        return hash((type(self).__name__, *(getattr(self, f) for f in self._fields)))


class Item(_Value):
    """Anything the decoder takes from a stream."""

    __slots__ = ()


class Event(Item):
    """A typed service event. ``id`` is the frame id (``<epochMillis>-<offset>``) or None.

    While it is current (in the loop body that received it), it can be given
    to the kit: ``Tally.record``, ``Audience.on_event``, ``Commands.match``,
    ``Milestones.on_event``.
    """

    __slots__ = ("id", "_src", "_gen", "_addr")
    NAME: ClassVar[str] = ""
    WIRE: ClassVar[dict[str, str]] = {}
    id: str | None
    _src: _Source | None
    _gen: int
    _addr: int

    @property
    def name(self) -> str:
        """The SSE event name (``"chat"``, ``"like"``, …)."""
        return self.NAME

    def to_wire(self) -> dict[str, Any]:
        """The event's fields under their wire names (``user.id`` nested as ``{"user": {"id"}}``)."""
        out: dict[str, Any] = {}
        for attr, wire in self.WIRE.items():
            value = getattr(self, attr)
            if "." in wire:
                outer, inner = wire.split(".", 1)
                out.setdefault(outer, {})[inner] = value
            else:
                out[wire] = value
        return out

    def _view(self) -> int:
        """The address of the borrowed ``onair_event`` view, checked to be current."""
        from .errors import StaleEventError

        src = self._src
        if src is None or src._gen != self._gen:
            raise StaleEventError()
        return self._addr


_USER = {"user_id": "user.id", "nickname": "user.nickname"}


class Chat(Event):
    """A chat message (``chat``)."""

    __slots__ = ("user_id", "nickname", "is_dj", "message", "sent_time")
    NAME = "chat"
    WIRE = {**_USER, "is_dj": "isDj", "message": "message", "sent_time": "sentTime"}
    _fields = ("id", "user_id", "nickname", "is_dj", "message", "sent_time")
    __match_args__ = ("user_id", "nickname", "message")
    user_id: str
    nickname: str | None
    is_dj: bool
    message: str
    sent_time: str

    def __init__(
        self,
        id: str | None,
        user_id: str,
        nickname: str | None,
        is_dj: bool,
        message: str,
        sent_time: str,
    ) -> None:
        self.id, self.user_id, self.nickname = id, user_id, nickname
        self.is_dj, self.message, self.sent_time = is_dj, message, sent_time
        self._src = None
        self._gen = 0
        self._addr = 0


class Presence(Event):
    """A listener joined (``presence``); ``fan_rank`` and ``favorite_temperature`` are nullable."""

    __slots__ = ("user_id", "nickname", "type", "fan_rank", "is_manager", "favorite_temperature", "time")
    NAME = "presence"
    WIRE = {
        **_USER,
        "type": "type",
        "fan_rank": "fanRank",
        "is_manager": "isManager",
        "favorite_temperature": "favoriteTemperature",
        "time": "time",
    }
    _fields = ("id", "user_id", "nickname", "type", "fan_rank", "is_manager", "favorite_temperature", "time")
    __match_args__ = ("user_id", "nickname")
    user_id: str
    nickname: str | None
    type: str
    fan_rank: int | None
    is_manager: bool
    favorite_temperature: float | None
    time: str

    def __init__(
        self,
        id: str | None,
        user_id: str,
        nickname: str | None,
        type: str,
        fan_rank: int | None,
        is_manager: bool,
        favorite_temperature: float | None,
        time: str,
    ) -> None:
        self.id, self.user_id, self.nickname, self.type = id, user_id, nickname, type
        self.fan_rank, self.is_manager = fan_rank, is_manager
        self.favorite_temperature, self.time = favorite_temperature, time
        self._src = None
        self._gen = 0
        self._addr = 0


class Like(Event):
    """Hearts (``like``): ``total_amount`` is what this event adds (tally this one)."""

    __slots__ = ("user_id", "nickname", "type", "total_amount", "amount", "extra_amount", "combo", "time")
    NAME = "like"
    WIRE = {
        **_USER,
        "type": "type",
        "total_amount": "totalAmount",
        "amount": "amount",
        "extra_amount": "extraAmount",
        "combo": "combo",
        "time": "time",
    }
    _fields = ("id", "user_id", "nickname", "type", "total_amount", "amount", "extra_amount", "combo", "time")
    __match_args__ = ("user_id", "nickname", "total_amount")
    user_id: str
    nickname: str | None
    type: str
    total_amount: int
    amount: int
    extra_amount: int
    combo: int | None
    time: str

    def __init__(
        self,
        id: str | None,
        user_id: str,
        nickname: str | None,
        type: str,
        total_amount: int,
        amount: int,
        extra_amount: int,
        combo: int | None,
        time: str,
    ) -> None:
        self.id, self.user_id, self.nickname, self.type = id, user_id, nickname, type
        self.total_amount, self.amount, self.extra_amount = total_amount, amount, extra_amount
        self.combo, self.time = combo, time
        self._src = None
        self._gen = 0
        self._addr = 0

    @property
    def is_paid(self) -> bool:
        """Bought with the paid currency (``type == "PAID"``)."""
        return self.type == "PAID"


class Donation(Event):
    """A donation (``donation``); ``message`` is None when there is no note."""

    __slots__ = ("user_id", "nickname", "amount", "message", "time")
    NAME = "donation"
    WIRE = {**_USER, "amount": "amount", "message": "message", "time": "time"}
    _fields = ("id", "user_id", "nickname", "amount", "message", "time")
    __match_args__ = ("user_id", "nickname", "amount")
    user_id: str
    nickname: str | None
    amount: int
    message: str | None
    time: str

    def __init__(
        self,
        id: str | None,
        user_id: str,
        nickname: str | None,
        amount: int,
        message: str | None,
        time: str,
    ) -> None:
        self.id, self.user_id, self.nickname = id, user_id, nickname
        self.amount, self.message, self.time = amount, message, time
        self._src = None
        self._gen = 0
        self._addr = 0


class End(Event):
    """The last frame of a stream (``end``): ``LIVE_ENDED``, ``TOKEN_EXPIRED``, ``RECONNECT``, …"""

    __slots__ = ("reason", "is_live_ended")
    NAME = "end"
    WIRE = {"reason": "reason"}
    _fields = ("id", "reason")
    __match_args__ = ("reason",)
    reason: str
    is_live_ended: bool

    def __init__(self, id: str | None, reason: str, is_live_ended: bool | None = None) -> None:
        self.id, self.reason = id, reason
        self.is_live_ended = reason == "LIVE_ENDED" if is_live_ended is None else is_live_ended
        self._src = None
        self._gen = 0
        self._addr = 0


class OtherEvent(Event):
    """An event kind newer than this package; ``data`` is the core's canonical JSON object."""

    __slots__ = ("event_name", "data")
    _fields = ("id", "event_name", "data")
    __match_args__ = ("event_name",)
    event_name: str
    data: Any

    def __init__(self, id: str | None, event_name: str, data: Any) -> None:
        self.id, self.event_name, self.data = id, event_name, data
        self._src = None
        self._gen = 0
        self._addr = 0

    @property
    def name(self) -> str:
        return self.event_name


class Heartbeat(Item):
    """The service's ``:heartbeat`` comment."""

    __slots__ = ()


class Comment(Item):
    """Any other SSE comment."""

    __slots__ = ("text",)
    _fields = ("text",)
    __match_args__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


class Retry(Item):
    """A ``retry:`` field (milliseconds)."""

    __slots__ = ("ms",)
    _fields = ("ms",)
    __match_args__ = ("ms",)

    def __init__(self, ms: int) -> None:
        self.ms = ms


class UnknownFrame(Item):
    """A frame whose event name this version does not know; ``data`` is its raw data."""

    __slots__ = ("event_name", "id", "data")
    _fields = ("event_name", "id", "data")
    __match_args__ = ("event_name", "data")

    def __init__(self, event_name: str | None, id: str | None, data: str | None) -> None:
        self.event_name, self.id, self.data = event_name, id, data


class FrameError(Item):
    """A frame that did not decode; the stream goes on.

    ``code``: ``invalid_json``, ``invalid_event``, ``frame_too_large``,
    ``incomplete_frame``; ``raw``: the frame's data.
    """

    __slots__ = ("code", "message", "event_name", "id", "raw")
    _fields = ("code", "message", "event_name", "id", "raw")
    __match_args__ = ("code",)

    def __init__(
        self, code: str, message: str, event_name: str | None, id: str | None, raw: str | None
    ) -> None:
        self.code, self.message, self.event_name, self.id, self.raw = code, message, event_name, id, raw
