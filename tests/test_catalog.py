"""The functor catalog: entries load and validate, templates render to one functor each, and every
body computes the right values for every dtype group it claims.

There is no Metal compiler here, so the value tests compile the rendered functors as C++17 against
mpsgen's Metal prelude (mpsgen/metalhost/include, the one `verify`'s metal-compile check and `try`
use) and the miniature checkout's c10/metal/utils.h, with the test driver tests/metal_shim/harness.h,
run them over a table of inputs per type, and compare with the references in
mpsgen/tryop/references.py.
"""

from __future__ import annotations

import cmath
import math
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pytest

from mpsgen.facts.catalog import CatalogEntry, load_catalog, lookup
from mpsgen.dtypes import GROUPS, METAL_INPUT_TYPES
from mpsgen.errors import MpsgenError
from mpsgen.read.kernelfile import NamespacePrefixes
from mpsgen.read.metalhost.compiler import PRELUDE_DIR
from mpsgen.edit.templates import Templates
from mpsgen.facts.functor import shared_helpers
from mpsgen.commands.tryop.references import REFERENCES, SCALAR_REFERENCES, ref_acosh, ref_addcdiv, ref_addcmul, ref_asinh, ref_atanh, ref_fmod, ref_frac, ref_hardswish, ref_heaviside, ref_hypot, ref_logaddexp, ref_logical_not, ref_mish, ref_mish_backward, ref_ndtri, ref_nextafter, ref_sgn, ref_sigmoid_backward, ref_pow, ref_sign, ref_tanh_backward, ref_xlogy

SHIM_DIR = Path(__file__).resolve().parent / "metal_shim"  # the test driver, harness.h
FIXTURE_CHECKOUT = Path(__file__).resolve().parent.parent / "fixtures" / "pytorch"
NAN = math.nan
INF = math.inf

# Bodies of params kernels (stubs with several scalars) take a params struct: tests/test_catalog_params.py.
CATALOG = {op: entry for op, entry in load_catalog().items() if not entry.params}

# Metal types a group's registrations take, and what the functor must return for each.
FLOAT_TYPES = METAL_INPUT_TYPES["float"]
INT_TYPES = METAL_INPUT_TYPES["integer"]
COMPLEX_TYPES = METAL_INPUT_TYPES["complex"]
ALL_TYPES = tuple(dict.fromkeys(FLOAT_TYPES + INT_TYPES + COMPLEX_TYPES))


def expected_output_type(group: str, in_type: str, output: str = "") -> str:
    """The output type of a group's registration (`output`: the catalog entry's, e.g. bool)."""
    return output or ("float" if group == "int2float" else in_type)


# (rtol, atol) by output type. half/bfloat results are float results rounded to 11/8 bits; atol is
# (about) the smallest subnormal, so tiny results such as logaddexp(0, -30) are checked relatively.
TOLERANCE = {
    "float": (1e-5, 1e-30),
    "half": (1e-3, 6e-8),
    "bfloat": (8e-3, 1e-30),
    "float2": (1e-5, 1e-30),
    "half2": (1e-3, 6e-8),
}


# ---- references: mpsgen/tryop/references.py (shared with `mpsgen try`) -----------------------


# ---- per-op test tables --------------------------------------------------------------------------

BIN_INTS = [(7, 2), (-7, 2), (7, -3), (-7, -3), (0, 5), (5, 0), (1, 1), (100, 7), (-128, 3)]
UN_INTS = [(-5,), (-1,), (0,), (1,), (2,), (3,), (100,)]


@dataclass(frozen=True)
class OpCase:
    ref: Callable
    real: list
    ints: list = field(default_factory=list)
    complex: list = field(default_factory=list)
    exact: bool = False  # results are exactly representable: compare bit for bit (sign of zero too)
    needs_kind: bool = False  # ref takes the input type's name as last argument
    skip_zero_divisor: bool = False  # no integer rows with b == 0: % 0 traps in C++ (CPU raises)


