"""A reduction the catalog lacks, built from the user's flags (`--identity`, `--combine`,
`--finalize`, `--acc`): the overlay's made-up `fixture_max_reduce` (a stub of its own in
ReduceOps.h, a yaml entry without MPS). Goldens of the exact edits, verify passes, a second run
changes nothing, the struct compiles and reduces on the host with mpsgen's Metal prelude; bad flags
are one-line errors (exit 2, JSON under --json) with nothing written."""

from __future__ import annotations

import json

import pytest

from reduction_support import REDUCE_METAL, REDUCE_MM, YAML, assert_edit_goldens, reduction_checkout
from support import changed_files, run_cli, snapshot

FLAGS = ["--identity", "-INFINITY", "--combine", "::metal::max(a, b)", "--finalize", "v * 2"]


def test_new_op_from_flags(tmp_path):
    root = reduction_checkout(tmp_path)
    before = snapshot(root)
    refused = run_cli(["-C", str(root), "new-op", "fixture_max_reduce"])
    assert refused.exit_code == 2 and "give its op struct with --identity EXPR --combine EXPR" in refused.stderr
    result = run_cli(["-C", str(root), "new-op", "fixture_max_reduce", *FLAGS])
    assert result.exit_code == 0, result.output
    after = snapshot(root)
    assert changed_files(before, after) == {YAML, REDUCE_METAL, REDUCE_MM}
    assert_edit_goldens(before, after, (YAML, REDUCE_METAL, REDUCE_MM), "new_op_flags_")
    verify = run_cli(["-C", str(root), "verify", "fixture_max_reduce", "--static-only", "--json"])
    assert verify.exit_code == 0, verify.output
    checks = {c["check"]: c["status"] for c in json.loads(verify.stdout)["stages"][0]["checks"]}
    assert checks["reduce-variants"] == checks["kernel-name"] == "passed"
    again = run_cli(["-C", str(root), "new-op", "fixture_max_reduce", *FLAGS])
    assert again.exit_code == 0 and snapshot(root) == after


def test_the_flag_struct_reduces_on_the_host(tmp_path):
    """The generated struct, instantiated by every registration, compiled with the Metal prelude and
    run by try's serial driver: max over rows, then the finalize (v * 2)."""
    from mpsgen.commands.tryop.reduction import LANES, _run, op_structs
    from mpsgen.commands.tryop.source import _HOST_HEADERS, bundle
    from mpsgen.edit.templates import Templates
    from mpsgen.edit.workspace import Workspace
    from mpsgen.facts.reduction import reduction_of
    from mpsgen.facts.views import Views, read_op
    from mpsgen.read.checkout import Checkout
    from mpsgen.read.metalhost.compiler import find_compiler
    from support import missing

    compiler = find_compiler()[0]
    if compiler is None:
        missing("no C++ compiler (g++/clang++) on PATH")
    root = reduction_checkout(tmp_path)
    assert run_cli(["-C", str(root), "new-op", "fixture_max_reduce", *FLAGS]).exit_code == 0
    checkout = Checkout.find(root, None)
    views = Views(Workspace(checkout))
    reduction = reduction_of(views, read_op(views, "fixture_max_reduce"))
    structs = {(s.input, s.output): s for s in op_structs(checkout, reduction, compiler)}
    assert set(structs) == {("float", "float"), ("half", "half"), ("half", "float"), ("bfloat", "bfloat"),
                            ("bfloat", "float")}
    values = [0.5, -3.0, 2.25, -1.0, 7.0, 1.5]
    data = ", ".join(f"0x{__import__('struct').unpack('<I', __import__('struct').pack('<f', v))[0]:08x}u" for v in values)
    run = {"op_type": structs[("float", "float")].op_type, "input": "float", "output": "float", "count": 6,
           "data": data, "outer": 2, "size": 3, "inner": 1, "label": "fixture_max_reduce_float_float#0"}
    main = Templates(root).render("try_reduction_main.cpp.j2", runs=[run], lanes=LANES)
    program = _HOST_HEADERS + "#include <metal_stdlib>\n" + bundle(checkout, REDUCE_METAL) + main
    (out,) = _run(compiler, program, REDUCE_METAL)
    assert list(out.values) == [2 * 2.25, 2 * 7.0]


@pytest.mark.parametrize("args, message", [
    (["fixture_max_reduce", "--combine", "a + b"],
     "mpsgen: error: --combine given without --identity: a reduction's op struct needs an identity and a combine "
     "(add --identity EXPR)"),
    (["fixture_max_reduce", "--identity", "0", "--finalize", "v"],
     "mpsgen: error: --identity, --finalize given without --combine: a reduction's op struct needs an identity and a "
     "combine (add --combine EXPR)"),
    (["fixture_max_reduce", "--identity", "0", "--combine", "a + b", "--acc", "long"],
     "mpsgen: error: --acc long: the op struct's simdgroup combine shuffles 32-bit or narrower values (use one of "
     "opmath_t<TO>, TO, float, half, bfloat, int, uint, short, ushort, char, uchar)"),
    (["fixture_max_reduce", "--identity", "0", "--combine", "max(a, c)"],
     "mpsgen: error: --combine uses 'c', which --combine does not define (--combine may use a, b)"),
    (["fixture_max_reduce", "--identity", "0", "--combine", "a + b", "--finalize", "v; v"],
     "mpsgen: error: --finalize must be a single expression; it contains a semicolon (write one expression over v, "
     "e.g. --finalize \"...\")"),
    (["linalg__powsum", "--identity", "0", "--combine", "a + b"],
     "mpsgen: error: aten/src/ATen/native/ReduceOps.h:39: linalg__powsum's order picks one of SumOp's load modes "
     "(the reduction catalog); --identity/--combine cannot take the order (drop the flags: mpsgen new-op "
     "linalg__powsum)"),
])
def test_bad_flags_are_one_line_errors(tmp_path, args, message):
    root = reduction_checkout(tmp_path)
    before = snapshot(root)
    result = run_cli(["-C", str(root), "new-op", *args])
    assert result.exit_code == 2 and result.stderr.splitlines() == [message]
    as_json = run_cli(["-C", str(root), "new-op", *args, "--json"])
    doc = json.loads(as_json.stdout)
    assert as_json.exit_code == 2 and doc["error"] in message and (doc["hint"] or "") in message
    assert snapshot(root) == before


def test_flags_are_for_reductions_and_expr_is_not(tmp_path):
    root = reduction_checkout(tmp_path)
    result = run_cli(["-C", str(root), "migrate", "atan2", "--identity", "0", "--combine", "a + b"])
    assert result.exit_code == 2
    assert ("atan2's stub atan2_stub is not a reduction's (declared in BinaryOps.h, not ReduceOps.h) (give an "
            "elementwise body with --expr)") in result.stderr
    result = run_cli(["-C", str(root), "migrate", "prod", "--expr", "a * b"])
    assert result.exit_code == 2
    assert "--expr is an elementwise functor body; prod is a reduction (prod_stub)" in result.stderr
    result = run_cli(["-C", str(root), "migrate", "prod", "sum", "--identity", "0", "--combine", "a + b"])
    assert result.exit_code == 2 and "apply to one op" in result.stderr
