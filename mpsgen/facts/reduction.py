"""What a reduction op is in a checkout: the facts of an op whose stub is declared in the
reduction family's header (`ATen/native/ReduceOps.h`), next to the elementwise facts of
`mpsgen.facts.views`.

The family's files are read, never assumed: the kernels `kernels/ReduceOps.metal` instantiates
(`mpsgen.read.reduction.reduction_kernels`: op prefix -> variant -> (input, output) pair), and in the
host file the launcher's variant suffixes and whether the stub's registered function reaches it
with which op prefixes (`mpsgen.read.reduction.read_reduction_host`).

The rule both verify and the generating commands use: a kernel the launcher can name must exist.
An op routed through the launcher needs, for every pair it registers, every variant the launcher
can pick for it (the suffixes of the enum cases named by the code its host function reaches, but
those the kernel file instantiates under one-type names only, such as the arg-reductions' combine
pass); an op launched otherwise needs the same variants for each of its pairs.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from mpsgen.errors import MpsgenError
from mpsgen.facts.views import METAL_TO_TORCH, OpFacts, Views
from mpsgen.model import Location
from mpsgen.read.checkout import KERNELS_DIR, OPERATIONS_DIR
from mpsgen.read.cpp import mask_code, match_brace
from mpsgen.read.reduction import (Instantiation, Pair, ReductionHost, ReductionKernels, parse_reduction_name,
                                   read_reduction_host, reduction_instantiations, reduction_kernels)

# The reduction family: the stub header -> its kernel and host files.
REDUCTION_FAMILY = {"ReduceOps.h": ("ReduceOps.metal", "ReduceOps.mm")}


@dataclass(frozen=True)
class MissingKernel:
    op: str  # the prefix
    variant: str
    pair: Pair
    location: Location  # the line registering the op's other kernels for the pair (or the first)

    @property
    def name(self) -> str:
        return f"{self.op}_reduction{self.variant}_{self.pair[0]}_{self.pair[1]}"


@dataclass(frozen=True)
class ReductionFacts:
    kernel_file: str
    host_file: str
    kernels: ReductionKernels | None  # None: the checkout has no such kernel file
    host: ReductionHost | None  # None: no such host file
    function: str  # the host function registered for the stub ("" when not registered)
    routed: bool  # the function reaches the launcher
    prefixes: tuple[str, ...]  # the op prefixes the function passes

    @property
    def launcher_variants(self) -> frozenset[str]:
        """The variants the launcher can pick for the op's host function (`ReductionHost.picks`),
        but for those the kernel file instantiates under one-type names only (a pass of their own,
        such as the arg-reductions' combine pass: never a `<op>_reduction<v>_<in>_<out>` kernel)."""
        if self.host is None or not self.function:
            return frozenset()
        single = self.kernels.single_type_variants if self.kernels is not None else frozenset()
        return self.host.picks(self.function) - single

    def required_variants(self, op: str) -> frozenset[str]:
        if self.kernels is None:
            return frozenset()
        if self.routed:
            return self.launcher_variants | self.kernels.variants(op)
        return self.kernels.variants(op)

    def missing(self) -> list[MissingKernel]:
        """Every (prefix, variant, pair) the launcher can name for this op that is not registered."""
        out: list[MissingKernel] = []
        if self.kernels is None:
            return out
        for op in self.prefixes:
            by_variant = self.kernels.ops.get(op, {})
            for pair in sorted(self.kernels.pairs(op)):
                have = [line for by_pair in by_variant.values() for p, line in by_pair.items() if p == pair and line]
                where = Location(self.kernel_file, min(have) if have else self.kernels.first_line(op) or 1)
                for variant in sorted(self.required_variants(op)):
                    if pair not in by_variant.get(variant, {}):
                        out.append(MissingKernel(op, variant, pair, where))
        return out

    @property
    def registered_dtypes(self) -> frozenset[str]:
        """The torch dtypes of the inputs the op's kernels take (under any pair) through any prefix
        the host function passes (nansum's passes `nansum_` for floats, `sum_` for the rest) --
        what the tests' dtype rules judge, as an elementwise functor's registered dtypes are."""
        if self.kernels is None:
            return frozenset()
        # an input type the host function converts before launching (bool for prod) is served too
        converted = self.host.converted.get(self.function, frozenset()) if self.host and self.function else frozenset()
        taken = {i for op in self.prefixes for i, _ in self.kernels.pairs(op)} | converted
        return frozenset(METAL_TO_TORCH[i] for i in taken if i in METAL_TO_TORCH)

    def unregistered_prefixes(self) -> list[str]:
        """Prefixes the host function passes for which the kernel file registers nothing."""
        if self.kernels is None:
            return list(self.prefixes)
        return [op for op in self.prefixes if op not in self.kernels.ops]


def is_reduction_stub(facts: OpFacts) -> bool:
    return facts.stub is not None and facts.stub.header in REDUCTION_FAMILY


def reduction_of(views: Views, facts: OpFacts) -> ReductionFacts | None:
    """The reduction facts of `facts`' op, or None when its stub is not a reduction family's."""
    if not is_reduction_stub(facts):
        return None
    kernel_name, host_name = REDUCTION_FAMILY[facts.stub.header]
    kernel_file = f"{KERNELS_DIR}/{kernel_name}"
    registration = facts.registrations[0] if len(facts.registrations) == 1 else None
    host_file = registration.location.path if registration else f"{OPERATIONS_DIR}/{host_name}"
    kernels = reduction_kernels_of(views, kernel_file)
    host = reduction_host_of(views, host_file)
    function = registration.function if registration else ""
    routed = bool(host and function and host.routes(function))
    prefixes = host.prefixes(function) if host and function else ()
    return ReductionFacts(kernel_file, host_file, kernels, host, function, routed, prefixes)


def reduction_kernels_of(views: Views, rel: str) -> ReductionKernels | None:
    if not views.ws.exists(rel):
        return None

    def build(text: str) -> ReductionKernels:
        reading = views.kernel(rel).reading
        return reduction_kernels(rel, reading.host_names, reading.host_name_lines)

    return views.view("reduction-kernels", rel, build)


def reduction_host_of(views: Views, rel: str) -> ReductionHost | None:
    if not views.ws.exists(rel):
        return None
    return views.view("reduction-host", rel, lambda text: read_reduction_host(text, rel))


# ------------------------------------------------------------------------------------ generating

CATALOG = Path(__file__).with_name("reduction_catalog.toml")
_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)\(([^)]*)\)((?:[^\n]*\\\r?\n)*[^\n]*)", re.M)
_SINGLE_CALL = re.compile(r"\{\s*(\w+)\s*\(\s*(\w+)\s*,\s*\"([a-z0-9_]+_)\"\s*\)\s*;\s*\}\s*$")


