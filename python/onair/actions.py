"""What the bot asks for and tells (``Bot.poll``, the driver's ``async for``), as
frozen dataclasses: one class per action of the core (``core/src/bot.rs``), built
from its JSON form (``core/src/json.rs``), fields in snake_case.

- the driver's work: ``Send``, ``OpenStream``, ``CloseStream``, ``TimedOut``, ``Wait``;
- stream events: ``Chat``, ``Presence``, ``Like``, ``Donation``, ``End``,
  ``OtherEvent`` themselves (``onair.events``);
- the configured kit: ``Command``, ``Arrival``, ``Milestone``, ``BroadcastEnded``
  (with its ``Tally``), ``PersistState``;
- answers and news: ``Done`` (its ``result``: ``Broadcast``, ``Listeners``,
  ``Fans``, ``ChatSent`` or ``Failed``), the notices (``Notice`` subclasses),
  ``PersistTokens``, ``Timer``, ``NeedsAuthorization``, ``Stopped``.

Secrets stay out of ``repr``: a request's header values and body, the token file.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Union

from .events import Chat, Donation, End, Event, FrameError, Like, Presence, User

Endpoint = Literal["token", "revoke", "live", "listeners", "fans", "events", "chat"]
Role = Literal["listener", "manager", "dj"]
ReplyKind = Literal["welcome", "welcome_back", "thanks", "milestone", "command"]
"""What a reply is for (``Bot.reply``, ``RepliesDropped``, ``ReplyCounters``): its
freshness, and whether replies of its kind waiting together go out as one message
(``welcome``, ``welcome_back``, ``thanks``; never ``milestone`` or ``command``)."""
REPLY_KINDS: tuple[ReplyKind, ...] = ("welcome", "welcome_back", "thanks", "milestone", "command")
Allowed = Literal["anyone", "managers", "dj"]
StopCode = Literal[
    "reauthorize", "reconsent", "join_forbidden", "invalid_client", "fix_request", "unexpected", "shut_down"
]
FailureCode = Literal[
    "problem", "quota_blocked", "invalid_body", "pager", "transport", "cancelled", "queue_full", "stopped"
]
ProblemKind = Literal[
    "ok", "malformed_request", "chat_empty", "chat_too_long", "unauthorized", "permission_missing",
    "chat_blocked", "join_forbidden", "not_on_air", "chat_rate_limited", "quota_per_second", "quota_daily",
    "server_error", "broadcast_server_error", "chat_server_error", "invalid_request",
    "unsupported_grant_type", "invalid_grant", "invalid_client", "unexpected",
]
Advice = Literal[
    "none", "fix_request", "refresh_token", "reconsent", "retry_soon", "stop", "wait_not_on_air",
    "retry_backoff", "retry_after", "reauthorize",
]


# ---- values inside actions ------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Problem:
    """A classified response (``onair explain``): what it was and what to do."""

    kind: ProblemKind
    advice: Advice
    status: int
    detail_code: str | None = None
    oauth_error: str | None = None
    retry_after_ms: int | None = None
    quota_scope: str | None = None
    recently_revoked: bool = False

    @property
    def is_ok(self) -> bool:
        return self.kind == "ok"


@dataclass(frozen=True, slots=True, repr=False)
class Request:
    """An HTTP request to send as it is. It may carry an ``Authorization`` header and a
    form with secrets: ``repr`` names the headers and hides their values and the body."""

    endpoint: Endpoint
    method: Literal["GET", "POST"]
    url: str
    headers: tuple[tuple[str, str], ...]
    body: bytes

    def __repr__(self) -> str:
        names = ", ".join(n for n, _ in self.headers)
        return (
            f"Request(endpoint={self.endpoint!r}, method={self.method!r}, url={self.url!r}, "
            f"headers=[{names}: <redacted>], body=<{len(self.body)} bytes redacted>)"
        )


@dataclass(frozen=True, slots=True)
class PersonTotals:
    """One person's totals in a broadcast (the DJ is kept out)."""

    nickname: str | None
    hearts: int
    paid_hearts: int
    donated: int
    donations: int
    joins: int
    chats: int