OPS: dict[str, OpCase] = {
    "atan2": OpCase(
        math.atan2,
        [(1.0, 1.0), (-1.0, -2.0), (0.5, -3.0), (0.0, -1.0), (-0.0, -1.0), (3.0, 0.0), (INF, INF), (NAN, 1.0), (1e-3, 2e3)],
        BIN_INTS,
    ),
    "hypot": OpCase(
        ref_hypot,
        [(3.0, 4.0), (-5.0, -12.0), (1e30, 1e30), (1e-30, 2e-30), (0.0, 0.0), (INF, NAN), (NAN, -INF), (NAN, 1.0), (2.5, 0.0)],
        BIN_INTS,
    ),
    "copysign": OpCase(
        math.copysign,
        [(1.5, -2.0), (-1.5, 2.0), (3.0, -0.0), (-3.0, 0.0), (0.0, -1.0), (INF, -1.0), (2.0, NAN)],
        BIN_INTS,
        exact=True,
    ),
    "xlogy": OpCase(
        ref_xlogy,
        [(2.0, 3.0), (0.0, 0.0), (0.0, NAN), (0.0, -1.0), (1.5, 0.0), (-2.0, 0.5), (3.0, -1.0), (NAN, 2.0), (1e-3, 1e30)],
        BIN_INTS,
    ),
    "logaddexp": OpCase(
        ref_logaddexp,
        [(0.0, 0.0), (1.0, 2.0), (-100.0, -100.5), (0.0, -30.0), (50.0, -50.0), (INF, INF), (-INF, -INF), (-INF, 1.0), (NAN, 1.0), (80.0, 80.0)],
        BIN_INTS,
        complex=[(1 + 2j, 0.5 - 1j), (-3 + 0.25j, -3 - 0.25j), (10 + 1j, -10 + 2j), (0j, 0j), (2 + 3j, 2 + 3j)],
    ),
    "nextafter": OpCase(
        ref_nextafter,
        [(1.0, 2.0), (1.0, 0.0), (-1.0, 0.0), (-1.0, -2.0), (0.0, 1.0), (0.0, -1.0), (-0.0, 0.0), (3.0, 3.0), (NAN, 1.0), (1.0, NAN), (0.1, INF), (65504.0, INF)],
        exact=True,
        needs_kind=True,
    ),
    "fmod": OpCase(
        ref_fmod,
        [(5.5, 2.0), (-5.5, 2.0), (5.5, -2.0), (-4.0, 2.0), (1e10, 3.0), (0.3, 0.1), (1.0, 0.0), (INF, 2.0), (2.0, INF)],
        BIN_INTS,
        exact=True,
        skip_zero_divisor=True,
    ),
    "heaviside": OpCase(
        ref_heaviside,
        [(-2.0, 0.5), (0.0, 0.5), (-0.0, 0.25), (3.0, 0.5), (NAN, 0.5), (0.0, NAN), (-INF, 7.0), (INF, 7.0)],
        BIN_INTS,
        exact=True,
    ),
    "asinh": OpCase(
        ref_asinh,
        [(0.0,), (0.5,), (-2.0,), (1e-4,), (100.0,), (-1e10,), (INF,), (NAN,)],
        UN_INTS,
        # branch cuts (imaginary axis beyond +-i, both signs of a zero real part), tiny, huge, inf, NaN
        complex=[(0.5 + 0.25j,), (-2 + 3j,), (1e-4 - 2e-4j,), (complex(0.0, 2.0),), (complex(-0.0, 2.0),),
                 (complex(0.0, -2.0),), (complex(-0.0, -2.0),), (complex(0.0, 0.5),), (-5 + 0j,), (0.75 + 1j,),
                 (1e10 + 1e10j,), (-3e20 + 1j,), (1e-30 + 1e-30j,), (complex(INF, 1.0),), (complex(1.0, INF),),
                 (complex(NAN, 1.0),)],
    ),
    "acosh": OpCase(
        ref_acosh,
        [(1.0,), (1.5,), (10.0,), (1e10,), (0.5,), (-2.0,), (INF,), (NAN,)],
        UN_INTS,
        # branch cut (real axis below 1, both signs of a zero imaginary part), near 1, tiny, huge, inf, NaN
        complex=[(0.5 + 0j,), (complex(0.5, -0.0),), (-5 + 0j,), (complex(-5.0, -0.0),), (2 + 3j,), (-2 - 3j,),
                 (1 + 1e-3j,), (complex(1.0, 0.0),), (1e-4 + 1e-4j,), (0.25 - 0.5j,), (1e10 - 1e10j,),
                 (complex(-1e20, 1.0),), (complex(INF, 1.0),), (complex(-INF, 1.0),), (complex(NAN, 0.0),)],
    ),
    "atanh": OpCase(
        ref_atanh,
        [(0.0,), (0.5,), (-0.75,), (1e-4,), (1.0,), (-1.0,), (2.0,), (NAN,)],
        UN_INTS,
        # branch cuts (real axis beyond +-1, both signs of a zero imaginary part), tiny, huge, inf, NaN
        complex=[(0.5 + 0.5j,), (complex(2.0, 0.0),), (complex(2.0, -0.0),), (complex(-3.0, 0.0),),
                 (complex(-3.0, -0.0),), (1e-4 - 1e-4j,), (0.875 + 1e-3j,), (-0.5 + 2j,), (1e10 + 1j,),
                 (-1e20 - 1e20j,), (complex(0.0, 1e30),), (complex(INF, 1.0),), (complex(NAN, 1.0),), (complex(NAN, INF),), (complex(-2.0, -INF),)],
    ),
    "logical_not": OpCase(
        ref_logical_not,
        [(0.0,), (-0.0,), (2.5,), (-1e-30,), (INF,), (NAN,)],
        UN_INTS,
        complex=[(0j,), (complex(-0.0, 0.0),), (1 + 0j,), (complex(0.0, -2.0),), (complex(NAN, 0.0),)],
        exact=True,
    ),
    "frac": OpCase(ref_frac, [(2.75,), (-2.75,), (0.5,), (-0.0,), (3.0,), (-3.0,), (1e10,), (INF,), (NAN,)], exact=True),
    "sgn": OpCase(
        ref_sgn,
        [(2.5,), (-0.5,), (0.0,), (-0.0,), (INF,), (-INF,), (NAN,)],
        UN_INTS,
        complex=[(3 + 4j,), (-1 - 1j,), (0j,), (complex(-0.0, -0.0),), (1e-20 + 1e-20j,), (1e20 - 1e20j,), (-2 + 0j,),
                 (complex(0, -5),), (3e38 + 3e38j,), (complex(INF, 1.0),), (complex(NAN, 1.0),)],
    ),
    "sign": OpCase(ref_sign, [(2.5,), (-0.5,), (0.0,), (-0.0,), (INF,), (-INF,), (NAN,)], UN_INTS, exact=True),
    "special_ndtri": OpCase(
        ref_ndtri,
        [(0.5,), (0.975,), (0.025,), (0.02,), (0.03,), (0.01,), (1e-10,), (1e-30,), (0.999,), (0.9999,), (0.3,), (0.0,), (1.0,), (-0.5,), (1.5,), (NAN,)],
        [(0,), (1,), (2,), (-1,)],
    ),
    "sigmoid_backward": OpCase(
        ref_sigmoid_backward,
        [(1.0, 0.5), (2.0, 0.25), (-3.0, 0.9), (0.5, 1e-3), (1.0, 0.0), (NAN, 0.5)],
        complex=[(1 + 1j, 0.5 + 0.5j), (2 - 1j, 0.25 - 0.75j), (-1j, 0.1 + 2j)],
    ),
    "tanh_backward": OpCase(
        ref_tanh_backward,
        [(1.0, 0.5), (2.0, -0.25), (-3.0, 0.9), (0.5, 0.0), (1.0, 1.0), (NAN, 0.5)],
        complex=[(1 + 1j, 0.5 + 0.5j), (2 - 1j, 0.25 - 0.75j), (-1j, 0.1 + 2j)],
    ),
    "mish": OpCase(ref_mish, [(0.0,), (1.0,), (-1.0,), (5.0,), (-10.0,), (30.0,), (100.0,), (-100.0,), (1e-3,), (INF,), (NAN,)]),
    "mish_backward": OpCase(
        ref_mish_backward, [(1.0, 0.0), (1.0, 1.0), (2.0, -1.0), (0.5, 5.0), (1.0, -10.0), (-1.0, 30.0), (1.0, 1e-3)]
    ),
    "hardswish": OpCase(ref_hardswish, [(-4.0,), (-3.0,), (-1.5,), (0.0,), (1.0,), (3.0,), (5.0,), (NAN,)]),
    # through tests/metal_shim/c10_required.h's pow (the body requires c10::metal::pow); integer
    # rows stay in range of every integer type (the shim's loop has no negative-exponent case)
    "pow": OpCase(
        ref_pow,
        [(2.0, 3.0), (9.0, 0.5), (-2.0, 3.0), (-2.0, 0.5), (2.0, -2.0), (0.0, 0.0), (INF, 2.0), (NAN, 0.0),
         (1.0, NAN), (1.5, 10.0)],
        [(2, 3), (5, 0), (0, 4), (7, 1), (1, 5), (3, 2), (2, 6)],
        complex=[(1 + 1j, 2 + 0j), (4 + 0j, 0.5 + 0j), (-1 + 0j, 0.5 + 0j), (3 - 2j, -1 + 0.5j), (0j, 2 + 0j),
                 (0j, -1 + 0j), (0.5 + 0.25j, 1.5 - 1j)],
    ),
    # ternary with the stub's Scalar last (a, b, c, value); integer rows stay within every integer
    # type (uchar included); bool rows are the integer rows as bool (the body's bool cast)
    "addcmul": OpCase(
        ref_addcmul,
        [(1.0, 2.0, 3.0, 1.0), (0.5, -1.5, 4.0, 2.0), (2.0, 3.0, 4.0, 0.0), (-1.0, 0.25, 8.0, -0.5),
         (1e30, 1e10, 1e10, 1.0), (1.0, INF, 0.0, 1.0), (NAN, 1.0, 1.0, 1.0), (1.0, 2.0, NAN, 1.0)],
        [(1, 2, 3, 1), (0, 5, 5, 2), (10, 3, 4, 1), (100, 1, 1, 0), (7, 0, 9, 3), (0, 0, 0, 0)],
        complex=[(1 + 2j, 0.5 - 1j, 3 + 0.25j, 1 + 0j), (-3 + 0.25j, 2 + 3j, -1 - 1j, 0.5 + 0j),
                 (0j, 1 + 1j, 1 - 1j, 2 + 0j), (1 + 1j, 2 - 1j, 0.5 + 0.5j, 0.5 - 2j), (1 + 0j, 0j, 5 + 5j, 1 + 0j)],
    ),
    "addcdiv": OpCase(
        ref_addcdiv,
        [(1.0, 2.0, 4.0, 1.0), (0.5, -1.5, 3.0, 2.0), (2.0, 3.0, 4.0, 0.0), (-1.0, 0.25, 8.0, -0.5),
         (1.0, 1.0, 0.0, 1.0), (1.0, -1.0, 0.0, 1.0), (0.0, 0.0, 0.0, 1.0), (NAN, 1.0, 1.0, 1.0)],
        complex=[(1 + 2j, 0.5 - 1j, 3 + 0.25j, 1 + 0j), (-3 + 0.25j, 2 + 3j, -1 - 1j, 0.5 + 0j),
                 (1 + 1j, 2 - 1j, 0.5 + 4j, 0.5 - 2j), (1 + 1j, 1 + 1j, 0j, 1 + 0j),
                 # a divisor past 1.8e19: |c|^2 overflows float, CPU's scaled quotient does not
                 (0j, 1e20 + 1e20j, 2e20 - 1e20j, 1 + 0j), (0j, 3 + 4j, 1e-20 + 1e-20j, 1 + 0j)],
    ),
}


