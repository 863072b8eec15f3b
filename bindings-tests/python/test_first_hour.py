"""What a newcomer meets in the first hour, through the guide's bot (docs/python.md's
``bot.py``, run as a child process: its exit status and what it prints matter) and
the reference bot (examples/python/bot.py, for its tally): a wrong client secret,
with and without saved tokens; a consent code expired, already used, or none at
all; a token file or kit-state file that does not load; a missing setting; a
service that cannot be reached, with and without saved tokens; Ctrl-C in the
middle of a broadcast, then a restart.

Each test asserts the lines the bot prints and its exit status. The emulator runs
on 127.0.0.1 with an ephemeral port; a "dead port" is one taken from the kernel
and closed again, so connecting to it is refused.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import onair
import onair.aio
import pytest
from conftest import ROOT, Emulator
from test_guide import BLOCKS

GUIDE_BOT = BLOCKS["bot.py"]
REFERENCE_BOT = ROOT / "examples" / "python" / "bot.py"
CONSENT_AGAIN = (
    "bot.py: the DJ must consent again: set ONAIR_CODE to the new code (it lasts 60 s), then start again"
)
CODE_REFUSED = [
    "token: invalid_grant (HTTP 400, invalid_grant): reauthorize",
    "the bot stopped (reauthorize): re-authorize: code exchange failed (HTTP 400 invalid_grant):"
    " a new consent code is needed",
    CONSENT_AGAIN,
]


# What the bots read from the environment (the test's own are left out).
SETTINGS = {
    "ONAIR_BASE_URL", "ONAIR_CLIENT_ID", "ONAIR_CLIENT_SECRET", "ONAIR_CODE", "ONAIR_REDIRECT_URI",
    "ONAIR_TOKENS_FILE", "ONAIR_STATE_FILE", "ONAIR_TALLY_OUT", "ONAIR_ENDS_OUT", "ONAIR_WATCHDOG_MS",
}


class Bot:
    """A bot program in ``folder`` (its token and state files there), its output in files."""

    def __init__(self, folder: Path, env: dict[str, str], program: Path | None = None) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        if program is None:
            program = folder / "bot.py"
            program.write_text(GUIDE_BOT, encoding="utf-8")
        base = {k: v for k, v in os.environ.items() if k not in SETTINGS}
        self.out_path, self.err_path = folder / "stdout.txt", folder / "stderr.txt"
        with open(self.out_path, "wb") as out, open(self.err_path, "wb") as err:
            self.proc = subprocess.Popen(
                [sys.executable, str(program)], cwd=folder, env={**base, "PYTHONUNBUFFERED": "1", **env},
                stdout=out, stderr=err,
            )

    def err(self) -> str:
        return self.err_path.read_text(encoding="utf-8")

    def until_said(self, text: str, timeout: float = 20) -> None:
        """Until ``text`` is in what the bot printed on stderr."""
        deadline = time.monotonic() + timeout
        while text not in self.err():
            assert self.proc.poll() is None, f"the bot ended ({self.proc.returncode}): {self.err()}"
            assert time.monotonic() < deadline, f"{text!r} not said within {timeout} s: {self.err()}"
            time.sleep(0.05)

    def finish(self, timeout: float = 30) -> tuple[int, str]:
        """Waits for the exit: its status and stderr."""
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            pytest.fail(f"the bot did not end within {timeout} s: {self.err()}")
        return rc, self.err()

    def interrupt(self) -> tuple[int, str]:
        """Ctrl-C: its exit status and stderr."""
        self.proc.send_signal(signal.SIGINT)
        return self.finish()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def settings(emu: Emulator, **kw: str | None) -> dict[str, str]:
    """The guide's variables for ``emu``; a keyword replaces one (None leaves it out)."""
    env: dict[str, str | None] = {
        "ONAIR_BASE_URL": emu.base_url,
        "ONAIR_CLIENT_ID": emu.client_id,
        "ONAIR_CLIENT_SECRET": emu.client_secret,
        "ONAIR_REDIRECT_URI": emu.redirect_uri,
    }
    env.update(kw)
    return {k: v for k, v in env.items() if v is not None}


def run_bot(folder: Path, env: dict[str, str], timeout: float = 30) -> tuple[int, str]:
    bot = Bot(folder, env)
    try:
        return bot.finish(timeout)
    finally:
        bot.close()


