"""Replaying upstream: the eight ops PyTorch moved to the shared stub between 2.13.0 and 2.14.0,
migrated by mpsgen on the 2.13.0 real-size checkout with default flags, against what 2.14.0 shipped.

For each op, starting from the 2.13.0 checkout (`real_checkout`: the wheel's files and the
miniature's .metal/.mm, which carry the legacy MPSGraph implementations; logical_not's is added from
`tests/data/replay214/`, written in the real files' shape), `mpsgen migrate OP` and compare with the
2.14.0 macOS wheel (`upstream_release`):
- yaml: each of the op's entries' dispatch lines as (key set, kernel), keys its 2.13 entries do not
  use (XPU, added later) left out: equal;
- kernels: the (input, output) pairs the op's functor registers, read through the compiler's
  expansion (`metalread`), against 2.14.0's compiled `_dense_` names: equal, or a named expectation;
- tests: the op's MPS test entries (common_mps.py entries under its keys, the `device_type='mps'`
  decorators and `dtypesIfMPS` of its OpInfos): removed upstream <=> removed by mpsgen, and what
  mpsgen adds beyond upstream named (`ADDED_TEST_ENTRIES`);
- `mpsgen verify OP --static-only` passes on the result.
"""

from __future__ import annotations

import ast
import collections
import functools
import re
from pathlib import Path

import pytest

from mpsgen.dtypes import METAL_INPUT_TYPES
from mpsgen.read.metalread import read_kernel
from mpsgen.read.nfyaml import NativeFunctions

from support import missing, run_cli, sampled
from upstream_release import MEMBERS, KERNEL_NAMES, Unavailable, compiled_pairs, release_files

RELEASE = "2.14.0"
DATA = Path(__file__).resolve().parent / "data" / "replay214"
YAML = "aten/src/ATen/native/native_functions.yaml"
COMMON_MPS = "torch/testing/_internal/common_mps.py"
OPINFOS = "torch/testing/_internal/common_methods_invocations.py"
KERNELS = "aten/src/ATen/native/mps/kernels"
UNARY_OPS = "aten/src/ATen/native/mps/operations/UnaryOps.mm"

# op -> the OpInfo names (test_mps keys) whose MPS entries the op's change may touch
TEST_KEYS = {
    "acosh": ("acosh",),
    "asinh": ("asinh",),
    "atanh": ("atanh",),
    "logical_not": ("logical_not",),
    "nan_to_num": ("nan_to_num",),
    "mish": ("nn.functional.mish",),
    "mish_backward": ("nn.functional.mish",),
    "sigmoid_backward": ("sigmoid",),
}
OPS = tuple(TEST_KEYS)


def _pairs(groups: tuple[str, ...]) -> frozenset[tuple[str, str]]:
    return frozenset((t, "float" if g == "int2float" else t) for g in groups for t in METAL_INPUT_TYPES[g])


# Where mpsgen's kernels differ from 2.14.0's for a reason a reviewer accepts: op -> (the pairs
# 2.14.0 compiled, the pairs mpsgen registers, the host function 2.14.0 has instead, why).
METAL_WHERE_UPSTREAM_KEPT_MPSGRAPH = (
    "2.14.0 moved it to the shared stub with an MPSGraph kernel behind it ({host} in the dylib, no Metal "
    "kernel); mpsgen writes the catalog's Metal functor (precise float, integers to float, complex by "
    "Kahan's forms), the better change"
)
NAMED_EXPECTATIONS = {
    op: (frozenset(), _pairs(("float", "int2float", "complex")), f"mps_{op}_kernel", METAL_WHERE_UPSTREAM_KEPT_MPSGRAPH)
    for op in ("acosh", "asinh", "atanh")
}


# Test entries mpsgen adds that 2.14.0 does not have, and why: op -> (entries, reason). None: mpsgen
# agrees with 2.14.0 on every test-list entry of the eight ops. nan_to_num's kernel registers
# float2/half2 (as 2.14.0 compiles them) and, as 2.14.0, nan_to_num stays out of SUPPORTED_COMPLEX_OPS:
# its OpInfo tests no complex dtype, so the list would change none of its tests (`rules.complex_untested`).
ADDED_TEST_ENTRIES: dict[str, tuple[frozenset, str]] = {}


