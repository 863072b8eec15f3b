"""The build hook: libonair inside the wheel, its Rust sources inside the sdist.

libonair is a plain C library loaded with ctypes, so the wheel does not depend
on the Python version or ABI, only on the platform and its C library:
``py3-none-manylinux_2_<N>_x86_64`` on Linux, where 2.<N> is the newest glibc
symbol version libonair references (``$ONAIR_WHEEL_PLATFORM`` overrides it:
``python/build-dist`` passes the tag ``auditwheel show`` gives), the platform's
own tag elsewhere.

The library comes from, in order: ``$ONAIR_LIBONAIR`` (a built file; what
``python/build-dist`` passes); the sdist's ``rust/`` folder (the core and ffi
crates, Cargo.lock and a workspace manifest trimmed to them), built with
``cargo build --release --locked``; or the checkout this folder sits in
(``pip install ./python``), built the same way.

The sdist is made from a checkout: its ``rust/`` folder is staged from the
workspace around this folder, Cargo.lock pruned to those two crates by cargo.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

LIB_NAME = {"darwin": "libonair.dylib", "win32": "onair.dll"}.get(sys.platform, "libonair.so")

#: What the sdist's rust/ holds of the workspace: files and folders per crate.
CRATES: dict[str, list[str]] = {
    # benches/ and examples/ because core/Cargo.toml declares targets in them.
    "core": ["Cargo.toml", "README.md", "src", "benches", "examples"],
    "ffi": ["Cargo.toml", "README.md", "build.rs", "src"],
}
#: The sections of the workspace's Cargo.toml the two crates inherit from.
KEPT_SECTIONS = ("workspace.package", "workspace.lints.rust", "workspace.lints.clippy", "profile.release")

NO_RUST = (
    "onair: building libonair from source needs Rust (cargo {what}), which is not on PATH. "
    "Install Rust with rustup (https://rustup.rs) and retry, or install a prebuilt wheel "
    "(pip install --only-binary onair onair)."
)


def platform_tag() -> str:
    """This platform's own wheel tag (``linux_x86_64``, ``macosx_11_0_arm64``, ``win_amd64``)."""
    return sysconfig.get_platform().replace("-", "_").replace(".", "_")


def glibc_needed(library: Path) -> tuple[int, int] | None:
    """The newest ``GLIBC_x.y`` symbol version the library's dynamic section names."""
    found = {(int(m[1]), int(m[2])) for m in re.finditer(rb"GLIBC_(\d+)\.(\d+)", library.read_bytes())}
    return max(found) if found else None


def wheel_platform(library: Path | None) -> str:
    """The wheel's platform tag for this library (PEP 600 on glibc Linux)."""
    given = os.environ.get("ONAIR_WHEEL_PLATFORM")
    if given:
        return given
    own = platform_tag()
    if library is None or not own.startswith("linux_"):
        return own
    glibc = glibc_needed(library)
    if glibc is None:
        return own  # not glibc (musl): the platform's own tag
    return f"manylinux_{glibc[0]}_{glibc[1]}_{own.removeprefix('linux_')}"


def trimmed_manifest(workspace_toml: str) -> str:
    """The workspace's Cargo.toml cut to the core and ffi crates and what they inherit."""
    out = [
        "# The onair workspace cut to libonair's two crates (the core and its C API),",
        "# made for the Python sdist by python/hatch_build.py.",
        "[workspace]",
        'resolver = "2"',
        "members = [" + ", ".join(f'"{crate}"' for crate in CRATES) + "]",
        "",
    ]
    keep = False
    for line in workspace_toml.splitlines():
        header = re.fullmatch(r"\[([^\[\]]+)\]\s*", line)
        if header:
            keep = header[1].strip() in KEPT_SECTIONS
            if keep:
                out.append("")
        if keep and not line.lstrip().startswith("#"):
            out.append(line)
    missing = [s for s in KEPT_SECTIONS if f"[{s}]" not in out]
    if missing:
        raise RuntimeError(f"the workspace's Cargo.toml has no {', '.join(missing)}")
    return "\n".join(out).rstrip() + "\n"