# ---- the catalog itself --------------------------------------------------------------------------


def test_every_catalogued_op_has_a_value_table():
    assert sorted(OPS) == sorted(CATALOG)


def test_every_catalogued_op_has_the_reference_try_uses():
    # a body taking the stub's Scalar has its reference apart: try compares such kernels with torch only
    assert {op: case.ref for op, case in OPS.items() if not CATALOG[op].alpha} == REFERENCES
    assert {op: case.ref for op, case in OPS.items() if CATALOG[op].alpha} == SCALAR_REFERENCES


def test_required_ops_are_catalogued():
    required = {
        "atan2", "hypot", "copysign", "xlogy", "logaddexp", "nextafter", "fmod", "heaviside", "asinh",
        "acosh", "atanh", "frac", "sgn", "sign", "special_ndtri", "sigmoid_backward", "tanh_backward",
        "mish", "mish_backward", "hardswish",
    }
    assert required <= set(CATALOG)


@pytest.mark.parametrize("op", sorted(CATALOG))
def test_entry_is_consistent(op):
    entry = CATALOG[op]
    assert entry.op == op
    assert set(entry.dtypes) <= set(entry.supports)
    assert all(group in GROUPS for group in entry.supports)
    assert not {"int2float", "integer"} <= set(entry.supports)
    assert entry.template == f"{op}.metal.j2"


