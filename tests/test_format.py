"""Code mpsgen adds is clean under PyTorch's own clang-format rules; where the checkout has a
`.clang-format` and a clang-format executable is found, mpsgen formats exactly the lines it adds;
verify's `format` check reads the op's own lines."""

from __future__ import annotations

import shutil

import pytest

import test_migrate
import test_newop
import test_params
import test_realfiles_pipeline
from mpsgen.edit.apply import line_opcodes
from mpsgen.edit.clangformat import Formatter, added_line_ranges, lines_to_rewrite, replacements
from support import FIXTURE_CHECKOUT, PYTORCH_CLANG_FORMAT, copy_checkout, pytorch_clang_format, run_cli, sampled, snapshot

MPS = "aten/src/ATen/native/mps"
BINARY_METAL = f"{MPS}/kernels/BinaryKernel.metal"
ACTIVATION_METAL = f"{MPS}/kernels/ActivationKernel.metal"
ACTIVATION_MM = f"{MPS}/operations/ActivationKernel.mm"
LONG_EXPR = "sqrt(a * a + b * b) + 0.0f * (a + b + a + b + a + b + a + b + a + b + a + b + a)"

GOLDEN_CASES = [("new-op", name, argv) for name, (argv, _) in sorted(test_newop.CASES.items())]
GOLDEN_CASES += [("migrate", name, argv) for name, argv in sorted(test_migrate.CASES.items())]
PARAMS_GOLDEN_CASES = [("migrate", f"params-{name}", argv) for name, argv in sorted(test_params.CASES.items())]
GOLDEN_CASES += PARAMS_GOLDEN_CASES
REAL_CASES = [
    ("migrate", ["mish", "mish_backward"]),
    ("migrate", ["acosh", "asinh", "atanh"]),
    ("migrate", ["sigmoid_backward", "tanh_backward"]),
    ("migrate", ["sgn"]),
    ("new-op", ["special_ndtri"]),
    ("new-op", ["heaviside"]),
]
REAL_PARAMS_CASES = [("migrate", [op]) for op in sorted(test_realfiles_pipeline.PARAMS_OPS)]
REAL_PARAMS_CASES += [("migrate", sorted(test_realfiles_pipeline.PARAMS_OPS))]
FORMATTED_SUFFIXES = (".metal", ".mm", ".h")


def added_lines_to_rewrite(before: dict[str, bytes], after: dict[str, bytes]) -> tuple[int, list[str]]:
    """(number of C++/Metal/Objective-C++ lines added, `path:line: text` of those clang-format would
    rewrite) between two snapshots, by PyTorch's style file."""
    executable, style = pytorch_clang_format()
    added, bad = 0, []
    for rel in sorted(after):
        if before.get(rel) == after[rel] or not rel.endswith(FORMATTED_SUFFIXES):
            continue
        old, new = before.get(rel, b"").decode(), after[rel].decode()
        ranges = added_line_ranges(old, new)
        added += sum(b - a + 1 for a, b in ranges)
        found = replacements(new, ranges, executable=executable, style=style, rel=rel)
        bad += [f"{rel}:{line}: {new.splitlines()[line - 1]}" for line in lines_to_rewrite(new, found)]
    return added, bad


def test_the_fixture_clang_format_is_pytorchs_style(tmp_path):
    """The miniature's .clang-format (written for it) carries PyTorch's style facts: C++ and Metal at
    80 columns with 2-space indents and left-aligned pointers, Objective-C++ at 120."""
    import subprocess

    executable, style = pytorch_clang_format()
    assert style == FIXTURE_CHECKOUT / ".clang-format"

    def dumped(name: str) -> dict[str, str]:
        (tmp_path / name).write_text("")
        out = subprocess.run([executable, f"--style=file:{style}", "--dump-config", name], capture_output=True,
                             text=True, check=True, cwd=tmp_path).stdout
        return {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in out.splitlines()) if v.strip()}

    cpp, objc = dumped("x.cpp"), dumped("x.mm")
    # (keys whose spelling changed across clang-format versions are left out)
    assert (cpp["Language"], cpp["ColumnLimit"], cpp["IndentWidth"], cpp["PointerAlignment"],
            cpp["IndentCaseLabels"], cpp["MaxEmptyLinesToKeep"]) == ("Cpp", "80", "2", "Left", "true", "1")
    assert (objc["Language"], objc["ColumnLimit"], objc["ObjCBlockIndentWidth"]) == ("ObjC", "120", "2")


