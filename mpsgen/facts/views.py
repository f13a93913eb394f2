"""What an operator is, worked out once: the one place that classifies an op.

`Views` holds the parsed views of a Workspace's texts (native_functions.yaml, stub headers, kernel
files, host files, common_mps.py, the OpInfo files), each computed once per text: when a command
edits a file in the Workspace, the next read of that view parses the new text. `read_op` builds an
op's `OpFacts` from them: its yaml entries and dispatch lines, the stub and its signature, the MPS
registration and host function, the functor and the dtypes it is registered for, its OpInfos, the
dtypes MPS tests and the xfail entries that declare some of them failing.

`new-op`, `migrate`, `verify` and `scan` all read ops through here; the refusals of the generating
commands live in `mpsgen.facts.resolve`, the dtype and test-list rules in `mpsgen.facts.rules`.
"""

from __future__ import annotations

import bisect
import functools
import os
import re
from collections.abc import Callable
from pathlib import Path
from dataclasses import dataclass, field
from typing import Any

from mpsgen.dtypes import GROUPS
from mpsgen.errors import MpsgenError
from mpsgen.facts.recorded import RecordedCall, mismatch, recorded_call_of_function
from mpsgen.model import Location
from mpsgen.read.cache import cached_index
from mpsgen.read.checkout import (
    C10_METAL_DIR,
    COMMON_METHODS,
    COMMON_MPS,
    KERNELS_DIR,
    MPS_DIR,
    NATIVE_DIR,
    NATIVE_FUNCTIONS,
    OPERATIONS_DIR,
    Texts,
)
from mpsgen.read.cpp import (
    definition_from_json,
    definition_to_json,
    find_definitions,
    mask_code,
    match_brace,
    split_top_level,
)
from mpsgen.read.cpuread import UNKNOWN, CpuOutput, function_kind, read_cpu_file
from mpsgen.read.kernelfile import KernelFile, kernel_file_from_json, kernel_file_to_json, read_kernel_file
from mpsgen.read.metalhost.check import compile_metal_file
from mpsgen.read.metalhost.owners import code_owners
from mpsgen.read.metalread import KernelReading, read_kernel_cached
from mpsgen.read.nfyaml import DispatchLine, NativeFunctions, YamlEntry, validate_entry
from mpsgen.read.opinfo import find_opinfos, names_index, scan_calls
from mpsgen.read.stubs import Stub, find_stub, read_stubs, split_params
from mpsgen.read.testlists import ComplexList, complex_list, declared_dtypes, parse_testlists
from mpsgen.textedit import LineIndex

OPINFO_DEFINITIONS = "torch/testing/_internal/opinfo/definitions"

# Metal type in a REGISTER_* line -> the torch dtype it serves.
METAL_TO_TORCH = {
    "float": "float32",
    "half": "float16",
    "bfloat": "bfloat16",
    "long": "int64",
    "int": "int32",
    "short": "int16",
    "uchar": "uint8",
    "char": "int8",
    "bool": "bool",
    "float2": "complex64",
    "half2": "complex32",
}
_FLOAT_METAL = frozenset({"float", "half", "bfloat"})
_INT_METAL = frozenset({"long", "int", "short", "uchar", "char"})
_COMPLEX_METAL = frozenset({"float2", "half2"})


# ------------------------------------------------------------------------------- dispatch lines


@dataclass(frozen=True)
class DispatchSite:
    """One dispatch line of one yaml entry."""

    entry: YamlEntry
    line: DispatchLine


def is_shared_line(line: DispatchLine) -> bool:
    """`CPU, CUDA[, MPS, ...]: x`: a kernel shared by devices through a stub."""
    return "CPU" in line.keys and "CUDA" in line.keys


def is_legacy_line(line: DispatchLine) -> bool:
    """`MPS: x_mps`: a separate MPS kernel."""
    return line.keys == ("MPS",)


def is_mps_only(line: DispatchLine) -> bool:
    """MPS without CPU/CUDA on the line (`MPS: x`, `MPS, MTIA: x`)."""
    return "MPS" in line.keys and not ({"CPU", "CUDA"} & set(line.keys))


def shared_sites(entries) -> tuple[DispatchSite, ...]:
    """The lines serving CPU and CUDA with one function: a `CPU, CUDA[, ...]: x` line, or one
    function on several lines (`CPU: signbit_out` + `CUDA: signbit_out`; `CPU, XPU: f` + `CUDA: f`),
    each of which is a site."""
    out = []
    for entry in entries:
        keys: dict[str, set] = {}
        for line in entry.dispatch:
            keys.setdefault(line.kernel, set()).update(line.keys)
        for line in entry.dispatch:
            if is_shared_line(line) or ({"CPU", "CUDA"} <= keys[line.kernel] and not is_mps_only(line)
                                        and {"CPU", "CUDA"} & set(line.keys)):
                out.append(DispatchSite(entry, line))
    return tuple(out)


def site_groups(shared: tuple[DispatchSite, ...]) -> dict[tuple[str, str], list[DispatchSite]]:
    """The shared sites by (entry, function): one group per function serving CPU and CUDA."""
    groups: dict[tuple[str, str], list[DispatchSite]] = {}
    for site in shared:
        groups.setdefault((site.entry.name, site.line.kernel), []).append(site)
    return groups


def groups_joined(shared: tuple[DispatchSite, ...]) -> list[bool]:
    """For each function serving CPU and CUDA, whether MPS is on one of its lines."""
    return [any("MPS" in s.line.keys for s in sites) for sites in site_groups(shared).values()]


def stub_candidates(op: str, shared: tuple[DispatchSite, ...]) -> list[str]:
    """Where to look for an op's stub, in order: <op>_stub, the shared kernel's stem, and without
    a `special_` prefix (special_laguerre_polynomial_l -> laguerre_polynomial_l_stub) or a private
    helper's `linalg__` (linalg__powsum -> powsum_stub; `linalg_cross` keeps its own name: its
    cross_stub is not what serves it on MPS)."""
    names = [f"{op}_stub"]
    for site in shared:
        stem = re.sub(r"(_out|_Tensor|_Scalar)+$", "", site.line.kernel)
        names.append(f"{stem}_stub")
    if op.startswith("special_"):
        names.append(f"{op[len('special_'):]}_stub")
    if op.startswith("linalg__"):  # a private linalg helper: linalg__powsum -> powsum_stub
        names.append(f"{op[len('linalg__'):]}_stub")
    return list(dict.fromkeys(names))


def functor_name_of_stub(stub_name: str) -> str:
    """The functor a generated kernel for `stub_name` is named after (unique per stub, so overloads
    of one op that use different stubs get different functors). A CamelCase stub named for its
    kernel is snake-cased without the word `Kernel` (`GeluKernel` -> `gelu`, `GeluBackwardKernel` ->
    `gelu_backward`: the names 2.15 compiles, `gelu_dense_float_float`)."""
    if stub_name.endswith("_stub"):
        return stub_name[: -len("_stub")]
    if re.fullmatch(r"(?:[A-Z][a-z0-9]+)+Kernel", stub_name):
        return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", stub_name[: -len("Kernel")]).lower()
    return stub_name


