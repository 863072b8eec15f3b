"""docs/python.md's code, run, so no example in the guide rots.

Every ```python block of the guide starts with a ``# <name>.py`` line. Each runs
as a program in a fresh folder (the installed package, this interpreter), with an
emulator started here on 127.0.0.1 (an ephemeral port; conftest's ``emulator``:
on air, the bot a manager) and where it is in the variables the guide names:
ONAIR_BASE_URL, ONAIR_CLIENT_ID, ONAIR_CLIENT_SECRET, ONAIR_CODE (a fresh consent
code), ONAIR_REDIRECT_URI; ``onair`` (the emulator's command) is on PATH. A block
that runs a bot until Ctrl-C gets a broadcast played to it and then SIGINT; every
block must exit 0 by itself within a minute, and leave no asyncio task behind
(``asyncio.run`` is wrapped to check). All blocks together pass mypy --strict.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import ROOT, Emulator, onair_bin

GUIDE = ROOT / "docs" / "python.md"

# Runs a block as __main__; an asyncio.run that leaves a task behind fails it.
RUNNER = """
import asyncio, runpy, sys

_run = asyncio.run

def checked_run(main, **kwargs):
    async def checked():
        result = await main
        left = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        if left:
            raise SystemExit(f"guide block: asyncio tasks left behind: {left}")
        return result
    return _run(checked(), **kwargs)

asyncio.run = checked_run
runpy.run_path(sys.argv[1], run_name="__main__")
"""


def guide_blocks() -> dict[str, str]:
    """The guide's ```python blocks by the file name on their first line."""
    blocks: dict[str, str] = {}
    for body in re.findall(r"^```python\n(.*?)^```\s*$", GUIDE.read_text(encoding="utf-8"), re.S | re.M):
        first = body.split("\n", 1)[0]
        m = re.fullmatch(r"# (\w+\.py)", first)
        assert m, f"a python block of {GUIDE.name} does not start with '# <name>.py': {first!r}"
        assert m[1] not in blocks, f"two python blocks named {m[1]}"
        blocks[m[1]] = body
    return blocks


BLOCKS = guide_blocks()
MINA = {"id": "u1", "nickname": "Mina"}
ANSWERS = ["Welcome, Mina! 🎧", "Hello, Mina!", "Thank you, Mina!"]


# What a test changes in a block before it runs it (the busy room's ten minutes away).
SHORTER = {"busy.py": [('"welcome_back_after_ms": 600000', '"welcome_back_after_ms": 1500')]}


class Run:
    """A block running as a program; its output in files (unbuffered)."""

    def __init__(self, name: str, emu: Emulator, folder: Path) -> None:
        self.folder = folder
        path = folder / name
        text = BLOCKS[name]
        for old, new in SHORTER.get(name, []):
            assert old in text, f"{name} no longer holds {old}"
            text = text.replace(old, new)
        path.write_text(text, encoding="utf-8")
        env = {
            **os.environ,
            "ONAIR_BASE_URL": emu.base_url,
            "ONAIR_CLIENT_ID": emu.client_id,
            "ONAIR_CLIENT_SECRET": emu.client_secret,
            "ONAIR_CODE": emu.code(),
            "ONAIR_REDIRECT_URI": emu.redirect_uri,
            "PATH": f"{Path(onair_bin()).parent}{os.pathsep}{os.environ.get('PATH', '')}",
            "PYTHONUNBUFFERED": "1",
        }
        self.out_path, self.err_path = folder / "stdout.txt", folder / "stderr.txt"
        with open(self.out_path, "wb") as out, open(self.err_path, "wb") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", RUNNER, str(path)], cwd=folder, env=env, stdout=out, stderr=err
            )

    def out(self) -> str:
        return self.out_path.read_text(encoding="utf-8")

    def until_printed(self, pattern: str, timeout: float = 20) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while not (m := re.search(pattern, self.out(), re.M)):
            assert self.proc.poll() is None, f"the block ended: {self.out()}{self.err_path.read_text()}"
            assert time.monotonic() < deadline, f"{pattern!r} not printed within {timeout} s: {self.out()}"
            time.sleep(0.05)
        return m

    def finish(self, timeout: float = 60) -> str:
        """Waits for the exit (0); its stdout."""
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            pytest.fail(f"the block did not end within {timeout} s: {self.out()}{self.err_path.read_text()}")
        assert rc == 0, f"exit {rc}: {self.out()}{self.err_path.read_text()}"
        return self.out()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def converse(emu: Emulator) -> None:
    """A join, a command, hearts, a donation: the bot's three answers."""
    emu.wait("/state", lambda s: s["openStreams"] >= 1)
    for event, data in [
        ("presence", {"user": MINA}),
        ("chat", {"user": MINA, "message": "!hello"}),
        ("like", {"user": MINA, "type": "PAID", "amount": 10, "combo": 3}),
        ("donation", {"user": MINA, "amount": 500}),
    ]:
        assert emu.ctl("/emit", {"event": event, "data": data})["delivered"] == 1
    chat = emu.wait("/chat", lambda c: len(c["messages"]) >= 3)
    # The kit's replies and a reply the loop writes may go out in either order.
    assert sorted(m["message"] for m in chat["messages"]) == sorted(ANSWERS)


