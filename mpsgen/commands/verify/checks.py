"""The static stage of `mpsgen verify`: checks on an op's facts (`mpsgen.facts.views`), judged by the same
rules (`mpsgen.facts.rules`) new-op and migrate edit by. Any OS, no build."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from mpsgen.commands.verify.formatcheck import format_problems, op_line_ranges
from mpsgen.commands.verify.model import FAILED, PASSED, SKIPPED, CheckResult, Finding, Progress, _no_progress
from mpsgen.edit.expectations import plan_test_lists
from mpsgen.edit.workspace import Workspace
from mpsgen.errors import MpsgenError
from mpsgen.facts.perdevice import mps_function_state, per_device_sites
from mpsgen.facts.reduction import ReductionFacts, reduction_instantiations_of, reduction_of
from mpsgen.facts.resolve import FAMILY_FILES, Composite, composite_judgement
from mpsgen.facts.rules import MPSGRAPH, host_routing, missing_coverage
from mpsgen.facts.testplan import test_list_rules
from mpsgen.facts.views import OpFacts, Views, read_op
from mpsgen.model import Location
from mpsgen.read.checkout import KERNELS_DIR, NATIVE_FUNCTIONS, Checkout
from mpsgen.read.cpp import mask_code
from mpsgen.read.metalhost.check import SKIPPED as COMPILE_SKIPPED
from mpsgen.read.metalhost.check import DiagnosticContext
from mpsgen.read.metalhost.owners import diagnostic_owners
from mpsgen.read.testlists import dtype_order


@dataclass(frozen=True)
class CheckSettings:
    """What the user asked of the checks: `require_metal_compile` turns a metal-compile that cannot
    run here (no C++ compiler) into a failure."""

    require_metal_compile: bool = False


# A check returns its findings, or a string: the reason it was skipped.
CheckFn = Callable[[Views, OpFacts, CheckSettings], "list[Finding] | str"]


def static_checks(checkout: Checkout, ops: tuple[str, ...], views: Views | None = None,
                  settings: CheckSettings = CheckSettings(), progress: Progress = _no_progress) -> tuple[CheckResult, ...]:
    views = views or Views(Workspace(checkout))
    facts = [read_op(views, op) for op in ops]
    # The host compiler runs once per kernel file: start them together (one per core).
    views.prefetch_metal_compile(sorted({rel for f in facts for rel in f.kernel_files}))
    results: list[CheckResult] = []
    for i, (op, op_facts) in enumerate(zip(ops, facts)):
        progress("static", i, len(ops), op)
        results.extend(check_op(views, op, settings, op_facts))
    return tuple(results)


def check_op(views: Views, op: str, settings: CheckSettings = CheckSettings(),
             facts: OpFacts | None = None) -> list[CheckResult]:
    """Every static check of one op, in STATIC_CHECKS order. A check whose prerequisites failed is
    skipped with the reason; a reader error becomes a finding of the check that hit it."""
    facts = facts if facts is not None else read_op(views, op)
    out = []
    for check, func in CHECKS:
        try:
            result = func(views, facts, settings)
        except MpsgenError as exc:
            location = exc.location or Location(NATIVE_FUNCTIONS, 1)
            result = [Finding(check, op, location, exc.message, exc.hint or "fix the file so that it can be read")]
        if isinstance(result, str):
            out.append(CheckResult(check, op, SKIPPED, reason=result))
        else:
            own = tuple(x for x in result if not x.pre_existing)
            notes = tuple(x for x in result if x.pre_existing)
            out.append(CheckResult(check, op, FAILED if own else PASSED, own, notes=notes))
    return out


def _check_per_device(views: Views, f: OpFacts) -> list[Finding]:
    """A per-device op (`CPU: gelu_out_cpu`, `CUDA: gelu_out_cuda`, `MPS: gelu_out_mps`): its MPS
    lines stay; each MPS function must call the stub for kMPS and build no MPSGraph."""
    out = []
    for _, mps in per_device_sites(f.entries):
        state = mps_function_state(views, mps.line.kernel, f.stub)
        stub = f.stub.name if f.stub is not None else "its stub"
        if state is None:
            out.append(Finding("yaml-dispatch", f.op, mps.line.location,
                               f"`MPS: {mps.line.kernel}` names a function no operations/*.mm file defines",
                               f"define {mps.line.kernel} calling {stub} for kMPS"))
        elif state.graph or not state.calls_stub:
            what = "still builds an MPSGraph" if state.graph else f"does not call {stub} for kMPS"
            out.append(Finding("yaml-dispatch", f.op, state.location,
                               f"{mps.line.kernel} (the per-device MPS function of {mps.entry.name}) {what}",
                               f"make its body the stub call for kMPS (`mpsgen migrate {f.op}` does it)"))
    return out


def _check_yaml(views: Views, f: OpFacts, settings: CheckSettings):
    if not f.shared and per_device_sites(f.entries):
        return _check_per_device(views, f)
    if not f.shared:
        return [Finding("yaml-dispatch", f.op, f.entries[0].location,
                        f"{f.op} has no shared `CPU, CUDA: ...` dispatch line, so nothing serves MPS through a stub",
                        "verify checks ops whose kernels go through a DispatchStub")]
    out = []
    legacy_entries = {site.entry.name for site in f.legacy}
    for site in f.shared:
        # An overload with neither MPS on its shared line nor a separate MPS kernel is not served on
        # MPS at all (`new-op --overload` took another one): not a half-done change, unless nothing is.
        if "MPS" not in site.line.keys and (site.entry.name in legacy_entries or not f.mps_on_shared):
            out.append(Finding("yaml-dispatch", f.op, site.line.location,
                               f"MPS is not on the shared line `{site.line.keys_text}: {site.line.kernel}`",
                               f"write `{site.line.keys_text.replace('CUDA', 'CUDA, MPS', 1)}: {site.line.kernel}`"))
    for site in f.legacy:
        out.append(Finding("yaml-dispatch", f.op, site.line.location,
                           f"leftover `MPS: {site.line.kernel}` line in {site.entry.name}",
                           "delete it: the shared line serves MPS through the stub"))
    return out


def _check_stub(views: Views, f: OpFacts, settings: CheckSettings):
    if not f.shared and not per_device_sites(f.entries):
        return "no shared dispatch line"
    judged = composite_judgement(views, f)
    if isinstance(judged, Composite):
        return []  # every op (or other op's stub) it calls is served on MPS
    if isinstance(judged, MpsgenError):
        return [Finding("stub-registration", f.op, judged.location or f.shared[0].line.location, judged.message,
                        judged.hint or "give what it calls an MPS kernel first")]
    if isinstance(judged, str):
        return judged
    if f.stub is None:
        where = (f.shared or f.legacy)[0].line.location
        return [Finding("stub-registration", f.op, where, f.stub_problem,
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


def _composite_skip(views: Views, f: OpFacts) -> str | None:
    """Why the kernel checks skip a stub-less composite op (relu): it has no kernel of its own."""
    if f.stub is None and f.shared and isinstance(composite_judgement(views, f), Composite):
        return f"{f.op} has no kernel of its own: it is served by what its shared function calls (see stub-registration)"
    return None


def _check_kernel_name(views: Views, f: OpFacts, settings: CheckSettings):
    if skip := _composite_skip(views, f):
        return skip
    if f.host is None:
        return "no single MPS registration to follow (see stub-registration)"
    reduction = reduction_of(views, f)
    if reduction is not None:
        return _reduction_kernel_name(f, reduction)
    if not f.host.kernel and MPSGRAPH.search(mask_code(f.host.body)):
        return f"{f.host.name} ({f.host.location}) serves the stub with MPSGraph: no Metal kernel to check"
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
    return _functor_below_its_use(views, f)


def _functor_below_its_use(views: Views, f: OpFacts) -> list[Finding]:
    """A registration (or a list macro's call) that names the functor above its definition: the
    Metal compiler instantiates the kernel where it is named, and the type is not declared yet."""
    out = []
    for rel in f.kernel_files:
        reading = views.kernel(rel).reading
        functor = reading.functors.get(f.functor)
        early = [r.line for r in reading.registered(f.functor) if functor is not None and r.line < functor.line]
        if early:
            out.append(Finding("kernel-name", f.op, Location(rel, min(early)),
                               f"{f.functor}_functor is defined at line {functor.line}, below this line that registers "
                               "it: the Metal compiler rejects a kernel instantiated before its functor is declared",
                               f"move struct {f.functor}_functor above line {min(early)}"))
    return out


def _reduction_kernel_name(f: OpFacts, r: ReductionFacts):
    """A reduction's host function names its kernels by op prefix through the launcher: each
    prefix it passes must have kernels in the family's kernel file."""
    if not r.routed:
        if r.host is None or not r.host.suffix_function:
            return (f"{r.host_file} has no reduction launcher (no function returning the kernel variant suffixes "
                    f"from a switch): {r.function}'s kernels are not read")
        return (f"{r.function} does not reach {r.host.suffix_function} (the launcher's variant switch): "
                f"it names no kernel by op prefix and variant, which is what this check reads")
    where = Location(f.host.location.path, f.host.body_line)
    if not r.prefixes:
        return [Finding("kernel-name", f.op, where, f"{r.function} reaches the reduction launcher but passes no op prefix (\"<op>_\")",
                        "pass the op's kernel prefix, e.g. value_reduction_kernel_mps(iter, \"prod_\")")]
    if r.kernels is None:
        return [Finding("kernel-name", f.op, where, f"{r.kernel_file} does not exist", "add the reduction kernel file")]
    return [Finding("kernel-name", f.op, where,
                    f"{r.function} launches {op}_reduction* kernels, but {r.kernel_file} registers none",
                    f"register the op's functor for its dtype pairs in {r.kernel_file}, or fix the prefix")
            for op in r.unregistered_prefixes()]


def _check_reduction_variants(views: Views, f: OpFacts, settings: CheckSettings):
    """Every kernel the reduction launcher can name for the op is registered: each routing variant
    for each (input, output) pair the op registers (a missing one is "no such kernel" at run time,
    on some shapes only)."""
    reduction = reduction_of(views, f)
    if reduction is None:
        return "not a reduction (its stub is not declared in the reduction family's header)"
    if f.host is None:
        return "no single MPS registration to follow (see stub-registration)"
    if not reduction.routed or reduction.kernels is None:
        return "no reduction kernels launched by prefix (see kernel-name)"
    grouped: dict[tuple[str, str], list] = {}
    for missing in reduction.missing():
        grouped.setdefault((missing.op, missing.variant), []).append(missing)
    out = []
    for (op, variant), items in grouped.items():
        pairs = ", ".join(f"{m.pair[0]}->{m.pair[1]}" for m in items)
        routed = "the launcher can pick" if variant in reduction.launcher_variants else "its other pairs have"
        first = min(items, key=lambda m: m.location.line)
        out.append(Finding("reduce-variants", f.op, first.location,
                           f"{op}_reduction{variant or ''}_<in>_<out> is not registered for {pairs} "
                           f"({routed} the {variant or 'generic'} variant: \"no such kernel\" at run time on those shapes)",
                           "register every variant for each pair (the file's registration macro instantiates them all)"))
    out.extend(_duplicate_instantiations(views, f, reduction))
    return out


def _duplicate_instantiations(views: Views, f: OpFacts, reduction) -> list[Finding]:
    """A kernel of the op's prefixes that another host name of the file already instantiates (the
    same kernel template with the same arguments): a duplicate explicit instantiation, which does
    not compile whatever the names (one finding per prefix and other prefix)."""
    groups: dict[tuple, list] = {}
    for inst in reduction_instantiations_of(views, reduction.kernel_file):
        groups.setdefault(inst.key, []).append(inst)
    mine = tuple(f"{prefix}_reduction" for prefix in reduction.prefixes)
    out, seen = [], set()
    for group in groups.values():
        if len(group) < 2:
            continue
        inst = next((i for i in group if i.name.startswith(mine)), None)
        if inst is None:
            continue
        other = next(i for i in group if i is not inst)
        pair = (inst.name.split("_reduction")[0], other.name.split("_reduction")[0])
        if pair in seen:
            continue
        seen.add(pair)
        out.append(Finding("reduce-variants", f.op, Location(reduction.kernel_file, inst.line or 1),
                           f"{inst.name} instantiates {inst.function}<{', '.join(inst.args)}>, which {other.name} "
                           f"(line {other.line}) already instantiates: a duplicate explicit instantiation does not compile",
                           "launch the existing kernels under their prefix, or register a distinct op type"))
    return out


_REDUCTION_SKIP = "reduction: {what} reads elementwise functors; reduce-variants checks the op's kernels"


def _reduction_skip(views: Views, f: OpFacts, what: str) -> str | None:
    return _REDUCTION_SKIP.format(what=what) if f.stub is not None and reduction_of(views, f) is not None else None


def _native_reduction(views: Views, f: OpFacts) -> ReductionFacts | str | None:
    """A reduction's facts when its host function launches its kernels by prefix (the kernels
    the dtype rules judge), the reason to skip when it does not, None for an elementwise op."""
    if f.stub is None or (reduction := reduction_of(views, f)) is None:
        return None
    if not reduction.routed or reduction.kernels is None or not reduction.prefixes:
        return "no reduction kernels launched by prefix (see kernel-name)"
    return reduction


def _check_reduction_dtypes(views: Views, f: OpFacts, reduction: ReductionFacts | str):
    """The tested dtypes a reduction's kernels take as input (any pair), judged as a functor's are."""
    if isinstance(reduction, str):
        return reduction
    missing, exp = missing_coverage(views, f, reduction.registered_dtypes)
    if not missing:
        return []
    prefixes = ", ".join(f"{op}_reduction*" for op in reduction.prefixes)
    where = Location(reduction.kernel_file, min(reduction.kernels.first_line(op) or 1 for op in reduction.prefixes))
    why = f"the OpInfo at {exp.source} tests them on MPS" if exp.source else "every float op runs float32 and float16"
    return [Finding("dtype-coverage", f.op, where,
                    f"{prefixes} kernels take no {', '.join(dtype_order(missing))} input ({why}; no xfail declares them failing)",
                    "register the missing input dtypes' pairs, or list the dtypes in common_mps.py with the reason")]


def _functor_location(views: Views, f: OpFacts) -> Location:
    rel = f.kernel_files[0]
    if f.registered and f.registered.line:
        return Location(rel, f.registered.line)
    return Location(rel, views.kernel(rel).functor_line(views.ws.read(rel), f.functor))


def _check_dtypes(views: Views, f: OpFacts, settings: CheckSettings):
    if (reduction := _native_reduction(views, f)) is not None:
        return _check_reduction_dtypes(views, f, reduction)
    if f.host is None or not f.kernel_files or not f.host.kernel:
        return "no functor to read (see kernel-name)"
    where = _functor_location(views, f)
    if not f.registered_dtypes:
        return [Finding("dtype-coverage", f.op, where, f"{f.functor}_functor is never registered (no REGISTER_* line)",
                        "register it for the dtype groups the op supports, e.g. REGISTER_FLOAT_BINARY_OP(...)")]
    missing, exp = missing_coverage(views, f)
    if not missing:
        return []
    routing = host_routing(f)
    if routing.unreadable:
        return (f"cannot tell whether {f.functor}_functor misses {', '.join(dtype_order(missing))}: "
                f"{routing.unreadable}")
    why = f"the OpInfo at {exp.source} tests them on MPS" if exp.source else "every float op runs float32 and float16"
    return [Finding("dtype-coverage", f.op, where,
                    f"{f.functor}_functor is not registered for {', '.join(dtype_order(missing))} ({why}; no xfail declares them failing)",
                    "register the missing dtype groups, or list the dtypes in common_mps.py with the reason")]


_ERROR_LINE = re.compile(r"^[ \t]*#[ \t]*error\b.*$", re.M)


def _check_placeholder(views: Views, f: OpFacts, settings: CheckSettings):
    if f.host is None:
        return "no host function to read (see stub-registration)"
    out = []
    for rel in f.kernel_files:
        text = views.ws.read(rel)
        start, end = views.kernel(rel).functors[f.functor]
        for m in _ERROR_LINE.finditer(views.masked(rel)[start:end]):
            out.append(Finding("placeholder", f.op, Location(rel, text.count("\n", 0, start + m.start()) + 1),
                               f"#error placeholder left in {f.functor}_functor",
                               "write the functor body and delete the #error line"))
    for m in _ERROR_LINE.finditer(mask_code(f.host.body)):
        line = f.host.body_line + f.host.body.count("\n", 0, m.start())
        out.append(Finding("placeholder", f.op, Location(f.host.location.path, line),
                           f"#error placeholder left in {f.host.name}", "finish the host function and delete the #error line"))
    return out


def legacy_names(f: OpFacts) -> list[str]:
    """The names a legacy MPSGraph implementation of the op goes by."""
    names = {site.line.kernel for site in f.legacy}
    bases = {e.base for e in f.entries} | {e.name.partition(".")[0] for e in f.entries}
    for base in bases:
        names.update({f"{base}_mps", f"{base}_out_mps", f"{base}_mps_out", f"{base}_mps_"})
    for site in f.shared:
        names.add(f"{site.line.kernel}_mps")
    return sorted(names)


def _check_legacy(views: Views, f: OpFacts, settings: CheckSettings):
    names = legacy_names(f)
    if not f.shared:  # a per-device op's MPS functions that are the stub call are its MPS kernels now
        served = {mps.line.kernel for _, mps in per_device_sites(f.entries)
                  if (state := mps_function_state(views, mps.line.kernel, f.stub)) is not None
                  and state.calls_stub and not state.graph}
        names = [n for n in names if n not in served]
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, names)) + r")\b")
    out = []
    for rel in views.host_files():
        text = views.ws.read(rel)
        if not any(name in text for name in names):
            continue
        masked = views.masked(rel)
        for m in pattern.finditer(masked):
            out.append(Finding("legacy", f.op, Location(rel, masked.count("\n", 0, m.start()) + 1),
                               f"legacy MPS kernel {m.group(1)} is still defined or referenced",
                               f"remove the MPSGraph implementation (`mpsgen migrate {f.op}` does it)"))
    return out


