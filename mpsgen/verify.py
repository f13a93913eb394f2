"""`mpsgen verify`: prove that an op's MPS change is complete.

Three stages, each `passed`, `failed` or `skipped` with a reason:

1. static: reads the checkout (any OS) with the same readers new-op and migrate use;
2. build: runs the configured build command, streaming its output to a log file;
3. tests: runs `test/test_mps.py -k test_output_match_<opinfo>` and reads unittest's verbose output.

A stage that did not run is never reported as passed. Library code returns a `VerifyReport`; the CLI
renders it (table, JSON, JUnit)."""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from mpsgen.checkout import (
    COMMON_METHODS,
    COMMON_MPS,
    KERNELS_DIR,
    NATIVE_FUNCTIONS,
    OPERATIONS_DIR,
    Checkout,
    Workspace,
)
from mpsgen.cpp import mask_code, match_brace
from mpsgen.errors import MpsgenError
from mpsgen.model import Location

PASSED, FAILED, SKIPPED = "passed", "failed", "skipped"
STAGES = ("static", "build", "tests")
DEFAULT_BUILD_CMD = "ninja torch_cpu"
DEFAULT_BUILD_DIR = "build"
ASSUME_MPS_ENV = "MPSGEN_ASSUME_MPS"
TEST_FILE = "test/test_mps.py"

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
_FLOATS = frozenset({"float32", "float16", "bfloat16"})
_INTEGERS = frozenset({"int64", "int32", "int16", "uint8", "int8", "bool"})
_COMPLEX = frozenset({"complex64", "complex32"})
# Dtypes the MPS tests never run.
_NOT_ON_MPS = frozenset({"float64", "complex128"})
# What a kernel must cover when the op has no readable OpInfo: every float op runs float and half.
_BASELINE = frozenset({"float32", "float16"})


# --------------------------------------------------------------------------------------------- data


@dataclass(frozen=True)
class Finding:
    """One problem: which check found it, where, what is wrong and what to do."""

    check: str
    op: str
    location: Location
    message: str
    hint: str

    def __str__(self) -> str:
        return f"{self.location}: {self.message} ({self.hint})"


@dataclass(frozen=True)
class CheckResult:
    """One static check of one op (or the build, or one test): status, and why when not passed."""

    check: str
    op: str
    status: str
    findings: tuple[Finding, ...] = ()
    reason: str = ""


@dataclass(frozen=True)
class TestOutcome:
    """One unittest result from test_mps.py."""

    __test__ = False  # not a pytest class

    op: str
    test: str
    dtype: str
    outcome: str  # passed / failed / error / xfail / unexpected-success / skipped
    detail: str = ""

    @property
    def bad(self) -> bool:
        return self.outcome in ("failed", "error", "unexpected-success")


@dataclass(frozen=True)
class StageResult:
    name: str
    status: str
    reason: str = ""
    checks: tuple[CheckResult, ...] = ()
    tests: tuple[TestOutcome, ...] = ()
    log: str | None = None
    command: tuple[str, ...] = ()
    duration: float = 0.0

    @property
    def findings(self) -> tuple[Finding, ...]:
        return tuple(f for c in self.checks for f in c.findings)


@dataclass(frozen=True)
class VerifyReport:
    root: str
    ops: tuple[str, ...]
    stages: tuple[StageResult, ...]

    @property
    def exit_code(self) -> int:
        return 1 if any(s.status == FAILED for s in self.stages) else 0

    def stage(self, name: str) -> StageResult:
        return next(s for s in self.stages if s.name == name)


@dataclass(frozen=True)
class VerifyOptions:
    static_only: bool = False
    build_cmd: str | None = None
    build_dir: str | None = None
    require_build: bool = False
    require_tests: bool = False
    grad: bool = False
    timeout: float | None = None
    assume_mps: bool = False
    log_dir: str | None = None
    require_metal_compile: bool = False


# A progress callback: (stage, completed, total or None, message).
Progress = Callable[[str, int, "int | None", str], None]


def _no_progress(stage: str, done: int, total: int | None, message: str) -> None:
    return None


# ------------------------------------------------------------------------------------ op selection


def _nf(checkout: Checkout):
    from mpsgen.nfyaml import NativeFunctions

    return NativeFunctions(checkout.read(NATIVE_FUNCTIONS), NATIVE_FUNCTIONS)


def check_op_names(checkout: Checkout, ops: tuple[str, ...]) -> tuple[str, ...]:
    """The ops, validated against native_functions.yaml (an unknown name is bad input, exit 2)."""
    import difflib

    nf = _nf(checkout)
    for op in ops:
        if not nf.op_entries(op):
            close = difflib.get_close_matches(op, nf.op_names, n=3, cutoff=0.6)
            raise MpsgenError(
                f"no operator named {op!r} in native_functions.yaml",
                location=Location(NATIVE_FUNCTIONS, 1),
                hint=f"did you mean: {', '.join(close)}?" if close else "give the operator's base name, e.g. atan2",
            )
    return tuple(dict.fromkeys(ops))


def all_native_ops(checkout: Checkout) -> tuple[str, ...]:
    """Every op whose shared `CPU, CUDA, MPS: ...` line serves MPS through a declared stub (ops that
    still have a separate `MPS: x_mps` line are migrate candidates, not native, and are left out)."""
    from mpsgen.resolve import DispatchSite, is_legacy_line, is_shared_line, stub_candidates
    from mpsgen.stubs import read_stubs

    nf = _nf(checkout)
    stubs = read_stubs(checkout)
    found = []
    for op in nf.op_names:
        shared = tuple(
            DispatchSite(e, line) for e in nf.op_entries(op) for line in e.dispatch if is_shared_line(line)
        )
        legacy = any(is_legacy_line(line) for e in nf.op_entries(op) for line in e.dispatch)
        if legacy or not any("MPS" in site.line.keys for site in shared):
            continue  # not (yet) served by a stub on MPS: a migrate candidate
        if any(name in stubs for name in stub_candidates(op, shared)):
            found.append(op)
    return tuple(found)


