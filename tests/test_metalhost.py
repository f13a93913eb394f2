"""The Metal front end for the host compiler: kernel files compile clean with the checkout's own
c10/metal headers, and each kind of defect is reported at the file and line that has it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from mpsgen.read.metalhost.check import compile_metal_file
from mpsgen.read.metalhost.compiler import find_compiler, parse_diagnostics
from mpsgen.read.metalhost.rewrite import double_literals, rewrite_metal
from mpsgen.model import Location
from support import copy_checkout, needs, run_cli, sampled

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "pytorch"
KERNELS = "aten/src/ATen/native/mps/kernels"
BINARY = f"{KERNELS}/BinaryKernel.metal"
FIXTURE_KERNELS = sorted(p.name for p in (FIXTURE / KERNELS).glob("*.metal"))
# Our own kernel files, one per construct of upstream's real files that the host compiler reads
# differently from Metal's (issue 17); tests drop them into a copy of a checkout.
CONSTRUCTS = Path(__file__).resolve().parent / "data" / "metal"
CONSTRUCT_KERNELS = sorted(p.name for p in CONSTRUCTS.glob("*.metal"))

needs_compiler = needs(None if find_compiler()[0] is not None else "no C++ compiler (g++/clang++) on PATH")


# ---- rewrites (no compiler needed) -------------------------------------------------------------


def test_rewrite_turns_metal_spellings_into_prelude_ones_on_the_same_line():
    text = (
        "float a = 0.5 + .25 + 1e-3 + 2.f + 0x1.8p3f + 3; // 0.5 stays in a comment\n"
        'half b = 1.5h + 2h; const char* s = "0.5";\n'
        "v.zw = w.xy; f(v).xy; v.zw(); v.x;\n"
        "void g(constant const char* p);\n"
        "#if __METAL_VERSION__ >= 310\n"
    )
    assert rewrite_metal(text) == (
        "float a = 0.5f + .25f + 1e-3f + 2.f + 0x1.8p3f + 3; // 0.5 stays in a comment\n"
        'half b = 1.5_mpsgen_h + 2_mpsgen_h; const char* s = "0.5";\n'
        "v.zw() = w.xy(); f(v).xy(); v.zw(); v.x;\n"
        "void g(constant char* p);\n"
        "#if __METAL_VERSION__ >= 310\n"
    )


def test_rewrite_blanks_attribute_lists_keeping_lines_and_continuations():
    first = "kernel void k(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]);"
    macro = [
        "#define R(N)                        \\",
        '  template [[host_name(#N "_dense_"  \\',
        '                       "x")]] kernel void f<N>()',
    ]
    out = rewrite_metal("\n".join([first, *macro]) + "\n").split("\n")
    blank = lambda s: " " * len(s)  # noqa: E731
    assert out[0] == first.replace("[[buffer(0)]]", blank("[[buffer(0)]]")).replace(
        "[[thread_position_in_grid]]", blank("[[thread_position_in_grid]]"))
    assert out[1] == macro[0]
    assert out[2] == "  template" + blank(' [[host_name(#N "_dense_"  ') + "\\"
    assert out[3] == blank('                       "x")]]') + " kernel void f<N>()"


def test_rewrite_turns_an_in_class_specialization_into_an_overload():
    text = (CONSTRUCTS / "InClassSpecialization.metal").read_text(encoding="utf-8")
    out = rewrite_metal(text)
    changed = [(n, line) for n, (line, old) in enumerate(zip(out.splitlines(), text.splitlines()), 1) if line != old]
    assert changed == [
        (12, " " * len("  template <>")),
        (16, " " * len("  template <>")),
        (17, "  inline uchar operator()       (const uchar x) {"),
    ]
    # The namespace-scope specialization (which g++ takes) is left as written.
    assert out.count("template <>") == 1 and len(out) == len(text)


def test_double_literals_are_found_in_code_only():
    text = "x = 1.0f * 2.5; // 3.5\ny = 1e5 + 0x1p3 + 7;\n#define K 0.5\n"
    assert double_literals(text) == [(1, "2.5"), (2, "1e5")]


def test_gcc_diagnostics_are_grouped_with_their_macro_notes_and_context():
    output = (
        "In file included from k.metal:1:\n"
        "c10/metal/indexing.h: In instantiation of 'void f()':\n"
        "k.metal:9:1:   required from here\n"
        "c10/metal/indexing.h:12:3: error: static assertion failed: mismatch\n"
        "c10/metal/indexing.h:40:3: note: in expansion of macro 'R_'\n"
        "k.metal:9:1: note: in expansion of macro 'R'\n"
        "k.metal:3:7: error: expected ';' before '}' token\n"
    )
    first, second = parse_diagnostics(output)
    assert first.location == Location("c10/metal/indexing.h", 12)
    assert first.message == "static assertion failed: mismatch"
    assert [loc for loc, _ in first.notes] == [Location("k.metal", 9), Location("c10/metal/indexing.h", 40),
                                               Location("k.metal", 9)]
    assert (second.location, second.notes) == (Location("k.metal", 3), ())


# ---- zero false positives ----------------------------------------------------------------------


@needs_compiler
@pytest.mark.parametrize("name", FIXTURE_KERNELS)
def test_every_fixture_kernel_file_compiles_clean(name):
    result = compile_metal_file(FIXTURE, f"{KERNELS}/{name}")
    assert (result.status, result.diagnostics) == ("passed", ())


@pytest.fixture(scope="module")
def construct_checkout(tmp_path_factory):
    """The miniature checkout with our construct kernel files (tests/data/metal) added."""
    root = tmp_path_factory.mktemp("constructs")
    shutil.copytree(FIXTURE / "c10", root / "c10")
    shutil.copytree(FIXTURE / KERNELS, root / KERNELS)
    for name in CONSTRUCT_KERNELS:
        shutil.copy(CONSTRUCTS / name, root / KERNELS / name)
    return root


@needs_compiler
@pytest.mark.parametrize("name", CONSTRUCT_KERNELS)
def test_each_construct_of_upstreams_files_compiles_clean(construct_checkout, name):
    result = compile_metal_file(construct_checkout, f"{KERNELS}/{name}")
    assert (result.status, result.diagnostics) == ("passed", ())


# (file, old text, new text, message words): a defect inside each construct is still found at its line.
CONSTRUCT_DEFECTS = [
    ("InClassSpecialization.metal", "return !x;", "return !y;", "'y' was not declared"),
    ("InClassSpecialization.metal", "return static_cast<uchar>(255 - x);", "return static_cast<uchar>(255 - y);",
     "'y' was not declared"),
    ("VectorLimits.metal", "infinity().x;", "infinity().q;", "has no member named 'q'"),
    ("BfloatOverloads.metal", "return x + 1.0f;", "return x + one;", "'one' was not declared"),
    ("MetalVersion.metal", "REGISTER_UNARY_OP(keep, bfloat, bfloat);", "REGISTER_UNARY_OP(keep, bfloat);",
     'macro "REGISTER_UNARY_OP" requires 3 arguments, but only 2 given'),
]


@needs_compiler
@pytest.mark.parametrize(("name", "old", "new", "words"), CONSTRUCT_DEFECTS,
                         ids=[f"{d[0]}:{d[2]}" for d in CONSTRUCT_DEFECTS])
def test_a_defect_in_a_construct_is_reported_at_its_line(construct_checkout, name, old, new, words):
    text = (CONSTRUCTS / name).read_text(encoding="utf-8")
    assert text.count(old) == 1
    line = text[: text.index(old)].count("\n") + 1
    result = compile_metal_file(construct_checkout, f"{KERNELS}/{name}", text=text.replace(old, new, 1))
    messages = [m.replace("‘", "'").replace("’", "'") for loc, m in result.diagnostics]
    assert result.status == "failed"
    assert {loc for loc, _ in result.diagnostics} == {Location(f"{KERNELS}/{name}", line)}, result.diagnostics
    assert any(words in m for m in messages), messages


def test_code_owners_are_the_struct_and_the_calls_that_register_it():
    from mpsgen.read.metalhost.owners import code_owners

    owners = code_owners((CONSTRUCTS / "SharedRegistration.metal").read_text(encoding="utf-8"))
    assert owners.structs == {"twice": ((7, 12),), "thrice": ((14, 19),)}
    # lines 22/23: the registration of each inside REGISTER_BOTH; 25/26: the calls registering both
    assert owners.calls == {"twice": ((22, 22), (25, 25), (26, 26)), "thrice": ((23, 23), (25, 25), (26, 26))}


SHARED = "SharedRegistration.metal"
THRICE_BODY = "inline T operator()(const T x) {\n    return static_cast<T>(x + x + x);"


@needs_compiler
@pytest.mark.parametrize("new", ["inline T operator()(const T x) {\n    return x.nothing;",
                                 "inline T operator()(const T x, const T y) {\n    return static_cast<T>(x + y);"],
                         ids=["error-in-body", "error-in-header-through-the-shared-call"])
def test_a_problem_of_one_of_two_functors_registered_together_is_that_ones(construct_checkout, new):
    from mpsgen.read.metalhost.owners import code_owners, diagnostic_owners

    text = (CONSTRUCTS / SHARED).read_text(encoding="utf-8")
    assert text.count(THRICE_BODY) == 1
    text = text.replace(THRICE_BODY, new)
    result = compile_metal_file(construct_checkout, f"{KERNELS}/{SHARED}", text=text)
    assert result.status == "failed" and len(result.contexts) == len(result.diagnostics)
    owners = code_owners(text)
    assert {diagnostic_owners(c.lines, owners, c.functors) for c in result.contexts} == {("thrice",)}


@pytest.fixture(scope="module")
def real_size_checkout(real_torch_files_older, tmp_path_factory):
    """The fixture's kernel files with the 2.13.0 wheel's own c10/metal headers (the prelude does not
    yet model what 2.15's headers use: `metal::vec`, `metal::fast::divide`, float8), plus one file that
    includes every one of those headers."""
    root = tmp_path_factory.mktemp("real-metal")
    shutil.copytree(FIXTURE / KERNELS, root / KERNELS)
    for name in CONSTRUCT_KERNELS:
        shutil.copy(CONSTRUCTS / name, root / KERNELS / name)
    shutil.copytree(real_torch_files_older / "c10" / "metal", root / "c10" / "metal")
    headers = sorted(p.name for p in (root / "c10" / "metal").glob("*.h"))
    assert len(headers) >= 9
    text = "".join(f"#include <c10/metal/{h}>\n" for h in headers)
    (root / KERNELS / "EveryHeader.metal").write_text(
        text + "#include <metal_stdlib>\nusing namespace metal;\nusing namespace c10::metal;\n", encoding="utf-8")
    return root


@needs_compiler
@pytest.mark.realfiles
# Run in every run (CI runs all eleven): the largest fixture file, a construct of upstream's, and
# every real header at once.
@pytest.mark.parametrize("name", sampled(FIXTURE_KERNELS + CONSTRUCT_KERNELS + ["EveryHeader.metal"],
                                         ("BinaryKernel.metal", "InClassSpecialization.metal", "EveryHeader.metal")))
def test_kernel_files_compile_clean_with_the_real_c10_metal_headers(real_size_checkout, name):
    result = compile_metal_file(real_size_checkout, f"{KERNELS}/{name}")
    assert (result.status, result.diagnostics) == ("passed", ())


# ---- seeded defects ----------------------------------------------------------------------------

HALF_WRONG = """struct halfwrong_functor {
  template <typename T, enable_if_t<!is_same_v<T, half>, bool> = true>
  inline T operator()(const T a, const T b) {
    return a + b;
  }
  template <typename T, enable_if_t<is_same_v<T, half>, bool> = true>
  inline float operator()(const T a, const T b) {
    return float(a) + float(b);
  }
};
REGISTER_FLOAT_BINARY_OP(halfwrong);
"""

PARAMS = """struct shift_params {
  float offset;
  float scale;
};
struct shift_functor {
  template <typename T>
  inline T operator()(const T x, const shift_params p) {
    return static_cast<T>(float(x) * p.scale + p.ofset);
  }
};
"""

# (name, old text, new text, line of the defect relative to the first line of `new`, message words)
DEFECTS = [
    ("misspelled-function", "return c10::metal::logaddexp(a, b);", "return c10::metal::logaddexpp(a, b);", 0,
     "logaddexpp"),
    ("register-wrong-arity", "REGISTER_FLOAT_BINARY_OP(maximum);", "REGISTER_BINARY_OP(maximum, float);", 0,
     'macro "REGISTER_BINARY_OP" requires 3 arguments, but only 2 given'),
    ("missing-semicolon", "    return a & b;", "    return a & b", 0, "expected ';'"),
    ("double-variable", "return c10::metal::max(a, b);", "double d = 1; return c10::metal::max(a, b);", 0,
     'poisoned "double"'),
    ("half-returns-float", "// Groups of registrations", None, 0, "Output dtype mismatch for binary op halfwrong and input half"),
    ("undefined-params-field", "// Bitwise and comparison", PARAMS, 7, "has no member named 'ofset'"),
]


def _seed(old: str, new: str | None) -> tuple[str, int]:
    text = (FIXTURE / BINARY).read_text(encoding="utf-8")
    assert text.count(old) == 1, old
    if new is None:  # appended at the end, the registration is its last line
        text = text + HALF_WRONG
        return text, text.count("\n")
    line = text[: text.index(old)].count("\n") + 1
    return text.replace(old, new, 1), line


@needs_compiler
@pytest.mark.parametrize(("name", "old", "new", "offset", "words"), DEFECTS, ids=[d[0] for d in DEFECTS])
def test_seeded_defect_is_reported_at_its_line(name, old, new, offset, words):
    text, line = _seed(old, new)
    result = compile_metal_file(FIXTURE, BINARY, text=text)
    assert result.status == "failed"
    where = Location(BINARY, line + offset)
    messages = [m.replace("‘", "'").replace("’", "'") for loc, m in result.diagnostics if loc == where]
    assert any(words in m for m in messages), result.diagnostics
    # Nothing is blamed on a line that is fine.
    assert {loc for loc, _ in result.diagnostics} == {where}


@needs_compiler
def test_an_error_in_a_checkout_header_names_the_header(tmp_path):
    root = copy_checkout(tmp_path)
    header = root / "c10" / "metal" / "special_math.h"
    text = header.read_text(encoding="utf-8")
    line = text[: text.index("const float hi = ::metal::max(fa, fb);")].count("\n") + 1
    broken = text.replace("const float hi = ::metal::max(fa, fb);", "const float hi = ::metal::maxx(fa, fb);", 1)
    # As planned by an edit (mpsgen's own): a failure at the header's line.
    result = compile_metal_file(root, BINARY, texts={"c10/metal/special_math.h": broken})
    assert result.status == "failed"
    assert result.diagnostics[0][0] == Location("c10/metal/special_math.h", line)
    assert "maxx" in result.diagnostics[0][1]
    # As the checkout has it: the file's #include lines alone give the error, so the kernel file is
    # not blamed for it (issue 26: what the host compiler cannot take of upstream's headers); the
    # reason names the header's line.
    header.write_text(broken, encoding="utf-8")
    result = compile_metal_file(root, BINARY)
    assert (result.status, result.diagnostics) == ("skipped", ())
    assert f"cannot take the checkout's headers (c10/metal/special_math.h:{line}: " in result.reason
    assert "maxx" in result.reason


def test_without_a_compiler_the_file_is_skipped_with_the_reason(monkeypatch):
    monkeypatch.setenv("MPSGEN_CXX", "no-such-compiler-mpsgen")
    result = compile_metal_file(FIXTURE, BINARY)
    assert (result.status, result.diagnostics) == ("skipped", ())
    assert result.reason == "$MPSGEN_CXX names 'no-such-compiler-mpsgen', which is not an executable on PATH"


def test_a_compiler_that_cannot_take_the_prelude_skips_with_the_reason(tmp_path, monkeypatch):
    from mpsgen.read.metalhost.compiler import PRELUDE_DIR

    fake = tmp_path / "old-clang++"
    fake.write_text(f"#!/bin/sh\necho '{PRELUDE_DIR}/mpsgen_metal.h:40:14: error: _Float16 is not supported on this target' >&2\n"
                    "exit 1\n", encoding="utf-8")
    fake.chmod(0o755)
    monkeypatch.setenv("MPSGEN_CXX", str(fake))
    result = compile_metal_file(FIXTURE, BINARY)
    assert (result.status, result.diagnostics) == ("skipped", ())
    assert result.reason == (f"{fake} cannot compile mpsgen's Metal prelude (<mpsgen metal prelude>/mpsgen_metal.h:40: "
                             "_Float16 is not supported on this target); use g++ 12+ or clang++ 15+ ($MPSGEN_CXX)")


# ---- through verify ----------------------------------------------------------------------------


def _verify_metal_compile(root: Path, *extra: str) -> tuple[int, dict]:
    import json

    result = run_cli(["-C", str(root), "verify", "hypot", "--static-only", "--json", *extra])
    code, doc = result.exit_code, json.loads(result.stdout)
    (check,) = [c for c in doc["stages"][0]["checks"] if c["check"] == "metal-compile"]
    return code, check


@pytest.fixture
def hypot_done(tmp_path):
    root = copy_checkout(tmp_path)
    result = run_cli(["-C", str(root), "new-op", "hypot"])
    assert result.exit_code == 0, result.output
    return root


@needs_compiler
def test_verify_reports_a_kernel_that_does_not_compile(hypot_done):
    path = hypot_done / BINARY
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("REGISTER_FLOAT_BINARY_OP(hypot);", "REGISTER_FLOAT_BINARY_OP(hypot, float);"),
                    encoding="utf-8")
    line = text[: text.index("REGISTER_FLOAT_BINARY_OP(hypot);")].count("\n") + 1
    code, check = _verify_metal_compile(hypot_done)
    assert code == 1
    assert check["status"] == "failed"
    assert (check["findings"][0]["path"], check["findings"][0]["line"]) == (BINARY, line)
    assert "passed 2" in check["findings"][0]["message"]


def _seed_other_functor(root: Path) -> tuple[str, int]:
    """maximum's functor (not hypot's) made not to compile; its text and the broken line."""
    path = root / BINARY
    text = path.read_text(encoding="utf-8")
    assert text.count("return c10::metal::max(a, b);") == 1
    text = text.replace("return c10::metal::max(a, b);", "return c10::metal::max(a, no_such_name);", 1)
    path.write_text(text, encoding="utf-8")
    return text, text[: text.index("no_such_name")].count("\n") + 1


@needs_compiler
def test_verify_does_not_fail_an_op_for_another_functors_problem(hypot_done):
    text, line = _seed_other_functor(hypot_done)
    code, check = _verify_metal_compile(hypot_done)
    assert (code, check["status"], check["findings"]) == (0, "passed", [])
    import json

    doc = json.loads(run_cli(["-C", str(hypot_done), "verify", "hypot", "--static-only", "--json"]).stdout)
    (note,) = doc["pre_existing"]
    assert (note["check"], note["path"], note["line"]) == ("metal-compile", BINARY, line)
    assert "no_such_name" in note["message"]
    assert note["hint"] == "pre-existing: in maximum_functor, not hypot's code; verifying that op fails for it"
    # Plain output: the problem on its own line, after the table.
    plain = run_cli(["-C", str(hypot_done), "verify", "hypot", "--static-only", "--format", "plain"])
    assert plain.exit_code == 0
    assert [ln for ln in plain.stdout.splitlines() if "no_such_name" in ln] == [
        f"{BINARY}:{line}: {note['message']} ({note['hint']})"]


@needs_compiler
def test_the_op_a_problem_belongs_to_fails_and_it_is_reported_once(hypot_done):
    import json

    text, line = _seed_other_functor(hypot_done)
    result = run_cli(["-C", str(hypot_done), "verify", "hypot", "maximum", "--static-only", "--json"])
    doc = json.loads(result.stdout)
    assert result.exit_code == 1
    checks = {c["op"]: c for c in doc["stages"][0]["checks"] if c["check"] == "metal-compile"}
    assert checks["hypot"]["status"] == "passed"
    assert checks["maximum"]["status"] == "failed"
    assert [(f["line"], f["hint"]) for f in checks["maximum"]["findings"]] == [
        (line, "fix the kernel file; mpsgen compiled it with the host compiler and its Metal prelude")]
    assert doc["pre_existing"] == []


@needs_compiler
def test_a_problem_in_the_ops_own_functor_fails_it(hypot_done):
    path = hypot_done / BINARY
    text = path.read_text(encoding="utf-8")
    start = text.index("struct hypot_functor")
    body = text.index("return", start)
    line = text[:body].count("\n") + 1
    path.write_text(text[:body] + "return no_such_name;\n    " + text[body:], encoding="utf-8")
    code, check = _verify_metal_compile(hypot_done)
    assert (code, check["status"]) == (1, "failed")
    assert [f["line"] for f in check["findings"]] == [line]
    assert "no_such_name" in check["findings"][0]["message"]


@needs_compiler
def test_unsuffixed_floating_literals_are_float_as_in_metal(hypot_done):
    # Metal reads 0.5, .5, 1e-2 and 2. as float: never a finding, in the op's functor or elsewhere.
    path = hypot_done / BINARY
    text = path.read_text(encoding="utf-8")
    start = text.index("struct hypot_functor")
    body = text.index("return", start)
    path.write_text(text[:body] + "static_assert(is_same_v<decltype(0.5 + .5 + 1e-2 + 2.), float>, \"float\");\n"
                    "    if (a == 0.5) {\n      return b;\n    }\n    " + text[body:], encoding="utf-8")
    code, check = _verify_metal_compile(hypot_done)
    assert (code, check["status"], check["findings"]) == (0, "passed", [])


def test_verify_skips_metal_compile_without_a_compiler_unless_required(hypot_done, monkeypatch):
    monkeypatch.setenv("MPSGEN_CXX", "no-such-compiler-mpsgen")
    code, check = _verify_metal_compile(hypot_done)
    assert (code, check["status"]) == (0, "skipped")
    assert check["reason"].endswith("; --require-metal-compile makes this a failure")
    code, check = _verify_metal_compile(hypot_done, "--require-metal-compile")
    assert (code, check["status"]) == (1, "failed")
    assert (check["findings"][0]["path"], check["findings"][0]["line"]) == (BINARY, 1)


@needs_compiler
def test_prefetched_compiles_are_what_metal_compile_returns(monkeypatch):
    # verify compiles an op set's kernel files together; each is then compiled once, as it stands.
    from mpsgen.read.checkout import Checkout
    from mpsgen.edit.workspace import Workspace
    from mpsgen.facts.views import Views
    from mpsgen.facts import views as views_module

    calls = []
    real = views_module.compile_metal_file

    def counting(root, rel, **kwargs):
        calls.append(rel)
        return real(root, rel, **kwargs)

    monkeypatch.setattr(views_module, "compile_metal_file", counting)  # the name Views calls
    views = Views(Workspace(Checkout(FIXTURE)))
    rels = [f"{KERNELS}/{name}" for name in FIXTURE_KERNELS]
    assert len(rels) >= 2
    views.prefetch_metal_compile(rels)
    assert sorted(calls) == sorted(rels)
    results = [views.metal_compile(rel) for rel in rels]
    assert sorted(calls) == sorted(rels)  # nothing compiled twice
    assert [(r.path, r.status, r.diagnostics) for r in results] == [(rel, "passed", ()) for rel in rels]
