"""ctypes declarations of libonair (``include/onair.h``). Internal: use the public API.

The package reads every item and action in the core's JSON form, so the only
structs declared here are the ones it reads or fills in: ``onair_str`` (string
lists), ``onair_header`` (headers in) and ``onair_quota``. ``onair_bot_poll``
writes its ``onair_action`` view into a buffer ten times its size (the view is
not read: ``onair_bot_action_json`` gives the action), so its layout is not
mirrored here.

The library is found, in order: ``$ONAIR_LIB`` (a path to ``libonair``), the copy
bundled in the wheel (``onair/libonair.so``, ``.dylib``, ``onair.dll``), or a
development checkout's ``target/{release,debug}``.
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Iterable, Mapping
from ctypes import POINTER, Structure, c_bool, c_char_p, c_size_t, c_uint16, c_uint32, c_uint64, c_void_p
from pathlib import Path
from typing import Any, Union

ABI_VERSION = 4

_NAMES = {"darwin": "libonair.dylib", "win32": "onair.dll"}
LIB_NAME = _NAMES.get(sys.platform, "libonair.so")

# Room for the onair_action that onair_bot_poll writes (664 bytes in ABI 4 on x86_64).
ACTION_BYTES = 4096


class Str(Structure):
    _fields_ = [("ptr", c_void_p), ("len", c_size_t)]


class Header(Structure):
    _fields_ = [
        ("name", c_char_p),
        ("name_len", c_size_t),
        ("value", c_char_p),
        ("value_len", c_size_t),
    ]


class Quota(Structure):
    _fields_ = [
        ("has_remaining", c_bool),
        ("remaining", c_uint64),
        ("has_replenish_rate", c_bool),
        ("replenish_rate", c_uint64),
        ("has_burst_capacity", c_bool),
        ("burst_capacity", c_uint64),
        ("has_daily_limit", c_bool),
        ("daily_limit", c_uint64),
        ("has_daily_remaining", c_bool),
        ("daily_remaining", c_uint64),
        ("has_daily_reset_s", c_bool),
        ("daily_reset_s", c_uint64),
        ("retry_after_present", c_bool),
        ("has_retry_after_ms", c_bool),
        ("retry_after_ms", c_uint64),
    ]


P = c_void_p  # opaque handles
PP = POINTER(c_void_p)
R = c_uint32  # onair_result
cp = c_char_p
sz = c_size_t
szp = POINTER(c_size_t)
cpp = POINTER(c_void_p)  # char ** / const char ** out-parameters
u64 = c_uint64
u64p = POINTER(c_uint64)
boolp = POINTER(c_bool)
HP = POINTER(Header)

# name: (restype, argtypes)
_SIGNATURES: dict[str, tuple[Any, list[Any]]] = {
    "onair_result_message": (c_char_p, [c_uint32]),
    "onair_abi_version": (c_uint32, []),
    "onair_version": (c_char_p, []),
    "onair_string_free": (None, [c_void_p]),
    # bot config
    "onair_bot_config_new": (R, [cp, sz, cp, sz, cp, sz, PP]),
    "onair_bot_config_free": (None, [P]),
    "onair_bot_config_set_events": (R, [P, c_bool]),
    "onair_bot_config_set_check_credentials": (R, [P, c_bool]),
    "onair_bot_config_set_request_timeout_ms": (R, [P, u64]),
    "onair_bot_config_set_shutdown_grace_ms": (R, [P, u64]),
    "onair_bot_config_set_max_attempts": (R, [P, c_uint32]),
    "onair_bot_config_set_max_queued_calls": (R, [P, sz]),
    "onair_bot_config_set_watchdog_ms": (R, [P, u64]),
    "onair_bot_config_set_connect_timeout_ms": (R, [P, u64]),
    "onair_bot_config_set_refresh_margin_ms": (R, [P, u64]),
    "onair_bot_config_set_kit_json": (R, [P, cp, sz]),
    "onair_bot_config_last_error": (R, [P, cpp, szp]),
    # bot
    "onair_bot_new": (R, [P, cp, sz, cp, sz, u64, PP]),
    "onair_bot_free": (None, [P]),
    "onair_bot_last_error": (R, [P, cpp, szp]),
    "onair_bot_poll": (R, [P, u64, c_void_p]),
    "onair_bot_action_json": (R, [P, cpp, szp]),
    "onair_bot_on_response": (R, [P, u64, c_uint16, HP, sz, cp, sz, u64]),
    "onair_bot_on_transport_error": (R, [P, u64, u64]),
    "onair_bot_on_not_sent": (R, [P, u64, u64]),
    "onair_bot_on_stream_open": (R, [P, u64, c_uint16, HP, sz, u64]),
    "onair_bot_on_stream_bytes": (R, [P, u64, cp, sz, u64]),
    "onair_bot_on_stream_closed": (R, [P, u64, u64]),
    "onair_bot_authorize": (R, [P, cp, sz, cp, sz]),
    "onair_bot_send_chat": (R, [P, cp, sz, u64p]),
    "onair_bot_say": (R, [P, cp, sz, u64p, sz, szp]),
    "onair_bot_reply": (R, [P, c_uint32, cp, sz, cp, sz, cp, sz]),
    "onair_bot_fetch_broadcast": (R, [P, u64p]),
    "onair_bot_list_listeners": (R, [P, u64p]),
    "onair_bot_fetch_fans": (R, [P, u64p]),
    "onair_bot_request_reconnect": (R, [P, u64]),
    "onair_bot_shutdown": (R, [P, c_bool]),
    "onair_bot_tokens_json": (R, [P, cpp, szp]),
    "onair_bot_tally_json": (R, [P, cpp, szp]),
    "onair_bot_pending_calls": (sz, [P]),
    "onair_bot_status_json": (R, [P, u64, cpp, szp]),
    "onair_bot_daily_quota_json": (R, [P, u64, cpp, szp]),
    "onair_bot_share_daily_quota_json": (R, [P, cp, sz, u64]),
    "onair_bot_consent_stop_json": (R, [P, cpp, szp]),
    "onair_bot_schedule": (R, [P, u64, cp, sz]),
    "onair_bot_every": (R, [P, u64, cp, sz, u64]),
    "onair_bot_set_timer": (R, [P, cp, sz, u64, u64, c_bool]),
    "onair_bot_cancel_timer": (R, [P, cp, sz, boolp]),
    # decoder
    "onair_decoder_new": (R, [sz, PP]),
    "onair_decoder_free": (None, [P]),
    "onair_decoder_feed": (R, [P, cp, sz]),
    "onair_decoder_finish": (R, [P]),
    "onair_decoder_take_json": (R, [P, cpp, szp]),
    "onair_decoder_pending": (sz, [P]),
    # text
    "onair_text_split": (R, [cp, sz, PP]),
    "onair_string_list_len": (sz, [P]),
    "onair_string_list_get": (R, [P, sz, POINTER(Str)]),
    "onair_string_list_free": (None, [P]),
    "onair_text_truncate": (R, [cp, sz, sz, cp, sz, cpp, szp]),
    "onair_text_utf16_len": (R, [cp, sz, szp]),
    # decisions
    "onair_classify_json": (R, [cp, sz, c_uint16, HP, sz, cp, sz, u64, cpp, szp]),
    "onair_quota_parse": (R, [HP, sz, u64, POINTER(Quota)]),
    "onair_retry_after_ms": (R, [cp, sz, u64, u64p]),
    "onair_daily_quota_merge": (R, [cp, sz, cp, sz, u64, cpp, szp, boolp]),
    "onair_backoff_new": (R, [u64, u64, u64, PP]),
    "onair_backoff_free": (None, [P]),
    "onair_backoff_next_delay_ms": (R, [P, u64p]),
    "onair_backoff_reset": (None, [P]),
    "onair_backoff_attempt": (c_uint32, [P]),
}


def _candidates() -> list[str]:
    env = os.environ.get("ONAIR_LIB")
    if env:
        return [env]
    here = Path(__file__).resolve().parent
    found = [str(here / LIB_NAME)] if (here / LIB_NAME).exists() else []
    if not found:
        # A development checkout: python/onair/ → the workspace's target/.
        for profile in ("release", "debug"):
            p = here.parent.parent / "target" / profile / LIB_NAME
            if p.exists():
                found.append(str(p))
    return found


def _load() -> tuple[ctypes.CDLL, str]:
    candidates = _candidates()
    if not candidates:
        raise ImportError(
            "onair: libonair not found; install the wheel (scripts/test-python builds one) or "
            "`pip install ./python` (builds it with cargo), or set ONAIR_LIB to a built "
            f"{LIB_NAME} (cargo build -p onair-ffi)"
        )
    path = candidates[0]
    lib = ctypes.CDLL(path)
    abi = lib.onair_abi_version()
    if abi != ABI_VERSION:
        raise ImportError(f"onair: {path} has C ABI version {abi}, this package needs {ABI_VERSION}")
    for name, (restype, argtypes) in _SIGNATURES.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
    return lib, path


lib, LIB_PATH = _load()


def string_at(ptr: c_void_p, length: c_size_t) -> bytes:
    """What a (pointer, length) out-parameter pair points at, copied."""
    return ctypes.string_at(ptr.value or 0, length.value) if ptr.value else b""


def take_owned(ptr: c_void_p, length: c_size_t) -> bytes:
    """A string the caller owns (``char **``), copied then freed."""
    try:
        return string_at(ptr, length)
    finally:
        lib.onair_string_free(ptr)


Headers = Union[Mapping[str, str], Mapping[bytes, bytes], Iterable[tuple[Union[str, bytes], Union[str, bytes]]], None]
"""A mapping or an iterable of (name, value) pairs, ``str`` or ``bytes``."""


def headers_array(headers: Headers | Any) -> tuple[Any, int]:
    """(name, value) pairs as an ``onair_header`` array (keeps the bytes alive with it)."""
    if headers is None:
        return None, 0
    items = headers.items() if hasattr(headers, "items") else headers
    pairs = [
        (k.encode("latin-1") if isinstance(k, str) else bytes(k), v.encode("latin-1") if isinstance(v, str) else bytes(v))
        for k, v in items
    ]
    n = len(pairs)
    if n == 0:
        return None, 0
    arr = (Header * n)()
    for i, (k, v) in enumerate(pairs):
        arr[i].name, arr[i].name_len, arr[i].value, arr[i].value_len = k, len(k), v, len(v)
    return arr, n
