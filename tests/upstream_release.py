"""A released PyTorch's macOS arm64 wheel as ground truth: the files mpsgen edits as that release
shipped them (native_functions.yaml, common_mps.py, common_methods_invocations.py) and the Metal
kernels its `libtorch_cpu.dylib` compiled, read as (input, output) pairs per functor.

The wheel (about 127 MB for 2.14.0) is fetched at test time by `releases.fetch_wheel`, with pip (`PIP_CONFIG_FILE` pointed at the null
device, so a machine's pip constraints cannot hide a release) into the tests' wheel cache
(`$MPSGEN_WHEEL_CACHE`, else ~/.cache/mpsgen-wheel) under `macos-arm64/`; what the tests read is
extracted once next to it (`release-<version>/`). `release_files` raises `Unavailable` saying why
when the wheel cannot be had; the caller skips (a failure under CI=true).
"""

from __future__ import annotations

import re
import subprocess
import zipfile
from dataclasses import dataclass
from pathlib import Path

from releases import DENSE, dense_pairs, dense_structs, fetch_wheel, wheel_cache
from support import download_lock

DYLIB = "torch/lib/libtorch_cpu.dylib"
# wheel member -> file name in the extracted release directory
MEMBERS = {
    "torchgen/packaged/ATen/native/native_functions.yaml": "native_functions.yaml",
    "torch/testing/_internal/common_mps.py": "common_mps.py",
    "torch/testing/_internal/common_methods_invocations.py": "common_methods_invocations.py",
}
KERNEL_NAMES = "kernel_names.txt"

_STRING = re.compile(rb"(?<=\x00)[A-Za-z0-9_]+(?=\x00)")
# host functions of MPS kernels behind a stub (`mps_asinh_kernel`: upstream's MPSGraph kernel for asinh)
_HOST_KERNEL = re.compile(r"mps_[a-z0-9_]+_kernel")


class Unavailable(Exception):
    """The release's wheel cannot be had here (the message says why)."""


def mac_wheel(version: str) -> Path:
    """The release's macOS arm64 wheel (`releases.fetch_wheel`, the one fetcher the tests share)."""
    try:
        return fetch_wheel(version)
    except (OSError, RuntimeError, subprocess.SubprocessError) as exc:
        raise Unavailable(f"macOS arm64 torch {version} wheel: {exc}") from exc


def kernel_names(dylib: bytes) -> list[str]:
    """The `_dense_` Metal kernel host names and the `mps_<op>_kernel` host function names in a
    dylib's bytes (NUL-terminated strings), sorted."""
    found = {m.group(0).decode() for m in _STRING.finditer(dylib)}
    return sorted(name for name in found if DENSE.fullmatch(name) or _HOST_KERNEL.fullmatch(name))


def release_files(version: str) -> Path:
    """The release's files (MEMBERS) and its kernel names (`kernel_names` (KERNEL_NAMES, one a line),
    extracted from its macOS wheel once into the cache."""
    cache = wheel_cache()
    out = cache / f"release-{version}"
    if all((out / name).is_file() for name in [*MEMBERS.values(), KERNEL_NAMES]):
        return out
    wheel = mac_wheel(version)
    with download_lock(cache):  # parallel workers: one extracts, the others then find it complete
        if all((out / name).is_file() for name in [*MEMBERS.values(), KERNEL_NAMES]):
            return out
        try:
            with zipfile.ZipFile(wheel) as archive:
                out.mkdir(parents=True, exist_ok=True)
                for member, name in MEMBERS.items():
                    (out / name).write_bytes(archive.read(member))
                names = kernel_names(archive.read(DYLIB))
        except (OSError, zipfile.BadZipFile, KeyError) as exc:
            raise Unavailable(f"{wheel}: {exc}") from exc
        if not names:
            raise Unavailable(f"no Metal kernel names found in {wheel}:{DYLIB}")
        (out / KERNEL_NAMES).write_text("\n".join(names) + "\n", encoding="utf-8")  # last: marks it complete
    return out


@dataclass(frozen=True)
class Compiled:
    """functor -> the (input, output) Metal types of its `_dense_` kernels, and its params struct."""

    pairs: dict[str, frozenset[tuple[str, str]]]
    params: dict[str, str]


def compiled_pairs(names: list[str]) -> Compiled:
    pairs = dense_pairs(names)
    # a params kernel's struct (one per functor in the releases compared)
    params = {functor: min(structs) for functor, structs in dense_structs(names).items()}
    return Compiled({k: frozenset(v) for k, v in pairs.items()}, params)
