"""A new functor is defined above every line that names it. 2.15's UnaryKernel.metal defines
functors below registrations of earlier ones (the rounding family's list macro, integer runs), so
"after the file's last functor" put `sgn_functor` below `REGISTER_ROUNDING_OPS`, which then named
a type not yet declared: a kernel file the Metal compiler rejects. The functor now goes after the
last functor above its first use (a backward one after its forward one), and a registration block
written between two groups of a blank-line-separated file is set off on both sides. Exact diffs
(goldens), the order checked on the compiler's reading, a second plan changing nothing."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from support import assert_golden
from test_list_macros import plan, unified

DATA = Path(__file__).resolve().parent / "data" / "functororder"

# name: (data file, functor, dtype groups)
CASES = {
    "list_macro_and_integer_run_above_the_last_functor": ("Order.metal", "delta", ("float", "integer")),
    "backward_after_its_forward_above_the_list_macro": ("Order.metal", "beta_backward", ("float",)),
    "block_between_groups_is_set_off_by_blank_lines": ("Separated.metal", "delta", ("float",)),
}


def first_line(text: str, pattern: str) -> int:
    return next(n for n, line in enumerate(text.splitlines(), 1) if re.search(pattern, line))


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_functor_is_defined_above_its_first_use(case):
    name, functor, groups = CASES[case]
    before = (DATA / name).read_text(encoding="utf-8")
    change, _ = plan(before, functor, groups)
    assert_golden(unified(before, change.text), f"functororder/{case}.diff")
    defined = first_line(change.text, rf"^struct {functor}_functor\b")
    used = [n for n, line in enumerate(change.text.splitlines(), 1) if re.search(rf"\(\s*{functor}\s*,", line)]
    macro_calls = [n for n, line in enumerate(change.text.splitlines(), 1)
                   for m in re.finditer(r"^(\w+)\(", line)
                   if re.search(rf"#define {m.group(1)}\(.*\\$", change.text, re.M)
                   and re.search(rf"\(\s*{functor}\s*,", change.text[change.text.index(f"#define {m.group(1)}("):])]
    assert used and defined < min(used + macro_calls)
    assert [c.location.line for c in change.changes if c.kind == "functor"] == [defined]
    again, _ = plan(change.text, functor, groups)
    assert again.text == change.text


def test_a_backward_functor_stays_after_its_forward_one():
    before = (DATA / "Order.metal").read_text(encoding="utf-8")
    change, _ = plan(before, "beta_backward", ("float",))
    lines = change.text.splitlines()
    beta_end = next(n for n in range(first_line(change.text, r"^struct beta_functor"), len(lines)) if lines[n - 1] == "};")
    assert first_line(change.text, r"^struct beta_backward_functor") == beta_end + 2


def test_verify_reports_a_functor_defined_below_its_registration(tmp_path):
    """The kernel-name check reads the compiler's view of the file: a functor moved below the lines
    that register it is a finding at the first of them (the Metal compiler rejects the file)."""
    from test_verify import complete_hypot, line_of, read, verify_json, write

    root = complete_hypot(tmp_path)
    rel = "aten/src/ATen/native/mps/kernels/BinaryKernel.metal"
    code, doc = verify_json(root, "hypot")
    assert code == 0, doc["findings"]
    text = read(root, rel)
    start = text.index("struct hypot_functor {")
    end = text.index("\n};\n", start) + len("\n};\n")
    functor = text[start:end]
    write(root, rel, text[:start] + text[end:].rstrip("\n") + "\n\n" + functor)
    first_use = line_of(root, rel, "REGISTER_FLOAT_BINARY_OP(hypot)")
    defined = line_of(root, rel, "struct hypot_functor {")
    code, doc = verify_json(root, "hypot")
    assert code == 1
    # metal-compile reports it too where the host compiler runs; kernel-name reads it without one
    assert {f["check"] for f in doc["findings"]} <= {"kernel-name", "metal-compile"}
    assert [(f["check"], f["path"], f["line"], f["message"], f["hint"]) for f in doc["findings"]
            if f["check"] == "kernel-name"] == [
        ("kernel-name", rel, first_use,
         f"hypot_functor is defined at line {defined}, below this line that registers it: the Metal compiler "
         "rejects a kernel instantiated before its functor is declared",
         f"move struct hypot_functor above line {first_use}")]
