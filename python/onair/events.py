"""Stream items: typed events (the spec's fields in snake_case) and the other SSE items.

Every event class has ``NAME`` (the SSE event name) and ``WIRE`` (each
attribute's wire name in the spec's JSON, e.g. ``"sent_time": "sentTime"``);
nullable wire fields are ``Optional``. Match them with ``match``::

    match item:
        case Chat(user_id=uid, message=text): ...
        case Donation(amount=amount): ...
        case End(reason="LIVE_ENDED"): ...

Items are immutable values. Inside, each is a tuple of its fields in the
order of ``RECORDS`` (the record libonair writes as CPython marshal data,
``onair_decoder_feed_marshal``): decoding a chunk is one ``marshal.loads``
and one ``tuple.__new__`` per item, all of it in C, and every attribute is
already its Python value (``str``, ``int``, ``bool``, ``float``, ``None``).
Do not rely on the tuple itself (its length or order): read attributes, or
``match`` on them.
"""

from __future__ import annotations

import importlib
import operator
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, ClassVar, Protocol


class _Source(Protocol):
    """What lends events to the kit: a ``Bot``, a ``Decoder(kit_views=True)`` (``_guard.Owner``)."""

    _gen: int

    @property
    def closed(self) -> bool: ...

    def _holding(self, what: str = ...) -> AbstractContextManager[int]: ...


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


_new = tuple.__new__


class Item(tuple):  # type: ignore[type-arg]
    """Anything the decoder takes from a stream (immutable; equal by its public fields)."""

    __slots__ = ()
    _fields: ClassVar[tuple[str, ...]] = ()
    _args: ClassVar[tuple[str, ...]] = ()

    def __repr__(self) -> str:
        args = ", ".join(f"{f}={getattr(self, f)!r}" for f in self._fields)
        return f"{type(self).__name__}({args})"

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return False
        return all(getattr(self, f) == getattr(other, f) for f in self._fields)

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash((type(self).__name__, *(getattr(self, f) for f in self._fields)))

    def __lt__(self, other: object) -> bool:
        return NotImplemented

    __le__ = __gt__ = __ge__ = __lt__

    def __bool__(self) -> bool:
        return True

    def __getnewargs__(self) -> tuple[Any, ...]:  # copy and pickle: the constructor's arguments
        return tuple(getattr(self, a) for a in self._args or self._fields)


class Event(Item):
    """A typed service event. ``id`` is the frame id (``<epochMillis>-<offset>``) or None.

    While it is current (in the loop body that received it: until the bot's next
    ``poll``, the decoder's next item), it can be given to the kit:
    ``Tally.record``, ``Audience.on_event``, ``Commands.match``,
    ``Milestones.on_event``. (Events of ``Decoder(kit_views=True)`` and of a
    ``Bot`` carry that link; the default ``Decoder``'s do not.) The kit call
    holds the source's lock while it reads the event, so another thread's
    ``poll`` cannot take it away mid-read.
    """

    # No __slots__: the link to the core's event (_src, _gen, _addr) is set
    # in the instance's __dict__ by the struct path only.
    NAME: ClassVar[str] = ""
    WIRE: ClassVar[dict[str, str]] = {}
    id: str | None
    _src: _Source | None = None
    _gen: int = 0
    _addr: int = 0

    @property
    def name(self) -> str:
        """The SSE event name (``"chat"``, ``"like"``, …)."""
        return self.NAME

    def __getstate__(self) -> None:
        """Copies and pickles are plain values: the link to the bot or decoder that
        lent the event (which cannot be copied) stays behind."""
        return None

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


_USER = {"user_id": "user.id", "nickname": "user.nickname"}


class Chat(Event):
    """A chat message (``chat``)."""

    NAME = "chat"
    WIRE = {**_USER, "is_dj": "isDj", "message": "message", "sent_time": "sentTime"}
    _fields = ("id", "user_id", "nickname", "is_dj", "message", "sent_time")
    __match_args__ = ("user_id", "nickname", "message")
    user_id: str
    nickname: str | None
    is_dj: bool
    message: str
    sent_time: str

    def __new__(
        cls,
        id: str | None,
        user_id: str,
        nickname: str | None,
        is_dj: bool,
        message: str,
        sent_time: str,
    ) -> Chat:
        return _new(cls, (id, user_id, nickname, is_dj, message, sent_time))


class Presence(Event):
    """A listener joined (``presence``); ``fan_rank`` and ``favorite_temperature`` are nullable."""

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

    def __new__(
        cls,
        id: str | None,
        user_id: str,
        nickname: str | None,
        type: str,
        fan_rank: int | None,
        is_manager: bool,
        favorite_temperature: float | None,
        time: str,
    ) -> Presence:
        return _new(cls, (id, user_id, nickname, type, fan_rank, is_manager, favorite_temperature, time))


class Like(Event):
    """Hearts (``like``): ``total_amount`` is what this event adds (tally this one)."""

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

    def __new__(
        cls,
        id: str | None,
        user_id: str,
        nickname: str | None,
        type: str,
        total_amount: int,
        amount: int,
        extra_amount: int,
        combo: int | None,
        time: str,
    ) -> Like:
        return _new(cls, (id, user_id, nickname, type, total_amount, amount, extra_amount, combo, time))

    @property
    def is_paid(self) -> bool:
        """Bought with the paid currency (``type == "PAID"``)."""
        return self.type == "PAID"