@dataclass(frozen=True)
class LoadOrder:
    """An order a load mode of the base op's struct serves (`ord = 2` -> `LOAD_SQUARE`), registered
    under a prefix of its own (`powsum_l2_`)."""

    ord: float
    mode: str
    prefix: str

    @property
    def literal(self) -> str:
        """The order as a C++ double literal (`2.0`)."""
        return repr(float(self.ord))


@dataclass(frozen=True)
class ReductionBody:
    """A catalog reduction: the struct's name and its pieces (`reduction_catalog.toml`), or (a
    load-mode reduction, `orders` set) the base op's struct with a load mode per served order."""

    op: str
    struct: str
    identity: str
    combine: str
    simd: str
    threadgroup: str
    pairs_like: str
    exclude_inputs: tuple[str, ...]
    orders: tuple[LoadOrder, ...] = ()
    mode_enum: str = ""
    general: str = ""  # how the orders no load mode serves are computed ("elementwise")
    inputs: tuple[str, ...] = ()  # the input types taken (empty: every input of the sibling's pairs)
    exclude_pairs: tuple[Pair, ...] = ()
    finalize: str = ""  # (user flags) the finalize expression of the accumulator `v`
    acc: str = ""  # (user flags) the accumulator type ("": opmath_t<TO>)
    source: str = "catalog"  # "catalog" or "flags"

    @property
    def load_modes(self) -> bool:
        return bool(self.orders)

    def prefixes(self) -> tuple[str, ...]:
        """The kernel prefixes the op registers (`prod_`; `powsum_l1_`, `powsum_l2_`)."""
        if self.orders:
            return tuple(o.prefix for o in self.orders)
        return (f"{self.op}_",)

    def instances(self) -> tuple[tuple[str, str], ...]:
        """(prefix, op type) per registration: `("prod_", "ProdOp<TO>")`,
        `("powsum_l2_", "SumOp<TO, LOAD_SQUARE>")`."""
        if self.orders:
            return tuple((o.prefix, f"{self.struct}<TO, {o.mode}>") for o in self.orders)
        return ((f"{self.op}_", f"{self.struct}<TO>"),)