# ---- what the templates write, as they stand ------------------------------------------------------


@pytest.mark.parametrize(("command", "case", "argv"), GOLDEN_CASES, ids=[f"{c}-{n}" for c, n, _ in GOLDEN_CASES])
def test_every_golden_case_adds_only_lines_clang_format_leaves_alone(tmp_path, command, case, argv):
    pytorch_clang_format()
    root = copy_checkout(tmp_path, style=False)  # mpsgen formats nothing: the templates stand alone
    before = snapshot(root)
    result = run_cli(["-C", str(root), command, *argv])
    assert result.exit_code == 0, result.stderr
    added, bad = added_lines_to_rewrite(before, snapshot(root))
    assert added > 0
    assert bad == []


@pytest.fixture
def real_fixture_headers_checkout(tmp_path, real_torch_files):
    from conftest import assemble_real_checkout

    return assemble_real_checkout(tmp_path / "pytorch", real_torch_files, keep_wheel_headers=False)


@pytest.mark.realfiles
# Run in every run (CI runs every case): an activation with its backward, a new binary op.
@pytest.mark.parametrize(("command", "ops"), sampled(REAL_CASES, ("migrate-mish-mish_backward", "new-op-heaviside"),
                                                     ids=[f"{c}-{'-'.join(o)}" for c, o in REAL_CASES]))
def test_real_size_checkout_cases_add_only_clean_lines(real_fixture_headers_checkout, command, ops):
    real_checkout = real_fixture_headers_checkout
    pytorch_clang_format()
    before = snapshot(real_checkout)
    result = run_cli(["-C", str(real_checkout), command, *ops])
    assert result.exit_code == 0, result.stderr
    added, bad = added_lines_to_rewrite(before, snapshot(real_checkout))
    assert added > 0
    assert bad == []


@pytest.mark.realfiles
# Run in every run (CI runs every case, all five in one run too): a backward params op.
@pytest.mark.parametrize(("command", "ops"), sampled(REAL_PARAMS_CASES, ("migrate-hardtanh_backward",),
                                                     ids=[f"{c}-{'-'.join(o)}" for c, o in REAL_PARAMS_CASES]))
def test_real_size_params_cases_add_only_clean_lines(real_checkout_older, command, ops):
    real_checkout = real_checkout_older  # softplus is native on 2.15
    pytorch_clang_format()
    before = snapshot(real_checkout)
    result = run_cli(["-C", str(real_checkout), command, *ops])
    assert result.exit_code == 0, result.stderr
    after = snapshot(real_checkout)
    added, bad = added_lines_to_rewrite(before, after)
    assert added > 0
    # A new header copies its siblings' guard lines as they are (the wheel's headers carry a guard the
    # packaging adds, never clang-formatted): those are the sibling's text, not mpsgen's.
    siblings = {line for rel, data in before.items() if rel.startswith(f"{MPS}/kernels/") and rel.endswith(".h")
                for line in data.decode().splitlines()}
    bad = [found for found in bad
           if not (found.split(":", 1)[0] not in before and found.split(": ", 1)[1] in siblings)]
    assert bad == []
    assert any(rel.endswith(".h") and before.get(rel) != after[rel] for rel in after)  # the struct was checked too


# ---- formatting the added lines -----------------------------------------------------------------


def test_added_line_ranges_are_the_plus_lines_of_the_diff():
    before = "a\nb\nc\n"
    assert added_line_ranges(before, "a\nx\ny\nb\nc\nz\n") == [(2, 3), (6, 6)]
    assert added_line_ranges(before, "a\nB\nc\n") == [(2, 2)]
    assert added_line_ranges(before, before) == []


def test_formatter_rewrites_only_the_added_lines(tmp_path):
    pytorch_clang_format()
    shutil.copy(PYTORCH_CLANG_FORMAT, tmp_path / ".clang-format")
    before = "int f(int a) {\n  return a+1;\n}\n"
    after = "int f(int a) {\n  return a+1;\n}\nint g(int a) {\n    return a*2;\n}\n"
    formatted = Formatter.for_checkout(tmp_path).format_added("x.cpp", before, after)
    assert formatted == "int f(int a) {\n  return a+1;\n}\nint g(int a) {\n  return a * 2;\n}\n"