_IDENT_PATTERNS = (
    re.compile(r"\bstruct\s+(\w+)_functor\b"),
    re.compile(r"\bREGISTER_\w+\s*\(\s*(\w+)"),
    re.compile(r"\bREGISTER_DISPATCH\s*\(\s*(\w+)_stub\b"),
    re.compile(r"\bexec_\w+_kernel\w*\s*\(\s*\w+\s*,\s*\"(\w+)\""),
    re.compile(r"\bTORCH_IMPL_FUNC\s*\(\s*(\w+?)(?:_out)?_mps\b"),
)


def changed_ops(checkout: Checkout, base: str = "HEAD") -> tuple[str, ...]:
    """Ops touched by the working tree's diff against `base` (and by untracked files): yaml entries
    whose lines changed, and the op names that changed `.metal`/`.mm` lines mention (functors,
    REGISTER_* lines, REGISTER_DISPATCH stubs, exec_*_kernel names, TORCH_IMPL_FUNC names)."""
    root = checkout.root
    diff = _git(root, ["diff", "--relative", "--no-color", "--no-ext-diff", "-U0", base, "--", "."])
    untracked = _git(root, ["ls-files", "--others", "--exclude-standard", "--", "."]).splitlines()
    nf = _nf(checkout)
    names: list[str] = []
    yaml_lines: set[int] = set()
    current = None
    for line in diff.splitlines():
        if line.startswith("+++ "):
            current = line[6:] if line.startswith("+++ b/") else None
        elif line.startswith("--- a/") and current is None:
            continue
        elif line.startswith("@@") and current == NATIVE_FUNCTIONS:
            match = re.match(r"@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@", line)
            if match:
                start, count = int(match.group(1)), int(match.group(2) or "1")
                yaml_lines.update(range(start, start + max(count, 1)))
        elif line[:1] in "+-" and not line.startswith(("+++", "---")) and current and current.endswith((".metal", ".mm")):
            names.extend(_idents(line[1:]))
    for rel in untracked:
        if rel.endswith((".metal", ".mm")):
            names.extend(_idents((root / rel).read_text(encoding="utf-8", errors="replace")))
    ops: list[str] = []
    for entry in nf.entries:
        first, last = entry.location.line, entry.location.line + nf.text[entry.start : entry.end].count("\n")
        if any(first <= n <= last for n in yaml_lines):
            ops.append(entry.base)
    for name in names:
        for candidate in (name, f"special_{name}"):
            if nf.op_entries(candidate):
                ops.append(candidate)
                break
    return tuple(dict.fromkeys(ops))


def _idents(text: str) -> list[str]:
    return [m.group(1) for pattern in _IDENT_PATTERNS for m in pattern.finditer(text)]


def _git(root: Path, args: list[str]) -> str:
    try:
        result = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        raise MpsgenError("--changed needs git, which is not installed", hint="install git or name the ops") from None
    if result.returncode != 0:
        message = (result.stderr.strip().splitlines() or ["git failed"])[-1]
        raise MpsgenError(f"git {args[0]} failed: {message}", hint="run inside a git checkout, or check --base REF")
    return result.stdout


# ---------------------------------------------------------------------------------- static checks

STATIC_CHECKS = ("yaml-dispatch", "stub-registration", "kernel-name", "dtype-coverage", "placeholder",
                 "legacy", "test-lists", "balance", "metal-compile")


@dataclass(frozen=True)
class _HostFunction:
    name: str
    params: tuple[str, ...]
    location: Location
    body: str  # raw text of the body (or macro body)
    body_line: int
    kernel: str | None  # the exec_*_kernel name string
    kernel_line: int


class _Reader:
    """Reads shared by every op of one run, each once."""

    def __init__(self, checkout: Checkout):
        self.checkout = checkout
        self.ws = Workspace(checkout)
        from mpsgen.resolve import Context

        self.ctx = Context(self.ws)
        self._kernels: dict[str, object] = {}
        self._registered: dict[str, dict[str, tuple[set[str], int]]] = {}
        self._xfail = None
        from mpsgen.metalhost.verifycheck import MetalCompiles

        self.metal = MetalCompiles(checkout.root)

    def kernel_files(self) -> list[str]:
        return self.checkout.glob(KERNELS_DIR, "*.metal")

    def kernel(self, rel: str):
        from mpsgen.metal import read_kernel_file

        if rel not in self._kernels:
            self._kernels[rel] = read_kernel_file(self.checkout.read(rel), rel)
        return self._kernels[rel]

    def registered(self, rel: str) -> dict[str, tuple[set[str], int]]:
        if rel not in self._registered:
            self._registered[rel] = registered_dtypes(self.checkout.read(rel), self.kernel(rel))
        return self._registered[rel]

    def xfail_dicts(self):
        from mpsgen.testlists import find_xfail_dicts

        if self._xfail is None:
            self._xfail = find_xfail_dicts(self.checkout.read(COMMON_MPS), COMMON_MPS)
        return self._xfail


_MACRO_DEF = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)\(([^)]*)\)((?:[^\n]*\\\r?\n)*[^\n]*)", re.M)
_CALL_LINE = re.compile(r"^[ \t]*(\w+)\s*\(([^()]*)\)\s*;?[ \t]*\r?$", re.M)
_INNER_CALL = re.compile(r"\b(\w+)\s*\(([^()]*)\)")


def registered_dtypes(text: str, kernel) -> dict[str, tuple[set[str], int]]:
    """functor name -> (torch dtypes it is registered for, line of its first registration).

    Follows the file's own macros (`REGISTER_FLOAT_BINARY_OP(x)`, `INSTANTIATE_..._KERNELS(float,
    float)`) down to the c10 `REGISTER_*_OP(NAME, DTYPEI, ...)` lines; lines under `#if` count."""
    masked = mask_code(text)
    macros = {}
    for match in _MACRO_DEF.finditer(masked):
        params = [p.strip() for p in match.group(2).split(",") if p.strip()]
        macros[match.group(1)] = (params, match.group(3).replace("\\\n", "\n").replace("\\\r\n", "\n"))
    out: dict[str, tuple[set[str], int]] = {}

    def expand(name: str, args: list[str], line: int, depth: int) -> None:
        if depth > 8:
            return
        if name in macros:
            params, body = macros[name]
            mapping = dict(zip(params, args))
            for inner in _INNER_CALL.finditer(body):
                inner_args = [mapping.get(a.strip(), a.strip()) for a in inner.group(2).split(",")]
                expand(inner.group(1), inner_args, line, depth + 1)
            return
        if name.startswith("REGISTER_") and len(args) >= 2:
            dtype = METAL_TO_TORCH.get(args[1])
            entry = out.setdefault(args[0], (set(), line))
            if dtype:
                entry[0].add(dtype)

    for match in _CALL_LINE.finditer(masked):
        start = match.start()
        if start > 0 and masked[: start - 1].rstrip("\r").endswith("\\"):
            continue  # inside a #define body
        name = match.group(1)
        if name in macros or name.startswith("REGISTER_"):
            expand(name, [a.strip() for a in match.group(2).split(",")], masked.count("\n", 0, start) + 1, 0)
    return out