# ------------------------------------------------------------------------------------ host files


@dataclass(frozen=True)
class Registration:
    """A REGISTER_DISPATCH of a stub for MPS: directly, or through a file's helper macro
    (`function` is then `MACRO(name)`)."""

    stub: str
    function: str
    location: Location


@dataclass(frozen=True)
class HostFunction:
    """The function an MPS registration names, as defined in its host file."""

    name: str
    params: tuple[str, ...]
    location: Location
    body: str  # raw text of the body (or of the helper macro)
    body_line: int
    kernel: str | None  # the name passed to lib.exec_*_kernel
    kernel_line: int


_REGISTER_DISPATCH = re.compile(r"^[ \t]*REGISTER_DISPATCH\s*\(\s*(\w+)\s*,\s*&?\s*(\w+)\s*\)(\s*;)?[ \t]*\r?$", re.M)
_HELPER_MACRO = re.compile(
    r"^[ \t]*#[ \t]*define[ \t]+(REGISTER_\w+)\((\w+)((?:\s*,\s*\w+)*)\)((?:[^\n]*\\\r?\n)*[^\n]*)", re.M)
_EXEC = re.compile(r"\bexec_\w+_kernel\w*\s*\(\s*[\w.]+\s*,\s*\"(\w+)\"")


def helper_macros(text: str) -> list[tuple[str, str, str]]:
    """A file's one-line registration helpers, as (macro, param, body): `#define REGISTER_X_DISPATCH(NAME)
    ... exec_..._kernel(iter, #NAME) ... REGISTER_DISPATCH(NAME##_stub, ...)`, or one defining an
    MPSGraph kernel per op, `#define REGISTER_MPS_UNARY_STUB(func, mps_func) static void
    mps_##func##_kernel(...) {...} REGISTER_DISPATCH(func##_stub, mps_##func##_kernel)` (its first
    parameter names the stub; the others are the op's own words)."""
    out = []
    for match in _HELPER_MACRO.finditer(text):
        body = match.group(4)
        param = match.group(2)
        if re.search(rf"\bREGISTER_DISPATCH\s*\(\s*{param}\s*##\s*_stub\b", body):
            out.append((match.group(1), param, body))
    return out


@dataclass(frozen=True)
class HostView:
    """One operations/*.mm file: its masked text and MPS registrations."""

    path: str
    text: str
    masked: str
    registrations: tuple[Registration, ...]
    helpers: tuple[tuple[str, str, str], ...]

    @classmethod
    def read(cls, text: str, path: str) -> HostView:
        masked = mask_code(text)
        regs = []
        for match in _REGISTER_DISPATCH.finditer(masked):
            if match.start() > 0 and masked[: match.start() - 1].rstrip("\r").endswith("\\"):
                continue  # inside a #define body
            line = masked.count("\n", 0, match.start()) + 1
            regs.append(Registration(match.group(1), match.group(2), Location(path, line)))
        helpers = tuple(helper_macros(text))
        for macro, _param, _body in helpers:
            for m in re.finditer(rf"^{macro}\((\w+)(?:\s*,\s*\w+)*\)\s*;?[ \t]*\r?$", masked, re.M):
                line = masked.count("\n", 0, m.end()) + 1
                regs.append(Registration(f"{m.group(1)}_stub", f"{macro}({m.group(1)})", Location(path, line)))
        return cls(path, text, masked, tuple(regs), helpers)

    def direct_registrations(self) -> list[Registration]:
        return [r for r in self.registrations if "(" not in r.function]

    def function(self, registration: Registration) -> HostFunction | None:
        """The function `registration` names, read from this file."""

        helper = re.fullmatch(r"(\w+)\((\w+)\)", registration.function)
        if helper:
            macro, name = helper.groups()
            for macro_name, param, body in self.helpers:
                if macro_name != macro:
                    continue
                signature = re.search(rf"{param}\s*##\s*\w*\s*\(([^)]*)\)", body)
                params = split_params(_strip_defaults(signature.group(1))) if signature else ()
                kernel = name if re.search(rf"exec_\w+_kernel\w*\s*\(\s*\w+\s*,\s*#{param}\b", body) else None
                line = registration.location.line
                return HostFunction(registration.function, params, registration.location, body, line, kernel, line)
            return None
        for match in re.finditer(rf"\b{re.escape(registration.function)}\s*\(", self.masked):
            paren = match.end() - 1
            close = match_brace(self.masked, paren)
            if close < 0:
                continue
            if not self.masked[close + 1 :].lstrip().startswith("{"):
                continue  # a call or a declaration
            brace = self.masked.index("{", close)
            end = match_brace(self.masked, brace)
            params = split_params(_strip_defaults(self.masked[paren + 1 : close]))
            body = self.text[brace : end + 1 if end >= 0 else len(self.text)]
            body_line = self.masked.count("\n", 0, brace) + 1
            call = _EXEC.search(body)
            kernel_line = body_line + body.count("\n", 0, call.start()) if call else body_line
            location = Location(self.path, self.masked.count("\n", 0, match.start()) + 1)
            return HostFunction(registration.function, params, location, body, body_line,
                                call.group(1) if call else None, kernel_line)
        return None


def _strip_defaults(params: str) -> str:
    return ",".join(part.split("=", 1)[0] for part in split_top_level(params, "(<[", ")>]"))


# ---------------------------------------------------------------------------------- kernel files


@dataclass(frozen=True)
class Registered:
    """The (input, output) Metal types a functor is registered for, and its first REGISTER_* line."""

    pairs: frozenset[tuple[str, str]]
    line: int

    @property
    def dtypes(self) -> frozenset[str]:
        return frozenset(METAL_TO_TORCH[i] for i, _ in self.pairs if i in METAL_TO_TORCH)

    @property
    def groups(self) -> tuple[str, ...]:
        return groups_of_pairs(self.pairs)


def groups_of_pairs(pairs) -> tuple[str, ...]:
    """The dtype groups (`mpsgen.dtypes.GROUPS`) that (input, output) type pairs amount to."""

    found = set()
    for in_type, out_type in pairs:
        if in_type in _FLOAT_METAL:
            found.add("float")
        elif in_type in _COMPLEX_METAL:
            found.add("complex")
        elif in_type in _INT_METAL or in_type == "bool":
            if out_type in _FLOAT_METAL:
                found.add("int2float")
            elif in_type == "bool" and out_type == "bool" and not any(i in _INT_METAL for i, _ in pairs):
                found.add("bool")
            else:
                found.add("integer")
    return tuple(g for g in GROUPS if g in found)


def registered_of(reading) -> dict[str, Registered]:
    """functor name -> what it is registered for: the (input, output) types of the kernels the
    preprocessed file instantiates (`mpsgen.read.metalread.KernelReading`), and the kernel-file line of
    its first registration."""
    found: dict[str, tuple[set, int]] = {}
    for reg in reading.registrations:
        entry = found.setdefault(reg.functor, (set(), reg.line))
        entry[0].add((reg.input, reg.output))
    return {name: Registered(frozenset(pairs), line) for name, (pairs, line) in found.items()}


