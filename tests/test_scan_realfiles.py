"""`mpsgen scan` on the PyTorch 2.13.0 wheel's yaml, headers and test lists (the `.mm`/`.metal` part from
the fixtures), with totals checked against counts computed here by other means: PyYAML's
parse of native_functions.yaml, Python's `ast` on common_mps.py, and a line count of graph sites."""

from __future__ import annotations

import ast
import re
import shutil
from collections import Counter
from pathlib import Path

import pytest
from support import FIXTURE_CHECKOUT

from mpsgen.read.checkout import COMMON_MPS, KERNELS_DIR, NATIVE_FUNCTIONS, OPERATIONS_DIR, Checkout
from mpsgen.commands.scan import read_xfail_keys, scan_checkout
from mpsgen.read.testlists import find_xfail_dicts

LEGACY = ("mpsgraph", "mps-other", "mps-unknown")


@pytest.fixture(scope="module")
def real_checkout(real_torch_files_older, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("scan-real") / "pytorch"
    shutil.copytree(real_torch_files_older, root)
    for rel in (OPERATIONS_DIR, KERNELS_DIR):
        (root / rel).mkdir(parents=True, exist_ok=True)
        for path in (FIXTURE_CHECKOUT / rel).iterdir():
            shutil.copy(path, root / rel / path.name)
    return root


@pytest.fixture(scope="module")
def report(real_checkout):
    return scan_checkout(Checkout(real_checkout))


@pytest.fixture(scope="module")
def records(report):
    return {r.op: r for r in report.ops}


def _base(func: str) -> str:
    name = func.split("(", 1)[0].split(".", 1)[0]
    return name[:-1] if name.endswith("_") and not name.endswith("__") else name


@pytest.fixture(scope="module")
def yaml_data(real_checkout) -> list:
    """PyYAML's parse of the whole native_functions.yaml: another library than the ruamel.yaml mpsgen
    validates entries with, and with libyaml's C parser ~0.3 s where ruamel.yaml takes ~5 s."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load((real_checkout / NATIVE_FUNCTIONS).read_text(encoding="utf-8"), Loader=loader)


def _independent_backings(data: list) -> dict[str, str]:
    """op -> legacy | native | none | composite, from ruamel.yaml's parse of the whole file."""
    by_name = {entry["func"].split("(", 1)[0]: entry for entry in data}

    def backing(entry, depth=0) -> str:
        dispatch = {tuple(k.strip() for k in str(key).split(",")): v for key, v in (entry.get("dispatch") or {}).items()}
        mps = [keys for keys in dispatch if "MPS" in keys]
        if mps:
            return "legacy" if any("CPU" not in keys and "CUDA" not in keys for keys in mps) else "native"
        if entry.get("structured_delegate"):
            target = by_name.get(entry["structured_delegate"])
            return backing(target, depth + 1) if target and depth < 5 else "none"
        if any(key.startswith("Composite") for keys in dispatch for key in keys):
            return "composite"
        return "none" if dispatch else "composite"

    order = ("legacy", "native", "none", "composite")
    ops: dict[str, str] = {}
    for entry in data:
        op = _base(entry["func"])
        b = backing(entry)
        ops[op] = b if op not in ops else min(ops[op], b, key=order.index)
    return ops


def test_every_op_and_its_backing_agree_with_a_yaml_parse(yaml_data, records, report):
    expected = _independent_backings(yaml_data)
    assert set(records) == set(expected)
    assert len(report.ops) > 1300
    got = {op: ("legacy" if r.backing in LEGACY else r.backing) for op, r in records.items()}
    assert got == expected
    totals = report.by_backing()
    counted = Counter(expected.values())
    assert totals["native"] == counted["native"]
    assert totals["composite"] == counted["composite"]
    assert totals["none"] == counted["none"]
    assert sum(totals[b] for b in LEGACY) == counted["legacy"]


def test_stub_locations_point_at_their_declarations(real_checkout, records):
    with_stub = [r for r in records.values() if r.stub]
    assert len(with_stub) > 150
    for r in with_stub:
        lines = (real_checkout / r.stub_location.path).read_text(encoding="utf-8").splitlines()
        declaration = " ".join(lines[r.stub_location.line - 1 : r.stub_location.line + 12])
        assert declaration.lstrip().startswith("DECLARE_DISPATCH("), (r.op, r.stub_location)
        assert re.match(rf"[^;]*,\s*{r.stub}\s*\)", declaration), (r.op, r.stub_location)


@pytest.mark.parametrize(
    "op, signature",
    [
        ("sigmoid_backward", "void(*)(TensorIteratorBase&)"),
        ("logit_backward", "void(*)(TensorIteratorBase&, const Scalar&)"),
        ("mish", "void(*)(TensorIteratorBase&)"),
        ("softplus", "void(*)(TensorIteratorBase&, const Scalar&, const Scalar&)"),
        ("special_laguerre_polynomial_l", "void(*)(TensorIteratorBase&)"),
    ],
)
def test_known_stub_signatures(records, op, signature):
    assert records[op].stub_signature == signature


def test_new_op_ops_have_no_mps_kernel(records):
    for op in ("heaviside", "special_ndtri", "special_log_ndtr", "special_airy_ai", "special_laguerre_polynomial_l"):
        assert records[op].backing == "none", op
        assert records[op].candidate is None


def test_structured_legacy_ops_are_candidates(records):
    for op in ("sgn", "acosh", "asinh", "atanh", "frac", "mish", "sign", "sigmoid_backward", "tanh_backward"):
        assert records[op].candidate is not None, op
        assert records[op].candidate.tier == "ready", (op, records[op].candidate)
    for op in ("softplus", "softplus_backward", "threshold", "hardtanh_backward", "nan_to_num"):
        assert records[op].candidate.tier == "ready", (op, records[op].candidate)
        assert records[op].candidate.reason.startswith("params stub ("), records[op].candidate
    # a ternary params op: the launcher (and, where c10/metal lacks them, the ternary alpha kernels) is added
    assert records["addr"].candidate.tier == "expr"
    assert records["addr"].candidate.reason.endswith("migrate adds the library's exec_ternary_kernel_with_params")
    assert records["index_copy"].candidate.tier == "port"
    assert "int64_t" in records["index_copy"].candidate.reason


def test_candidates_with_a_shared_line_agree_with_a_yaml_parse(yaml_data, report):
    data = yaml_data
    shared, legacy, per_device = set(), set(), set()
    for entry in data:
        by_kernel: dict[str, set] = {}  # one function may serve CPU and CUDA on several lines
        for key, kernel in (entry.get("dispatch") or {}).items():
            keys = {k.strip() for k in str(key).split(",")}
            if keys != {"MPS"}:
                by_kernel.setdefault(str(kernel), set()).update(keys)
            if keys == {"MPS"}:
                legacy.add(_base(entry["func"]))
        if any({"CPU", "CUDA"} <= keys for keys in by_kernel.values()):
            shared.add(_base(entry["func"]))
        dispatch = {str(key).strip(): str(kernel) for key, kernel in (entry.get("dispatch") or {}).items()}
        if "MPS" in dispatch and "CPU" in dispatch and "CUDA" in dispatch and dispatch["CPU"] != dispatch["CUDA"]:
            per_device.add(_base(entry["func"]))  # gelu: CPU/CUDA/MPS functions of their own (migrate reads it)
    candidates = report.candidates()
    assert {r.op for r in candidates} == legacy
    # every reason an MPS kernel has no shared line (codegen, composite, one device, MPS-only) ends "line to join"
    no_shared = ("line to join", "kernels are per-device functions")
    plain = {r.op for r in candidates if not any(w in r.candidate.reason for w in no_shared)}
    # every op with a shared line is judged on it; the others judged beyond the shape are per-device ones
    # whose stub was found (gelu): the refusal, if any, is about their functions, not their dispatch
    assert legacy & shared <= plain and plain - shared <= per_device


def _ast_xfail_entries(text: str) -> list[str]:
    """Keys of every dict literal assigned to a name whose values are all None or lists/tuples of
    torch.<dtype>, found with Python's own parser."""

    def dtype_value(node) -> bool:
        if isinstance(node, ast.Constant) and node.value is None:
            return True
        return isinstance(node, (ast.List, ast.Tuple)) and all(
            isinstance(el, ast.Attribute) and isinstance(el.value, ast.Name) and el.value.id == "torch" for el in node.elts
        )

    keys = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign):
            target, value = node.target, node.value
        else:
            continue
        if not isinstance(target, ast.Name) or not isinstance(value, ast.Dict) or not value.keys:
            continue
        if all(isinstance(k, ast.Constant) and isinstance(k.value, str) for k in value.keys) and all(map(dtype_value, value.values)):
            keys.extend(k.value for k in value.keys)
    return keys