def _find_function(text: str, path: str, name: str) -> tuple[tuple[str, ...], int, str, int] | None:
    """(params, line, body text, body line) of the definition of `name` in C++ source."""
    from mpsgen.stubs import split_params

    masked = mask_code(text)
    for match in re.finditer(rf"\b{re.escape(name)}\s*\(", masked):
        paren = match.end() - 1
        close = match_brace(masked, paren)
        if close < 0:
            continue
        after = masked[close + 1 :].lstrip()
        if not after.startswith("{"):
            continue  # a call or declaration
        brace = masked.index("{", close)
        end = match_brace(masked, brace)
        params = split_params(_strip_defaults(masked[paren + 1 : close]))
        body_end = end + 1 if end >= 0 else len(text)
        return params, masked.count("\n", 0, match.start()) + 1, text[brace:body_end], masked.count("\n", 0, brace) + 1
    return None


def _strip_defaults(params: str) -> str:
    return ",".join(part.split("=", 1)[0] for part in params.split(","))


_EXEC = re.compile(r"\bexec_\w+_kernel\w*\s*\(\s*[\w.]+\s*,\s*\"(\w+)\"")


def _host_function(reader: _Reader, reg) -> _HostFunction | None:
    """The function a MPS registration names, read from its host file."""
    from mpsgen.host import _helper_macros
    from mpsgen.stubs import split_params

    path = reg.location.path
    text = reader.checkout.read(path)
    helper = re.fullmatch(r"(\w+)\((\w+)\)", reg.function)
    if helper:
        macro, name = helper.groups()
        for macro_name, param, body in _helper_macros(text):
            if macro_name != macro:
                continue
            signature = re.search(rf"{param}\s*##\s*\w*\s*\(([^)]*)\)", body)
            params = split_params(_strip_defaults(signature.group(1))) if signature else ()
            kernel = name if re.search(rf"exec_\w+_kernel\w*\s*\(\s*\w+\s*,\s*#{param}\b", body) else None
            return _HostFunction(reg.function, params, reg.location, body, reg.location.line, kernel, reg.location.line)
        return None
    found = _find_function(text, path, reg.function)
    if found is None:
        return None
    params, line, body, body_line = found
    call = _EXEC.search(body)
    kernel_line = body_line + body.count("\n", 0, call.start()) if call else body_line
    return _HostFunction(reg.function, params, Location(path, line), body, body_line,
                         call.group(1) if call else None, kernel_line)


@dataclass
class _OpFacts:
    op: str
    entries: tuple
    shared: tuple
    legacy: tuple
    stub: object | None = None
    registrations: list = field(default_factory=list)
    host: _HostFunction | None = None
    kernel_files: list[str] = field(default_factory=list)  # .metal files defining the functor
    opinfos: tuple = ()
    opinfo_error: str = ""
    registered: frozenset[str] = frozenset()
    unreadable: list = field(default_factory=list)  # (path, MpsgenError) of kernel files that did not parse


def static_checks(checkout: Checkout, ops: tuple[str, ...], reader: _Reader | None = None) -> tuple[CheckResult, ...]:
    reader = reader or _Reader(checkout)
    results: list[CheckResult] = []
    for op in ops:
        results.extend(check_op(reader, op))
    return tuple(results)


def check_op(reader: _Reader, op: str) -> list[CheckResult]:
    """Every static check of one op, in STATIC_CHECKS order. A check whose prerequisites failed is
    skipped with the reason; a reader error becomes a finding of the check that hit it."""
    facts = _facts(reader, op)
    out = []
    for check, func in (
        ("yaml-dispatch", _check_yaml),
        ("stub-registration", _check_stub),
        ("kernel-name", _check_kernel_name),
        ("dtype-coverage", _check_dtypes),
        ("placeholder", _check_placeholder),
        ("legacy", _check_legacy),
        ("test-lists", _check_test_lists),
        ("balance", _check_balance),
        ("metal-compile", _check_metal_compile),
    ):
        try:
            result = func(reader, facts)
        except MpsgenError as exc:
            location = exc.location or Location(NATIVE_FUNCTIONS, 1)
            result = [Finding(check, op, location, exc.message, exc.hint or "fix the file so that it can be read")]
        if isinstance(result, str):
            out.append(CheckResult(check, op, SKIPPED, reason=result))
        else:
            out.append(CheckResult(check, op, FAILED if result else PASSED, tuple(result)))
    return out


