"""The kit (chat splitting, commands, audience, milestones, timers, tally) and the
decisions (classify a response, read quota headers, backoff) — all the core's."""

from __future__ import annotations

import ctypes
import json
from typing import Any

from . import _ffi
from ._guard import Owner, lent, locked, locked_or
from .errors import error
from .events import Event, _Value

_lib = _ffi.lib


def _b(text: str | bytes) -> bytes:
    return text.encode("utf-8") if isinstance(text, str) else text


def _check(code: int) -> None:
    if code:
        raise error(code)


def _t(s: _ffi.Str) -> str | None:
    return ctypes.string_at(s.ptr, s.len).decode("utf-8") if s.ptr else None


def _owned(fn: Any, *args: Any) -> str:
    p, n = ctypes.c_void_p(), ctypes.c_size_t()
    _check(fn(*args, ctypes.byref(p), ctypes.byref(n)))
    return _ffi.take_owned(p, n)


class _Handle(Owner):
    """A libonair handle of the kit: ``close()`` frees it now, ``with`` closes it,
    ``__del__`` is a fallback. Any thread may call any method (one call at a time,
    under the object's lock); it cannot be copied or pickled (see ``_guard``)."""


def _new(fn: Any, *args: Any) -> int:
    h = ctypes.c_void_p()
    _check(fn(*args, ctypes.byref(h)))
    assert h.value is not None
    return h.value


# ---- text -------------------------------------------------------------------------


def split_chat(text: str) -> list[str]:
    """Splits text into messages the service accepts (≤ 200 UTF-16 units each, cut
    between grapheme clusters, at spaces when it can; blank parts dropped)."""
    b = _b(text)
    lst = ctypes.c_void_p()
    _check(_lib.onair_text_split(b, len(b), ctypes.byref(lst)))
    try:
        out = []
        s = _ffi.Str()
        for i in range(_lib.onair_string_list_len(lst)):
            _check(_lib.onair_string_list_get(lst, i, ctypes.byref(s)))
            out.append(_t(s) or "")
        return out
    finally:
        _lib.onair_string_list_free(lst)


def truncate(text: str, limit_utf16: int, ellipsis: str = "…") -> str:
    """Cuts text to at most ``limit_utf16`` UTF-16 units, ending with ``ellipsis`` when cut."""
    b, e = _b(text), _b(ellipsis)
    return _owned(_lib.onair_text_truncate, b, len(b), limit_utf16, e, len(e))


def utf16_len(text: str) -> int:
    """The length in UTF-16 units (the unit of the 200 chat limit)."""
    b = _b(text)
    n = ctypes.c_size_t()
    _check(_lib.onair_text_utf16_len(b, len(b), ctypes.byref(n)))
    return int(n.value)


# ---- tally ------------------------------------------------------------------------


class Tally(_Handle):
    """One broadcast's totals by person (the form of the emulator's ledger)."""

    _free = _lib.onair_tally_free

    def __init__(self) -> None:
        self._h = _new(_lib.onair_tally_new)

    @locked
    def record(self, event: Event) -> None:
        """Records a current event (chat, joins, hearts, donations; the DJ kept out)."""
        with lent(event) as view:
            _check(_lib.onair_tally_record(self._h, view))

    @locked
    def json(self) -> str:
        """The core's tally JSON (``{"hearts","donated","attendance","people"}``)."""
        return _owned(_lib.onair_tally_json, self._h)

    def to_dict(self) -> Any:
        return json.loads(self.json())

    @property
    @locked_or(0)
    def hearts(self) -> int:
        return int(_lib.onair_tally_hearts(self._h))

    @property
    @locked_or(0)
    def donated(self) -> int:
        return int(_lib.onair_tally_donated(self._h))

    @property
    @locked_or(0)
    def attendance(self) -> int:
        """People who joined."""
        return int(_lib.onair_tally_attendance(self._h))


# ---- audience ---------------------------------------------------------------------


class Greeting(_Value):
    """Whom to greet: ``kind`` is ``"first"`` or ``"welcome_back"``."""

    __slots__ = ("kind", "user_id", "nickname", "is_manager")
    _fields = ("kind", "user_id", "nickname", "is_manager")
    __match_args__ = ("kind", "user_id", "nickname")

    def __init__(self, kind: str, user_id: str, nickname: str | None, is_manager: bool) -> None:
        self.kind, self.user_id, self.nickname, self.is_manager = kind, user_id, nickname, is_manager


