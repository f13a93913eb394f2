"""The catalog's params bodies (stubs with several scalars: softplus, softplus_backward, threshold,
hardtanh_backward, nan_to_num) compute the CPU kernels' values for every dtype they register.

As in tests/test_catalog.py, the rendered functors are compiled as C++17 against
tests/metal_shim/metal_shim.h, together with the params struct rendered from params_struct.h.j2 and,
for the --expr path, a functor rendered from params_functor_expr.metal.j2. Inputs and params are
converted to the kernel's type first and printed after conversion, so the Python references see what
the body saw. References follow aten/src/ATen/native/cpu/Activation.cpp and UnaryOpsKernel.cpp.
Everything is compiled in both of a kernel file's namespace spellings, and checked against PyTorch's
clang-format in both.
"""

from __future__ import annotations

import math
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

from mpsgen.facts.catalog import load_catalog
from mpsgen.read.metalhost.compiler import PRELUDE_DIR
from mpsgen.facts.paramskernel import BASE_MACROS, PARAMS_TYPES
from mpsgen.facts.params import ParamField
from mpsgen.edit.templates import Templates
from test_catalog import SPELLINGS, USING_LINES

SHIM_DIR = Path(__file__).resolve().parent / "metal_shim"
FIXTURE_CHECKOUT = Path(__file__).resolve().parent.parent / "fixtures" / "pytorch"
NAN = math.nan
INF = math.inf
CATALOG = {op: entry for op, entry in load_catalog().items() if entry.params}
INT_TYPES = PARAMS_TYPES["integer"]
TOLERANCE = {"float": (1e-5, 1e-30), "half": (1e-3, 6e-8), "bfloat": (8e-3, 1e-30)}


# ---- references (double precision, CPU semantics) ------------------------------------------------


FLOAT_EXP_LIMIT = math.log(3.4028234663852886e38)  # exp overflows float beyond this


def ref_softplus(x, beta, threshold):
    z = x * beta
    if math.isnan(z):
        return NAN
    if z > threshold:
        return x
    # CPU computes in float (half/bfloat too): exp overflows to inf past ~88.7, log1p(inf) is inf
    return math.log1p(math.exp(z)) / beta if z < FLOAT_EXP_LIMIT else INF


def ref_softplus_backward(g, x, beta, threshold):
    z = x * beta
    if math.isnan(z):
        return NAN
    if z > threshold:
        return g
    # g * e / (e + 1), e = exp(z); the body writes g / (1 + exp(-z)), equal where CPU's is finite
    return g / (1.0 + math.exp(-z)) if z > -FLOAT_EXP_LIMIT else 0.0


def ref_threshold(x, other, threshold, value):
    return value if x <= threshold else other


def ref_hardtanh_backward(g, x, min_val, max_val):
    return 0.0 if (x <= min_val or x >= max_val) else g


def ref_nan_to_num(x, nan, has_nan, posinf, has_posinf, neginf, has_neginf):
    if math.isnan(x):
        return nan
    if math.isinf(x):
        return posinf if x > 0 else neginf
    return x


@dataclass(frozen=True)
class ParamsCase:
    ref: Callable
    fields: tuple[tuple[str, str], ...]  # (name, kind) in schema order
    rows: list  # operands then the params' values (an optional's value and its flag)
    int_rows: list = ()
    exact: bool = False
    bool_rows: list = ()  # 0/1 operands and params, for bodies that register bool
    complex_rows: list = ()  # complex operands, real params, for bodies that register complex