def _facts(reader: _Reader, op: str) -> _OpFacts:
    from mpsgen.host import mps_registrations
    from mpsgen.resolve import DispatchSite, is_legacy_line, is_shared_line, stub_candidates
    from mpsgen.stubs import find_stub

    entries = reader.ctx.native_functions.op_entries(op)
    shared = tuple(DispatchSite(e, line) for e in entries for line in e.dispatch if is_shared_line(line))
    legacy = tuple(DispatchSite(e, line) for e in entries for line in e.dispatch if is_legacy_line(line))
    facts = _OpFacts(op, entries, shared, legacy)
    if shared:
        facts.stub = find_stub(reader.checkout, stub_candidates(op, shared))
    if facts.stub is not None:
        facts.registrations = mps_registrations(reader.ws, facts.stub.name)
        if len(facts.registrations) == 1:
            facts.host = _host_function(reader, facts.registrations[0])
    if facts.host is not None and facts.host.kernel:
        for rel in reader.kernel_files():
            try:
                if facts.host.kernel in reader.kernel(rel).functors:
                    facts.kernel_files.append(rel)
            except MpsgenError as exc:
                facts.unreadable.append((rel, exc))
        dtypes: set[str] = set()
        for rel in facts.kernel_files:
            dtypes |= reader.registered(rel).get(facts.host.kernel, (set(), 0))[0]
        facts.registered = frozenset(dtypes)
    if reader.checkout.exists(COMMON_METHODS):
        from mpsgen.opinfo import find_opinfos

        try:
            facts.opinfos = find_opinfos(reader.checkout.read(COMMON_METHODS), COMMON_METHODS, op)
        except MpsgenError as exc:
            facts.opinfo_error = str(exc)
    else:
        facts.opinfo_error = f"{COMMON_METHODS} is not in the checkout"
    return facts


def _check_yaml(reader: _Reader, f: _OpFacts):
    if not f.shared:
        return [Finding("yaml-dispatch", f.op, f.entries[0].location,
                        f"{f.op} has no shared `CPU, CUDA: ...` dispatch line, so nothing serves MPS through a stub",
                        "verify checks ops whose kernels go through a DispatchStub")]
    out = []
    for site in f.shared:
        if "MPS" not in site.line.keys:
            out.append(Finding("yaml-dispatch", f.op, site.line.location,
                               f"MPS is not on the shared line `{site.line.keys_text}: {site.line.kernel}`",
                               f"write `{site.line.keys_text.replace('CUDA', 'CUDA, MPS', 1)}: {site.line.kernel}`"))
    for site in f.legacy:
        out.append(Finding("yaml-dispatch", f.op, site.line.location,
                           f"leftover `MPS: {site.line.kernel}` line in {site.entry.name}",
                           "delete it: the shared line serves MPS through the stub"))
    return out


def _check_stub(reader: _Reader, f: _OpFacts):
    from mpsgen.resolve import stub_candidates

    if not f.shared:
        return "no shared dispatch line"
    if f.stub is None:
        return [Finding("stub-registration", f.op, f.shared[0].line.location,
                        f"no DECLARE_DISPATCH for {f.op} (looked for {', '.join(stub_candidates(f.op, f.shared))})",
                        "declare the stub in aten/src/ATen/native/<Family>.h")]
    stub = f.stub
    if not f.registrations:
        return [Finding("stub-registration", f.op, stub.location, f"{stub.name} is not registered for MPS",
                        f"add `REGISTER_DISPATCH({stub.name}, &<kernel function>)` to the family's operations/*Kernel.mm")]
    if len(f.registrations) > 1:
        where = ", ".join(str(r.location) for r in f.registrations)
        return [Finding("stub-registration", f.op, f.registrations[1].location,
                        f"{stub.name} is registered for MPS {len(f.registrations)} times ({where})",
                        "keep exactly one REGISTER_DISPATCH per stub")]
    reg = f.registrations[0]
    if f.host is None:
        return [Finding("stub-registration", f.op, reg.location,
                        f"REGISTER_DISPATCH names {reg.function}, which is not defined in {reg.location.path}",
                        f"define static void {reg.function}({', '.join(stub.params)})")]
    if f.host.params != stub.params:
        return [Finding("stub-registration", f.op, f.host.location,
                        f"{f.host.name} takes ({', '.join(f.host.params)}) but {stub.name} is declared "
                        f"{stub.signature} at {stub.type_location or stub.location}",
                        f"declare it as {f.host.name}({', '.join(stub.params)})")]
    return []


def _check_kernel_name(reader: _Reader, f: _OpFacts):
    if f.host is None:
        return "no single MPS registration to follow (see stub-registration)"
    if not f.host.kernel:
        return [Finding("kernel-name", f.op, f.host.location,
                        f"{f.host.name} calls no lib.exec_*_kernel(iter, \"<name>\")",
                        "call the Metal library with the functor's name (without _functor)")]
    if not f.kernel_files and f.unreadable:
        return [Finding("kernel-name", f.op, exc.location or Location(rel, 1), f"cannot read {rel}: {exc.message}",
                        exc.hint or "fix the kernel file") for rel, exc in f.unreadable]
    if not f.kernel_files:
        return [Finding("kernel-name", f.op, Location(f.host.location.path, f.host.kernel_line),
                        f"kernel \"{f.host.kernel}\" has no struct {f.host.kernel}_functor in {KERNELS_DIR}/*.metal",
                        f"add {f.host.kernel}_functor to the family's .metal file, or fix the name")]
    return []


def _tested_dtypes(f: _OpFacts) -> tuple[frozenset[str] | None, str]:
    from mpsgen.opinfo import tested_dtypes

    found: set[str] = set()
    source = ""
    for ref in f.opinfos:
        if ref.kind == "python-ref":
            continue
        dtypes = tested_dtypes(ref)
        if dtypes is not None:
            found |= dtypes
            source = source or str(ref.location)
    return (frozenset(found) if source else None), source


def _declared_failing(reader: _Reader, f: _OpFacts) -> tuple[set[str], bool, bool]:
    """(dtypes common_mps.py declares failing for the op's keys, all of them failing, complex supported)."""
    from mpsgen.testlists import COMPLEX_SET_NAME, canonical_dtype

    if not reader.checkout.exists(COMMON_MPS):
        return set(), False, False
    keys = {ref.key for ref in f.opinfos} or {f.op}
    failing: set[str] = set()
    everything = False
    for table in reader.xfail_dicts():
        if table.section == "error-inputs":
            continue
        for entry in table.entries:
            if entry.key in keys:
                if entry.dtypes is None:
                    everything = True
                else:
                    failing |= {canonical_dtype(d) for d in entry.dtypes}
    text = reader.checkout.read(COMMON_MPS)
    complex_ok = any(re.search(rf"{COMPLEX_SET_NAME}\s*=\s*\{{[^}}]*[\"']{re.escape(k)}[\"']", text) for k in keys)
    return failing, everything, complex_ok