@pytest.fixture(scope="module")
def release() -> Path:
    try:
        return release_files(RELEASE)
    except Unavailable as exc:
        missing(str(exc))


@pytest.fixture(scope="module")
def compiled(release):
    return compiled_pairs((release / KERNEL_NAMES).read_text(encoding="utf-8").split())


def add_legacy_logical_not(root: Path) -> None:
    """The 2.13 MPSGraph logical_not_out_mps (ours, in the real file's shape) in UnaryOps.mm, which
    the miniature leaves out: the yaml's `MPS: logical_not_out_mps` line names it."""
    path = root / UNARY_OPS
    text = path.read_text(encoding="utf-8")
    text = text.replace("#include <ATen/ops/frac_native.h>\n",
                        "#include <ATen/ops/frac_native.h>\n#include <ATen/ops/logical_not_native.h>\n", 1)
    tail = "\n} // namespace at::native\n"
    assert text.endswith(tail)
    function = (DATA / "logical_not_out_mps.mm").read_text(encoding="utf-8")
    path.write_text(text[: -len(tail)] + function + tail, encoding="utf-8")


# ----------------------------------------------------------------------------- what is compared


def dispatch_lines(yaml_text: str, op: str, keys: frozenset[str] | None = None) -> dict[str, frozenset]:
    """entry name -> {(dispatch keys, kernel)} of the op's entries; `keys`: only these keys count."""
    out = {}
    for entry in NativeFunctions(yaml_text, YAML).op_entries(op):
        lines = set()
        for line in entry.dispatch:
            kept = frozenset(k for k in line.keys if keys is None or k in keys)
            if kept:
                lines.add((kept, line.kernel))
        out[entry.name] = frozenset(lines)
    return out


def _is_mps(call: ast.Call) -> bool:
    return any(kw.arg == "device_type" and isinstance(kw.value, ast.Constant) and kw.value.value == "mps"
               for kw in call.keywords)


def mps_test_entries(common_mps: str, opinfos: str, keys: tuple[str, ...]) -> frozenset[tuple[str, ...]]:
    """The MPS test entries of OpInfos named `keys` (and their `_refs.` python refs): common_mps.py
    set members and dict items under the key (with the value), the OpInfos' `device_type='mps'`
    DecorateInfos and `dtypesIfMPS`, each as one normalised tuple."""
    names = set(keys) | {f"_refs.{k}" for k in keys}
    by_name = _entries_by_name(common_mps, opinfos)
    return frozenset().union(*(by_name.get(name, frozenset()) for name in names))


@functools.lru_cache(maxsize=8)
def _entries_by_name(common_mps: str, opinfos: str) -> dict[str, frozenset[tuple[str, ...]]]:
    """`mps_test_entries` of every name at once, read once per pair of files: the 2.13 and 2.14 test
    files (over 1 MB each) are the same for every op."""
    found: dict[str, set[tuple[str, ...]]] = collections.defaultdict(set)
    for node in ast.walk(ast.parse(common_mps)):
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            continue
        table = node.targets[0].id
        if isinstance(node.value, ast.Set):
            for e in node.value.elts:
                if isinstance(e, ast.Constant) and isinstance(e.value, str):
                    found[e.value].add((table, e.value))
        elif isinstance(node.value, ast.Dict):
            for k, v in zip(node.value.keys, node.value.values):
                if isinstance(k, ast.Constant) and isinstance(k.value, str):
                    found[k.value].add((table, k.value, ast.unparse(v)))
    # One walk of the OpInfo file: a call whose first argument is a string names what it holds, and
    # each MPS DecorateInfo counts for every such call it lies in (itself included).
    named: list[str] = []

    def visit(node: ast.AST) -> None:
        pushed = isinstance(node, ast.Call) and bool(node.args) and isinstance(node.args[0], ast.Constant) \
            and isinstance(node.args[0].value, str)
        if pushed:
            name = node.args[0].value
            named.append(name)
            for kw in node.keywords:
                if kw.arg == "dtypesIfMPS":
                    found[name].add(("OpInfo", name, "dtypesIfMPS", ast.unparse(kw.value)))
        if named and isinstance(node, ast.Call) and getattr(node.func, "id", "") == "DecorateInfo" and _is_mps(node):
            text = ast.unparse(node)
            for name in named:
                found[name].add(("OpInfo", name, text))
        for child in ast.iter_child_nodes(node):
            visit(child)
        if pushed:
            named.pop()

    visit(ast.parse(opinfos))
    return {name: frozenset(entries) for name, entries in found.items()}


