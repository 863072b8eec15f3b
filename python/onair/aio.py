"""The ready-made asyncio driver over httpx: the Python twin of ``onair-tokio``.

``onair.Bot`` holds every rule of the service and does no I/O. ``Driver`` is the
loop every asyncio bot would otherwise write around it: one task per request and
per stream over httpx (HTTP/1.1, TLS), the bot's contract followed (poll until a
drain ends, sleep until its deadline or the next report; requests get no client
timeout, the bot keeps their deadlines; streams get none, the bot's watchdog
covers them), streams cancelled when the bot closes them, tokens and the kit's
state saved through stores the moment the bot hands them out. Two ways to write
a bot on it:

A kit with ``replies`` greets, thanks, calls milestones and answers its commands
by itself, no code needed (``Config(kit={"greetings": {}, "replies": {}})``).

Iterate, and ``match`` what comes::

    async with Driver(config, tokens=FileStore("tokens.json"), state=FileStore("kit.json"),
                      code=code, redirect_uri=uri) as bot:
        async for action in bot:
            match action:
                case onair.Command(name="hello", user=user):
                    bot.reply("command", user, f"Hello, {user.nickname or 'friend'}!")
                case onair.Arrival(kind="first", user=user):
                    bot.reply("welcome", user, f"Welcome, {user.nickname or 'friend'}!")
                case onair.Stopped(code, message):
                    print("stopped:", code, message)

Or register handlers and run (a handler may be sync or async; what it raises is
logged on the ``onair`` logger, and the bot goes on). A ``str`` it returns is
the reply the action's ``reply_kind`` names (the core says which), naming the
action's person, so it joins the merging of its kind when chat is behind; for an
action without one it is said (``say``):

==================  ===========================================
handler             its returned text (the action's reply_kind)
==================  ===========================================
``on_arrival``      ``welcome`` (``first``) / ``welcome_back``
``on_donation``     ``thanks`` naming the donor
``command``         ``command`` (answers are never merged)
any other           ``say``
==================  ===========================================

::

    bot = Driver(config, tokens=FileStore("tokens.json"), code=code, redirect_uri=uri)

    @bot.command("hello")
    def hello(c: onair.Command) -> str:
        return f"Hello, {c.user.nickname or 'friend'}!"

    onair.run(bot)   # blocks; Ctrl-C or SIGTERM: a clean shutdown (no revoke)

What the driver hands out: events, the kit's actions (``Command``, ``Arrival``,
``Milestone``, ``BroadcastEnded``, ``PersistState`` once saved), ``Done``,
notices, ``Timer``, ``PersistTokens`` (once saved),
``StoreFailed``, ``NeedsAuthorization``, ``Stopped``. The I/O actions never
reach you.

Threads: any thread may call ``say``, ``reply``, ``send_chat``, ``authorize``,
``shutdown`` and the other commands at any time (they wake the loop); iterate
and ``aclose`` from the driver's event loop. Leaving ``async with`` (an
exception, ``break``, cancellation) shuts the bot down cleanly: the stream
closed, the last state saved, a token request in flight awaited (at most
``grace_s``), every task awaited, the client closed when the driver made it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import logging
import secrets
import signal
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Literal, TypeVar, Union

import httpx

from .actions import (
    Action,
    Arrival,
    BroadcastEnded,
    CloseStream,
    Command,
    CommandRefused,
    Done,
    NeedsAuthorization,
    Notice,
    OpenStream,
    OtherAction,
    PersistState,
    PersistTokens,
    ReplyCounters,
    ReplyKind,
    Send,
    Stopped,
    Timer,
    Wait,
    Milestone,
)
from .bot import Bot, Config, Kit, now_ms
from .errors import ChatRejected, ClosedError, OnairError, StoreError
from .events import Chat, Donation, End, Like, OtherEvent, Presence, User
from .stores import Store

log = logging.getLogger("onair")

# The largest response body read whole (the service's are a few KiB); a larger
# one is a failed request.
MAX_BODY_BYTES = 4 * 1024 * 1024
# Reports that may wait for the loop; a stream's reader waits when it is full.
QUEUE = 256


@dataclasses.dataclass(frozen=True, slots=True)
class StoreFailed:
    """A store refused to save (``what``: ``tokens`` or ``state``): fix it, or a restart
    needs consent again (tokens) or greets people twice (state)."""

    what: Literal["tokens", "state"]
    error: str

    @property
    def message(self) -> str:
        """A line for the log: what was not saved, why, and what it costs."""
        if self.what == "tokens":
            return (f"the new token pair was not saved ({self.error}): fix the token store now,"
                    " or a restart needs the DJ's consent again")
        return (f"the kit state was not saved ({self.error}): fix the state store now,"
                " or a restart may greet people twice")


DriverAction = Union[Action, OtherEvent, StoreFailed]
"""What iterating a ``Driver`` gives (never ``Send``, ``OpenStream``, ``CloseStream``, ``Wait``)."""

HandlerResult = Union[Awaitable[Union[str, None]], str, None]
"""What a handler returns: a ``str`` to reply or say (see the module docs), or None;
or an awaitable of one."""
H = TypeVar("H", bound=Callable[..., HandlerResult])

# Reports from the request tasks: (tag, request id, …). _NOT_SENT: the connection
# never opened (refused, DNS, TLS, connect timeout), so nothing was sent.
_RESPONSE, _ERROR, _OPEN, _BYTES, _CLOSED, _WAKE, _NOT_SENT, _IDLE = range(8)
_Report = tuple[Any, ...]
_WAKE_REPORT: _Report = (_WAKE, 0)
_IDLE_REPORT: _Report = (_IDLE, 0)
# httpx's errors for a connection that never opened: the request was not sent.
_NOT_SENT_ERRORS = (httpx.ConnectError, httpx.ConnectTimeout)
# A stop first reads what the open stream holds already: until nothing more comes
# for STOP_IDLE_S, at most STOP_READ_S (a stream that never pauses must not hold it).
STOP_IDLE_S = 0.05
STOP_READ_S = 1.0


class Driver:
    """A ``Bot`` driven over asyncio and httpx. See the module docs.

    ``tokens``, ``state``: stores for the token file and the kit state (loaded when
    the driver starts, saved on every ``PersistTokens`` / ``PersistState`` before
    anything that follows). ``code``, ``redirect_uri``: a consent code, used the
    first time the bot asks for authorization (never twice). ``client``: your
    ``httpx.AsyncClient`` (proxies, TLS roots; the driver gives each request
    ``timeout=None`` and leaves the client open); by default the driver makes one
    and closes it. ``seed``: fixes the bot's jitter (default: random). ``grace_s``:
    the longest a shutdown waits for the stopping bot (which itself drops every
    request but a token request or the revocation, and waits for those at most 30 s).

    ``wait_for_consent``: what happens when the bot needs a new consent code (no
    saved pair and no ``code`` left: ``NeedsAuthorization``; or a code refused,
    expired, already used: a ``reauthorize`` stop) and nobody called ``authorize``
    by the time the next action is asked for. False (the default): the run ends
    with the ``reauthorize`` stop (after ``NeedsAuthorization``, one that says "not
    authorized yet"). True: the driver waits for ``authorize`` from any thread (a
    web handler receiving the DJ's redirect) or ``shutdown()``. An
    ``on_needs_authorization`` handler makes it wait too.

    ``log_notices``: every notice whose level is ``warn`` (the service cannot be
    reached, replies given up on or dropped, a daily quota reached, …) and every
    ``StoreFailed`` is logged with ``logging.getLogger("onair").warning`` as it is
    handed out (a default Python setup shows warnings). False: you log them.
    """

    def __init__(
        self,
        config: Config,
        *,
        tokens: Store | None = None,
        state: Store | None = None,
        code: str | None = None,
        redirect_uri: str | None = None,
        client: httpx.AsyncClient | None = None,
        seed: int | None = None,
        grace_s: float = 30.0,
        wait_for_consent: bool = False,
        log_notices: bool = True,
    ) -> None:
        if code and not redirect_uri:
            # Exchanged without it, the code would be refused, and spent.
            raise ValueError("a consent code needs redirect_uri: the redirect URI it was issued for")
        self.config = config
        self.tokens = tokens
        self.state = state
        self._code = code or None
        self._redirect_uri = redirect_uri
        self._wait_for_consent = wait_for_consent
        self._log_notices = log_notices
        self._client = client
        self._own_client = client is None
        self._seed = secrets.randbits(64) if seed is None else seed
        self._grace_s = grace_s
        self._bot: Bot | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._reports: asyncio.Queue[_Report] | None = None
        self._tasks: dict[int, asyncio.Task[None]] = {}
        self._dying: set[asyncio.Task[None]] = set()
        self._said = False
        self._finished = False
        self._closed = False
        self._shutdown: bool | None = None  # requested before the start: revoke?
        self._revoke = False
        # A shutdown asked (revoke?) and not yet handed to the bot: the loop reads
        # what the stream holds first, then applies it.
        self._stop_asked: bool | None = None
        self._stop_applied = False
        self._hurry = False  # a second signal: no more reading
        self._second_signal: int | None = None  # which signal asked to stop at once
        self._open_streams: set[int] = set()
        self._last_kit: Kit | None = None
        self._has_kit = False
        self._lock: asyncio.Lock | None = None
        self._handlers: list[tuple[tuple[type, ...], Callable[[Any], HandlerResult]]] = []
        self._commands: dict[str, Callable[[Command], HandlerResult]] = {}
        self._kit_extra: list[dict[str, Any]] = []
        self._kit_wants: set[str] = set()

    # ---- the bot and its commands (any thread) -----------------------------------------

    @property
    def bot(self) -> Bot:
        """The ``Bot`` (after the start), for its getters. Commands through it do not wake
        the loop from another thread: use the driver's own."""
        if self._bot is None:
            raise RuntimeError("the driver has not started: iterate it, or enter `async with`")
        return self._bot

    def _nudge(self) -> None:
        """Wakes the loop (any thread, a signal handler too): it polls the bot again."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(self._wake)
            except RuntimeError:  # the loop closed meanwhile
                pass

    def _wake(self) -> None:
        q = self._reports
        if q is not None and q.empty():
            q.put_nowait(_WAKE_REPORT)

    def say(self, text: str) -> list[int]:
        """Queues a reply of any length (split into messages the service takes); the
        call ids, each answered by a ``Done``."""
        ids = self.bot.say(text)
        self._nudge()
        return ids

    def reply(self, kind: ReplyKind, user: User, text: str) -> None:
        """Queues ``text`` (one chat message) as a reply of ``kind`` naming ``user``,
        merged with others of its kind when chat is behind, dropped with a notice when
        not out within its freshness (``Bot.reply``)."""
        self.bot.reply(kind, user, text)
        self._nudge()

    def reply_counters(self) -> dict[ReplyKind, ReplyCounters]:
        """The reply counters per kind: messages sent, people named, merged, dropped."""
        return self.bot.reply_counters(now_ms())

    def send_chat(self, message: str) -> int:
        """Queues one chat message (``ChatRejected`` if the service would refuse it)."""
        call = self.bot.send_chat(message)
        self._nudge()
        return call

    def authorize(self, code: str, redirect_uri: str) -> None:
        """The DJ's consent code (after ``NeedsAuthorization``, or to lift a
        ``reauthorize`` stop)."""
        self.bot.authorize(code, redirect_uri)
        self._nudge()

    def fetch_broadcast(self) -> int:
        call = self.bot.fetch_broadcast()
        self._nudge()
        return call

    def list_listeners(self) -> int:
        call = self.bot.list_listeners()
        self._nudge()
        return call

    def fetch_fans(self) -> int:
        call = self.bot.fetch_fans()
        self._nudge()
        return call

    def request_reconnect(self) -> None:
        self.bot.request_reconnect(now_ms())
        self._nudge()

    def schedule(self, at_ms: int, tag: str) -> None:
        self.bot.schedule(at_ms, tag)
        self._nudge()

    def every(self, period_ms: int, tag: str, first_at_ms: int) -> None:
        self.bot.every(period_ms, tag, first_at_ms)
        self._nudge()

    def set_timer(self, tag: str, at_ms: int, period_ms: int = 0, while_connected: bool = False) -> None:
        self.bot.set_timer(tag, at_ms, period_ms, while_connected)
        self._nudge()

    def cancel_timer(self, tag: str) -> bool:
        found = self.bot.cancel_timer(tag)
        self._nudge()
        return found

    def kit(self) -> Kit | None:
        """The configured kit now: the broadcast's ``live_id`` and its running tally.
        After the driver closed: the kit as it was when the bot stopped."""
        bot = self._bot
        if bot is not None:
            try:
                return bot.kit()
            except ClosedError:
                pass
        return self._last_kit

    def status(self) -> Any:
        """The core's status snapshot as a dict (no secret)."""
        return self.bot.status(now_ms())

    def shutdown(self, revoke: bool = False) -> None:
        """Asks the bot to stop (any thread, a signal handler too; never waits): the
        iteration ends after ``Stopped("shut_down")``. ``revoke``: the tokens are revoked
        and the token store cleared (otherwise a restart resumes without consent).

        Nothing received is lost: the loop first hands the bot what the open stream
        holds already (the reports queued, then what the connection gives without
        pausing), so the kit counts it and saves it; then the stream is closed."""
        if self._bot is None:
            self._shutdown = bool(self._shutdown) or revoke
            return
        self._stop_asked = bool(self._stop_asked) or revoke
        self._revoke = self._revoke or revoke
        self._nudge()

    # ---- start -------------------------------------------------------------------------

    def _start(self) -> None:
        if self._bot is not None:
            return
        if self._closed:
            raise RuntimeError("the driver is closed")
        self._loop = asyncio.get_running_loop()
        self._reports = asyncio.Queue(QUEUE)
        self._lock = asyncio.Lock()
        config = self._configured()
        saved = self._load(self.tokens, "tokens")
        kit_state = self._load(self.state, "state") if config.kit is not None else None
        self._has_kit = config.kit is not None
        try:
            self._bot = Bot(config, saved, self._seed, kit_state=kit_state)
        except OnairError as e:  # a token file or kit state that does not load
            if e.code == 6 and self.tokens is not None:
                raise StoreError(e.code, "tokens", _where(self.tokens), _problem(e)) from None
            if e.code in (20, 26) and self.state is not None:
                raise StoreError(e.code, "state", _where(self.state), _problem(e)) from None
            raise
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=None, follow_redirects=False)
        if self._shutdown is not None:
            self.shutdown(self._shutdown)

    def _load(self, store: Store | None, what: Literal["tokens", "state"]) -> str | None:
        """What a store holds, or a ``StoreError`` that names it and says what to do."""
        if store is None:
            return None
        try:
            return store.load()
        except UnicodeDecodeError:
            problem = "it is not UTF-8 text"
        except OSError as e:
            problem = f"it cannot be read ({e.strerror or type(e).__name__})"
        code = 6 if what == "tokens" else 20
        raise StoreError(code, what, _where(store), problem) from None

    def _configured(self) -> Config:
        """The config with what the handlers need in the kit (their commands, …)."""
        if not self._kit_extra and not self._kit_wants:
            return self.config
        kit = self.config.kit_config()
        names = {c.get("name", "").lower() for c in kit.get("commands", [])}
        commands = list(kit.get("commands", []))
        commands += [c for c in self._kit_extra if c["name"].lower() not in names]
        if commands:
            kit["commands"] = commands
        if "greetings" in self._kit_wants and not kit.get("greetings"):
            kit["greetings"] = {}
        if "tally" in self._kit_wants:
            kit.setdefault("tally", True)
        if "milestones" in self._kit_wants and not kit.get("milestones"):
            raise ValueError("an on_milestone handler needs milestones in the kit config (hearts_every, donations_every)")
        return dataclasses.replace(self.config, kit=kit)

    # ---- iterating ---------------------------------------------------------------------

    def __aiter__(self) -> AsyncIterator[DriverAction]:
        return self

    async def __anext__(self) -> DriverAction:
        self._start()
        assert self._lock is not None
        async with self._lock:
            action = await self._next()
        if action is None:
            await self.aclose()
            raise StopAsyncIteration
        return action

    async def _next(self) -> DriverAction | None:
        bot = self._bot
        assert bot is not None
        while not self._finished:
            if self._stop_asked is not None and not self._stop_applied:
                await self._apply_stop()
            now = now_ms()
            action = bot.poll(now)
            if type(action) in _HANDED_OUT:  # the common case first
                return action
            # ``_said``: a consent asked for is handed out once; only a request sent (an
            # exchange, the bot at work again) or a new pair ends that.
            if isinstance(action, Wait):
                await self._wait(action.until_ms)
            elif isinstance(action, Send):
                self._said = False
                self._spawn(action.request_id, self._send(action))
            elif isinstance(action, OpenStream):
                self._said = False
                self._spawn(action.request_id, self._stream(action))
            elif isinstance(action, CloseStream):
                self._abort(action.request_id)
            elif isinstance(action, (PersistTokens, PersistState)):
                if isinstance(action, PersistTokens):
                    self._said = False
                return self._persist(action)
            elif isinstance(action, NeedsAuthorization) or (
                isinstance(action, Stopped) and action.resumes_with_new_consent
            ):
                if self._said:
                    # Handed out already, and nobody has called authorize since.
                    if self._waits_for_consent():
                        await self._wait(None)  # until someone acts (or a report)
                        continue
                    # Nothing will bring a code: the run ends with the stop.
                    self._finished = True
                    return bot.consent_stop() if isinstance(action, NeedsAuthorization) else None
                self._said = True
                if isinstance(action, NeedsAuthorization) and self._code is not None:
                    code, self._code = self._code, None
                    bot.authorize(code, self._redirect_uri or "")
                    continue
                return action
            elif isinstance(action, Stopped):
                self._finished = True
                return action
            else:
                if self._log_notices and (line := _warning(action)) is not None:
                    log.warning("%s", line)
                return action
        return None

    def _waits_for_consent(self) -> bool:
        """Whether the driver waits for ``authorize`` after a consent was asked for."""
        return self._wait_for_consent or any(NeedsAuthorization in types for types, _ in self._handlers)

    async def _apply_stop(self) -> None:
        """The shutdown asked: what the stream holds first, then the bot stops."""
        bot = self._bot
        assert bot is not None
        self._stop_applied = True
        if not bot.closed:
            await self._read_before_stop()
            bot.shutdown(bool(self._stop_asked))

    async def _read_before_stop(self) -> None:
        """Hands the bot every byte already read: the reports queued, then, while a
        stream is open, what its connection gives without pausing (until nothing comes
        for ``STOP_IDLE_S``, at most ``STOP_READ_S``). Frames the service writes after
        this are the only ones a stop can lose."""
        q = self._reports
        loop = self._loop
        assert q is not None and loop is not None
        while not q.empty():
            self._apply(q.get_nowait())
        deadline = loop.time() + STOP_READ_S
        while self._open_streams and not self._hurry:
            left = deadline - loop.time()
            if left <= 0:
                break
            timer = loop.call_later(min(STOP_IDLE_S, left), self._idle)
            try:
                report = await q.get()
            finally:
                timer.cancel()
            if report[0] == _IDLE:
                break
            self._apply(report)

    def _idle(self) -> None:
        q = self._reports
        if q is not None and q.empty():
            q.put_nowait(_IDLE_REPORT)

    def _persist(self, action: PersistTokens | PersistState) -> DriverAction:
        store, what = (
            (self.tokens, "tokens") if isinstance(action, PersistTokens) else (self.state, "state")
        )
        if store is not None:
            try:
                store.save(action.tokens if isinstance(action, PersistTokens) else action.state)
            except Exception as e:  # a report, never the text (it may be a secret)
                failed = StoreFailed(what, f"{type(e).__name__}: {e}")  # type: ignore[arg-type]
                if self._log_notices:
                    log.warning("%s", failed.message)
                return failed
        return action

    async def _wait(self, until_ms: int | None) -> None:
        """Until ``until_ms`` or the next report; then every report that is ready."""
        q = self._reports
        loop = self._loop
        assert q is not None and loop is not None
        timer = None
        if q.empty():
            if until_ms is not None:
                timer = loop.call_later(max(0.0, (until_ms - now_ms()) / 1000), self._wake)
            try:
                report = await q.get()
            finally:
                if timer is not None:
                    timer.cancel()
            self._apply(report)
        while not q.empty():
            self._apply(q.get_nowait())

    def _apply(self, report: _Report) -> None:
        """Hands a report to the bot. Late reports of closed streams are harmless by the
        contract; a refused one would be this driver's bug: logged."""
        bot = self._bot
        assert bot is not None
        tag, rid = report[0], report[1]
        now = now_ms()
        try:
            if tag == _BYTES:
                bot.on_stream_bytes(rid, report[2], now)
            elif tag == _RESPONSE:
                self._tasks.pop(rid, None)
                bot.on_response(rid, report[2], report[3], report[4], now)
            elif tag == _ERROR:
                self._tasks.pop(rid, None)
                bot.on_transport_error(rid, now)
            elif tag == _NOT_SENT:
                self._tasks.pop(rid, None)
                not_sent = getattr(bot, "on_not_sent", None)
                if not_sent is not None:
                    not_sent(rid, now)
                else:  # a libonair without it: no answer, outcome unknown
                    bot.on_transport_error(rid, now)
            elif tag == _OPEN:
                bot.on_stream_open(rid, report[2], report[3], now)
            elif tag == _CLOSED:
                self._tasks.pop(rid, None)
                bot.on_stream_closed(rid, now)
        except OnairError as e:
            log.debug("a report the bot did not take: %s", e)

    # ---- requests ----------------------------------------------------------------------

    def _spawn(self, rid: int, work: Awaitable[None]) -> None:
        self._tasks[rid] = asyncio.ensure_future(work)

    def _abort(self, rid: int) -> None:
        task = self._tasks.pop(rid, None)
        if task is not None:
            task.cancel()
            if not task.done():
                self._dying.add(task)
                task.add_done_callback(self._dying.discard)

    async def _put(self, report: _Report) -> None:
        assert self._reports is not None
        await self._reports.put(report)

    async def _send(self, action: Send) -> None:
        r = action.request
        assert self._client is not None
        try:
            async with self._client.stream(
                r.method, r.url, headers=list(r.headers), content=r.body or None, timeout=None
            ) as response:
                body = bytearray()
                async for chunk in response.aiter_bytes():
                    body += chunk
                    if len(body) > MAX_BODY_BYTES:
                        raise httpx.ReadError("response body too large")
                report: _Report = (_RESPONSE, action.request_id, response.status_code, response.headers.raw, bytes(body))
        except _NOT_SENT_ERRORS as e:  # the connection never opened: nothing was sent
            log.debug("request %d not sent: %s", action.request_id, type(e).__name__)
            report = (_NOT_SENT, action.request_id)
        except Exception as e:  # httpx's errors, a bad URL: no response (CancelledError passes)
            log.debug("request %d: %s", action.request_id, type(e).__name__)
            report = (_ERROR, action.request_id)
        await self._put(report)

    async def _stream(self, action: OpenStream) -> None:
        r = action.request
        rid = action.request_id
        assert self._client is not None
        opened = False
        failed = _ERROR
        try:
            async with self._client.stream(r.method, r.url, headers=list(r.headers), timeout=None) as response:
                await self._put((_OPEN, rid, response.status_code, response.headers.raw))
                opened = True
                self._open_streams.add(rid)
                async for chunk in response.aiter_bytes():
                    await self._put((_BYTES, rid, chunk))
        except _NOT_SENT_ERRORS as e:  # never connected: a failed connect
            log.debug("stream %d not sent: %s", rid, type(e).__name__)
            failed = _NOT_SENT
        except Exception as e:  # a drop, a reset, a bad URL (CancelledError passes)
            log.debug("stream %d: %s", rid, type(e).__name__)
        finally:
            self._open_streams.discard(rid)
        await self._put((_CLOSED, rid) if opened else (failed, rid))

    # ---- shutdown ----------------------------------------------------------------------

    async def __aenter__(self) -> Driver:
        self._start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self, revoke: bool | None = None) -> None:
        """Stops the bot and releases everything (idempotent): what the stream holds
        already handed to the bot (as ``shutdown``), the stream closed, the last tokens
        and kit state saved, a token request or the revocation in flight awaited (at
        most ``grace_s``), every other request cancelled, every task awaited, the client
        closed when the driver made it. ``revoke`` (default: what ``shutdown`` asked):
        revoke the tokens and clear the token store."""
        if self._closed:
            return
        if self._bot is None:
            self._closed = True
            return
        if revoke is not None:
            self._revoke = revoke
        revoke = self._revoke
        assert self._lock is not None
        bot = self._bot
        if not bot.closed and self._stop_asked is None:
            self._stop_asked = revoke  # wakes an iteration in another task, which then lets go
            self._nudge()
        try:
            async with self._lock:
                if self._closed:
                    return
                self._closed = self._finished = True
                if not self._stop_applied:
                    self._stop_applied = True
                    if not bot.closed:
                        await self._read_before_stop()
                bot.shutdown(revoke)
                await self._drain_shutdown()
        finally:
            try:
                await self._release()
            finally:
                if revoke and self.tokens is not None:
                    try:
                        self.tokens.clear()
                    except Exception as e:
                        log.warning("the token store was not cleared: %s", type(e).__name__)
                if self._has_kit:
                    try:
                        self._last_kit = bot.kit()
                    except OnairError:
                        pass
                bot.close()

    async def _drain_shutdown(self) -> None:
        """The stopping bot's last actions, through the ordinary loop until ``Stopped``:
        the bot drops the requests it no longer wants and waits for a token request or
        the revocation itself (at most 30 s); nothing is handed out now, the pair and
        state are saved. ``grace_s`` bounds how long this waits."""
        self._finished = False

        async def settle() -> None:
            while (action := await self._next()) is not None and not isinstance(action, Stopped):
                if isinstance(action, StoreFailed) and not self._log_notices:
                    log.warning("%s", action.message)  # never handed out: said anyway

        try:
            await asyncio.wait_for(settle(), self._grace_s)
        except asyncio.TimeoutError:
            pass
        self._finished = True

    async def _release(self) -> None:
        for rid in list(self._tasks):
            self._abort(rid)
        dying = list(self._dying)
        if dying:
            await asyncio.gather(*dying, return_exceptions=True)
        if self._own_client and self._client is not None:
            await self._client.aclose()

    # ---- handlers --------------------------------------------------------------------------

    def on(self, *types: type) -> Callable[[H], H]:
        """Registers a handler for these action types (``@bot.on(onair.Chat, onair.Like)``,
        ``@bot.on(onair.Notice)``); it may be sync or async, and a ``str`` it returns is
        the reply the action's ``reply_kind`` names (an ``Arrival``, a ``Donation``, a
        ``Command``), naming its person, said otherwise (see the module docs)."""

        def register(fn: H) -> H:
            self._handlers.append((types, fn))
            return fn

        return register

    def command(
        self,
        name: str,
        *aliases: str,
        allowed: Literal["anyone", "managers", "dj"] = "anyone",
        cooldown_ms: int | None = None,
        room_cooldown_ms: int | None = None,
    ) -> Callable[[Callable[[Command], HandlerResult]], Callable[[Command], HandlerResult]]:
        """Registers the handler of command ``name`` (``!name`` in chat) and adds it to the
        kit's commands (unless the config names it already). ``cooldown_ms`` holds back
        one person who ran it; ``room_cooldown_ms`` the whole room (fifty people typing
        it within that time get one answer)."""

        def register(fn: Callable[[Command], HandlerResult]) -> Callable[[Command], HandlerResult]:
            spec: dict[str, Any] = {"name": name, "aliases": list(aliases), "allowed": allowed}
            if cooldown_ms is not None:
                spec["cooldown_ms"] = cooldown_ms
            if room_cooldown_ms is not None:
                spec["room_cooldown_ms"] = room_cooldown_ms
            self._kit_extra.append(spec)
            self._commands[name.lower()] = fn
            return fn

        return register

    def _want(self, kit: str, *types: type) -> Callable[[H], H]:
        def register(fn: H) -> H:
            self._kit_wants.add(kit)
            self._handlers.append((types, fn))
            return fn

        return register

    def on_arrival(self, fn: Callable[[Arrival], HandlerResult]) -> Callable[[Arrival], HandlerResult]:
        """Someone to greet (turns the kit's greetings on with their defaults if the config
        has none)."""
        return self._want("greetings", Arrival)(fn)

    def on_milestone(self, fn: Callable[[Milestone], HandlerResult]) -> Callable[[Milestone], HandlerResult]:
        """A milestone crossed (the kit config must set ``milestones``)."""
        return self._want("milestones", Milestone)(fn)

    def on_broadcast_ended(
        self, fn: Callable[[BroadcastEnded], HandlerResult]
    ) -> Callable[[BroadcastEnded], HandlerResult]:
        """A broadcast's end with its final tally (turns the kit's tally on)."""
        return self._want("tally", BroadcastEnded)(fn)

    def on_chat(self, fn: Callable[[Chat], HandlerResult]) -> Callable[[Chat], HandlerResult]:
        return self.on(Chat)(fn)

    def on_presence(self, fn: Callable[[Presence], HandlerResult]) -> Callable[[Presence], HandlerResult]:
        return self.on(Presence)(fn)

    def on_like(self, fn: Callable[[Like], HandlerResult]) -> Callable[[Like], HandlerResult]:
        return self.on(Like)(fn)

    def on_donation(self, fn: Callable[[Donation], HandlerResult]) -> Callable[[Donation], HandlerResult]:
        return self.on(Donation)(fn)

    def on_end(self, fn: Callable[[End], HandlerResult]) -> Callable[[End], HandlerResult]:
        return self.on(End)(fn)

    def on_done(self, fn: Callable[[Done], HandlerResult]) -> Callable[[Done], HandlerResult]:
        return self.on(Done)(fn)

    def on_timer(self, fn: Callable[[Timer], HandlerResult]) -> Callable[[Timer], HandlerResult]:
        return self.on(Timer)(fn)

    def on_notice(self, fn: Callable[[Notice], HandlerResult]) -> Callable[[Notice], HandlerResult]:
        """Every notice (``CommandRefused``, ``ProblemNotice``, …). Notices of level
        ``warn`` are logged anyway unless the driver has ``log_notices=False``; without a
        handler the others are logged at INFO (``logging.getLogger("onair")``)."""
        return self.on(Notice)(fn)

    def on_stopped(self, fn: Callable[[Stopped], HandlerResult]) -> Callable[[Stopped], HandlerResult]:
        return self.on(Stopped)(fn)

    def on_needs_authorization(
        self, fn: Callable[[NeedsAuthorization], HandlerResult]
    ) -> Callable[[NeedsAuthorization], HandlerResult]:
        """The bot needs a consent code: no tokens and no code left, or (in ``run``,
        after the ``reauthorize`` stop's own handlers) a code refused, expired or used.
        Get one and call ``authorize`` (from any thread: a web handler receiving the DJ's
        redirect, say). With this handler the driver waits for it (``wait_for_consent``)."""
        return self.on(NeedsAuthorization)(fn)

    async def dispatch(self, action: DriverAction) -> None:
        """Runs the handlers registered for ``action`` (what ``run`` does with each)."""
        handled = False
        if isinstance(action, Command):
            fn = self._commands.get(action.name.lower())
            if fn is not None:
                handled = True
                await self._call(fn, action)
        for types, handler in self._handlers:
            if isinstance(action, types):
                handled = True
                await self._call(handler, action)
        if not handled:
            if isinstance(action, Notice):
                if not (self._log_notices and _level(action) == "warn"):  # logged already
                    log.info("%s", _message(action))
            elif isinstance(action, Stopped) and action.code != "shut_down":
                log.warning("the bot stopped (%s): %s", action.code, action.message)
            elif isinstance(action, NeedsAuthorization) and self._wait_for_consent:
                log.warning("the bot waits for the DJ's consent: call authorize(code, redirect_uri)")

    async def _call(self, fn: Callable[[Any], HandlerResult], action: Any) -> None:
        """One handler; what it raises is logged and the bot goes on (one bad reply
        must not take a bot off the air)."""
        try:
            result = fn(action)
            if inspect.isawaitable(result):
                result = await result
            if isinstance(result, str):
                self._answer(action, result)
        except Exception:
            log.exception("the handler %s failed on %s", getattr(fn, "__name__", fn), type(action).__name__)

    def _answer(self, action: Any, text: str) -> None:
        """A handler's returned text: the reply the core names for the action
        (its ``reply_kind``), naming the action's person, so it joins the merging;
        ``say`` otherwise, or when it is not one chat message (a blank text says
        nothing)."""
        kind = getattr(action, "reply_kind", None)
        user = getattr(action, "user", None)
        if kind is not None and isinstance(user, User):
            try:
                self.reply(kind, user, text)
                return
            except ChatRejected:
                pass
        self.say(text)

    async def run(self, *, signals: bool = True) -> Stopped | None:
        """Runs the bot with its handlers until it stops; the ``Stopped`` that ended it.

        A ``reauthorize`` stop (a consent code refused, expired or already used; or no
        code at all) ends the run and is returned, unless the driver waits for a new
        code (``wait_for_consent``, or an ``on_needs_authorization`` handler); a
        shutdown while it waits still returns that stop (a person must act), not
        ``shut_down``. A token file or kit state that does not load raises
        ``StoreError`` as it starts.

        ``signals`` (main thread, Unix): the first SIGINT or SIGTERM asks for a clean
        shutdown (no revoke), a second cancels the run at once (``CancelledError``; the
        shutdown still releases everything, and ``onair.run`` exits 130 or 143)."""
        loop = asyncio.get_running_loop()
        installed: list[signal.Signals] = []
        task = asyncio.current_task()
        asked = [0]

        def on_signal(sig: signal.Signals) -> None:
            asked[0] += 1
            if asked[0] == 1:
                self.shutdown()
            else:
                self._hurry = True
                self._second_signal = int(sig)
                if task is not None:
                    task.cancel()

        if signals and threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                try:
                    loop.add_signal_handler(sig, on_signal, sig)
                    installed.append(sig)
                except (NotImplementedError, RuntimeError, ValueError):
                    pass
        last: Stopped | None = None
        try:
            async with self:
                async for action in self:
                    if isinstance(action, Stopped):
                        # Shut down while waiting for consent: that still needs a person.
                        if not (action.code == "shut_down" and last is not None and last.resumes_with_new_consent):
                            last = action
                    elif isinstance(action, NeedsAuthorization):
                        last = self.bot.consent_stop()
                    elif isinstance(action, PersistTokens):
                        last = None  # authorized (again)
                    await self.dispatch(action)
                    if isinstance(action, Stopped) and action.resumes_with_new_consent and self._waits_for_consent():
                        await self.dispatch(NeedsAuthorization())
        finally:
            for sig in installed:
                loop.remove_signal_handler(sig)
        return last