class CustomBuildHook(BuildHookInterface):  # type: ignore[type-arg]
    PLUGIN_NAME = "custom"
    staged: str | None = None

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name == "sdist":
            self.stage_sources(build_data)
            return
        build_data["pure_python"] = False
        if version == "editable":
            # An editable install finds libonair in the checkout's target/ (onair/_ffi.py).
            build_data["tag"] = f"py3-none-{platform_tag()}"
            return
        library = self.library()
        build_data["tag"] = f"py3-none-{wheel_platform(library)}"
        build_data["force_include"][str(library)] = f"onair/{LIB_NAME}"

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        if self.staged is not None:
            shutil.rmtree(self.staged, ignore_errors=True)
            self.staged = None

    # The wheel's library.

    def library(self) -> Path:
        given = os.environ.get("ONAIR_LIBONAIR")
        if given:
            path = Path(given).resolve()
            if not path.is_file():
                raise RuntimeError(f"ONAIR_LIBONAIR={given}: no such file")
            return path
        root = Path(self.root).resolve()
        if (root / "rust" / "Cargo.toml").is_file():
            return self.cargo_build(root / "rust", "to build libonair from the sdist's rust/ folder")
        workspace = root.parent
        if (workspace / "ffi" / "Cargo.toml").is_file():
            return self.cargo_build(workspace, "to build libonair in the checkout")
        raise RuntimeError(
            f"{root} is neither the onair sdist nor in the onair workspace: "
            f"set ONAIR_LIBONAIR to a built {LIB_NAME}, or install the wheel"
        )

    def cargo_build(self, workspace: Path, what: str) -> Path:
        cargo = shutil.which("cargo")
        if cargo is None:
            raise RuntimeError(NO_RUST.format(what=what))
        subprocess.run([cargo, "build", "--release", "--locked", "-p", "onair-ffi"], cwd=workspace, check=True)
        target = Path(os.environ.get("CARGO_TARGET_DIR", workspace / "target"))
        if not target.is_absolute():
            target = workspace / target
        return target / "release" / LIB_NAME

    # The sdist's sources.

    def stage_sources(self, build_data: dict[str, Any]) -> None:
        root = Path(self.root).resolve()
        workspace = root.parent
        if not (workspace / "ffi" / "Cargo.toml").is_file():
            raise RuntimeError(f"the sdist is made from a checkout of onair: {workspace} is not one")
        cargo = shutil.which("cargo")
        if cargo is None:
            raise RuntimeError(NO_RUST.format(what="to prune Cargo.lock for the sdist"))
        self.staged = tempfile.mkdtemp(prefix="onair-sdist-")
        rust = Path(self.staged) / "rust"
        for crate, parts in CRATES.items():
            for part in parts:
                src = workspace / crate / part
                dst = rust / crate / part
                if src.is_dir():
                    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("tests", "__pycache__"))
                else:
                    dst.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(src, dst)
        (rust / "Cargo.toml").write_text(trimmed_manifest((workspace / "Cargo.toml").read_text()))
        shutil.copyfile(workspace / "Cargo.lock", rust / "Cargo.lock")
        # Cargo drops the lock's packages the two crates do not use; the versions
        # of the rest stay as they are (offline: nothing is looked up).
        subprocess.run(
            [cargo, "metadata", "--offline", "--format-version", "1", "--manifest-path", str(rust / "Cargo.toml")],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        build_data["force_include"][str(rust)] = "rust"
        # python/LICENSE-* are links to the top's: the sdist gets the files
        # instead (hatchling would add the links).
        forced = build_data["force_include"]
        for name in ("LICENSE-MIT", "LICENSE-APACHE"):
            for source in [s for s, n in forced.items() if n == name]:
                del forced[source]
            forced[str(workspace / name)] = name
