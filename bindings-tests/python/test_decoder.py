"""The decoder: typed items (frozen dataclasses), every split of the stream, bounded memory."""

from __future__ import annotations

import gc
import json
import random
import tracemalloc

import onair
import pytest


def decode(chunks: list[bytes]) -> list[onair.Item]:
    with onair.Decoder() as dec:
        out = [item for c in chunks for item in dec.feed(c)]
        out.extend(dec.finish())
    return out


def test_service_stream_typed(service_stream: bytes) -> None:
    items = decode([service_stream])
    kinds = [type(i).__name__ for i in items]
    assert kinds[0] == "Heartbeat"
    chat = items[1]
    assert isinstance(chat, onair.Chat)
    assert chat.is_dj and chat.user.nickname == "DJ Mina" and chat.message == "Welcome everyone!"
    assert chat.id == "1732250000000-0" and chat.NAME == "chat"
    assert chat.sent_time == "2024-11-22T04:33:20.123Z"
    presence = [i for i in items if isinstance(i, onair.Presence)]
    assert presence[0].fan_rank is None and presence[0].favorite_temperature is None
    assert presence[1].fan_rank == 2 and presence[1].favorite_temperature == 36.5 and presence[1].is_manager
    likes = [i for i in items if isinstance(i, onair.Like)]
    assert likes[0].combo is None and not likes[0].is_paid
    assert (likes[1].total_amount, likes[1].amount, likes[1].extra_amount, likes[1].combo) == (60, 10, 5, 4)
    assert likes[1].user.nickname is None and likes[1].is_paid and likes[1].type is onair.LikeType.PAID
    donations = [i for i in items if isinstance(i, onair.Donation)]
    assert donations[0].amount == 500 and donations[0].message == "Play my song 🎵"
    assert donations[1].message is None
    unknown = [i for i in items if isinstance(i, onair.UnknownFrame)]
    assert unknown[0].event == "poll" and json.loads(unknown[0].data)["options"] == ["A", "B"]
    end = items[-1]
    assert isinstance(end, onair.End) and end.reason is onair.EndReason.LIVE_ENDED and end.is_live_ended


def test_match_statement(service_stream: bytes) -> None:
    seen = []
    for item in decode([service_stream]):
        match item:
            case onair.Chat(onair.User(user_id), _, _):
                seen.append(("chat", user_id))
            case onair.Donation(amount=amount) if amount >= 100:
                seen.append(("big", amount))
            case onair.End(reason="LIVE_ENDED"):
                seen.append(("end", None))
            case _:
                pass
    assert ("big", 500) in seen and seen[-1] == ("end", None) and seen[0][0] == "chat"


def test_errors_and_other_items(broken_stream: bytes) -> None:
    items = decode([broken_stream])
    codes = [i.code for i in items if isinstance(i, onair.FrameError)]
    assert "invalid_json" in codes
    items = decode([b":just a comment\n\nretry:3000\n\nevent:chat\ndata:{"])
    assert isinstance(items[-1], onair.FrameError) and items[-1].code == "incomplete_frame"
    assert onair.Comment("just a comment") in items
    assert onair.Retry(3000) in items


def test_frame_too_large_bounded() -> None:
    with onair.Decoder(max_frame_bytes=64) as dec:
        items = list(dec.feed(b"event:chat\ndata:" + b"x" * 4000 + b"\n\n:heartbeat\n\n"))
    assert isinstance(items[0], onair.FrameError) and items[0].code == "frame_too_large"
    assert isinstance(items[1], onair.Heartbeat)


def test_every_split_gives_the_same_items(service_stream: bytes) -> None:
    """The chunking property: every two-way split, and seeded random many-way splits."""
    whole = decode([service_stream])
    data = service_stream
    for cut in range(len(data) + 1):
        assert decode([data[:cut], data[cut:]]) == whole, cut
    rng = random.Random(15)
    for _ in range(300):
        cuts = sorted(rng.sample(range(1, len(data)), rng.randint(1, 40)))
        parts = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)])]
        assert decode(parts) == whole
    assert decode([bytes([b]) for b in data]) == whole


def test_closed_decoder_refuses() -> None:
    dec = onair.Decoder()
    dec.close()
    dec.close()
    with pytest.raises(ValueError):
        list(dec.feed(b"x"))


def _stream(n_frames: int) -> bytes:
    frame = (
        b'id:1-0\nevent:chat\ndata:{"user":{"id":"u-1","nickname":"sky"},"isDj":false,'
        b'"message":"hello there","sentTime":"t"}\n\n'
    )
    return frame * n_frames


def test_no_growth_over_many_events() -> None:
    """3 * 10**5 events through one decoder: Python heap and RSS stay flat."""
    chunk = _stream(1000)
    dec = onair.Decoder()

    def run(rounds: int) -> int:
        n = 0
        for _ in range(rounds):
            for item in dec.feed(chunk):
                n += 1
        return n

    run(50)
    gc.collect()
    rss0 = _rss_kib()
    assert run(250) == 250_000
    gc.collect()
    rss1 = _rss_kib()
    # The Python heap, object by object, over 2 * 10**4 more (tracemalloc is slow).
    tracemalloc.start()
    snap0 = tracemalloc.take_snapshot()
    assert run(20) == 20_000
    gc.collect()
    snap1 = tracemalloc.take_snapshot()
    tracemalloc.stop()
    grown = sum(s.size_diff for s in snap1.compare_to(snap0, "filename"))
    dec.close()
    assert grown < 64 * 1024, grown
    assert rss1 - rss0 < 8 * 1024, (rss0, rss1)


def _rss_kib() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0