CASES = {
    "softplus": ParamsCase(
        ref_softplus, (("beta", "scalar"), ("threshold", "scalar")),
        [(0.0, 1.0, 20.0), (1.0, 1.0, 20.0), (-3.0, 1.0, 20.0), (25.0, 1.0, 20.0), (-30.0, 1.0, 20.0),
         (2.0, 2.0, 20.0), (12.0, 2.0, 20.0), (0.5, 0.5, 1.0), (100.0, 1.0, 200.0), (-1e-3, 1.0, 20.0),
         (NAN, 1.0, 20.0), (-INF, 1.0, 20.0), (INF, 1.0, 20.0)],
    ),
    "softplus_backward": ParamsCase(
        ref_softplus_backward, (("beta", "scalar"), ("threshold", "scalar")),
        [(1.0, 0.0, 1.0, 20.0), (2.0, 3.0, 1.0, 20.0), (-1.0, -4.0, 1.0, 20.0), (1.5, 25.0, 1.0, 20.0),
         (1.0, 12.0, 2.0, 20.0), (1.0, -100.0, 1.0, 20.0), (0.5, 100.0, 1.0, 200.0), (1.0, NAN, 1.0, 20.0)],
    ),
    "threshold": ParamsCase(
        ref_threshold, (("threshold", "scalar"), ("value", "scalar")),
        [(0.5, 0.5, 1.0, -2.0), (1.0, 1.0, 1.0, -2.0), (1.5, 7.0, 1.0, -2.0), (-3.0, 4.0, 0.0, 0.0),
         (NAN, NAN, 0.0, 5.0), (-INF, 3.0, 0.0, 5.0), (INF, INF, 0.0, 5.0)],
        int_rows=[(0, 0, 0, 9), (1, 1, 0, 9), (-5, 8, -5, 2), (100, 3, 50, 7), (3, 3, 3, 1)],
        exact=True,
        bool_rows=[(0, 1, 0, 1), (1, 0, 0, 1), (1, 1, 1, 0), (0, 0, 1, 1), (1, 0, 1, 1), (0, 1, 1, 0)],
    ),
    "hardtanh_backward": ParamsCase(
        ref_hardtanh_backward, (("min_val", "scalar"), ("max_val", "scalar")),
        [(2.0, 0.0, -1.0, 1.0), (2.0, -1.0, -1.0, 1.0), (2.0, 1.0, -1.0, 1.0), (2.0, 1.5, -1.0, 1.0),
         (-3.0, -0.5, -1.0, 1.0), (2.0, NAN, -1.0, 1.0), (NAN, 0.5, -1.0, 1.0), (2.0, 5.0, 0.0, 6.0)],
        exact=True,
    ),
    "nan_to_num": ParamsCase(
        ref_nan_to_num, (("nan", "optional"), ("posinf", "optional"), ("neginf", "optional")),
        [(1.5, 0.0, 0, 100.0, 0, -100.0, 0), (NAN, 0.0, 0, 100.0, 0, -100.0, 0),
         (INF, 0.0, 0, 100.0, 1, -100.0, 0), (-INF, 0.0, 0, 100.0, 0, -100.0, 1),
         (NAN, -7.0, 1, 1.0, 1, -1.0, 1), (-0.0, 3.0, 1, 1.0, 1, -1.0, 1)],
        exact=True,
        # each part replaced as a real number
        complex_rows=[(complex(1.5, NAN), 2.0, 1, 100.0, 1, -100.0, 1), (complex(NAN, -INF), 0.0, 0, 9.0, 1, -9.0, 1),
                      (complex(INF, -2.5), 0.0, 0, 100.0, 1, -100.0, 0), (complex(-0.0, 0.0), 3.0, 1, 1.0, 1, -1.0, 1)],
    ),
}

# --expr bodies compiled too: the template's float and integer overloads.
EXPRS = {
    "threshold_expr": ("threshold", "a <= threshold ? value : b", ("float", "integer")),
}


def _fields(case: ParamsCase) -> tuple[ParamField, ...]:
    return tuple(ParamField(name, kind, "") for name, kind in case.fields)


def _struct(op: str) -> str:
    return "".join(part.capitalize() for part in op.split("_")) + "Params"


def _literal(v: float) -> str:
    if math.isnan(v):
        return "NAN"
    if math.isinf(v):
        return "INFINITY" if v > 0 else "-INFINITY"
    return repr(float(v))


def _arity(op: str) -> int:
    return CATALOG[op].arity


def _call_block(label: str, functor: str, struct: str, op: str, group: str, rows, type_name: str) -> list[str]:
    """C++ that calls the functor on each row and prints `value <label> <group> <type> <index> ...`."""
    case = CASES[op]
    arity = _arity(op)
    out = []
    for index, row in enumerate(rows):
        operands, values = row[:arity], row[arity:]
        lines = [f"    const {type_name} o{k} = make<{type_name}>({_literal(complex(v).real)}, {_literal(complex(v).imag)});"
                 for k, v in enumerate(operands)]
        # complex kernels take the struct for float (real scalars), as they are registered
        params_type = "float" if group == "complex" else type_name
        inits = []
        pos = 0
        for _, kind in case.fields:
            if kind == "optional":
                inits += [f"make<{params_type}>({_literal(values[pos])}, 0.0)", "true" if values[pos + 1] else "false"]
                pos += 2
            else:
                inits.append(f"make<{params_type}>({_literal(values[pos])}, 0.0)")
                pos += 1
        lines.append(f"    const {struct}<{params_type}> p{{{', '.join(inits)}}};")
        args = ", ".join(f"o{k}" for k in range(arity))
        lines.append(f"    const auto r = {functor}{{}}({args}, p);")
        lines.append(f'    std::printf("value {label} {group} {type_name} %s {index}", type_name<std::decay_t<decltype(r)>>());')
        lines += [f"    emit(o{k});" for k in range(arity)]
        for name, kind in case.fields:  # in the rows' order: an optional's value, then its flag
            lines.append(f"    emit(p.{name});")
            if kind == "optional":
                lines.append(f"    emit(p.has_{name});")
        lines += ["    emit(r);", '    std::printf("\\n");']
        out.append("  {\n" + "\n".join(lines) + "\n  }")
    return out