def saved_pair(emu: Emulator, folder: Path, code: str | None = None) -> str:
    """A token pair saved in ``folder/tokens.json`` (a consent exchanged by a driver); its text."""
    folder.mkdir(parents=True, exist_ok=True)
    store = onair.FileStore(folder / "tokens.json")
    config = onair.Config(emu.base_url, emu.client_id, emu.client_secret)

    async def main() -> None:
        async with onair.aio.Driver(config, tokens=store, code=code or emu.code(), redirect_uri=emu.redirect_uri) as bot:
            async for action in bot:
                if isinstance(action, onair.PersistTokens):
                    bot.shutdown()
                elif isinstance(action, onair.Stopped) and action.code != "shut_down":
                    raise AssertionError(action.message)

    asyncio.run(asyncio.wait_for(main(), 30))
    text = store.load()
    assert text is not None
    return text


def exchanges(emu: Emulator) -> list[dict[str, Any]]:
    return [r for r in emu.requests("/v1/oauth/token") if r.get("grant") == "authorization_code"]


# The request log's fingerprint of the token the credentials check revokes (a token
# that does not exist: 200 for a client that authenticates, 401 invalid_client otherwise).
CHECK = hashlib.sha256(b"onair-credentials-check").hexdigest()[:12]


def checks(emu: Emulator) -> list[dict[str, Any]]:
    return [r for r in emu.requests("/v1/oauth/revoke") if r.get("credential") == CHECK]


def revokes(emu: Emulator) -> list[dict[str, Any]]:
    """Real revocations (the credentials check left out)."""
    return [r for r in emu.requests("/v1/oauth/revoke") if r.get("credential") != CHECK]


def one_line(err: str) -> str:
    """The one line a bot printed (no traceback, nothing else)."""
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


