"""The marshal path (the default Decoder) against its oracle, the JSON path.

``Decoder()`` reads libonair's records as CPython marshal data
(``onair_decoder_feed_marshal`` + ``marshal.loads``); ``Decoder()._form = "json"``
reads the canonical JSON lines (``onair_decoder_take_json`` + ``json.loads``).
Both must give equal items — same classes, same attribute values and types — on
every fixture stream, on random chunkings, and on texts holding control
characters (U+001D–U+001F, NUL escapes), nulls, emoji, huge integers and floats,
and CR-only line ends.
"""

from __future__ import annotations

import copy
import ctypes
import json
import marshal
import pickle
import random
import re
from pathlib import Path
from typing import Any

import onair
import pytest
from conftest import ROOT
from onair.decoder import MARSHAL_OK
from onair.events import RECORDS

FIXTURES = sorted((ROOT / "fixtures" / "streams").glob("*.sse"))


def decode(chunks: list[bytes], form: str = "marshal") -> list[onair.Item]:
    with onair.Decoder() as dec:
        dec._form = form
        out = [item for c in chunks for item in dec.feed(c)]
        out.extend(dec.finish())
    return out


def values(item: onair.Item) -> tuple[Any, ...]:
    """Class, then every public attribute with its type: equal items, strictly."""
    names = [*item._fields, *(["is_live_ended"] if isinstance(item, onair.End) else [])]
    return (type(item), *((n, getattr(item, n), type(getattr(item, n))) for n in names))


def same(chunks: list[bytes]) -> list[onair.Item]:
    got = decode(chunks)
    oracle = decode(chunks, "json")
    assert [values(i) for i in got] == [values(i) for i in oracle]
    assert got == oracle
    assert [repr(i) for i in got] == [repr(i) for i in oracle]
    # Taken rather than fed: the same items.
    with onair.Decoder() as dec:
        for c in chunks:
            onair._ffi.lib.onair_decoder_feed(dec._handle(), c, len(c))
        taken = list(dec) + list(dec.finish())
    assert [values(i) for i in taken] == [values(i) for i in oracle]
    return got


def split(data: bytes, rng: random.Random) -> list[bytes]:
    cuts = sorted(rng.sample(range(1, len(data)), min(len(data) - 1, rng.randint(1, 60))))
    return [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)])]


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: Path(p).name)
def test_every_fixture_whole_and_in_random_chunks(path: Path) -> None:
    data = path.read_bytes()
    whole = same([data])
    assert len(whole) > 5
    rng = random.Random(path.name)
    for _ in range(200):
        assert same(split(data, rng)) == whole
    assert same([bytes([b]) for b in data]) == whole


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: Path(p).name)
def test_every_fixture_with_cr_only_line_ends(path: Path) -> None:
    data = path.read_bytes().replace(b"\r\n", b"\n").replace(b"\n", b"\r")
    whole = same([data])
    assert whole == decode([path.read_bytes()])
    rng = random.Random(7)
    for _ in range(50):
        assert same(split(data, rng)) == whole


def _event(name: str, data: dict[str, Any], frame_id: str | None = None) -> bytes:
    head = f"id:{frame_id}\n" if frame_id is not None else ""
    return f"{head}event:{name}\ndata:{json.dumps(data, ensure_ascii=False)}\n\n".encode()


TEXTS = [
    "",
    "plain",
    "a\x1fb",  # control characters (the separators of the earlier packed text form)
    "\x1d",
    "x\x00y",
    "\x1e record separator",
    "\x1f\x1d\x1e",
    "N",  # marshal's None code as text
    "x" * 300,  # longer than a short ASCII string
    "é" * 300,
    "🎧 emoji 별빛 ✨ and \u200d joiners 👩‍👩‍👧",
    "tab\tand\\backslash \"quotes\"",
    "null",
    "1",
]