def render_struct(op: str) -> str:
    return Templates().render("params_struct.h.j2", struct=_struct(op), fields=_fields(CASES[op]))


def render_body(op: str, spelling: str) -> str:
    entry = CATALOG[op]
    return Templates().render(entry.template_name, name=op, params=_struct(op), groups=entry.supports,
                              **SPELLINGS[spelling].template_vars())


def render_expr(label: str, spelling: str) -> str:
    op, expr, groups = EXPRS[label]
    case = CASES[op]
    used = {name for name, _ in case.fields} | {"a", "b", "x"}
    return Templates().render("params_functor_expr.metal.j2", name=label, expr=expr,
                              operands=("a", "b") if _arity(op) == 2 else ("x",), struct=_struct(op),
                              fields=_fields(case), used=used, groups=groups, **SPELLINGS[spelling].template_vars())


def render_macro(op: str) -> str:
    return Templates().render("params_register_macro.metal.j2", macro=f"REGISTER_{op.upper()}_OP",
                              struct=_struct(op), base=BASE_MACROS[_arity(op)], name=op)


def build_program(spelling: str = "qualified") -> str:
    parts = ['#include "harness.h"', ""]
    if spelling == "short":
        parts.append(USING_LINES)
    for op in sorted(CATALOG):
        parts.append(render_struct(op))
        parts.append(render_body(op, spelling))
    for label in sorted(EXPRS):
        parts.append(render_expr(label, spelling))
    body = ["int main() {"]
    for op, entry in sorted(CATALOG.items()):
        case = CASES[op]
        for group in entry.supports:
            rows = {"float": case.rows, "bool": case.bool_rows, "complex": case.complex_rows}.get(group, case.int_rows)
            assert rows, f"{op}: no rows for {group}"
            for type_name in PARAMS_TYPES[group]:
                body += _call_block(op, f"{op}_functor", _struct(op), op, group, rows, type_name)
    for label, (op, _expr, groups) in sorted(EXPRS.items()):
        case = CASES[op]
        for group in groups:
            rows = {"float": case.rows, "bool": case.bool_rows}.get(group, case.int_rows)
            for type_name in PARAMS_TYPES[group]:
                body += _call_block(label, f"{label}_functor", _struct(op), op, group, rows, type_name)
    body += ["  return 0;", "}"]
    return "\n".join(parts + body) + "\n"


@dataclass(frozen=True)
class Result:
    label: str
    group: str
    in_type: str
    out_type: str
    index: int
    numbers: tuple
    imag: tuple = ()  # the imaginary parts (complex types)


_SHIM_RESULTS: dict[str, object] = {}  # spelling -> shim_results' result: pytest may set the fixture up again


@pytest.fixture(scope="module", params=sorted(SPELLINGS))
def shim_results(request, tmp_path_factory):
    """The rendered params bodies compiled and run, once per namespace spelling (the short one under
    the `using namespace` lines a kernel file would have), once per process (as test_catalog's
    shim_run)."""
    if request.param not in _SHIM_RESULTS:
        _SHIM_RESULTS[request.param] = _compile_and_run_shim(request.param, tmp_path_factory)
    return _SHIM_RESULTS[request.param]


