"""Upstream's own dtypes as ground truth: the catalog's default groups against what the macOS arm64
torch 2.13.0 wheel registers.

That wheel embeds its compiled Metal libraries in `torch/lib/libtorch_cpu.dylib`; every kernel's host
name is a printable string there, `<functor>_<dense|dense_broadcast|strided|...>_<out>_<in>`. The
`_dense_<out>_<in>` names are one per registered (input, output) pair. For every catalog op whose
functor 2.13 has, the pairs the catalog's default `dtypes` register must be exactly those.

The wheel (about 111 MB) is fetched at test time with pip into the tests' wheel cache
(`$MPSGEN_WHEEL_CACHE`, else ~/.cache/mpsgen-wheel), under `macos-arm64/` so that the Linux wheel's
lookup in conftest.py never sees it; the extracted name list is cached next to it. The test skips
(failing under CI=true), saying why, when the wheel cannot be had.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from mpsgen.facts.catalog import SPECIAL_PREFIX, load_catalog
from mpsgen.dtypes import METAL_INPUT_TYPES

from support import download_lock, missing

TORCH_VERSION = "2.13.0"
PLATFORM = "macosx_14_0_arm64"
DYLIB = "torch/lib/libtorch_cpu.dylib"

METAL_TYPES = ("float", "half", "bfloat", "long", "int", "short", "uchar", "char", "bool", "float2", "half2")
_TYPE = "|".join(METAL_TYPES)
# A host name stands between NULs in the dylib, lower-case identifier text ending in two Metal types.
_HOST_NAME = re.compile(rb"(?<=\x00)([a-z0-9_]+_(?:" + _TYPE.encode() + rb")_(?:" + _TYPE.encode() + rb"))(?=\x00)")
_DENSE = re.compile(rf"^(?P<functor>[a-z0-9_]+?)_dense_(?P<out>{_TYPE})_(?P<inp>{_TYPE})$")


def _cache() -> Path:
    base = Path(os.environ.get("MPSGEN_WHEEL_CACHE") or Path.home() / ".cache" / "mpsgen-wheel")
    return base / "macos-arm64"


def _wheel(cache: Path) -> Path:
    pattern = f"torch-{TORCH_VERSION}-*-{PLATFORM}.whl"
    found = sorted(cache.glob(pattern))
    if found:
        return found[0]
    with download_lock(cache):
        return next(iter(sorted(cache.glob(pattern))), None) or _pip_download(cache, pattern)


def _pip_download(cache: Path, pattern: str) -> Path:
    result = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", f"torch=={TORCH_VERSION}", "--platform", PLATFORM,
         "--only-binary=:all:", "-d", str(cache)],
        capture_output=True, text=True, timeout=900,
    )
    found = sorted(cache.glob(pattern))
    if result.returncode != 0 or not found:
        tail = (result.stderr or result.stdout).strip().splitlines()[-1:] or ["no wheel downloaded"]
        raise RuntimeError(tail[0])
    return found[0]


def extract_kernel_names(wheel: Path) -> list[str]:
    """Every Metal kernel host name in the wheel's libtorch_cpu.dylib, sorted and unique."""
    with zipfile.ZipFile(wheel) as archive:
        data = archive.read(DYLIB)
    return sorted({match.group(1).decode() for match in _HOST_NAME.finditer(data)})


@pytest.fixture(scope="module")
def kernel_names() -> list[str]:
    cache = _cache()
    listing = cache / f"kernel_names-{TORCH_VERSION}-{PLATFORM}.txt"
    if listing.is_file():
        return listing.read_text(encoding="utf-8").split()
    try:
        names = extract_kernel_names(_wheel(cache))
    except (OSError, RuntimeError, subprocess.SubprocessError, zipfile.BadZipFile, KeyError) as exc:
        missing(f"macOS arm64 torch {TORCH_VERSION} wheel unavailable: {exc}")
    if not names:
        pytest.fail(f"no Metal kernel host names found in {DYLIB}")
    listing.write_text("\n".join(names) + "\n", encoding="utf-8")
    return names


def registered_pairs(names: list[str]) -> dict[str, set[tuple[str, str]]]:
    """functor -> {(input type, output type)} of its `_dense_` kernels."""
    pairs: dict[str, set[tuple[str, str]]] = {}
    for name in names:
        match = _DENSE.match(name)
        if match:
            pairs.setdefault(match["functor"], set()).add((match["inp"], match["out"]))
    return pairs


def catalog_pairs(groups: tuple[str, ...]) -> set[tuple[str, str]]:
    """The (input type, output type) pairs the groups register."""
    return {(t, "float" if group == "int2float" else t) for group in groups for t in METAL_INPUT_TYPES[group]}


def _functor(op: str, registered: dict) -> str | None:
    for name in (op, op.removeprefix(SPECIAL_PREFIX)):
        if name in registered:
            return name
    return None


def test_dense_names_parse_into_pairs():
    names = ["hypot_dense_float_float", "hypot_dense_broadcast_half_half", "atan2_dense_float_int",
             "hardswish_backward_dense_half_half", "abs_dense_castout_float"]
    assert registered_pairs(names) == {
        "hypot": {("float", "float")},
        "atan2": {("int", "float")},
        "hardswish_backward": {("half", "half")},
    }


def test_extraction_reads_nul_terminated_names(tmp_path):
    wheel = tmp_path / "w.whl"
    blob = b"\x01junk\x00hypot_dense_float_float\x00atan2_strided_float_int\x00not_a_kernel\x00"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr(DYLIB, blob)
    assert extract_kernel_names(wheel) == ["atan2_strided_float_int", "hypot_dense_float_float"]


@pytest.mark.realfiles
def test_catalog_default_dtypes_are_what_2_13_registers(kernel_names):
    registered = registered_pairs(kernel_names)
    catalog = load_catalog()
    native = {op: _functor(op, registered) for op in catalog}
    native = {op: functor for op, functor in native.items() if functor}
    # the comparison is not vacuous: these are native in 2.13
    assert {"atan2", "hypot", "fmod", "hardswish"} <= set(native)
    wrong = {}
    for op, functor in sorted(native.items()):
        ours = catalog_pairs(catalog[op].dtypes)
        theirs = registered[functor]
        if ours != theirs:
            wrong[op] = (sorted(ours - theirs), sorted(theirs - ours))
    assert wrong == {}, "catalog default dtypes differ from 2.13 (extra in catalog, missing from catalog): " + repr(wrong)