_TEST_LIST_FINDINGS = {
    "removed-entry": ("{dict}[{key!r}] still expects a failure the kernel fixes: {detail}",
                      "remove the covered dtypes (unexpected successes fail CI)"),
    "removed-dtypes": ("{dict}[{key!r}] still expects a failure the kernel fixes: {detail}",
                       "remove the covered dtypes (unexpected successes fail CI)"),
    "listed-dtypes": ("{dict}[{key!r}] is None, but the kernel serves some of the tested dtypes: {detail}",
                      "list exactly the dtypes that still fail"),
    "added-complex": ("the kernel registers complex dtypes but {key!r} is not in {dict}",
                      "add {key!r} to {dict}"),
    "removed-complex": ("the kernel registers complex dtypes but {key!r} is still in {dict}",
                        "remove {key!r} from {dict} (its complex tests pass: unexpected successes fail CI)"),
    "removed-decorator": ("OpInfo {key!r} still has an MPS expected failure/skip the kernel fixes: {detail}",
                          "remove the DecorateInfo"),
}


# An expectation whose stated reason is that MPS lacks the op, left for an op that has its kernel.
_OPINFO_ARGUMENTS = frozenset({"skips", "decorators"})
_MISSING_OP_FINDING = {
    True: ("OpInfo {key!r} expects MPS to lack the op; it no longer does: {detail}",
           "remove the DecorateInfo and its reason comment: an unexpected success fails CI"),
    False: ("{dict}[{key!r}] expects MPS to lack the op; it no longer does: {detail}",
            "remove the dtypes the kernel registers: an unexpected success fails CI"),
}


