"""ctypes declarations of libonair (include/onair.h). Internal: use the public API.

The library is found, in order: ``$ONAIR_LIB`` (a path to ``libonair.so``), the
copy bundled in this package by ``pip install`` (``onair/_libonair*.so``), or the
workspace's ``target/{release,debug}/libonair.so`` (development checkouts).
"""

from __future__ import annotations

import ctypes
import glob
import os
from ctypes import (
    POINTER,
    Structure,
    c_bool,
    c_char_p,
    c_double,
    c_size_t,
    c_uint16,
    c_uint32,
    c_uint64,
    c_void_p,
)
from pathlib import Path
from typing import Any

ABI_VERSION = 2

u8p = c_void_p  # (pointer, length) byte inputs: bytes objects convert to c_char_p


class Str(Structure):
    _fields_ = [("ptr", c_void_p), ("len", c_size_t)]


class Header(Structure):
    _fields_ = [
        ("name", c_char_p),
        ("name_len", c_size_t),
        ("value", c_char_p),
        ("value_len", c_size_t),
    ]


class Request(Structure):
    _fields_ = [
        ("endpoint", Str),
        ("method", Str),
        ("url", Str),
        ("headers", POINTER(Header)),
        ("headers_len", c_size_t),
        ("header_lines", c_void_p),
        ("body", c_void_p),
        ("body_len", c_size_t),
    ]


class Event(Structure):
    _fields_ = [
        ("kind", c_uint32),
        ("name", Str),
        ("id", Str),
        ("user_id", Str),
        ("nickname", Str),
        ("is_dj", c_bool),
        ("message", Str),
        ("time", Str),
        ("like_type", Str),
        ("is_paid", c_bool),
        ("amount", c_uint64),
        ("total_amount", c_uint64),
        ("extra_amount", c_uint64),
        ("has_combo", c_bool),
        ("combo", c_uint64),
        ("presence_type", Str),
        ("has_fan_rank", c_bool),
        ("fan_rank", c_uint64),
        ("is_manager", c_bool),
        ("has_favorite_temperature", c_bool),
        ("favorite_temperature", c_double),
        ("end_reason", Str),
        ("is_live_ended", c_bool),
        ("opaque", c_void_p),
    ]


class Action(Structure):
    _fields_ = [
        ("kind", c_uint32),
        ("request_id", c_uint64),
        ("request", Request),
        ("timeout_ms", c_uint64),
        ("event", Event),
        ("call_id", c_uint64),
        ("done", c_uint32),
        ("failure", c_uint32),
        ("notice", c_uint32),
        ("has_until_ms", c_bool),
        ("until_ms", c_uint64),
        ("code", Str),
        ("message", Str),
        ("resumes_with_new_consent", c_bool),
        ("tokens_json", Str),
        ("tag", Str),
    ]


class Item(Structure):
    _fields_ = [
        ("kind", c_uint32),
        ("event", Event),
        ("name", Str),
        ("id", Str),
        ("text", Str),
        ("retry_ms", c_uint64),
        ("error_code", Str),
        ("error_message", Str),
    ]


class Greeting(Structure):
    _fields_ = [("kind", c_uint32), ("user_id", Str), ("nickname", Str), ("is_manager", c_bool)]


class Invocation(Structure):
    _fields_ = [
        ("kind", c_uint32),
        ("name", Str),
        ("rest", Str),
        ("args", POINTER(Str)),
        ("args_len", c_size_t),
        ("user_id", Str),
        ("nickname", Str),
        ("role", c_uint32),
        ("needed", c_uint32),
    ]


class Milestone(Structure):
    _fields_ = [
        ("kind", c_uint32),
        ("reached", c_uint64),
        ("total", c_uint64),
        ("user_id", Str),
        ("nickname", Str),
    ]