def _streams(rng: random.Random, n: int) -> bytes:
    """Every event kind with random texts (markers included), nulls and numbers."""
    out: list[bytes] = []
    pick = rng.choice
    for i in range(n):
        text = pick(TEXTS) + pick(TEXTS)
        nick = pick([None, *TEXTS])
        user = {"id": pick(TEXTS) or "u", "nickname": nick}
        fid = pick([None, f"{i}-1", f"{i}\x1f2", f"{i}é"])
        kind = rng.randrange(9)
        if kind == 0:
            out.append(_event("chat", {"user": user, "isDj": rng.random() < 0.5, "message": text,
                                       "sentTime": pick(TEXTS)}, fid))
        elif kind == 1:
            combo = pick([None, 1, 2**31 - 1, 2**31, 2**63])
            out.append(_event("like", {"user": user, "type": pick(["PAID", "FREE", *TEXTS]),
                                       "totalAmount": rng.randrange(2**64), "amount": rng.randrange(100),
                                       "extraAmount": 0, "combo": combo, "time": pick(TEXTS)}, fid))
        elif kind == 2:
            temp = pick([None, 36, 36.5, 0.1, 1e-7, 1e300, -0.0, 12345678901234567890])
            out.append(_event("presence", {"user": user, "type": pick(["JOIN", *TEXTS]),
                                           "fanRank": pick([None, 0, 7, 2**64 - 1]), "isManager": rng.random() < 0.5,
                                           "favoriteTemperature": temp, "time": pick(TEXTS)}, fid))
        elif kind == 3:
            out.append(_event("donation", {"user": user, "amount": rng.randrange(10**6),
                                           "message": pick([None, *TEXTS]), "time": pick(TEXTS)}, fid))
        elif kind == 4:
            out.append(_event("end", {"reason": pick(["LIVE_ENDED", "RECONNECT", *TEXTS])}, fid))
        elif kind == 5:
            out.append(f":{text}\n\n".encode() if rng.random() < 0.5 else b":heartbeat\n\n")
        elif kind == 6:
            out.append(f"retry:{rng.randrange(10**6)}\n\n".encode())
        elif kind == 7:
            out.append(f"event:poll{pick(TEXTS)}\ndata:{text}\n\n".encode())
        else:
            out.append(f"event:chat\ndata:{{{text}\n\n".encode())  # not JSON: a frame error
    if rng.random() < 0.3:
        out.append(b"event:chat\ndata:{")  # cut off: incomplete_frame at finish
    return b"".join(out)


def test_random_streams_with_markers_nulls_and_emoji() -> None:
    rng = random.Random(1515)
    tags: set[str] = set()
    for _ in range(40):
        data = _streams(rng, 60)
        for sep in (b"\n", b"\r", b"\r\n"):
            d = data.replace(b"\n", sep)
            whole = same([d])
            assert same(split(d, rng)) == whole
        tags |= _tags(data)
    # Every tag came up.
    assert tags == set(RECORDS), tags


def _tags(data: bytes) -> set[str]:
    """The tags of the marshal batch of ``data``, straight from libonair."""
    lib = onair._ffi.lib
    with onair.Decoder() as dec:
        assert lib.onair_decoder_feed(dec._handle(), data, len(data)) == 0
        assert lib.onair_decoder_finish(dec._handle()) == 0
        assert lib.onair_decoder_take_marshal(dec._handle(), *dec._pn) == 0
        tags, records = marshal.loads(ctypes.string_at(dec._p.value or 0, dec._n.value))
    assert len(tags) == len(records)
    return set(tags)


def test_this_pythons_marshal_reads_libonairs_batches() -> None:
    assert MARSHAL_OK and onair.Decoder()._form == "marshal"


def test_a_marshal_that_reads_otherwise_falls_back_to_json(monkeypatch: pytest.MonkeyPatch) -> None:
    def wrong(data: bytes) -> Any:
        tags, records = marshal.loads(data)
        return tags, tuple(tuple(reversed(r)) for r in records)

    monkeypatch.setattr(onair.decoder, "_marshal_loads", wrong)
    assert not onair.decoder._marshal_reads_like_json()

    def broken(data: bytes) -> Any:
        raise ValueError("bad marshal data")

    monkeypatch.setattr(onair.decoder, "_marshal_loads", broken)
    assert not onair.decoder._marshal_reads_like_json()
    monkeypatch.setattr(onair.decoder, "MARSHAL_OK", False)
    with onair.Decoder() as dec:
        assert dec._form == "json"
        assert list(dec.feed(b"retry:5\n\n")) == [onair.Retry(5)]


