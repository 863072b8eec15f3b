"""Shared fixtures of the onair Python tests (the installed package is imported).

``emulator`` starts ``onair serve --json`` (``$ONAIR_BIN``, default the
workspace's ``target/debug/onair``) on 127.0.0.1 with an ephemeral port, never
any other address, and stops it after the test.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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
KIT = {
    "commands": [{"name": "hello", "aliases": ["hi"]}, {"name": "stop", "allowed": "dj"}],
    "greetings": {"welcome_back_after_ms": 600000},
    "milestones": {"hearts_every": 100, "donations_every": 500},
    "tally": True,
}


def onair_bin() -> str:
    path = os.environ.get("ONAIR_BIN") or str(ROOT / "target" / "debug" / "onair")
    if not Path(path).exists():
        pytest.fail(f"{path} is missing: cargo build -p onair-cli (scripts/test-python builds it)")
    return path


class Emulator:
    """``onair serve --json`` on 127.0.0.1 (an ephemeral port) and its control API."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen(
            [onair_bin(), "serve", "--json", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], 30)
        if not ready:
            self.close()
            raise RuntimeError("onair serve did not say where it is within 30 s")
        info = json.loads(self.proc.stdout.readline())
        self.base_url: str = info["baseUrl"]
        self.control: str = info["controlUrl"]
        self.client_id: str = info["clientId"]
        self.client_secret: str = info["clientSecret"]
        self.redirect_uri: str = info["redirectUri"]
        assert self.base_url.startswith("http://127.0.0.1:"), self.base_url
        self.port = int(self.base_url.rsplit(":", 1)[1].split("/")[0])

    def ctl(self, path: str, body: Any = None) -> Any:
        """A control call: GET without a body, POST with one."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.control + path, data=data, method="GET" if body is None else "POST")
        req.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(req, timeout=10) as resp:
            return json.loads(resp.read() or b"null")

    def code(self, **consent: Any) -> str:
        return str(self.ctl("/consent", consent)["code"])

    def requests(self, path: str | None = None) -> list[dict[str, Any]]:
        q = f"?path={path}" if path else ""
        return list(self.ctl(f"/requests{q}")["requests"])

    def ledger_totals(self, client_id: str | None = None) -> list[dict[str, Any]]:
        """This app's totals per broadcast (the truth a tally must equal)."""
        out = []
        for b in self.ctl("/ledger")["broadcasts"]:
            for bot in b["bots"]:
                if bot["clientId"] == (client_id or self.client_id):
                    out.append({**bot["totals"], "liveId": b["liveId"]})
        return out

    def wait(self, what: str, predicate: Any, timeout: float = 20) -> Any:
        """Polls ``GET what`` until ``predicate(answer)``; the answer."""
        deadline = time.monotonic() + timeout
        while True:
            answer = self.ctl(what)
            if predicate(answer):
                return answer
            if time.monotonic() > deadline:
                raise AssertionError(f"{what}: not there within {timeout} s: {answer}")
            time.sleep(0.05)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


@pytest.fixture
def emulator() -> Iterator[Emulator]:
    """An emulator with no scenario, time at real speed, the DJ on air, the bot a manager."""
    emu = Emulator("--speed", "1")
    try:
        emu.ctl("/state", {"botManager": True})
        emu.ctl("/live/start", {"title": "tests"})
        yield emu
    finally:
        emu.close()


@pytest.fixture
def service_stream() -> bytes:
    return (ROOT / "fixtures" / "streams" / "service.sse").read_bytes()


@pytest.fixture
def broken_stream() -> bytes:
    return (ROOT / "fixtures" / "streams" / "broken.sse").read_bytes()


def open_connections(port: int) -> int:
    """TCP connections this process has open to 127.0.0.1:``port`` (Linux /proc)."""
    inodes = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            link = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(link[8:-1])
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            remote, state, inode = fields[2], fields[3], fields[9]
            if inode in inodes and int(remote.rsplit(":", 1)[1], 16) == port and state != "0A":
                count += 1
    return count