class Donation(Event):
    """A donation (``donation``); ``message`` is None when there is no note."""

    NAME = "donation"
    WIRE = {**_USER, "amount": "amount", "message": "message", "time": "time"}
    _fields = ("id", "user_id", "nickname", "amount", "message", "time")
    __match_args__ = ("user_id", "nickname", "amount")
    user_id: str
    nickname: str | None
    amount: int
    message: str | None
    time: str

    def __new__(
        cls,
        id: str | None,
        user_id: str,
        nickname: str | None,
        amount: int,
        message: str | None,
        time: str,
    ) -> Donation:
        return _new(cls, (id, user_id, nickname, amount, message, time))


class End(Event):
    """The last frame of a stream (``end``): ``LIVE_ENDED``, ``TOKEN_EXPIRED``, ``RECONNECT``, …"""

    NAME = "end"
    WIRE = {"reason": "reason"}
    _fields = ("id", "reason")
    _args = ("id", "reason", "is_live_ended")
    __match_args__ = ("reason",)
    reason: str
    is_live_ended: bool

    def __new__(cls, id: str | None, reason: str, is_live_ended: bool | None = None) -> End:
        live_ended = reason == "LIVE_ENDED" if is_live_ended is None else is_live_ended
        return _new(cls, (id, reason, live_ended))


class OtherEvent(Event):
    """An event kind newer than this package; ``data`` is the core's canonical JSON object."""

    _fields = ("id", "event_name", "data")
    __match_args__ = ("event_name",)
    event_name: str
    data: Any

    def __new__(cls, id: str | None, event_name: str, data: Any) -> OtherEvent:
        return _new(cls, (id, event_name, data))

    @property
    def name(self) -> str:
        return self.event_name


class Heartbeat(Item):
    """The service's ``:heartbeat`` comment."""

    __slots__ = ()

    def __new__(cls) -> Heartbeat:
        return _new(cls, ())


class Comment(Item):
    """Any other SSE comment."""

    __slots__ = ()
    _fields = ("text",)
    __match_args__ = ("text",)
    text: str

    def __new__(cls, text: str) -> Comment:
        return _new(cls, (text,))


class Retry(Item):
    """A ``retry:`` field (milliseconds)."""

    __slots__ = ()
    _fields = ("ms",)
    __match_args__ = ("ms",)
    ms: int

    def __new__(cls, ms: int) -> Retry:
        return _new(cls, (ms,))


class UnknownFrame(Item):
    """A frame whose event name this version does not know; ``data`` is its raw data."""

    __slots__ = ()
    _fields = ("event_name", "id", "data")
    __match_args__ = ("event_name", "data")
    event_name: str | None
    id: str | None
    data: str | None

    def __new__(cls, event_name: str | None, id: str | None, data: str | None) -> UnknownFrame:
        return _new(cls, (event_name, id, data))


class FrameError(Item):
    """A frame that did not decode; the stream goes on.

    ``code``: ``invalid_json``, ``invalid_event``, ``frame_too_large``,
    ``incomplete_frame``; ``raw``: the frame's data.
    """

    __slots__ = ()
    _fields = ("code", "message", "event_name", "id", "raw")
    __match_args__ = ("code",)
    code: str
    message: str
    event_name: str | None
    id: str | None
    raw: str | None

    def __new__(
        cls, code: str, message: str, event_name: str | None, id: str | None, raw: str | None
    ) -> FrameError:
        return _new(cls, (code, message, event_name, id, raw))


# ---- the records --------------------------------------------------------------------
#
# RECORDS is the one place this package writes the record layout (the field order
# per tag); it mirrors the table of the core's `onair::marshal` module docs, and each
# class's constructor above stores its values in this order (tests check both).

RECORDS: dict[str, tuple[type[Item], str]] = {
    "c": (Chat, "id user_id nickname is_dj message sent_time"),
    "p": (Presence, "id user_id nickname type fan_rank is_manager favorite_temperature time"),
    "l": (Like, "id user_id nickname type total_amount amount extra_amount combo time"),
    "d": (Donation, "id user_id nickname amount message time"),
    "e": (End, "id reason is_live_ended"),
    "h": (Heartbeat, ""),
    "m": (Comment, "text"),
    "r": (Retry, "ms"),
    "u": (UnknownFrame, "event_name id data"),
    "x": (FrameError, "code message event_name id raw"),
}
# Not a record of libonair's (the struct path's events of kinds newer than this package).
_OTHER_FIELDS = "id event_name data"

def _property_getter(index: int, doc: str) -> Any:
    return property(operator.itemgetter(index), doc=doc)


# namedtuple's C accessor (CPython); elsewhere a property over itemgetter.
try:
    _tuplegetter: Callable[[int, str], Any] = getattr(
        importlib.import_module("_collections"), "_tuplegetter", _property_getter
    )
except ImportError:  # pragma: no cover - another Python
    _tuplegetter = _property_getter


def _install(cls: type[Item], names: str) -> None:
    """Each attribute reads its place in the record."""
    for index, name in enumerate(names.split()):
        setattr(cls, name, _tuplegetter(index, f"{cls.__name__}.{name}"))


for _cls, _names in RECORDS.values():
    _install(_cls, _names)
_install(OtherEvent, _OTHER_FIELDS)
del _cls, _names
