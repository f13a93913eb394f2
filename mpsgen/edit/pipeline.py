"""The one ordered pipeline `new-op` and `migrate` write through.

    facts (`mpsgen.facts.views`) -> resolve (`mpsgen.facts.resolve`: an OpSpec, or a refusal)
      -> the op's whole plan, decided once (`mpsgen.facts.plan.plan_for`: body, dtype groups,
         functor text, registrations, test-list verdicts) -> here: each step writes its files from
         the plan: dispatch, kernel, host, tests[, legacy]
      -> every FileChange applied to the Workspace in order -> Plan

Every step has the same shape: it takes the step context and returns `FileChange`s (a file's new
text, the `Change`s made, the `Note`s about what was left alone); a step that cannot place what
the plan says raises `MpsgenError` with the location. Steps read the Workspace as the earlier steps
left it, so a second op of one migration sees the first op's edits. Nothing here decides what the
kernel is: edit/ reads neither `mpsgen.facts.bodies` nor `mpsgen.facts.rules`.
"""

from __future__ import annotations

import re

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from mpsgen.edit.dispatch import plan_dispatch
from mpsgen.edit.expectations import plan_expectations
from mpsgen.edit.host import function_suffix, plan_host
from mpsgen.edit.kernel import plan_kernel
from mpsgen.edit.launcher import plan_alpha_launcher, plan_launcher
from mpsgen.edit.legacy import plan_legacy
from mpsgen.edit.params import plan_header, plan_include
from mpsgen.edit.reduction import plan_helper_case_removal, plan_reduction_host, plan_reduction_kernel
from mpsgen.edit.templates import Templates
from mpsgen.errors import MpsgenError
from mpsgen.facts.choice import OPMATH_HEADER, KernelChoice
from mpsgen.facts.plan import OpPlan
from mpsgen.facts.reduction import reduction_kernels_of
from mpsgen.facts.resolve import OpSpec
from mpsgen.facts.testplan import test_names
from mpsgen.facts.views import HostView, Views
from mpsgen.model import FileChange, Location, Note
from mpsgen.read.checkout import NATIVE_FUNCTIONS
from mpsgen.read.metalhost.check import SKIPPED, DiagnosticContext, compile_metal_file
from mpsgen.read.metalhost.owners import diagnostic_owners


@dataclass(frozen=True)
class StepContext:
    views: Views
    templates: Templates
    plan: OpPlan

    @property
    def spec(self) -> OpSpec:
        return self.plan.spec

    @property
    def kernel(self) -> KernelChoice:
        return self.plan.kernel

    def read(self, rel: str) -> str:
        return self.views.ws.read(rel)


Step = Callable[[StepContext], Iterable[FileChange]]


# ------------------------------------------------------------------------------------------ steps


def dispatch_step(c: StepContext) -> Iterable[FileChange]:
    """native_functions.yaml: MPS joins the shared lines; (migrate) the `MPS: x_mps` lines go. A
    per-device op's `MPS:` lines stay (its MPS functions become the stub call: the legacy step)."""

    if c.spec.per_device is not None:
        return
    yield plan_dispatch(c.read(NATIVE_FUNCTIONS), c.spec)


def kernel_step(c: StepContext) -> Iterable[FileChange]:
    """The .metal file (and a params kernel's struct in its header): functor and registrations."""

    spec, kernel = c.spec, c.kernel
    if kernel.reduction is not None:
        text = c.read(spec.kernel_file)
        # the choice's notes stand at lines of the file as it was: given first, the edit moves them
        yield FileChange(spec.kernel_file, text, notes=kernel.notes)
        yield plan_reduction_kernel(text, spec.kernel_file, kernel.reduction,
                                    reduction_kernels_of(c.views, spec.kernel_file))
        return
    if kernel.alpha_launcher is not None:
        # exec_ternary_kernel taking the op's Scalar where the checkout's takes none (the plan
        # decided it): planned first, so the kernel file registering through it compiles when checked
        yield from plan_alpha_launcher(c.read, c.templates, kernel.alpha_launcher)
    if kernel.params is not None:
        if kernel.params_launcher is not None:
            # the library's ternary params launcher the plan decided to add: planned first, so the
            # kernel file registering through it compiles when checked
            yield from plan_launcher(c.read, c.templates, kernel.params_launcher)
        yield plan_header(c.views.ws, c.templates, kernel.params)
        yield plan_include(c.read(spec.kernel_file), spec.kernel_file, kernel.params.include)
    change = plan_kernel(c.read(spec.kernel_file), spec.kernel_file, spec.functor, kernel.text,
                         list(kernel.registrations), kernel.registration_macro,
                         functors=c.views.kernel(spec.kernel_file).functors,
                         reading=c.views.kernel(spec.kernel_file).reading,
                         reports=getattr(c.views.ws, "reports", True))
    notes = change.notes + kernel.notes
    if kernel.source == "placeholder" and kernel.text and any(c.kind == "functor" for c in change.changes):
        # (an existing functor registered for new dtypes is kept as it is: nothing to fill in)
        struct = change.text.find(f"struct {spec.functor}_functor {{")
        directive = re.compile(r"^[ \t]*#[ \t]*error\b", re.M).search(change.text, struct)  # not the comment naming it
        line = change.text.count("\n", 0, directive.start() if directive else struct) + 1
        notes += (Note("todo", f"fill in the body of {spec.functor}_functor (the #error stops the build there until you do)",
                       Location(spec.kernel_file, line)),)
    yield replace(change, notes=notes)


