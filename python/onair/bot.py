"""The bot machine for drivers that bring their own HTTP client (``onair.aio`` is the
ready-made one): poll typed actions, do what they say, report back.

::

    bot = onair.Bot(onair.Config(base_url, client_id, secret, kit={...}), tokens)
    while True:
        match bot.poll():
            case onair.Send(rid, request):       ...  # send it; bot.on_response(rid, …)
            case onair.OpenStream(rid, request): ...  # stream it; on_stream_open/_bytes/_closed
            case onair.CloseStream(rid):         ...
            case onair.Command(name="hello", user=user): bot.say(f"Hello, {user.nickname}!")
            case onair.PersistTokens(tokens):    ...  # save (a secret)
            case onair.PersistState(state):      ...  # save, before acting on what follows
            case onair.NeedsAuthorization():     bot.authorize(code, redirect_uri)
            case onair.Wait(until_ms):           ...  # sleep until then, or until I/O
            case onair.Stopped(code, message):   break

After any report or command, poll until an action that ends the drain (``Wait``,
``NeedsAuthorization``, ``Stopped``); only then sleep. Every rule (tokens, the 401
rule, quotas, reconnects, chat limits, the kit) is the core's.
"""

from __future__ import annotations

import ctypes
import json
import secrets
import time
from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass, field
from typing import Any

from . import _ffi, _json
from ._guard import Owner, locked, locked_or
from .actions import REPLY_KINDS, Action, ReplyCounters, ReplyKind, Stopped, Tally
from .errors import KitConfigError, error
from .events import OtherEvent, User

_lib = _ffi.lib
_MASK64 = (1 << 64) - 1


def now_ms() -> int:
    """Wall-clock unix milliseconds (the core's time unit)."""
    return time.time_ns() // 1_000_000


def _b(text: str | bytes) -> bytes:
    return text.encode("utf-8") if isinstance(text, str) else bytes(text)


def _check(code: int) -> None:
    if code:
        raise error(code)


@dataclass(frozen=True, slots=True)
class Config:
    """How a bot is set up: the service, the app's credentials, the kit, the tunables.

    A plain value: checked when made (``InvalidConfig``; ``KitConfigError`` names the
    kit's key), shared freely between threads; the secret never appears in ``repr``.

    ``kit``: the configured kit, as a mapping or its JSON text (kept as its JSON
    text): ``{"prefix": "!", "commands": [{"name": "hello", "aliases": [...],
    "allowed": "anyone|managers|dj", "cooldown_ms": N}], "ignore": [ids],
    "greetings": {"first": true, "welcome_back_after_ms": N}, "milestones":
    {"hearts_every": N, "donations_every": N}, "tally": true, "replies": {"welcome":
    "Welcome, {nickname}! 🎧", "thanks": "…", "commands": {"top": "Top donors: {top}"},
    "fresh_ms": {"welcome": 60000}, …}}`` — every key optional. With ``replies``
    (``{}``: the default texts) the bot greets, thanks, calls milestones and answers
    those commands by itself, merging replies of one kind when chat is behind.

    ``shutdown_grace_ms`` (default 30 000): how long a bot stopping for good waits for
    a token request or the revocation still in flight before it says ``Stopped``;
    every other request is dropped at once.

    ``check_credentials`` (default true): a bot started with saved tokens first checks
    the app's credentials (one ``POST /v1/oauth/revoke`` of the token
    ``onair-credentials-check``), so a wrong client secret stops it with
    ``invalid_client`` at start rather than at its first refresh, up to an hour later.
    """

    base_url: str
    client_id: str
    client_secret: str = field(repr=False)
    _: KW_ONLY
    kit: str | Mapping[str, Any] | None = None
    events: bool = True
    request_timeout_ms: int | None = None
    max_attempts: int | None = None
    max_queued_calls: int | None = None
    watchdog_ms: int | None = None
    connect_timeout_ms: int | None = None
    refresh_margin_ms: int | None = None
    shutdown_grace_ms: int | None = None
    check_credentials: bool = True

    def __post_init__(self) -> None:
        if self.kit is not None and not isinstance(self.kit, str):
            object.__setattr__(self, "kit", json.dumps(self.kit, ensure_ascii=False))
        _lib.onair_bot_config_free(self._handle())  # checks everything once

    def kit_config(self) -> dict[str, Any]:
        """The kit configuration as a dict (empty: no kit)."""
        kit = self.kit
        return dict(json.loads(kit)) if isinstance(kit, str) else dict(kit or {})

    def _handle(self) -> int:
        """A new ``onair_bot_config`` with every setting (the caller frees it)."""
        h = ctypes.c_void_p()
        u, i, s = _b(self.base_url), _b(self.client_id), _b(self.client_secret)
        code = _lib.onair_bot_config_new(u, len(u), i, len(i), s, len(s), ctypes.byref(h))
        if code:
            raise error(code)
        handle = h.value
        assert handle is not None
        try:
            _check(_lib.onair_bot_config_set_events(handle, self.events))
            _check(_lib.onair_bot_config_set_check_credentials(handle, self.check_credentials))
            for name in (
                "request_timeout_ms", "max_attempts", "max_queued_calls", "watchdog_ms",
                "connect_timeout_ms", "refresh_margin_ms", "shutdown_grace_ms",
            ):
                value = getattr(self, name)
                if value is not None:
                    _check(getattr(_lib, f"onair_bot_config_set_{name}")(handle, value))
            if self.kit is not None:
                _set_kit(handle, _b(self.kit))  # type: ignore[arg-type]
        except BaseException:
            _lib.onair_bot_config_free(handle)
            raise
        return handle