def catalog_body(op: str) -> ReductionBody | None:
    with open(CATALOG, "rb") as handle:
        entry = tomllib.load(handle).get(op)
    if entry is None:
        return None
    if "orders" in entry:
        orders = tuple(LoadOrder(float(o["ord"]), o["mode"], o["prefix"]) for o in entry["orders"])
        return ReductionBody(op, entry["struct"], "", "", "", "", entry["base"], (), orders=orders,
                             mode_enum=entry["mode_enum"], general=entry.get("general", ""),
                             inputs=tuple(entry.get("inputs", ())),
                             exclude_pairs=tuple(tuple(p) for p in entry.get("exclude_pairs", ())))
    return ReductionBody(op, entry["struct"], entry["identity"], entry["combine"], entry["simd"], entry["threadgroup"],
                         entry["pairs_like"], tuple(entry.get("exclude_inputs", ())))


# the accumulator types a flag-built op struct may name: its simdgroup combine shuffles 32-bit (or
# narrower) values, as Metal's simd_shuffle_down takes them
FLAG_ACC_TYPES = ("opmath_t<TO>", "TO", "float", "half", "bfloat", "int", "uint", "short", "ushort", "char", "uchar")
# the inputs a flag-built op struct registers (the sum op's pairs with these inputs): their
# accumulator, opmath_t<TO>, is float
FLAG_INPUTS = ("float", "half", "bfloat")


def flags_body(op: str, functor: str, identity: str | None, combine: str | None, finalize: str | None,
               acc: str | None) -> ReductionBody:
    """The op struct of a reduction the catalog lacks, from the user's flags: `--identity` (an
    expression of `acc_t`), `--combine` (of the accumulators `a`, `b`), `--finalize` (of the
    accumulator `v`, cast to the output type; default `v`) and `--acc` (the accumulator type;
    default `opmath_t<TO>`). Its collectives are generic (a simdgroup shuffle loop, then the
    simdgroups' partials through threadgroup memory), so any associative, commutative combine works."""
    if identity is None or combine is None:
        given = [f for f, v in (("--identity", identity), ("--combine", combine), ("--finalize", finalize),
                                ("--acc", acc)) if v is not None]
        lacking = "--identity" if identity is None else "--combine"
        raise MpsgenError(f"{', '.join(given)} given without {lacking}: a reduction's op struct needs an identity and a "
                          "combine", hint=f"add {lacking} EXPR")
    acc_type = " ".join((acc or "opmath_t<TO>").split())
    if acc_type not in FLAG_ACC_TYPES:
        raise MpsgenError(f"--acc {acc_type}: the op struct's simdgroup combine shuffles 32-bit or narrower values",
                          hint=f"use one of {', '.join(FLAG_ACC_TYPES)}")
    struct = "".join(part.capitalize() for part in functor.split("_") if part) + "Op"
    return ReductionBody(op, struct, identity, combine, "", "", "sum", (), inputs=FLAG_INPUTS,
                         finalize=finalize or "v", acc=acc_type, source="flags")


_ENUM = re.compile(r"\benum\s+(?:class\s+)?(\w+)\s*(?::\s*\w+\s*)?\{")