def host_step(c: StepContext) -> Iterable[FileChange]:
    """The operations/*.mm file: the kernel function and REGISTER_DISPATCH."""

    spec, kernel = c.spec, c.kernel
    if kernel.reduction is not None:
        text = c.read(spec.host_file)
        suffix = function_suffix(HostView.read(text, spec.host_file).direct_registrations())
        function = f"{spec.functor}{suffix}"
        body = kernel.reduction.body
        function_text = ""
        if body.load_modes:
            function_text = c.templates.render(
                "reduction_orders_host.mm.j2", function=function, iterator_type=spec.iterator_type, op=spec.op,
                struct=body.struct, base=body.pairs_like, orders=[o for o in kernel.reduction.orders if o.prefix],
                launcher=kernel.reduction.launcher,
                rest=kernel.reduction.rest)
        yield plan_reduction_host(text, spec.host_file, stub=spec.stub.name, function=function,
                                  iterator_type=spec.iterator_type, choice=kernel.reduction,
                                  registered=c.views.registrations(spec.stub.name), function_text=function_text)
        return
    if kernel.params is not None:
        yield plan_include(c.read(spec.host_file), spec.host_file, kernel.params.include)
        yield plan_include(c.read(spec.host_file), spec.host_file, "fmt/format.h")
    if spec.compiled is not None and spec.compiled.host_file == spec.host_file:
        # the file launching the functor already is not the stub family's: it needs the stub's header
        yield plan_include(c.read(spec.host_file), spec.host_file, f"ATen/native/{spec.stub.header}")
    if kernel.scalar_type and not c.views.registrations(spec.stub.name):
        # the ternary op's Scalar goes in its op-math type (at::toOpMathType)
        yield plan_include(c.read(spec.host_file), spec.host_file, OPMATH_HEADER)
    yield plan_host(
        c.read(spec.host_file), c.templates, spec.host_file, stub=spec.stub.name, functor=spec.functor,
        arity=kernel.params.arity if kernel.params is not None else spec.arity, alpha=spec.alpha,
        iterator_type=spec.iterator_type, kernel_stem=spec.kernel_file.rsplit("/", 1)[-1].removesuffix(".metal"),
        registered=c.views.registrations(spec.stub.name), params=kernel.params, alpha_name=spec.alpha_name,
        function=spec.op if spec.compiled is not None else "", scalar_type=kernel.scalar_type,
    )


def tests_step(c: StepContext) -> Iterable[FileChange]:
    """The OpInfo decorators and common_mps.py lists, by the plan's verdicts (`mpsgen.facts.testplan`;
    a reduction's registered dtypes: the input dtypes of the pairs it registers)."""

    yield from plan_expectations(c.views, c.spec.facts, c.plan.tests)


def legacy_step(c: StepContext) -> Iterable[FileChange]:
    """(migrate) the MPSGraph implementation and what it leaves unused."""

    if c.spec.legacy:
        changes = plan_legacy(c.views, c.spec, c.plan.legacy_files)
        before = {change.path: c.read(change.path) for change in changes}
        yield from changes
        if c.kernel.reduction is not None:
            # the op's case of the MPSGraph helper other reductions still use
            for path, text in before.items():
                yield plan_helper_case_removal(c.read(path), path, text)


NEW_OP_STEPS: tuple[tuple[str, Step], ...] = (
    ("dispatch", dispatch_step),
    ("kernel", kernel_step),
    ("host", host_step),
    ("tests", tests_step),
)
MIGRATE_STEPS: tuple[tuple[str, Step], ...] = NEW_OP_STEPS + (("legacy", legacy_step),)


