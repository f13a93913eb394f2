"""Registrations through the kernel file's own list macros (issue 19): a new op joins a macro that
registers a list of ops per dtype (or per dtype pair) when what the macro's calls register is
exactly some of the op's dtype groups; the rest stays explicit. Exact edited text (goldens of the
diff), the compiler's reading of the result, clang-format, a second plan changing nothing."""

from __future__ import annotations

import difflib
import subprocess
from pathlib import Path

import pytest

from mpsgen.edit.clangformat import find_executable
from mpsgen.read.cpp import mask_code
from mpsgen.facts.views import functor_spans
from mpsgen.edit.kernel import add_to_list_macro, find_list_macros, plan_kernel
from mpsgen.facts.choice import registrations_for
from mpsgen.read.kernelfile import read_kernel_file
from mpsgen.read.metalread import read_kernel

from support import FIXTURE_CHECKOUT, assert_golden, copy_checkout, run_cli, snapshot

DATA = Path(__file__).resolve().parent / "data" / "listmacro" / "ListMacros.metal"
REL = "aten/src/ATen/native/mps/kernels/ListMacros.metal"
MACROS = frozenset({"REGISTER_UNARY_OP", "REGISTER_UNARY_ALPHA_OP"})

# name: (functor, dtype groups, the macros that take it)
CASES = {
    "sorted_list_in_order": ("chi", ("float",), ["REGISTER_SORTED_KERNELS"]),
    "unsorted_list_at_the_end": ("omega", ("int2float",), ["REGISTER_PROMOTING_KERNELS"]),
    "per_dtype_macro": ("nu", ("complex",), ["REGISTER_COMPLEX_KERNELS"]),
    "three_macros_for_three_groups": ("xi", ("float", "int2float", "complex"),
                                      ["REGISTER_SORTED_KERNELS", "REGISTER_PROMOTING_KERNELS",
                                       "REGISTER_COMPLEX_KERNELS"]),
    "macro_called_under_if_is_declined": ("rho", ("integer",), []),
    "float_in_the_macro_integer_explicit": ("sigma", ("float", "integer"), ["REGISTER_SORTED_KERNELS"]),
    "no_macro_matches": ("tau", ("bool",), []),
}


def functor_text(name: str) -> str:
    return f"struct {name}_functor {{\n  template <typename T>\n  inline T operator()(const T x) {{\n    return x;\n  }}\n}};\n"


def plan(text: str, functor: str, groups: tuple[str, ...]):
    """The kernel step's plan: functors as the pipeline passes them (a macro-written one at its call)."""
    registrations = registrations_for(functor, 1, False, groups, MACROS, REL)
    masked = mask_code(text)
    functors = functor_spans(text, masked, read_kernel_file(text, REL, masked).functors, read_kernel(text, REL, read))
    reading = read_kernel(text, REL, read)
    return plan_kernel(text, REL, functor, functor_text(functor), registrations, functors=functors,
                       reading=reading), registrations


def read(rel: str) -> str | None:
    path = FIXTURE_CHECKOUT / rel
    return path.read_text(encoding="utf-8") if path.is_file() else None


def unified(before: str, after: str) -> str:
    return "".join(difflib.unified_diff(before.splitlines(True), after.splitlines(True), "a/" + REL, "b/" + REL))


@pytest.mark.parametrize("case", sorted(CASES))
def test_registrations_join_the_list_macros_that_fit(case):
    functor, groups, macros = CASES[case]
    before = DATA.read_text(encoding="utf-8")
    change, registrations = plan(before, functor, groups)
    assert_golden(unified(before, change.text), f"listmacro/{case}.diff")
    # the compiler's reading: the op is registered for exactly its groups' pairs, nothing else moved
    old, new = read_kernel(before, REL, read), read_kernel(change.text, REL, read)
    assert not new.errors
    assert new.pairs(functor) == {(reg.args[1], reg.args[2]) for reg in registrations}
    assert {f: old.pairs(f) for f in old.functors} == {f: new.pairs(f) for f in old.functors}
    # the summary says which macro took it, at the entry's line of the new text
    lines = change.text.splitlines()
    through = [c for c in change.changes if c.kind == "register" and " through " in c.detail]
    assert [c.detail.split(" through ")[1].split(" (")[0] for c in through] == macros
    for c in through:
        assert lines[c.location.line - 1].strip().startswith(c.detail.split(" registers ")[0])
    explicit = [c for c in change.changes if c.kind == "register" and " through " not in c.detail]
    assert len(explicit) == len(registrations) - sum(len(m.registered_args()) for m in find_list_macros(before)
                                                     if m.name in macros)
    # a second plan adds nothing
    again, _ = plan(change.text, functor, groups)
    assert again.text == change.text
    assert not [c for c in again.changes if c.kind == "register"]


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_edited_file_is_clean_under_clang_format(case):
    executable = find_executable()
    if executable is None:
        pytest.skip("no clang-format executable (it is a dependency of mpsgen: reinstall)")
    functor, groups, _ = CASES[case]
    text = plan(DATA.read_text(encoding="utf-8"), functor, groups)[0].text
    style = FIXTURE_CHECKOUT / ".clang-format"
    formatted = subprocess.run([executable, f"--style=file:{style}", "--assume-filename=x.cpp"],
                               input=text, capture_output=True, text=True, check=True).stdout
    assert formatted == text