def _compile_and_run_shim(spelling: str, tmp_path_factory):
    compiler = shutil.which("g++")
    if compiler is None:
        from support import missing

        missing("g++ is not installed: the functor bodies cannot be compiled and run without it")
    work = tmp_path_factory.mktemp(f"params-shim-{spelling}")
    source = work / "params.cpp"
    source.write_text(build_program(spelling), encoding="utf-8")
    binary = work / "params"
    built = subprocess.run(
        [compiler, "-std=c++17", "-O1", "-Wall", "-Werror=double-promotion", "-Werror=float-conversion",
         "-Wno-type-limits", "-Wno-bool-operation", "-Wno-int-in-bool-context", "-Wno-unused-function",
         f"-I{SHIM_DIR}", f"-I{PRELUDE_DIR}", f"-I{FIXTURE_CHECKOUT}", str(source), "-o", str(binary)],
        capture_output=True, text=True,
    )
    assert built.returncode == 0, f"compiling the rendered params functors failed:\n{built.stderr[:6000]}"
    ran = subprocess.run([str(binary)], capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0, ran.stderr
    results = []
    for line in ran.stdout.splitlines():
        _, label, group, in_type, out_type, index, *numbers = line.split()
        values = tuple(float(numbers[i]) for i in range(0, len(numbers), 2))  # real parts
        imag = tuple(float(numbers[i]) for i in range(1, len(numbers), 2))
        results.append(Result(label, group, in_type, out_type, int(index), values, imag))
    return results


# a complex type's parts are compared as its component type
COMPLEX_TYPES = {"float2": "float", "half2": "half"}


def _ok(got: float, want: float, type_name: str, exact: bool) -> bool:
    if math.isnan(want):
        return math.isnan(got)
    if exact or type_name in INT_TYPES or type_name == "bool":
        return got == want and (want != 0 or math.copysign(1, got) == math.copysign(1, want))
    if math.isinf(want):
        return got == want
    rtol, atol = TOLERANCE[type_name]
    return abs(got - want) <= atol + rtol * abs(want)


def test_every_params_body_has_a_value_table():
    assert sorted(CASES) == sorted(CATALOG)
    for op, entry in CATALOG.items():
        assert tuple(name for name, _ in CASES[op].fields) == entry.params


@pytest.mark.parametrize("label", sorted(CATALOG) + sorted(EXPRS))
def test_params_body_computes_the_cpu_values_for_every_registered_type(shim_results, label):
    op = EXPRS[label][0] if label in EXPRS else label
    case = CASES[op]
    groups = EXPRS[label][2] if label in EXPRS else CATALOG[op].supports
    results = [r for r in shim_results if r.label == label]
    expected = {(g, t) for g in groups for t in PARAMS_TYPES[g]}
    assert {(r.group, r.in_type) for r in results} == expected
    failures = []
    for r in results:
        assert r.out_type == r.in_type, f"{label}: {r.in_type} in, {r.out_type} out"
        *args, got = r.numbers
        if r.in_type in COMPLEX_TYPES:  # each part of the operands through the real reference
            *args_imag, got_imag = r.imag
            arity = _arity(op)
            want_imag = case.ref(*args_imag[:arity], *args[arity:])
            if not _ok(got_imag, want_imag, COMPLEX_TYPES[r.in_type], case.exact):
                failures.append(f"{label} {r.in_type} imaginary part {tuple(args_imag)} -> {got_imag!r}, want {want_imag!r}")
        want = case.ref(*args)
        if r.in_type in INT_TYPES:
            want = float(int(want))
        elif r.in_type == "bool":
            want = float(bool(want))
        if not _ok(got, want, COMPLEX_TYPES.get(r.in_type, r.in_type), case.exact):
            failures.append(f"{label} {r.in_type} {tuple(args)} -> {got!r}, want {want!r}")
    assert not failures, "\n".join(failures)


# ---- formatting ----------------------------------------------------------------------------------


def _lines_clang_format_rewrites(text: str, rel: str) -> list[str]:
    from mpsgen.edit.clangformat import lines_to_rewrite, replacements
    from support import pytorch_clang_format

    executable, style = pytorch_clang_format()
    found = replacements(text, [(1, text.count("\n"))], executable=executable, style=style, rel=rel)
    return [text.splitlines()[line - 1] for line in lines_to_rewrite(text, found)]


@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
@pytest.mark.parametrize("label", sorted(CATALOG) + sorted(EXPRS))
def test_params_body_is_clean_under_pytorchs_clang_format_in_both_spellings(label, spelling):
    text = render_expr(label, spelling) if label in EXPRS else render_body(label, spelling)
    assert _lines_clang_format_rewrites(text, f"{label}.metal") == []


@pytest.mark.parametrize("op", sorted(CATALOG))
def test_params_struct_and_registration_macro_are_clean_under_pytorchs_clang_format(op):
    assert _lines_clang_format_rewrites(render_struct(op), f"kernels/{op}.h") == []
    assert _lines_clang_format_rewrites(render_macro(op), f"{op}.metal") == []


@pytest.mark.parametrize("label", sorted(CATALOG))
def test_params_body_spells_names_as_the_kernel_file_does(label):
    short, qualified = render_body(label, "short"), render_body(label, "qualified")
    assert "metal::" not in short
    assert "::metal::enable_if_t<c10::metal::is_scalar_" in qualified
