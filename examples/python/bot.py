"""The reference bot in Python, over the onair package and the standard library.

Greets first joins once and welcomes back rejoiners, answers ``!hello``, thanks
donors with their running total, keeps a tally per broadcast and prints a short
summary at the end. Every rule (tokens, 401s, quotas, reconnects, chat limits)
is the core's (libonair): this file is a driver loop over ``http.client`` and
the bot's handlers.

The loop owns the ``Bot`` (one thread at a time). Each request runs on its own
thread (a plain request: one response; a stream: a reader thread that hands
over chunks as they arrive, with no whole-body timeout); the threads only
post what happened to a queue, which the loop reports to the bot.

Environment: ONAIR_BASE_URL, ONAIR_CLIENT_ID, ONAIR_CLIENT_SECRET, ONAIR_CODE
(the consent code), ONAIR_REDIRECT_URI; optional ONAIR_TALLY_OUT (written at
exit: ``{"broadcasts":[T, …]}``, one core tally per broadcast) and
ONAIR_TOKENS_FILE (loaded at start, saved on every PersistTokens). SIGTERM or
SIGINT: shut down (no revoke), write the tally, exit 0.
"""

from __future__ import annotations

import http.client
import os
import queue
import secrets
import signal
import sys
import threading
import urllib.parse
from dataclasses import dataclass
from types import FrameType

import onair

# ---- HTTP on threads ----------------------------------------------------------------


@dataclass
class Response:
    request_id: int
    status: int
    headers: list[tuple[str, str]]
    body: bytes


@dataclass
class TransportError:
    request_id: int


@dataclass
class StreamOpened:
    request_id: int
    status: int
    headers: list[tuple[str, str]]


@dataclass
class StreamBytes:
    request_id: int
    chunk: bytes


@dataclass
class StreamClosed:
    request_id: int


Report = Response | TransportError | StreamOpened | StreamBytes | StreamClosed


def connect(url: str, timeout: float | None) -> tuple[http.client.HTTPConnection, str]:
    parts = urllib.parse.urlsplit(url)
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    conn_cls = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    return conn_cls(parts.hostname or "localhost", parts.port, timeout=timeout), path


class Transport:
    """Runs the bot's requests on threads and queues what happens."""

    def __init__(self) -> None:
        self.reports: queue.Queue[Report] = queue.Queue()
        self.streams: dict[int, http.client.HTTPConnection] = {}
        self.closed: set[int] = set()
        self.lock = threading.Lock()

    def send(self, request_id: int, request: onair.Request, timeout_ms: int) -> None:
        # The bot keeps its own deadline; the socket's is only a backstop, longer.
        threading.Thread(
            target=self._send, args=(request_id, request, timeout_ms / 1000 + 10), daemon=True
        ).start()

    def _send(self, request_id: int, request: onair.Request, timeout: float) -> None:
        try:
            conn, path = connect(request.url, timeout)
            try:
                conn.request(request.method, path, body=request.body or None, headers=dict(request.headers))
                resp = conn.getresponse()
                body = resp.read()
                self.reports.put(Response(request_id, resp.status, resp.getheaders(), body))
            finally:
                conn.close()
        except (OSError, http.client.HTTPException):
            self.reports.put(TransportError(request_id))

    def open_stream(self, request_id: int, request: onair.Request) -> None:
        threading.Thread(target=self._stream, args=(request_id, request), daemon=True).start()

    def _stream(self, request_id: int, request: onair.Request) -> None:
        try:
            # No whole-body timeout: the stream stays open for hours; the bot's
            # watchdog (heartbeats) decides when it is dead.
            conn, path = connect(request.url, None)
            with self.lock:
                if request_id in self.closed:
                    return
                self.streams[request_id] = conn
            conn.request(request.method, path, body=request.body or None, headers=dict(request.headers))
            resp = conn.getresponse()
            self.reports.put(StreamOpened(request_id, resp.status, resp.getheaders()))
            while True:
                chunk = resp.read1(65536)
                if not chunk:
                    break
                self.reports.put(StreamBytes(request_id, chunk))
        except (OSError, http.client.HTTPException, ValueError, AttributeError):
            pass
        finally:
            self.reports.put(StreamClosed(request_id))

    def close_stream(self, request_id: int) -> None:
        with self.lock:
            self.closed.add(request_id)
            conn = self.streams.pop(request_id, None)
        if conn is not None and conn.sock is not None:
            try:
                conn.sock.shutdown(2)
            except OSError:
                pass


# ---- the bot's own state and handlers -------------------------------------------------


