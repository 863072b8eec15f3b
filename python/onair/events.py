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
be shared between threads. The classes are generated from the wire form's JSON
Schema (``schema/item.json``) into ``onair._wire``; this module names them.
"""

from __future__ import annotations

from ._values import OtherEvent
from ._wire import FrameErrorCode
from ._wire import (
    EVENT_TYPES,
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
    Presence,
    PresenceType,
    Retry,
    UnknownFrame,
    User,
)

__all__ = [
    "EVENT_TYPES", "Chat", "Comment", "Donation", "End", "EndReason", "Event", "FrameError", "FrameErrorCode",
    "Heartbeat", "Item", "Like", "LikeType", "OtherEvent", "Presence", "PresenceType", "Retry", "UnknownFrame",
    "User",
]