def test_the_macros_and_why_some_are_declined():
    found = {m.name: m for m in find_list_macros(DATA.read_text(encoding="utf-8"))}
    assert list(found) == ["REGISTER_SORTED_KERNELS", "REGISTER_PROMOTING_KERNELS", "REGISTER_COMPLEX_KERNELS",
                           "REGISTER_INTEGER_KERNELS"]  # PASS_THROUGH_FUNCTOR writes a functor: not a list
    assert found["REGISTER_PROMOTING_KERNELS"].registered_args() == {
        (t, "float") for t in ("long", "int", "short", "uchar", "char", "bool")}
    assert found["REGISTER_COMPLEX_KERNELS"].registered_args() == {("float2", "float2"), ("half2", "half2")}
    assert found["REGISTER_INTEGER_KERNELS"].declined == "called under #ifndef at line 73"
    assert not any(m.declined for name, m in found.items() if name != "REGISTER_INTEGER_KERNELS")
    # bfloat's call is under a Metal version condition: it counts when the compiler takes it
    sorted_list = found["REGISTER_SORTED_KERNELS"]
    assert sorted_list.version_calls == (39,) and ("bfloat", "bfloat") in sorted_list.registered_args()
    assert sorted_list.usable(None) == "called under #if at line 39"
    assert sorted_list.usable(read_kernel(DATA.read_text(encoding="utf-8"), REL, read)) == ""


def test_a_call_under_a_metal_version_the_compiler_does_not_take_declines_the_list():
    text = ("#include <c10/metal/indexing.h>\n"
            "#define L(T)                 \\\n  REGISTER_UNARY_OP(a, T, T); \\\n  REGISTER_UNARY_OP(b, T, T)\n\n"
            "L(float);\n#if __METAL_VERSION__ < 310\nL(half);\n#else\nL(bfloat);\n#endif\n")
    (macro,) = find_list_macros(text)
    assert macro.declined == "called under #else at line 10"
    text = text.replace("#else\nL(bfloat);\n", "")
    (macro,) = find_list_macros(text)
    assert macro.version_calls == (8,)
    assert macro.usable(read_kernel(text, REL, read)) == "called under #if at line 8, which Metal 3.1 does not compile"
    change = plan_kernel(text, REL, "c", "", registrations_for("c", 1, False, ("float",), MACROS, REL),
                         reading=read_kernel(text, REL, read))
    assert "REGISTER_UNARY_OP(c, T, T)" not in change.text and "REGISTER_UNARY_OP(c, half, half);" in change.text


@pytest.mark.parametrize(("text", "why"), [
    ("#define L(T) \\\n  REGISTER_UNARY_OP(a, T, T); \\\n  REGISTER_UNARY_OP(b, T, T)\n\nL(float);\nL(float);\n#define L(T) x\n",
     "defined more than once"),
    ("#define L(T) \\\n  REGISTER_UNARY_OP(a, T, T); \\\n  REGISTER_UNARY_OP(b, T, T)\n\nL(float);\nOTHER(L);\n",
     "used other than by top-level calls"),
    ("#if __METAL_VERSION__ >= 310\n#define L(T) \\\n  REGISTER_UNARY_OP(a, T, T); \\\n  REGISTER_UNARY_OP(b, T, T)\n"
     "#endif\nL(float);\n", "defined under #if"),
    ("#define L(T) \\\n  REGISTER_UNARY_OP(a, T, T); \\\n  REGISTER_UNARY_OP(b, T, T)\n", "never called"),
])
def test_a_macro_whose_calls_cannot_be_read_plainly_is_declined(text, why):
    assert [m.declined for m in find_list_macros(text)][:1] == [why]


@pytest.mark.parametrize("text", [
    # one entry is no list; entries of two REGISTER macros; different dtype arguments; fixed dtypes
    "#define L(T) \\\n  REGISTER_UNARY_OP(a, T, T)\nL(float);\n",
    "#define L(T) \\\n  REGISTER_UNARY_OP(a, T, T); \\\n  REGISTER_BINARY_OP(b, T, T)\nL(float);\n",
    "#define L(T) \\\n  REGISTER_UNARY_OP(a, T, T); \\\n  REGISTER_UNARY_OP(b, T, float)\nL(float);\n",
    "#define L(T) \\\n  REGISTER_UNARY_OP(a, float, float); \\\n  REGISTER_UNARY_OP(b, float, float)\nL(x);\n",
])
def test_what_is_not_a_registration_list(text):
    assert find_list_macros(text) == []