@dataclass(frozen=True)
class KernelView:
    """One kernels/*.metal file: its literal text read for editing (`mpsgen.read.kernelfile.KernelFile`), and
    what the compiler sees of it (`mpsgen.read.metalread.KernelReading`): every functor however written,
    with its span in the file, and what each functor is registered for."""

    path: str
    file: KernelFile
    reading: KernelReading
    functors: dict[str, tuple[int, int]]  # name -> (start, end) offsets of its definition as written
    registered: dict[str, Registered]

    def functor_line(self, text: str, name: str) -> int:
        return text.count("\n", 0, self.functors[name][0]) + 1

    def functor_macro(self, name: str) -> str:
        """The macro that writes `name`'s functor ("" when written literally)."""
        functor = self.reading.functors.get(name)
        return functor.macro if functor is not None else ""


def functor_spans(text: str, masked: str, literal: dict, reading) -> dict[str, tuple[int, int]]:
    """Every functor's (start, end) offsets: a literal struct's from `literal`; one written by a
    macro, the macro call (from the start of its line to the end of its line, or of the statement
    when it spans lines)."""

    spans = dict(literal)
    index = None
    for name, functor in reading.functors.items():
        if name in spans or functor.line <= 0:
            continue
        index = index or LineIndex(text)
        start = index.start_of(functor.line)
        stop = masked.find(";", start)
        line_end = masked.find("\n", start)
        end = max(stop, line_end) if 0 <= stop else line_end
        end = masked.find("\n", end) if end >= 0 else -1
        spans[name] = (start, len(text) if end < 0 else end + 1)
    return spans


# ------------------------------------------------------------------------------------------ views


HELPER_KINDS = ("function", "macro")  # definitions a plan may remove once nothing uses them


