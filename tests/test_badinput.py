"""The bad-input matrix: each case gives exactly one line `mpsgen: error: <where>: what (what to do)`
on stderr, exit code 2, and leaves every file of the checkout byte-identical (.mpsgen/ included)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from support import every_file, copy_checkout, run_cli

NF = "aten/src/ATen/native/native_functions.yaml"
METAL = "aten/src/ATen/native/mps/kernels/BinaryKernel.metal"
HOST = "aten/src/ATen/native/mps/operations/BinaryKernel.mm"
LEGACY_MM = "aten/src/ATen/native/mps/operations/BinaryOps.mm"




def line_of(root: Path, rel: str, needle: str) -> int:
    text = (root / rel).read_text(encoding="utf-8")
    return text[: text.index(needle)].count("\n") + 1


def edit(root: Path, rel: str, old: str, new: str) -> None:
    path = root / rel
    text = path.read_bytes().decode("utf-8")
    assert old in text, f"{old!r} not in {rel}"
    path.write_bytes(text.replace(old, new, 1).encode("utf-8"))


def malformed_yaml(root):
    edit(root, NF, "    CPU, CUDA: hypot_out\n  tags: pointwise\n", "    CPU, CUDA: hypot_out\n  tags: [pointwise\n")
    line = line_of(root, NF, "    CPU, CUDA: hypot_out\n  tags: [pointwise") + 2  # the parser stops where the entry ends
    return rf"{NF}:{line}: malformed YAML at column 1: expected ',' or ']'"


def unreadable_func_line(root):
    edit(root, NF, "- func: hypot.out(", "- func: hypot.out(Tensor self\n- func: (")
    return rf"{NF}:{line_of(root, NF, '- func: (')}: cannot read this `- func:` line"


def no_dispatch(root):
    edit(root, NF, "  dispatch:\n    CPU, CUDA: hypot_out\n", "")
    return rf"{NF}:{line_of(root, NF, '- func: hypot.out(')}: hypot has no shared `CPU, CUDA: \.\.\.` dispatch line"


def missing_kernel_file(root):
    (root / METAL).unlink()
    return rf"{METAL}: file not found \(check the checkout, or pass --kernel-file\)"


def missing_stub_header(root):
    (root / "aten/src/ATen/native/BinaryOps.h").unlink()
    return rf"{NF}:\d+: no dispatch stub found for hypot"


def non_utf8(rel):
    def setup(root):
        path = root / rel
        data = path.read_bytes()
        cut = data.index(b"\n", len(data) // 2) + 1
        path.write_bytes(data[:cut] + b"// caf\xe9\n" + data[cut:])
        line = data[:cut].count(b"\n") + 1
        return rf"{rel}:{line}: not valid UTF-8 \(byte {cut + 6}\) \(save the file as UTF-8\)"
    return setup


def template_syntax_error(root):
    override = root / ".mpsgen" / "templates" / "host_kernel.mm.j2"
    override.parent.mkdir(parents=True)
    override.write_text("// my host kernel\n{% if %}\n")
    return rf"{re.escape(str(override))}:2: template syntax error: .* \(fix or delete the template override\)"


def unbalanced_legacy_body(root):
    needle = "TORCH_IMPL_FUNC(atan2_out_mps)(const Tensor& self, const Tensor& other, const Tensor& output) {"
    edit(root, LEGACY_MM, needle, needle + "\n  if (self.numel() == 0) {")
    return rf"{LEGACY_MM}:\d+: .*(unbalanced|never closed|cannot be delimited)"


def nothing(root):
    return None


# case: (setup returning the expected message regex (after `mpsgen: error: `), argv)
CASES = {
    "malformed-yaml": (malformed_yaml, ["new-op", "hypot"]),
    "unreadable-func-line": (unreadable_func_line, ["new-op", "hypot"]),
    "entry-without-dispatch": (no_dispatch, ["new-op", "hypot"]),
    "missing-kernel-file": (missing_kernel_file, ["new-op", "hypot"]),
    "missing-stub-header": (missing_stub_header, ["new-op", "hypot"]),
    "missing-kernel-file-option": (lambda r: rf"{KERNELS}/Nope\.metal: file not found", ["new-op", "hypot", "--kernel-file", "Nope.metal"]),
    "unknown-op": (lambda r: rf"{NF}:{line_of(r, NF, '- func: hypot.out(')}: no operator named 'hypott' in native_functions\.yaml \(did you mean: hypot\?\)",
                   ["new-op", "hypott"]),
    "unknown-op-several-suggestions": (lambda r: rf"{NF}:{line_of(r, NF, '- func: asinh(')}: no operator named 'asin' .*\(did you mean: asinh",
                                       ["migrate", "asin"]),
    # (relu's shared function calls at::clamp_min, which MPS serves: it migrates now; threshold_backward's
    # calls threshold_stub, whose kernel it registers: tests/test_dispatch_shapes.py)
    "unknown-stub": (lambda r: r"--stub hypot_stb: no such DECLARE_DISPATCH .*\(did you mean: hypot_stub, ",
                     ["new-op", "hypot", "--stub", "hypot_stb"]),
    "unsupported-stub-signature": (
        lambda r: rf"aten/src/ATen/native/UnaryOps\.h:{line_of(r, 'aten/src/ATen/native/UnaryOps.h', 'polygamma_stub')}: "
                  r"stub polygamma_stub has signature void\(\*\)\(TensorIteratorBase&, const int64_t\), "
                  r"which mpsgen cannot generate yet",
        ["migrate", "polygamma"]),
    "new-op-on-a-legacy-op": (lambda r: rf"{NF}:\d+: atan2 is already served by a separate MPS kernel atan2_out_mps "
                                        r"\(use `mpsgen migrate atan2`", ["new-op", "atan2"]),
    "unknown-dtype-group": (lambda r: r"unknown dtype group 'quux' \(use a comma-separated list of: float, int2float",
                            ["new-op", "hypot", "--dtypes", "float,quux"]),
    "conflicting-dtype-groups": (lambda r: r"dtype groups 'int2float' and 'integer' both register",
                                 ["new-op", "hypot", "--dtypes", "int2float,integer"]),
    "template-override-syntax-error": (template_syntax_error, ["new-op", "hypot"]),
    "non-utf8-yaml": (non_utf8(NF), ["new-op", "hypot"]),
    "non-utf8-metal": (non_utf8(METAL), ["new-op", "hypot"]),
    "non-utf8-host": (non_utf8(HOST), ["new-op", "hypot"]),
    "migrate-options-for-several-ops": (lambda r: r"--expr, --identity, --combine, --finalize, --acc, --stub, --kernel-file and --host-file apply to one op",
                                        ["migrate", "asinh", "acosh", "--expr", "x"]),
}
KERNELS = "aten/src/ATen/native/mps/kernels"

# --expr: statements, blocks, preprocessor lines and comments must never reach a generated file.
EXPRS = {
    "semicolon": ("a; system(b)", "it contains a semicolon"),
    "open-brace": ("a { b", "it contains a brace"),
    "close-brace": ("a } b", "it contains a brace"),
    "hash": ("a #define b", r"it contains a preprocessor `#`"),
    "newline": ("a\nb", "it contains a newline"),
    "carriage-return": ("a\rb", "it contains a newline"),
    "two-operands": ("a b", "'b' follows an operand with no operator"),
    "comma": ("a, b", "it has a top-level comma"),
    "comment": ("a /* b */", "must not contain a comment"),
    "line-comment": ("a // b", "must not contain a comment"),
    "string": ('a + "b"', "it contains a string"),
    "unbalanced": ("(a + b", r"unbalanced `\(`"),
    "unknown-name": ("a + y", "uses 'y', which is not an operand of this binary op"),
    "empty": ("  ", "--expr is empty"),
}
for _name, (_expr, _message) in EXPRS.items():
    CASES[f"expr-{_name}"] = (lambda r, m=_message: rf"--expr.*{m}" if not m.startswith("--expr") else m,
                              ["new-op", "hypot", "--expr", _expr])

def assert_one_line_error(result, pattern: str) -> None:
    assert result.exit_code == 2, (result.exit_code, result.stderr)
    assert result.stderr.count("\n") == 1 and result.stderr.endswith("\n"), result.stderr
    assert result.stderr.startswith("mpsgen: error: "), result.stderr
    assert re.match(pattern, result.stderr[len("mpsgen: error: "):]), f"{result.stderr!r} !~ {pattern!r}"
    assert "Traceback" not in result.stderr and result.stdout == ""


@pytest.mark.parametrize("dry_run", [False, True], ids=["apply", "dry-run"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_is_one_line_exit_2_and_nothing_written(tmp_path, case, dry_run):
    setup, argv = CASES[case]
    root = copy_checkout(tmp_path)
    pattern = setup(root)
    before = every_file(root)
    result = run_cli(["-C", str(root), *argv, *(["--dry-run"] if dry_run else [])])
    assert_one_line_error(result, pattern)
    assert every_file(root) == before


def test_legacy_definition_that_cannot_be_delimited(tmp_path):
    root = copy_checkout(tmp_path)
    pattern = unbalanced_legacy_body(root)
    before = every_file(root)
    result = run_cli(["-C", str(root), "migrate", "atan2"])
    assert_one_line_error(result, pattern)
    assert every_file(root) == before


def test_not_a_checkout(tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "notes.txt").write_text("mine\n")
    before = every_file(tmp_path)
    result = run_cli(["-C", str(tmp_path / "empty"), "new-op", "hypot"])
    assert_one_line_error(result, rf"{re.escape(str(tmp_path / 'empty'))} is not inside a PyTorch checkout: no {NF} in "
                                  r"it or above \(pass a directory of the checkout to -C\)")
    result = run_cli(["new-op", "hypot"], cwd=tmp_path / "empty")
    assert_one_line_error(result, rf"not inside a PyTorch checkout \(no {NF} in .* or above\) "
                                  r"\(run mpsgen inside a checkout or pass -C PATH\)")
    result = run_cli(["-C", str(tmp_path / "missing"), "migrate", "atan2"])
    assert_one_line_error(result, r".*missing: no such directory")
    assert every_file(tmp_path) == before


@pytest.mark.parametrize("rel", [NF, METAL, HOST])
def test_unreadable_file(tmp_path, monkeypatch, rel):
    import builtins

    from mpsgen.read import checkout

    root = copy_checkout(tmp_path)
    real_open = builtins.open

    def denying_open(file, *args, **kwargs):
        if Path(file) == root / rel:
            raise PermissionError(13, "Permission denied", str(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(checkout, "open", denying_open, raising=False)
    before = every_file(root)
    result = run_cli(["-C", str(root), "new-op", "hypot"])
    assert_one_line_error(result, rf"{rel}: permission denied \(make the file readable\)")
    assert every_file(root) == before


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_unreadable_file_by_mode(tmp_path):
    root = copy_checkout(tmp_path)
    os.chmod(root / HOST, 0)
    try:
        result = run_cli(["-C", str(root), "new-op", "hypot"])
        assert_one_line_error(result, rf"{HOST}: permission denied")
    finally:
        os.chmod(root / HOST, 0o644)


def test_a_file_changed_between_plan_and_apply(tmp_path, monkeypatch):
    from mpsgen.commands import newop

    root = copy_checkout(tmp_path)
    real_plan = newop.plan_new_op

    def plan_then_user_saves(*args, **kwargs):
        plan = real_plan(*args, **kwargs)
        (root / HOST).write_bytes((root / HOST).read_bytes() + b"// saved in the editor meanwhile\n")
        return plan

    monkeypatch.setattr(newop, "plan_new_op", plan_then_user_saves)
    before = every_file(root)
    result = run_cli(["-C", str(root), "new-op", "hypot"])
    assert_one_line_error(result, rf"{HOST} changed after mpsgen read it \(no file was left modified; run the command again\)")
    after = every_file(root)
    assert {k for k in before if before[k] != after.get(k)} == {HOST}
    assert after[HOST] == before[HOST] + b"// saved in the editor meanwhile\n"
