"""The bot machine: poll typed actions, do what they say, report back.

::

    with onair.Bot(onair.Config(base_url, client_id, secret), seed=seed) as bot:
        while True:
            match bot.poll():
                case onair.Send(rid, request):        ...  # send; bot.on_response(rid, ...)
                case onair.OpenStream(rid, request):  ...  # stream; on_stream_open/bytes/closed
                case onair.CloseStream(rid):          ...
                case onair.EventAction(event):        ...  # your logic; bot.send_chat(...)
                case onair.PersistTokens(tokens):     ...  # save (a secret)
                case onair.NeedsAuthorization():      bot.authorize(code, redirect_uri)
                case onair.Wait(until_ms):            ...  # sleep until then or until I/O
                case onair.Stopped(code, message):    break

After any report or command, poll until ``Wait``; only then sleep. Every rule
(tokens, the 401 rule, quotas, reconnects, chat limits) is the core's.
"""

from __future__ import annotations

import ctypes
import json
import time
from typing import Any, Union

from . import _ffi
from ._guard import Owner, locked, locked_or
from .decoder import event_from_view
from .errors import InvalidConfig, error
from .events import Event, _Value

_lib = _ffi.lib
_EVENT_OFFSET = _ffi.Action.event.offset
_DONE = {1: "broadcast", 2: "listeners", 3: "fans", 4: "chat_sent", 5: "failed", 6: "other"}
_FAILURE = {
    0: None,
    1: "problem",
    2: "quota_blocked",
    3: "invalid_body",
    4: "pager",
    5: "transport",
    6: "cancelled",
    7: "other",
    8: "queue_full",
    9: "stopped",
}
_NOTICE = {
    1: "frame_skipped",
    2: "unknown_event",
    3: "problem",
    5: "reconnect_storm_braked",
    6: "other",
    7: "call_held",
}


def now_ms() -> int:
    """Wall-clock unix milliseconds (the core's time unit)."""
    return time.time_ns() // 1_000_000


def _b(text: str | bytes) -> bytes:
    return text.encode("utf-8") if isinstance(text, str) else text


def _text(s: _ffi.Str) -> str | None:
    return ctypes.string_at(s.ptr, s.len).decode("utf-8") if s.ptr else None


class Config(Owner):
    """How a bot is set up: the service's base URL and the app's credentials.

    The secret is kept only inside libonair; it never appears in ``repr``. Any
    thread may use it (``Bot(config)`` reads it under its lock); it cannot be
    copied or pickled.
    """

    _free = _lib.onair_bot_config_free

    def __init__(
        self,
        base_url: str,
        client_id: str,
        client_secret: str,
        *,
        events: bool = True,
        request_timeout_ms: int | None = None,
        max_attempts: int | None = None,
        max_queued_calls: int | None = None,
        watchdog_ms: int | None = None,
        connect_timeout_ms: int | None = None,
        refresh_margin_ms: int | None = None,
    ) -> None:
        self.base_url = base_url
        self.client_id = client_id
        h = ctypes.c_void_p()
        u, i, s = _b(base_url), _b(client_id), _b(client_secret)
        code = _lib.onair_bot_config_new(u, len(u), i, len(i), s, len(s), ctypes.byref(h))
        if code:
            raise error(code)
        self._h = h.value
        # Not shared yet: no other thread can see this object before __init__ returns.
        try:
            _check(_lib.onair_bot_config_set_events(self._h, events))
            if request_timeout_ms is not None:
                _check(_lib.onair_bot_config_set_request_timeout_ms(self._h, request_timeout_ms))
            if max_attempts is not None:
                _check(_lib.onair_bot_config_set_max_attempts(self._h, max_attempts))
            if max_queued_calls is not None:
                _check(_lib.onair_bot_config_set_max_queued_calls(self._h, max_queued_calls))
            if watchdog_ms is not None:
                _check(_lib.onair_bot_config_set_watchdog_ms(self._h, watchdog_ms))
            if connect_timeout_ms is not None:
                _check(_lib.onair_bot_config_set_connect_timeout_ms(self._h, connect_timeout_ms))
            if refresh_margin_ms is not None:
                _check(_lib.onair_bot_config_set_refresh_margin_ms(self._h, refresh_margin_ms))
        except BaseException:
            self.close()
            raise

    def __repr__(self) -> str:
        return f"Config(base_url={self.base_url!r}, client_id={self.client_id!r}, client_secret=<redacted>)"


