"""Upstream's own dtypes as ground truth: the catalog's default groups against what each release's
macOS arm64 wheel registers (the newest, 2.15.0, and the older still served, 2.13.0; tests/releases.py).

A wheel embeds its compiled Metal libraries in `torch/lib/libtorch_cpu.dylib`; every kernel's host
name is a printable string there, `<functor>_<dense|dense_ilp|strided|castout|scalar|...>_<out>_<in>`,
followed by the alpha type of an alpha kernel or by the params struct of a params kernel
(`softplus_dense_float_float_SoftplusParams`, `nan_to_num_dense_float_float_NanToNumParams_float` for
a struct template instantiated on float). The `_dense_<out>_<in>` names are one per registered
(input, output) pair. For every catalog op whose functor the release has, the pairs the catalog's
default `dtypes` register must be exactly those, and a params op's kernels carry the struct mpsgen
names (`facts.params`: `<Functor>Params`) unless the difference is listed below with its reason.

The wheels are fetched at test time (`releases.fetch_wheel`); the extracted name list is cached next
to them. The test skips (failing under CI=true), saying why, when a wheel cannot be had.
"""

from __future__ import annotations

import os
import re
import subprocess
import zipfile
from pathlib import Path

import pytest

from mpsgen.dtypes import METAL_INPUT_TYPES
from mpsgen.facts.catalog import SPECIAL_PREFIX, load_catalog
from mpsgen.facts.choice import registrations_for
from mpsgen.facts.params import camel_case

from releases import (DYLIB, METAL_TYPE, NEWEST, OLDER, PLATFORM, RELEASES, dense_pairs, dense_structs, fetch_wheel,
                      wheel_cache)
from support import missing

_TYPE = METAL_TYPE
# A host name stands between NULs in the dylib: lower-case identifier text ending in two Metal types,
# then maybe an alpha type or a params struct (CamelCase, maybe `_<type>` of its template argument).
_SUFFIX = rf"(?:_(?:{_TYPE})|_[A-Z][A-Za-z0-9]*(?:_(?:{_TYPE}))?)?"
_HOST_NAME = re.compile(rb"(?<=\x00)([a-z0-9_]+_(?:" + _TYPE.encode() + rb")_(?:" + _TYPE.encode() + rb")"
                        + _SUFFIX.encode() + rb")(?=\x00)")

# Where a release compiles something other than the catalog's defaults, and why the catalog keeps
# its own: (release, op) -> (reason, pairs only the catalog registers, pairs only the release registers).
KNOWN_PAIR_DIFFERENCES: dict[tuple[str, str], tuple[str, tuple, tuple]] = {
    # none today: nan_to_num's complex pairs (float2, half2), 2.15's, are the catalog's too since its
    # complex body (issue 27)
}
# (release, op) -> the struct the release's kernels carry where mpsgen names its own.
KNOWN_STRUCT_DIFFERENCES = {
    # upstream's softplus_backward reads softplus's struct (the same beta and threshold); mpsgen
    # writes a struct per functor (SoftplusBackwardParams), with the same fields
    (NEWEST, "softplus_backward"): "SoftplusParams",
}


def extract_kernel_names(wheel: Path) -> list[str]:
    """Every Metal kernel host name in the wheel's libtorch_cpu.dylib, sorted and unique."""
    with zipfile.ZipFile(wheel) as archive:
        data = archive.read(DYLIB)
    return sorted({match.group(1).decode() for match in _HOST_NAME.finditer(data)})


def kernel_names(version: str) -> list[str]:
    """The release's Metal kernel host names (cached as a list next to its wheel)."""
    cache = wheel_cache()
    listing = cache / f"kernel_names-{version}-{PLATFORM}.txt"
    if listing.is_file():
        return listing.read_text(encoding="utf-8").split()
    try:
        names = extract_kernel_names(fetch_wheel(version))
    except (OSError, RuntimeError, subprocess.SubprocessError, zipfile.BadZipFile, KeyError) as exc:
        missing(f"macOS arm64 torch {version} wheel unavailable: {exc}")
    if not names:
        pytest.fail(f"no Metal kernel host names found in {DYLIB} of torch {version}")
    # written whole, then renamed: a parallel worker reads the old state or the complete list
    partial = listing.with_name(f"{listing.name}.{os.getpid()}")
    partial.write_text("\n".join(names) + "\n", encoding="utf-8")
    os.replace(partial, listing)
    return names


def catalog_pairs(groups: tuple[str, ...], output: str = "", without: tuple[str, ...] = ()) -> set[tuple[str, str]]:
    """The (input type, output type) pairs the groups register; `output = "bool"` (logical_not) gives
    every input type a bool output; `without`: the entry's `not_registered` types."""
    def out(group: str, t: str) -> str:
        return output or ("float" if group == "int2float" else t)

    return {(t, out(group, t)) for group in groups for t in METAL_INPUT_TYPES[group] if t not in without}


def _functor(op: str, registered: dict) -> str | None:
    for name in (op, op.removeprefix(SPECIAL_PREFIX)):
        if name in registered:
            return name
    return None