def _check_test_lists(views: Views, f: OpFacts, settings: CheckSettings):
    reduction = _native_reduction(views, f)
    if isinstance(reduction, str):
        return reduction
    if reduction is None and (f.host is None or not f.kernel_files):
        return "no registered functor (see kernel-name)"
    if not f.refs:
        return f"no OpInfo tests {f.op}"
    registered = f.registered_dtypes if reduction is None else reduction.registered_dtypes
    out = []
    for change in plan_test_lists(views, test_list_rules(views, f, registered)).changes:
        if change.action in _TEST_LIST_FINDINGS:
            message, hint = _TEST_LIST_FINDINGS[change.action]
            if change.missing_op:
                message, hint = _MISSING_OP_FINDING[change.dict_name in _OPINFO_ARGUMENTS]
            fields = {"dict": change.dict_name, "key": change.key, "detail": change.detail}
            out.append(Finding("test-lists", f.op, change.location, message.format(**fields), hint.format(**fields)))
    return out


def unbalanced(masked: str, path: str) -> list[Location]:
    """Where brackets of C++/Metal code do not balance (`masked`: comments and literals blanked;
    preprocessor lines are ignored): the unmatched opener or the stray closer."""
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


def _check_balance(views: Views, f: OpFacts, settings: CheckSettings):
    files = list(f.kernel_files) + [rel for rel, _ in f.unreadable]
    if f.stub is not None and f.stub.header in FAMILY_FILES:
        family = f"{KERNELS_DIR}/{FAMILY_FILES[f.stub.header][0]}"
        if views.ws.exists(family):
            files.append(family)
    if f.host is not None:
        files.append(f.host.location.path)
    files.extend(r.location.path for r in f.registrations)
    if not files:
        return "no kernel or host file found for the op"
    out = []
    for rel in dict.fromkeys(files):
        for location in views.view("unbalanced", rel, lambda text, rel=rel: unbalanced(views.masked(rel), rel)):
            out.append(Finding("balance", f.op, location, "unbalanced bracket (no partner found)",
                               "fix the edit so that every (, [ and { closes"))
    return out