def _check_dtypes(reader: _Reader, f: _OpFacts):
    if f.host is None or not f.kernel_files:
        return "no functor to read (see kernel-name)"
    functor = f.host.kernel
    rel = f.kernel_files[0]
    line = reader.registered(rel).get(functor, (set(), 0))[1]
    if not line:
        line = reader.checkout.read(rel).count("\n", 0, reader.kernel(rel).functors[functor][0]) + 1
    where = Location(rel, line)
    if not f.registered:
        return [Finding("dtype-coverage", f.op, where, f"{functor}_functor is never registered (no REGISTER_* line)",
                        "register it for the dtype groups the op supports, e.g. REGISTER_FLOAT_BINARY_OP(...)")]
    tested, source = _tested_dtypes(f)
    required = set(tested - _NOT_ON_MPS) if tested is not None else set(_BASELINE)
    failing, everything, complex_ok = _declared_failing(reader, f)
    if everything:
        return []  # the whole op is declared failing: test-lists reports it if the kernel fixes that
    required -= failing
    if not complex_ok:
        required -= _COMPLEX
    body = mask_code(f.host.body)
    guards = re.findall(r"TORCH_CHECK\w*\s*\(([^;]*)\)\s*;", body)
    if any("isFloatingType" in g for g in guards):
        required -= _FLOATS
    if any("isIntegralType" in g for g in guards):
        required -= _INTEGERS
    if any("isComplexType" in g for g in guards):
        required -= _COMPLEX
    missing = sorted(required - f.registered)
    if not missing:
        return []
    why = f"the OpInfo at {source} tests them on MPS" if tested is not None else "every float op runs float32 and float16"
    return [Finding("dtype-coverage", f.op, where,
                    f"{functor}_functor is not registered for {', '.join(missing)} ({why}; no xfail declares them failing)",
                    "register the missing dtype groups, or list the dtypes in common_mps.py with the reason")]


def _check_placeholder(reader: _Reader, f: _OpFacts):
    if f.host is None:
        return "no host function to read (see stub-registration)"
    out = []
    for rel in f.kernel_files:
        text = reader.checkout.read(rel)
        start, end = reader.kernel(rel).functors[f.host.kernel]
        for m in re.finditer(r"^[ \t]*#[ \t]*error\b.*$", mask_code(text)[start:end], re.M):
            line = text.count("\n", 0, start + m.start()) + 1
            out.append(Finding("placeholder", f.op, Location(rel, line),
                               f"#error placeholder left in {f.host.kernel}_functor",
                               "write the functor body and delete the #error line"))
    for m in re.finditer(r"^[ \t]*#[ \t]*error\b.*$", mask_code(f.host.body), re.M):
        line = f.host.body_line + f.host.body.count("\n", 0, m.start())
        out.append(Finding("placeholder", f.op, Location(f.host.location.path, line),
                           f"#error placeholder left in {f.host.name}", "finish the host function and delete the #error line"))
    return out


def legacy_names(f: _OpFacts) -> list[str]:
    """The names a legacy MPSGraph implementation of the op goes by."""
    names = {site.line.kernel for site in f.legacy}
    bases = {e.base for e in f.entries} | {e.name.partition(".")[0] for e in f.entries}
    for base in bases:
        names.update({f"{base}_mps", f"{base}_out_mps", f"{base}_mps_out", f"{base}_mps_"})
    for site in f.shared:
        names.add(f"{site.line.kernel}_mps")
    return sorted(names)


def _check_legacy(reader: _Reader, f: _OpFacts):
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, legacy_names(f))) + r")\b")
    out = []
    for rel in reader.checkout.glob(OPERATIONS_DIR, "*.mm"):
        text = reader.checkout.read(rel)
        if not any(name in text for name in legacy_names(f)):
            continue
        masked = mask_code(text)
        for m in pattern.finditer(masked):
            line = masked.count("\n", 0, m.start()) + 1
            out.append(Finding("legacy", f.op, Location(rel, line),
                               f"legacy MPS kernel {m.group(1)} is still defined or referenced",
                               f"remove the MPSGraph implementation (`mpsgen migrate {f.op}` does it)"))
    return out


def _check_test_lists(reader: _Reader, f: _OpFacts):
    from mpsgen.opinfo import plan_opinfo_edits, tested_dtypes
    from mpsgen.testlists import plan_testlist_edits

    if f.host is None or not f.kernel_files:
        return "no registered functor (see kernel-name)"
    if not f.opinfos:
        return f"no OpInfo for {f.op}: {f.opinfo_error}"
    covered = f.registered
    keys = tuple(dict.fromkeys(ref.key for ref in f.opinfos))
    out = []
    if reader.checkout.exists(COMMON_MPS):
        tested = {ref.key: d for ref in f.opinfos if (d := tested_dtypes(ref)) is not None}
        _, changes = plan_testlist_edits(
            reader.checkout.read(COMMON_MPS), COMMON_MPS, keys, covered, bool(covered & _COMPLEX),
            tested_dtypes=tested, backward=f.op.endswith("_backward"),
        )
        for change in changes:
            if change.action in ("removed-entry", "removed-dtypes"):
                out.append(Finding("test-lists", f.op, change.location,
                                   f"{change.dict_name}[{change.key!r}] still expects a failure the kernel fixes: {change.detail}",
                                   "remove the covered dtypes (unexpected successes fail CI)"))
            elif change.action == "added-complex":
                out.append(Finding("test-lists", f.op, change.location,
                                   f"the kernel registers complex dtypes but {change.key!r} is not in {change.dict_name}",
                                   f"add {change.key!r} to {change.dict_name}"))
    _, changes = plan_opinfo_edits(reader.checkout.read(COMMON_METHODS), COMMON_METHODS, f.opinfos, covered)
    for change in changes:
        if change.action == "removed-decorator":
            out.append(Finding("test-lists", f.op, change.location,
                               f"OpInfo {change.key!r} still has an MPS expected failure/skip the kernel fixes: {change.detail}",
                               "remove the DecorateInfo"))
    return out