def _check(code: int) -> None:
    if code:
        raise error(code)


# ---- actions ---------------------------------------------------------------------


class Request(_Value):
    """An HTTP request to send as is. It may carry an Authorization header and a form
    with secrets: ``repr`` hides header values and the body."""

    __slots__ = ("endpoint", "method", "url", "headers", "body")
    _fields = ("endpoint", "method", "url")
    endpoint: str
    method: str
    url: str
    headers: list[tuple[str, str]]
    body: bytes

    def __init__(self, endpoint: str, method: str, url: str, headers: list[tuple[str, str]], body: bytes) -> None:
        self.endpoint, self.method, self.url, self.headers, self.body = endpoint, method, url, headers, body

    def __repr__(self) -> str:
        names = ", ".join(n for n, _ in self.headers)
        return (
            f"Request(endpoint={self.endpoint!r}, method={self.method!r}, url={self.url!r}, "
            f"headers=[{names}: <redacted>], body=<{len(self.body)} bytes redacted>)"
        )


class Action(_Value):
    """Something the bot asks the driver to do (``Bot.poll``)."""

    __slots__ = ()


class Send(Action):
    """Send ``request``; report with ``Bot.on_response`` or ``Bot.on_transport_error``.
    The bot keeps ``timeout_ms`` itself: give the client no shorter timeout."""

    __slots__ = ("request_id", "request", "timeout_ms")
    _fields = ("request_id", "request", "timeout_ms")
    __match_args__ = ("request_id", "request")

    def __init__(self, request_id: int, request: Request, timeout_ms: int) -> None:
        self.request_id, self.request, self.timeout_ms = request_id, request, timeout_ms


class OpenStream(Action):
    """Open ``request`` as a stream (no whole-body timeout); report with
    ``on_stream_open``, ``on_stream_bytes``, ``on_stream_closed``."""

    __slots__ = ("request_id", "request")
    _fields = ("request_id", "request")
    __match_args__ = ("request_id", "request")

    def __init__(self, request_id: int, request: Request) -> None:
        self.request_id, self.request = request_id, request


class CloseStream(Action):
    """Close the stream ``request_id``."""

    __slots__ = ("request_id",)
    _fields = ("request_id",)
    __match_args__ = ("request_id",)

    def __init__(self, request_id: int) -> None:
        self.request_id = request_id


class EventAction(Action):
    """A stream event; current until the next call on the bot (give it to the kit now)."""

    __slots__ = ("event",)
    _fields = ("event",)
    __match_args__ = ("event",)

    def __init__(self, event: Event) -> None:
        self.event = event


class TimedOut(Action):
    """The bot gave up on request ``request_id`` (no report within its timeout):
    drop it; a late report is ignored."""

    __slots__ = ("request_id", "endpoint")
    _fields = ("request_id", "endpoint")
    __match_args__ = ("request_id",)

    def __init__(self, request_id: int, endpoint: str) -> None:
        self.request_id, self.endpoint = request_id, endpoint


class Notice(Action):
    """Worth a log line, needs no action. ``kind``: ``frame_skipped``, ``unknown_event``,
    ``problem``, ``reconnect_storm_braked``, ``call_held`` (``call_id`` is held until
    the DJ authorizes the bot)."""

    __slots__ = ("kind", "code", "message", "call_id", "until_ms")
    _fields = ("kind", "code", "message", "call_id", "until_ms")
    __match_args__ = ("kind", "message")

    def __init__(
        self, kind: str, code: str | None, message: str, call_id: int | None, until_ms: int | None
    ) -> None:
        self.kind, self.code, self.message = kind, code, message
        self.call_id, self.until_ms = call_id, until_ms