def dead_port() -> int:
    """A port on 127.0.0.1 nothing listens on (connecting is refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Forwarder:
    """Listens on 127.0.0.1:``port`` and pipes every connection to ``target``: the
    service coming back on the port that was dead."""

    def __init__(self, port: int, target: int) -> None:
        self.target = target
        self.server = socket.socket()
        self.server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.server.bind(("127.0.0.1", port))
        self.server.listen(16)
        self.sockets: list[socket.socket] = [self.server]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.target))
            self.sockets += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(a: socket.socket, b: socket.socket) -> None:
        try:
            while data := a.recv(65536):
                b.sendall(data)
        except OSError:
            pass
        finally:
            try:
                b.shutdown(socket.SHUT_WR)
            except OSError:
                pass

    def close(self) -> None:
        for s in self.sockets:
            try:
                s.close()
            except OSError:
                pass


# ---- a wrong client secret ------------------------------------------------------------------


REFUSED_CLIENT = [
    "token: invalid_client (HTTP 401, invalid_client): stop",
    "the bot stopped (invalid_client): client credentials rejected: fix the configuration",
]


def test_a_wrong_secret_stops_the_bot(emulator: Emulator, tmp_path: Path) -> None:
    rc, err = run_bot(tmp_path, settings(emulator, ONAIR_CLIENT_SECRET="not-the-secret", ONAIR_CODE=emulator.code()))
    assert rc == 1, err
    assert "Traceback" not in err, err
    assert err.splitlines() == REFUSED_CLIENT


def test_a_wrong_secret_with_saved_tokens_is_found_at_the_start(emulator: Emulator, tmp_path: Path) -> None:
    pair = saved_pair(emulator, tmp_path)
    since = emulator.ctl("/clock")["nowMs"]
    started = time.monotonic()
    rc, err = run_bot(tmp_path, settings(emulator, ONAIR_CLIENT_SECRET="not-the-secret"))
    assert rc == 1, err
    assert time.monotonic() - started < 15  # at the start, not at the first refresh an hour later
    assert one_line(err) == "the bot stopped (invalid_client): client credentials rejected: fix the configuration"
    assert [r["status"] for r in checks(emulator)] == [401]
    assert revokes(emulator) == []
    assert [r for r in emulator.requests("/v1/oauth/token") if r["atMs"] >= since] == []  # no refresh tried
    assert (tmp_path / "tokens.json").read_text() == pair  # kept: the DJ need not consent again


# ---- consent codes --------------------------------------------------------------------------


def test_an_expired_code_ends_the_run_with_what_to_do(emulator: Emulator, tmp_path: Path) -> None:
    code = emulator.code()
    emulator.ctl("/clock/advance", {"ms": 61_000})  # a code lasts 60 s
    rc, err = run_bot(tmp_path, settings(emulator, ONAIR_CODE=code))
    assert rc == 1, err
    assert "Traceback" not in err, err
    assert err.splitlines() == CODE_REFUSED
    assert len(exchanges(emulator)) == 1
    assert not (tmp_path / "tokens.json").exists()


def test_a_used_code_ends_the_run_with_what_to_do(emulator: Emulator, tmp_path: Path) -> None:
    code = emulator.code()
    env = settings(emulator, ONAIR_CODE=code)
    first = Bot(tmp_path / "first", env)
    try:
        emulator.wait("/state", lambda s: s["openStreams"] >= 1)
        assert first.interrupt()[0] == 0
    finally:
        first.close()
    rc, err = run_bot(tmp_path / "again", env)  # the same code, a bot without the pair
    assert rc == 1, err
    assert "Traceback" not in err, err
    assert err.splitlines() == CODE_REFUSED


def test_no_code_ends_the_run_with_what_to_do(emulator: Emulator, tmp_path: Path) -> None:
    started = time.monotonic()
    rc, err = run_bot(tmp_path, settings(emulator))
    assert rc == 1, err
    assert time.monotonic() - started < 10
    assert "Traceback" not in err, err
    assert err.splitlines() == [
        "the bot stopped (reauthorize): re-authorize: not authorized yet: DJ consent is needed",
        CONSENT_AGAIN,
    ]
    assert emulator.requests("/v1/oauth/token") == []


def test_waiting_for_consent_is_an_opt_in_and_ctrl_c_returns_the_stop(emulator: Emulator) -> None:
    """``wait_for_consent=True``: a refused code waits for ``authorize``; a shutdown then
    still returns the ``reauthorize`` stop (a person must act), not ``shut_down``."""
    config = onair.Config(emulator.base_url, emulator.client_id, emulator.client_secret)

    async def main() -> onair.Stopped | None:
        bot = onair.aio.Driver(config, code="never-issued", redirect_uri=emulator.redirect_uri, wait_for_consent=True)
        seen: list[str] = []
        bot.on_stopped(lambda s: seen.append(s.code))
        run = asyncio.ensure_future(bot.run(signals=False))
        while not seen:
            await asyncio.sleep(0.02)
        await asyncio.sleep(0.3)
        assert not run.done()  # it waits for a new code
        bot.shutdown()  # what Ctrl-C does
        stop = await asyncio.wait_for(run, 10)
        assert seen == ["reauthorize", "shut_down"]
        return stop

    stop = asyncio.run(main())
    assert stop is not None and stop.code == "reauthorize", stop
    assert stop.reason is not None and stop.reason.startswith("code exchange failed")


def test_ctrl_c_while_waiting_for_consent_exits_with_the_stop(emulator: Emulator, tmp_path: Path) -> None:
    """The guide's bot told to wait for a new code: a used code's stop is said and it
    waits; Ctrl-C then ends it with that stop (exit 1 and what to do), not shut_down."""
    code = emulator.code()
    saved_pair(emulator, tmp_path / "first", code)  # a driver exchanges it first
    program = tmp_path / "bot.py"
    waiting = GUIDE_BOT.replace("code=code,", "code=code, wait_for_consent=True,")
    assert waiting != GUIDE_BOT
    program.write_text(waiting, encoding="utf-8")
    bot = Bot(tmp_path, settings(emulator, ONAIR_CODE=code), program)
    try:
        bot.until_said("the bot stopped (reauthorize)")
        time.sleep(0.5)
        assert bot.proc.poll() is None  # it waits
        rc, err = bot.interrupt()
    finally:
        bot.close()
    assert rc == 1, err
    assert err.splitlines() == [*CODE_REFUSED[:2], "the bot waits for the DJ's consent: call authorize(code, redirect_uri)",
                                CONSENT_AGAIN], err


# ---- files and settings ---------------------------------------------------------------------


def test_a_garbage_token_file_is_one_line(emulator: Emulator, tmp_path: Path) -> None:
    (tmp_path / "tokens.json").write_text("garbage\n")
    rc, err = run_bot(tmp_path, settings(emulator))
    assert rc == 1, err
    assert one_line(err) == (
        "tokens.json: the saved token pair does not load: stored tokens are not valid (error at line 1 column 1);"
        " move the file away (or restore a good copy) and authorize the bot again with a new consent code"
    )
    assert emulator.requests() == []


def test_a_token_file_that_cannot_be_read_is_one_line(emulator: Emulator, tmp_path: Path) -> None:
    (tmp_path / "tokens.json").mkdir()
    rc, err = run_bot(tmp_path, settings(emulator))
    assert rc == 1, err
    assert one_line(err) == (
        "tokens.json: the saved token pair does not load: it cannot be read (Is a directory); move the file away"
        " (or restore a good copy) and authorize the bot again with a new consent code"
    )


def test_a_token_file_that_is_not_text_is_one_line(emulator: Emulator, tmp_path: Path) -> None:
    (tmp_path / "tokens.json").write_bytes(b"\xff\xfe\x00garbage")
    rc, err = run_bot(tmp_path, settings(emulator))
    assert rc == 1, err
    assert one_line(err) == (
        "tokens.json: the saved token pair does not load: it is not UTF-8 text; move the file away"
        " (or restore a good copy) and authorize the bot again with a new consent code"
    )


def test_a_garbage_state_file_is_one_line(emulator: Emulator, tmp_path: Path) -> None:
    (tmp_path / "state.json").write_text("{\n")
    rc, err = run_bot(tmp_path, settings(emulator, ONAIR_CODE=emulator.code()))
    assert rc == 1, err
    assert one_line(err) == (
        "state.json: the saved kit state does not load: stored kit state: not valid (error at line 2 column 0);"
        " move the file away (or restore a good copy) and start again"
        " (the bot then counts the broadcast from now and may greet people again)"
    )
    assert emulator.requests() == []  # the code was not spent


@pytest.mark.parametrize("missing", ["ONAIR_BASE_URL", "ONAIR_CLIENT_ID", "ONAIR_CLIENT_SECRET", "ONAIR_REDIRECT_URI"])
def test_a_missing_setting_is_one_line(emulator: Emulator, tmp_path: Path, missing: str) -> None:
    rc, err = run_bot(tmp_path, settings(emulator, ONAIR_CODE=emulator.code(), **{missing: None}))
    assert rc == 1, err
    assert one_line(err) == f"bot.py: set {missing} (onair serve prints it)"
    assert emulator.requests() == []


def test_a_client_id_that_is_not_one_is_one_line(emulator: Emulator, tmp_path: Path) -> None:
    rc, err = run_bot(tmp_path, settings(emulator, ONAIR_CLIENT_ID="my-app"))
    assert rc == 1, err
    assert one_line(err) == (
        "bot.py: client_id must be a UUID (8-4-4-4-12 hexadecimal digits):"
        " use the app's client id as the service issued it"
    )


# ---- a service that cannot be reached -------------------------------------------------------


UNREACHABLE = "the service cannot be reached ("
NOT_SENT = "not sent); retrying"


def test_a_dead_port_without_tokens_is_said_and_the_code_is_not_spent(emulator: Emulator, tmp_path: Path) -> None:
    port = dead_port()
    bot = Bot(tmp_path, settings(emulator, ONAIR_BASE_URL=f"http://127.0.0.1:{port}", ONAIR_CODE=emulator.code()))
    forwarder = None
    try:
        bot.until_said(UNREACHABLE + "token: ", timeout=10)
        assert NOT_SENT in bot.err(), bot.err()
        assert bot.proc.poll() is None  # it goes on trying, the code unspent
        forwarder = Forwarder(port, emulator.port)  # the service is back on that port
        deadline = time.monotonic() + 30
        while not (tmp_path / "tokens.json").exists():
            assert bot.proc.poll() is None and time.monotonic() < deadline, bot.err()
            time.sleep(0.05)
        assert len(exchanges(emulator)) == 1  # the code, sent once, when it could be
        emulator.wait("/state", lambda s: s["openStreams"] >= 1)
        rc, err = bot.interrupt()
    finally:
        bot.close()
        if forwarder is not None:
            forwarder.close()
    assert rc == 0, err
    assert "Traceback" not in err and "reauthorize" not in err, err


def test_a_dead_port_with_saved_tokens_is_said(emulator: Emulator, tmp_path: Path) -> None:
    pair = saved_pair(emulator, tmp_path)
    bot = Bot(tmp_path, settings(emulator, ONAIR_BASE_URL=f"http://127.0.0.1:{dead_port()}"))
    try:
        started = time.monotonic()
        bot.until_said(UNREACHABLE, timeout=10)
        said_after = time.monotonic() - started
        rc, err = bot.interrupt()
    finally:
        bot.close()
    assert said_after < 5, said_after
    assert rc == 0, err
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert lines[0].startswith(UNREACHABLE + "revoke: ") and NOT_SENT in lines[0], err  # the credentials check
    assert all(line.startswith(UNREACHABLE) and line.endswith("; retrying") for line in lines), err
    assert (tmp_path / "tokens.json").read_text() == pair


# ---- nothing dropped in silence -------------------------------------------------------------


def welcomed(messages: list[str]) -> list[list[str]]:
    """The names each welcome names (``Welcome, P1! 🎧``, merged ``Welcome, P2, P8 and
    P3! 🎧``; these tests' nicknames hold no ``,`` nor `` and ``)."""
    out = []
    for m in messages:
        if m.startswith("Welcome, ") and m.endswith("! 🎧"):
            names = m.removeprefix("Welcome, ").removesuffix("! 🎧")
            *most, last = names.split(" and ")
            out.append([n for part in most for n in part.split(", ")] + [last])
    return out


def test_replies_dropped_at_the_end_of_a_broadcast_are_said(emulator: Emulator, tmp_path: Path) -> None:
    """Thirty arrivals while the chat limit holds the queue (the first welcome alone, the
    others merged), then the broadcast ends: every person is named in a welcome or told
    dropped, and a default setup shows the drops (the driver logs warn-level notices on
    the onair logger)."""
    bot = Bot(tmp_path, settings(emulator, ONAIR_CODE=emulator.code()))
    try:
        emulator.wait("/state", lambda s: s["openStreams"] >= 1)
        emulator.ctl("/fail", {"path": "/v1/live/chat", "status": 429, "detailCode": "OAPI_MNGR_0302", "times": 2})
        emit_all(emulator, [("presence", {"user": p}) for p in people(30)])
        emulator.ctl("/live/end", {})
        bot.until_said("dropped ")

        def told() -> tuple[int, list[str]]:
            lines = [line for line in bot.err().splitlines() if line.startswith("dropped ")]
            return sum(int(line.split()[1]) for line in lines), lines

        def named() -> int:
            return sum(len(names) for names in welcomed([m["message"] for m in emulator.ctl("/chat")["messages"]]))

        deadline = time.monotonic() + 30
        while named() + told()[0] < 30:
            assert time.monotonic() < deadline, bot.err()
            time.sleep(0.1)
        rc, err = bot.interrupt()
    finally:
        bot.close()
    assert rc == 0, err
    counted, lines = told()
    assert named() + counted == 30, (named(), err)  # every person greeted, or told as dropped
    assert len(lines) <= 4, err  # a few lines, not one per person
    assert all(" welcome repl" in line for line in lines), err
    assert any(line.endswith(": the broadcast ended before they went out") for line in lines), err


def test_a_daily_quota_is_said_once(emulator: Emulator, tmp_path: Path) -> None:
    emulator.ctl("/quota", {"daily": {"perPermission": {"chat.send": 0}}})
    bot = Bot(tmp_path, settings(emulator, ONAIR_CODE=emulator.code()))
    try:
        emulator.wait("/state", lambda s: s["openStreams"] >= 1)
        emit_all(emulator, [("presence", {"user": p}) for p in people(5)])
        bot.until_said("daily quota reached for chat.send: calls needing it are held back until ")
        emit_all(emulator, [("chat", {"user": p, "message": "!hello"}) for p in people(5)])
        time.sleep(1)
        rc, err = bot.interrupt()
    finally:
        bot.close()
    assert rc == 0, err
    assert sum("daily quota reached" in line for line in err.splitlines()) == 1, err
    assert emulator.ctl("/chat")["messages"] == []


def test_notices_can_be_left_to_the_bot(emulator: Emulator) -> None:
    """``log_notices=False``: the driver logs nothing; the notices are still handed out."""
    config = onair.Config(f"http://127.0.0.1:{dead_port()}", emulator.client_id, emulator.client_secret)

    async def main(log_notices: bool) -> list[onair.Notice]:
        bot = onair.aio.Driver(config, code=emulator.code(), redirect_uri=emulator.redirect_uri,
                               log_notices=log_notices)
        seen: list[onair.Notice] = []

        @bot.on_notice
        def notice(n: onair.Notice) -> None:
            seen.append(n)
            bot.shutdown()

        await bot.run(signals=False)
        return seen

    import logging

    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    logging.getLogger("onair").addHandler(handler)
    try:
        quiet = asyncio.run(main(False))
        assert quiet and records == []
        loud = asyncio.run(main(True))
        assert [(r.levelname, r.getMessage()) for r in records] == [("WARNING", loud[0].message)]  # type: ignore[attr-defined]
        assert loud[0].message.startswith(UNREACHABLE + "token: ")  # type: ignore[attr-defined]
    finally:
        logging.getLogger("onair").removeHandler(handler)


# ---- Ctrl-C in the middle of a broadcast, then a restart ------------------------------------


def people(n: int, start: int = 0) -> list[dict[str, str]]:
    return [{"id": f"p{i}", "nickname": f"P{i}"} for i in range(start, start + n)]


def emit_all(emu: Emulator, events: list[tuple[str, dict[str, Any]]], threads: int = 1) -> None:
    """Emits ``events`` (``threads`` at a time: as fast as the emulator takes them); each
    is written to the bot's stream when this returns."""

    def emit(share: list[tuple[str, dict[str, Any]]]) -> None:
        for event, data in share:
            assert emu.ctl("/emit", {"event": event, "data": data})["delivered"] == 1

    workers = [threading.Thread(target=emit, args=(events[i::threads],)) for i in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()


def ledger_people(emu: Emulator) -> dict[str, Any]:
    return dict(emu.ledger_totals()[-1]["people"])


def test_ctrl_c_mid_broadcast_then_a_restart(emulator: Emulator, tmp_path: Path) -> None:
    """The reference bot takes a burst of joins, hearts, donations and chat; Ctrl-C right
    after the last is written: its tally is the ledger's, every frame written before the
    signal counted, and the state saved. Restarted from its files (no code), it greets
    the newcomers and nobody twice (the welcomes the stop saved still go out), and the
    broadcast's final tally is the ledger's."""
    env = settings(emulator, ONAIR_CODE=emulator.code(), ONAIR_TOKENS_FILE=str(tmp_path / "tokens.json"),
                   ONAIR_STATE_FILE=str(tmp_path / "kit.json"))
    first_crowd = people(300)
    burst: list[tuple[str, dict[str, Any]]] = []
    for p in first_crowd:
        burst += [("presence", {"user": p}), ("like", {"user": p, "type": "PAID", "amount": 10, "combo": 3}),
                  ("chat", {"user": p, "message": "hi"})]
    burst += [("donation", {"user": p, "amount": 100}) for p in first_crowd[:10]]
    burst += [("like", {"user": p, "type": "FREE", "amount": 1, "combo": 1}) for p in first_crowd]

    bot = Bot(tmp_path / "first", {**env, "ONAIR_TALLY_OUT": str(tmp_path / "first.json")}, REFERENCE_BOT)
    try:
        emulator.wait("/state", lambda s: s["openStreams"] >= 1)
        emit_all(emulator, burst, threads=8)
        rc, err = bot.interrupt()  # at once: frames may still be on their way
    finally:
        bot.close()
    assert rc == 0, err
    assert "Traceback" not in err, err
    first = json.loads((tmp_path / "first.json").read_text())
    assert first["broadcasts"][-1]["people"] == ledger_people(emulator)  # nothing written before the signal lost
    assert json.loads((tmp_path / "kit.json").read_text())["format"] == "onair.kit"
    said_before = len(emulator.ctl("/chat")["messages"])

    env.pop("ONAIR_CODE")  # the restart needs no consent
    again = Bot(tmp_path / "again", {**env, "ONAIR_TALLY_OUT": str(tmp_path / "again.json")}, REFERENCE_BOT)
    try:
        emulator.wait("/state", lambda s: s["openStreams"] >= 1)
        newcomers = people(3, start=300)
        emit_all(emulator, [("presence", {"user": p}) for p in first_crowd[:5] + newcomers])
        said: Callable[[], list[str]] = lambda: [m["message"] for m in emulator.ctl("/chat")["messages"]]
        # Behind what the stop saved (its replies still fresh go out after a restart,
        # at the chat limit's pace).
        deadline = time.monotonic() + 60
        wanted = {p["nickname"] for p in newcomers}
        while not wanted <= {n for names in welcomed(said()[said_before:]) for n in names}:
            assert time.monotonic() < deadline, (said()[said_before:], again.err())
            time.sleep(0.05)
        emulator.ctl("/live/end", {})
        time.sleep(0.5)
        rc, err = again.interrupt()
    finally:
        again.close()
    assert rc == 0, err
    everyone = [n for names in welcomed(said()) for n in names]
    assert len(everyone) == len(set(everyone)), everyone  # nobody greeted twice, before or after
    # After the restart: the newcomers, and first arrivals whose welcomes the stop saved.
    since = {n for names in welcomed(said()[said_before:]) for n in names}
    assert wanted <= since <= wanted | {p["nickname"] for p in first_crowd}, since
    ended = json.loads((tmp_path / "again.json").read_text())["broadcasts"]
    assert ended[0]["people"] == ledger_people(emulator)  # both runs together: the ledger
    assert len(ended[0]["people"]) == 303
    assert revokes(emulator) == [] and [r["status"] for r in checks(emulator)] == [200]  # the restart's check
    assert len(exchanges(emulator)) == 1


def test_a_second_ctrl_c_exits_at_once(emulator: Emulator, tmp_path: Path) -> None:
    """A shutdown held up (here a stop handler that hangs): a second Ctrl-C ends the
    guide's bot at once with status 130, as a shell expects, and no traceback."""
    hanging = GUIDE_BOT.replace(
        "stop = onair.run(bot)",
        "@bot.on_stopped\nasync def hang(s: onair.Stopped) -> None:\n"
        "    import asyncio\n    await asyncio.sleep(60)\n\nstop = onair.run(bot)",
    )
    assert hanging != GUIDE_BOT
    program = tmp_path / "bot.py"
    program.write_text(hanging, encoding="utf-8")
    bot = Bot(tmp_path, settings(emulator, ONAIR_CODE=emulator.code()), program)
    try:
        deadline = time.monotonic() + 20
        while not (tmp_path / "tokens.json").exists():
            assert bot.proc.poll() is None and time.monotonic() < deadline, bot.err()
            time.sleep(0.05)
        bot.proc.send_signal(signal.SIGINT)
        time.sleep(1.0)
        assert bot.proc.poll() is None, bot.err()  # the handler holds the clean shutdown
        asked = time.monotonic()
        bot.proc.send_signal(signal.SIGINT)
        rc, err = bot.finish(10)
        took = time.monotonic() - asked
    finally:
        bot.close()
    assert rc == 130, err
    assert "Traceback" not in err, err
    assert took < 5, took


def test_the_reference_bot_reminds_while_connected(emulator: Emulator, tmp_path: Path) -> None:
    """The reference bot's own reminder (every 30 minutes; a second here), said as it is,
    beside the kit's configured welcome."""
    source = REFERENCE_BOT.read_text(encoding="utf-8")
    assert "30 * 60 * 1000" in source
    program = tmp_path / "bot.py"
    program.write_text(source.replace("30 * 60 * 1000", "1000"), encoding="utf-8")
    bot = Bot(tmp_path, settings(emulator, ONAIR_CODE=emulator.code()), program)
    try:
        emulator.wait("/state", lambda s: s["openStreams"] >= 1)
        emit_all(emulator, [("presence", {"user": {"id": "u1", "nickname": "Mina"}})])
        chat = emulator.wait("/chat", lambda c: len(c["messages"]) >= 3, 10)
        rc, err = bot.interrupt()
    finally:
        bot.close()
    assert rc == 0, err
    said = [m["message"] for m in chat["messages"]]
    reminder = "Say !hello to say hi, or !top for tonight's top donors."
    assert said[0] == "Welcome, Mina! 🎧" and said[1:3] == [reminder, reminder], said
