"""The core's JSON forms (``core/src/json.rs``) into this package's values.

libonair hands out every item and action in one documented JSON form, described
by the JSON Schemas under ``schema/``; the readers are generated from them into
``onair._wire`` (``python/gen_wire.py``, run by ``scripts/regen-wire``). This
module names them for the rest of the package. Internal: the public values are
in ``events`` and ``actions``.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from ._wire import REPLY_KINDS, ReplyKind
from ._wire import ReplyCounters
from ._wire import read_action as action
from ._wire import read_event as event
from ._wire import read_frame_error as frame_error
from ._wire import read_item as item
from ._wire import read_items as items
from ._wire import read_problem as problem
from ._wire import read_request as request
from ._wire import read_stopped as stopped
from ._wire import read_tally as tally
from ._wire import read_user as user

__all__ = [
    "action", "event", "frame_error", "item", "items", "problem", "reply_counters", "request", "stopped",
    "tally", "user",
]

Json = dict[str, Any]


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