class People(Mapping[str, PersonTotals]):
    """A read-only mapping of person id to totals, in id order; hashable."""

    __slots__ = ("_d",)

    def __init__(self, people: Mapping[str, PersonTotals] | None = None) -> None:
        self._d: dict[str, PersonTotals] = dict(sorted((people or {}).items()))

    def __getitem__(self, key: str) -> PersonTotals:
        return self._d[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._d)

    def __len__(self) -> int:
        return len(self._d)

    def __hash__(self) -> int:
        return hash(tuple(self._d.items()))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, People):
            return self._d == other._d
        return NotImplemented

    def __repr__(self) -> str:
        return f"People({self._d!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (People, (self._d,))


@dataclass(frozen=True, slots=True)
class Tally:
    """A broadcast's totals by person: the shape of the emulator ledger's ``totals``.

    ``attendance`` is the number of people who joined."""

    hearts: int = 0
    donated: int = 0
    attendance: int = 0
    people: People = field(default_factory=People)

    def donors(self) -> list[tuple[str, PersonTotals]]:
        """Donors, highest total first (ties by id, so the order is stable)."""
        found = [(pid, p) for pid, p in self.people.items() if p.donated > 0]
        return sorted(found, key=lambda item: (-item[1].donated, item[0]))

    def to_dict(self) -> dict[str, Any]:
        """The core's JSON form (``TallyJson``): ``{"hearts","donated","attendance","people"}``."""
        return {
            "hearts": self.hearts,
            "donated": self.donated,
            "attendance": self.attendance,
            "people": {
                pid: {
                    "nickname": p.nickname,
                    "hearts": p.hearts,
                    "paidHearts": p.paid_hearts,
                    "donated": p.donated,
                    "donations": p.donations,
                    "joins": p.joins,
                    "chats": p.chats,
                }
                for pid, p in self.people.items()
            },
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, separators=(",", ":"))


# ---- the driver's work ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Send:
    """Send ``request``; report with ``Bot.on_response`` (or ``on_transport_error``).
    The bot keeps ``timeout_ms`` itself: give the client no shorter timeout."""

    request_id: int
    request: Request
    timeout_ms: int


@dataclass(frozen=True, slots=True)
class OpenStream:
    """Open ``request`` as a stream with no whole-body timeout (the bot's watchdog
    covers it); report with ``on_stream_open``, ``on_stream_bytes``, ``on_stream_closed``."""

    request_id: int
    request: Request


@dataclass(frozen=True, slots=True)
class CloseStream:
    """Close the connection ``request_id``: a stream, or, as the bot stops for good, a
    request whose answer it no longer wants (late reports for it are harmless)."""

    request_id: int


@dataclass(frozen=True, slots=True)
class TimedOut:
    """The bot gave up on request ``request_id`` (no report within its timeout): drop it."""

    request_id: int
    endpoint: Endpoint


@dataclass(frozen=True, slots=True)
class Wait:
    """Nothing to do until ``until_ms`` (unix ms) or until a report; ``None``: only a
    report moves the bot. Ends a drain."""

    until_ms: int | None


# ---- answers and news -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Broadcast:
    """``GET /v1/live`` (``Bot.fetch_broadcast``)."""

    live_id: int
    title: str
    started_at: str
    close_air_time: str
    listener_count: int
    total_listener_count: int
    welcome_message: str
    is_chat_frozen: bool
    categories: tuple[str, ...]
    tags: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Listener:
    id: str
    nickname: str


@dataclass(frozen=True, slots=True)
class Listeners:
    """Every page of ``GET /v1/live/listeners``, people deduplicated by id."""

    listeners: tuple[Listener, ...]


@dataclass(frozen=True, slots=True)
class Fan:
    id: str
    nickname: str
    rank: int
    coin_count: int | None


@dataclass(frozen=True, slots=True)
class Fans:
    """``GET /v1/live/fans``: the top donors present (``total_count``: the list's size)."""

    total_count: int
    fans: tuple[Fan, ...]


@dataclass(frozen=True, slots=True)
class ChatSent:
    """The service took the chat message (204)."""


@dataclass(frozen=True, slots=True)
class Stopped:
    """The bot has stopped; a person must act. Sticky: polling keeps returning it.

    ``code`` ``reauthorize`` (``resumes_with_new_consent``: ``authorize`` brings it
    back), ``reconsent`` (``missing`` permissions), ``join_forbidden``,
    ``invalid_client``, ``fix_request`` / ``unexpected`` (with the ``problem``),
    ``shut_down``. Ends a drain."""

    code: StopCode
    message: str
    reason: str | None = None
    missing: tuple[str, ...] = ()
    problem: Problem | None = None

    @property
    def resumes_with_new_consent(self) -> bool:
        return self.code == "reauthorize"