class Views:
    """Parsed views of a Workspace's texts, each built once per text (a view is rebuilt when the
    Workspace holds a new text for its file)."""

    def __init__(self, ws: Texts, *, disk_cache: bool = False):
        self.ws = ws
        self.checkout = ws.checkout
        # the OpInfo index may be kept in the user cache directory (mpsgen.read.cache; new-op and migrate)
        self.disk_cache = disk_cache
        self._cache: dict[tuple[str, str], tuple[str, Any]] = {}
        self._fixed: dict[str, Any] = {}

    def lend(self, other: Views) -> None:
        """Start from what `other` (Views of the same checkout) has already built: a view is used
        only while this Workspace holds the very text it was built from."""
        self._cache.update(other._cache)
        self._fixed.update(other._fixed)

    def keep_unedited(self, other: Views) -> None:
        """Take over the views `other` built from texts this Workspace holds too (unedited files)."""
        for (kind, rel), (text, value) in other._cache.items():
            if (kind, rel) in self._cache or not self.checkout.exists(rel):
                continue
            try:
                if self.ws.read(rel) is text:
                    self._cache[(kind, rel)] = (text, value)
            except Exception:  # an unreadable file: nothing to take over
                continue

    def view(self, kind: str, rel: str, build: Callable[[str], Any]) -> Any:
        text = self.ws.read(rel)
        hit = self._cache.get((kind, rel))
        if hit is not None and hit[0] is text:
            return hit[1]
        value = build(text)
        self._cache[(kind, rel)] = (text, value)
        return value

    def disk_root(self, rel: str, text: str) -> Path | None:
        """The checkout's root when an index of `text` may be kept in the user cache under `rel`
        (`disk_cache`, and `text` is the checkout's own text of `rel`, not an edit), else None."""
        unedited = self.checkout.exists(rel) and text is self.checkout.read(rel)
        return self.checkout.root if self.disk_cache and unedited else None

    def _once(self, name: str, build: Callable[[], Any]) -> Any:
        if name not in self._fixed:
            self._fixed[name] = build()
        return self._fixed[name]

    # -- yaml and stubs
    @property
    def native_functions(self) -> NativeFunctions:
        def build(text: str) -> NativeFunctions:
            return NativeFunctions(text, NATIVE_FUNCTIONS, self.disk_root(NATIVE_FUNCTIONS, text))

        return self.view("yaml", NATIVE_FUNCTIONS, build)

    def validate_entries(self, entries) -> None:
        """`mpsgen.read.nfyaml.validate_entry` of each of native_functions.yaml's `entries` (the
        ruamel.yaml parse of its lines). With `disk_cache`, an entry's lines that validated before
        (the very same text: the user cache keeps the SHA-256 of each entry's lines that passed) are
        not parsed again; a refusal is never kept, so it is raised afresh with its line."""
        nf = self.native_functions
        on_disk = self.disk_root(NATIVE_FUNCTIONS, nf.text)
        for entry in entries:
            cached_index(on_disk, NATIVE_FUNCTIONS, nf.text[entry.start : entry.end], f"valid-entry-{entry.name}",
                         lambda entry=entry: validate_entry(nf.text, entry) or True)

    def stub(self, name: str):
        """The declared stub `name`, or None. Headers are read lazily (only those naming it)."""

        if "stubs" in self._fixed:
            return self._fixed["stubs"].get(name)
        cache = self._once("stub-lookups", dict)
        if name not in cache:
            cache[name] = find_stub(self.checkout, [name])
        return cache[name]

    def all_stubs(self) -> dict:
        return self._once("stubs", lambda: read_stubs(self.checkout, disk_cache=self.disk_cache))

    @property
    def ternary_takes_alpha(self) -> bool:
        """Whether this checkout's MetalShaderLibrary::exec_ternary_kernel accepts a Scalar."""

        def probe() -> bool:
            rel = f"{MPS_DIR}/MetalShaderLibrary.h"
            if not self.checkout.exists(rel):
                return False
            match = re.search(r"exec_ternary_kernel\s*\(([^;]*)\)\s*;", self.checkout.read(rel))
            return bool(match and "Scalar" in match.group(1))

        return self._once("ternary-alpha", probe)

    # -- host files
    def host_files(self) -> list[str]:
        return self._once("host-files", lambda: self.checkout.glob(OPERATIONS_DIR, "*.mm"))

    def host(self, rel: str) -> HostView:
        return self.view("host", rel, lambda text: HostView.read(text, rel))

    def registrations(self, stub: str) -> list[Registration]:
        """Every MPS registration of `stub` in operations/*.mm (direct or through a helper macro)."""
        out = []
        for rel in self.host_files():
            if functor_name_of_stub(stub) not in self.ws.read(rel) or stub not in self.host_stub_names(rel):
                continue
            out.extend(r for r in self.host(rel).registrations if r.stub == stub)
        return out

    def host_stub_names(self, rel: str) -> frozenset[str]:
        """The stubs one operations/*.mm file registers for MPS, once per text (the checkout's own
        texts kept in the user cache with `disk_cache`: every op's stub lookup asks every file)."""

        def build(text: str) -> frozenset[str]:
            def read() -> list[str]:
                return sorted({r.stub for r in HostView.read(text, rel).registrations})

            root = self.disk_root(rel, text)
            return frozenset(read() if root is None else cached_index(root, rel, text, "host-stub-names", read))

        return self.view("host-stub-names", rel, build)

    def registered_stub_names(self) -> set[str]:
        """The stubs operations/*.mm register for MPS."""
        names: set[str] = set()
        for rel in self.host_files():
            names.update(self.host_stub_names(rel))
        return names

    def definitions(self, rel: str) -> list:
        """`mpsgen.read.cpp.find_definitions` of the Workspace's text of `rel`, once per text; with
        `disk_cache` and the checkout's own text, kept in the user cache while it hashes the same."""

        def build(text: str) -> list:
            root = self.disk_root(rel, text)
            if root is None:
                return find_definitions(text, rel)
            data = cached_index(root, rel, text, "definitions",
                                lambda: [definition_to_json(d) for d in find_definitions(text, rel)])
            return [definition_from_json(d, rel) for d in data]

        return self.view("definitions", rel, build)

    def helper_names(self, rel: str) -> frozenset[str]:
        """The names of the functions and macros `definitions(rel)` holds (what a plan may find
        unused and remove), kept on their own (small) in the user cache: a plan asks every host
        file whether it defines such a name, and loads the definitions of the few that do."""

        def names() -> list[str]:
            return sorted({d.name for d in self.definitions(rel) if d.kind in HELPER_KINDS})

        def build(text: str) -> frozenset[str]:
            root = self.disk_root(rel, text)
            return frozenset(names() if root is None else cached_index(root, rel, text, "helper-names", names))

        return self.view("helper-names", rel, build)

    def masked(self, rel: str) -> str:
        return self.view("masked", rel, mask_code)

    # -- kernel files
    def kernel_files(self) -> list[str]:
        return self._once("kernel-files", lambda: self.checkout.glob(KERNELS_DIR, "*.metal"))

    def kernel(self, rel: str) -> KernelView:
        def build(text: str) -> KernelView:
            on_disk = self.disk_root(rel, text)
            if on_disk is None:
                literal = read_kernel_file(text, rel, self.masked(rel), strict=False)
            else:  # every kernel file of the checkout is read by scan: its literal reading is kept too
                literal = kernel_file_from_json(cached_index(
                    on_disk, rel, text, "kernel-file",
                    lambda: kernel_file_to_json(read_kernel_file(text, rel, self.masked(rel), strict=False))), rel)
            reading = read_kernel_cached(on_disk, text, rel, self.header_text)
            # the masked text is needed for the spans of functors a macro writes, if any
            by_macro = any(name not in literal.functors and f.line > 0 for name, f in reading.functors.items())
            spans = functor_spans(text, self.masked(rel) if by_macro else "", literal.functors, reading)
            return KernelView(rel, literal, reading, spans, registered_of(reading))

        return self.view("kernel", rel, build)

    def header_text(self, rel: str) -> str | None:
        """A header's text as the Workspace holds it, None when the checkout has none."""
        return self.ws.read(rel) if self.ws.exists(rel) else None

    def metal_compile(self, rel: str):
        """The host compiler's verdict on a .metal file as it stands in the Workspace
        (`mpsgen.read.metalhost.check.compile_metal_file`): one compile per text per run."""

        return self.view("metal-compile", rel, lambda text: compile_metal_file(self.checkout.root, rel, text=text))

    def prefetch_metal_compile(self, rels: list[str]) -> None:
        """Compile several .metal files at once (threads waiting on one host compiler each, as many
        as there are cores), so that `metal_compile` finds them done."""
        from concurrent.futures import ThreadPoolExecutor

        todo = [(rel, self.ws.read(rel)) for rel in rels if self._cache.get(("metal-compile", rel), (None,))[0] is not self.ws.read(rel)]
        if len(todo) < 2:
            return
        with ThreadPoolExecutor(max_workers=min(len(todo), os.cpu_count() or 1)) as pool:
            done = list(pool.map(lambda item: compile_metal_file(self.checkout.root, item[0], text=item[1]), todo))
        for (rel, text), result in zip(todo, done):
            self._cache[("metal-compile", rel)] = (text, result)

    def code_owners(self, rel: str):
        """The line ranges of a .metal file that are each functor's own code
        (`mpsgen.read.metalhost.owners.code_owners`): how metal-compile attributes a diagnostic."""

        return self.view("code-owners", rel, lambda text: code_owners(text, rel, self.masked(rel)))

    def c10_register_macros(self) -> frozenset[str]:
        def build() -> frozenset[str]:
            names: set[str] = set()
            for rel in self.checkout.glob(C10_METAL_DIR, "*.h"):
                names.update(re.findall(r"^[ \t]*#[ \t]*define[ \t]+(REGISTER_\w+)\(", self.checkout.read(rel), re.M))
            return frozenset(names)

        return self._once("c10-macros", build)

    # -- tests
    def testlists_parse(self):
        """common_mps.py parsed once (`mpsgen.read.testlists.parse_testlists`)."""

        return self.view("testlists", COMMON_MPS, lambda text: parse_testlists(text, COMMON_MPS))

    def declared_dtypes(self, keys) -> tuple:
        """`mpsgen.read.testlists.declared_dtypes` of `keys` in common_mps.py: (section, key, dtypes)."""

        if not self.ws.exists(COMMON_MPS):
            return ()
        return declared_dtypes(self.testlists_parse(), frozenset(keys))

    def complex_list(self) -> ComplexList | None:
        """common_mps.py's complex list (`mpsgen.read.testlists.complex_list`), None without one."""
        if not self.ws.exists(COMMON_MPS):
            return None
        return self.view("complex", COMMON_MPS, lambda text: complex_list(self.testlists_parse()))

    def opinfo_files(self) -> list[str]:
        def build() -> list[str]:
            files = [COMMON_METHODS] + self.checkout.glob(OPINFO_DEFINITIONS, "*.py")
            return [rel for rel in files if self.ws.exists(rel)]

        return self._once("opinfo-files", build)

    def opinfo_index(self, rel: str) -> dict:
        def build(text: str) -> dict:
            return cached_index(self.disk_root(rel, text), rel, text, "opinfo-calls", lambda: scan_calls(text))

        return self.view("opinfo-index", rel, build)

    def lines(self, rel: str):
        return self.view("lines", rel, LineIndex)

    def opinfo_by_name(self, rel: str) -> dict[str, list[int]]:
        """`mpsgen.read.opinfo.names_index` of an OpInfo file (which calls each op name matches)."""

        return self.view("opinfo-by-name", rel, lambda text: names_index(self.opinfo_index(rel)))

    def opinfo_names(self, rel: str) -> frozenset[str]:
        """Every op name an OpInfo file can match: its calls' names (see `opinfo_by_name`) and the
        values of their name keywords."""

        def build(text: str) -> frozenset[str]:
            keywords = {value for _, _, value in self.opinfo_index(rel)["keywords"]}
            return frozenset(self.opinfo_by_name(rel)) | keywords

        return self.view("opinfo-names", rel, build)

    def alias_of(self, op: str) -> tuple[str, Location] | None:
        """(the op name, where) of the OpInfo whose `aliases=` lists `op` (`arctan2` -> atan2), or
        None. Names are read as op names (`special.xlogy` -> special_xlogy)."""
        for rel in self.opinfo_files():
            found = self.view("opinfo-aliases", rel, lambda text, rel=rel: self._aliases(rel, text)).get(op)
            if found is not None:
                return found
        return None

    def _aliases(self, rel: str, text: str) -> dict[str, tuple[str, Location]]:
        starts = self.opinfo_index(rel)["starts"]
        offsets = [start[0] for start in starts]
        out: dict[str, tuple[str, Location]] = {}
        for m in _ALIASES.finditer(text):
            i = bisect.bisect_right(offsets, m.start()) - 1
            if i < 0:
                continue
            target = (starts[i][2].replace(".", "_"), Location(rel, self.lines(rel).line_of(starts[i][0])))
            for alias in _QUOTED.findall(m.group(1)):
                out.setdefault(alias.replace(".", "_"), target)
        return out

    def opinfos(self, op: str) -> tuple[tuple[str, tuple], ...]:
        """(file, OpInfoRefs) for every OpInfo file holding an OpInfo or python ref testing `op`."""

        found = []
        for rel in self.opinfo_files():
            if op not in self.opinfo_names(rel):
                continue
            text = self.ws.read(rel)
            try:
                refs = find_opinfos(text, rel, op, frozenset({op}), index=self.opinfo_index(rel), lines=self.lines(rel),
                                    by_name=self.opinfo_by_name(rel))
            except MpsgenError:
                continue
            if refs:
                found.append((rel, refs))
        return tuple(found)