def test_replacements_are_kept_until_the_text_the_style_or_the_executable_changes(tmp_path, monkeypatch):
    """A dry run, then the run: clang-format's answer for the same text, lines, style file and
    executable is taken from the user cache; any of them changed runs it again."""
    from mpsgen.edit import clangformat

    pytorch_clang_format()
    monkeypatch.delenv("MPSGEN_NO_CACHE", raising=False)
    monkeypatch.setenv("MPSGEN_CACHE_DIR", str(tmp_path / "cache"))
    root = tmp_path / "co"
    root.mkdir()
    shutil.copy(PYTORCH_CLANG_FORMAT, root / ".clang-format")
    runs = []
    real_run = clangformat.subprocess.run
    monkeypatch.setattr(clangformat.subprocess, "run", lambda *a, **k: runs.append(1) or real_run(*a, **k))
    before = "int f(int a) {\n  return a+1;\n}\n"
    after = before + "int g(int a) {\n    return a*2;\n}\n"
    formatted = "int f(int a) {\n  return a+1;\n}\nint g(int a) {\n  return a * 2;\n}\n"
    for _ in range(2):
        assert Formatter.for_checkout(root).format_added("x.cpp", before, after) == formatted
    assert len(runs) == 1
    assert Formatter.for_checkout(root).format_added("x.cpp", before, after + "int h(int b){return b;}\n") \
        .endswith("int h(int b) {\n  return b;\n}\n")
    assert len(runs) == 2
    (root / ".clang-format").write_text((root / ".clang-format").read_text().replace("ColumnLimit: 120", "ColumnLimit: 80"))
    Formatter.for_checkout(root).format_added("x.cpp", before, after)
    assert len(runs) == 3


def test_a_checkout_without_clang_format_file_is_left_alone_and_told(tmp_path):
    root = copy_checkout(tmp_path, style=False)
    result = run_cli(["-C", str(root), "new-op", "hypot", "--expr", LONG_EXPR, "--dry-run"])
    assert result.exit_code == 0, result.stderr
    assert "added C++/Metal lines left as the templates write them: the checkout has no .clang-format" in result.stderr
    assert "+    return static_cast<T>(" + LONG_EXPR + ");\n" in result.stdout


def test_with_the_checkouts_clang_format_long_added_lines_are_wrapped_and_nothing_else_moves(tmp_path):
    pytorch_clang_format()
    root = copy_checkout(tmp_path)
    shutil.copy(PYTORCH_CLANG_FORMAT, root / ".clang-format")
    before = snapshot(root)
    result = run_cli(["-C", str(root), "new-op", "hypot", "--expr", LONG_EXPR])
    assert result.exit_code == 0, result.stderr
    after = snapshot(root)
    metal = after[BINARY_METAL].decode()
    assert "    return static_cast<T>(\n        sqrt(a * a + b * b) +\n" in metal
    added, bad = added_lines_to_rewrite(before, after)
    assert added > 0 and bad == []
    for rel in after:
        if before.get(rel) != after[rel] and rel.endswith((".metal", ".mm")):
            old, new = before[rel].decode().splitlines(True), after[rel].decode().splitlines(True)
            # every line that was there is still there, in order: only insertions
            assert {tag for tag, *_ in line_opcodes(old, new)} <= {"equal", "insert"}, rel
    again = run_cli(["-C", str(root), "new-op", "hypot", "--expr", LONG_EXPR])
    assert again.exit_code == 0
    assert snapshot(root) == after


PARAMS_LONG_EXPR = "a <= threshold ? value + 0 * (a + b + a + b + a + b + a + b + a + b + a + b + a) : b"
PARAMS_FORMAT_CASES = [(name.removeprefix("params-"), argv) for _, name, argv in PARAMS_GOLDEN_CASES]
PARAMS_FORMAT_CASES += [("threshold_long_expr", ["threshold", "--expr", PARAMS_LONG_EXPR, "--dtypes", "float,integer"])]


def _kept_lines(before: bytes, after: bytes) -> list[int]:
    """The lines of `before` (0-based) that are still there, unchanged, in `after`."""
    old, new = before.decode().splitlines(True), after.decode().splitlines(True)
    return [i for tag, i1, i2, *_ in line_opcodes(old, new) if tag == "equal" for i in range(i1, i2)]