def test_defaults_match_upstream_registrations():
    defaults = {op: entry.dtypes for op, entry in CATALOG.items()}
    assert defaults["atan2"] == ("float", "int2float")
    assert defaults["hypot"] == ("float",)
    assert defaults["nextafter"] == ("float",)
    assert defaults["logaddexp"] == ("float", "int2float", "complex")
    assert defaults["fmod"] == ("float", "integer")
    assert defaults["sigmoid_backward"] == ("float", "complex")
    # 2.15 compiles addcmul for float, integer and complex, addcdiv for float and complex
    assert defaults["addcmul"] == ("float", "integer", "complex")
    assert defaults["addcdiv"] == ("float", "complex")
    # and no bool kernel for addcmul (its integer group's bool: CPU has none, 2.15's host refuses it)
    assert {op: entry.not_registered for op, entry in CATALOG.items() if entry.not_registered} == {"addcmul": ("bool",)}
    assert [op for op, entry in CATALOG.items() if entry.alpha] == ["addcmul", "addcdiv"]
    assert {CATALOG[op].arity for op in ("addcmul", "addcdiv")} == {3}


def test_lookup_accepts_the_special_spelling_both_ways():
    assert lookup("ndtri").op == "special_ndtri"
    assert lookup("special_ndtri").op == "special_ndtri"
    assert lookup("special_xlogy").op == "xlogy"
    assert lookup("atan2").op == "atan2"
    assert lookup("relu") is None