def registered_pairs(root: Path, functor: str) -> frozenset[tuple[str, str]]:
    """The (input, output) pairs `functor` is registered for in the checkout's kernel files, as the
    compiler expands them."""

    def read(rel: str) -> str | None:
        path = root / rel
        return path.read_text(encoding="utf-8") if path.is_file() else None

    pairs = set()
    for path in sorted((root / KERNELS).glob("*.metal")):
        text = path.read_text(encoding="utf-8")
        if re.search(rf"\b{functor}\b", text):
            pairs |= read_kernel(text, str(path.relative_to(root)), read).pairs(functor)
    return frozenset(pairs)


# ----------------------------------------------------------------------------------- the replay


# Run in every run (each migrates a real-size checkout: heavy, CI runs all eight): a named kernel
# expectation (acosh), a complex kernel whose complex list stays as 2.14.0 left it (nan_to_num), a
# legacy kernel from tests/data (logical_not).
LOCAL_OPS = ("acosh", "logical_not", "nan_to_num")


@pytest.mark.realfiles
@pytest.mark.parametrize("op", sampled(OPS, LOCAL_OPS))
def test_migrate_replays_2_14(op, real_checkout_older, release, compiled):
    root = real_checkout_older
    add_legacy_logical_not(root)
    before = {rel: (root / rel).read_text(encoding="utf-8") for rel in (YAML, COMMON_MPS, OPINFOS)}
    upstream = {name: (release / name).read_text(encoding="utf-8") for name in MEMBERS.values()}

    result = run_cli(["migrate", op], cwd=root)
    assert result.exit_code == 0, result.output

    after = {rel: (root / rel).read_text(encoding="utf-8") for rel in (YAML, COMMON_MPS, OPINFOS)}
    # yaml: the op's entries' dispatch lines, with the keys its 2.13 entries use (XPU joined later)
    known = frozenset(k for lines in dispatch_lines(before[YAML], op).values() for keys, _ in lines for k in keys)
    assert dispatch_lines(after[YAML], op) == dispatch_lines(upstream["native_functions.yaml"], op, known)

    # kernels
    ours = registered_pairs(root, op)
    theirs = compiled.pairs.get(op, frozenset())
    if op in NAMED_EXPECTATIONS:
        upstream_pairs, our_pairs, host, why = NAMED_EXPECTATIONS[op]
        assert (theirs, ours) == (upstream_pairs, our_pairs), why.format(host=host)
        assert host in compiled_names(release), why.format(host=host)
    else:
        assert ours == theirs

    # test entries: removed upstream <=> removed by mpsgen
    keys = TEST_KEYS[op]
    old = mps_test_entries(before[COMMON_MPS], before[OPINFOS], keys)
    new_upstream = mps_test_entries(upstream["common_mps.py"], upstream["common_methods_invocations.py"], keys)
    new_ours = mps_test_entries(after[COMMON_MPS], after[OPINFOS], keys)
    assert old - new_ours == old - new_upstream
    added = new_ours - old - (new_upstream - old)
    assert added == ADDED_TEST_ENTRIES.get(op, (frozenset(), ""))[0], ADDED_TEST_ENTRIES.get(op, ("", ""))[1]

    check = run_cli(["verify", op, "--static-only"], cwd=root)
    assert check.exit_code == 0, check.output


def compiled_names(release: Path) -> frozenset[str]:
    return frozenset((release / KERNEL_NAMES).read_text(encoding="utf-8").split())