def plan_op(views: Views, templates: Templates, plan: OpPlan, steps: tuple[tuple[str, Step], ...]) -> None:
    """Write one op's plan (`mpsgen.facts.plan.plan_for`) into the Workspace: every step in order,
    each step's FileChanges applied before the next step reads. An op that is already native Metal
    gets the plan's note and no edit."""

    ws = views.ws
    spec = plan.spec
    facts = spec.facts
    where = spec.shared[0].line.location if spec.shared else facts.entries[0].location
    if plan.native is not None:
        ws.add_note(plan.native)
        return
    if spec.composite is not None:
        for note in spec.notes:
            ws.add_note(Note("info", note, spec.composite.functions[0].location
                                        if spec.composite.functions and spec.composite.functions[0].recorded is None
                                        else where))
        if plan.owner is not None:
            plan_owner_kernel(views, templates, plan.owner, steps)
        else:
            ws.add_note(Note("info", f"{spec.op}: no kernel, host or test-list edit (its dtypes are those of what it "
                                     "calls); the dispatch line and the legacy implementation change", where))
        for name, step in steps:
            if name in ("dispatch", "legacy"):
                for change in step(StepContext(views, templates, plan)):
                    ws.apply(change)
        ws.add_step("build: cd build && ninja torch_cpu")
        for test in test_names(facts) or (f"test_output_match_{spec.op}",):
            ws.add_step(f"test: python test/test_mps.py -k {test}")
        return
    context = StepContext(views, templates, plan)
    for note in spec.notes:  # how the stub was found (path:line), how a loss reduces
        ws.add_note(Note("info", note, where))
    for name, step in steps:
        for change in step(context):
            ws.apply(change)
        if name == "kernel" and plan.expr is not None and plan.kernel.text:
            check_expr(views, spec, plan.expr)
    ws.add_step("build: cd build && ninja torch_cpu")
    for test in test_names(facts) or (f"test_output_match_{spec.op}",):
        ws.add_step(f"test: python test/test_mps.py -k {test}")


def plan_owner_kernel(views: Views, templates: Templates, owner: OpPlan, steps: tuple[tuple[str, Step], ...]) -> None:
    """The kernel and host steps of the op owning the stub a composite op's shared function calls
    (the plan's `owner`): that stub's kernel, as `migrate OWNER` writes it. The owner's own dispatch
    line, test lists and MPSGraph kernel stay: `migrate OWNER` later is its dispatch line and the
    legacy removal."""
    context = StepContext(views, templates, owner)
    for name, step in steps:
        if name in ("kernel", "host"):
            for change in step(context):
                views.ws.apply(change)
        if name == "kernel" and owner.expr is not None and owner.kernel.text:
            check_expr(views, owner.spec, owner.expr)


def check_expr(views: Views, spec: OpSpec, expr: str) -> None:
    """`--expr` compiled before anything is written: the kernel file as planned (the rendered
    functor and its registrations, which instantiate it for every dtype group it registers) with
    the host compiler, mpsgen's Metal prelude and the checkout's own headers. An error in the new
    functor's code is exit 2 naming the expression and the compiler's message; errors elsewhere
    in the file are verify's business. Without a compiler, a note says the expression was not
    checked."""

    rel = spec.kernel_file
    # with the headers as planned too (a params kernel's struct is added to its header)
    result = compile_metal_file(views.checkout.root, rel, text=views.ws.read(rel), texts=views.ws.planned_texts())
    if result.status == SKIPPED:
        views.ws.add_note(Note("info", f"--expr {expr!r} was not compiled before writing: {result.reason}"))
        return
    owners = views.code_owners(rel)
    contexts = result.contexts or (DiagnosticContext(),) * len(result.diagnostics)
    mine = [(where, message) for (where, message), context in zip(result.diagnostics, contexts)
            if spec.functor in diagnostic_owners(context.lines, owners, context.functors)]
    if mine:
        where, message = mine[0]
        more = f" (+{len(mine) - 1} more)" if len(mine) > 1 else ""
        raise MpsgenError(f"--expr {expr!r} does not compile in {spec.functor}_functor: {message}{more}",
                          location=where, hint="fix the expression; nothing was written")


def check_single_registration(views: Views, spec: OpSpec) -> None:
    if spec.composite is not None:
        return  # no registration of its own
    found = views.registrations(spec.stub.name)
    if len(found) != 1:
        where = ", ".join(str(r.location) for r in found) or "nowhere"
        raise MpsgenError(
            f"{spec.stub.name} would be registered for MPS {len(found)} times ({where})",
            location=found[1].location if len(found) > 1 else spec.stub.location,
            hint="a stub takes exactly one REGISTER_DISPATCH per device; remove the duplicate",
        )
