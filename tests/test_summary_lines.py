"""Every summary `path:line` is where the entry stands after the change, dry-run and written alike:
for every golden case (new-op, migrate, params, and the kernel family's list-macro goldens) the file
after the change is read at that line: an added or kept entry's own text (a test-list entry: its
quoted key), a removed one's line inside the file."""

from __future__ import annotations

import re

import pytest

from support import copy_checkout, run_cli
import test_list_macros
from test_format import GOLDEN_CASES

# kinds whose entry is in the file after the change (the rest report something removed: their line
# is the one now standing where it was)
ADDED = {"functor", "register", "host-stub", "include", "params-struct", "dispatch"}
# test-list edits whose entry stands after the change (added, or with fewer dtypes): the line holds
# its key, quoted (`SUPPORTED_COMPLEX_OPS['sgn']: ...` reads `"sgn",`)
KEYED = {"added-complex", "removed-dtypes", "listed-dtypes"}
_KEY = re.compile(r"^\w+\[(?P<key>'[^']*'|\"[^\"]*\")\]")
_ROW = re.compile(r"^  (?P<path>\S+):(?P<line>\d+)\s{2,}(?P<kind>\S+)\s{2,}(?P<detail>.*)$")


def summary_rows(stderr: str) -> list[tuple[str, int, str, str]]:
    rows = []
    for text in stderr.splitlines():
        match = _ROW.match(text)
        if match:
            rows.append((match["path"], int(match["line"]), match["kind"], match["detail"]))
    return rows


def _flat(text: str) -> str:
    return re.sub(r"\s+", "", text)


def entry_text(kind: str, detail: str) -> str:
    """What the entry's line of the file says, from the summary's detail."""
    if kind == "dispatch":
        # `mish.out: CPU, CUDA -> MPS added (mish_out)`: the dispatch line ends with the kernel
        added = re.search(r"-> MPS added \((\w+)\)$", detail)
        return f"MPS: {added.group(1)}" if added else ""  # read as: MPS among the keys of that kernel
    if kind in ("host-stub", "register") and " registers " in detail:  # `... registers asinh through M (9 dtype pairs)`
        return detail.split(" registers ")[0]
    if kind in ("params-struct", "include", "functor"):
        return re.sub(r" \([^()]*\)$", "", detail)  # `struct NanToNumParams (new header)`
    return detail


def check_rows(root, rows) -> list[str]:
    wrong = []
    for path, line, kind, detail in rows:
        lines = (root / path).read_text(encoding="utf-8").splitlines()
        assert 1 <= line <= len(lines) + 1, f"{path}:{line} is outside the file ({len(lines)} lines)"
        if kind in KEYED:
            key = _KEY.match(detail)
            assert key, f"{path}:{line} {kind}: no key in {detail!r}"
            quoted = key["key"][1:-1]
            text = lines[line - 1] if line <= len(lines) else ""
            if f'"{quoted}"' not in text and f"'{quoted}'" not in text:
                wrong.append(f"{path}:{line} {kind} {detail!r} reads {text!r}")
            continue
        if kind not in ADDED:
            continue
        want = _flat(entry_text(kind, detail))
        if not want:
            continue  # a dispatch line removed: nothing of it stands
        got = _flat(lines[line - 1].rstrip().removesuffix("\\")) if line <= len(lines) else ""  # a #define's line
        if kind == "dispatch":  # `CPU, CUDA, MPS, MTIA: fmod_out`
            keys, _, kernel = got.partition(":")
            got = f"MPS:{kernel}" if "MPS" in keys.split(",") else got
        # the line holds the entry, or is the first line clang-format broke it into
        if not got or not (want in got or (len(got) >= 8 and want.startswith(got))):
            wrong.append(f"{path}:{line} {kind} {detail!r} reads {lines[line - 1] if line <= len(lines) else '<end>'!r}")
    return wrong


def _run(tmp_path, command, argv, style: str | None):
    root = copy_checkout(tmp_path)
    if style is not None:
        (root / ".clang-format").write_text(style, encoding="utf-8")
    dry = run_cli(["-C", str(root), command, *argv, "--dry-run", "--format", "plain"])
    wet = run_cli(["-C", str(root), command, *argv, "--format", "plain"])
    assert dry.exit_code == 0 and wet.exit_code == 0, dry.stderr + wet.stderr
    return root, summary_rows(dry.stderr), summary_rows(wet.stdout)  # a dry run keeps stdout for the diff


@pytest.mark.parametrize(("command", "case", "argv"), GOLDEN_CASES, ids=[case for _, case, _ in GOLDEN_CASES])
def test_every_summary_line_points_at_its_entry_after_the_change(tmp_path, command, case, argv):
    root, dry, wet = _run(tmp_path, command, argv, None)
    assert wet and dry == wet
    assert check_rows(root, wet) == []


# a narrow style makes clang-format break and re-indent what mpsgen adds: lines move once more
NARROW_STYLE = "BasedOnStyle: LLVM\nColumnLimit: 50\n"


@pytest.mark.parametrize(("command", "argv"), [
    ("migrate", ["mish", "softplus", "asinh"]),
    ("new-op", ["hypot", "--expr", "sqrt(a * a + b * b) + 0.0f * (a + b + a + b + a + b + a + b)"]),
])
def test_summary_lines_follow_clang_format(tmp_path, command, argv):
    root, dry, wet = _run(tmp_path, command, argv, NARROW_STYLE)
    assert wet and dry == wet
    assert check_rows(root, wet) == []


def test_several_ops_in_one_file_point_at_the_finished_file(tmp_path):
    root, _dry, wet = _run(tmp_path, "migrate", ["mish", "softplus", "asinh"], None)
    registers = [(path, line) for path, line, kind, detail in wet if kind == "register" and "(mish," in detail]
    assert len(registers) == 3 and len({line for _, line in registers}) == 3
    assert check_rows(root, wet) == []


@pytest.mark.parametrize("case", sorted(test_list_macros.CASES))
def test_list_macro_goldens_report_each_registration_at_its_line(tmp_path, case):
    """The kernel family's own reports for the list-macro goldens (tests/golden/listmacro/), read in
    the text it returns."""
    functor, groups, _macros = test_list_macros.CASES[case]
    change, _ = test_list_macros.plan(test_list_macros.DATA.read_text(encoding="utf-8"), functor, groups)
    path = tmp_path / test_list_macros.REL
    path.parent.mkdir(parents=True)
    path.write_text(change.text, encoding="utf-8")
    rows = [(c.location.path, c.location.line, c.kind, c.detail) for c in change.changes]
    assert rows and check_rows(tmp_path, rows) == []