@dataclass(frozen=True, slots=True)
class Failed:
    """A call failed for good: ``failure`` says why; ``problem`` (the service's answer),
    ``until_ms`` (a daily quota's end), ``message`` or ``stop`` when it has one."""

    failure: FailureCode
    problem: Problem | None = None
    until_ms: int | None = None
    message: str | None = None
    stop: Stopped | None = None


CallResult = Union[Broadcast, Listeners, Fans, ChatSent, Failed]


@dataclass(frozen=True, slots=True)
class Done:
    """The answer to app call ``call_id`` (``send_chat``, ``say``, ``fetch_broadcast``, …)."""

    call_id: int
    result: CallResult

    @property
    def ok(self) -> bool:
        return not isinstance(self.result, Failed)


class Notice:
    """Worth a log line, needs no action (every notice class derives from it).

    Every notice carries ``message`` (its log line, as the core words it) and
    ``level`` (``"warn"``: something was lost, refused or cannot be reached;
    ``"info"``: the bot handling things as it should), so a notice of any kind
    is logged by printing its ``message`` at its ``level``."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class FrameSkipped(Notice):
    """A stream frame that did not decode was skipped."""

    error: FrameError
    message: str = field(default="", compare=False)
    level: str = field(default="info", compare=False)


@dataclass(frozen=True, slots=True)
class UnknownEvent(Notice):
    """A stream event this version of the core does not know."""

    event: str
    data: str
    message: str = field(default="", compare=False)
    level: str = field(default="info", compare=False)


@dataclass(frozen=True, slots=True)
class ProblemNotice(Notice):
    """An error response the bot is handling by itself (retry, refresh, reconnect)."""

    endpoint: Endpoint
    problem: Problem
    message: str = field(default="", compare=False)
    level: str = field(default="info", compare=False)


@dataclass(frozen=True, slots=True)
class CommandRefused(Notice):
    """Someone ran a configured command they may not run."""

    name: str
    user: User
    role: Role
    needed: Allowed
    message: str = field(default="", compare=False)
    level: str = field(default="info", compare=False)


@dataclass(frozen=True, slots=True)
class CallHeld(Notice):
    """A call made while the bot waits for consent: held until ``authorize``."""

    call_id: int
    message: str = field(default="", compare=False)
    level: str = field(default="info", compare=False)


@dataclass(frozen=True, slots=True)
class ReconnectStormBraked(Notice):
    """Connections keep ending with ``RECONNECT`` at once: the next waits until ``until_ms``."""

    until_ms: int
    message: str = field(default="", compare=False)
    level: str = field(default="info", compare=False)


@dataclass(frozen=True, slots=True)
class Unreachable(Notice):
    """The service could not be reached: the first failure at once, then at most one
    notice every 30 s while failures go on (the bot keeps retrying). ``endpoint`` and
    ``failure`` (``not_sent``, ``no_response``, ``timed_out``) are the latest
    failure's; ``failures`` failed requests since ``since_ms``."""

    endpoint: Endpoint
    failure: str
    failures: int
    since_ms: int
    message: str = field(default="", compare=False)
    level: str = field(default="warn", compare=False)


@dataclass(frozen=True, slots=True)
class Reachable(Notice):
    """The service answered again after ``Unreachable``."""

    failures: int
    since_ms: int
    message: str = field(default="", compare=False)
    level: str = field(default="info", compare=False)


@dataclass(frozen=True, slots=True)
class GaveUp(Notice):
    """``count`` app calls of ``endpoint`` given up on for ``reason`` (``cancelled``,
    ``quota_blocked``, ``refused``, ``queue_full``, ``transport``, ``invalid_answer``); each also has
    its ``Done``. The first at once, then at most one notice every 5 s per endpoint
    and reason."""

    endpoint: Endpoint
    reason: str
    count: int
    message: str = field(default="", compare=False)
    level: str = field(default="warn", compare=False)


@dataclass(frozen=True, slots=True)
class RepliesDropped(Notice):
    """``people`` replies of ``reply_kind`` (``welcome``, ``welcome_back``, ``thanks``,
    ``milestone``, ``command``) dropped, never sent, for ``reason`` (``stale``: not out
    within their freshness; ``ended``, ``refused``, ``given_up``, ``queue_full``,
    ``stopped``); one notice per kind and reason at a time."""

    reply_kind: str
    people: int
    reason: str
    message: str = field(default="", compare=False)
    level: str = field(default="warn", compare=False)


