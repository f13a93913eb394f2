"""prod on bool, as 2.15 serves it: 2.15 compiles no `prod_reduction*_bool_*` kernel (Metal has no
bool product) and no 2.15 test list expects prod to fail on bool, while its
`make_reduction_from_out_ty` hands MPS an integral input, bool included, unconverted when the output
is long. `migrate prod` writes the host branch that converts a bool input to the output's type, so
`verify prod` passes on a 2.15-shaped checkout (no prod expectation at all; sum registering the
8/16-bit integers as 2.15's does), and fails on bool once the branch is gone."""

from __future__ import annotations

import json

from reduction_support import COMMON_MPS, REDUCE_METAL, REDUCE_MM, reduction_checkout
from support import run_cli, snapshot

# 2.15's sum takes every integer input to long; the overlay registers int and long only
MORE_SUM_PAIRS = "REGISTER_SUM(short, long);\nREGISTER_SUM(char, long);\nREGISTER_SUM(uchar, long);\n"
PROD_XFAIL = ('            # The graph path has no 64-bit or 8/16-bit integer product, and bool products are not wired up\n'
              '            "prod": [torch.int64, torch.int16, torch.uint8, torch.int8, torch.bool],\n')
BRANCH = """  // no prod_reduction* kernel takes bool: reduce it in the output's type
  if (iter.input(0).scalar_type() == kBool) {
    Tensor output = iter.output(0);
    auto converted = TensorIterator::reduce_op(output, iter.input(0).to(output.scalar_type()));
    value_reduction_kernel_mps(converted, "prod_");
    return;
  }
"""


def checkout_like_2_15(tmp_path):
    root = reduction_checkout(tmp_path)
    metal = (root / REDUCE_METAL).read_text()
    (root / REDUCE_METAL).write_text(metal.replace("REGISTER_SUM(long, long);\n", "REGISTER_SUM(long, long);\n" + MORE_SUM_PAIRS, 1))
    lists = (root / COMMON_MPS).read_text()
    assert PROD_XFAIL in lists
    (root / COMMON_MPS).write_text(lists.replace(PROD_XFAIL, "", 1))
    return root


def dtype_coverage(root):
    result = run_cli(["-C", str(root), "verify", "prod", "--static-only", "--json"])
    check = next(c for c in json.loads(result.stdout)["stages"][0]["checks"] if c["check"] == "dtype-coverage")
    return result.exit_code, check


def test_prod_serves_bool_through_its_output_type(tmp_path):
    root = checkout_like_2_15(tmp_path)
    result = run_cli(["-C", str(root), "migrate", "prod"])
    assert result.exit_code == 0, result.output
    mm = (root / REDUCE_MM).read_text()
    assert "static void prod_kernel_mps(TensorIterator& iter) {\n" + BRANCH + '  value_reduction_kernel_mps(iter, "prod_");\n}\n' in mm
    # prod's pairs: sum's without bool (2.15's integer inputs to long included); no bool kernel
    kernel = (root / REDUCE_METAL).read_text()
    assert "REGISTER_PROD(char, long);" in kernel and "REGISTER_PROD(bool" not in kernel
    code, check = dtype_coverage(root)
    assert code == 0 and check["status"] == "passed", check
    after = snapshot(root)
    again = run_cli(["-C", str(root), "migrate", "prod"])
    assert again.exit_code == 0 and snapshot(root) == after

    # without the branch the host would ask for prod_reduction*_bool_long, which nothing registers
    (root / REDUCE_MM).write_text(mm.replace(BRANCH, "", 1))
    code, check = dtype_coverage(root)
    assert code == 1 and check["status"] == "failed"
    assert check["findings"][0]["message"].startswith("prod_reduction* kernels take no bool input")


def test_no_conversion_where_the_output_type_has_no_kernel(tmp_path):
    """An excluded input is converted only when the op registers (O, O) for each output O the
    sibling pairs it with: with prod's long -> long pair gone, bool stays unserved (and expected
    to fail), with no branch written."""
    root = reduction_checkout(tmp_path)
    metal = (root / REDUCE_METAL).read_text()
    (root / REDUCE_METAL).write_text(metal.replace("REGISTER_SUM(long, long);\n", "", 1))
    result = run_cli(["-C", str(root), "migrate", "prod"])
    assert result.exit_code == 0, result.output
    assert "kBool" not in (root / REDUCE_MM).read_text()
    assert "registers no bool kernel" not in result.output
    assert '"prod": [torch.int64, torch.int16, torch.uint8, torch.int8, torch.bool],' in (root / COMMON_MPS).read_text()
