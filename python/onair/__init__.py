"""onair: bots for the live-broadcast bot API, over the onair sans-IO core (libonair).

The package is a thin ctypes layer: every rule of the service (tokens, the 401
rule, quotas, reconnects, chat limits, SSE framing and event decoding) lives in
libonair, which ``pip install`` builds and bundles. Parts:

- ``Decoder``: stream bytes in, typed items out (``Chat``, ``Like``, …).
- ``Bot``: the machine a driver polls; ``poll()`` returns typed actions to ``match``.
- the kit: ``split_chat``, ``Commands``, ``Audience``, ``Milestones``, ``Timers``, ``Tally``.
- decisions: ``classify``, ``explain``, ``parse_quota``, ``Backoff``.
- errors: ``OnairError`` (with ``kind`` and ``advice``) and its subclasses;
  ``ClosedError`` (a closed object), ``ReentrantCallError`` (a signal handler
  calling into the object it interrupted).

Threads: any thread may call any object at any time; each object runs its
calls one at a time under its own lock (``_guard``). Objects that own a
libonair handle cannot be copied or pickled; values (events, actions) can.
"""

from __future__ import annotations

from . import _ffi
from .bot import (
    Action,
    AnyAction,
    Bot,
    CloseStream,
    Config,
    Done,
    EventAction,
    NeedsAuthorization,
    Notice,
    OpenStream,
    OtherAction,
    PersistTokens,
    Request,
    Send,
    Stopped,
    TimedOut,
    Timer,
    Wait,
    now_ms,
)
from .decoder import Decoder
from .errors import (
    ChatRejected,
    ClosedError,
    InvalidConfig,
    MisuseError,
    OnairError,
    ReentrantCallError,
    StaleEventError,
)
from .events import (
    Chat,
    Comment,
    Donation,
    End,
    Event,
    FrameError,
    Heartbeat,
    Item,
    Like,
    OtherEvent,
    Presence,
    Retry,
    UnknownFrame,
)
from .kit import (
    Audience,
    Backoff,
    Commands,
    Greeting,
    Invocation,
    MilestoneReached,
    Milestones,
    Problem,
    Quota,
    Tally,
    Timers,
    classify,
    explain,
    parse_quota,
    retry_after_ms,
    split_chat,
    truncate,
    utf16_len,
)

__version__ = "0.1.0"


def library_version() -> str:
    """libonair's version (``onair_version()``)."""
    return bytes(_ffi.lib.onair_version()).decode()


def abi_version() -> int:
    """libonair's C ABI version."""
    return int(_ffi.lib.onair_abi_version())


__all__ = [
    "Action", "AnyAction", "Audience", "Backoff", "Bot", "Chat", "ChatRejected",
    "ClosedError", "CloseStream", "Commands", "Comment", "Config", "Decoder", "Donation", "Done", "End", "Event",
    "EventAction", "FrameError", "Greeting", "Heartbeat", "InvalidConfig", "Invocation", "Item",
    "Like", "MilestoneReached", "Milestones", "MisuseError", "NeedsAuthorization", "Notice",
    "OnairError", "OpenStream", "OtherAction", "OtherEvent", "PersistTokens", "Presence",
    "Problem", "Quota", "ReentrantCallError", "Request", "Retry", "Send", "StaleEventError", "Stopped",
    "Tally", "TimedOut", "Timer", "Timers", "UnknownFrame", "Wait", "abi_version", "classify", "explain",
    "library_version", "now_ms", "parse_quota", "retry_after_ms", "split_chat", "truncate",
    "utf16_len",
]
