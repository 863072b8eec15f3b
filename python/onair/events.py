"""Stream events and the other SSE items, as frozen dataclasses.

Each event has the spec's fields in snake_case (``sentTime`` → ``sent_time``),
``user`` as a ``User``, nullable fields ``Optional``, and ``id``: the frame's
id (``<epochMillis>-<offset>``) or ``None``. Kinds the spec enumerates are
``str`` enums (``LikeType.PAID == "PAID"``); a value newer than this package is
kept as the plain string, never an error::

    match event:
        case Chat(user, message=text) if text.startswith("!"): ...
        case Like(type=LikeType.PAID, total_amount=n): ...
        case End(reason=EndReason.LIVE_ENDED): ...

Values are immutable, compare by their fields, hash, copy and pickle, and may
be shared between threads.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any, ClassVar, Literal, Union


class _Kind(str, Enum):
    """A ``str`` enum whose ``str()`` and format are its value."""

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)

    def __repr__(self) -> str:
        return f"{type(self).__name__}.{self.name}"


class PresenceType(_Kind):
    """``presence.type``: the spec sends only ``JOIN``."""

    JOIN = "JOIN"


class LikeType(_Kind):
    """``like.type``: ``PAID`` (bought with the paid currency) or ``FREE``."""

    FREE = "FREE"
    PAID = "PAID"


class EndReason(_Kind):
    """``end.reason``."""

    LIVE_ENDED = "LIVE_ENDED"
    TOKEN_EXPIRED = "TOKEN_EXPIRED"
    RECONNECT = "RECONNECT"


@dataclass(frozen=True, slots=True)
class User:
    """Who did it: ``id`` (the key for a person, scoped to bot and DJ) and
    ``nickname`` (``None`` when missing, never empty)."""

    id: str
    nickname: str | None


@dataclass(frozen=True, slots=True)
class Chat:
    """A chat message (``chat``)."""

    NAME: ClassVar[str] = "chat"
    user: User
    is_dj: bool
    message: str
    sent_time: str
    id: str | None = None


@dataclass(frozen=True, slots=True)
class Presence:
    """A listener joined (``presence``)."""

    NAME: ClassVar[str] = "presence"
    user: User
    type: PresenceType | str
    fan_rank: int | None
    is_manager: bool
    favorite_temperature: float | None
    time: str
    id: str | None = None


@dataclass(frozen=True, slots=True)
class Like:
    """Hearts (``like``): ``total_amount`` is what this event adds to the broadcast."""

    NAME: ClassVar[str] = "like"
    user: User
    type: LikeType | str
    total_amount: int
    amount: int
    extra_amount: int
    combo: int | None
    time: str
    id: str | None = None

    @property
    def is_paid(self) -> bool:
        """Bought with the paid currency (``type == "PAID"``)."""
        return self.type == LikeType.PAID


@dataclass(frozen=True, slots=True)
class Donation:
    """A donation (``donation``): ``amount`` in currency units; ``message`` None without a note."""

    NAME: ClassVar[str] = "donation"
    user: User
    amount: int
    message: str | None
    time: str
    id: str | None = None


@dataclass(frozen=True, slots=True)
class End:
    """The last frame of a stream connection (``end``)."""

    NAME: ClassVar[str] = "end"
    reason: EndReason | str
    id: str | None = None

    @property
    def is_live_ended(self) -> bool:
        """The broadcast is over (``LIVE_ENDED``)."""
        return self.reason == EndReason.LIVE_ENDED


@dataclass(frozen=True, slots=True)
class OtherEvent:
    """An event kind newer than this package: its name and the core's JSON payload."""

    name: str
    data: Any
    id: str | None = None


Event = Union[Chat, Presence, Like, Donation, End, OtherEvent]
"""A typed service event."""

EVENT_TYPES: tuple[type, ...] = (Chat, Presence, Like, Donation, End, OtherEvent)


@dataclass(frozen=True, slots=True)
class Heartbeat:
    """The service's ``:heartbeat`` comment."""


@dataclass(frozen=True, slots=True)
class Comment:
    """Any other SSE comment."""

    text: str


@dataclass(frozen=True, slots=True)
class Retry:
    """A ``retry:`` field (milliseconds)."""

    ms: int


@dataclass(frozen=True, slots=True)
class UnknownFrame:
    """A frame whose event name this version of the core does not know; ``data`` raw."""

    event: str
    data: str
    id: str | None = None


FrameErrorCode = Literal["invalid_json", "invalid_event", "frame_too_large", "incomplete_frame"]


@dataclass(frozen=True, slots=True)
class FrameError:
    """A frame that did not decode (the stream goes on): its code, why, and its raw data."""

    code: FrameErrorCode
    message: str
    event: str | None
    id: str | None
    raw: str


Item = Union[Chat, Presence, Like, Donation, End, OtherEvent, Heartbeat, Comment, Retry, UnknownFrame, FrameError]
"""Anything the decoder takes from a stream."""
