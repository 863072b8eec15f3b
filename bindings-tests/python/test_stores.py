"""The stores: FileStore (mode 0600, atomic replace, from many threads), MemoryStore,
CallbackStore."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import onair
import pytest


def test_file_store_round_trips_with_mode_0600(tmp_path: Path) -> None:
    store = onair.FileStore(tmp_path / "nested" / "tokens.json")
    assert store.load() is None
    old = os.umask(0)  # whatever the umask, the file is 0600
    try:
        store.save('{"a": 1}')
    finally:
        os.umask(old)
    store.save('{"a": 2} 🎧')
    assert store.load() == '{"a": 2} 🎧'
    assert stat.S_IMODE((tmp_path / "nested" / "tokens.json").stat().st_mode) == 0o600
    assert os.listdir(tmp_path / "nested") == ["tokens.json"]  # no temporary file left
    store.clear()
    store.clear()
    assert store.load() is None
    assert isinstance(store, onair.Store) and "tokens.json" in repr(store)


def test_a_failed_save_keeps_the_old_text(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = onair.FileStore(tmp_path / "t.json")
    store.save("old")

    def broken(fd: int) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "fsync", broken)
    with pytest.raises(OSError):
        store.save("new")
    assert store.load() == "old" and os.listdir(tmp_path) == ["t.json"]


def test_a_file_store_from_many_threads(tmp_path: Path) -> None:
    """Saves and loads race: every load reads one whole save, never a torn one; the
    file ends with one of the last saves, and no temporary file is left."""
    store = onair.FileStore(tmp_path / "state.json")
    texts = [f'{{"writer":{k},"n":{n},"pad":"{"x" * 4000}"}}' for k in range(4) for n in range(60)]
    valid = set(texts)
    torn: list[str] = []

    def writer(k: int) -> None:
        for n in range(60):
            store.save(texts[k * 60 + n])

    def reader() -> None:
        for _ in range(300):
            text = store.load()
            if text is not None and text not in valid:
                torn.append(text[:80])

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(4)]
    threads += [threading.Thread(target=reader) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert torn == []
    assert store.load() in valid and os.listdir(tmp_path) == ["state.json"]


def test_memory_and_callback_stores() -> None:
    m = onair.MemoryStore()
    assert m.load() is None and repr(m) == "MemoryStore(empty)"
    m.save("secret-tokens")
    assert m.load() == "secret-tokens" and "secret" not in repr(m)
    m.clear()
    assert m.load() is None
    box: dict[str, str] = {}
    c = onair.CallbackStore(lambda: box.get("v"), lambda t: box.__setitem__("v", t), lambda: box.clear())
    c.save("x")
    assert c.load() == "x" and box == {"v": "x"}
    c.clear()
    assert c.load() is None
    assert isinstance(c, onair.Store) and isinstance(m, onair.Store)
    onair.CallbackStore(lambda: None, lambda t: None).clear()  # no clear given: nothing to do
