"""The PyTorch releases the real-size tests run on, and their macOS arm64 wheels.

The newest release (2.15.0) is the ground truth the real-size checkout is built from; the older one
(2.13.0) is still served, and the tests of what differs by release (test-list vocabulary, compiled
kernel names, registration vocabulary, one end-to-end `migrate` and `new-op`) run on it too.

A macOS arm64 wheel holds every file mpsgen reads (yaml, headers, `c10/metal`, `mps/kernels/*.h`,
`common_mps.py`, the OpInfo files) and, in `torch/lib/libtorch_cpu.dylib`, the compiled Metal
kernels' host names. It is only read with `zipfile`: nothing is installed. It is fetched with pip at
test time into `$MPSGEN_WHEEL_CACHE/macos-arm64` (else `~/.cache/mpsgen-wheel/macos-arm64`); pip runs
with `PIP_CONFIG_FILE=os.devnull`, so that a machine's pip configuration (a constraint file capping
torch, an index of Linux builds) cannot stop the download of the exact release.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

NEWEST = "2.15.0"
OLDER = "2.13.0"
RELEASES = (NEWEST, OLDER)
PLATFORM = "macosx_14_0_arm64"
DYLIB = "torch/lib/libtorch_cpu.dylib"

# The Metal types a compiled kernel's host name spells (2.15 adds the unsigned ones).
METAL_TYPES = ("float", "half", "bfloat", "long", "int", "short", "uchar", "char", "bool", "float2", "half2",
               "ulong", "uint", "ushort")
METAL_TYPE = "|".join(METAL_TYPES)
# `<functor>_dense_<out>_<in>`; a params kernel has its struct's name after it (capitals, which no
# other part of a host name has), maybe with `_<type>` of the struct's template argument
DENSE = re.compile(rf"(?P<functor>[a-z0-9_]+?)_dense_(?P<out>{METAL_TYPE})_(?P<inp>{METAL_TYPE})"
                   rf"(?:_(?P<struct>[A-Z][A-Za-z0-9]*)(?:_(?:{METAL_TYPE}))?)?")


def dense_pairs(names) -> dict[str, set[tuple[str, str]]]:
    """functor -> {(input type, output type)} of its `_dense_` kernels."""
    pairs: dict[str, set[tuple[str, str]]] = {}
    for name in names:
        if match := DENSE.fullmatch(name):
            pairs.setdefault(match["functor"], set()).add((match["inp"], match["out"]))
    return pairs


def dense_structs(names) -> dict[str, set[str]]:
    """functor -> the params structs its `_dense_` kernels carry (params kernels only)."""
    structs: dict[str, set[str]] = {}
    for name in names:
        if (match := DENSE.fullmatch(name)) and match["struct"]:
            structs.setdefault(match["functor"], set()).add(match["struct"])
    return structs


def wheel_cache() -> Path:
    from support import wheel_cache as tests_cache

    return tests_cache() / "macos-arm64"


def _find(cache: Path, version: str) -> Path | None:
    found = sorted(cache.glob(f"torch-{version}-*-{PLATFORM}.whl"))
    return found[0] if found else None


def fetch_wheel(version: str) -> Path:
    """The macOS arm64 wheel of `version`, downloaded into the cache on first use. Raises
    RuntimeError (pip's last line) when it cannot be had."""
    from support import download_lock

    cache = wheel_cache()
    wheel = _find(cache, version)
    if wheel is not None:
        return wheel
    with download_lock(cache):  # parallel workers: one downloads, the others then find it
        return _find(cache, version) or _download(cache, version)


def _download(cache: Path, version: str) -> Path:
    env = dict(os.environ, PIP_CONFIG_FILE=os.devnull)
    result = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", f"torch=={version}", "--platform", PLATFORM,
         "--python-version", "3.11", "--only-binary=:all:", "-d", str(cache)],
        capture_output=True, text=True, timeout=900, env=env,
    )
    wheel = _find(cache, version)
    if result.returncode != 0 or wheel is None:
        tail = (result.stderr or result.stdout).strip().splitlines()[-1:] or ["no wheel downloaded"]
        raise RuntimeError(tail[0])
    return wheel
