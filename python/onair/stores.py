"""Where a bot keeps what must survive a restart: its tokens (``PersistTokens``)
and its kit state (``PersistState``). Without the last token pair a restart
needs the DJ's consent again; without the kit state it greets people twice.

Every store is safe to call from any thread.

- ``FileStore(path)``: the text in a file created with mode 0600 (tokens are
  secrets), replaced atomically (a temporary file beside it, flushed, synced,
  renamed over it): a crash leaves the old text or the new, never half.
- ``MemoryStore()``: in memory (tests; a process that keeps it elsewhere).
- ``CallbackStore(load, save, clear)``: your functions (a database, a vault).
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Protocol, runtime_checkable


@runtime_checkable
class Store(Protocol):
    """Text kept between runs."""

    def load(self) -> str | None:
        """The saved text, or None."""
        ...

    def save(self, text: str) -> None:
        """Replaces the saved text."""
        ...

    def clear(self) -> None:
        """Forgets it (after a revocation)."""
        ...


_counter = itertools.count()


class FileStore:
    """The text in a file: mode 0600, replaced atomically (see the module docs).

    Its folder is created on the first save. Any thread may use it; saves run one
    at a time, so the file holds the last one."""

    __slots__ = ("path", "_lock")

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()

    def load(self) -> str | None:
        try:
            return self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None

    def save(self, text: str) -> None:
        data = text.encode("utf-8")
        with self._lock:
            folder = self.path.parent
            folder.mkdir(parents=True, exist_ok=True)
            tmp = folder / f".{self.path.name}.tmp-{os.getpid()}-{threading.get_ident()}-{next(_counter)}"
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)
            try:
                try:
                    if hasattr(os, "fchmod"):
                        os.fchmod(fd, 0o600)  # whatever the umask
                    view = memoryview(data)
                    while view:
                        view = view[os.write(fd, view):]
                    os.fsync(fd)
                finally:
                    os.close(fd)
                os.replace(tmp, self.path)
            except BaseException:
                try:
                    os.unlink(tmp)
                except FileNotFoundError:
                    pass
                raise
            _sync_folder(folder)

    def clear(self) -> None:
        with self._lock:
            try:
                self.path.unlink()
            except FileNotFoundError:
                pass

    def __repr__(self) -> str:
        return f"FileStore({str(self.path)!r})"


def _sync_folder(folder: Path) -> None:
    """The rename itself durable (POSIX); best effort elsewhere."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class MemoryStore:
    """Text in memory; ``repr`` never shows it (it may be a token file)."""

    __slots__ = ("_text", "_lock")

    def __init__(self, text: str | None = None) -> None:
        self._text = text
        self._lock = threading.Lock()

    def load(self) -> str | None:
        with self._lock:
            return self._text

    def save(self, text: str) -> None:
        with self._lock:
            self._text = text

    def clear(self) -> None:
        with self._lock:
            self._text = None

    def __repr__(self) -> str:
        return f"MemoryStore({'empty' if self._text is None else '<redacted>'})"


class CallbackStore:
    """Your functions as a store: ``load() -> str | None``, ``save(text)``, and
    ``clear()`` (default: nothing). They may be called from any thread the bot's
    owner uses; make them safe for that."""

    __slots__ = ("_load", "_save", "_clear")

    def __init__(
        self,
        load: Callable[[], str | None],
        save: Callable[[str], None],
        clear: Callable[[], None] | None = None,
    ) -> None:
        self._load, self._save, self._clear = load, save, clear

    def load(self) -> str | None:
        return self._load()

    def save(self, text: str) -> None:
        self._save(text)

    def clear(self) -> None:
        if self._clear is not None:
            self._clear()

    def __repr__(self) -> str:
        return "CallbackStore()"
