"""The core's decisions as functions: classify a response, read quota headers,
back off. A bot on ``Bot`` or ``onair.aio`` never needs them (the bot decides);
they are for tools and for reading logs."""

from __future__ import annotations

import ctypes
import json
from dataclasses import dataclass
from typing import Any

from . import _ffi, _json
from ._guard import Owner, locked, locked_or
from .actions import Problem
from .errors import check

_lib = _ffi.lib


def _explain(endpoint: str, status: int, headers: _ffi.Headers, body: bytes, now_ms: int) -> Any:
    e = endpoint.encode()
    arr, n = _ffi.headers_array(headers)
    p, ln = ctypes.c_void_p(), ctypes.c_size_t()
    check(_lib.onair_classify_json(e, len(e), status, arr, n, body, len(body), now_ms, ctypes.byref(p), ctypes.byref(ln)))
    return json.loads(_ffi.take_owned(p, ln))


def classify(endpoint: str, status: int, headers: _ffi.Headers = None, body: bytes = b"", now_ms: int = 0) -> Problem:
    """Classifies one response of ``endpoint`` (``token``, ``revoke``, ``live``,
    ``listeners``, ``fans``, ``chat``, ``events``): what it was, what to do."""
    return _json.problem(_explain(endpoint, status, headers, body, now_ms))


def explain(endpoint: str, status: int, headers: _ffi.Headers = None, body: bytes = b"", now_ms: int = 0) -> Any:
    """``onair explain``'s JSON object for a response, as a dict."""
    return _explain(endpoint, status, headers, body, now_ms)


@dataclass(frozen=True, slots=True)
class Quota:
    """The quota headers of a response (``x-ratelimit-*``, ``Retry-After``); None when
    absent or unreadable."""

    remaining: int | None
    replenish_rate: int | None
    burst_capacity: int | None
    daily_limit: int | None
    daily_remaining: int | None
    daily_reset_s: int | None
    retry_after_present: bool
    retry_after_ms: int | None


def parse_quota(headers: _ffi.Headers, now_ms: int = 0) -> Quota:
    """Reads a response's quota headers."""
    arr, n = _ffi.headers_array(headers)
    q = _ffi.Quota()
    check(_lib.onair_quota_parse(arr, n, now_ms, ctypes.byref(q)))

    def get(k: str) -> int | None:
        return int(getattr(q, k)) if getattr(q, "has_" + k) else None

    return Quota(
        get("remaining"), get("replenish_rate"), get("burst_capacity"), get("daily_limit"),
        get("daily_remaining"), get("daily_reset_s"), bool(q.retry_after_present), get("retry_after_ms"),
    )


def retry_after_ms(value: str | bytes, now_ms: int = 0) -> int | None:
    """A Retry-After value as a delay in ms (None when unreadable)."""
    b = value.encode() if isinstance(value, str) else value
    out = ctypes.c_uint64()
    if _lib.onair_retry_after_ms(b, len(b), now_ms, ctypes.byref(out)):
        return None
    return int(out.value)


class Backoff(Owner):
    """Jittered exponential backoff (the spec's limits by default), seeded."""

    _free = _lib.onair_backoff_free

    def __init__(self, seed: int = 0, base_ms: int = 0, cap_ms: int = 0) -> None:
        h = ctypes.c_void_p()
        check(_lib.onair_backoff_new(base_ms, cap_ms, seed, ctypes.byref(h)))
        self._h = h.value

    @locked
    def next_delay_ms(self) -> int:
        out = ctypes.c_uint64()
        check(_lib.onair_backoff_next_delay_ms(self._h, ctypes.byref(out)))
        return int(out.value)

    @locked
    def reset(self) -> None:
        _lib.onair_backoff_reset(self._h)

    @property
    @locked_or(0)
    def attempt(self) -> int:
        return int(_lib.onair_backoff_attempt(self._h))