# ------------------------------------------------------------------------------------------ facts


@dataclass(frozen=True)
class OpFacts:
    """Everything mpsgen knows of one op in the current (Workspace) state of the checkout."""

    op: str
    entries: tuple[YamlEntry, ...]
    shared: tuple[DispatchSite, ...]  # `CPU, CUDA[, MPS]: x` lines
    legacy: tuple[DispatchSite, ...]  # `MPS: x_mps` lines
    stub: Stub | None
    stub_problem: str  # why no stub was found ("" when found)
    stub_looked_for: tuple[str, ...]
    registrations: tuple[Registration, ...]  # the stub's MPS registrations
    host: HostFunction | None  # the function of the single registration
    functor: str  # the functor name (without `_functor`): the host's kernel name, else the stub's
    kernel_files: tuple[str, ...]  # .metal files defining `<functor>_functor`
    registered: Registered | None  # what the functor is registered for (all kernel files)
    unreadable: tuple[tuple[str, MpsgenError], ...]  # kernel files that could not be read
    opinfos: tuple[tuple[str, tuple], ...]  # (file, OpInfoRefs)
    # what the CPU implementation gives for integer inputs (mpsgen.read.cpuread), read when first asked
    cpu_reader: Callable[[], CpuOutput] | None = field(default=None, compare=False, repr=False)
    stub_how: str = ""  # how the stub was found, with its path:line ("" when not found)
    # the kernels of the op's entries another stub or function serves (`stub_entries` left them
    # out: pow.Scalar_out's pow_Scalar_out_mps): what they use stays, their includes too
    others: frozenset[str] = frozenset()

    @property
    def cpu_output(self) -> CpuOutput:
        """`mpsgen.read.cpuread.CpuOutput`: int2float / same / unknown (with why), from the checkout's
        `aten/src/ATen/native/*.cpp`; read on first use (only the dtype rules ask)."""

        if self.cpu_reader is None:
            return CpuOutput(UNKNOWN, why="not read")
        if "_cpu" not in self.__dict__:
            object.__setattr__(self, "_cpu", self.cpu_reader())
        return self.__dict__["_cpu"]

    @property
    def backward(self) -> bool:
        return self.op.endswith("_backward")

    @property
    def mps_on_shared(self) -> bool:
        """At least one shared line names MPS."""
        return any(groups_joined(self.shared))

    @property
    def native(self) -> bool:
        """Served on MPS through the stub only: MPS on every shared function's line, no separate
        MPS line."""
        return bool(self.shared) and not self.legacy and all(groups_joined(self.shared))

    @property
    def legacy_kernels(self) -> frozenset[str]:
        return frozenset(site.line.kernel for site in self.legacy)

    @property
    def header_symbols(self) -> frozenset[str]:
        return frozenset(line.kernel for entry in self.entries for line in entry.dispatch) | self.others

    @property
    def refs(self) -> tuple:
        return tuple(ref for _, refs in self.opinfos for ref in refs)

    @property
    def registered_dtypes(self) -> frozenset[str]:
        return self.registered.dtypes if self.registered else frozenset()

    @property
    def registered_groups(self) -> tuple[str, ...]:
        return self.registered.groups if self.registered else ()


def filter_overloads(entries: tuple[YamlEntry, ...], overloads: tuple[str, ...]) -> tuple[YamlEntry, ...]:
    """The entries named by `--overload` (and those delegating to them)."""
    if not overloads:
        return entries
    wanted = {f"{entries[0].base}.{o}" if "." not in o else o for o in overloads}
    picked = tuple(e for e in entries if e.name in wanted or (e.structured_delegate or "") in wanted)
    if not picked:
        named = list(dict.fromkeys(e.overload for e in entries if e.overload))
        plain = [e.name for e in entries if not e.overload]
        unnamed = f" ({' and '.join(plain)} {'has' if len(plain) == 1 else 'have'} none)" if plain else ""
        raise MpsgenError(
            f"no entry of {entries[0].base} has overload {', '.join(overloads)}",
            location=entries[0].location,
            hint=f"its overloads are: {', '.join(named) or 'none'}{unnamed}",
        )
    return picked


def unknown_op(nf: NativeFunctions, op: str) -> MpsgenError:
    import difflib

    names = nf.op_names
    # the same op as Python spells it: another case, an OpInfo's dotted name (nn.functional.mish,
    # special.ndtri -> special_ndtri)
    spelled = [s for s in dict.fromkeys(_spellings(op)) if s in names]
    close = spelled or difflib.get_close_matches(op, names, n=3, cutoff=0.6)
    hint = f"did you mean: {', '.join(close)}?" if close else "give the operator's base name, e.g. atan2"
    if spelled:
        hint = f"use {spelled[0]}: native_functions.yaml names an op by its ATen base name"
    # where the closest name is (no place at all when nothing is close: line 1 would point nowhere)
    entries = nf.op_entries(close[0]) if close else ()
    location = entries[0].location if entries else None
    return MpsgenError(f"no operator named {op!r} in native_functions.yaml", location=location, hint=hint)


_ALIASES = re.compile(r"\baliases\s*=\s*[(\[]([^)\]]*)[)\]]")
_QUOTED = re.compile(r"""['"]([^'"]+)['"]""")


