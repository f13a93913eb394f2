"""What makes `scan` and `migrate` fast without changing an answer (issue 29): each kept result
follows the text it was computed from, and a confirmation plans the same refusals without reports."""

from __future__ import annotations

import pytest

from mpsgen.commands.confirm import migrate_refusal
from mpsgen.edit.workspace import Workspace
from mpsgen.errors import MpsgenError
from mpsgen.model import FileChange
from mpsgen.read import cpp
from mpsgen.read.checkout import Checkout
from support import FIXTURE_CHECKOUT, copy_checkout, run_cli

HOST = """\
namespace at::native {
// a comment with { a brace
static void helper() { int x = 1; }
void kernel_mps() { helper(); }
} // namespace at::native
"""


def test_mask_code_follows_the_text():
    first = cpp.mask_code(HOST)
    assert first == cpp._mask_code(HOST)
    edited = HOST.replace("a comment", '"a { string"; // comment')
    assert cpp.mask_code(edited) == cpp._mask_code(edited) != first
    assert cpp.mask_code(HOST) == first


def test_definitions_follow_the_text_and_path_and_are_the_callers_own():
    names = [d.name for d in cpp.find_definitions(HOST, "a.mm") if d.kind == "function"]
    assert names == ["helper", "kernel_mps"]
    edited = HOST.replace("static void helper() { int x = 1; }\n", "")
    assert [d.name for d in cpp.find_definitions(edited, "a.mm") if d.kind == "function"] == ["kernel_mps"]
    assert {d.location.path for d in cpp.find_definitions(HOST, "b.mm")} == {"b.mm"}
    mine = cpp.find_definitions(HOST, "a.mm")
    mine.clear()  # a caller's list: the kept result is not touched
    assert [d.name for d in cpp.find_definitions(HOST, "a.mm") if d.kind == "function"] == names


def test_an_unscannable_text_is_refused_every_time():
    broken = HOST.replace("void kernel_mps() { helper(); }", "void kernel_mps() { helper();")
    for _ in range(2):
        with pytest.raises(MpsgenError):
            cpp.find_definitions(broken, "a.mm")


def test_the_memo_keeps_only_the_last_texts():
    for i in range(cpp._MEMO_SIZE + 5):
        cpp.mask_code(f"int x{i}; // {i}\n")
    assert len(cpp._MASKED) <= cpp._MEMO_SIZE


def test_a_workspace_without_reports_holds_the_same_texts():
    checkout = Checkout(FIXTURE_CHECKOUT)
    rel = "aten/src/ATen/native/mps/operations/UnaryOps.mm"
    text = checkout.read(rel) + "// added\n"
    with_reports, texts_only = Workspace(checkout), Workspace(checkout, reports=False)
    for ws in (with_reports, texts_only):
        ws.apply(FileChange(rel, text, (), ()))
        assert ws.read(rel) == text
    assert texts_only.planned_texts() == with_reports.planned_texts()


@pytest.mark.parametrize(("command", "op"), [("migrate", "sgn"), ("migrate", "threshold"), ("migrate", "frac"),
                                           ("new-op", "special_ndtri"), ("new-op", "sgn"), ("new-op", "asinh")])
def test_confirming_refuses_as_the_command_does(tmp_path, command, op):
    """migrate_refusal (planned on a texts-only Workspace) and `mpsgen COMMAND OP --dry-run` agree:
    both complete, or both refuse with the same message."""
    root = copy_checkout(tmp_path)
    refusal = migrate_refusal(Checkout(root), op, mode=command)
    result = run_cli(["-C", str(root), command, op, "--dry-run"])
    if refusal is None:
        assert result.exit_code == 0, result.stderr
        assert result.stdout.startswith("diff --git")
    else:
        assert result.exit_code == 2
        assert refusal.message in result.stderr