@dataclass(frozen=True, slots=True)
class ReplyCounters:
    """One reply kind's counters since the bot started (``Bot.reply_counters``):
    ``messages`` the service took, ``people`` named in them, ``merged`` (replies that
    went out in one message with others of their kind), ``dropped`` (never sent, any
    reason) and ``dropped_<reason>`` for each reason of ``RepliesDropped``."""

    messages: int = 0
    people: int = 0
    merged: int = 0
    dropped: int = 0
    dropped_stale: int = 0
    dropped_ended: int = 0
    dropped_refused: int = 0
    dropped_given_up: int = 0
    dropped_queue_full: int = 0
    dropped_stopped: int = 0


@dataclass(frozen=True, slots=True)
class DailyQuotaReached(Notice):
    """A daily quota blocks permission ``scope`` (``None``: every call of the app)
    until ``until_ms``; said once per block."""

    scope: str | None
    until_ms: int
    message: str = field(default="", compare=False)
    level: str = field(default="warn", compare=False)


@dataclass(frozen=True, slots=True)
class PersistTokens:
    """A new token pair is in force: save ``tokens`` (a secret, hidden from ``repr``)
    and give it back to ``Bot`` after a restart."""

    tokens: str = field(repr=False)
    generation: int = 0


@dataclass(frozen=True, slots=True)
class Timer:
    """App timer ``tag`` is due (``Bot.schedule``, ``Bot.every``, ``Bot.set_timer``)."""

    tag: str


@dataclass(frozen=True, slots=True)
class NeedsAuthorization:
    """No tokens: get a consent code from the DJ, then ``authorize(code, redirect_uri)``.
    Ends a drain."""


# ---- the configured kit -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Command:
    """A configured command run by someone allowed to; answer with ``say``."""

    name: str
    args: tuple[str, ...]
    rest: str
    user: User
    role: Role
    event: Chat


@dataclass(frozen=True, slots=True)
class Arrival:
    """Someone to greet: their ``first`` sign in this broadcast, or ``back`` after
    ``away_ms`` unseen. ``event``: their join, or their chat."""

    kind: Literal["first", "back"]
    away_ms: int | None
    user: User
    is_manager: bool
    live_id: int | None
    event: Event


@dataclass(frozen=True, slots=True)
class Milestone:
    """A configured milestone crossed: the broadcast's ``hearts`` (``event``: the
    ``Like``), or one person ``donated`` (``user``; ``event``: the ``Donation``)."""

    kind: Literal["hearts", "donated"]
    reached: int
    total: int
    user: User | None
    event: Like | Donation


@dataclass(frozen=True, slots=True)
class BroadcastEnded:
    """The broadcast is over: its final ``tally``. ``event``: the ``LIVE_ENDED`` frame,
    ``None`` when the end was inferred (another ``liveId``, not on air after a restart)."""

    live_id: int | None
    tally: Tally
    event: End | None


@dataclass(frozen=True, slots=True)
class PersistState:
    """The kit's memory changed: save ``state`` before acting on what follows, and give it
    back (``Bot(kit_state=…)``) after a restart: nobody greeted twice, no total lost."""

    state: str


@dataclass(frozen=True, slots=True)
class OtherAction:
    """An action newer than this package: its JSON form."""

    json: Any


Action = Union[
    Send, OpenStream, CloseStream, TimedOut, Wait,
    Chat, Presence, Like, Donation, End,
    Done, FrameSkipped, UnknownEvent, ProblemNotice, CommandRefused, CallHeld, ReconnectStormBraked,
    Unreachable, Reachable, GaveUp, RepliesDropped, DailyQuotaReached,
    PersistTokens, Timer, NeedsAuthorization, Stopped,
    Command, Arrival, Milestone, BroadcastEnded, PersistState, OtherAction,
]
"""Everything ``Bot.poll`` returns (an ``OtherEvent`` comes as itself too)."""


def ends_drain(action: object) -> bool:
    """Whether a drain ends here: ``Wait``, ``NeedsAuthorization``, ``Stopped``."""
    return isinstance(action, (Wait, NeedsAuthorization, Stopped))