def _spellings(op: str) -> list[str]:
    lower = op.lower()
    out = [lower, lower.replace(".", "_")]
    for prefix in ("torch.", "nn.functional.", "torch.nn.functional.", "aten::"):
        if lower.startswith(prefix):
            rest = lower[len(prefix):]
            out += [rest, rest.replace(".", "_")]
    return [s.split(".", 1)[0] if s.startswith("aten::") else s for s in out]


@dataclass(frozen=True)
class SharedFunction:
    """The function CPU (and CUDA) dispatch to, as the checkout's `aten/src/ATen/native/*.cpp`
    define it: where, and the dispatch stubs (declared ones) and ATen ops its body calls, directly
    or through the same file's helpers (`mpsgen.read.cpuread.Use`, each with its path:line)."""

    name: str
    location: Location
    stubs: tuple[tuple[str, Location], ...]
    ops: tuple[tuple[str, Location], ...]
    methods: tuple[tuple[str, Location], ...] = ()  # whole-tensor reductions called as methods: `t.mean()`
    # a checkout without .cpp: the complete record of what the function calls (`facts.recorded`)
    recorded: RecordedCall | None = None


def shared_functions(views: Views, names) -> tuple[SharedFunction, ...]:
    """Those of `names` (the functions of the op's CPU lines) the checkout's .cpp files define,
    with what each calls; none when no .cpp defines one (a wheel ships none), except a function
    whose whole call is recorded (`facts.recorded.RECORDED_CALLS`: threshold_backward_out), which
    only a checkout with no .cpp at all takes from the record."""
    if not views.checkout.glob(NATIVE_DIR, "*.cpp"):
        return tuple(_recorded_function(record) for name in names
                     if (record := recorded_call_of_function(name)) is not None)
    return tuple(f for name in names if (f := _shared_function(views, name)) is not None)


def _recorded_function(record: RecordedCall) -> SharedFunction:
    return SharedFunction(record.function, record.call.location, ((record.stub, record.call.location),), (),
                          recorded=record)


def _shared_function(views: Views, name: str) -> SharedFunction | None:
    for rel in views.checkout.glob(NATIVE_DIR, "*.cpp"):
        if name not in views.view("words", rel, _words):  # the file's identifiers, once a text
            continue
        text = views.ws.read(rel)
        cpu = views.view("cpu", rel, lambda t, rel=rel: read_cpu_file(t, rel))
        if name not in cpu.uses:
            continue
        line = min((ln for _, ln in cpu.functions.get(name, ())), default=0)
        if not line:
            line = next((d.location.line for d in find_definitions(text, rel)
                         if d.name == name and d.kind in ("function", "impl-func")), 1)
        uses = cpu.uses_of(name)
        stubs = tuple(dict.fromkeys((u.name, Location(rel, u.line)) for u in uses
                                    if u.kind == "stub" and views.stub(u.name) is not None))
        ops = tuple(dict.fromkeys((u.name, Location(rel, u.line)) for u in uses if u.kind == "op"))
        methods = tuple(dict.fromkeys((u.name, Location(rel, u.line)) for u in uses if u.kind == "method"))
        return SharedFunction(name, Location(rel, line), stubs, ops, methods)
    return None


def _words(text: str) -> frozenset[str]:
    return frozenset(re.findall(r"\w+", text))


def cpu_functions(entries) -> list[str]:
    """The functions the op's CPU dispatch lines name (the shared one, or CPU's own)."""
    return list(dict.fromkeys(line.kernel for e in entries for line in e.dispatch if "CPU" in line.keys))


# words an op's name carries that its stub's does not: mse_loss -> mse_stub, _prelu_kernel -> prelu_stub
_GENERIC_WORDS = frozenset({"loss", "kernel"})


@functools.lru_cache(maxsize=4096)
def name_words(name: str) -> tuple[str, ...]:
    """`mse_loss` -> (mse,); `GeluBackwardKernel` -> (gelu, backward); `smooth_l1_stub` -> (smooth, l1)."""
    stem = name[: -len("_stub")] if name.endswith("_stub") else name
    stem = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", stem).lower()
    return tuple(w for w in stem.split("_") if w and w not in _GENERIC_WORDS)


_SCHEMA_TO_STUB = {"Scalar": ("const Scalar&",), "float": ("double", "const double"), "int": ("int64_t", "const int64_t"),
                   "bool": ("bool",), "float?": ("std::optional<double>",), "Scalar?": ("const std::optional<Scalar>&",)}


def signature_fits(stub: Stub, entry: YamlEntry) -> bool:
    """Whether a stub's declared parameters take the entry's arguments: an iterator, then one
    parameter per non-tensor argument besides `reduction` (the shared function reduces, or passes
    the norm it makes of it first: mse_backward_stub's Scalar), a `str` taken as an enum made from
    it (GeluType from `approximate`)."""
    if stub.iterator_type is None or stub.returns != "void":
        return False
    args = [type_ for type_, name, kw in entry.arguments
            if not type_.startswith("Tensor") and name != "reduction" and not (kw and "!" in type_)]
    params = list(stub.params[1:])
    reduces = any(name == "reduction" for _, name, _ in entry.arguments)
    if reduces and len(params) == len(args) + 1 and params[0] in ("const Scalar&", "double"):
        params = params[1:]  # a loss's backward takes the norm its shared function makes of `reduction`
    if len(args) != len(params):
        return False
    for type_, param in zip(args, params):
        if type_ == "str":
            if any(c in param for c in "&*<") or param in ("double", "bool", "int64_t"):
                return False
        elif type_ in _SCHEMA_TO_STUB and param not in _SCHEMA_TO_STUB[type_]:
            return False
    return True


