"""The packed path (the default Decoder) against its oracle, the JSON path.

``Decoder()`` reads libonair's packed records (``onair_decoder_take_packed``);
``Decoder()._form = "json"`` reads the canonical JSON lines
(``onair_decoder_take_json`` + ``json.loads``). Both must give equal items —
same classes, same attribute values and types — on every fixture stream, on
random chunkings, and on texts holding the packed markers (U+001D, U+001F, which
fall back to JSON records), U+001E, nulls, emoji and CR-only line ends.
"""

from __future__ import annotations

import copy
import ctypes
import json
import pickle
import random
import re
from pathlib import Path
from typing import Any

import onair
import pytest
from conftest import ROOT
from onair.events import PACKED, PACKED_WIDTH

FIXTURES = sorted((ROOT / "fixtures" / "streams").glob("*.sse"))


def decode(chunks: list[bytes], form: str = "packed") -> list[onair.Item]:
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
    packed = decode(chunks)
    oracle = decode(chunks, "json")
    assert [values(i) for i in packed] == [values(i) for i in oracle]
    assert packed == oracle
    assert [repr(i) for i in packed] == [repr(i) for i in oracle]
    return packed


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
    "a\x1fb",  # the field separator: falls back to JSON
    "\x1d",  # exactly the null marker: falls back to JSON
    "x\x1dy",
    "\x1e record separator is plain text",
    "\x1f\x1d\x1e",
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
        fid = pick([None, f"{i}-1", f"{i}\x1f2"])
        kind = rng.randrange(9)
        if kind == 0:
            out.append(_event("chat", {"user": user, "isDj": rng.random() < 0.5, "message": text,
                                       "sentTime": pick(TEXTS)}, fid))
        elif kind == 1:
            combo = pick([None, 1, 2**63])
            out.append(_event("like", {"user": user, "type": pick(["PAID", "FREE", *TEXTS]),
                                       "totalAmount": rng.randrange(2**64), "amount": rng.randrange(100),
                                       "extraAmount": 0, "combo": combo, "time": pick(TEXTS)}, fid))
        elif kind == 2:
            temp = pick([None, 36, 36.5, 0.1, 1e-7, 1e300, 12345678901234567890])
            out.append(_event("presence", {"user": user, "type": pick(["JOIN", *TEXTS]),
                                           "fanRank": pick([None, 0, 7]), "isManager": rng.random() < 0.5,
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
    # Every tag came up, the JSON fallback included.
    assert tags == {*PACKED, "j"}, tags


def _tags(data: bytes) -> set[str]:
    """The tags of the packed batch of ``data``, straight from libonair."""
    lib = onair._ffi.lib
    with onair.Decoder() as dec:
        assert lib.onair_decoder_feed(dec._handle(), data, len(data)) == 0
        assert lib.onair_decoder_take_packed(dec._handle(), *dec._pn) == 0
        batch = ctypes.string_at(dec._p.value or 0, dec._n.value).decode()
    return set(batch.split("\x1f")[-1])


def test_a_marker_falls_back_to_json_for_that_item_only() -> None:
    chat = _event("chat", {"user": {"id": "u", "nickname": None}, "isDj": False, "message": "a\x1fb",
                           "sentTime": "t"}, "1-0")
    data = b":heartbeat\n\n" + chat + b"retry:5\n\n"
    assert _tags(data) == {"h", "j", "r"}
    items = same([data])
    assert isinstance(items[1], onair.Chat) and items[1].message == "a\x1fb" and items[1].nickname is None
    assert items[1].id == "1-0" and items[2] == onair.Retry(5)


def test_the_layout_table_mirrors_the_header() -> None:
    """PACKED (Python) and the tag list of onair_decoder_take_packed (onair.h): same fields, nulls."""
    header = (ROOT / "include" / "onair.h").read_text()
    doc = header[: header.index("onair_result onair_decoder_take_packed(")]
    doc = doc[doc.rindex("/**"):]
    lines = dict(re.findall(r"^ \* - `(\w)` [\w ]+: (.*)$", doc, re.M))
    for tag, (cls, spec) in PACKED.items():
        fields = spec.split()
        if tag == "h":
            continue
        listed = [f.strip() for f in re.sub(r" \([^)]*\)", "", lines[tag]).split(",")]
        assert len(listed) == len(fields), (tag, listed, fields)
        for name_form, wire in zip(fields, listed):
            assert name_form.endswith("?") == wire.endswith("?"), (tag, name_form, wire)
    assert "`h` heartbeat (no field)" in doc
    assert f"#define ONAIR_PACKED_WIDTH {PACKED_WIDTH}" in header
    assert max(len(spec.split()) for _, spec in PACKED.values()) == PACKED_WIDTH


def test_constructors_store_in_the_tables_order() -> None:
    """Each class's constructor and attributes agree with PACKED (the decoder builds from it)."""
    samples: dict[str, Any] = {
        "s": "text", "s?": None, "i": 7, "i?": None, "b": True, "f?": 36.5,
    }
    for cls, spec in PACKED.values():
        fields = [f.split(":") for f in spec.split()]
        if cls is onair.Heartbeat:
            assert cls() == cls()
            continue
        args = [f"{name}-v" if form == "s" else samples[form] for name, form in fields]
        item = cls(*args)
        for (name, form), value in zip(fields, args):
            assert getattr(item, name) == value, (cls, name)
        # The same record as the decoder would build it from packed text.
        raw = [
            "\x1d" if v is None else ("1" if v else "0") if form == "b" else str(v)
            for (_, form), v in zip(fields, args)
        ]
        assert tuple.__new__(cls, raw + [""] * (PACKED_WIDTH - len(raw))) == item


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