@pytest.mark.parametrize(("case", "argv"), PARAMS_FORMAT_CASES, ids=[name for name, _ in PARAMS_FORMAT_CASES])
def test_params_cases_formatted_by_the_checkouts_clang_format_touch_only_added_lines_and_rerun_is_a_no_op(tmp_path, case, argv):
    pytorch_clang_format()
    plain, styled = copy_checkout(tmp_path / "plain", style=False), copy_checkout(tmp_path / "styled")
    shutil.copy(PYTORCH_CLANG_FORMAT, styled / ".clang-format")
    before = snapshot(plain)
    assert run_cli(["-C", str(plain), "migrate", *argv]).exit_code == 0
    result = run_cli(["-C", str(styled), "migrate", *argv])
    assert result.exit_code == 0, result.stderr
    unformatted, formatted = snapshot(plain), snapshot(styled)
    del formatted[".clang-format"]
    assert formatted.keys() == unformatted.keys()
    for rel in formatted:  # the lines the change keeps are kept by the formatting too
        assert _kept_lines(before.get(rel, b""), formatted[rel]) == _kept_lines(before.get(rel, b""), unformatted[rel]), rel
    added, bad = added_lines_to_rewrite(before, formatted)
    assert added > 0 and bad == []
    if case == "threshold_long_expr":  # only the long expression's line needed clang-format
        assert formatted[ACTIVATION_METAL] != unformatted[ACTIVATION_METAL]
        assert {rel for rel in formatted if formatted[rel] != unformatted[rel]} == {ACTIVATION_METAL}
    else:  # the templates are clean as they stand: clang-format had nothing to do
        assert formatted == unformatted
    after = snapshot(styled)
    again = run_cli(["-C", str(styled), "migrate", *argv])
    assert again.exit_code == 0, again.stderr
    assert snapshot(styled) == after


def test_a_misformatted_neighbour_of_the_added_lines_stays_as_it_is(tmp_path):
    pytorch_clang_format()
    root = copy_checkout(tmp_path)
    shutil.copy(PYTORCH_CLANG_FORMAT, root / ".clang-format")
    metal = root / ACTIVATION_METAL
    ugly = metal.read_text().replace("struct hardsigmoid_functor {", "struct   hardsigmoid_functor{")
    metal.write_text(ugly)
    result = run_cli(["-C", str(root), "migrate", "mish"])
    assert result.exit_code == 0, result.stderr
    assert "struct   hardsigmoid_functor{" in metal.read_text()


# ---- verify's format check ----------------------------------------------------------------------


def _format_result(root, op):
    from mpsgen.read.checkout import Checkout
    from mpsgen.commands.verify import static_checks

    return next(r for r in static_checks(Checkout(root), (op,)) if r.check == "format")


def test_verify_format_passes_after_migrate_and_names_the_ops_own_misformatted_lines(tmp_path):
    pytorch_clang_format()
    root = copy_checkout(tmp_path)
    shutil.copy(PYTORCH_CLANG_FORMAT, root / ".clang-format")
    assert run_cli(["-C", str(root), "migrate", "mish"]).exit_code == 0
    assert _format_result(root, "mish").status == "passed"
    metal, host = root / ACTIVATION_METAL, root / ACTIVATION_MM
    metal.write_text(metal.read_text()
                     .replace("f * precise::tanh(sp)", "f*precise::tanh(sp)")
                     .replace("struct hardsigmoid_functor {", "struct   hardsigmoid_functor{"))
    host.write_text(host.read_text().replace('lib.exec_unary_kernel(iter, "mish");', 'lib.exec_unary_kernel(iter,"mish");'))
    result = _format_result(root, "mish")
    assert result.status == "failed"
    lines = {(f.location.path, f.location.line) for f in result.findings}
    metal_line = next(i for i, t in enumerate(metal.read_text().splitlines(), 1) if "f*precise" in t)
    host_line = next(i for i, t in enumerate(host.read_text().splitlines(), 1) if 'iter,"mish"' in t)
    assert lines == {(ACTIVATION_METAL, metal_line), (ACTIVATION_MM, host_line)}
    finding = next(f for f in result.findings if f.location.path == ACTIVATION_METAL)
    assert str(finding) == (f"{ACTIVATION_METAL}:{metal_line}: clang-format would rewrite this line "
                            f"(run clang-format -i --lines={metal_line}:{metal_line} {ACTIVATION_METAL} "
                            "(the checkout's .clang-format))")


