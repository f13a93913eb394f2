"""A kernel the checkout already compiles under another name (pytorch#195872: conj_physical's stub
pointed at the copy kernels' conj functor in Copy.metal). `migrate conj_physical` writes no second
functor: it registers conj_physical_stub with a host function launching `copy_conj`, beside the host
file that already launches it when there is one (its library holds the kernel also when shaders
are compiled per file; the stub's header is included there), else in the stub family's host file;
the summary says so. The legacy kernel's own TORCH_CHECK is what the OpInfo's test_out expectations
quote (as 2.14's do: "Expected self.is_complex() to be true, but got false."), so they go with it,
as 2.15 removed them. Fixtures: tests/data/compiledas (our Copy.metal, Copy.mm, yaml entry, legacy
MPSGraph kernel, OpInfo), laid over a copy of the miniature; goldens in tests/golden/compiledas."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import Golden
from mpsgen.facts.rules import MissingOpRule, raised_messages
from support import changed_files, copy_checkout, run_cli, snapshot

DATA = Path(__file__).resolve().parent / "data" / "compiledas"
YAML = "aten/src/ATen/native/native_functions.yaml"
UNARY_H = "aten/src/ATen/native/UnaryOps.h"
UNARY_OPS = "aten/src/ATen/native/mps/operations/UnaryOps.mm"
UNARY_MM = "aten/src/ATen/native/mps/operations/UnaryKernel.mm"
COPY_METAL = "aten/src/ATen/native/mps/kernels/Copy.metal"
COPY_MM = "aten/src/ATen/native/mps/operations/Copy.mm"
OPINFOS = "torch/testing/_internal/common_methods_invocations.py"
STUB_ANCHOR = "DECLARE_DISPATCH(void (*)(TensorIteratorBase&, int64_t), round_decimals_stub)\n"
OPINFO_ANCHOR = ("    UnaryUfuncInfo('nan_to_num',\n"
                 "                   dtypes=all_types_and(torch.bool, torch.half, torch.bfloat16)),\n]\n")


def _replace_once(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, (path, old)
    path.write_text(text.replace(old, new), encoding="utf-8")


def checkout_with_conj(tmp_path, *, copy_mm: bool) -> Path:
    root = copy_checkout(tmp_path)
    shutil.copyfile(DATA / "Copy.metal", root / COPY_METAL)
    if copy_mm:
        shutil.copyfile(DATA / "Copy.mm", root / COPY_MM)
    with open(root / YAML, "a", encoding="utf-8", newline="") as handle:
        handle.write((DATA / "native_functions.append.yaml").read_text(encoding="utf-8"))
    _replace_once(root / UNARY_H, STUB_ANCHOR, STUB_ANCHOR + "DECLARE_DISPATCH(unary_fn, conj_physical_stub)\n")
    _replace_once(root / UNARY_OPS, "#include <ATen/ops/atanh_native.h>\n",
                  "#include <ATen/ops/atanh_native.h>\n#include <ATen/ops/conj_physical_native.h>\n")
    legacy = (DATA / "conj_physical_out_mps.mm").read_text(encoding="utf-8")
    _replace_once(root / UNARY_OPS, "\n} // namespace at::native\n", legacy + "\n} // namespace at::native\n")
    _replace_once(root / OPINFOS, OPINFO_ANCHOR, OPINFO_ANCHOR[:-2] + (DATA / "opinfo.append.py").read_text() + "]\n")
    return root


NOTE = ("note: aten/src/ATen/native/mps/kernels/Copy.metal:19: conj_physical_stub is registered with copy_conj_functor, "
        "which aten/src/ATen/native/mps/kernels/Copy.metal already compiles (float, integer, complex): no second "
        "functor; the copy kernels' conj functor is conj_physical itself (upstream pytorch#195872 registered "
        "conj_physical_stub with it)")


@pytest.mark.parametrize(("copy_mm", "host"), [(True, COPY_MM), (False, UNARY_MM)], ids=["beside-copy", "family-host"])
def test_migrate_conj_physical_registers_the_copy_conj_kernel(tmp_path, copy_mm, host):
    root = checkout_with_conj(tmp_path, copy_mm=copy_mm)
    before = snapshot(root)
    result = run_cli(["-C", str(root), "migrate", "conj_physical"])
    assert result.exit_code == 0, result.output
    after = snapshot(root)
    # no kernel file changes: the functor and its registrations are Copy.metal's already
    assert changed_files(before, after) == {YAML, host, UNARY_OPS, OPINFOS}
    golden = Golden("compiledas")
    case = "beside_copy" if copy_mm else "family_host"
    for rel in sorted(changed_files(before, after)):
        golden.check(f"{case}_{Path(rel).name}", Golden.unified(rel, before[rel].decode(), after[rel].decode()))
    assert NOTE in result.output
    assert "its reason is an error the removed MPS kernel raises ('RuntimeError: Expected self.is_complex() to be " \
           "true, but got false.'), which goes with it" in result.output
    check = run_cli(["-C", str(root), "verify", "conj_physical", "--static-only"])
    assert check.exit_code == 0, check.output
    again = run_cli(["-C", str(root), "migrate", "conj_physical"])
    assert again.exit_code == 0 and snapshot(root) == after


def test_without_the_compiled_functor_the_usual_path_is_taken(tmp_path):
    """No Copy.metal: compiled_as.toml's entry does not apply; conj_physical gets a functor of its own
    name (a placeholder: the catalog has no body) in the family's kernel file."""
    root = checkout_with_conj(tmp_path, copy_mm=False)
    (root / COPY_METAL).unlink()
    result = run_cli(["-C", str(root), "migrate", "conj_physical", "--dry-run"])
    assert "copy_conj" not in result.output
    assert "struct conj_physical_functor" in result.output