def load_mode_problem(kernel_text: str, path: str, body: ReductionBody) -> MpsgenError | None:
    """Why the kernel file cannot serve the body's orders through its struct's load modes, or None:
    the struct must exist and take a `<mode_enum>` template argument, and the enum must have every
    mode the catalog names (each refusal names the file and line to look at)."""
    masked = mask_code(kernel_text)
    struct = re.search(rf"template\s*<([^{{;]*)>\s*struct\s+{body.struct}\s*\{{", masked)
    if struct is None:
        return MpsgenError(f"{path} defines no template struct {body.struct} (the {body.pairs_like} op's struct "
                           f"whose load modes {body.op} uses)", location=Location(path, 1),
                           hint=f"write {body.op}'s kernel by hand")
    struct_line = masked.count("\n", 0, struct.start()) + 1
    if not re.search(rf"\b{body.mode_enum}\b", struct.group(1)):
        return MpsgenError(f"{body.struct} takes no {body.mode_enum} template argument, so it has no load modes "
                           f"for {body.op}'s orders", location=Location(path, struct_line),
                           hint=f"write {body.op}'s kernel by hand")
    enum = next((m for m in _ENUM.finditer(masked) if m.group(1) == body.mode_enum), None)
    if enum is None:
        return MpsgenError(f"{path} defines no enum {body.mode_enum} (the load modes {body.struct} takes)",
                           location=Location(path, struct_line), hint=f"write {body.op}'s kernel by hand")
    close = match_brace(masked, enum.end() - 1)
    have = {m.group(1) for piece in masked[enum.end():close].split(",")
            if (m := re.match(r"\s*([A-Za-z_]\w*)", piece))}
    for order in body.orders:
        if order.mode not in have:
            line = masked.count("\n", 0, enum.start()) + 1
            return MpsgenError(f"enum {body.mode_enum} has no {order.mode}, the load mode {body.op}'s order "
                               f"{order.ord:g} needs (it has {', '.join(sorted(have))})",
                               location=Location(path, line), hint=f"write {body.op}'s kernel by hand")
    return None


@dataclass(frozen=True)
class RegistrationMacro:
    """The kernel file's macro instantiating every routing variant of one op for one pair:
    `#define NAME(PREFIX, TI, TO, ...)` whose body names `"reduction_..."` kernels."""

    name: str
    params: tuple[str, ...]
    line: int


def registration_macro(text: str, path: str) -> RegistrationMacro:
    """The file's macro of that shape instantiating the most kernels (the one the value reductions
    go through); refused when the file has none."""
    found = []
    for m in _DEFINE.finditer(text):
        params = tuple(p.strip() for p in m.group(2).split(","))
        kernels = m.group(3).count('"reduction')
        if kernels and len(params) == 4 and params[3] == "...":
            found.append((kernels, -m.start(), RegistrationMacro(m.group(1), params, text.count("\n", 0, m.start()) + 1)))
    if not found:
        raise MpsgenError(f"{path} has no registration macro of the form `#define NAME(PREFIX, TI, TO, ...)` "
                          "naming \"reduction_...\" kernels", location=Location(path, 1),
                          hint="register the op's kernels by hand, or add such a macro")
    return max(found, key=lambda item: item[:2])[2]


def launcher_call(views: Views, host: ReductionHost, host_file: str) -> tuple[str, Location]:
    """The launcher the file's reduction stubs call with just their prefix (`value_reduction_kernel_mps`
    in `static void max_values_kernel_mps(TensorIterator& iter) { value_reduction_kernel_mps(iter,
    "max_"); }`): the one most registered functions call so; ties go to the one reached first."""
    view = views.host(host_file)
    counts: dict[str, list[Location]] = {}
    for registration in view.registrations:
        function = view.function(registration)
        if function is None:
            continue
        m = _SINGLE_CALL.search(function.body)
        if m is None or not host.routes(m.group(1)):
            continue
        counts.setdefault(m.group(1), []).append(function.location)
    if not counts:
        raise MpsgenError(f"no reduction stub of {host_file} calls a launcher with its prefix alone "
                          "(`launcher(iter, \"op_\")`)", location=Location(host_file, 1),
                          hint="write the host function by hand")
    best = max(counts, key=lambda name: (len(counts[name]), -counts[name][0].line))
    return best, counts[best][0]


