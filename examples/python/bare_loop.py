"""The bare ``onair.Bot`` loop, for a bot that brings its own HTTP client.

``onair.aio.Driver`` is this loop over httpx; write it yourself only to use
another client. Here: the standard library's ``http.client``, a thread per
request (a stream's thread hands over its chunks as they come), one queue back
to the loop, and the bot's contract: after any report, poll until a drain ends
(``Wait``, ``NeedsAuthorization``, ``Stopped``); sleep until ``Wait``'s deadline
or the next report; give requests no timeout shorter than the bot's, and the
stream none (the bot's watchdog covers it).

Its kit's configured replies answer ``!hello`` and welcome first arrivals (the
core sends them, merged when chat is behind); it keeps the kit's tally, and on
SIGTERM or SIGINT shuts down and writes ``{"broadcasts": [...]}`` to
``ONAIR_TALLY_OUT``. Environment: ONAIR_BASE_URL, ONAIR_CLIENT_ID,
ONAIR_CLIENT_SECRET, ONAIR_CODE, ONAIR_REDIRECT_URI.
"""

from __future__ import annotations

import http.client
import json
import os
import queue
import signal
import sys
import threading
import urllib.parse
from types import FrameType
from typing import Any

import onair

Report = tuple[str, int, Any, Any, Any]  # (what, request id, status, headers, body or chunk)


class Transport:
    """The bot's requests on threads; what happens to them goes to ``reports``."""

    def __init__(self) -> None:
        self.reports: queue.Queue[Report] = queue.Queue()
        self.streams: dict[int, http.client.HTTPConnection] = {}
        self.closed: set[int] = set()
        self.lock = threading.Lock()

    def start(self, rid: int, request: onair.Request, stream: bool) -> None:
        threading.Thread(target=self._run, args=(rid, request, stream), daemon=True).start()

    def _run(self, rid: int, request: onair.Request, stream: bool) -> None:
        parts = urllib.parse.urlsplit(request.url)
        cls = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        conn = cls(parts.hostname or "", parts.port, timeout=None)  # the bot keeps every deadline
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        opened = False
        try:
            with self.lock:
                if rid in self.closed:
                    return
                if stream:
                    self.streams[rid] = conn
            try:
                conn.connect()
            except OSError:  # refused, DNS, TLS, connect timeout: nothing was sent
                self.reports.put(("not_sent", rid, None, None, None))
                return
            conn.request(request.method, path, body=request.body or None, headers=dict(request.headers))
            response = conn.getresponse()
            if not stream:
                self.reports.put(("response", rid, response.status, response.getheaders(), response.read()))
                return
            self.reports.put(("open", rid, response.status, response.getheaders(), None))
            opened = True
            while chunk := response.read1(65536):
                self.reports.put(("bytes", rid, None, None, chunk))
        except (OSError, http.client.HTTPException, ValueError, AttributeError):
            if not opened:
                self.reports.put(("error", rid, None, None, None))
                return
        finally:
            conn.close()
        if opened:
            self.reports.put(("closed", rid, None, None, None))

    def close(self, rid: int) -> None:
        with self.lock:
            self.closed.add(rid)
            conn = self.streams.pop(rid, None)
        if conn is not None and conn.sock is not None:
            try:
                conn.sock.shutdown(2)  # the reader thread wakes up and ends
            except OSError:
                pass


def report(bot: onair.Bot, transport: Transport, r: Report) -> None:
    what, rid, status, headers, data = r
    if rid in transport.closed and what in ("open", "bytes", "closed"):
        return  # a stream the bot closed: late reports are harmless, skip them anyway
    try:
        if what == "response":
            bot.on_response(rid, status, headers, data)
        elif what == "error":
            bot.on_transport_error(rid)  # no answer after sending: outcome unknown
        elif what == "not_sent":
            bot.on_not_sent(rid)  # a consent code is not spent on it
        elif what == "open":
            bot.on_stream_open(rid, status, headers)
        elif what == "bytes":
            bot.on_stream_bytes(rid, data)
        else:
            bot.on_stream_closed(rid)
    except onair.OnairError as e:
        print(f"bare_loop: report refused: {e}", flush=True)


def main() -> int:
    env = os.environ
    kit = {
        "commands": [{"name": "hello"}], "greetings": {}, "tally": True,
        "replies": {"commands": {"hello": "Hello, {nickname}!"}},  # welcomes: the default text
    }
    config = onair.Config(env["ONAIR_BASE_URL"], env["ONAIR_CLIENT_ID"], env["ONAIR_CLIENT_SECRET"], kit=kit)
    bot = onair.Bot(config)  # no saved tokens: it asks for authorization
    transport = Transport()
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()  # acted on in the loop

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    ended: list[dict[str, Any]] = []
    shutting_down = False
    while True:
        action = bot.poll()
        match action:
            case onair.Send(rid, request):
                transport.start(rid, request, stream=False)
            case onair.OpenStream(rid, request):
                transport.start(rid, request, stream=True)
            case onair.CloseStream(rid):
                transport.close(rid)
            case onair.BroadcastEnded(live_id, tally):
                ended.append({**tally.to_dict(), "liveId": live_id})
            case onair.NeedsAuthorization():
                bot.authorize(env["ONAIR_CODE"], env["ONAIR_REDIRECT_URI"])
            case onair.Stopped(code, message):
                if code != "shut_down":
                    print(f"bare_loop: stopped ({code}): {message}", flush=True)
                break
            case onair.Notice() if action.level == "warn":  # unreachable, replies dropped, a daily quota
                print(f"bare_loop: {action.message}", file=sys.stderr, flush=True)
            case onair.Wait(until_ms):
                if stop.is_set() and not shutting_down:
                    shutting_down = True
                    while True:  # what was read already, counted before the stream closes
                        try:
                            report(bot, transport, transport.reports.get_nowait())
                        except queue.Empty:
                            break
                    bot.shutdown()
                    continue
                timeout = 0.25  # now and then, to notice a signal
                if until_ms is not None:
                    timeout = max(0.0, min(timeout, (until_ms - onair.now_ms()) / 1000))
                try:
                    report(bot, transport, transport.reports.get(timeout=timeout))
                    while True:  # everything else already there, then poll
                        report(bot, transport, transport.reports.get_nowait())
                except queue.Empty:
                    pass
            case _:
                pass  # events, Done, notices, PersistTokens (save them to resume without consent)
    current = bot.kit()
    if current is not None and env.get("ONAIR_TALLY_OUT"):
        with open(env["ONAIR_TALLY_OUT"], "w", encoding="utf-8") as f:
            json.dump({"broadcasts": [*ended, {**current.tally.to_dict(), "liveId": current.live_id}]}, f)
    bot.close()
    return 0 if shutting_down else 1


if __name__ == "__main__":
    raise SystemExit(main())