def test_dense_names_parse_into_pairs():
    names = ["hypot_dense_float_float", "hypot_dense_broadcast_half_half", "atan2_dense_float_int",
             "hardswish_backward_dense_half_half", "abs_dense_castout_float", "add_dense_float_float_float",
             "softplus_dense_half_half_SoftplusParams", "softplus_dense_ilp_half_half_SoftplusParams",
             "nan_to_num_dense_float2_float2_NanToNumParams_float"]
    assert dense_pairs(names) == {
        "hypot": {("float", "float")},
        "atan2": {("int", "float")},
        "hardswish_backward": {("half", "half")},
        "softplus": {("half", "half")},
        "nan_to_num": {("float2", "float2")},
    }
    assert dense_structs(names) == {"softplus": {"SoftplusParams"}, "nan_to_num": {"NanToNumParams"}}


def test_extraction_reads_nul_terminated_names(tmp_path):
    wheel = tmp_path / "w.whl"
    blob = (b"\x01junk\x00hypot_dense_float_float\x00atan2_strided_float_int\x00not_a_kernel\x00"
            b"softplus_dense_half_half_SoftplusParams\x00nan_to_num_dense_float_float_NanToNumParams_float\x00")
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr(DYLIB, blob)
    assert extract_kernel_names(wheel) == ["atan2_strided_float_int", "hypot_dense_float_float",
                                           "nan_to_num_dense_float_float_NanToNumParams_float",
                                           "softplus_dense_half_half_SoftplusParams"]


# ops the comparison must reach in each release (it is not vacuous)
NATIVE_IN = {
    OLDER: {"atan2", "hypot", "fmod", "hardswish"},
    NEWEST: {"atan2", "hypot", "fmod", "hardswish", "heaviside", "mish", "mish_backward", "sigmoid_backward",
             "tanh_backward", "softplus", "softplus_backward", "nan_to_num"},
}


@pytest.mark.realfiles
@pytest.mark.parametrize("version", RELEASES)
def test_catalog_default_dtypes_are_what_the_release_registers(version):
    names = kernel_names(version)
    registered = dense_pairs(names)
    structs = dense_structs(names)
    catalog = load_catalog()
    native = {op: _functor(op, registered) for op in catalog}
    native = {op: functor for op, functor in native.items() if functor}
    assert NATIVE_IN[version] <= set(native)
    wrong, struct_wrong = {}, {}
    for op, functor in sorted(native.items()):
        ours = catalog_pairs(catalog[op].dtypes, catalog[op].output, catalog[op].not_registered)
        theirs = registered[functor]
        difference = (tuple(sorted(ours - theirs)), tuple(sorted(theirs - ours)))
        if difference != KNOWN_PAIR_DIFFERENCES.get((version, op), ("", (), ()))[1:]:
            wrong[op] = difference
        if catalog[op].params:
            expected = {KNOWN_STRUCT_DIFFERENCES.get((version, op), f"{camel_case(op)}Params")}
            if structs.get(functor, set()) != expected:
                struct_wrong[op] = (sorted(expected), sorted(structs.get(functor, set())))
    assert wrong == {}, (f"catalog default dtypes differ from {version} (extra in catalog, missing from catalog), "
                         f"beyond the known differences: {wrong!r}")
    assert struct_wrong == {}, f"params structs differ from {version} (mpsgen's, the release's): {struct_wrong!r}"
    # a known difference names a catalog op the release has
    assert {op for v, op in (*KNOWN_PAIR_DIFFERENCES, *KNOWN_STRUCT_DIFFERENCES) if v == version} <= set(native)


# An alpha kernel's host name carries its alpha type after the pair (`addcmul_dense_half_half_float`:
# 2.15 passes the Scalar at opmath); `_dense_cast_` kernels (inputs of another dtype) are not pairs.
# Compared as (input, alpha, output) triples with the registrations mpsgen writes.
ALPHA_DENSE = re.compile(rf"(?P<functor>[a-z0-9_]+?)_dense_(?P<out>{_TYPE})_(?P<inp>{_TYPE})_(?P<alpha>{_TYPE})")
# (release, op) -> (reason, pairs only the catalog registers, pairs only the release registers)
KNOWN_ALPHA_DIFFERENCES = {
    # none today: addcmul's integer group registered bool too until its catalog entry said
    # `not_registered = ["bool"]` (2.15 compiles no bool kernel: CPU has none, its host refuses bool)
}


@pytest.mark.realfiles
def test_alpha_catalog_bodies_register_what_the_newest_release_compiles():
    registered: dict[str, set[tuple[str, str, str]]] = {}
    for name in kernel_names(NEWEST):
        if match := ALPHA_DENSE.fullmatch(name):
            registered.setdefault(match["functor"], set()).add((match["inp"], match["alpha"], match["out"]))
    alpha_ops = [op for op, entry in load_catalog().items() if entry.alpha]
    assert alpha_ops == ["addcmul", "addcdiv"]
    for op in alpha_ops:
        entry = load_catalog()[op]
        lines = registrations_for(op, 3, True, tuple(entry.dtypes), frozenset({"REGISTER_TERNARY_ALPHA_OP"}),
                                  "PointwiseOps.metal", without=entry.not_registered)
        assert {line.macro for line in lines} == {"REGISTER_TERNARY_ALPHA_OP"}
        ours = {line.args[1:] for line in lines}  # (name, input, alpha, output)
        theirs = registered[op]
        difference = (tuple(sorted(ours - theirs)), tuple(sorted(theirs - ours)))
        assert difference == KNOWN_ALPHA_DIFFERENCES.get((NEWEST, op), ("", (), ()))[1:], (op, difference)