@dataclass(frozen=True)
class BaseCall:
    """How the base op's host function calls its launcher: `sum_mean_kernel_mps(iter, "sum_",
    std::nullopt)` -> launcher `sum_mean_kernel_mps`, `rest` `, std::nullopt` (what follows the
    prefix), and the function (name, location) that holds the call."""

    launcher: str
    rest: str
    function: str
    location: Location


_PREFIX_CALL = re.compile(r"(\w+)\s*\(\s*\w+\s*,\s*\"([a-z0-9_]+_)\"\s*((?:,[^;]*)?)\)\s*;")


def base_launcher_call(views: Views, host: ReductionHost, host_file: str, base: str) -> BaseCall:
    """The launcher call of the host function registered for `<base>_stub` whose prefix is
    `"<base>_"`: a load-mode reduction calls the same launcher the same way with its own prefixes
    (the launcher's other passes then treat its partials as the base op's, which sum's are)."""
    view = views.host(host_file)
    for registration in view.registrations:
        if registration.stub != f"{base}_stub":
            continue
        function = view.function(registration)
        if function is None:
            continue
        for m in _PREFIX_CALL.finditer(mask_strings_kept(function.body)):
            if m.group(2) == f"{base}_" and host.routes(m.group(1)):
                rest = " ".join(m.group(3).split())
                return BaseCall(m.group(1), rest, function.name, function.location)
    raise MpsgenError(f"no function registered for {base}_stub in {host_file} calls a reduction launcher with "
                      f"\"{base}_\"", location=Location(host_file, 1),
                      hint=f"register {base}_stub's host function, or write this op's host function by hand")


def mask_strings_kept(code: str) -> str:
    """`code` with its comments blanked and its string literals kept (the prefix is a literal)."""
    return _comments_blanked(code, mask_code(code))


def _comments_blanked(code: str, masked: str) -> str:
    out = []
    i = 0
    while i < len(code):
        if code.startswith("//", i) and masked[i] == " ":
            end = code.find("\n", i)
            end = len(code) if end < 0 else end
            out.append(" " * (end - i))
            i = end
        elif code.startswith("/*", i) and masked[i] == " ":
            end = code.find("*/", i + 2)
            end = len(code) if end < 0 else end + 2
            out.append("".join(c if c == "\n" else " " for c in code[i:end]))
            i = end
        else:
            out.append(code[i])
            i += 1
    return "".join(out)


@dataclass(frozen=True)
class PlannedOrder:
    """Where a load-mode reduction's served order goes: registered under its own prefix, routed to
    another op's kernels that are already the same instantiations, or (`prefix` "") the general
    path, with the reason."""

    order: LoadOrder
    prefix: str  # the prefix the host function passes ("": the general path)
    register: bool
    why: str = ""
    location: Location | None = None

    @property
    def literal(self) -> str:
        return self.order.literal


def reduction_instantiations_of(views: Views, rel: str) -> tuple[Instantiation, ...]:
    return views.view("reduction-instantiations", rel, lambda text: reduction_instantiations(text, rel))


