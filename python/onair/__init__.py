"""onair: bots for the live-broadcast bot API, over the onair sans-IO core (libonair).

Every rule of the service (tokens, the 401 rule, quotas, reconnects, chat limits,
SSE framing, the kit) lives in libonair, bundled in the wheel; this package gives
it Python values and an asyncio driver.

- ``onair.aio.Driver`` (also ``onair.Driver``): the ready-made driver over httpx;
  ``async for action in driver`` with ``match``, or handlers
  (``@bot.command("hello")``, ``@bot.on_arrival``, …) and ``onair.run(bot)``.
- ``Config`` (with the ``kit``), ``Bot``: the machine itself, for drivers that bring
  their own HTTP client (``examples/python/bare_loop.py``).
- values: the events (``Chat``, ``Presence``, ``Like``, ``Donation``, ``End``), the
  kit's actions (``Command``, ``Arrival``, ``Milestone``, ``BroadcastEnded``,
  ``PersistState``) and every other action, frozen dataclasses.
- stores: ``FileStore`` (0600, atomic), ``MemoryStore``, ``CallbackStore``.
- ``Decoder``: stream bytes in, typed items out.
- helpers: ``split_chat``, ``truncate``, ``utf16_len``; ``classify``, ``explain``,
  ``parse_quota``, ``retry_after_ms``, ``Backoff``.
- errors: ``OnairError`` (``kind``, ``advice``) and its subclasses (``StoreError``:
  a token file or kit state that does not load, named), ``ClosedError``,
  ``ReentrantCallError``.

Threads: any thread may call any object at any time (objects that own a libonair
handle serialize their calls; values are immutable; the driver's commands wake
its loop from any thread).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import _ffi
from .actions import (
    Action,
    Allowed,
    Arrival,
    Broadcast,
    BroadcastEnded,
    CallHeld,
    CallResult,
    ChatSent,
    CloseStream,
    Command,
    CommandRefused,
    DailyQuotaReached,
    Done,
    Endpoint,
    Failed,
    Fan,
    Fans,
    FrameSkipped,
    GaveUp,
    Listener,
    Listeners,
    Milestone,
    NeedsAuthorization,
    Notice,
    OpenStream,
    OtherAction,
    People,
    PersistState,
    PersistTokens,
    PersonTotals,
    Problem,
    ProblemNotice,
    Reachable,
    RepliesDropped,
    ReplyCounters,
    ReplyKind,
    ReconnectStormBraked,
    Request,
    Role,
    Send,
    StopCode,
    Stopped,
    Tally,
    Timer,
    UnknownEvent,
    Unreachable,
    Wait,
    ends_drain,
)
from .bot import Bot, Config, DailyQuota, Kit, QuotaBlock, now_ms
from .decisions import Backoff, Quota, classify, explain, parse_quota, retry_after_ms
from .decoder import Decoder
from .errors import (
    ChatRejected,
    ClosedError,
    InvalidConfig,
    KitConfigError,
    MisuseError,
    OnairError,
    ReentrantCallError,
    StoreError,
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
from .stores import CallbackStore, FileStore, MemoryStore, Store
from .text import split_chat, truncate, utf16_len

if TYPE_CHECKING:
    from .aio import Driver, StoreFailed

__version__ = "0.1.0"


def library_version() -> str:
    """libonair's version (``onair_version()``)."""
    return bytes(_ffi.lib.onair_version()).decode()


def abi_version() -> int:
    """libonair's C ABI version."""
    return int(_ffi.lib.onair_abi_version())


def run(driver: Driver, *, signals: bool = True) -> Stopped | None:
    """Runs ``driver`` with its handlers until the bot stops, blocking: for a script.
    Ctrl-C or SIGTERM shuts it down cleanly (no revoke). See ``onair.aio``."""
    from .aio import run as run_

    return run_(driver, signals=signals)


def __getattr__(name: str) -> Any:
    # The driver imports httpx (~0.1 s): only when it is asked for.
    if name in ("Driver", "StoreFailed"):
        from . import aio

        return getattr(aio, name)
    raise AttributeError(f"module 'onair' has no attribute {name!r}")


__all__ = [
    "Action", "Allowed", "Arrival", "Backoff", "Bot", "Broadcast", "BroadcastEnded", "CallHeld",
    "CallResult", "CallbackStore", "Chat", "ChatRejected", "ChatSent", "CloseStream", "ClosedError",
    "Command", "CommandRefused", "Comment", "Config", "DailyQuota", "DailyQuotaReached", "Decoder", "Done",
    "Donation", "Driver", "End", "EndReason", "Endpoint", "Event", "Failed", "Fan", "Fans",
    "FileStore", "FrameError", "FrameSkipped", "GaveUp", "Heartbeat", "InvalidConfig", "Item",
    "Kit", "KitConfigError", "Like", "LikeType", "Listener", "Listeners", "MemoryStore",
    "Milestone", "MisuseError", "NeedsAuthorization", "Notice", "OnairError", "OpenStream",
    "OtherAction", "OtherEvent", "People", "PersistState", "PersistTokens", "PersonTotals",
    "Presence", "PresenceType", "Problem", "ProblemNotice", "Quota", "QuotaBlock", "Reachable", "RepliesDropped",
    "ReplyCounters", "ReplyKind", "ReconnectStormBraked", "ReentrantCallError", "Request", "Retry", "Role", "Send", "StopCode",
    "Stopped", "Store", "StoreError", "StoreFailed", "Tally", "Timer", "UnknownEvent", "UnknownFrame",
    "Unreachable", "User", "Wait", "abi_version", "classify", "ends_drain", "explain",
    "library_version", "now_ms", "parse_quota", "retry_after_ms", "run", "split_chat", "truncate",
    "utf16_len",
]