def test_lookup_prefers_the_exact_name():
    both = {
        "xlogy": CatalogEntry("xlogy", 2, ("float",), ("float",), "xlogy.metal.j2", "plain"),
        "special_xlogy": CatalogEntry("special_xlogy", 2, ("float",), ("float",), "xlogy.metal.j2", "special"),
    }
    assert lookup("xlogy", both).note == "plain"
    assert lookup("special_xlogy", both).note == "special"


def _write_catalog(tmp_path, body):
    path = tmp_path / "catalog.toml"
    path.write_text(body, encoding="utf-8")
    return path


GOOD = 'arity = 2\ndtypes = ["float"]\nsupports = ["float"]\ntemplate = "atan2.metal.j2"\nnote = "n"\n'


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (GOOD.replace('dtypes = ["float"]', 'dtypes = ["float", "int2float"]'), "not in supports"),
        (GOOD.replace('["float"]\nt', '["double"]\nt'), "unknown dtype group 'double'"),
        (GOOD.replace('"atan2.metal.j2"', '"nope.metal.j2"'), "does not exist"),
        (GOOD.replace("arity = 2", "arity = 4"), "arity 4"),
        (GOOD.replace('note = "n"\n', ""), "missing key 'note'"),
        (GOOD + "extra = 1\n", "unknown key 'extra'"),
        (GOOD.replace('supports = ["float"]', 'supports = ["int2float", "integer"]'), "both register"),
        (GOOD + 'alpha = 1\n', "alpha must be a bool"),
        (GOOD + 'alpha = true\nparams = ["beta"]\n', "a params body takes its scalars in the struct"),
        (GOOD + 'not_registered = ["bool"]\n', "not_registered names 'bool', which none of its groups holds"),
        (GOOD + 'not_registered = "bool"\n', "not_registered must be a list"),
    ],
)
def test_invalid_catalog_is_refused_with_its_location(tmp_path, body, message):
    path = _write_catalog(tmp_path, "# header\n\n[myop]\n" + body)
    with pytest.raises(MpsgenError) as info:
        load_catalog(path)
    assert message in str(info.value)
    assert info.value.location.line == 3