class Audience(_Handle):
    """Greet-once memory of one broadcast's audience (first join, one welcome-back)."""

    _free = _lib.onair_audience_free

    def __init__(self, stored: str | bytes | None = None) -> None:
        if stored is None:
            self._h = _new(_lib.onair_audience_new)
        else:
            b = _b(stored)
            self._h = _new(_lib.onair_audience_from_json, b, len(b))

    @locked
    def to_json(self) -> str:
        """The stored form, to save across a restart."""
        return _owned(_lib.onair_audience_to_json, self._h)

    @locked
    def start_broadcast(self, live_id: int) -> bool:
        """Ties the memory to broadcast ``live_id``; True when it is a new one."""
        out = ctypes.c_bool()
        _check(_lib.onair_audience_start_broadcast(self._h, live_id, ctypes.byref(out)))
        return bool(out.value)

    @locked
    def end_broadcast(self) -> None:
        """Forgets the broadcast (after its ``End`` with ``LIVE_ENDED``)."""
        _check(_lib.onair_audience_end_broadcast(self._h))

    @locked
    def on_event(self, event: Event) -> Greeting | None:
        """Records a current event; whom to greet, if anyone."""
        g = _ffi.Greeting()
        with lent(event) as view:
            _check(_lib.onair_audience_on_event(self._h, view, ctypes.byref(g)))
        if g.kind == 0:
            return None
        kind = "first" if g.kind == 1 else "welcome_back"
        return Greeting(kind, _t(g.user_id) or "", _t(g.nickname), bool(g.is_manager))

    @locked_or(False)
    def is_manager(self, user_id: str) -> bool:
        b = _b(user_id)
        return bool(_lib.onair_audience_is_manager(self._h, b, len(b)))

    @locked_or(0)
    def __len__(self) -> int:
        return int(_lib.onair_audience_len(self._h))


# ---- commands ---------------------------------------------------------------------

ROLES = ("listener", "manager", "dj")
ALLOWED = {"anyone": 0, "managers": 1, "dj": 2}


class Invocation(_Value):
    """A matched command. ``kind``: ``"run"`` or ``"denied"`` (``needed`` says who may)."""

    __slots__ = ("kind", "name", "rest", "args", "user_id", "nickname", "role", "needed")
    _fields = ("kind", "name", "rest", "args", "user_id", "nickname", "role", "needed")
    __match_args__ = ("kind", "name", "args")

    def __init__(
        self,
        kind: str,
        name: str,
        rest: str,
        args: list[str],
        user_id: str,
        nickname: str | None,
        role: str,
        needed: str,
    ) -> None:
        self.kind, self.name, self.rest, self.args = kind, name, rest, args
        self.user_id, self.nickname, self.role, self.needed = user_id, nickname, role, needed


class Commands(_Handle):
    """Chat commands: prefix (``!`` by default), names, who may run each, ignored posters."""

    _free = _lib.onair_commands_free

    def __init__(self, prefix: str | None = None) -> None:
        self._h = _new(_lib.onair_commands_new)
        if prefix is not None:
            self.set_prefix(prefix)

    @locked
    def set_prefix(self, prefix: str) -> None:
        b = _b(prefix)
        _check(_lib.onair_commands_set_prefix(self._h, b, len(b)))

    @locked
    def add_prefix(self, prefix: str) -> None:
        b = _b(prefix)
        _check(_lib.onair_commands_add_prefix(self._h, b, len(b)))

    @locked
    def add(self, name: str, allowed: str = "anyone") -> None:
        """Registers ``name`` (matched without case); ``allowed``: anyone, managers, dj."""
        if allowed not in ALLOWED:
            raise ValueError(f"allowed must be one of {sorted(ALLOWED)}")
        b = _b(name)
        _check(_lib.onair_commands_add(self._h, b, len(b), ALLOWED[allowed]))

    @locked
    def ignore(self, user_id: str) -> None:
        b = _b(user_id)
        _check(_lib.onair_commands_ignore(self._h, b, len(b)))

    @locked
    def match(self, event: Event, audience: Audience | None = None) -> Invocation | None:
        """Matches a current chat event (other events match nothing)."""
        inv = _ffi.Invocation()
        if audience is None:
            with lent(event) as view:
                _check(_lib.onair_commands_match(self._h, None, view, ctypes.byref(inv)))
        else:
            # Locks in order: these commands (held), the audience, the event's source.
            with audience._holding("Commands.match(audience=...)") as aud, lent(event) as view:
                _check(_lib.onair_commands_match(self._h, aud, view, ctypes.byref(inv)))
        if inv.kind == 0:
            return None
        args = [_t(inv.args[i]) or "" for i in range(inv.args_len)]
        return Invocation(
            "run" if inv.kind == 1 else "denied",
            _t(inv.name) or "",
            _t(inv.rest) or "",
            args,
            _t(inv.user_id) or "",
            _t(inv.nickname),
            ROLES[inv.role] if inv.role < 3 else "other",
            {0: "anyone", 1: "managers", 2: "dj"}.get(inv.needed, "other"),
        )