_HANDED_OUT: frozenset[type] = frozenset(
    {Chat, Presence, Like, Donation, End, OtherEvent, Command, Arrival, Milestone, BroadcastEnded, Done, CommandRefused}
)


def _level(notice: Notice) -> str:
    """A notice's level (``warn`` or ``info``), as the core gives it."""
    return str(getattr(notice, "level", "info") or "info")


def _warning(action: object) -> str | None:
    """The log line of a warn-level notice, one of a kind newer than this package
    included (its JSON carries ``message`` and ``level``); ``None`` otherwise."""
    if isinstance(action, Notice):
        return _message(action) if _level(action) == "warn" else None
    if isinstance(action, OtherAction) and isinstance(action.json, dict):
        notice = action.json.get("notice")
        if action.json.get("type") == "notice" and isinstance(notice, dict):
            if notice.get("level") == "warn":
                return str(notice.get("message", ""))
    return None


def _message(notice: Notice) -> str:
    """A notice's sentence, as the core gives it (its ``repr`` for an older core)."""
    return str(getattr(notice, "message", None) or notice)


def _where(store: Store) -> str:
    """A store's name in a message: a file's path, else its type."""
    path = getattr(store, "path", None)
    return str(path) if path is not None else type(store).__name__


def _problem(e: OnairError) -> str:
    """What libonair said was wrong with a saved text, without its advice."""
    return e.detail or str(e)


def run(driver: Driver, *, signals: bool = True) -> Stopped | None:
    """Runs ``driver`` with its handlers until the bot stops, blocking (``asyncio.run``):
    for a script. Ctrl-C or SIGTERM shuts it down cleanly (no revoke). A token file or
    kit state that does not load ends the script with one line that names the file and
    says what to do (``SystemExit``, status 1); ``await driver.run()`` raises the
    ``StoreError`` instead. A second Ctrl-C or SIGTERM while the bot shuts down ends
    the script at once, as a shell expects: status 130 (SIGINT) or 143 (SIGTERM)."""
    try:
        return asyncio.run(driver.run(signals=signals))
    except StoreError as e:
        raise SystemExit(str(e)) from None
    except asyncio.CancelledError:
        if driver._second_signal is None:
            raise
        raise SystemExit(128 + driver._second_signal) from None