def resolve_stub(views: Views, op: str, shared: tuple[DispatchSite, ...], override: str | None = None, *,
                 entries: tuple[YamlEntry, ...] = ()):
    """(stub or None, why not, names looked for, how it was found). Order: `--stub`; the stub the
    CPU function calls (its body in `aten/src/ATen/native/*.cpp`, through the same file's helpers:
    `mse_loss_out` calls `mse_stub`; several is a refusal listing them); `<op>_stub`, the shared
    kernel's stem, the name without `special_`; the one stub of the headers named like the op once
    its generic words go (`mse_loss` -> `mse_stub`, `gelu` -> `GeluKernel`) whose declared
    parameters take the op's arguments (`signature_fits`; several is a refusal listing them); else
    the one stub registered for MPS whose name starts with the op's (`lerp` ->
    `lerp_kernel_tensor_weight` once new-op registered it)."""
    if override:
        stub = views.stub(override)
        return (stub, ("" if stub else f"--stub {override}: no such DECLARE_DISPATCH in {NATIVE_DIR}/*.h"), (override,),
                "--stub" if stub else "")
    entries = entries or tuple(dict.fromkeys(site.entry for site in shared))
    functions = shared_functions(views, cpu_functions(entries)) if entries else ()
    called = [(f, name, where) for f in functions for name, where in f.stubs]
    if called:
        names = list(dict.fromkeys(name for _, name, _ in called))
        picked = unserved_stub(views, op, called)
        if picked is not None:
            return picked
        if len(names) > 1:
            calls = ", ".join(f"{name} ({where}, in {f.name})" for f, name, where in called)
            return (None, f"the CPU functions of {op} call several dispatch stubs: {calls}; "
                          f"which one serves {op} is not one mpsgen can tell", tuple(names), "")
        f, name, where = called[0]
        if f.recorded is not None:
            stub = views.stub(name)
            contradicted = mismatch(f.recorded, stub)
            if contradicted:
                return None, f"{contradicted}; the record does not hold for this checkout", (name,), ""
            return stub, "", (name,), f.recorded.describe()
        return views.stub(name), "", (name,), f"called by {f.name} at {where}"
    candidates = stub_candidates(op, shared) if shared else []
    for name in candidates:
        stub = views.stub(name)
        if stub is not None:
            return stub, "", tuple(candidates), f"named after the op, declared at {stub.location}"
    carrier = shared[0].entry if shared else next((e for e in entries if e.dispatch), None)
    if carrier is not None and views.checkout.glob(NATIVE_DIR, "*.h"):
        words = name_words(op)
        named = sorted((s for n, s in views.all_stubs().items() if name_words(n) == words and n not in candidates),
                       key=lambda s: s.name)
        fitting = [s for s in named if signature_fits(s, carrier)]
        if len(fitting) == 1:
            stub = fitting[0]
            return (stub, "", tuple(candidates) + (stub.name,),
                    f"the header's stub named like {op}, declared at {stub.location} as {stub.signature}, "
                    f"which takes {carrier.name}'s arguments")
        if len(fitting) > 1:
            listed = ", ".join(f"{s.name} ({s.location})" for s in fitting)
            return (None, f"several stubs declared in {NATIVE_DIR}/*.h are named like {op} and take its "
                          f"arguments: {listed}", tuple(s.name for s in fitting), "")
    prefixes = (f"{op}_",) + ((f"{op[len('special_'):]}_",) if op.startswith("special_") else ())
    registered = sorted(n for n in views.registered_stub_names() if n.startswith(prefixes) and n not in candidates)
    declared = [stub for name in registered if (stub := views.stub(name)) is not None]
    if len(declared) == 1:
        return declared[0], "", tuple(candidates) + (declared[0].name,), f"registered for MPS at {declared[0].location}"
    looked = ", ".join(candidates) or "nothing (no shared dispatch line)"
    why = f"no dispatch stub found for {op} (looked for {looked} in {NATIVE_DIR}/*.h"
    if functions:
        why += f"; {', '.join(f'{f.name} ({f.location})' for f in functions)} call{'s' if len(functions) == 1 else ''} none"
    why += ")"
    if len(declared) > 1:
        why += f"; several stubs named after it are registered for MPS: {', '.join(s.name for s in declared)}"
    if carrier is not None and not functions:
        why += part_named_stubs(views, op, carrier)
    return None, why, tuple(candidates), ""


def unserved_stub(views: Views, op: str, called) -> tuple | None:
    """When the op's CPU functions call several stubs and every one but one is already registered
    for MPS (pow: pow_tensor_scalar_stub has its REGISTER_DISPATCH, pow_tensor_tensor_stub none),
    `resolve_stub`'s answer for the one left, saying where the others serve MPS; once that one is
    registered too, the one whose MPS host function launches the functor named after the op (what
    the migration wrote: `pow`), so a second run and `verify` see the same op; else None."""
    names = list(dict.fromkeys(name for _, name, _ in called))
    if len(names) < 2 or any(f.recorded is not None for f, _, _ in called):
        return None
    registered = {name: views.registrations(name) for name in names}
    left = [name for name in names if not registered[name]]
    if not left:
        left = [name for name in names if len(registered[name]) == 1 and _launches(views, registered[name][0]) == op]
    if len(left) != 1:
        return None
    f, name, where = next(c for c in called if c[1] == left[0])
    served = "; ".join(f"{other} ({at}, in {g.name}) already serves MPS (REGISTER_DISPATCH at "
                       f"{registered[other][0].location})" for g, other, at in called if other != name)
    return views.stub(name), "", tuple(names), f"called by {f.name} at {where}; {served}"


def _launches(views: Views, registration: Registration) -> str | None:
    host = views.host(registration.location.path).function(registration)
    return host.kernel if host is not None else None


def picked_entries(views: Views, entries: tuple[YamlEntry, ...], stub) -> tuple[YamlEntry, ...] | None:
    """The entries of a stub `resolve_stub` picked among several the op's CPU functions call
    (`unserved_stub`: `stub_entries`), or None when they call one stub or none."""
    if stub is None or len({name for f in shared_functions(views, cpu_functions(entries)) for name, _ in f.stubs}) < 2:
        return None
    return stub_entries(views, entries, stub.name)


def stub_entries(views: Views, entries: tuple[YamlEntry, ...], stub: str) -> tuple[YamlEntry, ...]:
    """The entries a stub picked among several serves (`unserved_stub`): those whose CPU function
    calls it, and those delegating to them (pow.Tensor_Tensor_out, pow.Tensor_Tensor, pow_.Tensor;
    not pow.Scalar_out, whose CPU function calls no stub and whose MPS function stays)."""
    calling = {e.name for e in entries
               if any(name == stub for f in shared_functions(views, cpu_functions((e,))) for name, _ in f.stubs)}
    return tuple(e for e in entries if e.name in calling or (e.structured_delegate or "") in calling)


def part_named_stubs(views: Views, op: str, carrier: YamlEntry) -> str:
    """What to say of the stubs named like the start of an op whose stub was not found and whose
    shared function was not read (a wheel ships no .cpp): `threshold_stub` for threshold_backward,
    whose shared function passes it value 0. Each candidate, and why the headers alone do not
    confirm it: its declared parameters do not take the op's arguments ("" when there is none)."""
    named = sorted((s for n, s in views.all_stubs().items()
                    if op.startswith(n.removesuffix("_stub") + "_") and n.endswith("_stub")), key=lambda s: s.name)
    if not named:
        return ""
    args = [name for type_, name, kw in carrier.arguments if not type_.startswith("Tensor") and not (kw and "!" in type_)]
    given = f"{carrier.name}'s {len(args)} non-tensor argument{'' if len(args) == 1 else 's'} ({', '.join(args) or 'none'})"
    listed = ", ".join(f"{s.name} ({s.location}: {s.signature}, which "
                       f"{'takes' if signature_fits(s, carrier) else 'does not take'} {given})" for s in named)
    return (f"; named like its start: {listed}; a name alone is no proof, and only the shared function's call "
            f"(in {NATIVE_DIR}/*.cpp, which this checkout lacks) says which stub and values it passes")