class Done(Action):
    """The answer to app call ``call_id``. ``kind``: ``broadcast``, ``listeners``,
    ``fans``, ``chat_sent``, ``failed``; ``result`` is the core's JSON result
    (the data, or the failure with its problem's kind and advice)."""

    __slots__ = ("call_id", "kind", "failure", "code", "message", "result")
    _fields = ("call_id", "kind", "failure", "code", "message", "result")
    __match_args__ = ("call_id", "kind")

    def __init__(
        self,
        call_id: int,
        kind: str,
        failure: str | None,
        code: str | None,
        message: str | None,
        result: Any,
    ) -> None:
        self.call_id, self.kind, self.failure = call_id, kind, failure
        self.code, self.message, self.result = code, message, result

    @property
    def ok(self) -> bool:
        return self.kind != "failed"


class PersistTokens(Action):
    """Save ``tokens_json`` (a secret; hidden from ``repr``); give it back to ``Bot``
    after a restart."""

    __slots__ = ("tokens_json",)
    _fields = ("tokens_json",)
    __match_args__ = ("tokens_json",)

    def __init__(self, tokens_json: str) -> None:
        self.tokens_json = tokens_json

    def __repr__(self) -> str:
        return "PersistTokens(tokens_json=<redacted>)"


class NeedsAuthorization(Action):
    """Get a consent code from the DJ and call ``Bot.authorize``."""

    __slots__ = ()


class Wait(Action):
    """Sleep until ``until_ms`` (None: until I/O), then poll again."""

    __slots__ = ("until_ms",)
    _fields = ("until_ms",)
    __match_args__ = ("until_ms",)

    def __init__(self, until_ms: int | None) -> None:
        self.until_ms = until_ms


class Stopped(Action):
    """The bot has stopped (sticky). ``code``: ``reauthorize``, ``reconsent``,
    ``join_forbidden``, ``invalid_client``, ``fix_request``, ``unexpected``,
    ``shut_down``; ``resumes_with_new_consent``: ``authorize`` resumes it."""

    __slots__ = ("code", "message", "resumes_with_new_consent")
    _fields = ("code", "message", "resumes_with_new_consent")
    __match_args__ = ("code", "message")

    def __init__(self, code: str, message: str, resumes_with_new_consent: bool) -> None:
        self.code, self.message, self.resumes_with_new_consent = code, message, resumes_with_new_consent


class Timer(Action):
    """App timer ``tag`` fired."""

    __slots__ = ("tag",)
    _fields = ("tag",)
    __match_args__ = ("tag",)

    def __init__(self, tag: str) -> None:
        self.tag = tag


class OtherAction(Action):
    """An action newer than this package: its core JSON form."""

    __slots__ = ("json",)
    _fields = ("json",)
    __match_args__ = ("json",)

    def __init__(self, json: Any) -> None:
        self.json = json


AnyAction = Union[
    Send, OpenStream, CloseStream, TimedOut, EventAction, Notice, Done, PersistTokens,
    NeedsAuthorization, Wait, Stopped, Timer, OtherAction,
]

_NEEDS_AUTH = NeedsAuthorization()

Headers = Any  # a mapping or an iterable of (name, value) pairs, str or bytes


_SHUTDOWN = "shutdown"
_SHUTDOWN_REVOKE = "shutdown+revoke"