def unbalanced(text: str, path: str) -> list[Location]:
    """Where brackets of C++/Metal code do not balance (comments, literals and preprocessor lines
    ignored): the unmatched opener or the stray closer."""
    masked = mask_code(text)
    masked = re.sub(r"^[ \t]*#(?:[^\n]*\\\r?\n)*[^\n]*", lambda m: re.sub(r"[^\n]", " ", m.group()), masked, flags=re.M)
    pairs = {")": "(", "]": "[", "}": "{"}
    stack: list[tuple[str, int]] = []
    bad: list[int] = []
    for i, ch in enumerate(masked):
        if ch in "({[":
            stack.append((ch, i))
        elif ch in pairs:
            if stack and stack[-1][0] == pairs[ch]:
                stack.pop()
            else:
                bad.append(i)
                break
    bad.extend(i for _, i in stack[:1])
    return [Location(path, masked.count("\n", 0, i) + 1) for i in sorted(bad)]


def _check_balance(reader: _Reader, f: _OpFacts):
    from mpsgen.resolve import FAMILY_FILES

    files = list(f.kernel_files) + [rel for rel, _ in f.unreadable]
    if f.stub is not None and f.stub.header in FAMILY_FILES:
        family = f"{KERNELS_DIR}/{FAMILY_FILES[f.stub.header][0]}"
        if reader.checkout.exists(family):
            files.append(family)
    if f.host is not None:
        files.append(f.host.location.path)
    files.extend(r.location.path for r in f.registrations)
    if not files:
        return "no kernel or host file found for the op"
    out = []
    for rel in dict.fromkeys(files):
        for location in unbalanced(reader.checkout.read(rel), rel):
            out.append(Finding("balance", f.op, location, "unbalanced bracket (no partner found)",
                               "fix the edit so that every (, [ and { closes"))
    return out


def _check_metal_compile(reader: _Reader, f: _OpFacts):
    result = reader.metal.check(f.kernel_files, f.host.kernel if f.host else "")
    if isinstance(result, str):
        return result
    return [Finding("metal-compile", f.op, where, message, hint) for where, message, hint in result]


# --------------------------------------------------------------------------- build and test stages


def load_config(checkout: Checkout) -> dict[str, object]:
    """`[tool.mpsgen]` of the checkout's pyproject.toml, then `.mpsgen.toml` (its top level or its
    `[tool.mpsgen]` table) over it."""
    import tomllib

    config: dict[str, object] = {}
    for name in ("pyproject.toml", ".mpsgen.toml"):
        path = checkout.root / name
        if not path.is_file():
            continue
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as exc:
            raise MpsgenError(f"{name}: {exc}", hint="fix the TOML syntax") from None
        table = data.get("tool", {}).get("mpsgen", {})
        if name == ".mpsgen.toml":
            table = {**{k: v for k, v in data.items() if k != "tool"}, **table}
        config.update(table)
    return config


def assume_mps(options: VerifyOptions) -> bool:
    return options.assume_mps or os.environ.get(ASSUME_MPS_ENV, "") not in ("", "0")


def _mps_platform_reason(options: VerifyOptions) -> str | None:
    if assume_mps(options):
        return None
    if sys.platform != "darwin":
        return f"this platform ({sys.platform}) cannot build or run MPS; needs macOS (or --assume-mps)"
    return None


@dataclass
class _Run:
    returncode: int | None
    timed_out: bool
    missing: str | None
    lines: list[str]


def _run_streaming(argv: list[str], cwd: Path, log: Path, deadline: float | None, on_line: Callable[[str], None],
                   env: dict | None = None) -> _Run:
    """Run `argv`, appending its merged output to `log` line by line; kill its process group when
    `deadline` (time.monotonic()) passes."""
    lines: list[str] = []
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "a", encoding="utf-8") as handle:
        handle.write(f"$ {shlex.join(argv)}  (in {cwd})\n")
        handle.flush()
        try:
            proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                    encoding="utf-8", errors="replace", bufsize=1, start_new_session=True, env=env)
        except FileNotFoundError:
            handle.write(f"command not found: {argv[0]}\n")
            return _Run(None, False, argv[0], lines)
        except PermissionError:
            handle.write(f"not executable: {argv[0]}\n")
            return _Run(None, False, argv[0], lines)

        def pump():
            assert proc.stdout is not None
            for line in proc.stdout:
                handle.write(line)
                handle.flush()
                lines.append(line.rstrip("\n"))
                on_line(line.rstrip("\n"))

        reader = threading.Thread(target=pump, daemon=True)
        reader.start()
        timed_out = False
        try:
            proc.wait(timeout=None if deadline is None else max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill(proc)
        reader.join(timeout=5)
        if timed_out:
            handle.write("mpsgen: timed out; process group killed\n")
    return _Run(proc.returncode, timed_out, None, lines)


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=3)
    except (ProcessLookupError, PermissionError):
        pass
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()


_COMPILER_ERROR = re.compile(r"^(?P<path>[^\s:][^:\n]*):(?P<line>\d+):(?:\d+:)?\s*(?:fatal )?error:\s*(?P<msg>.*)$")
_NINJA_PROGRESS = re.compile(r"^\[(\d+)/(\d+)\]")


def compiler_errors(lines: list[str], root: Path, limit: int = 5) -> list[tuple[Location, str]]:
    """The first compiler errors (`path:line[:col]: error: message`), paths relative to the checkout."""
    out = []
    for text in lines:
        m = _COMPILER_ERROR.match(text.strip())
        if not m:
            continue
        path = Path(m.group("path"))
        try:
            rel = path.resolve().relative_to(root.resolve()).as_posix() if path.is_absolute() else m.group("path")
        except ValueError:
            rel = m.group("path")
        out.append((Location(rel, int(m.group("line"))), m.group("msg")))
        if len(out) >= limit:
            break
    return out


def _log_dir(checkout: Checkout, options: VerifyOptions) -> Path:
    return Path(options.log_dir).resolve() if options.log_dir else checkout.root / ".mpsgen" / "logs"


def _rel(checkout: Checkout, path: Path) -> str:
    try:
        return path.relative_to(checkout.root).as_posix()
    except ValueError:
        return str(path)


def _deadline(options: VerifyOptions) -> float | None:
    return None if options.timeout is None else time.monotonic() + options.timeout