def test_verify_format_passes_after_migrating_params_ops(tmp_path):
    pytorch_clang_format()
    root = copy_checkout(tmp_path)
    shutil.copy(PYTORCH_CLANG_FORMAT, root / ".clang-format")
    ops = ["softplus", "softplus_backward", "threshold"]
    assert run_cli(["-C", str(root), "migrate", *ops]).exit_code == 0
    result = run_cli(["-C", str(root), "verify", *ops, "--static-only", "--json"])
    assert result.exit_code == 0, result.stdout
    assert {op: _format_result(root, op).status for op in ops} == dict.fromkeys(ops, "passed")


def test_verify_format_is_skipped_with_the_reason_without_a_clang_format_file(tmp_path):
    root = copy_checkout(tmp_path, style=False)
    assert run_cli(["-C", str(root), "migrate", "mish"]).exit_code == 0
    result = _format_result(root, "mish")
    assert (result.status, result.reason) == ("skipped", "the checkout has no .clang-format at its root")


def test_verify_format_is_skipped_with_the_reason_without_an_executable(tmp_path, monkeypatch):
    import mpsgen.edit.clangformat

    root = copy_checkout(tmp_path)
    shutil.copy(FIXTURE_CHECKOUT / "aten/src/ATen/native/native_functions.yaml", root / ".clang-format")
    monkeypatch.setattr(mpsgen.edit.clangformat, "find_executable", lambda: None)
    result = _format_result(root, "logaddexp")
    assert result.status == "skipped"
    assert result.reason == "no clang-format executable found (reinstall mpsgen: clang-format is one of its dependencies)"


def test_without_a_clang_format_executable_nothing_is_written(tmp_path, monkeypatch):
    import mpsgen.edit.clangformat

    root = copy_checkout(tmp_path)
    (root / ".clang-format").write_text("BasedOnStyle: LLVM\n", encoding="utf-8")
    before = snapshot(root)
    monkeypatch.setattr(mpsgen.edit.clangformat, "find_executable", lambda: None)
    result = run_cli(["-C", str(root), "new-op", "hypot"])
    assert result.exit_code == 2, result.output
    assert "no clang-format executable found to format the added lines" in result.stderr
    assert "reinstall mpsgen: clang-format is one of its dependencies" in result.stderr
    assert "Traceback" not in result.stderr
    assert snapshot(root) == before


def test_a_clang_format_that_fails_stops_before_writing(tmp_path):
    root = copy_checkout(tmp_path)
    (root / ".clang-format").write_text("NoSuchOption: 1\n", encoding="utf-8")
    before = snapshot(root)
    result = run_cli(["-C", str(root), "new-op", "hypot"])
    assert result.exit_code == 2, result.output
    assert "cannot format the lines added to aten/src/ATen/native/mps/" in result.stderr
    assert snapshot(root) == before


# ---- the generated shapes themselves ------------------------------------------------------------

SPELLINGS = {"short": ("", ""), "qualified": ("::metal::", "c10::metal::")}
SHAPES = [
    (source, arity, alpha, groups)
    for source in ("expr", "placeholder")
    for arity in (1, 2, 3)
    for alpha in (False, True)
    for groups in (("float", "int2float", "complex"), ("float", "integer", "bool"))
]


@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
@pytest.mark.parametrize(("source", "arity", "alpha", "groups"), SHAPES)
def test_expr_and_placeholder_functors_are_clean_in_both_spellings(source, arity, alpha, groups, spelling):
    from mpsgen.facts.functor import find_body, operands_for, render_functor
    from mpsgen.read.kernelfile import NamespacePrefixes
    from mpsgen.edit.templates import Templates

    executable, style = pytorch_clang_format()
    expr = " + ".join(operands_for(arity, alpha)) if source == "expr" else None
    from mpsgen.facts.bodies import BodyResolution

    body = find_body(BodyResolution(None, ()), op="my_op", name="my_op", arity=arity, alpha=alpha, expr=expr,
                     dtypes=groups)
    choice = render_functor(Templates(), body, name="my_op", arity=arity, alpha=alpha, expr=expr, groups=groups,
                            namespaces=NamespacePrefixes(*SPELLINGS[spelling]))
    assert choice.source == source
    text = choice.text
    found = replacements(text, [(1, text.count("\n"))], executable=executable, style=style, rel="x.metal")
    assert [text.splitlines()[line - 1] for line in lines_to_rewrite(text, found)] == []
    assert "mpsgen" not in text or source == "placeholder"  # no tool stamp in finished code


