"""Shared fixtures of the onair Python tests (the installed package is imported)."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CLIENT_ID = "3f2504e0-4f89-11d3-9a0c-0305e82c3301"
TOKEN_BODY = (
    b'{"access_token":"AT-xyz","token_type":"bearer","refresh_token":"RT-xyz",'
    b'"expires_in":3600,"scope":"chat.send live.read events.chat events.presence '
    b'events.like events.donation listeners.read fans.read"}'
)
BOT_STREAM = (
    b'event:presence\ndata:{"user":{"id":"u-1","nickname":"sky"},"type":"JOIN",'
    b'"fanRank":null,"isManager":false,"favoriteTemperature":null,"time":"t"}\n\n'
    b'event:chat\ndata:{"user":{"id":"u-1","nickname":"sky"},"isDj":false,'
    b'"message":"!Hello  there","sentTime":"t"}\n\n'
    b'event:presence\ndata:{"user":{"id":"u-1","nickname":"sky"},"type":"JOIN",'
    b'"fanRank":null,"isManager":false,"favoriteTemperature":null,"time":"t"}\n\n'
    b'event:donation\ndata:{"user":{"id":"u-1","nickname":"sky"},"amount":700,'
    b'"message":"hi","time":"t"}\n\n'
    b'event:chat\ndata:{"user":{"id":"u-1","nickname":"sky"},"isDj":false,'
    b'"message":"!stop","sentTime":"t"}\n\n'
    b"event:chat\ndata:{broken\n\n"
)


@pytest.fixture
def service_stream() -> bytes:
    return (ROOT / "fixtures" / "streams" / "service.sse").read_bytes()


@pytest.fixture
def broken_stream() -> bytes:
    return (ROOT / "fixtures" / "streams" / "broken.sse").read_bytes()
