"""The SSE decoder: bytes in (split anywhere), typed items out.

::

    with onair.Decoder() as dec:
        for chunk in chunks:
            for item in dec.feed(chunk):
                match item:
                    case onair.Chat(user, message=text): ...
                    case onair.End(reason=onair.EndReason.LIVE_ENDED): ...

Per chunk: one call feeds libonair, one takes every item it completed as JSON
lines (``onair_decoder_take_json``), one ``json.loads`` reads them all, and
each line becomes its frozen dataclass.
"""

from __future__ import annotations

import ctypes
import json
from collections.abc import Iterable, Iterator

from . import _ffi, _json
from ._guard import Owner, locked
from .errors import check
from .events import EVENT_TYPES, Event, Item

_lib = _ffi.lib
_loads = json.loads
_string_at = ctypes.string_at


class Decoder(Owner):
    """Stream bytes in, typed items (``Chat``, …, ``Heartbeat``, ``FrameError``) out.

    ``max_frame_bytes``: a frame larger than this is skipped as ``FrameError``
    ``frame_too_large`` (0: the core's default). Any thread may call it; calls run
    one at a time. Memory stays bounded on any input."""

    _free = _lib.onair_decoder_free

    def __init__(self, max_frame_bytes: int = 0) -> None:
        h = ctypes.c_void_p()
        check(_lib.onair_decoder_new(max_frame_bytes, ctypes.byref(h)))
        self._h = h.value
        self._p = ctypes.c_void_p()
        self._n = ctypes.c_size_t()
        self._pn = (ctypes.byref(self._p), ctypes.byref(self._n))

    def feed(self, chunk: bytes | bytearray | memoryview) -> list[Item]:
        """Feeds a chunk; the items it completed."""
        return self._feed_and_take(bytes(chunk) if type(chunk) is not bytes else chunk)

    def finish(self) -> list[Item]:
        """Ends the stream: a cut-off frame comes out as ``FrameError("incomplete_frame")``."""
        return self._feed_and_take(None)

    @locked
    def _feed_and_take(self, chunk: bytes | None) -> list[Item]:
        h = self._h
        if chunk is None:
            check(_lib.onair_decoder_finish(h))
        else:
            check(_lib.onair_decoder_feed(h, chunk, len(chunk)))
        check(_lib.onair_decoder_take_json(h, *self._pn))
        n = self._n.value
        if n == 0:
            return []
        # Lines end with "\n": a JSON array of them, read in one call.
        text = _string_at(self._p.value or 0, n - 1)
        return _json.items(_loads(b"[" + text.replace(b"\n", b",") + b"]"))

    def events(self, chunks: Iterable[bytes]) -> Iterator[Event]:
        """Feeds every chunk, then finishes; yields only typed events."""
        for chunk in chunks:
            for item in self.feed(chunk):
                if isinstance(item, EVENT_TYPES):
                    yield item  # type: ignore[misc]
        for item in self.finish():
            if isinstance(item, EVENT_TYPES):
                yield item  # type: ignore[misc]

    @property
    @locked
    def pending(self) -> int:
        """Items decoded and not yet taken (0 between calls: ``feed`` takes them all)."""
        return int(_lib.onair_decoder_pending(self._h))

    def __repr__(self) -> str:
        return f"Decoder(closed={self.closed})"
