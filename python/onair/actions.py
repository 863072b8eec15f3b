"""What the bot asks for and tells (``Bot.poll``, the driver's ``async for``), as
frozen dataclasses: one class per action of the core (``core/src/bot.rs``), built
from its JSON form (``core/src/json.rs``), fields in snake_case.

- the driver's work: ``Send``, ``OpenStream``, ``CloseStream`` (with its ``reason``), ``Wait``;
- stream events: ``Chat``, ``Presence``, ``Like``, ``Donation``, ``End``,
  ``OtherEvent`` themselves (``onair.events``);
- the configured kit: ``Command``, ``Arrival``, ``Milestone``, ``BroadcastEnded``
  (with its ``Tally``), ``PersistState``;
- answers and news: ``Done`` (its ``result``: ``Broadcast``, ``Listeners``,
  ``Fans``, ``ChatSent`` or ``Failed``), the notices (``Notice`` subclasses),
  ``PersistTokens``, ``Timer``, ``NeedsAuthorization``, ``Stopped``.

Secrets stay out of ``repr``: a request's header values and body, the token file.

The classes are generated from the wire form's JSON Schema (``schema/action.json``)
into ``onair._wire``; this module names them.
"""

from __future__ import annotations

from ._values import (
    Notice as Notice,
    OtherAction as OtherAction,
    People as People,
)
from ._wire import *  # noqa: F403 (every value class, generated)
from ._wire import (
    REPLY_KINDS as REPLY_KINDS,
    Allowed as Allowed,
    Endpoint as Endpoint,
    FailureCode as FailureCode,
    NeedsAuthorization,
    ReplyKind as ReplyKind,
    Role as Role,
    Stopped,
    StopCode as StopCode,
    Wait,
)


def ends_drain(action: object) -> bool:
    """Whether a drain ends here: ``Wait``, ``NeedsAuthorization``, ``Stopped``."""
    return isinstance(action, (Wait, NeedsAuthorization, Stopped))

