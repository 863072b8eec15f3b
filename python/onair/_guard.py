"""Any thread, any time: how every object that owns a libonair handle serializes its calls.

libonair answers a second thread's call on a handle with ``ONAIR_BUSY``, and
what a call lends (an action, an item, a string) is valid only until the next
call on the handle. ctypes releases the GIL for every call, so without more a
``Bot`` shared by a web handler and the loop would see ``BUSY`` (or, before
libonair checked, corrupt memory). So each object (``Owner``) has a lock,
held across the call *and* the reading of what it lent: any thread may call
any method at any time, and calls on one object run one after the other.

The lock is a ``threading.RLock`` used as a plain lock: a call never enters
it twice. The RLock is for the question "does this thread hold it?", which
it answers atomically with the acquisition (a plain Lock plus an owner
attribute would leave a moment when the thread holds the lock but the
attribute does not say so yet). That question matters for signal handlers:
Python runs them on the main thread between bytecodes, possibly in the
middle of a method of the very object the handler uses. Then

- ``close()`` and ``Bot.shutdown()`` never wait: they record a request, and
  apply it at once when the lock is free (``_try_requests``); otherwise the
  holder applies it before it releases the lock (the interrupted method, on
  its way out, after it has read everything it was reading), and every
  call applies pending requests before its own work. A plain Lock would
  deadlock on the held lock; an RLock entered again would let the handler
  call into libonair in the middle of a half-read action.
- any other method called where this thread already holds the lock raises
  ``ReentrantCallError`` instead of deadlocking or reading a half-written
  action.

A call holds one object's lock at a time (``Bot(config)`` builds its
config's handle inside the call), so no two locks are ever waited for in
opposite orders. Requests never block, so a signal handler cannot deadlock
on a lock held by a thread that waits for one the interrupted code holds.
"""

from __future__ import annotations

import _thread
import functools
import threading
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, ClassVar, Concatenate, NoReturn, ParamSpec, TypeVar

from .errors import ClosedError, ReentrantCallError

P = ParamSpec("P")
R = TypeVar("R")
O = TypeVar("O", bound="Owner")

_CLOSE = "close"