def test_namespace_prefixes_follow_the_files_using_lines():
    from mpsgen.read.kernelfile import NamespacePrefixes, namespace_prefixes

    assert namespace_prefixes("#include <metal_stdlib>\nusing namespace metal;\nusing namespace c10::metal;\n") == NamespacePrefixes("", "")
    assert namespace_prefixes("using namespace metal;\n") == NamespacePrefixes("", "c10::metal::")
    assert namespace_prefixes("// using namespace metal;\nstruct x {};\n") == NamespacePrefixes()
    assert namespace_prefixes("namespace a {\n  using namespace metal;\n}\n") == NamespacePrefixes()


@pytest.mark.parametrize(("lines", "style"), [
    (["REGISTER_DISPATCH(a_stub, &a_kernel)", "REGISTER_DISPATCH(b_stub, &b_kernel)"], (False, True)),
    (["REGISTER_DISPATCH(a_stub, a_kernel);", "REGISTER_DISPATCH(b_stub, b_kernel);"], (True, False)),
    (["REGISTER_DISPATCH(a_stub, a_kernel);", "REGISTER_DISPATCH(b_stub, b_kernel);", "REGISTER_DISPATCH(c_stub, &c_kernel)"], (True, False)),
    ([], (False, True)),
])
def test_register_dispatch_follows_the_files_majority(lines, style):
    from mpsgen.facts.views import HostView
    from mpsgen.edit.host import dispatch_style

    text = "namespace at::native {\n" + "".join(line + "\n" for line in lines) + "} // namespace at::native\n"
    assert dispatch_style(text, HostView.read(text, "x.mm").direct_registrations()) == style


def test_a_backward_kernel_goes_next_to_its_forward_one(tmp_path):
    root = copy_checkout(tmp_path)
    for argv in (["migrate", "mish"], ["new-op", "glu_jvp", "--expr", "a * b * c"]):
        assert run_cli(["-C", str(root), *argv]).exit_code == 0
    before = snapshot(root)
    result = run_cli(["-C", str(root), "migrate", "mish_backward"])
    assert result.exit_code == 0, result.stderr
    after = snapshot(root)
    host = (root / ACTIVATION_MM).read_text()
    assert host.index("static void mish_kernel(") < host.index("static void mish_backward_kernel(") < host.index("static void glu_jvp_kernel(")
    assert "REGISTER_DISPATCH(mish_stub, mish_kernel);\nREGISTER_DISPATCH(mish_backward_stub, mish_backward_kernel);\n" in host
    metal = (root / ACTIVATION_METAL).read_text()
    assert metal.index("struct mish_functor {") < metal.index("struct mish_backward_functor {") < metal.index("struct glu_jvp_functor {")
    assert "};\n\nstruct mish_backward_functor {" in metal and "};\n\nstruct glu_jvp_functor {" in metal
    for rel in (ACTIVATION_MM, ACTIVATION_METAL):  # insertions only: nothing around them moved
        old, new = before[rel].decode().splitlines(True), after[rel].decode().splitlines(True)
        assert {tag for tag, *_ in line_opcodes(old, new)} == {"equal", "insert"}


# ---- the params shapes (stubs with several scalars) ---------------------------------------------

