"""The SSE decoder: bytes in (split anywhere), typed items out."""

from __future__ import annotations

import ctypes
import json
import marshal
from collections.abc import Iterable, Iterator
from typing import Any

from . import _ffi
from ._guard import Owner, locked
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


class Decoder(Owner):
    """SSE framing plus event decoding (the core's), fed chunks split anywhere.

    ::

        with onair.Decoder() as dec:
            for chunk in chunks:
                for item in dec.feed(chunk):
                    match item:
                        case onair.Chat(user_id, nickname, message): ...

    ``max_frame_bytes`` caps one frame (0: the core's default); a larger frame
    becomes a ``FrameError("frame_too_large")`` and memory stays bounded.
    Any thread may call it: calls run one at a time under the decoder's lock,
    held until libonair's batch has been read (``feed`` feeds and takes its
    chunk's items in one locked step); it cannot be copied or pickled.

    Three paths over libonair, the same items (tests check it):

    - default: every item a chunk completes comes over in the call that feeds it
      (``onair_decoder_feed_marshal``: the core's records as CPython marshal
      data) and becomes objects with one ``marshal.loads`` per chunk and one
      ``tuple.__new__`` per item, all inside C (BENCHMARKS.md). Its events are
      plain values. (Should this Python's ``marshal`` ever read libonair's
      batch differently from the JSON path, checked once at import, the
      default is the JSON path.)
    - ``kit_views=True``: one call per item into the tagged ``onair_item``
      struct; each event also keeps the core's event while it is current (until
      the decoder's next item), so it can go to the kit (``Tally.record``,
      ``Audience.on_event``, …) in the loop body. (A ``Bot``'s events always can.)
    - the canonical JSON lines (``onair_decoder_take_json`` + ``json.loads``),
      kept as the tests' oracle for the marshal path (``_form = "json"``).
    """

    _free = _lib.onair_decoder_free

    def __init__(self, max_frame_bytes: int = 0, *, kit_views: bool = False) -> None:
        self._views = kit_views
        self._form = "marshal" if MARSHAL_OK else "json"
        self._p = ctypes.c_void_p()
        self._n = ctypes.c_size_t()
        self._pn = (ctypes.byref(self._p), ctypes.byref(self._n))
        h = ctypes.c_void_p()
        check(_lib.onair_decoder_new(max_frame_bytes, ctypes.byref(h)))
        self._h = h.value
        self._hp = h  # the handle as a c_void_p, for the unchecked call
        self._len = ctypes.c_size_t()
        self._view = memoryview(b"")
        self._view_at, self._view_len = 0, 0
        self._item = _ffi.Item()
        self._item_ref = ctypes.byref(self._item)
        self._event_addr = ctypes.addressof(self._item) + _EVENT_OFFSET

    def _handle(self) -> int:
        """The handle, for tests and benchmarks calling libonair directly (no lock)."""
        h = self._h
        if h is None:
            raise self._closed_error()
        return h

    def _closed(self) -> None:
        self._view = memoryview(b"")
        self._view_at, self._view_len = 0, 0

    def feed(self, chunk: bytes) -> Iterator[Item]:
        """Feeds a chunk (any bytes-like object) and iterates over the items it completes."""
        if type(chunk) is not bytes:
            chunk = bytes(chunk)  # bytearray, memoryview; the unchecked call below takes bytes only
        if self._form != "marshal" or self._views:
            items = self._feed_and_take(chunk)
            return self._drain_views() if items is None else items
        # The default path: one call feeds and renders the chunk's items (this
        # method is the hot loop's only Python per chunk: `locked` and _batch()
        # inlined). The batch is read (marshal.loads copies it all) under the lock.
        if self._held_here():
            raise self._reentered("feed")
        lock = self._lock
        if self._closing:
            raise self._closed_error()
        try:
            with lock:
                if self._requests:
                    self._apply_requests()
                if self._h is None:
                    raise self._closed_error()
                self._gen += 1
                self._len.value = len(chunk)
                rc = _feed_marshal(self._hp, chunk, self._len, *self._pn)
                if rc:
                    check(rc)
                p, n = self._p.value, self._n.value
                if p != self._view_at or n > self._view_len:
                    tags, records = _marshal_loads(self._batch())
                else:
                    tags, records = _marshal_loads(self._view[:n])
                if self._requests:
                    self._apply_requests()
        finally:
            if self._requests:
                self._try_requests()
        # One C loop: each record (a tuple) becomes an object of its tag's class.
        return map(_new, map(_CLASS_OF, tags), records)

    @locked
    def _feed_and_take(self, chunk: bytes | None) -> Iterator[Item] | None:
        """Feeds ``chunk`` (None: finishes the stream), then takes every pending item
        under the same lock; None on the kit-views path (items come one by one)."""
        if chunk is None:
            check(_lib.onair_decoder_finish(self._h))
        else:
            check(_lib.onair_decoder_feed(self._h, chunk, len(chunk)))
        return None if self._views else self._take()

    def _read_marshal(self) -> Iterator[Item]:
        tags, records = _marshal_loads(self._batch())
        return map(_new, map(_CLASS_OF, tags), records)

    def _batch(self) -> memoryview:
        """The batch libonair just gave (``self._p``, ``self._n``), read in place.

        A view of libonair's buffer, rebuilt when the buffer moves or grows past
        it (rarely: the buffer keeps its capacity), instead of a copy per chunk.
        Only read under the lock, before the next call on this decoder, and
        marshal.loads copies everything out of it.
        """
        p, n = self._p.value or 0, self._n.value
        if p != self._view_at or n > self._view_len:
            self._view = memoryview((ctypes.c_char * n).from_address(p))
            self._view_at, self._view_len = p, n
        return self._view[:n]

    def finish(self) -> Iterator[Item]:
        """Ends the stream: a cut-off frame comes out as ``FrameError("incomplete_frame")``."""
        items = self._feed_and_take(None)
        return self._drain_views() if items is None else items

    def __iter__(self) -> Iterator[Item]:
        """The items decoded and not yet taken."""
        if self._views:
            return self._drain_views()
        return self._take_locked()

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
    @locked
    def pending(self) -> int:
        """Items decoded and not yet taken."""
        return int(_lib.onair_decoder_pending(self._h))

    @locked
    def _take_locked(self) -> Iterator[Item]:
        return self._take()

    def _take(self) -> Iterator[Item]:
        """Every pending item, as objects built from Python data (the caller holds the lock)."""
        self._gen += 1
        if self._form == "json":
            check(_lib.onair_decoder_take_json(self._h, *self._pn))
            n = self._n.value
            if n == 0:
                return iter(())
            text = _string_at(self._p.value or 0, n - 1).decode()  # without the last newline
            rows = _loads("[" + text.replace("\n", ",") + "]")
            return map(_item_from_line, rows)
        check(_lib.onair_decoder_take_marshal(self._h, *self._pn))
        return self._read_marshal()

    def _drain_views(self) -> Iterator[Item]:
        """One item per step, each taken and read under the lock (never held across a yield)."""
        while True:
            item = self._next_view()
            if item is None:
                return
            yield item

    @locked
    def _next_view(self) -> Item | None:
        item = self._item
        self._gen += 1  # the previous item's event is no longer current
        check(_lib.onair_decoder_next(self._h, self._item_ref))
        kind = item.kind
        if kind == 1:
            return event_from_view(item.event, self, self._event_addr)
        if kind == 0:
            return None
        if kind == 3:
            return _HEARTBEAT
        if kind == 4:
            return Comment(_ss(item.text))
        if kind == 5:
            return Retry(item.retry_ms)
        if kind == 2:
            return UnknownFrame(_s(item.name), _s(item.id), _s(item.text))
        return FrameError(_ss(item.error_code), _ss(item.error_message), _s(item.name), _s(item.id), _s(item.text))

    @locked
    def item_json(self) -> str:
        """The canonical JSON line (``onair decode``'s) of the item last taken."""
        p = ctypes.c_void_p()
        n = ctypes.c_size_t()
        check(_lib.onair_decoder_item_json(self._h, ctypes.byref(p), ctypes.byref(n)))
        return _ffi.borrowed(p, n)

    def __repr__(self) -> str:
        return f"Decoder(closed={self.closed})"


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