def read_op(views: Views, op: str, *, stub: str | None = None, overloads: tuple[str, ...] = ()) -> OpFacts:
    """The facts of `op` (an unknown op is bad input). `stub` and `overloads` are the user's
    `--stub`/`--overload` choices."""
    nf = views.native_functions
    entries = nf.op_entries(op)
    if not entries:
        raise unknown_op(nf, op)
    entries = filter_overloads(entries, overloads)
    shared = shared_sites(entries)
    found, problem, looked, how = resolve_stub(views, op, shared, stub, entries=entries)
    functor = functor_name_of_stub(found.name) if found is not None else op
    picked = picked_entries(views, entries, found) if not stub else None
    if picked is not None:
        # one stub of several (`unserved_stub`): the migration is its overloads', and its functor
        # is named after the op, as 2.15 names pow's (`pow_dense_float_float`)
        others = frozenset(line.kernel for e in entries if e not in picked for line in e.dispatch)
        entries = picked
        shared = shared_sites(entries)
        functor = op
    else:
        others = frozenset()
    legacy = tuple(DispatchSite(e, line) for e in entries for line in e.dispatch if is_legacy_line(line))
    registrations: tuple[Registration, ...] = ()
    host = None
    if found is not None:
        registrations = tuple(views.registrations(found.name))
        if len(registrations) == 1:
            host = views.host(registrations[0].location.path).function(registrations[0])
            if host is not None and host.kernel:
                functor = host.kernel
    kernel_files = []
    unreadable = []
    pairs: set = set()
    line = 0
    for rel in views.kernel_files():
        if functor not in views.ws.read(rel):
            continue  # neither the struct nor a macro call naming it
        try:
            kernel = views.kernel(rel)
        except MpsgenError as exc:
            unreadable.append((rel, exc))
            continue
        if functor in kernel.file.broken:  # the op's own functor cannot be read; another's is not its business
            unreadable.append((rel, kernel.file.broken[functor]))
            continue
        if functor in kernel.functors:
            kernel_files.append(rel)
        if functor in kernel.registered:
            pairs |= kernel.registered[functor].pairs
            line = line or kernel.registered[functor].line
    registered = Registered(frozenset(pairs), line) if kernel_files else None
    return OpFacts(
        op=op,
        entries=entries,
        shared=shared,
        legacy=legacy,
        stub=found,
        stub_problem=problem,
        stub_looked_for=looked,
        stub_how=how,
        registrations=registrations,
        host=host,
        functor=functor,
        kernel_files=tuple(kernel_files),
        registered=registered,
        unreadable=tuple(unreadable),
        opinfos=reaching_stub(views.opinfos(op), entries, found),
        cpu_reader=lambda: cpu_output(views, op, entries),
        others=others,
    )


def stub_serves(entry: YamlEntry, stub: Stub) -> bool:
    """Whether the stub can carry the overload's arguments: as many scalars besides the iterator as
    the overload has non-tensor arguments (`round_stub` takes none: `round.decimals` has `decimals`)."""
    scalars = [name for type_, name, kwarg_only in entry.arguments if not type_.startswith("Tensor") and not (kwarg_only and "!" in type_)]
    return len(scalars) == len(stub.params) - 1


def reaching_stub(opinfos: tuple[tuple[str, tuple], ...], entries, stub: Stub | None) -> tuple[tuple[str, tuple], ...]:
    """The OpInfos whose calls reach the op's stub: a variant whose samples pass keyword arguments
    (`rounddecimals_0`: `decimals=0`) calls the overloads whose schemas take them; when none of those
    is one the stub serves (`round.decimals` through `round_decimals_stub`, not `round_stub`), its tests
    are another kernel's and it is left out. Variants without keywords stay."""
    if stub is None:
        return opinfos
    out = []
    for rel, refs in opinfos:
        kept = []
        for ref in refs:
            wanted = set(ref.call_keywords)
            calls = [e for e in entries if wanted <= {name for _type, name, _kw in e.arguments}] if wanted else list(entries)
            if not wanted or any(stub_serves(e, stub) for e in calls):
                kept.append(ref)
        out.append((rel, tuple(kept)))
    return tuple(out)


def all_native_ops(views: Views) -> tuple[str, ...]:
    """Every op whose shared line serves MPS through a declared stub (ops with a separate `MPS:`
    line left are migrate candidates, not native)."""
    nf = views.native_functions
    views.all_stubs()  # one read of every header: every op looks its stub up
    found = []
    for op in nf.op_names:
        entries = nf.op_entries(op)
        shared = shared_sites(entries)
        if not any(groups_joined(shared)):
            continue
        if any(is_legacy_line(line) for e in entries for line in e.dispatch):
            continue
        if resolve_stub(views, op, shared)[0] is not None:
            found.append(op)
    return tuple(found)


def cpu_output(views: Views, op: str, entries: tuple[YamlEntry, ...]) -> CpuOutput:
    """What the CPU implementation of `op` (its yaml `entries`) gives for integer inputs, from the
    checkout's `aten/src/ATen/native/*.cpp` (each read by `mpsgen.read.cpuread`, once per text)."""
    files = views.checkout.glob(NATIVE_DIR, "*.cpp")
    if not files:
        return CpuOutput(UNKNOWN, why=f"this checkout has no {NATIVE_DIR}/*.cpp (a wheel ships none): "
                                      f"the CPU output dtype of {op} was not read")
    structured = any(e.structured for e in entries)
    if structured:
        # the meta function is named after the functional entry (`TORCH_META_FUNC2` with its overload)
        keys = {(e.base, e.overload) for e in entries if e.structured_delegate and not e.base.endswith("_")}
        found = _cpu_definitions(views, files, {k[0] for k in keys}, lambda cpu: [(cpu.metas[k], k) for k in keys if k in cpu.metas])
        what = "meta function"
    else:
        kernels = {line.kernel for e in entries for line in e.dispatch if "CPU" in line.keys}
        found = _cpu_definitions(views, files, kernels, lambda cpu: [((function_kind(cpu, k), cpu.functions[k][0][1]), k)
                                                          for k in sorted(kernels) if k in cpu.functions])
        what = "CPU kernel"
    if not found:
        return CpuOutput(UNKNOWN, why=f"no {what} of {op} found in {NATIVE_DIR}/*.cpp")
    if not any(kind for _, kind, _ in found):
        rel, _, line = found[0]
        return CpuOutput(UNKNOWN, Location(rel, line),
                         f"the {what} of {op} builds its iterator with no unary/binary builder mpsgen reads "
                         f"(e.g. a TensorIteratorConfig of its own)")
    found = [(rel, kind, line) for rel, kind, line in found if kind]
    kinds = {kind for _, kind, _ in found}
    if len(kinds) > 1 or kinds == {UNKNOWN}:
        rel, _, line = found[0]
        return CpuOutput(UNKNOWN, Location(rel, line), f"the {what}s of {op} build its iterator in more than one way")
    rel, kind, line = found[0]
    return CpuOutput(kind, Location(rel, line))


def _cpu_definitions(views: Views, files, names, pick) -> list[tuple[str, str, int]]:
    out = []
    for rel in files:
        text = views.ws.read(rel)
        if not any(name in text for name in names):
            continue
        cpu = views.view("cpu", rel, lambda t, rel=rel: read_cpu_file(t, rel))
        out.extend((rel, kind, line) for (kind, line), _ in pick(cpu))
    return out