# ---- rendering -----------------------------------------------------------------------------------


# The two ways a kernel file spells Metal's names: under its `using namespace metal;` and
# `using namespace c10::metal;` lines (as upstream kernel files are), or qualified in full.
SPELLINGS = {"qualified": NamespacePrefixes(), "short": NamespacePrefixes("", "")}
USING_LINES = "using namespace metal;\nusing namespace c10::metal;\n"


def render(op: str, spelling: str = "qualified", name: str | None = None) -> str:
    return Templates().render(CATALOG[op].template_name, name=name or op, groups=CATALOG[op].supports,
                              **SPELLINGS[spelling].template_vars())


def _mask_comments(text: str) -> str:
    return re.sub(r"//[^\n]*", "", text)


@pytest.mark.parametrize("op", sorted(CATALOG))
def test_template_renders_exactly_one_functor(op):
    text = render(op)
    code = _mask_comments(text).strip()
    assert code.startswith(f"struct {op}_functor {{"), code[:60]
    assert code.endswith("};")
    depth = 0
    for position, char in enumerate(code):
        depth += {"{": 1, "}": -1}.get(char, 0)
        assert depth >= 0
        if depth == 0 and char == "}":
            assert code[position:] == "};", f"text after the functor's closing brace: {code[position:]!r}"
    assert depth == 0
    assert len(re.findall(r"\bstruct\b", code)) == 1


@pytest.mark.parametrize("op", sorted(CATALOG))
def test_template_uses_the_given_name(op):
    assert render(op, name="other").lstrip().startswith("struct other_functor {")


@pytest.mark.parametrize("op", sorted(CATALOG))
def test_short_spelling_names_nothing_by_namespace_and_qualified_spelling_everything(op):
    short, qualified = render(op, "short"), render(op, "qualified")
    # a c10::metal function the body requires is called qualified in both: under a file's
    # using-directives Metal's own overloads would be chosen (pow: float2 element by element)
    required = "|".join(CATALOG[op].requires) or "(?!)"
    assert "metal::" not in re.sub(rf"\bc10::metal::(?:{required})\(", "(", _mask_comments(short))
    assert re.findall(r"(?<![:\w])(enable_if_t|precise::|is_\w+_v)\b", _mask_comments(qualified)) == []
    assert short != qualified


@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
@pytest.mark.parametrize("op", sorted(CATALOG))
def test_body_is_clean_under_pytorchs_clang_format_in_both_spellings(op, spelling):
    from mpsgen.edit.clangformat import lines_to_rewrite, replacements
    from support import pytorch_clang_format

    executable, style = pytorch_clang_format()
    text = render(op, spelling)
    found = replacements(text, [(1, text.count("\n"))], executable=executable, style=style, rel=f"{op}.metal")
    assert [text.splitlines()[line - 1] for line in lines_to_rewrite(text, found)] == []


@pytest.mark.parametrize("op", sorted(CATALOG))
def test_body_has_no_double_literals(op):
    # Metal has no double: an unsuffixed 0.5 would be float in Metal but double in the shim.
    code = _mask_comments(render(op))
    assert not re.findall(r"(?<![\w.])\d+\.\d*(?:e[+-]?\d+)?(?![\w.])", code)


# ---- compiling and running the bodies ------------------------------------------------------------


def _types_for(group: str) -> tuple[str, ...]:
    return METAL_INPUT_TYPES[group]


def _cases_for(op: str, group: str) -> list[tuple]:
    case = OPS[op]
    if group == "complex":
        rows = case.complex
    elif group in ("int2float", "integer", "bool"):
        rows = case.ints
        if case.skip_zero_divisor:
            rows = [row for row in rows if row[1] != 0]
    else:
        rows = case.real
    return rows