# ---- milestones -------------------------------------------------------------------


class MilestoneReached(_Value):
    """A milestone: ``kind`` ``"hearts"`` or ``"donated"`` (then the donor)."""

    __slots__ = ("kind", "reached", "total", "user_id", "nickname")
    _fields = ("kind", "reached", "total", "user_id", "nickname")
    __match_args__ = ("kind", "reached", "total")

    def __init__(self, kind: str, reached: int, total: int, user_id: str | None, nickname: str | None) -> None:
        self.kind, self.reached, self.total, self.user_id, self.nickname = kind, reached, total, user_id, nickname


class Milestones(_Handle):
    """Heart and donation milestones with running donor totals (0: none of that kind)."""

    _free = _lib.onair_milestones_free

    def __init__(self, hearts_every: int = 0, donations_every: int = 0, *, stored: str | bytes | None = None) -> None:
        if stored is None:
            self._h = _new(_lib.onair_milestones_new, hearts_every, donations_every)
        else:
            b = _b(stored)
            self._h = _new(_lib.onair_milestones_from_json, b, len(b))

    @locked
    def to_json(self) -> str:
        return _owned(_lib.onair_milestones_to_json, self._h)

    @locked
    def start_broadcast(self, live_id: int) -> bool:
        out = ctypes.c_bool()
        _check(_lib.onair_milestones_start_broadcast(self._h, live_id, ctypes.byref(out)))
        return bool(out.value)

    @locked
    def end_broadcast(self) -> None:
        _check(_lib.onair_milestones_end_broadcast(self._h))

    @locked
    def on_event(self, event: Event) -> MilestoneReached | None:
        """Records a current event (hearts, donations); the milestone it crossed, if any."""
        m = _ffi.Milestone()
        with lent(event) as view:
            _check(_lib.onair_milestones_on_event(self._h, view, ctypes.byref(m)))
        if m.kind == 0:
            return None
        return MilestoneReached(
            "hearts" if m.kind == 1 else "donated", m.reached, m.total, _t(m.user_id), _t(m.nickname)
        )

    @locked_or(0)
    def donated_by(self, user_id: str) -> int:
        b = _b(user_id)
        return int(_lib.onair_milestones_donated_by(self._h, b, len(b)))

    @property
    @locked_or(0)
    def hearts(self) -> int:
        return int(_lib.onair_milestones_hearts(self._h))

    @property
    @locked_or(0)
    def total_donated(self) -> int:
        return int(_lib.onair_milestones_total_donated(self._h))


# ---- timers -----------------------------------------------------------------------


class Timers(_Handle):
    """App timers as data (standalone; a ``Bot`` hosts its own)."""

    _free = _lib.onair_timers_free

    def __init__(self) -> None:
        self._h = _new(_lib.onair_timers_new)

    @locked
    def schedule(self, at_ms: int, tag: str) -> None:
        b = _b(tag)
        _check(_lib.onair_timers_schedule(self._h, at_ms, b, len(b)))

    @locked
    def every(self, period_ms: int, tag: str, first_at_ms: int) -> None:
        b = _b(tag)
        _check(_lib.onair_timers_every(self._h, period_ms, b, len(b), first_at_ms))

    @locked
    def cancel(self, tag: str) -> bool:
        b = _b(tag)
        found = ctypes.c_bool()
        _check(_lib.onair_timers_cancel(self._h, b, len(b), ctypes.byref(found)))
        return bool(found.value)

    @locked
    def next_deadline(self, connected: bool = True) -> int | None:
        has, at = ctypes.c_bool(), ctypes.c_uint64()
        _check(_lib.onair_timers_next_deadline(self._h, connected, ctypes.byref(has), ctypes.byref(at)))
        return int(at.value) if has.value else None

    @locked
    def pop_due(self, now_ms: int, connected: bool = True) -> list[str]:
        """Every tag due at ``now_ms``."""
        out: list[str] = []
        s = _ffi.Str()
        while True:
            _check(_lib.onair_timers_pop_due(self._h, now_ms, connected, ctypes.byref(s)))
            tag = _t(s)
            if tag is None:
                return out
            out.append(tag)