def _skip_or_fail(name: str, reason: str, required: bool, flag: str) -> StageResult:
    if required:
        return StageResult(name, FAILED, f"{reason} ({flag} makes this a failure)")
    return StageResult(name, SKIPPED, reason)


def run_build(checkout: Checkout, options: VerifyOptions, progress: Progress = _no_progress) -> StageResult:
    config = load_config(checkout)
    command = options.build_cmd or str(config.get("build-cmd") or DEFAULT_BUILD_CMD)
    build_dir = Path(options.build_dir or str(config.get("build-dir") or DEFAULT_BUILD_DIR))
    build_dir = build_dir if build_dir.is_absolute() else checkout.root / build_dir
    reason = _mps_platform_reason(options)
    if reason is None and not build_dir.is_dir():
        reason = f"no build directory {_rel(checkout, build_dir)} (configure the build first, or pass --build-dir)"
    if reason is not None:
        return _skip_or_fail("build", reason, options.require_build, "--require-build")
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise MpsgenError(f"--build-cmd {command!r}: {exc}", hint="quote the command as a shell would") from None
    if not argv:
        raise MpsgenError("the build command is empty", hint="pass --build-cmd or set build-cmd in .mpsgen.toml")
    log = _log_dir(checkout, options) / "build.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("", encoding="utf-8")
    log_rel = _rel(checkout, log)
    started = time.monotonic()
    progress("build", 0, None, command)

    def on_line(line: str) -> None:
        m = _NINJA_PROGRESS.match(line)
        if m:
            progress("build", int(m.group(1)), int(m.group(2)), line[m.end():].strip()[:80])

    run = _run_streaming(argv, build_dir, log, _deadline(options), on_line)
    duration = time.monotonic() - started
    common = dict(log=log_rel, command=tuple(argv), duration=duration)
    if run.missing:
        finding = Finding("build", "", Location(log_rel, 1), f"build tool not found: {run.missing}",
                          "install it, or pass --build-cmd / set build-cmd in .mpsgen.toml")
        return StageResult("build", FAILED, f"build tool not found: {run.missing}",
                           (CheckResult("build", "", FAILED, (finding,)),), **common)
    if run.timed_out:
        finding = Finding("build", "", Location(log_rel, max(1, len(run.lines) + 1)),
                          f"build timed out after {options.timeout:g} s", "raise --timeout, or build by hand first")
        return StageResult("build", FAILED, f"timed out after {options.timeout:g} s",
                           (CheckResult("build", "", FAILED, (finding,)),), **common)
    if run.returncode == 0:
        return StageResult("build", PASSED, "", (CheckResult("build", "", PASSED),), **common)
    errors = compiler_errors(run.lines, checkout.root)
    findings = [Finding("build", "", location, f"error: {message}", "fix the compiler error") for location, message in errors]
    if not findings:
        failed_line = next((i for i, t in enumerate(run.lines, 2) if t.startswith("FAILED")), len(run.lines) + 1)
        findings.append(Finding("build", "", Location(log_rel, failed_line),
                                f"build failed with exit code {run.returncode}", f"read {log_rel}"))
    return StageResult("build", FAILED, f"exit code {run.returncode}; {len(errors)} compiler error(s) shown",
                       (CheckResult("build", "", FAILED, tuple(findings)),), **common)


def opinfo_test_names(checkout: Checkout, op: str, grad: bool) -> tuple[list[str], str]:
    """The `-k` patterns for an op's OpInfos (`nn.functional.mish` -> test_output_match_nn_functional_mish),
    or ([], why not)."""
    from mpsgen.opinfo import find_opinfos

    if not checkout.exists(COMMON_METHODS):
        return [], f"{COMMON_METHODS} is not in the checkout"
    try:
        refs = find_opinfos(checkout.read(COMMON_METHODS), COMMON_METHODS, op)
    except MpsgenError as exc:
        return [], str(exc)
    names = []
    for ref in refs:
        if ref.kind == "python-ref":
            continue
        stem = ref.name.replace(".", "_") + (f"_{ref.variant_test_name.replace('.', '_')}" if ref.variant_test_name else "")
        names.append(f"test_output_match_{stem}")
        if grad:
            names.append(f"test_output_grad_match_{stem}")
    return list(dict.fromkeys(names)), "" if names else f"no OpInfo for {op} other than python refs"


_STATUS_WORDS = r"(?P<status>ok|FAIL|ERROR|expected failure|unexpected success|skipped(?: (?P<why>.*))?)"
_RESULT = re.compile(rf"^(?P<test>test\w+) \((?P<cls>[\w.]+)\)\s\.\.\.\s{_STATUS_WORDS}\s*$")
_HEADER = re.compile(r"^(?P<test>test\w+) \((?P<cls>[\w.]+)\)(?:\s\.\.\.\s.*)?$")
_LATE_STATUS = re.compile(rf"^(?:.*\s\.\.\.\s)?{_STATUS_WORDS}\s*$")
_STATUS = {"ok": "passed", "FAIL": "failed", "ERROR": "error", "expected failure": "xfail",
           "unexpected success": "unexpected-success"}
_DTYPE_NAMES = ("bfloat16", "float16", "float32", "float64", "complex32", "complex64", "complex128",
                "int64", "int32", "int16", "int8", "uint8", "bool")


def parse_unittest(lines: list[str], op: str) -> list[TestOutcome]:
    """unittest -v results: `test_x_cpu_float32 (__main__.TestConsistency...) ... ok` per test."""
    out = []
    pending = None  # a test whose status comes on a later line (docstring or output in between)

    def record(test: str, m) -> None:
        status = m.group("status")
        outcome = "skipped" if status.startswith("skipped") else _STATUS[status]
        dtype = next((d for d in _DTYPE_NAMES if test.endswith("_" + d)), "")
        out.append(TestOutcome(op, test, dtype, outcome, (m.group("why") or "").strip("'\"")))

    for text in lines:
        text = text.strip()
        m = _RESULT.match(text)
        if m:
            record(m.group("test"), m)
            pending = None
            continue
        header = _HEADER.match(text)
        if header:
            pending = header.group("test")
            continue
        late = _LATE_STATUS.match(text) if pending else None
        if late:
            record(pending, late)
            pending = None
    return out