def _cpp_array(name: str, values) -> str:
    def lit(v: float) -> str:
        if math.isnan(v):
            return "NAN"
        if math.isinf(v):
            return "INFINITY" if v > 0 else "-INFINITY"
        return repr(float(v))

    return f"static const double {name}[] = {{{', '.join(lit(v) for v in values)}}};"


def build_program(spelling: str = "qualified") -> str:
    lines = ['#include "harness.h"', '#include "c10_required.h"', ""]
    if spelling == "short":
        lines.append(USING_LINES)
    for op in sorted(CATALOG):
        # the file-scope helpers a complex overload calls, once for the whole program as in a kernel file
        functor = render(op, spelling)
        lines.append(shared_helpers(Templates(), functor, "\n".join(lines), namespaces=SPELLINGS[spelling]) + functor)
    lines.append("int main() {")
    for op in sorted(CATALOG):
        entry = CATALOG[op]
        functor = f"{op}_functor"
        operands = entry.arity + entry.alpha  # an alpha body takes the stub's Scalar last
        for type_name in ALL_TYPES:
            lines.append(f'  probe<{functor}, {type_name}, {operands}>("{op}");')
        for group in entry.supports:
            rows = _cases_for(op, group)
            assert rows, f"{op}: no inputs for group {group}"
            lines.append("  {")
            arrays = []
            for k in range(operands):
                re_name, im_name = f"re{k}", f"im{k}"
                values = [complex(row[k]) for row in rows]
                lines.append("    " + _cpp_array(re_name, [v.real for v in values]))
                lines.append("    " + _cpp_array(im_name, [v.imag for v in values]))
                arrays += [re_name, im_name]
            for type_name in _types_for(group):
                runner = {1: "run1", 2: "run2", 4: "run4"}[operands]
                args = ", ".join(arrays)
                lines.append(f'    {runner}<{type_name}, {functor}>("{op}", "{group}", {args}, {len(rows)});')
            lines.append("  }")
    lines.append("  return 0;")
    lines.append("}")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class Result:
    op: str
    group: str
    in_type: str
    out_type: str
    index: int
    inputs: tuple
    output: object


_SHIM_RUNS: dict[str, dict] = {}  # spelling -> shim_run's result: pytest may set the fixture up again


@pytest.fixture(scope="module", params=sorted(SPELLINGS))
def shim_run(request, tmp_path_factory):
    """The rendered catalog compiled and run, once per namespace spelling (the short one under
    the `using namespace` lines a kernel file would have), once per process: pytest sets a module
    fixture up again each time the order of parametrized tests switches spelling."""
    if request.param not in _SHIM_RUNS:
        _SHIM_RUNS[request.param] = _compile_and_run_shim(request.param, tmp_path_factory)
    return _SHIM_RUNS[request.param]


