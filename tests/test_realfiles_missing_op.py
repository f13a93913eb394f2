"""The 2.13.0 wheel's test files: MPS expectations whose reason is that MPS lacks the op go with
the new kernel (heaviside, _refs.heaviside, logit_), the rest stays byte-identical, and verify
reports them when they are left behind."""

from __future__ import annotations

from pathlib import Path

import pytest

from mpsgen.read.checkout import Checkout
from mpsgen.edit.workspace import Workspace
from mpsgen.facts.views import Views
from mpsgen.read.opinfo import find_opinfos
from support import run_cli, snapshot

pytestmark = pytest.mark.realfiles
CMI = "torch/testing/_internal/common_methods_invocations.py"
COMMON_MPS = "torch/testing/_internal/common_mps.py"
ACTIVATION = "aten/src/ATen/native/mps/operations/Activation.mm"
MISSING = "is not currently implemented for the MPS device"


def _lines_in(text: str, span: tuple[int, int]) -> list[tuple[int, str]]:
    """(line number, line) of every line starting inside span."""
    out, offset = [], 0
    for number, line in enumerate(text.splitlines(True), 1):
        if span[0] <= offset < span[1]:
            out.append((number, line))
        offset += len(line)
    return out


def _without(text: str, numbers: set[int]) -> str:
    return "".join(line for n, line in enumerate(text.splitlines(True), 1) if n not in numbers)


def _reason_group(text: str, span: tuple[int, int], operator: str) -> list[int]:
    """The line of the comment naming `operator` as missing on MPS inside span, and the MPS
    decorator lines right under it (up to the next comment, blank line or closing bracket)."""
    lines = _lines_in(text, span)
    for i, (number, line) in enumerate(lines):
        if line.strip().startswith("#") and f"'aten::{operator}' {MISSING}" in line:
            group = [number]
            for n, following in lines[i + 1 :]:
                if not following.strip().startswith("DecorateInfo(") or "device_type='mps'" not in following:
                    break
                group.append(n)
            return group
    raise AssertionError(f"no comment naming aten::{operator} in the span")


def _test_lists_findings(root: Path, op: str) -> list:
    from mpsgen.commands.verify.checks import check_op

    return [f for r in check_op(Views(Workspace(Checkout(root))), op) if r.check == "test-lists" for f in r.findings]


def test_new_op_heaviside_removes_what_the_kernel_fixes_and_nothing_else(real_checkout_older):
    root = real_checkout_older
    before = (root / CMI).read_text()
    before_mps = (root / COMMON_MPS).read_bytes()
    refs = {ref.key: ref for ref in find_opinfos(before, CMI, "heaviside")}
    assert set(refs) == {"heaviside", "_refs.heaviside"}
    main = _reason_group(before, refs["heaviside"].span, "heaviside.out")
    ref = _reason_group(before, refs["_refs.heaviside"].span, "heaviside.out")
    assert len(main) == 6 and len(ref) == 3  # the comment and five decorators; the comment and two
    tests = [line.split("'TestCommon', '")[1].split("'")[0] for n, line in _lines_in(before, (0, len(before))) if n in main[1:]]
    assert tests == ["test_variant_consistency_eager", "test_out_warning", "test_out", "test_noncontiguous_samples", "test_dtypes"]
    # the other skips of the OpInfo (type promotion, mixed dtypes on meta, NaN extremal values) are no MPS ones
    others = [line for n, line in _lines_in(before, refs["heaviside"].span) if "DecorateInfo(" in line and n not in main]
    assert len(others) == 3

    result = run_cli(["-C", str(root), "new-op", "heaviside"])
    assert result.exit_code == 0, result.stderr
    after = (root / CMI).read_text()
    assert after == _without(before, set(main) | set(ref))  # exactly those lines, the rest byte-identical
    assert "'aten::heaviside.out'" not in after
    for line in others:
        assert line in after
    assert b'"heaviside": None' in before_mps and b'"heaviside": None' not in (root / COMMON_MPS).read_bytes()

    # a second run changes nothing; verify passes
    state = snapshot(root)
    again = run_cli(["-C", str(root), "new-op", "heaviside"])
    assert again.exit_code == 0 and snapshot(root) == state
    assert _test_lists_findings(root, "heaviside") == []
    verify = run_cli(["-C", str(root), "verify", "heaviside", "--static-only", "--format", "plain"])
    assert "test-lists         passed" in verify.stdout, verify.stdout

    # the kernel in place and the test files as they were: verify names each line left behind
    (root / CMI).write_text(before)
    (root / COMMON_MPS).write_bytes(before_mps)
    findings = _test_lists_findings(root, "heaviside")
    left = sorted(f.location.line for f in findings if f.location.path == CMI)
    assert left == sorted(main[1:] + ref[1:])
    assert all("expects MPS to lack the op; it no longer does" in f.message for f in findings)
    assert [f.location.path for f in findings].count(COMMON_MPS) == 1
    verify = run_cli(["-C", str(root), "verify", "heaviside", "--static-only", "--format", "plain"])
    assert verify.exit_code == 1
    assert f"{CMI}:{main[1]}: OpInfo 'heaviside' expects MPS to lack the op; it no longer does" in verify.stdout