def _config_error(handle: int) -> str:
    """The config's last refusal (``onair_bot_config_last_error``): no secret in it."""
    p, n = ctypes.c_void_p(), ctypes.c_size_t()
    if _lib.onair_bot_config_last_error(handle, ctypes.byref(p), ctypes.byref(n)):
        return ""
    return _ffi.string_at(p, n).decode("utf-8", "replace")


def _set_kit(handle: int, text: bytes) -> None:
    code = _lib.onair_bot_config_set_kit_json(handle, text, len(text))
    if code:
        # "kit config: <key>: <message>" (a key never holds ": ")
        detail = _config_error(handle).removeprefix("kit config: ")
        key, _, message = detail.partition(": ")
        if not message:
            key, message = "", detail
        raise KitConfigError(code, key, message)


@dataclass(frozen=True, slots=True)
class QuotaBlock:
    """A daily-quota block: calls needing ``scope`` (a permission such as
    ``"listeners.read"``; ``None``: every call of the app) wait until ``until_ms``."""

    scope: str | None
    until_ms: int


@dataclass(frozen=True, slots=True)
class DailyQuota:
    """The app's daily quota as one bot knows it (``Bot.daily_quota``): calls left
    today and the next reset (unix ms; ``None`` when unknown), and the daily blocks in
    force. The service counts it for the whole app, so an app running many bots in one
    process keeps one view, ``app = app.merge(bot.daily_quota())`` for each bot, and
    gives it to each with ``bot.share_daily_quota(app)``: the core's merge, as
    ``onair host`` keeps it. ``to_json()`` is the form a shared store keeps."""

    remaining: int | None = None
    reset_ms: int | None = None
    blocks: tuple[QuotaBlock, ...] = ()

    def merge(self, learned: DailyQuota, now: int | None = None) -> DailyQuota:
        """This view with what a bot ``learned`` folded in at ``now`` (unix ms;
        default: the clock): the later reset wins with its count, the same reset keeps
        the lower count, blocks merge by scope (the later end wins), what has passed is
        dropped. The result differs from ``self`` when it changed."""
        return _merged(self.to_json(), learned.to_json(), now_ms() if now is None else now)

    def to_json(self) -> str:
        """``{"remaining":…,"resetMs":…,"blocks":[{"scope":…,"untilMs":…}]}``."""
        blocks = [{"scope": b.scope, "untilMs": b.until_ms} for b in self.blocks]
        return json.dumps(
            {"remaining": self.remaining, "resetMs": self.reset_ms, "blocks": blocks}, separators=(",", ":")
        )

    @classmethod
    def from_json(cls, text: str | bytes) -> DailyQuota:
        """A view from its JSON form (``to_json``'s, or ``onair host``'s store's),
        checked by the core; anything else raises ``OnairError`` (invalid_argument)."""
        return _merged(text, b"", 0)