class Bot(Owner):
    """The bot machine over libonair (``onair_bot``).

    ``saved_tokens``: the token file a ``PersistTokens`` gave earlier, or None.
    ``seed``: fixes every jitter (seed from real randomness in production).
    ``now`` arguments are unix ms and default to the wall clock.

    Threads: any thread may call any method at any time (a web handler calling
    ``send_chat`` while the loop polls): calls run one at a time, each under the
    bot's lock, which is held until what libonair lent (the action, a string)
    has been read. The event of an ``EventAction`` stays current for the kit
    until the next ``poll`` (from any thread). In a signal handler call only
    ``shutdown()`` or ``close()``: if the signal interrupted a call on this bot,
    they are recorded and applied when that call returns (it finishes reading
    its action first); anything else raises ``ReentrantCallError`` there. A bot
    cannot be copied or pickled.
    """

    _free = _lib.onair_bot_free

    def __init__(self, config: Config, saved_tokens: str | bytes | None = None, seed: int = 0) -> None:
        h = ctypes.c_void_p()
        tok = _b(saved_tokens) if saved_tokens is not None else None
        with config._holding("Bot(config)") as ch:
            code = _lib.onair_bot_new(ch, tok, len(tok) if tok else 0, seed & (2**64 - 1), ctypes.byref(h))
        if code:
            raise InvalidConfig(code)
        self._h = h.value
        self._action = _ffi.Action()
        self._action_ref = ctypes.byref(self._action)
        self._event_addr = ctypes.addressof(self._action) + _EVENT_OFFSET

    # -- plumbing (the caller holds the lock)
    def _check(self, code: int) -> None:
        if code:
            raise error(code, self._last_error())

    def _last_error(self) -> str:
        p, n = ctypes.c_void_p(), ctypes.c_size_t()
        if _lib.onair_bot_last_error(self._h, ctypes.byref(p), ctypes.byref(n)):
            return ""
        return _ffi.borrowed(p, n)

    def _json(self) -> Any:
        p, n = ctypes.c_void_p(), ctypes.c_size_t()
        if _lib.onair_bot_action_json(self._h, ctypes.byref(p), ctypes.byref(n)):
            return None
        return json.loads(_ffi.borrowed(p, n))

    def _request(self, request: str, h: int) -> None:
        # libonair's shutdown leaves the action last polled as it was: the event in
        # hand stays current (no _gen bump). It answers only ONAIR_OK here.
        _lib.onair_bot_shutdown(h, request == _SHUTDOWN_REVOKE)

    @locked_or("")
    def last_error(self) -> str:
        """The detail of the last error this bot returned (a line for logs)."""
        return self._last_error()

    # -- poll
    @locked
    def poll(self, now: int | None = None) -> AnyAction:
        """The next thing to do. After any report or command, poll until ``Wait``."""
        a = self._action
        self._gen += 1  # the event of the previous action is no longer current
        self._check(_lib.onair_bot_poll(self._h, now_ms() if now is None else now, self._action_ref))
        k = a.kind
        if k == 3:
            return EventAction(event_from_view(a.event, self, self._event_addr))
        if k == 8:
            return Wait(a.until_ms if a.has_until_ms else None)
        if k == 0 or k == 1:
            r = a.request
            req = Request(
                _text(r.endpoint) or "",
                _text(r.method) or "",
                _text(r.url) or "",
                [
                    (
                        ctypes.string_at(r.headers[i].name, r.headers[i].name_len).decode(),
                        ctypes.string_at(r.headers[i].value, r.headers[i].value_len).decode(),
                    )
                    for i in range(r.headers_len)
                ],
                ctypes.string_at(r.body, r.body_len) if r.body else b"",
            )
            if k == 0:
                return Send(a.request_id, req, a.timeout_ms)
            return OpenStream(a.request_id, req)
        if k == 2:
            return CloseStream(a.request_id)
        if k == 4:
            return Notice(
                _NOTICE.get(a.notice, "other"),
                _text(a.code),
                _text(a.message) or "",
                a.call_id if a.notice == 7 else None,
                a.until_ms if a.has_until_ms else None,
            )
        if k == 5:
            j = self._json()
            return Done(
                a.call_id,
                _DONE.get(a.done, "other"),
                _FAILURE.get(a.failure, "other"),
                _text(a.code),
                _text(a.message),
                j.get("result") if isinstance(j, dict) else None,
            )
        if k == 6:
            return PersistTokens(_text(a.tokens_json) or "")
        if k == 7:
            return _NEEDS_AUTH
        if k == 9:
            return Stopped(_text(a.code) or "", _text(a.message) or "", a.resumes_with_new_consent)
        if k == 11:
            return Timer(_text(a.tag) or "")
        if k == 12:
            return TimedOut(a.request_id, _text(a.code) or "")
        return OtherAction(self._json())

    @locked
    def action_json(self) -> Any:
        """The core's JSON form of the action last polled (a ``send`` holds secrets)."""
        return self._json()

    # -- reports
    @locked
    def on_response(
        self, request_id: int, status: int, headers: Headers, body: bytes, now: int | None = None
    ) -> None:
        """The complete response to ``Send`` ``request_id``. Then poll."""
        arr, n = _ffi.headers_array(headers)
        self._check(
            _lib.onair_bot_on_response(
                self._h, request_id, status, arr, n, body, len(body), now_ms() if now is None else now
            )
        )

    @locked
    def on_transport_error(self, request_id: int, now: int | None = None) -> None:
        """Request ``request_id`` got no response (connect error, reset, …)."""
        self._check(_lib.onair_bot_on_transport_error(self._h, request_id, now_ms() if now is None else now))

    @locked
    def on_stream_open(self, request_id: int, status: int, headers: Headers, now: int | None = None) -> None:
        """The stream's status line and headers."""
        arr, n = _ffi.headers_array(headers)
        self._check(
            _lib.onair_bot_on_stream_open(self._h, request_id, status, arr, n, now_ms() if now is None else now)
        )

    @locked
    def on_stream_bytes(self, request_id: int, chunk: bytes, now: int | None = None) -> None:
        """A chunk of the open stream's body, split anywhere. Then poll."""
        self._check(
            _lib.onair_bot_on_stream_bytes(self._h, request_id, chunk, len(chunk), now_ms() if now is None else now)
        )

    @locked
    def on_stream_closed(self, request_id: int, now: int | None = None) -> None:
        """The stream connection ended (end of body or a network error)."""
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
        """Queues a chat message (at most 200 UTF-16 units, not blank); returns the call id.

        Raises ``ChatRejected`` (nothing queued). A full queue or a stopped bot is
        answered by the call's ``Done`` (``failure`` ``queue_full`` / ``stopped``)."""
        m = _b(message)
        return self._call(_lib.onair_bot_send_chat, m, len(m))

    @locked
    def fetch_broadcast(self) -> int:
        """Queues ``GET /v1/live`` (answer: ``Done`` kind ``broadcast``)."""
        return self._call(_lib.onair_bot_fetch_broadcast)

    @locked
    def list_listeners(self) -> int:
        """Queues the whole listener list (answer: ``Done`` kind ``listeners``)."""
        return self._call(_lib.onair_bot_list_listeners)

    @locked
    def fetch_fans(self) -> int:
        """Queues the fan ranking (answer: ``Done`` kind ``fans``)."""
        return self._call(_lib.onair_bot_fetch_fans)

    @locked
    def request_reconnect(self, now: int | None = None) -> None:
        """Reconnects the stream at once, without backoff."""
        self._check(_lib.onair_bot_request_reconnect(self._h, now_ms() if now is None else now))

    def shutdown(self, revoke: bool = False) -> None:
        """Stops the bot; poll until ``Stopped("shut_down")``, doing what it says.

        Never waits, so it is safe in a signal handler: applied at once when no call
        on the bot is in progress, otherwise when that call returns (before any later
        call does its work). The event in hand stays current."""
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
        """Sets timer ``tag`` in full (``period_ms`` 0: once)."""
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
        return _ffi.borrowed(p, n)

    @locked
    def status(self, now: int | None = None) -> Any:
        """The core's status snapshot (connection state, counters, scope…) as a dict; no secret."""
        p, n = ctypes.c_void_p(), ctypes.c_size_t()
        self._check(
            _lib.onair_bot_status_json(self._h, now_ms() if now is None else now, ctypes.byref(p), ctypes.byref(n))
        )
        return json.loads(_ffi.borrowed(p, n))

    @property
    @locked_or(0)
    def pending_calls(self) -> int:
        """App calls queued and not yet answered (0 once closed)."""
        return int(_lib.onair_bot_pending_calls(self._h))