def run_tests(checkout: Checkout, ops: tuple[str, ...], options: VerifyOptions,
              progress: Progress = _no_progress) -> StageResult:
    reason = _mps_platform_reason(options)
    if reason is None and not checkout.exists(TEST_FILE):
        reason = f"{TEST_FILE} is not in the checkout"
    if reason is not None:
        return _skip_or_fail("tests", reason, options.require_tests, "--require-tests")
    log = _log_dir(checkout, options) / "tests.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("", encoding="utf-8")
    log_rel = _rel(checkout, log)
    deadline = _deadline(options)
    started = time.monotonic()
    outcomes: list[TestOutcome] = []
    checks: list[CheckResult] = []
    untested: list[str] = []
    commands: list[str] = []
    for i, op in enumerate(ops):
        progress("tests", i, len(ops), op)
        names, why = opinfo_test_names(checkout, op, options.grad)
        if not names:
            untested.append(f"{op} ({why})")
            checks.append(CheckResult("tests", op, SKIPPED, reason=why))
            continue
        argv = [sys.executable, TEST_FILE, "-v"] + [a for n in names for a in ("-k", n)]
        commands.extend(argv)
        done = [0]

        def on_line(line: str, op=op, done=done) -> None:
            if " ... " in line:
                done[0] += 1
                progress("tests", i, len(ops), f"{op}: {done[0]} tests")

        run = _run_streaming(argv, checkout.root, log, deadline, on_line)
        results = parse_unittest(run.lines, op)
        outcomes.extend(results)
        findings = [
            Finding("tests", op, Location(TEST_FILE, 1), f"{r.test}: {r.outcome}",
                    "an unexpected success means an xfail entry is stale: remove it" if r.outcome == "unexpected-success"
                    else f"see {log_rel}")
            for r in results if r.bad
        ]
        if run.missing:
            findings.append(Finding("tests", op, Location(log_rel, 1), f"cannot run {run.missing}", "check the Python installation"))
        elif run.timed_out:
            findings.append(Finding("tests", op, Location(log_rel, 1), f"tests timed out after {options.timeout:g} s",
                                    "raise --timeout, or run the test by hand"))
        elif not results:
            findings.append(Finding("tests", op, Location(TEST_FILE, 1),
                                    f"no test matched {', '.join(names)} (exit code {run.returncode})",
                                    f"check the OpInfo name; see {log_rel}"))
        elif run.returncode != 0 and not findings:
            findings.append(Finding("tests", op, Location(log_rel, 1), f"test run exited with code {run.returncode}",
                                    f"see {log_rel}"))
        checks.append(CheckResult("tests", op, FAILED if findings else PASSED, tuple(findings)))
        if run.timed_out:
            for rest in ops[i + 1 :]:
                checks.append(CheckResult("tests", rest, SKIPPED, reason="the stage timed out before it ran"))
            break
    progress("tests", len(ops), len(ops), "done")
    common = dict(checks=tuple(checks), tests=tuple(outcomes), log=log_rel, command=tuple(commands),
                  duration=time.monotonic() - started)
    if any(c.status == FAILED for c in checks):
        bad = sum(1 for c in checks for _ in c.findings)
        return StageResult("tests", FAILED, f"{bad} problem(s)", **common)
    if untested or not checks:
        reason = "not tested: " + ", ".join(untested) if untested else "no ops to test"
        return StageResult("tests", FAILED if options.require_tests else SKIPPED,
                           reason + (" (--require-tests makes this a failure)" if options.require_tests else ""), **common)
    return StageResult("tests", PASSED, f"{len(outcomes)} tests", **common)


# ------------------------------------------------------------------------------------------ driver


def verify(checkout: Checkout, ops: tuple[str, ...], options: VerifyOptions,
           progress: Progress = _no_progress) -> VerifyReport:
    """Run the three stages over `ops` (already validated). Build and tests run only after a clean
    static stage: a change that is statically incomplete would fail them for a known reason."""
    started = time.monotonic()
    if not ops:
        reason = "no ops to verify"
        stages = tuple(StageResult(name, SKIPPED, reason) for name in STAGES)
        return VerifyReport(str(checkout.root), ops, stages)
    reader = _Reader(checkout)
    reader.metal.required = options.require_metal_compile
    checks = static_checks(checkout, ops, reader)
    static_status = FAILED if any(c.status == FAILED for c in checks) else PASSED
    static = StageResult("static", static_status, "" if static_status == PASSED else
                         f"{sum(len(c.findings) for c in checks)} finding(s)", checks, duration=time.monotonic() - started)
    if options.static_only:
        later = (StageResult("build", SKIPPED, "--static-only"), StageResult("tests", SKIPPED, "--static-only"))
    elif static_status == FAILED:
        later = (StageResult("build", SKIPPED, "the static stage failed"),
                 StageResult("tests", SKIPPED, "the static stage failed"))
    else:
        build = run_build(checkout, options, progress)
        if build.status == FAILED:
            tests = StageResult("tests", SKIPPED, "the build failed")
        else:
            tests = run_tests(checkout, ops, options, progress)
        later = (build, tests)
    return VerifyReport(str(checkout.root), ops, (static, *later))


def report_to_json(report: VerifyReport) -> dict:
    def finding(f: Finding) -> dict:
        return {"check": f.check, "op": f.op, "path": f.location.path, "line": f.location.line,
                "message": f.message, "hint": f.hint}

    return {
        "command": "verify",
        "root": report.root,
        "ops": list(report.ops),
        "exit_code": report.exit_code,
        "stages": [
            {
                "name": s.name,
                "status": s.status,
                "reason": s.reason,
                "duration": round(s.duration, 3),
                "log": s.log,
                "command": list(s.command),
                "checks": [{"check": c.check, "op": c.op, "status": c.status, "reason": c.reason,
                            "findings": [finding(f) for f in c.findings]} for c in s.checks],
                "tests": [{"op": t.op, "test": t.test, "dtype": t.dtype, "outcome": t.outcome, "detail": t.detail}
                          for t in s.tests],
            }
            for s in report.stages
        ],
        "findings": [finding(f) for s in report.stages for f in s.findings],
    }