def _merged(app: str | bytes, learned: str | bytes, now: int) -> DailyQuota:
    """``onair_daily_quota_merge`` of two JSON forms, read back."""
    a, lj = _b(app), _b(learned)
    p, n = ctypes.c_void_p(), ctypes.c_size_t()
    _check(_lib.onair_daily_quota_merge(a, len(a), lj, len(lj), now & _MASK64, ctypes.byref(p), ctypes.byref(n), None))
    return _daily_quota(json.loads(_ffi.take_owned(p, n)))


def _daily_quota(j: Any) -> DailyQuota:
    blocks = tuple(QuotaBlock(b.get("scope"), b["untilMs"]) for b in j.get("blocks", ()))
    return DailyQuota(j.get("remaining"), j.get("resetMs"), blocks)


@dataclass(frozen=True, slots=True)
class Kit:
    """The configured kit now (``Bot.kit()``): the current broadcast's ``live_id``,
    when known, and its running ``tally``."""

    live_id: int | None
    tally: Tally


def _read_action(text: bytes) -> Action | OtherEvent:
    """An action's JSON form as its value (a seam the signal tests hook)."""
    return _json.action(json.loads(text))


class Bot(Owner):
    """The bot machine over libonair (``onair_bot``).

    ``tokens``: the token file a ``PersistTokens`` gave earlier, or None (the bot
    then asks for authorization). ``seed`` fixes every jitter (default: random).
    ``kit_state``: what the last ``PersistState`` gave, so a restart greets nobody
    twice and loses no total. ``now`` arguments are unix ms (default: the wall clock).

    Threads: any thread may call any method at any time (a web handler calling
    ``say`` while the loop polls); calls run one at a time under the bot's lock. In a
    signal handler call only ``shutdown()`` or ``close()``: if the signal interrupted
    a call on this bot, they are applied when that call returns; anything else raises
    ``ReentrantCallError`` there. A bot cannot be copied or pickled.
    """

    _free = _lib.onair_bot_free

    def __init__(
        self,
        config: Config,
        tokens: str | bytes | None = None,
        seed: int | None = None,
        *,
        kit_state: str | bytes | None = None,
    ) -> None:
        if seed is None:
            seed = secrets.randbits(64)
        tok = _b(tokens) if tokens is not None else None
        state = _b(kit_state) if kit_state is not None else None
        ch = config._handle()
        h = ctypes.c_void_p()
        try:
            code = _lib.onair_bot_new(
                ch, tok, len(tok) if tok else 0, state, len(state) if state else 0, seed & _MASK64, ctypes.byref(h)
            )
            detail = _config_error(ch) if code else ""
        finally:
            _lib.onair_bot_config_free(ch)
        if code:
            raise error(code, detail)  # InvalidConfig for the tokens; invalid_state, kit_state_too_new
        self._h = h.value
        self._action = ctypes.create_string_buffer(_ffi.ACTION_BYTES)
        self._p = ctypes.c_void_p()
        self._n = ctypes.c_size_t()
        self._pn = (ctypes.byref(self._p), ctypes.byref(self._n))

    # -- plumbing (the caller holds the lock)
    def _check(self, code: int) -> None:
        if code:
            raise error(code, self._last_error())

    def _last_error(self) -> str:
        p, n = ctypes.c_void_p(), ctypes.c_size_t()
        if _lib.onair_bot_last_error(self._h, ctypes.byref(p), ctypes.byref(n)):
            return ""
        return _ffi.string_at(p, n).decode("utf-8", "replace")

    def _json_now(self, fn: Any, *args: Any) -> bytes:
        self._check(fn(self._h, *args, *self._pn))
        return _ffi.string_at(self._p, self._n)

    def _request(self, request: str, h: int) -> None:
        # A recorded shutdown (see _guard); libonair answers only ONAIR_OK here.
        _lib.onair_bot_shutdown(h, request == _SHUTDOWN_REVOKE)

    @locked_or("")
    def last_error(self) -> str:
        """The detail of the last error this bot returned (a line for logs; no secret)."""
        return self._last_error()

    # -- poll
    @locked
    def poll(self, now: int | None = None) -> Action | OtherEvent:
        """The next thing to do. After any report or command, poll until ``Wait``,
        ``NeedsAuthorization`` or ``Stopped``."""
        self._check(_lib.onair_bot_poll(self._h, now_ms() if now is None else now, self._action))
        return _read_action(self._json_now(_lib.onair_bot_action_json))

    @locked
    def action_json(self) -> Any:
        """The core's JSON form of the action last polled, as a dict (a ``send``'s holds
        secrets: do not log it)."""
        return json.loads(self._json_now(_lib.onair_bot_action_json))

    # -- reports
    @locked
    def on_response(
        self, request_id: int, status: int, headers: _ffi.Headers, body: bytes, now: int | None = None
    ) -> None:
        """The whole response to ``Send`` ``request_id``. Then poll."""
        arr, n = _ffi.headers_array(headers)
        when = now_ms() if now is None else now
        self._check(_lib.onair_bot_on_response(self._h, request_id, status, arr, n, body, len(body), when))

    @locked
    def on_transport_error(self, request_id: int, now: int | None = None) -> None:
        """Request ``request_id`` got no response after it may have been sent (a reset, a
        read timeout): the outcome is unknown, so a consent code counts as spent and a chat
        message is not sent again. Then poll. For a request that never left, ``on_not_sent``."""
        self._check(_lib.onair_bot_on_transport_error(self._h, request_id, now_ms() if now is None else now))

    @locked
    def on_not_sent(self, request_id: int, now: int | None = None) -> None:
        """Request ``request_id`` never left this machine (connection refused, DNS, TLS,
        connect timeout; httpx ``ConnectError``/``ConnectTimeout``): nothing was spent, so a
        consent code's exchange goes again while the code is fresh, a chat message may be
        sent again, and a stream open is a failed connect. Then poll."""
        self._check(_lib.onair_bot_on_not_sent(self._h, request_id, now_ms() if now is None else now))

    @locked
    def on_stream_open(self, request_id: int, status: int, headers: _ffi.Headers, now: int | None = None) -> None:
        """The stream's status line and headers. Then poll."""
        arr, n = _ffi.headers_array(headers)
        when = now_ms() if now is None else now
        self._check(_lib.onair_bot_on_stream_open(self._h, request_id, status, arr, n, when))

    @locked
    def on_stream_bytes(self, request_id: int, chunk: bytes, now: int | None = None) -> None:
        """A chunk of the open stream's body, split anywhere. Then poll."""
        when = now_ms() if now is None else now
        self._check(_lib.onair_bot_on_stream_bytes(self._h, request_id, chunk, len(chunk), when))

    @locked
    def on_stream_closed(self, request_id: int, now: int | None = None) -> None:
        """The stream connection ended (end of body or a network error). Then poll."""
        self._check(_lib.onair_bot_on_stream_closed(self._h, request_id, now_ms() if now is None else now))

    # -- commands
    @locked
    def authorize(self, code: str, redirect_uri: str) -> None:
        """The DJ's consent code and the redirect URI it was issued for."""
        c, u = _b(code), _b(redirect_uri)
        self._check(_lib.onair_bot_authorize(self._h, c, len(c), u, len(u)))

    def _call(self, fn: Any, *args: Any) -> int:
        out = ctypes.c_uint64()
        self._check(fn(self._h, *args, ctypes.byref(out)))
        return int(out.value)

    @locked
    def send_chat(self, message: str) -> int:
        """Queues one chat message (not blank, at most 200 UTF-16 units); its call id.

        ``ChatRejected`` when the service would refuse it (nothing queued); a full
        queue or a stopped bot is answered by the call's ``Done``. ``say`` splits."""
        m = _b(message)
        return self._call(_lib.onair_bot_send_chat, m, len(m))

    @locked
    def say(self, text: str) -> list[int]:
        """Queues a reply of any length: split between grapheme clusters into messages
        the service takes, each queued as ``send_chat`` does; the call ids, each
        answered by its ``Done`` (none for a blank text). The core's ``Bot::say``."""
        m = _b(text)
        # A text of N bytes makes at most N messages: room for every id.
        ids = (ctypes.c_uint64 * max(len(m), 1))()
        count = ctypes.c_size_t()
        self._check(_lib.onair_bot_say(self._h, m, len(m), ids, len(m), ctypes.byref(count)))
        return [int(i) for i in ids[: count.value]]

    @locked
    def reply(self, kind: ReplyKind, user: User, text: str) -> None:
        """Queues ``text``, one chat message, as a reply of ``kind`` naming ``user``:
        alone it goes out as written; when the chat limit holds back other replies of a
        mergeable kind (``welcome``, ``welcome_back``, ``thanks``), one message names
        them all with the kind's text for many (the kit's ``replies``, or its defaults:
        ``Welcome, Ana, Bo and Cy! 🎧``). A reply not out within its kind's freshness is
        dropped with a ``RepliesDropped`` notice, never sent late. No call id: the
        reply's fate is in ``reply_counters()`` and the notices.

        ``ChatRejected`` for a blank text or one over a message (200 UTF-16 units;
        ``say`` splits), ``ValueError`` for an unknown ``kind`` or a user without an
        id, ``TypeError`` when ``user`` is not an ``onair.User``: nothing queued."""
        if not isinstance(user, User):
            raise TypeError(f"user must be an onair.User (the action's user), not {type(user).__name__}")
        code = _REPLY_KIND_CODES.get(kind) if isinstance(kind, str) else None
        if code is None:
            raise ValueError(f"unknown reply kind {kind!r}: use one of {', '.join(REPLY_KINDS)}")
        i, m = _b(user.id), _b(text)
        nick = _b(user.nickname) if user.nickname is not None else None
        result = _lib.onair_bot_reply(self._h, code, i, len(i), nick, len(nick) if nick else 0, m, len(m))
        if result == _INVALID_ARGUMENT:  # an empty user id
            raise ValueError(self._last_error())
        self._check(result)

    @locked
    def fetch_broadcast(self) -> int:
        """Queues ``GET /v1/live``; answered by a ``Done`` with a ``Broadcast``."""
        return self._call(_lib.onair_bot_fetch_broadcast)

    @locked
    def list_listeners(self) -> int:
        """Queues the whole listener list; answered by a ``Done`` with ``Listeners``."""
        return self._call(_lib.onair_bot_list_listeners)

    @locked
    def fetch_fans(self) -> int:
        """Queues the fan ranking; answered by a ``Done`` with ``Fans``."""
        return self._call(_lib.onair_bot_fetch_fans)

    @locked
    def request_reconnect(self, now: int | None = None) -> None:
        """Reconnects the stream at once, without backoff."""
        self._check(_lib.onair_bot_request_reconnect(self._h, now_ms() if now is None else now))

    def shutdown(self, revoke: bool = False) -> None:
        """Stops the bot; poll until ``Stopped("shut_down")``, doing what it says (a last
        ``PersistState``, the revocation with ``revoke``).

        Never waits, so it is safe in a signal handler: applied at once when no call on
        the bot is in progress, otherwise when that call returns."""
        if self.closed:
            raise self._closed_error()
        self._requests.append(_SHUTDOWN_REVOKE if revoke else _SHUTDOWN)
        self._try_requests()

    @locked
    def schedule(self, at_ms: int, tag: str) -> None:
        """Fires ``Timer(tag)`` once at ``at_ms``."""
        t = _b(tag)
        self._check(_lib.onair_bot_schedule(self._h, at_ms, t, len(t)))

    @locked
    def every(self, period_ms: int, tag: str, first_at_ms: int) -> None:
        """Fires ``Timer(tag)`` every ``period_ms`` from ``first_at_ms``."""
        t = _b(tag)
        self._check(_lib.onair_bot_every(self._h, period_ms, t, len(t), first_at_ms))

    @locked
    def set_timer(self, tag: str, at_ms: int, period_ms: int = 0, while_connected: bool = False) -> None:
        """Sets timer ``tag`` in full (``period_ms`` 0: once; ``while_connected``: only
        while the stream is open)."""
        t = _b(tag)
        self._check(_lib.onair_bot_set_timer(self._h, t, len(t), at_ms, period_ms, while_connected))

    @locked
    def cancel_timer(self, tag: str) -> bool:
        """Cancels timer ``tag``; whether it was set."""
        t = _b(tag)
        found = ctypes.c_bool()
        self._check(_lib.onair_bot_cancel_timer(self._h, t, len(t), ctypes.byref(found)))
        return bool(found.value)

    # -- getters
    @locked
    def tokens_json(self) -> str | None:
        """The token file of the pair in force (a secret), or None before authorization."""
        p, n = ctypes.c_void_p(), ctypes.c_size_t()
        if _lib.onair_bot_tokens_json(self._h, ctypes.byref(p), ctypes.byref(n)):
            return None
        return _ffi.string_at(p, n).decode()

    @locked
    def kit(self) -> Kit | None:
        """The configured kit now (its broadcast's ``live_id`` and running tally), or
        None without a kit."""
        code = _lib.onair_bot_tally_json(self._h, *self._pn)
        if code == _NO_KIT:
            return None
        self._check(code)
        k = json.loads(_ffi.string_at(self._p, self._n))
        return Kit(k.get("liveId"), _json.tally(k))

    @locked
    def consent_stop(self) -> Stopped | None:
        """The stop a person must act on while the bot waits for the DJ's consent (the
        ``reauthorize`` stop in force, or that of a bot with no tokens yet); ``None``
        otherwise. A driver with no way to get a new code ends its run with it."""
        j = json.loads(self._json_now(_lib.onair_bot_consent_stop_json))
        return None if j is None else _json.stopped(j)

    @locked
    def status(self, now: int | None = None) -> Any:
        """The core's status snapshot (connection, counters, scope, …) as a dict; no secret."""
        return json.loads(self._json_now(_lib.onair_bot_status_json, now_ms() if now is None else now))

    @locked
    def reply_counters(self, now: int | None = None) -> dict[ReplyKind, ReplyCounters]:
        """The reply counters per kind (the status's ``counters.replies``): messages
        sent, people named, merged, dropped and why."""
        status = json.loads(self._json_now(_lib.onair_bot_status_json, now_ms() if now is None else now))
        return _json.reply_counters(status)

    @locked
    def daily_quota(self, now: int | None = None) -> DailyQuota:
        """What this bot knows of the app's daily quota at ``now``: the daily counters
        last seen (while their reset is ahead) and the daily blocks in force. Merge the
        views of the app's bots with ``DailyQuota.merge``."""
        return _daily_quota(json.loads(self._json_now(_lib.onair_bot_daily_quota_json, now_ms() if now is None else now)))

    @locked
    def share_daily_quota(self, quota: DailyQuota, now: int | None = None) -> None:
        """Takes what the app's other bots learned of its daily quota: calls needing a
        blocked permission, or every call once the day's calls are used up, wait for the
        reset (answered ``Failed`` with ``quota_blocked``); the stream is never held
        back. Then poll."""
        j = quota.to_json().encode()
        self._check(_lib.onair_bot_share_daily_quota_json(self._h, j, len(j), now_ms() if now is None else now))

    @property
    @locked_or(0)
    def pending_calls(self) -> int:
        """App calls queued and not yet answered (0 once closed)."""
        return int(_lib.onair_bot_pending_calls(self._h))


_INVALID_ARGUMENT = 17
# onair_reply_kind's values, by the kind's name.
_REPLY_KIND_CODES: dict[str, int] = {kind: n for n, kind in enumerate(REPLY_KINDS, 1)}
_NO_KIT = 27
_SHUTDOWN = "shutdown"
_SHUTDOWN_REVOKE = "shutdown+revoke"
