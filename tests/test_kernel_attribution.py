"""kernel-name and dtype-coverage of op X are about X's own functor, registrations and host
function: a broken functor elsewhere in the same kernel file fails its own op only."""

from __future__ import annotations

import json

from support import copy_checkout, run_cli

BINARY_METAL = "aten/src/ATen/native/mps/kernels/BinaryKernel.metal"


def static_checks(root, op: str) -> dict[str, dict]:
    result = run_cli(["-C", str(root), "verify", op, "--static-only", "--json"])
    doc = json.loads(result.stdout)
    return {c["check"]: c for c in doc["stages"][0]["checks"]}


def test_a_broken_functor_fails_its_own_op_not_its_neighbours(tmp_path):
    root = copy_checkout(tmp_path)
    metal = root / BINARY_METAL
    text = metal.read_text()
    # logaddexp2_functor loses its closing brace: its struct no longer balances
    start = text.index("struct logaddexp2_functor {")
    close = text.index("\n};\n", start)
    metal.write_text(text[:close] + "\n" + text[close + 4:])
    line = text[:start].count("\n") + 1

    neighbour = static_checks(root, "maximum")  # same file, functor written by a header macro
    assert neighbour["kernel-name"]["status"] == "passed"
    assert neighbour["dtype-coverage"]["status"] == "passed"

    own = static_checks(root, "logaddexp2")
    assert own["kernel-name"]["status"] == "failed"
    finding = own["kernel-name"]["findings"][0]
    assert (finding["path"], finding["line"]) == (BINARY_METAL, line)
    assert finding["message"] == f"cannot read {BINARY_METAL}: unbalanced braces in struct logaddexp2_functor"
