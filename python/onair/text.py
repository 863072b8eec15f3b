"""Chat text as the service counts it: split, truncate, measure (the core's rules).

The service takes at most 200 UTF-16 units per message; ``Bot.say`` splits for
you. These are for text you build yourself.
"""

from __future__ import annotations

import ctypes

from . import _ffi
from .errors import check

_lib = _ffi.lib


def _b(text: str) -> bytes:
    return text.encode("utf-8")


def split_chat(text: str) -> list[str]:
    """Splits text into messages the service accepts (≤ 200 UTF-16 units each, cut
    between grapheme clusters, at spaces when it can; blank parts dropped)."""
    b = _b(text)
    lst = ctypes.c_void_p()
    check(_lib.onair_text_split(b, len(b), ctypes.byref(lst)))
    try:
        out = []
        s = _ffi.Str()
        for i in range(_lib.onair_string_list_len(lst)):
            check(_lib.onair_string_list_get(lst, i, ctypes.byref(s)))
            out.append(ctypes.string_at(s.ptr, s.len).decode() if s.ptr else "")
        return out
    finally:
        _lib.onair_string_list_free(lst)


def truncate(text: str, limit_utf16: int, ellipsis: str = "…") -> str:
    """Cuts text to at most ``limit_utf16`` UTF-16 units, ending with ``ellipsis`` when cut."""
    b, e = _b(text), _b(ellipsis)
    p, n = ctypes.c_void_p(), ctypes.c_size_t()
    check(_lib.onair_text_truncate(b, len(b), limit_utf16, e, len(e), ctypes.byref(p), ctypes.byref(n)))
    return _ffi.take_owned(p, n).decode()


def utf16_len(text: str) -> int:
    """The length in UTF-16 units (the unit of the 200 limit)."""
    b = _b(text)
    n = ctypes.c_size_t()
    check(_lib.onair_text_utf16_len(b, len(b), ctypes.byref(n)))
    return int(n.value)
