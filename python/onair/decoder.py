"""The SSE decoder: bytes in (split anywhere), typed items out."""

from __future__ import annotations

import ctypes
import json
import marshal
from collections.abc import Iterable, Iterator
from typing import Any
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
    RECORDS,
    Item,
    Like,
    OtherEvent,
    Presence,
    Retry,
    UnknownFrame,
    _Source,
)

_lib = _ffi.lib
_loads = json.loads
_string_at = ctypes.string_at
_EVENT_OFFSET = _ffi.Item.event.offset
_HEARTBEAT = Heartbeat()
_new = tuple.__new__
_marshal_loads = marshal.loads
# onair_decoder_feed_marshal once more, without argtypes: ctypes converts nothing, so
# the caller passes ctypes objects only (a c_void_p handle, bytes, a c_size_t, two
# byrefs); half the cost of the checked call, which runs once per chunk.
_feed_marshal = _lib["onair_decoder_feed_marshal"]
_feed_marshal.restype = ctypes.c_uint32
_CLASS_OF = {tag: cls for tag, (cls, _) in RECORDS.items()}.__getitem__


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


def _item_from_line(o: dict[str, Any]) -> Item:
    """A typed item from the core's canonical JSON line (``onair decode``'s)."""
    t = o["type"]
    if t == "event":
        name = o["event"]
        d = o["data"]
        i = o["id"]
        if name == "chat":
            u = d["user"]
            return Chat(i, u["id"], u["nickname"], d["isDj"], d["message"], d["sentTime"])
        if name == "like":
            u = d["user"]
            return Like(
                i, u["id"], u["nickname"], d["type"], d["totalAmount"], d["amount"], d["extraAmount"],
                d["combo"], d["time"],
            )
        if name == "presence":
            u = d["user"]
            temp = d["favoriteTemperature"]
            return Presence(
                i, u["id"], u["nickname"], d["type"], d["fanRank"], d["isManager"],
                None if temp is None else float(temp), d["time"],
            )
        if name == "donation":
            u = d["user"]
            return Donation(i, u["id"], u["nickname"], d["amount"], d["message"], d["time"])
        if name == "end":
            return End(i, d["reason"])
        return OtherEvent(i, name, d)
    if t == "heartbeat":
        return _HEARTBEAT
    if t == "comment":
        return Comment(o["text"])
    if t == "retry":
        return Retry(o["ms"])
    if t == "unknown":
        return UnknownFrame(o["event"], o["id"], o["data"])
    if t == "error":
        return FrameError(o["error"], o["message"], o["event"], o["id"], o["raw"])
    raise ValueError(f"unknown item type {t!r}")  # pragma: no cover - a newer libonair


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

    Three paths over libonair, the same items (tests check it):

    - default: every item a chunk completes comes over in the call that feeds it
      (``onair_decoder_feed_marshal``: the core's records as CPython marshal
      data) and becomes objects with one ``marshal.loads`` per chunk and one
      ``tuple.__new__`` per item, all inside C (BENCHMARKS.md). Its events are
      plain values. (Should this Python's ``marshal`` ever read libonair's
      batch differently from the JSON path, checked once at import, the
      default is the JSON path.)
    - ``kit_views=True``: one call per item into the tagged ``onair_item``
      struct; each event also keeps the core's event while it is current, so
      it can go to the kit (``Tally.record``, ``Audience.on_event``, …) in the
      loop body. (A ``Bot``'s events always can.)
    - the canonical JSON lines (``onair_decoder_take_json`` + ``json.loads``),
      kept as the tests' oracle for the marshal path (``_form = "json"``).
    """

    def __init__(self, max_frame_bytes: int = 0, *, kit_views: bool = False) -> None:
        self._gen = 0
        self._views = kit_views
        self._form = "marshal" if MARSHAL_OK else "json"
        self._p = ctypes.c_void_p()
        self._n = ctypes.c_size_t()
        self._pn = (ctypes.byref(self._p), ctypes.byref(self._n))
        h = ctypes.c_void_p()
        check(_lib.onair_decoder_new(max_frame_bytes, ctypes.byref(h)))
        self._h: int | None = h.value
        self._hp = h  # the handle as a c_void_p, for the unchecked call
        self._len = ctypes.c_size_t()
        self._view = memoryview(b"")
        self._view_at, self._view_len = 0, 0
        self._item = _ffi.Item()
        self._item_ref = ctypes.byref(self._item)
        self._event_addr = ctypes.addressof(self._item) + _EVENT_OFFSET

    def _handle(self) -> int:
        h = self._h
        if h is None:
            raise ValueError("the decoder is closed")
        return h

    def feed(self, chunk: bytes) -> Iterator[Item]:
        """Feeds a chunk (any bytes-like object) and iterates over the items it completes."""
        if type(chunk) is not bytes:
            chunk = bytes(chunk)  # bytearray, memoryview; the unchecked call below takes bytes only
        if self._form != "marshal" or self._views:
            check(_lib.onair_decoder_feed(self._handle(), chunk, len(chunk)))
            return self._drain()
        # The default path: one call feeds and renders the chunk's items (this
        # method is the hot loop's only Python per chunk: _batch() inlined).
        if self._h is None:
            raise ValueError("the decoder is closed")
        self._gen += 1
        self._len.value = len(chunk)
        rc = _feed_marshal(self._hp, chunk, self._len, *self._pn)
        if rc:
            check(rc)
        p, n = self._p.value, self._n.value
        if p != self._view_at or n > self._view_len:
            return self._read_marshal()
        tags, records = _marshal_loads(self._view[:n])
        # One C loop: each record (a tuple) becomes an object of its tag's class.
        return map(_new, map(_CLASS_OF, tags), records)

    def _read_marshal(self) -> Iterator[Item]:
        tags, records = _marshal_loads(self._batch())
        return map(_new, map(_CLASS_OF, tags), records)

    def _batch(self) -> memoryview:
        """The batch libonair just gave (``self._p``, ``self._n``), read in place.

        A view of libonair's buffer, rebuilt when the buffer moves or grows past
        it (rarely: the buffer keeps its capacity), instead of a copy per chunk.
        Only read before the next call on this decoder, and marshal.loads copies
        everything out of it.
        """
        p, n = self._p.value or 0, self._n.value
        if p != self._view_at or n > self._view_len:
            self._view = memoryview((ctypes.c_char * n).from_address(p))
            self._view_at, self._view_len = p, n
        return self._view[:n]

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
        if self._views:
            return self._drain_views()
        if self._form == "json":
            return self._drain_json()
        return self._drain_marshal()

    def _drain_marshal(self) -> Iterator[Item]:
        h = self._handle()
        self._gen += 1
        check(_lib.onair_decoder_take_marshal(h, *self._pn))
        return self._read_marshal()

    def _drain_json(self) -> Iterator[Item]:
        h = self._handle()
        self._gen += 1
        check(_lib.onair_decoder_take_json(h, *self._pn))
        n = self._n.value
        if n == 0:
            return iter(())
        text = _string_at(self._p.value or 0, n - 1).decode()  # without the last newline
        rows = _loads("[" + text.replace("\n", ",") + "]")
        return map(_item_from_line, rows)

    def _drain_views(self) -> Iterator[Item]:
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
        self._view = memoryview(b"")
        self._view_at, self._view_len = 0, 0
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


# Every kind of item and every marshal code libonair writes: nulls, True and False,
# small and long ints, a float, short and long ASCII, UTF-8 text, and over 255
# records (the long tuple form).
_SAMPLE = (
    b":heartbeat\n\n" * 256
    + b":" + b"x" * 300 + b"\n\n"
    + b": hi\n\nretry:5\n\nid:1-0\nevent:chat\ndata:{\"user\":{\"id\":\"u\",\"nickname\":null},"
    b'"isDj":true,"message":"\xc3\xa9 \xf0\x9f\x8e\xb5","sentTime":"t"}\n\n'
    b'event:like\ndata:{"user":{"id":"u","nickname":"n"},"type":"PAID","totalAmount":18446744073709551615,'
    b'"amount":1,"extraAmount":0,"combo":null,"time":"t"}\n\n'
    b'event:presence\ndata:{"user":{"id":"u","nickname":"n"},"type":"JOIN","fanRank":3,"isManager":false,'
    b'"favoriteTemperature":36.5,"time":"t"}\n\n'
    b'event:donation\ndata:{"user":{"id":"u","nickname":"n"},"amount":5,"message":null,"time":"t"}\n\n'
    b"event:poll\ndata:x\n\nevent:chat\ndata:{\n\nevent:end\ndata:{\"reason\":\"LIVE_ENDED\"}\n\n"
)


def _marshal_reads_like_json() -> bool:
    """Whether this Python's marshal reads libonair's batch as the JSON path reads its lines.

    CPython documents marshal as free to change between versions; the codes
    libonair writes have not changed since 3.4. Checked once, at import.
    """
    try:
        items = []
        for form in ("marshal", "json"):
            dec = Decoder()
            dec._form = form
            with dec:
                items.append([(type(i), repr(i)) for i in dec.feed(_SAMPLE)])
        return items[0] == items[1] and len(items[0]) == 266
    except Exception:  # pragma: no cover - a Python whose marshal differs
        return False


MARSHAL_OK = True
MARSHAL_OK = _marshal_reads_like_json()