def test_a_block_not_aligned_as_clang_format_aligns_keeps_its_other_lines():
    text = ("#define L(T)   \\\n  REGISTER_UNARY_OP(a, T, T);    \\\n  REGISTER_UNARY_OP(b, T, T)\n\nL(float);\n")
    (macro,) = find_list_macros(text)
    start, end, block = add_to_list_macro(text, macro, "c")
    assert text[:start] + block + text[end:] == (
        "#define L(T)   \\\n  REGISTER_UNARY_OP(a, T, T);    \\\n  REGISTER_UNARY_OP(b, T, T);    \\\n"
        "  REGISTER_UNARY_OP(c, T, T)\n\nL(float);\n")


def test_crlf_file_keeps_its_line_endings():
    text = DATA.read_text(encoding="utf-8").replace("\n", "\r\n")
    change, _ = plan(text, "omega", ("int2float",))
    assert "\r\n" in change.text and "\n" not in change.text.replace("\r\n", "")
    assert ("  REGISTER_UNARY_OP(eta, DTYPE1, DTYPE0);          \\\r\n"
            "  REGISTER_UNARY_OP(omega, DTYPE1, DTYPE0)\r\n\r\nREGISTER_PROMOTING_KERNELS(float, long);\r\n") in change.text


def test_migrate_asinh_joins_the_fixture_macros_and_verify_passes(tmp_path):
    root = copy_checkout(tmp_path)
    result = run_cli(["-C", str(root), "migrate", "asinh", "--format", "plain"])
    assert result.exit_code == 0, result.stderr
    assert "registers asinh through INSTANTIATE_MATH_UNARY_KERNELS (9 dtype pairs)" in result.stdout
    assert "registers asinh through REGISTER_COMPLEX_SIGN_KERNELS (2 dtype pairs)" in result.stdout
    metal = (root / "aten/src/ATen/native/mps/kernels/UnaryKernel.metal").read_text(encoding="utf-8")
    assert "REGISTER_UNARY_OP(asinh, float" not in metal  # no explicit line left
    verify = run_cli(["-C", str(root), "verify", "asinh"])
    assert verify.exit_code == 0, verify.stdout + verify.stderr
    after = snapshot(root)
    again = run_cli(["-C", str(root), "migrate", "asinh"])
    assert again.exit_code == 0 and "already native Metal" in again.stdout
    assert snapshot(root) == after


def test_an_op_taken_out_of_the_fixture_list_goes_back_into_it(tmp_path):
    """As on the real-size checkout with upstream's lists: angle out of INSTANTIATE_MATH_UNARY_KERNELS
    (and its host line and the yaml's MPS key) comes back through the list, last since the list is
    unsorted; its existing functor is kept and needs nothing filled in."""
    root = copy_checkout(tmp_path)
    metal = root / "aten/src/ATen/native/mps/kernels/UnaryKernel.metal"
    host = root / "aten/src/ATen/native/mps/operations/UnaryKernel.mm"
    yaml = root / "aten/src/ATen/native/native_functions.yaml"
    entry = "  REGISTER_UNARY_OP(angle, DTYPEI, DTYPEO);            \\\n"
    original = metal.read_text(encoding="utf-8")
    metal.write_text(original.replace(entry, ""), encoding="utf-8")
    host.write_text(host.read_text(encoding="utf-8").replace("REGISTER_UNARY_TI_DISPATCH(angle);\n", ""), encoding="utf-8")
    yaml.write_text(yaml.read_text(encoding="utf-8").replace("CPU, CUDA, MPS: angle", "CPU, CUDA: angle"), encoding="utf-8")
    result = run_cli(["-C", str(root), "new-op", "angle", "--dtypes", "float,int2float", "--format", "plain"])
    assert result.exit_code == 0, result.stderr
    assert "registers angle through INSTANTIATE_MATH_UNARY_KERNELS (9 dtype pairs)" in result.stdout
    assert "fill in the body" not in result.stdout
    assert metal.read_text(encoding="utf-8") == original.replace(entry, "").replace(
        "  REGISTER_UNARY_OP(sqrt, DTYPEI, DTYPEO)\n",
        "  REGISTER_UNARY_OP(sqrt, DTYPEI, DTYPEO);             \\\n  REGISTER_UNARY_OP(angle, DTYPEI, DTYPEO)\n")
    verify = run_cli(["-C", str(root), "verify", "angle"])
    assert verify.exit_code == 0, verify.stdout + verify.stderr
    after = snapshot(root)
    again = run_cli(["-C", str(root), "new-op", "angle", "--dtypes", "float,int2float"])
    assert again.exit_code == 0, again.stderr
    assert snapshot(root) == after