class Owner:
    """Owns one libonair handle (``_h``); ``close()`` frees it, ``with`` closes it,
    ``__del__`` is a fallback. Serializes every call (see the module docs).

    An owner is never copied or pickled: a copy would be a second owner of the
    same handle (a double free at the latest). Share the object itself: any
    thread may call it.
    """

    _free: ClassVar[Any] = None
    _h: int | None = None
    _closing: bool = False
    _lock: _thread.RLock
    _held_here: Callable[[], bool]  # whether this thread holds _lock
    _requests: deque[str]

    def __new__(cls: type[O], *args: Any, **kwargs: Any) -> O:
        self = super().__new__(cls)
        # Before __init__ runs, so close() and __del__ work on a half-built object.
        self._lock = lock = threading.RLock()
        # Whether this thread holds the lock, as the RLock recorded it when it was
        # acquired (atomically with the acquisition).
        self._held_here = lock._is_owned  # type: ignore[attr-defined]
        self._requests = deque()
        return self

    # ---- requests: close() and shutdown() -----------------------------------

    def _apply_requests(self) -> None:
        """Applies pending requests, in order. The caller holds the lock."""
        requests = self._requests
        while requests:
            request = requests.popleft()  # only lock holders pop; a signal handler may append
            h = self._h
            if h is None:
                continue
            if request == _CLOSE:
                self._h = None
                self._closed()
                type(self)._free(h)
            else:
                self._request(request, h)

    def _try_requests(self) -> None:
        """Applies pending requests now unless a call holds the lock (which then applies them)."""
        lock = self._lock
        while self._requests and not self._held_here() and lock.acquire(blocking=False):
            try:
                self._apply_requests()
            finally:
                lock.release()

    def _request(self, request: str, h: int) -> None:
        """A request other than close (``Bot``: shutdown). The caller holds the lock."""

    def _closed(self) -> None:
        """Called once the handle is gone, under the lock (drop what pointed into it)."""

    def close(self) -> None:
        """Frees the handle (idempotent). Never waits: while a call on this object is
        in progress (another thread's, or the one a signal handler interrupted) the
        handle is freed when that call returns; from now on every call raises
        ``ClosedError``."""
        if self._closing:
            return
        self._closing = True
        self._requests.append(_CLOSE)
        self._try_requests()

    @property
    def closed(self) -> bool:
        return self._closing or self._h is None

    # ---- calls ----------------------------------------------------------------

    def _reentered(self, what: str) -> ReentrantCallError:
        return ReentrantCallError(
            f"{type(self).__name__}.{what} was called while this thread is inside a call on the same "
            f"{type(self).__name__} (from a signal handler?): there, call only close() or shutdown(), "
            "which take effect when the interrupted call returns"
        )

    def _closed_error(self) -> ClosedError:
        return ClosedError(f"the {type(self).__name__} is closed")

    @contextmanager
    def _holding(self, what: str = "call") -> Iterator[int]:
        """Holds the lock for one call made outside a ``locked`` method; yields the handle."""
        if self._held_here():
            raise self._reentered(what)
        lock = self._lock
        try:
            with lock:
                if self._requests:
                    self._apply_requests()
                h = self._h
                if h is None:
                    raise self._closed_error()
                yield h
                if self._requests:
                    self._apply_requests()
        finally:
            if self._requests:
                self._try_requests()

    # ---- copies ----------------------------------------------------------------

    def __copy__(self) -> NoReturn:
        raise TypeError(
            f"a {type(self).__name__} owns a libonair handle and cannot be copied: "
            "share the object itself (any thread may call it)"
        )

    def __deepcopy__(self, memo: Any) -> NoReturn:
        self.__copy__()

    def __reduce_ex__(self, protocol: Any) -> NoReturn:
        raise TypeError(f"a {type(self).__name__} owns a libonair handle and cannot be pickled")

    def __reduce__(self) -> NoReturn:
        self.__reduce_ex__(2)

    # ---- lifetime ----------------------------------------------------------------

    def __enter__(self: O) -> O:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # pragma: no cover - interpreter shutdown
            pass

    def __repr__(self) -> str:
        return f"{type(self).__name__}(closed={self.closed})"


def locked(method: Callable[Concatenate[O, P], R]) -> Callable[Concatenate[O, P], R]:
    """Runs a method of an ``Owner`` with its lock held and its handle open
    (``self._h`` is the handle inside): ``ClosedError`` when closed,
    ``ReentrantCallError`` when this thread is already inside a call on it."""
    name = method.__name__

    @functools.wraps(method)
    def call(self: O, /, *args: P.args, **kwargs: P.kwargs) -> R:
        if self._held_here():
            raise self._reentered(name)
        lock = self._lock
        if self._closing:
            raise self._closed_error()
        try:
            with lock:
                if self._requests:
                    self._apply_requests()
                if self._h is None:
                    raise self._closed_error()
                result = method(self, *args, **kwargs)
                if self._requests:
                    self._apply_requests()
                return result
        finally:
            if self._requests:
                self._try_requests()

    return call


def locked_or(value: R) -> Callable[[Callable[Concatenate[O, P], R]], Callable[Concatenate[O, P], R]]:
    """``locked``, for getters that answer ``value`` on a closed object instead of raising."""

    def wrap(method: Callable[Concatenate[O, P], R]) -> Callable[Concatenate[O, P], R]:
        inner = locked(method)

        @functools.wraps(method)
        def call(self: O, /, *args: P.args, **kwargs: P.kwargs) -> R:
            try:
                return inner(self, *args, **kwargs)
            except ClosedError:
                return value

        return call

    return wrap
