"""The installed package: one version, its wheel's tag, libonair inside.

scripts/test-python installs the wheel python/build-dist made; these read what
pip recorded of it (importlib.metadata), so they judge the package a user gets.
"""

from __future__ import annotations

import importlib.metadata
import platform
import re
from pathlib import Path

import onair
import onair._ffi
import pytest


def installed() -> importlib.metadata.Distribution:
    try:
        dist = importlib.metadata.distribution("onair")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("onair is not installed (a checkout on PYTHONPATH): scripts/test-python installs the wheel")
    files = [Path(str(dist.locate_file(f))).resolve() for f in dist.files or []]
    if Path(onair.__file__).resolve() not in files:
        pytest.skip(f"the onair imported ({onair.__file__}) is not the installed distribution's")
    return dist


def test_one_version_for_the_package_its_module_and_libonair() -> None:
    dist = installed()
    assert onair.__version__ == dist.version == "0.1.0"
    assert onair.library_version() == dist.version


def test_the_wheel_is_py3_none_manylinux_with_libonair_inside() -> None:
    dist = installed()
    wheel = dist.read_text("WHEEL") or ""
    tags = re.findall(r"^Tag: (\S+)$", wheel, re.M)
    assert len(tags) == 1, wheel
    python, abi, plat = tags[0].split("-")
    assert (python, abi) == ("py3", "none")  # ctypes: no CPython ABI
    assert re.fullmatch(rf"manylinux_2_\d+_{platform.machine()}", plat), plat
    assert "Root-Is-Purelib: false" in wheel
    recorded = {str(f) for f in dist.files or []}
    assert "onair/libonair.so" in recorded
    assert Path(onair._ffi.LIB_PATH).resolve() == Path(str(dist.locate_file("onair/libonair.so"))).resolve()
    assert {"LICENSE-MIT", "LICENSE-APACHE"} <= {Path(f).name for f in recorded if "/licenses/" in f}
    meta = dist.metadata
    assert meta["License-Expression"] == "MIT OR Apache-2.0"
    assert meta["Description-Content-Type"] == "text/markdown"