def stop_with_ctrl_c(emu: Emulator, run: Run) -> None:
    """SIGINT: a clean shutdown, exit 0; the tokens (0600) and the kit state kept, no revoke."""
    run.proc.send_signal(signal.SIGINT)
    run.finish(30)
    assert (run.folder / "tokens.json").stat().st_mode & 0o777 == 0o600
    assert json.loads((run.folder / "state.json").read_text())["format"] == "onair.kit"
    assert emu.requests("/v1/oauth/revoke") == []
    exchanges = [r for r in emu.requests("/v1/oauth/token") if r.get("grant") == "authorization_code"]
    assert len(exchanges) == 1


def drive_bot(emu: Emulator, run: Run) -> None:
    converse(emu)
    stop_with_ctrl_c(emu, run)


def drive_bot_match(emu: Emulator, run: Run) -> None:
    converse(emu)
    emu.ctl("/live/end", {})
    said = run.until_printed(r"^broadcast (\d+): (\d+) hearts, (\d+) donated$")
    truth = emu.ledger_totals()[-1]
    assert (int(said[1]), int(said[2]), int(said[3])) == (truth["liveId"], truth["hearts"], truth["donated"])
    assert (truth["hearts"], truth["donated"]) == (30, 500)
    stop_with_ctrl_c(emu, run)
    assert "stopped (shut_down)" in run.out()


def drive_busy(emu: Emulator, run: Run) -> None:
    """The busy room's bot: its configured welcome alone; then, with the chat limit
    holding the queue, three arrivals in one message, and two returns (the handler's
    texts) in one message with the kind's text for many; Ctrl-C."""
    emu.wait("/state", lambda s: s["openStreams"] >= 1)
    people = [{"id": f"u{n}", "nickname": name} for n, name in enumerate(["Zed", "Ana", "민지", "Jörg"])]

    def emit(event: str, user: dict[str, str]) -> None:
        assert emu.ctl("/emit", {"event": event, "data": {"user": user}})["delivered"] == 1

    emit("presence", people[0])
    emu.wait("/chat", lambda c: len(c["messages"]) >= 1)
    emu.ctl("/fail", {"path": "/v1/live/chat", "status": 429, "detailCode": "OAPI_MNGR_0302", "times": 1})
    for p in people[1:]:
        emit("presence", p)
    emu.wait("/chat", lambda c: len(c["messages"]) >= 2)
    time.sleep(2)  # away long enough for a welcome back (1.5 s here)
    emu.ctl("/fail", {"path": "/v1/live/chat", "status": 429, "detailCode": "OAPI_MNGR_0302", "times": 1})
    for p in people[:2]:
        emit("presence", p)
    chat = emu.wait("/chat", lambda c: len(c["messages"]) >= 3)
    assert [m["message"] for m in chat["messages"]] == [
        "Hi Zed, welcome in! 🎧", "Hi Ana, 민지 and Jörg, welcome in! 🎧", "Welcome back, Zed and Ana!"
    ]
    run.proc.send_signal(signal.SIGINT)


def check_consent(emu: Emulator, run: Run) -> None:
    out = run.finish()
    assert "token pair 1 saved in tokens.json (mode 600)" in out, out
    assert (run.folder / "tokens.json").stat().st_mode & 0o777 == 0o600


def check_kit(emu: Emulator, run: Run) -> None:
    out = run.finish()
    assert "commands[0].allowed: unknown variant `admins`" in out, out
    assert "'allowed': 'managers', 'cooldown_ms': 30000" in out, out


def check_threads(emu: Emulator, run: Run) -> None:
    assert run.finish().strip() == "said"
    said = [m["message"] for m in emu.ctl("/chat")["messages"]]
    assert said == ["Tonight's playlist is up on the site 🎶"]


def check_stops(emu: Emulator, run: Run) -> None:
    out = run.finish()
    assert "re-authorize: code exchange failed (HTTP 400 invalid_grant): a new consent code is needed" in out, out
    assert "authorized again: a new token pair in force" in out and "shut down" in out, out


# What the test does with each block while it runs (default: waits for its exit 0).
DRIVE: dict[str, Callable[[Emulator, Run], None]] = {
    "bot.py": drive_bot,
    "bot_match.py": drive_bot_match,
    "busy.py": drive_busy,
    "consent.py": check_consent,
    "kit.py": check_kit,
    "threads.py": check_threads,
    "stops.py": check_stops,
}


def test_the_guide_has_its_blocks() -> None:
    assert set(DRIVE) | {"test_bot.py"} <= set(BLOCKS), sorted(BLOCKS)


@pytest.mark.parametrize("name", sorted(BLOCKS))
def test_guide_block(name: str, emulator: Emulator, tmp_path: Path) -> None:
    run = Run(name, emulator, tmp_path)
    try:
        DRIVE.get(name, lambda emu, run: None)(emulator, run)
        run.finish()
    finally:
        run.close()


def test_guide_blocks_pass_mypy_strict(tmp_path: Path) -> None:
    files = []
    for name, body in BLOCKS.items():
        (tmp_path / name).write_text(body, encoding="utf-8")
        files.append(name)
    cache = ROOT / "target" / "py-mypy-cache"
    r = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(cache if cache.parent.is_dir() else tmp_path / ".mypy"), *files],
        cwd=tmp_path, capture_output=True, text=True,
    )
    assert r.returncode == 0, r.stdout + r.stderr