class Problem(Structure):
    _fields_ = [
        ("kind", Str),
        ("advice", Str),
        ("status", c_uint16),
        ("has_retry_after_ms", c_bool),
        ("retry_after_ms", c_uint64),
        ("recently_revoked", c_bool),
        ("is_ok", c_bool),
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
    "onair_bot_config_set_request_timeout_ms": (R, [P, u64]),
    "onair_bot_config_set_max_attempts": (R, [P, c_uint32]),
    "onair_bot_config_set_max_queued_calls": (R, [P, sz]),
    "onair_bot_config_set_watchdog_ms": (R, [P, u64]),
    "onair_bot_config_set_connect_timeout_ms": (R, [P, u64]),
    "onair_bot_config_set_refresh_margin_ms": (R, [P, u64]),
    # bot
    "onair_bot_new": (R, [P, cp, sz, u64, PP]),
    "onair_bot_free": (None, [P]),
    "onair_bot_last_error": (R, [P, cpp, szp]),
    "onair_bot_poll": (R, [P, u64, POINTER(Action)]),
    "onair_bot_action_json": (R, [P, cpp, szp]),
    "onair_bot_on_response": (R, [P, u64, c_uint16, POINTER(Header), sz, cp, sz, u64]),
    "onair_bot_on_transport_error": (R, [P, u64, u64]),
    "onair_bot_on_stream_open": (R, [P, u64, c_uint16, POINTER(Header), sz, u64]),
    "onair_bot_on_stream_bytes": (R, [P, u64, cp, sz, u64]),
    "onair_bot_on_stream_closed": (R, [P, u64, u64]),
    "onair_bot_authorize": (R, [P, cp, sz, cp, sz]),
    "onair_bot_send_chat": (R, [P, cp, sz, u64p]),
    "onair_bot_fetch_broadcast": (R, [P, u64p]),
    "onair_bot_list_listeners": (R, [P, u64p]),
    "onair_bot_fetch_fans": (R, [P, u64p]),
    "onair_bot_request_reconnect": (R, [P, u64]),
    "onair_bot_shutdown": (R, [P, c_bool]),
    "onair_bot_tokens_json": (R, [P, cpp, szp]),
    "onair_bot_pending_calls": (sz, [P]),
    "onair_bot_status_json": (R, [P, u64, cpp, szp]),
    "onair_bot_schedule": (R, [P, u64, cp, sz]),
    "onair_bot_every": (R, [P, u64, cp, sz, u64]),
    "onair_bot_set_timer": (R, [P, cp, sz, u64, u64, c_bool]),
    "onair_bot_cancel_timer": (R, [P, cp, sz, boolp]),
    # decoder
    "onair_decoder_new": (R, [sz, PP]),
    "onair_decoder_free": (None, [P]),
    "onair_decoder_feed": (R, [P, cp, sz]),
    "onair_decoder_finish": (R, [P]),
    "onair_decoder_next": (R, [P, POINTER(Item)]),
    "onair_decoder_item_json": (R, [P, cpp, szp]),
    "onair_decoder_pending": (sz, [P]),
    "onair_decoder_take_json": (R, [P, cpp, szp]),
    "onair_decoder_take_marshal": (R, [P, cpp, szp]),
    "onair_decoder_feed_marshal": (R, [P, cp, sz, cpp, szp]),
    "onair_event_json": (R, [c_void_p, cpp, szp]),
    # text
    "onair_text_split": (R, [cp, sz, PP]),
    "onair_string_list_len": (sz, [P]),
    "onair_string_list_get": (R, [P, sz, POINTER(Str)]),
    "onair_string_list_free": (None, [P]),
    "onair_text_truncate": (R, [cp, sz, sz, cp, sz, cpp, szp]),
    "onair_text_utf16_len": (R, [cp, sz, szp]),
    # audience
    "onair_audience_new": (R, [PP]),
    "onair_audience_from_json": (R, [cp, sz, PP]),
    "onair_audience_free": (None, [P]),
    "onair_audience_to_json": (R, [P, cpp, szp]),
    "onair_audience_start_broadcast": (R, [P, u64, boolp]),
    "onair_audience_end_broadcast": (R, [P]),
    "onair_audience_on_event": (R, [P, c_void_p, POINTER(Greeting)]),
    "onair_audience_is_manager": (c_bool, [P, cp, sz]),
    "onair_audience_len": (sz, [P]),
    # commands
    "onair_commands_new": (R, [PP]),
    "onair_commands_free": (None, [P]),
    "onair_commands_set_prefix": (R, [P, cp, sz]),
    "onair_commands_add_prefix": (R, [P, cp, sz]),
    "onair_commands_add": (R, [P, cp, sz, c_uint32]),
    "onair_commands_ignore": (R, [P, cp, sz]),
    "onair_commands_match": (R, [P, P, c_void_p, POINTER(Invocation)]),
    # milestones
    "onair_milestones_new": (R, [u64, u64, PP]),
    "onair_milestones_from_json": (R, [cp, sz, PP]),
    "onair_milestones_to_json": (R, [P, cpp, szp]),
    "onair_milestones_free": (None, [P]),
    "onair_milestones_start_broadcast": (R, [P, u64, boolp]),
    "onair_milestones_end_broadcast": (R, [P]),
    "onair_milestones_on_event": (R, [P, c_void_p, POINTER(Milestone)]),
    "onair_milestones_donated_by": (u64, [P, cp, sz]),
    "onair_milestones_hearts": (u64, [P]),
    "onair_milestones_total_donated": (u64, [P]),
    # timers
    "onair_timers_new": (R, [PP]),
    "onair_timers_free": (None, [P]),
    "onair_timers_schedule": (R, [P, u64, cp, sz]),
    "onair_timers_every": (R, [P, u64, cp, sz, u64]),
    "onair_timers_cancel": (R, [P, cp, sz, boolp]),
    "onair_timers_next_deadline": (R, [P, c_bool, boolp, u64p]),
    "onair_timers_pop_due": (R, [P, u64, c_bool, POINTER(Str)]),
    # tally
    "onair_tally_new": (R, [PP]),
    "onair_tally_free": (None, [P]),
    "onair_tally_record": (R, [P, c_void_p]),
    "onair_tally_json": (R, [P, cpp, szp]),
    "onair_tally_hearts": (u64, [P]),
    "onair_tally_donated": (u64, [P]),
    "onair_tally_attendance": (sz, [P]),
    # decisions
    "onair_classify": (R, [cp, sz, c_uint16, POINTER(Header), sz, cp, sz, u64, POINTER(Problem)]),
    "onair_classify_json": (R, [cp, sz, c_uint16, POINTER(Header), sz, cp, sz, u64, cpp, szp]),
    "onair_quota_parse": (R, [POINTER(Header), sz, u64, POINTER(Quota)]),
    "onair_retry_after_ms": (R, [cp, sz, u64, u64p]),
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
    found = sorted(glob.glob(str(here / "_libonair*.so"))) + sorted(
        glob.glob(str(here / "_libonair*.dylib"))
    )
    for root in [here.parent.parent, *here.parents]:
        for profile in ("release", "debug"):
            p = root / "target" / profile / "libonair.so"
            if p.exists():
                found.append(str(p))
        if found:
            break
    return found


def _load() -> ctypes.CDLL:
    candidates = _candidates()
    if not candidates:
        raise ImportError(
            "onair: libonair not found; install the package with `pip install ./python`, "
            "or set ONAIR_LIB to a built libonair.so (cargo build -p onair-ffi)"
        )
    lib = ctypes.CDLL(candidates[0])
    for name, (restype, argtypes) in _SIGNATURES.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
    abi = lib.onair_abi_version()
    if abi != ABI_VERSION:
        raise ImportError(
            f"onair: {candidates[0]} has C ABI version {abi}, this package needs {ABI_VERSION}"
        )
    return lib


lib = _load()
LIB_PATH: str = _candidates()[0]


def text(s: Str) -> str | None:
    """A borrowed onair_str as a new Python str (None when absent)."""
    if not s.ptr:
        return None
    return ctypes.string_at(s.ptr, s.len).decode("utf-8")


def take_owned(ptr: c_void_p, length: c_size_t) -> str:
    """A string the caller owns (char **), copied then freed."""
    try:
        return ctypes.string_at(ptr.value or 0, length.value).decode("utf-8") if ptr.value else ""
    finally:
        lib.onair_string_free(ptr)


def borrowed(ptr: c_void_p, length: c_size_t) -> str:
    return ctypes.string_at(ptr.value or 0, length.value).decode("utf-8") if ptr.value else ""


def headers_array(
    headers: Any,
) -> tuple[Any, int]:
    """(name, value) pairs (str or bytes) as an onair_header array."""
    if headers is None:
        return None, 0
    if hasattr(headers, "items"):
        pairs = list(headers.items())
    else:
        pairs = list(headers)
    n = len(pairs)
    if n == 0:
        return None, 0
    arr = (Header * n)()
    for i, (k, v) in enumerate(pairs):
        kb = k.encode("latin-1") if isinstance(k, str) else bytes(k)
        vb = v.encode("latin-1") if isinstance(v, str) else bytes(v)
        arr[i].name = kb
        arr[i].name_len = len(kb)
        arr[i].value = vb
        arr[i].value_len = len(vb)
    return arr, n