def plan_orders(views: Views, kernel_file: str, body: ReductionBody, pairs: tuple[Pair, ...],
                kernels: ReductionKernels) -> tuple[PlannedOrder, ...]:
    """Each served order's kernels, as the compiler would see them: the base op's instantiations for
    the pairs with the order's op type (`SumOp<TO, LOAD_ABS>`). A second explicit instantiation of
    the same kernel does not compile, whatever its host name, so an order some of whose kernels the
    file already instantiates under another prefix is routed to that prefix when it has every
    variant for every pair, else it goes the general path (said in a note)."""
    existing = reduction_instantiations_of(views, kernel_file)
    base = f"{body.pairs_like}_"
    by_key: dict[tuple, list[Instantiation]] = {}
    for inst in existing:
        by_key.setdefault(inst.key, []).append(inst)
    planned = []
    for order in body.orders:
        ours = set()
        for inst in existing:
            parsed = parse_reduction_name(inst.name)
            if parsed is None or f"{parsed.op}_" != base or (parsed.input, parsed.output) not in pairs or not inst.args:
                continue
            ours.add((inst.function, (f"{body.struct}<{parsed.output}, {order.mode}>", *inst.args[1:])))
        taken = [other for key in sorted(ours) for other in by_key.get(key, ())
                 if not other.name.startswith(order.prefix)]
        if not taken:
            planned.append(PlannedOrder(order, order.prefix, True))
            continue
        owners = {parsed.op for other in taken if (parsed := parse_reduction_name(other.name)) is not None}
        first = min(taken, key=lambda inst: inst.line)
        where = Location(kernel_file, first.line or 1)
        op_type = f"{body.struct}<TO, {order.mode}>"
        if len(owners) == 1:
            owner = next(iter(owners))
            need = kernels.variants(body.pairs_like)
            if all(pair in kernels.ops.get(owner, {}).get(v, {}) for v in need for pair in pairs):
                planned.append(PlannedOrder(order, f"{owner}_", False,
                                            f"ord {order.ord:g} reuses the {owner}_reduction* kernels: they are "
                                            f"the {op_type} instantiations it needs", where))
                continue
        planned.append(PlannedOrder(order, "", False,
                                    f"ord {order.ord:g} takes the general path: {first.name} already instantiates "
                                    f"{first.function}<{', '.join(first.args)}>, so registering {op_type} again would "
                                    "be a duplicate explicit instantiation, and the existing ones do not cover every "
                                    "routing variant and pair", where))
    return tuple(planned)


def op_pairs(kernels: ReductionKernels, body: ReductionBody) -> tuple[Pair, ...]:
    """The (input, output) pairs to register: those the sibling op registers, in its order, without
    the excluded inputs."""
    by_variant = kernels.ops.get(body.pairs_like, {})
    ordered: dict[Pair, int] = {}
    for by_pair in by_variant.values():
        for pair, line in by_pair.items():
            ordered[pair] = min(line, ordered.get(pair, line))
    return tuple(p for p, _ in sorted(ordered.items(), key=lambda item: item[1])
                 if p[0] not in body.exclude_inputs and p not in body.exclude_pairs
                 and (not body.inputs or p[0] in body.inputs))


def converted_inputs(kernels: ReductionKernels, body: ReductionBody, pairs: tuple[Pair, ...]) -> tuple[str, ...]:
    """The input types the op has no kernel for (its catalog's `exclude_inputs`) that its sibling
    takes, served by converting them to the output's type first: each, when the op registers
    (O, O) for every output O the sibling pairs it with. bool for prod: Metal has no bool product,
    and 2.15 compiles no `prod_reduction*_bool_*` kernel yet runs prod on bool (2.15's
    `make_reduction_from_out_ty` hands MPS an integral input, bool included, unconverted when the
    output is long); prod of 0/1 values in the output's type is exact."""
    sibling = kernels.pairs(body.pairs_like)
    out = []
    for excluded in body.exclude_inputs:
        outputs = {o for i, o in sibling if i == excluded}
        if outputs and all((o, o) in pairs for o in outputs):
            out.append(excluded)
    return tuple(out)


def sibling_line(kernels: ReductionKernels, op: str, input_type: str) -> int:
    """The first kernel-file line registering `op` for an `input_type` input (1 when none)."""
    lines = [line for by_pair in kernels.ops.get(op, {}).values() for (i, _), line in by_pair.items()
             if i == input_type and line]
    return min(lines, default=1)


_LOAD_CALL = re.compile(r"\bOP\s*::\s*load\s*\(")


def load_takes_parameter(kernel_text: str) -> bool:
    """Whether the file's kernel templates hand the op's `load` anything besides the element
    (`OP::load(v, param)`): only then can an op depending on a runtime scalar (a norm's p) load."""
    masked = mask_code(kernel_text)
    for m in _LOAD_CALL.finditer(masked):
        depth, i = 1, m.end()
        while i < len(masked) and depth:
            depth += {"(": 1, ")": -1}.get(masked[i], 0)
            if depth == 1 and masked[i] == ",":
                return True
            i += 1
    return False
