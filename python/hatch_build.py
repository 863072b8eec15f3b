"""The wheel's build hook: libonair inside, a py3-none-<platform> tag outside.

libonair is a plain C library loaded with ctypes, so the wheel does not depend
on the Python version or ABI, only on the platform: ``py3-none-linux_x86_64``
and the like. The library comes from ``$ONAIR_LIBONAIR`` (a built file; what
``scripts/test-python`` passes) or, without it, from ``cargo build --release
-p onair-ffi`` in the checkout this folder sits in (``pip install ./python``).

No sdist is offered: it would need the Rust workspace to build libonair, so
building one fails with a message instead of producing an archive that cannot
be installed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

LIB_NAME = {"darwin": "libonair.dylib", "win32": "onair.dll"}.get(sys.platform, "libonair.so")


def platform_tag() -> str:
    """This platform's wheel tag (``linux_x86_64``, ``macosx_11_0_arm64``, ``win_amd64``)."""
    return sysconfig.get_platform().replace("-", "_").replace(".", "_")


class CustomBuildHook(BuildHookInterface):  # type: ignore[type-arg]
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel":
            raise RuntimeError(
                "onair offers no sdist: libonair is built from the Rust workspace around this folder. "
                "Build a wheel instead (pip wheel ./python, or scripts/test-python)."
            )
        build_data["pure_python"] = False
        build_data["tag"] = f"py3-none-{platform_tag()}"
        if version == "editable":
            return  # an editable install finds libonair in the checkout's target/ (onair/_ffi.py)
        build_data["force_include"][str(self.library())] = f"onair/{LIB_NAME}"

    def library(self) -> Path:
        given = os.environ.get("ONAIR_LIBONAIR")
        if given:
            path = Path(given).resolve()
            if not path.is_file():
                raise RuntimeError(f"ONAIR_LIBONAIR={given}: no such file")
            return path
        workspace = Path(self.root).resolve().parent
        if not (workspace / "ffi" / "Cargo.toml").is_file():
            raise RuntimeError(
                f"{workspace} is not the onair workspace: set ONAIR_LIBONAIR to a built {LIB_NAME}, "
                "or install the wheel"
            )
        cargo = shutil.which("cargo")
        if cargo is None:
            raise RuntimeError("building libonair needs cargo (rustup); or set ONAIR_LIBONAIR to a built library")
        subprocess.run(
            [cargo, "build", "--release", "--locked", "-p", "onair-ffi"], cwd=workspace, check=True
        )
        target = Path(os.environ.get("CARGO_TARGET_DIR", workspace / "target"))
        return target / "release" / LIB_NAME