def _compile_and_run_shim(spelling: str, tmp_path_factory) -> dict:
    compiler = shutil.which("g++")
    if compiler is None:
        from support import missing

        missing("g++ is not installed: the functor bodies cannot be compiled and run without it")
    work = tmp_path_factory.mktemp(f"shim-{spelling}")
    source = work / "functors.cpp"
    source.write_text(build_program(spelling), encoding="utf-8")
    binary = work / "functors"
    # -Werror=double-promotion: no double math hidden in float code (Metal has no double).
    # -Werror=float-conversion: every narrowing float conversion in a body is written as a cast.
    compile_cmd = [
        compiler, "-std=c++17", "-O1", "-Wall", "-Werror=double-promotion", "-Werror=float-conversion",
        "-Wno-type-limits", "-Wno-bool-operation", "-Wno-int-in-bool-context",
        f"-I{SHIM_DIR}", f"-I{PRELUDE_DIR}", f"-I{FIXTURE_CHECKOUT}", str(source), "-o", str(binary),
    ]
    built = subprocess.run(compile_cmd, capture_output=True, text=True)
    assert built.returncode == 0, f"compiling the rendered functors failed:\n{built.stderr[:6000]}"
    ran = subprocess.run([str(binary)], capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0, ran.stderr
    return parse_output(ran.stdout, built.stderr)


def _number(text: str, is_int: bool):
    return int(text) if is_int else float(text)


def parse_output(stdout: str, warnings: str) -> dict:
    probes: dict[tuple[str, str], str] = {}
    values: list[Result] = []
    for line in stdout.splitlines():
        parts = line.split()
        if parts[0] == "probe":
            probes[(parts[1], parts[2])] = parts[3]
            continue
        _, op, group, in_type, out_type, index, *numbers = parts
        in_int = in_type in INT_TYPES
        out_int = out_type in INT_TYPES
        pairs = [numbers[i : i + 2] for i in range(0, len(numbers), 2)]
        *ins, out = pairs

        def value(pair, is_int, is_complex):
            if is_complex:
                return complex(float(pair[0]), float(pair[1]))
            return _number(pair[0], is_int)

        inputs = tuple(value(p, in_int, in_type in COMPLEX_TYPES) for p in ins)
        output = value(out, out_int, out_type in COMPLEX_TYPES)
        values.append(Result(op, group, in_type, out_type, int(index), inputs, output))
    return {"probes": probes, "values": values, "warnings": warnings}


def _close(got, want, rtol, atol) -> bool:
    if isinstance(want, complex):
        got = complex(got)
        if cmath.isnan(want):
            return cmath.isnan(got)
        if cmath.isinf(want):
            # an infinite part must match exactly, a finite one (an angle, say) to the tolerance
            return all(g == w if math.isinf(w) else abs(g - w) <= atol + rtol * abs(w)
                       for g, w in ((got.real, want.real), (got.imag, want.imag)))
        return abs(got - want) <= atol + rtol * abs(want)
    if math.isnan(want):
        return math.isnan(got)
    if math.isinf(want):
        return got == want
    return abs(got - want) <= atol + rtol * abs(want)


def _same_exactly(got, want) -> bool:
    if isinstance(want, float) and math.isnan(want):
        return math.isnan(got)
    if got != want:
        return False
    if isinstance(want, float) and want == 0:
        return math.copysign(1.0, got) == math.copysign(1.0, want)
    return True


def _reference(op: str, result: Result):
    case = OPS[op]
    args = result.inputs
    if result.in_type in INT_TYPES and result.group in ("int2float",):
        args = tuple(float(a) for a in args)
    if case.needs_kind:
        return case.ref(*args, result.out_type)
    want = case.ref(*args)
    # a bool output from an integer body is that value cast to bool (addcmul's bool overload)
    return bool(want) if result.out_type == "bool" and not isinstance(want, bool) else want


@pytest.mark.parametrize("op", sorted(CATALOG))
def test_an_overload_exists_exactly_for_the_supported_groups(shim_run, op):
    entry = CATALOG[op]
    probes = shim_run["probes"]
    expected: dict[str, str] = {}
    for group in entry.supports:
        for type_name in _types_for(group):
            expected.setdefault(type_name, expected_output_type(group, type_name, entry.output))
    for type_name in ALL_TYPES:
        got = probes[(op, type_name)]
        want = expected.get(type_name, "none")
        assert got == want, f"{op}({type_name}): returns {got}, catalog says {want}"


@pytest.mark.parametrize("op", sorted(CATALOG))
def test_body_computes_the_right_values_for_every_supported_group(shim_run, op):
    entry = CATALOG[op]
    case = OPS[op]
    results = [r for r in shim_run["values"] if r.op == op]
    seen = {(r.group, r.in_type) for r in results}
    for group in entry.supports:
        for type_name in _types_for(group):
            assert (group, type_name) in seen, f"{op}: no values for {group}/{type_name}"
    failures = []
    checked = 0
    for result in results:
        assert result.out_type == expected_output_type(result.group, result.in_type, entry.output)
        want = _reference(op, result)
        got = result.output
        if result.out_type in INT_TYPES:
            ok = got == int(want)
        elif case.exact:
            ok = _same_exactly(got, want)
        else:
            rtol, atol = TOLERANCE[result.out_type]
            ok = _close(got, want, rtol, atol)
        checked += 1
        if not ok:
            failures.append(f"{op} {result.group} {result.in_type}{result.inputs} -> {got!r}, want {want!r}")
    assert checked
    assert not failures, "\n".join(failures)