def test_xfail_counts_agree_with_pythons_parser(real_checkout, records):
    text = (real_checkout / COMMON_MPS).read_text(encoding="utf-8")
    keys = Counter(_ast_xfail_entries(text))
    assert sum(keys.values()) == len(read_xfail_keys(text, COMMON_MPS)) > 150
    checked = 0
    for key, count in keys.items():
        op = key.replace(".", "_")
        if key.startswith("nn.functional."):
            op = key[len("nn.functional."):]
        if op in records:
            assert key in records[op].xfail_keys, (op, key)
            checked += 1
    assert checked > 50
    assert sum(r.xfail_entries for r in records.values()) >= sum(
        c for k, c in keys.items() if k.replace(".", "_") in records or k.removeprefix("nn.functional.") in records)


def test_fast_xfail_reader_matches_libcst_reader_on_real_common_mps(real_checkout):
    text = (real_checkout / COMMON_MPS).read_text(encoding="utf-8")
    reference = [(d.name, d.function, e.key, e.dtypes, e.location) for d in find_xfail_dicts(text, COMMON_MPS) for e in d.entries]
    fast = [(x.dict_name, x.function, x.key, x.dtypes, x.location) for x in read_xfail_keys(text, COMMON_MPS)]
    assert fast == reference


def test_graph_sites_per_file_agree_with_a_line_count(real_checkout, report):
    for total in report.files:
        lines = (real_checkout / total.path).read_text(encoding="utf-8").splitlines()
        count = sum(line.split("//", 1)[0].count("LookUpOrCreateCachedGraph") for line in lines)
        assert total.graph_sites == count, total.path
    assert report.graph_sites == sum(f.graph_sites for f in report.files) > 0


def test_reductions_with_an_elementwise_looking_stub_are_ports(records):
    # (the wheel's ReduceOps.h declares their stubs; the miniature's .metal files hold no reduction kernels)
    for op in ("argmax", "prod"):
        assert records[op].candidate.tier == "port", op
        assert records[op].candidate.reason == (
            f"{op} is a reduction ({op}_stub) and this checkout has no aten/src/ATen/native/mps/kernels/ReduceOps.metal, "
            "the reduction family's kernel file to register it in")