def test_raised_messages_and_the_reason_they_make():
    code = """{
  TORCH_CHECK(self.is_complex());
  TORCH_CHECK(self.dim() <= 16, "conj_physical_out_mps: at most 16 dimensions, got ", self.dim());
  TORCH_CHECK(ok);
}"""
    raised = raised_messages(code)
    assert raised == ("Expected self.is_complex() to be true, but got false",
                      "conj_physical_out_mps: at most 16 dimensions, got",
                      "Expected ok to be true, but got false")
    rule = MissingOpRule(frozenset({"conj_physical.out"}), frozenset({"conj_physical"}), legacy_raises=raised)
    why = rule.judge("# RuntimeError: Expected self.is_complex() to be true,\n# but got false.")
    assert why.kind == "legacy-raise" and why.fixes_out("test_out") and why.fixes_out("test_variant_consistency_eager")
    assert rule.judge("# RuntimeError: Expected self.is_conj() to be true, but got false.").kind == "other"


# a functor registered without an alpha beside its `_alpha` twin registered with one (2.13's
# BinaryKernel.metal: add_functor for the add op's own path, add_alpha_functor for add_stub's Scalar)
_TWINS = """
struct plus_functor {
  template <typename T>
  inline T operator()(const T a, const T b) {
    return a + b;
  }
};

struct plus_alpha_functor {
  template <typename T>
  inline T operator()(const T a, const T b, const T alpha) {
    return a + alpha * b;
  }
};

REGISTER_BINARY_OP(plus, float, float);
REGISTER_BINARY_ALPHA_OP(plus_alpha, float, float, float);
REGISTER_BINARY_ALPHA_OP(plus_alpha, half, half, half);
"""


def test_a_stub_passing_a_scalar_is_launched_as_the_functors_alpha_twin(tmp_path):
    from mpsgen.edit.workspace import Workspace
    from mpsgen.facts.compiled import alpha_functor
    from mpsgen.facts.views import Views
    from mpsgen.read.checkout import Checkout

    root = copy_checkout(tmp_path)
    rel = "aten/src/ATen/native/mps/kernels/BinaryKernel.metal"
    path = root / rel
    text = path.read_text()
    path.write_text(text + _TWINS)
    views = Views(Workspace(Checkout(root)))
    line = (text + _TWINS).splitlines().index("struct plus_alpha_functor {") + 1
    assert alpha_functor(views, rel, "plus") == ("plus_alpha", line)
    assert alpha_functor(views, rel, "plus_alpha") is None  # registered with an alpha itself: kept
    assert alpha_functor(views, rel, "maximum") is None  # no twin: kept
    assert alpha_functor(views, rel, "nosuch") is None


def test_scan_lists_an_op_reusing_a_compiled_functor_as_ready(tmp_path):
    # migrate writes no body for it (the stub is registered with copy_conj): scan does not ask the
    # body sources, and confirms it by planning the migration
    root = checkout_with_conj(tmp_path, copy_mm=True)
    before = snapshot(root)
    result = run_cli(["-C", str(root), "scan", "--candidates", "--format", "plain"])
    assert result.exit_code == 0, result.stderr
    row = next(line for line in result.stdout.splitlines() if " conj_physical " in line)
    assert row.split()[2] == "ready"
    assert row.rstrip().endswith("supported stub signature, the existing copy_conj_functor reused")
    assert snapshot(root) == before