def test_the_record_table_mirrors_the_core() -> None:
    """RECORDS (Python) and the table of ffi/src/marshal.rs: the same tags and field names."""
    doc = (ROOT / "ffi" / "src" / "marshal.rs").read_text()
    rows = dict(re.findall(r"^//! \| `(\w)` \| [\w ]+ \| (.*) \|$", doc, re.M))
    assert set(rows) == set(RECORDS), rows
    for tag, (cls, names) in RECORDS.items():
        listed = [] if tag == "h" else re.findall(r"(\w+): \w+\??", rows[tag])
        # The item's event name is `event_name` in Python (`event` on the wire).
        listed = ["event_name" if n == "event" else n for n in listed]
        assert listed == names.split(), (tag, listed, names)


def test_constructors_store_in_the_tables_order() -> None:
    """Each class's constructor and attributes agree with RECORDS (the decoder builds from it)."""
    for cls, names in RECORDS.values():
        fields = names.split()
        args = [f"{name}-v" for name in fields]
        item = cls(*args)
        for name, value in zip(fields, args):
            assert getattr(item, name) == value, (cls, name)
        assert tuple.__new__(cls, args) == item


def test_items_are_values(service_stream: bytes) -> None:
    items = decode([service_stream])
    chat = next(i for i in items if isinstance(i, onair.Chat))
    with pytest.raises(AttributeError):
        chat.message = "changed"  # type: ignore[misc]
    assert copy.copy(chat) == chat and copy.deepcopy(chat) == chat
    assert pickle.loads(pickle.dumps(chat)) == chat
    assert hash(chat) == hash(copy.copy(chat))
    assert chat != onair.Chat(chat.id, chat.user_id, chat.nickname, chat.is_dj, chat.message + "!", chat.sent_time)
    assert chat == onair.Chat(chat.id, chat.user_id, chat.nickname, chat.is_dj, chat.message, chat.sent_time)
    assert chat != tuple(chat) and all(bool(i) for i in items)
    heartbeat = next(i for i in items if isinstance(i, onair.Heartbeat))
    assert heartbeat == onair.Heartbeat() and repr(heartbeat) == "Heartbeat()"
    with pytest.raises(TypeError):
        _ = chat < chat  # type: ignore[operator]
    end = items[-1]
    assert isinstance(end, onair.End) and end.is_live_ended is True
    assert copy.copy(end).is_live_ended is True


@pytest.mark.parametrize("views", [False, True])
def test_feed_takes_bytes_like_chunks(views: bool) -> None:
    data = b":heartbeat\n\nretry:5\n\n"
    expected = [onair.Heartbeat(), onair.Retry(5)]
    for chunk in (data, bytearray(data), memoryview(data)):
        with onair.Decoder(kit_views=views) as dec:
            assert list(dec.feed(chunk)) == expected  # type: ignore[arg-type]
    with onair.Decoder(kit_views=views) as dec, pytest.raises(TypeError):
        dec.feed(":heartbeat\n\n")  # type: ignore[arg-type]


def test_a_closed_decoder_refuses_before_the_unchecked_call() -> None:
    dec = onair.Decoder()
    assert list(dec.feed(b"retry:1\n\n")) == [onair.Retry(1)]
    dec.close()
    with pytest.raises(ValueError):
        dec.feed(b"retry:1\n\n")


def test_the_fallback_accessor_reads_the_same() -> None:
    """Where namedtuple's C accessor is missing, attributes are properties over itemgetter."""
    from onair.events import _property_getter

    class T(tuple):  # type: ignore[type-arg]
        x = _property_getter(1, "x")

    assert T((0, 5)).x == 5
