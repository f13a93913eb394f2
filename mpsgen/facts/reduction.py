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
from mpsgen.read.cpp import mask_code
from mpsgen.read.reduction import Pair, ReductionHost, ReductionKernels, read_reduction_host, reduction_kernels

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
        return frozenset(METAL_TO_TORCH[i] for op in self.prefixes for i, _ in self.kernels.pairs(op)
                         if i in METAL_TO_TORCH)

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
class ReductionBody:
    """A catalog reduction: the struct's name and its pieces (`reduction_catalog.toml`)."""

    op: str
    struct: str
    identity: str
    combine: str
    simd: str
    threadgroup: str
    pairs_like: str
    exclude_inputs: tuple[str, ...]


def catalog_body(op: str) -> ReductionBody | None:
    with open(CATALOG, "rb") as handle:
        entry = tomllib.load(handle).get(op)
    if entry is None:
        return None
    return ReductionBody(op, entry["struct"], entry["identity"], entry["combine"], entry["simd"], entry["threadgroup"],
                         entry["pairs_like"], tuple(entry.get("exclude_inputs", ())))


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


def op_pairs(kernels: ReductionKernels, body: ReductionBody) -> tuple[Pair, ...]:
    """The (input, output) pairs to register: those the sibling op registers, in its order, without
    the excluded inputs."""
    by_variant = kernels.ops.get(body.pairs_like, {})
    ordered: dict[Pair, int] = {}
    for by_pair in by_variant.values():
        for pair, line in by_pair.items():
            ordered[pair] = min(line, ordered.get(pair, line))
    return tuple(p for p, _ in sorted(ordered.items(), key=lambda item: item[1]) if p[0] not in body.exclude_inputs)


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