def _check_format(views: Views, f: OpFacts, settings: CheckSettings):
    if skip := _reduction_skip(views, f, "format"):
        return skip
    if f.host is None:
        return "no host function to read (see stub-registration)"
    ranges = op_line_ranges(views, f)
    result = format_problems(views.checkout.root, {rel: views.ws.read(rel) for rel in ranges}, ranges)
    if isinstance(result, str):
        return result
    return [Finding("format", f.op, p.location, p.message, p.hint) for p in result]


COMPILE_HINT = "fix the kernel file; mpsgen compiled it with the host compiler and its Metal prelude"
REQUIRED_COMPILER_HINT = "install g++ or clang++ (or set $MPSGEN_CXX), or drop --require-metal-compile"


def _check_metal_compile(views: Views, f: OpFacts, settings: CheckSettings):
    """The op's kernel files compile with the host compiler and mpsgen's Metal prelude (each file
    once per text: `Views.metal_compile`). A diagnostic fails the op when it is in the op's own code
    (its functor, the lines that register or define it, or their instantiation context:
    `Views.code_owners`); any other is reported as pre-existing, naming the functor it belongs to."""

    if skip := _reduction_skip(views, f, "metal-compile"):
        return skip
    if not f.kernel_files:
        return "no kernel file defines the functor (see kernel-name)"
    out = []
    for rel in f.kernel_files:
        result = views.metal_compile(rel)
        if result.status == COMPILE_SKIPPED:
            if settings.require_metal_compile:
                out.append(Finding("metal-compile", f.op, Location(rel, 1), f"{rel} was not compiled: {result.reason}",
                                   REQUIRED_COMPILER_HINT))
                continue
            return f"{result.reason}; --require-metal-compile makes this a failure"
        owners = views.code_owners(rel)
        contexts = result.contexts or (DiagnosticContext(),) * len(result.diagnostics)
        for (where, message), context in zip(result.diagnostics, contexts):
            belongs = diagnostic_owners(context.lines, owners, context.functors)
            if f.functor in belongs:
                out.append(Finding("metal-compile", f.op, where, message, COMPILE_HINT))
            else:
                out.append(Finding("metal-compile", f.op, where, message, _pre_existing_hint(f, rel, belongs),
                                   pre_existing=True))
    return out


def _pre_existing_hint(f: OpFacts, rel: str, belongs: tuple[str, ...]) -> str:
    if belongs:
        whose = ", ".join(f"{name}_functor" for name in belongs)
        return f"pre-existing: in {whose}, not {f.op}'s code; verifying that op fails for it"
    return f"pre-existing: met compiling {rel}, outside {f.op}'s code; it does not fail {f.op}"


CHECKS: tuple[tuple[str, CheckFn], ...] = (
    ("yaml-dispatch", _check_yaml),
    ("stub-registration", _check_stub),
    ("kernel-name", _check_kernel_name),
    ("reduce-variants", _check_reduction_variants),
    ("dtype-coverage", _check_dtypes),
    ("placeholder", _check_placeholder),
    ("legacy", _check_legacy),
    ("test-lists", _check_test_lists),
    ("balance", _check_balance),
    ("format", _check_format),
    ("metal-compile", _check_metal_compile),
)
STATIC_CHECKS = tuple(name for name, _ in CHECKS)
