"""The SSE decoder: bytes in (split anywhere), typed items out."""

from __future__ import annotations

import ctypes
import json
from collections.abc import Iterable, Iterator
from types import TracebackType

from . import _ffi
from .errors import check
from .events import (
    Chat,
    Comment,
    Donation,
    End,
    Event,
    FrameError,
    Heartbeat,
    Item,
    Like,
    OtherEvent,
    Presence,
    Retry,
    UnknownFrame,
    _Source,
)

_lib = _ffi.lib
_string_at = ctypes.string_at
_EVENT_OFFSET = _ffi.Item.event.offset
_HEARTBEAT = Heartbeat()


def _s(s: _ffi.Str) -> str | None:
    p = s.ptr
    return _string_at(p, s.len).decode() if p else None


def _ss(s: _ffi.Str) -> str:
    p = s.ptr
    return _string_at(p, s.len).decode() if p else ""


def event_from_view(e: _ffi.Event, src: _Source, addr: int) -> Event:
    """Copies a borrowed ``onair_event`` view into a typed event."""
    kind = e.kind
    ev: Event
    if kind == 1:
        ev = Chat(_s(e.id), _ss(e.user_id), _s(e.nickname), e.is_dj, _ss(e.message), _ss(e.time))
    elif kind == 3:
        ev = Like(
            _s(e.id),
            _ss(e.user_id),
            _s(e.nickname),
            _ss(e.like_type),
            e.total_amount,
            e.amount,
            e.extra_amount,
            e.combo if e.has_combo else None,
            _ss(e.time),
        )
    elif kind == 2:
        ev = Presence(
            _s(e.id),
            _ss(e.user_id),
            _s(e.nickname),
            _ss(e.presence_type),
            e.fan_rank if e.has_fan_rank else None,
            e.is_manager,
            e.favorite_temperature if e.has_favorite_temperature else None,
            _ss(e.time),
        )
    elif kind == 4:
        ev = Donation(_s(e.id), _ss(e.user_id), _s(e.nickname), e.amount, _s(e.message), _ss(e.time))
    elif kind == 5:
        ev = End(_s(e.id), _ss(e.end_reason), e.is_live_ended)
    else:
        ev = OtherEvent(_s(e.id), _ss(e.name), _event_json(addr))
    ev._src = src
    ev._gen = src._gen
    ev._addr = addr
    return ev


def _event_json(addr: int) -> object:
    p = ctypes.c_void_p()
    n = ctypes.c_size_t()
    if _lib.onair_event_json(addr, ctypes.byref(p), ctypes.byref(n)):
        return None
    line = json.loads(_ffi.take_owned(p, n))
    return line.get("data") if isinstance(line, dict) else None


class Decoder:
    """SSE framing plus event decoding (the core's), fed chunks split anywhere.

    ::

        with onair.Decoder() as dec:
            for chunk in chunks:
                for item in dec.feed(chunk):
                    match item:
                        case onair.Chat(user_id, nickname, message): ...

    ``max_frame_bytes`` caps one frame (0: the core's default); a larger frame
    becomes a ``FrameError("frame_too_large")`` and memory stays bounded.
    A decoder is for one thread at a time.
    """

    def __init__(self, max_frame_bytes: int = 0) -> None:
        self._gen = 0
        h = ctypes.c_void_p()
        check(_lib.onair_decoder_new(max_frame_bytes, ctypes.byref(h)))
        self._h: int | None = h.value
        self._item = _ffi.Item()
        self._item_ref = ctypes.byref(self._item)
        self._event_addr = ctypes.addressof(self._item) + _EVENT_OFFSET

    def _handle(self) -> int:
        h = self._h
        if h is None:
            raise ValueError("the decoder is closed")
        return h

    def feed(self, chunk: bytes) -> Iterator[Item]:
        """Feeds a chunk (any bytes) and iterates over the items it completes."""
        check(_lib.onair_decoder_feed(self._handle(), chunk, len(chunk)))
        return self._drain()

    def finish(self) -> Iterator[Item]:
        """Ends the stream: a cut-off frame comes out as ``FrameError("incomplete_frame")``."""
        check(_lib.onair_decoder_finish(self._handle()))
        return self._drain()

    def __iter__(self) -> Iterator[Item]:
        """The items decoded and not yet taken."""
        return self._drain()

    def events(self, chunks: Iterable[bytes]) -> Iterator[Event]:
        """Feeds every chunk, then finishes; yields only typed events."""
        for chunk in chunks:
            for item in self.feed(chunk):
                if isinstance(item, Event):
                    yield item
        for item in self.finish():
            if isinstance(item, Event):
                yield item

    @property
    def pending(self) -> int:
        """Items decoded and not yet taken."""
        return int(_lib.onair_decoder_pending(self._handle()))

    def _drain(self) -> Iterator[Item]:
        nxt = _lib.onair_decoder_next
        item = self._item
        ref = self._item_ref
        while True:
            h = self._handle()
            self._gen += 1
            nxt(h, ref)
            kind = item.kind
            if kind == 1:
                yield event_from_view(item.event, self, self._event_addr)
            elif kind == 0:
                return
            elif kind == 3:
                yield _HEARTBEAT
            elif kind == 4:
                yield Comment(_ss(item.text))
            elif kind == 5:
                yield Retry(item.retry_ms)
            elif kind == 2:
                yield UnknownFrame(_s(item.name), _s(item.id), _s(item.text))
            else:
                yield FrameError(
                    _ss(item.error_code), _ss(item.error_message), _s(item.name), _s(item.id), _s(item.text)
                )

    def item_json(self) -> str:
        """The canonical JSON line (``onair decode``'s) of the item last taken."""
        p = ctypes.c_void_p()
        n = ctypes.c_size_t()
        check(_lib.onair_decoder_item_json(self._handle(), ctypes.byref(p), ctypes.byref(n)))
        return _ffi.borrowed(p, n)

    def close(self) -> None:
        """Frees the decoder now (idempotent)."""
        h, self._h = self._h, None
        self._gen += 1
        if h is not None:
            _lib.onair_decoder_free(h)

    def __enter__(self) -> Decoder:
        return self

    def __exit__(
        self, t: type[BaseException] | None, v: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # pragma: no cover - interpreter shutdown
            pass

    def __repr__(self) -> str:
        return f"Decoder(closed={self._h is None})"