# Shapes as upstream's stubs with several scalars have them: up to three fields, names up to about
# 25 characters (rrelu_with_noise_backward). Beyond that the layout is clang-format's to choose
# (mpsgen runs it on the added lines where the checkout has a .clang-format).
PARAMS_FIELD_SETS = {
    "two_scalars": (("beta", "scalar"), ("threshold", "scalar")),
    "three_optionals": (("nan", "optional"), ("posinf", "optional"), ("neginf", "optional")),
    "scalar_bool_double": (("negative_slope", "scalar"), ("inplace", "bool"), ("lambd", "double")),
    "three_scalars": (("lower_bound", "scalar"), ("upper_bound", "scalar"), ("negative_slope", "scalar")),
    "long_names": (("negative_slope_threshold", "scalar"), ("replacement_value_if_set", "optional")),
}
PARAMS_NAMES = ("my_op", "rrelu_with_noise_backward")
DECLARED = {"scalar": "const Scalar&", "bool": "bool", "optional": "std::optional<double>", "double": "double"}


def _params_spec(name: str, fields: str, arity: int, groups: tuple[str, ...] = ("float",)):
    from mpsgen.facts.params import ParamField, ParamsSpec, camel_case

    made = tuple(ParamField(n, kind, DECLARED[kind]) for n, kind in PARAMS_FIELD_SETS[fields])
    return ParamsSpec(f"{camel_case(name)}Params", made, "aten/src/ATen/native/mps/kernels/Activation.h",
                      f"REGISTER_{name.upper()}_OP", arity, groups)


def _rewritten(text: str, rel: str) -> list[str]:
    executable, style = pytorch_clang_format()
    found = replacements(text, [(1, text.count("\n"))], executable=executable, style=style, rel=rel)
    return [text.splitlines()[line - 1] for line in lines_to_rewrite(text, found)]


@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
@pytest.mark.parametrize("name", PARAMS_NAMES)
@pytest.mark.parametrize("fields", sorted(PARAMS_FIELD_SETS))
@pytest.mark.parametrize("arity", (1, 2))
@pytest.mark.parametrize("groups", (("float",), ("float", "integer")))
def test_params_expr_and_placeholder_functors_are_clean_in_both_spellings(groups, arity, fields, name, spelling):
    from mpsgen.facts.functor import OPERANDS
    from mpsgen.read.kernelfile import NamespacePrefixes
    from mpsgen.facts.paramskernel import find_params_body, render_params_functor
    from mpsgen.edit.templates import Templates

    spec = _params_spec(name, fields, arity)
    namespaces = NamespacePrefixes(*SPELLINGS[spelling])
    # one expression per name a body may read, so every local the template writes is checked
    exprs = [f"{OPERANDS[arity][-1]} + {n}" for n in spec.expr_names] + [None]
    for expr in exprs:
        body = find_params_body(op=name, name=name, params=spec, expr=expr, dtypes=groups)
        choice = render_params_functor(Templates(), body, name=name, params=spec, expr=expr, groups=groups,
                                       namespaces=namespaces)
        assert choice.source == ("placeholder" if expr is None else "expr")
        assert _rewritten(choice.text, "x.metal") == [], expr
        assert "mpsgen" not in choice.text or expr is None  # no tool stamp in finished code


@pytest.mark.parametrize("arity", (1, 2))
@pytest.mark.parametrize("length", range(0, 16))
def test_params_registration_macro_is_laid_out_as_clang_format_lays_it_out(arity, length):
    from mpsgen.facts.paramskernel import registration_macro
    from mpsgen.edit.templates import Templates

    name = "op" + "_ab" * length  # struct, macro and kernel names from 20 to 70 columns
    text = registration_macro(Templates(), _params_spec(name, "two_scalars", arity), name)
    assert _rewritten(text, "x.metal") == []


@pytest.mark.parametrize("name", PARAMS_NAMES)
@pytest.mark.parametrize("fields", sorted(PARAMS_FIELD_SETS))
@pytest.mark.parametrize("arity", (1, 2))
@pytest.mark.parametrize("groups", (("float",), ("float", "integer", "bool")))
def test_params_struct_and_host_kernel_are_clean(groups, arity, fields, name):
    from mpsgen.edit.params import render_host_kernel
    from mpsgen.edit.templates import Templates

    spec = _params_spec(name, fields, arity, groups)
    struct = Templates().render("params_struct.h.j2", struct=spec.struct, fields=spec.fields)
    assert _rewritten(struct, "x.h") == []
    for iterator_type in ("TensorIteratorBase&", "TensorIterator&"):
        host = render_host_kernel(Templates(), function=f"{name}_kernel", iterator_type=iterator_type,
                                  kernel_name=name, params=spec)
        assert _rewritten(host, "x.mm") == [], host
