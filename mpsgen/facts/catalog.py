"""The built-in functor catalog: Metal functor bodies for common math ops, with their dtype groups.

`catalog.toml` (next to this module) has one table per op:

    [atan2]
    arity = 2                               # tensor operands of operator() (1, 2 or 3)
    dtypes = ["float", "int2float"]         # groups upstream registers by default
    supports = ["float", "int2float"]       # every group the body handles (superset of dtypes)
    template = "atan2.metal.j2"             # in templates/functors/
    note = "atan2(a, b) in float ..."       # one line: what it computes, any deliberate CPU difference

A ternary body taking the stub's Scalar (addcmul: `a + value * b * c`) says `arity = 3` and
`alpha = true`: its `operator()` takes the three tensors' elements and the Scalar last, all of
type T (the launcher mpsgen adds on 2.13 passes the Scalar in the iterator's common dtype).

Group names are those of `mpsgen.dtypes.GROUPS`. `int2float` and `integer` never appear together:
both register the integer input types, with different output types.

Adding an op:
1. Write `templates/functors/<op>.metal.j2` rendering exactly one `struct {{ name }}_functor { ... };`.
   Variables: `name`; `metal_ns` and `c10_ns`, the kernel file's prefixes for Metal's and c10's
   names (empty under its `using namespace metal;` / `using namespace c10::metal;`, `::metal::` and
   `c10::metal::` otherwise): write `{{ metal_ns }}precise::log`, never a bare or a fixed
   qualification; `groups`, the dtype groups being registered (an overload for a group not
   registered may be left out). One `operator()` overload per kind of input, its template line
   written by `{{ enable_if("is_scalar_floating_point_v") }}` (float/half/bfloat, returns T),
   `"is_scalar_integral_v"` (returns float for int2float, T for integer) or `"is_complex_v"`
   (float2/half2), from `functor_macros.j2`, which wraps it as clang-format does. Every line must be
   clean under PyTorch's `.clang-format` (80 columns) in both spellings: keep statements short
   (name intermediate values) rather than relying on wrapping. Compute half/bfloat in float, use
   `precise::` where CPU is precise, write float literals (`1.0f`; Metal has no double) and cast
   explicitly back to T.
   Where `c10/metal` has the function (log1p, ...), call it through `c10_macros.j2`
   (`{{ log1p("e") }}` and `{{ log1p_helper() }}`): the checkout's `c10::metal::log1p` where its
   headers declare it (template variable `c10_functions`, from `mpsgen.read.c10lib`), else a local
   helper; list it in the table (`c10 = ["log1p"]`) so the plan notes the fallback. No `fast::`.
2. Add its table to `catalog.toml`.
3. Add its inputs and a Python reference to `OPS` in `tests/test_catalog.py`. The test compiles the
   rendered body (in both spellings) against `tests/metal_shim/metal_shim.h` with g++ and checks
   the values for every group in `supports`; complex ones against `cmath`.

Lookup accepts the op's own name, and the `special_` spelling with or without the prefix
(`ndtri` finds `special_ndtri`) when exactly one catalog entry matches.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from mpsgen.dtypes import METAL_INPUT_TYPES, parse_groups
from mpsgen.errors import MpsgenError
from mpsgen.model import Location
from mpsgen.resources import shipped_template_dir

CATALOG_PATH = Path(__file__).resolve().parent / "catalog.toml"
TEMPLATE_SUBDIR = "functors"
SPECIAL_PREFIX = "special_"

_FIELDS = {"arity": int, "dtypes": list, "supports": list, "template": str, "note": str}
# Bodies of params kernels (stubs with several scalars) also say which schema arguments they read
# (`params = ["beta", "threshold"]`) and, for optional ones, the host-side default in scalar_t
# (`defaults = { posinf = "std::numeric_limits<scalar_t>::max()" }`).
# An op whose shared host function serves some dtypes itself, before the stub is called
# (nan_to_num's copies integer inputs), lists their groups: `served_by_shared_code = ["integer"]`.
# The `c10::metal` functions a body calls where the checkout declares them (`c10 = ["log1p"]`),
# else it keeps a local helper (mpsgen.read.c10lib).
# An op whose output dtype is bool whatever the input (logical, comparison, isnan-like ops) says
# `output = "bool"`: every group registers its input types with a bool output.
# A body taking the stub's one Scalar as its last operand (addcmul's and addcdiv's `value`: an alpha
# kernel) says `alpha = true`; it is offered only to an op whose stub passes one, and an op whose
# stub passes one gets no body without it.
# An op that takes fewer Metal types than its groups hold (addcmul: its integer group without bool,
# which CPU has no kernel for and 2.15's host refuses) names the others: `not_registered = ["bool"]`;
# they get no registration and are not claimed served in the test lists.
_OPTIONAL_FIELDS = {"params": list, "defaults": dict, "served_by_shared_code": list, "c10": list, "output": str,
                    "requires": list, "alpha": bool, "not_registered": list}
OUTPUTS = ("bool",)


@dataclass(frozen=True)
class CatalogEntry:
    op: str
    arity: int
    dtypes: tuple[str, ...]
    supports: tuple[str, ...]
    template: str
    note: str
    params: tuple[str, ...] = ()
    defaults: tuple[tuple[str, str], ...] = ()
    served_by_shared_code: tuple[str, ...] = ()  # dtype groups the shared host function serves itself
    c10: tuple[str, ...] = ()  # c10::metal functions the body calls where the checkout declares them
    output: str = ""  # "bool": the op writes bool for every input; "": as the group says
    requires: tuple[str, ...] = ()  # c10::metal functions the body calls with no local stand-in: none, no body
    alpha: bool = False  # the body takes the stub's Scalar as its last operand (an alpha kernel)
    not_registered: tuple[str, ...] = ()  # Metal input types of its groups the op does not take

    @property
    def template_name(self) -> str:
        """The name to pass to `Templates.render`, e.g. `functors/atan2.metal.j2`."""
        return f"{TEMPLATE_SUBDIR}/{self.template}"


_LOADED: dict[tuple[Path, str], dict[str, CatalogEntry]] = {}


def load_catalog(path: Path | None = None) -> dict[str, CatalogEntry]:
    """Read and validate the catalog; errors name the op's table as `path:line`. Parsed once per
    text (the result is shared: do not change it)."""
    path = path or CATALOG_PATH
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise MpsgenError(f"cannot read the functor catalog {path}: {exc.strerror}", hint="reinstall mpsgen") from None
    key = (path, text)
    if key not in _LOADED:
        _LOADED.clear()
        _LOADED[key] = _parse_catalog(path, text)
    return _LOADED[key]


def _parse_catalog(path: Path, text: str) -> dict[str, CatalogEntry]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise MpsgenError(f"functor catalog {path} is not valid TOML: {exc}", hint="fix the file") from None
    template_dir = _shipped_functor_dir()
    return {op: _entry(op, table, path, text, template_dir) for op, table in data.items()}


def lookup(op: str, catalog: dict[str, CatalogEntry] | None = None) -> CatalogEntry | None:
    """The entry for `op`; `special_x` and `x` find each other when only one of them is catalogued."""
    catalog = load_catalog() if catalog is None else catalog
    if op in catalog:
        return catalog[op]
    if op.startswith(SPECIAL_PREFIX):
        alias = op[len(SPECIAL_PREFIX):]
    else:
        alias = SPECIAL_PREFIX + op
    return catalog.get(alias)


def _entry(op: str, table: object, path: Path, text: str, template_dir: Path) -> CatalogEntry:
    where = Location(str(path), _table_line(text, op))
    if not isinstance(table, dict):
        raise MpsgenError(f"catalog entry {op!r} is not a table", location=where, hint=f"write it as [{op}]")
    unknown = sorted(set(table) - set(_FIELDS) - set(_OPTIONAL_FIELDS))
    missing = [key for key in _FIELDS if key not in table]
    if unknown or missing:
        problem = f"unknown key {unknown[0]!r}" if unknown else f"missing key {missing[0]!r}"
        raise MpsgenError(f"catalog entry {op!r}: {problem}", location=where, hint=f"use exactly: {', '.join(_FIELDS)}")
    for key, kind in _FIELDS.items():
        if not isinstance(table[key], kind) or (kind is int and isinstance(table[key], bool)):
            raise MpsgenError(f"catalog entry {op!r}: {key} must be a {kind.__name__}", location=where)
    if table["arity"] not in (1, 2, 3):
        raise MpsgenError(f"catalog entry {op!r}: arity {table['arity']} is not 1, 2 or 3", location=where)
    dtypes = _groups(op, "dtypes", table["dtypes"], where)
    supports = _groups(op, "supports", table["supports"], where)
    extra = [group for group in dtypes if group not in supports]
    if extra:
        raise MpsgenError(
            f"catalog entry {op!r}: default dtype group {extra[0]!r} is not in supports",
            location=where,
            hint="a body must handle every group it registers by default",
        )
    if not (template_dir / table["template"]).is_file():
        raise MpsgenError(
            f"catalog entry {op!r}: template {TEMPLATE_SUBDIR}/{table['template']} does not exist",
            location=where,
            hint="add the template or fix the name",
        )
    if "\n" in table["note"] or not table["note"].strip():
        raise MpsgenError(f"catalog entry {op!r}: note must be one non-empty line", location=where)
    for key, kind in _OPTIONAL_FIELDS.items():
        if key in table and not isinstance(table[key], kind):
            raise MpsgenError(f"catalog entry {op!r}: {key} must be a {kind.__name__}", location=where)
    params = tuple(table.get("params", ()))
    defaults = tuple((str(k), v) for k, v in table.get("defaults", {}).items())
    if not all(isinstance(p, str) and p.isidentifier() for p in params):
        raise MpsgenError(f"catalog entry {op!r}: params must be argument names", location=where)
    stray = [k for k, v in defaults if k not in params or not isinstance(v, str)]
    if stray:
        raise MpsgenError(f"catalog entry {op!r}: default for {stray[0]!r}, which is not a string for one of its params",
                          location=where)
    served = _groups(op, "served_by_shared_code", table["served_by_shared_code"], where) if "served_by_shared_code" in table else ()
    c10 = tuple(table.get("c10", ()))
    if not all(isinstance(name, str) and name.isidentifier() for name in c10):
        raise MpsgenError(f"catalog entry {op!r}: c10 must be c10::metal function names", location=where)
    output = table.get("output", "")
    if output and output not in OUTPUTS:
        raise MpsgenError(f"catalog entry {op!r}: output {output!r} is not one of {', '.join(OUTPUTS)}", location=where)
    if output and "int2float" in supports:
        raise MpsgenError(f"catalog entry {op!r}: an op with a {output} output has no int2float group", location=where,
                          hint="name its integer inputs `integer`")
    requires = tuple(table.get("requires", ()))
    if not all(isinstance(name, str) and name.isidentifier() for name in requires):
        raise MpsgenError(f"catalog entry {op!r}: requires must be c10::metal function names", location=where)
    alpha = table.get("alpha", False)
    if alpha and params:
        raise MpsgenError(f"catalog entry {op!r}: a params body takes its scalars in the struct, not as an alpha",
                          location=where, hint="drop alpha")
    not_registered = tuple(table.get("not_registered", ()))
    held = {t for group in supports for t in METAL_INPUT_TYPES[group]}
    stray_types = [t for t in not_registered if t not in held]
    if stray_types:
        raise MpsgenError(f"catalog entry {op!r}: not_registered names {stray_types[0]!r}, which none of its groups holds",
                          location=where, hint=f"name Metal input types of its groups: {', '.join(sorted(held))}")
    return CatalogEntry(op, table["arity"], dtypes, supports, table["template"], table["note"], params, defaults, served,
                        c10, output, requires, alpha, not_registered)


def _groups(op: str, key: str, names: list, where: Location) -> tuple[str, ...]:
    if not names or not all(isinstance(name, str) for name in names):
        raise MpsgenError(f"catalog entry {op!r}: {key} must be a non-empty list of group names", location=where)
    try:
        groups = parse_groups(",".join(names))
    except MpsgenError as exc:
        raise MpsgenError(f"catalog entry {op!r}, {key}: {exc.message}", location=where, hint=exc.hint) from None
    if len(groups) != len(names):
        raise MpsgenError(f"catalog entry {op!r}: {key} repeats a group", location=where)
    return groups


def _table_line(text: str, op: str) -> int:
    header = f"[{op}]"
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip() == header:
            return number
    return 1


def _shipped_functor_dir() -> Path:
    return shipped_template_dir() / TEMPLATE_SUBDIR