class Handlers:
    def __init__(self, bot: onair.Bot) -> None:
        self.bot = bot
        self.audience = onair.Audience()
        self.commands = onair.Commands()
        self.commands.add("hello")
        self.milestones = onair.Milestones(1000, 1000)
        self.tally = onair.Tally()
        self.tallies: list[str] = []
        self.events_seen = self.chats_sent = self.calls_failed = self.chats_dropped = 0

    def say(self, text: str) -> None:
        for part in onair.split_chat(text):
            try:
                self.bot.send_chat(part)
            except onair.OnairError:
                self.chats_dropped += 1

    def on_event(self, ev: onair.Event) -> None:
        # The kit takes the event while it is current: all of it here, before polling again.
        self.events_seen += 1
        self.tally.record(ev)
        greeting = self.audience.on_event(ev)
        invocation = self.commands.match(ev, self.audience)
        self.milestones.on_event(ev)
        if greeting is not None:
            name = greeting.nickname or "friend"
            self.say(f"Welcome, {name}!" if greeting.kind == "first" else f"Welcome back, {name}!")
        if invocation is not None and invocation.kind == "run":
            self.say(f"Hello, {invocation.nickname or 'friend'}!")
        match ev:
            case onair.Donation(user_id=uid, nickname=nick, amount=amount):
                total = self.milestones.donated_by(uid)
                self.say(f"Thank you, {nick or 'friend'}, for {amount}! You have given {total} tonight.")
            case onair.End(reason="LIVE_ENDED"):
                t = self.tally
                print(f"broadcast over: {t.hearts} hearts, {t.donated} donated, {t.attendance} joined", flush=True)
                self.tallies.append(t.json())
                t.close()
                self.tally = onair.Tally()
                self.audience.end_broadcast()
                self.milestones.end_broadcast()
            case _:
                pass

    def write_tally(self, path: str | None) -> None:
        if not path:
            return
        # The current broadcast last; the checker skips empty ones.
        with open(path, "w", encoding="utf-8") as f:
            f.write('{"broadcasts":[' + ",".join([*self.tallies, self.tally.json()]) + "]}\n")

    def close(self) -> None:
        for h in (self.audience, self.commands, self.milestones, self.tally):
            h.close()


# ---- the driver loop ----------------------------------------------------------------


def env(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        print(f"bot: {name} is not set", file=sys.stderr)
        sys.exit(2)
    return value


def main() -> int:
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    tokens_file = os.environ.get("ONAIR_TOKENS_FILE")
    saved = None
    if tokens_file and os.path.exists(tokens_file):
        with open(tokens_file, encoding="utf-8") as f:
            saved = f.read()
    config = onair.Config(env("ONAIR_BASE_URL"), env("ONAIR_CLIENT_ID"), env("ONAIR_CLIENT_SECRET"))
    transport = Transport()
    exit_code = 0
    with onair.Bot(config, saved, seed=secrets.randbits(64)) as bot:
        config.close()
        handlers = Handlers(bot)
        authorized = shutting_down = False
        while True:
            action = bot.poll()
            match action:
                case onair.Send(rid, request):
                    transport.send(rid, request, action.timeout_ms)
                case onair.OpenStream(rid, request):
                    transport.open_stream(rid, request)
                case onair.CloseStream(rid):
                    transport.close_stream(rid)
                case onair.EventAction(event):
                    handlers.on_event(event)
                case onair.Notice(kind, message):
                    print(f"notice ({kind}): {message}", file=sys.stderr)
                case onair.PersistTokens(tokens):
                    if tokens_file:
                        with open(tokens_file, "w", encoding="utf-8") as f:
                            f.write(tokens)
                case onair.Done(kind="chat_sent"):
                    handlers.chats_sent += 1
                case onair.Done(kind="failed"):
                    handlers.calls_failed += 1
                case onair.NeedsAuthorization():
                    if authorized:
                        print("bot: needs a new consent code", file=sys.stderr)
                        exit_code = 1
                        break
                    bot.authorize(env("ONAIR_CODE"), env("ONAIR_REDIRECT_URI"))
                    authorized = True
                case onair.Stopped(code, message):
                    if not shutting_down:
                        print(f"bot stopped ({code}): {message}", file=sys.stderr)
                        exit_code = 1
                    break
                case onair.Wait(until_ms):
                    if stop.is_set() and not shutting_down:
                        shutting_down = True
                        bot.shutdown(revoke=False)
                        continue
                    timeout = 0.25  # wake up now and then to notice SIGTERM
                    if until_ms is not None:
                        timeout = max(0.0, min(timeout, (until_ms - onair.now_ms()) / 1000))
                    try:
                        report = transport.reports.get(timeout=timeout)
                    except queue.Empty:
                        continue
                    deliver(bot, transport, report)
                    while True:  # everything else already queued, then poll
                        try:
                            deliver(bot, transport, transport.reports.get_nowait())
                        except queue.Empty:
                            break
                case _:
                    pass
        handlers.write_tally(os.environ.get("ONAIR_TALLY_OUT"))
        print(
            f"summary: {handlers.events_seen} events, {len(handlers.tallies)} broadcasts ended, "
            f"{handlers.chats_sent} chats sent, {handlers.calls_failed} failed, "
            f"{handlers.chats_dropped} not queued",
            flush=True,
        )
        handlers.close()
    return exit_code


def deliver(bot: onair.Bot, transport: Transport, report: Report) -> None:
    """Reports one thing that happened on the network to the bot."""
    try:
        match report:
            case Response(rid, status, headers, body):
                bot.on_response(rid, status, headers, body)
            case TransportError(rid):
                bot.on_transport_error(rid)
            case StreamOpened(rid, status, headers):
                if rid not in transport.closed:
                    bot.on_stream_open(rid, status, headers)
            case StreamBytes(rid, chunk):
                if rid not in transport.closed:
                    bot.on_stream_bytes(rid, chunk)
            case StreamClosed(rid):
                if rid not in transport.closed:
                    bot.on_stream_closed(rid)
    except onair.OnairError as e:  # a report the bot does not take: log it, go on
        print(f"bot: report refused: {e}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