# ---- decisions --------------------------------------------------------------------


class Problem(_Value):
    """A classified response: ``kind`` (``ok``, ``unauthorized``, ``chat_rate_limited``, …)
    and ``advice`` (``none``, ``refresh_token``, ``retry_after``, ``reauthorize``, …)."""

    __slots__ = ("kind", "advice", "status", "retry_after_ms", "recently_revoked", "is_ok")
    _fields = ("kind", "advice", "status", "retry_after_ms", "recently_revoked", "is_ok")
    __match_args__ = ("kind", "advice")

    def __init__(
        self, kind: str, advice: str, status: int, retry_after_ms: int | None, recently_revoked: bool, is_ok: bool
    ) -> None:
        self.kind, self.advice, self.status = kind, advice, status
        self.retry_after_ms, self.recently_revoked, self.is_ok = retry_after_ms, recently_revoked, is_ok


def classify(
    endpoint: str, status: int, headers: Any = None, body: bytes = b"", now_ms: int = 0
) -> Problem:
    """Classifies one response of ``endpoint`` (``token``, ``revoke``, ``live``,
    ``listeners``, ``fans``, ``chat``, ``events``)."""
    e = _b(endpoint)
    arr, n = _ffi.headers_array(headers)
    p = _ffi.Problem()
    _check(_lib.onair_classify(e, len(e), status, arr, n, body, len(body), now_ms, ctypes.byref(p)))
    return Problem(
        _t(p.kind) or "",
        _t(p.advice) or "",
        p.status,
        p.retry_after_ms if p.has_retry_after_ms else None,
        bool(p.recently_revoked),
        bool(p.is_ok),
    )


def explain(endpoint: str, status: int, headers: Any = None, body: bytes = b"", now_ms: int = 0) -> Any:
    """``onair explain``'s JSON object for a response, as a dict."""
    e = _b(endpoint)
    arr, n = _ffi.headers_array(headers)
    return json.loads(_owned(_lib.onair_classify_json, e, len(e), status, arr, n, body, len(body), now_ms))


class Quota(_Value):
    """The quota headers of a response; None when absent or unreadable."""

    __slots__ = (
        "remaining", "replenish_rate", "burst_capacity", "daily_limit",
        "daily_remaining", "daily_reset_s", "retry_after_present", "retry_after_ms",
    )
    _fields = __slots__

    def __init__(self, **values: Any) -> None:
        for k in self.__slots__:
            setattr(self, k, values.get(k))


def parse_quota(headers: Any, now_ms: int = 0) -> Quota:
    """Reads ``x-ratelimit-*`` and ``Retry-After``."""
    arr, n = _ffi.headers_array(headers)
    q = _ffi.Quota()
    _check(_lib.onair_quota_parse(arr, n, now_ms, ctypes.byref(q)))
    vals: dict[str, Any] = {}
    for k in ("remaining", "replenish_rate", "burst_capacity", "daily_limit", "daily_remaining", "daily_reset_s", "retry_after_ms"):
        vals[k] = getattr(q, k) if getattr(q, "has_" + k) else None
    vals["retry_after_present"] = bool(q.retry_after_present)
    return Quota(**vals)


def retry_after_ms(value: str | bytes, now_ms: int = 0) -> int | None:
    """A Retry-After value as a delay in ms (None when unreadable)."""
    b = _b(value)
    out = ctypes.c_uint64()
    if _lib.onair_retry_after_ms(b, len(b), now_ms, ctypes.byref(out)):
        return None
    return int(out.value)


class Backoff(_Handle):
    """Jittered exponential backoff (the spec's limits by default), seeded."""

    _free = _lib.onair_backoff_free

    def __init__(self, seed: int = 0, base_ms: int = 0, cap_ms: int = 0) -> None:
        self._h = _new(_lib.onair_backoff_new, base_ms, cap_ms, seed)

    @locked
    def next_delay_ms(self) -> int:
        out = ctypes.c_uint64()
        _check(_lib.onair_backoff_next_delay_ms(self._h, ctypes.byref(out)))
        return int(out.value)

    @locked
    def reset(self) -> None:
        _lib.onair_backoff_reset(self._h)

    @property
    @locked_or(0)
    def attempt(self) -> int:
        return int(_lib.onair_backoff_attempt(self._h))