def test_new_op_heaviside_dry_run_names_each_removal(real_checkout_older):
    result = run_cli(["-C", str(real_checkout_older), "new-op", "heaviside", "--dry-run", "--format", "plain"])
    assert result.exit_code == 0, result.stderr
    removed = [ln for ln in result.stderr.splitlines() if "removed-decorator" in ln]
    assert len(removed) == 7
    assert all("its reason is that MPS lacks the op" in ln and "aten::heaviside.out" in ln for ln in removed)


# The legacy kernel the wheel's yaml names for logit and logit.out (the wheel ships no .mm): written
# for this test, in the shape of the miniature's other MPSGraph kernels.
LEGACY_LOGIT = """
// logit(x) = log(x / (1 - x)) through a graph
Tensor& logit_out_mps(const Tensor& self, std::optional<double> eps, Tensor& result) {
  using namespace mps;
  if (result.numel() == 0) {
    return result;
  }
  @autoreleasepool {
    std::string key = "logit_out_mps:" + getTensorsStringKey({self}) + ":" + std::to_string(eps.value_or(-1.0));
    auto cachedGraph = LookUpOrCreateCachedGraph<MPSUnaryCachedGraph>(key, [&](auto mpsGraph, auto newCachedGraph) {
      newCachedGraph->inputTensor_ = mpsGraphRankedPlaceHolder(mpsGraph, self);
      MPSGraphTensor* x = castMPSTensor(mpsGraph, newCachedGraph->inputTensor_, result.scalar_type());
      MPSGraphTensor* one = [mpsGraph constantWithScalar:1.0 shape:@[ @1 ] dataType:getMPSDataType(result)];
      MPSGraphTensor* rest = [mpsGraph subtractionWithPrimaryTensor:one secondaryTensor:x name:nil];
      MPSGraphTensor* ratio = [mpsGraph divisionWithPrimaryTensor:x secondaryTensor:rest name:nil];
      newCachedGraph->outputTensor_ = [mpsGraph logarithmWithTensor:ratio name:nil];
    });
    auto selfPlaceholder = Placeholder(cachedGraph->inputTensor_, self);
    auto resultPlaceholder = Placeholder(cachedGraph->outputTensor_, result);
    runMPSGraph(getCurrentMPSStream(), cachedGraph->graph(), dictionaryFromPlaceholders(selfPlaceholder), resultPlaceholder);
  }
  return result;
}

Tensor logit_mps(const Tensor& self, std::optional<double> eps) {
  Tensor result = at::empty_like(self);
  logit_out_mps(self, eps, result);
  return result;
}

"""


def test_migrate_logit_removes_the_logit__entry(real_checkout_older):
    root = real_checkout_older
    host = (root / ACTIVATION).read_text()
    end = host.rindex("} // namespace at::native")
    (root / ACTIVATION).write_text(host[:end] + LEGACY_LOGIT.lstrip("\n") + host[end:])
    before = (root / CMI).read_text()
    logit = next(ref for ref in find_opinfos(before, CMI, "logit") if ref.key == "logit")
    group = _reason_group(before, logit.span, "logit_")
    assert len(group) == 2
    kept = [line for n, line in _lines_in(before, logit.span) if "'test_out'" in line]
    assert len(kept) == 1

    argv = ["-C", str(root), "migrate", "logit", "--dtypes", "float,int2float", "--expr", "log(x / (1 - x))"]
    result = run_cli(argv)
    assert result.exit_code == 0, result.stderr
    after = (root / CMI).read_text()
    assert after == _without(before, set(group))
    assert kept[0] in after  # the unsafe-cast failure is about other behaviour
    assert "kept skips['logit']: expected failure for TestCommon.test_out: its reason is other behaviour" in result.stdout + result.stderr
    nf = (root / "aten/src/ATen/native/native_functions.yaml").read_text()
    assert "    CPU, CUDA, MPS: logit_\n" in nf  # the in-place overload the reason names is served now

    state = snapshot(root)
    assert run_cli(argv).exit_code == 0 and snapshot(root) == state
    assert _test_lists_findings(root, "logit") == []
