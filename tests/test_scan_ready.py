"""`scan`'s "ready" means `migrate` completes (the same resolver, legacy removal included), and its
filters: `--tier`, `--new-op`; `migrate --legacy-file` for a legacy kernel outside operations/*.mm."""

from __future__ import annotations

import json
import shutil

import pytest

from support import copy_checkout, run_cli

UNARY_MM = "aten/src/ATen/native/mps/operations/UnaryOps.mm"
ASINH_INSTANCE = "CREATE_MPS_STRUCTURED_UNARY_TORCH_IMPL_FUNC(asinh_out_mps, asinh)\n"
ELSEWHERE = "aten/src/ATen/native/mps/UnaryExtra.mm"


def scan_json(root, *args) -> dict:
    result = run_cli(["-C", str(root), "scan", "--json", *args])
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def candidates(doc) -> list[dict]:
    """The candidates in scan's order: {"op", "tier", "reason"}."""
    records = {record["op"]: record for record in doc["ops"]}
    return [{"op": op, **records[op]["candidate"]} for op in doc["candidates"]]


@pytest.mark.heavy
@pytest.mark.realfiles
def test_every_ready_candidate_migrates_and_verifies_on_the_real_size_checkout(real_checkout, tmp_path):
    doc = scan_json(real_checkout, "--candidates", "--tier", "ready")
    ready = [c["op"] for c in candidates(doc)]
    assert ready and all(c["tier"] == "ready" for c in candidates(doc))
    assert len(ready) == len([c for c in candidates(scan_json(real_checkout)) if c["tier"] == "ready"])
    for op in ready:
        root = tmp_path / f"co-{op}"
        shutil.copytree(real_checkout, root)
        migrated = run_cli(["-C", str(root), "migrate", op])
        assert migrated.exit_code == 0, (op, migrated.stderr)
        verified = run_cli(["-C", str(root), "verify", op, "--static-only", "--format", "plain"])
        assert verified.exit_code == 0, (op, verified.stdout)


def test_a_legacy_kernel_outside_the_host_files_is_not_ready_and_legacy_file_takes_it(tmp_path):
    root = copy_checkout(tmp_path)
    text = (root / UNARY_MM).read_text(encoding="utf-8")
    assert ASINH_INSTANCE in text
    (root / UNARY_MM).write_text(text.replace(ASINH_INSTANCE, ""), encoding="utf-8")
    (root / ELSEWHERE).write_text(f"#include <{UNARY_MM}>\n\nnamespace at::native {{\n{ASINH_INSTANCE}\nvoid keep();\n}}\n",
                                  encoding="utf-8")

    asinh = next(c for c in candidates(scan_json(root)) if c["op"] == "asinh")
    assert asinh["tier"] == "port"
    assert "legacy MPS kernel asinh_out_mps of asinh is not defined in any of" in asinh["reason"]
    assert "pass the file defining it with --legacy-file PATH" in asinh["reason"]
    assert "asinh" not in [c["op"] for c in candidates(scan_json(root, "--tier", "ready"))]

    pointed = run_cli(["-C", str(root), "new-op", "asinh"])  # points at migrate only when migrate would do
    assert pointed.exit_code == 2
    assert "(`mpsgen migrate asinh` would refuse it too: legacy MPS kernel asinh_out_mps of asinh" in pointed.stderr
    assert "use `mpsgen migrate" not in run_cli(["-C", str(root), "new-op", "asinh"]).stderr
    assert "use `mpsgen migrate acosh` to move it" in run_cli(["-C", str(root), "new-op", "acosh"]).stderr
    refused = run_cli(["-C", str(root), "migrate", "asinh"])
    assert refused.exit_code == 2 and "--legacy-file PATH" in refused.stderr
    done = run_cli(["-C", str(root), "migrate", "asinh", "--legacy-file", ELSEWHERE])
    assert done.exit_code == 0, done.stderr
    assert (root / ELSEWHERE).read_text(encoding="utf-8") == f"#include <{UNARY_MM}>\n\nnamespace at::native {{\nvoid keep();\n}}\n"
    bad = run_cli(["-C", str(root), "migrate", "acosh", "--legacy-file", "nope.mm"])
    assert (bad.exit_code, bad.stderr) == (2, "mpsgen: error: --legacy-file nope.mm: file not found "
                                                "(name the file defining the legacy kernel)\n")


@pytest.mark.heavy
def test_tier_filters_the_candidates(fixture_checkout):
    everything = candidates(scan_json(fixture_checkout, "--candidates"))
    for tiers in (["ready"], ["expr"], ["port"], ["ready", "expr"]):
        listed = candidates(scan_json(fixture_checkout, "--tier", ",".join(tiers)))
        assert listed == [c for c in everything if c["tier"] in tiers]
        assert listed
    result = run_cli(["-C", str(fixture_checkout), "scan", "--tier", "ready,soon"])
    assert (result.exit_code, result.stderr) == (2, "mpsgen: error: --tier ready,soon: unknown tier soon "
                                                    "(tiers are ready, reduce, expr, port)\n")


@pytest.mark.heavy  # a new-op and verify of every op listed: CI runs it
def test_new_op_lists_what_new_op_takes_easiest_first_and_each_completes(fixture_checkout, tmp_path):
    result = run_cli(["-C", str(fixture_checkout), "scan", "--new-op", "--json"])
    assert result.exit_code == 0, result.stderr
    listed = json.loads(result.stdout)["new_op_candidates"]
    ops = [c["op"] for c in listed]
    assert "hypot" in ops and "atan2" not in ops  # atan2 has an MPS kernel of its own: migrate's
    tiers = [c["tier"] for c in listed]
    assert tiers == sorted(tiers, key=["ready", "expr"].index)
    for c in listed:
        root = copy_checkout(tmp_path / c["op"])
        argv = ["-C", str(root), "new-op", c["op"]] + ([] if c["tier"] == "ready" else ["--expr", _expr(c)])
        done = run_cli(argv)
        assert done.exit_code == 0, (c, done.stderr)
        if c["tier"] == "ready":
            assert run_cli(["-C", str(root), "verify", c["op"], "--static-only"]).exit_code == 0, c
    plain = run_cli(["-C", str(fixture_checkout), "scan", "--new-op", "--format", "plain"])
    assert plain.stdout.splitlines()[0] == f"Candidates for mpsgen new-op, easiest first ({len(listed)})"


def _expr(candidate) -> str:
    """An expression over the op's operands (the new-op list gives the arity)."""
    return {1: "x", 2: "a + b", 3: "a + b * c"}[candidate["arity"]]
