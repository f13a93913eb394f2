"""The one ordered pipeline `new-op` and `migrate` plan through.

    facts (`mpsgen.facts.views`) -> resolve (`mpsgen.facts.resolve`: an OpSpec, or a refusal)
      -> choose the kernel once (body, dtype groups by `mpsgen.facts.rules`, registrations)
      -> each step plans its files: dispatch, kernel, host, tests[, legacy]
      -> every FileChange applied to the Workspace in order -> Plan

Every step has the same shape: it takes the step context and returns `FileChange`s (a file's new
text, the `Change`s made, the `Note`s about what was left alone); a step that cannot plan raises
`MpsgenError` with the location. Steps read the Workspace as the earlier steps left it, so a second
op of one migration sees the first op's edits.
"""

from __future__ import annotations

import re

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from mpsgen.dtypes import torch_dtypes_for
from mpsgen.edit.dispatch import plan_dispatch
from mpsgen.edit.expectations import plan_expectations, test_names
from mpsgen.edit.functor import (Body, derived_helpers, fallback_notes, find_body, render_functor, shared_helpers,
                                 validate_flag)
from mpsgen.edit.host import function_suffix, plan_host
from mpsgen.edit.kernel import KernelChoice, plan_kernel, registrations_for
from mpsgen.edit.launcher import plan_alpha_launcher, plan_launcher
from mpsgen.edit.legacy import plan_legacy
from mpsgen.edit.params import choose_params_kernel, plan_header, plan_include
from mpsgen.edit.reduction import ReductionChoice, plan_helper_case_removal, plan_reduction_host, plan_reduction_kernel
from mpsgen.edit.templates import Templates
from mpsgen.errors import MpsgenError
from mpsgen.facts.bodies import BodyRequest, BodyResolution, resolve_body
from mpsgen.facts.reduction import (base_launcher_call, converted_inputs, launcher_call, load_mode_problem, op_pairs,
                                    plan_orders, sibling_line,
                                    reduction_host_of,
                                    reduction_kernels_of, registration_macro)
from mpsgen.facts.launcher import (TernaryAlphaLauncher, alpha_added_register_macros, ternary_alpha_launcher,
                                   ternary_params_launcher)
from mpsgen.facts.params import exec_with_params_available
from mpsgen.facts.perdevice import mps_function_state
from mpsgen.facts.resolve import OpSpec, Options, resolve_op
from mpsgen.facts.rules import choose_groups, int_to_float_reason, output_type, refuse_uncalled_groups
from mpsgen.facts.views import METAL_TO_TORCH, HostView, Views
from mpsgen.model import FileChange, Location, Note
from mpsgen.read.c10lib import checkout_functions
from mpsgen.read.checkout import NATIVE_DIR, NATIVE_FUNCTIONS
from mpsgen.read.kernelfile import namespace_prefixes
from mpsgen.read.metalhost.check import SKIPPED, DiagnosticContext, compile_metal_file
from mpsgen.read.metalhost.owners import diagnostic_owners


@dataclass(frozen=True)
class StepContext:
    views: Views
    templates: Templates
    spec: OpSpec
    options: Options
    kernel: KernelChoice

    def read(self, rel: str) -> str:
        return self.views.ws.read(rel)


Step = Callable[[StepContext], Iterable[FileChange]]


def choose_kernel(views: Views, templates: Templates, spec: OpSpec, options: Options) -> KernelChoice:
    """The functor body, its dtype groups (the tested dtypes the body serves, never fewer than the
    tests expect to work: `mpsgen.facts.rules.choose_groups`) and its registrations."""
    if options.body != "auto" and spec.reduction is not None:
        raise MpsgenError(f"--body {options.body}: {spec.op} is a reduction, whose body comes from the catalog or the "
                          "flags, not from the body sources", hint="drop --body")
    if spec.params is not None:

        return choose_params_kernel(views, templates, spec, options)
    if spec.reduction is not None:
        return choose_reduction_kernel(views, templates, spec)

    kernel = views.kernel(spec.kernel_file)
    existing = spec.functor in kernel.functors and options.dtypes is None and options.expr is None
    if existing:
        # an existing functor is reused as it is registered (as upstream did for conj_physical)
        registered = kernel.registered.get(spec.functor)
        groups = registered.groups if registered else ()
        if not groups:
            raise MpsgenError(
                f"struct {spec.functor}_functor exists in {spec.kernel_file} but is registered for no dtype",
                location=Location(spec.kernel_file, kernel.functor_line(views.ws.read(spec.kernel_file), spec.functor)),
                hint="pass --dtypes to choose the dtype groups to register",
            )
        body = Body("existing", groups, groups, f"the existing {spec.functor}_functor")
        groups = choose_groups(views, spec.facts, supports=body.supports, defaults=body.defaults, explicit=groups,
                               body=body.describe)
        notes = ()
        if spec.compiled is not None:
            compiled = spec.compiled
            notes = (Note("info", f"{spec.stub.name} is registered with {compiled.functor}_functor, which "
                                  f"{compiled.kernel_file} already compiles ({', '.join(groups)}): no second functor; "
                                  f"{compiled.why}", compiled.location),)
        return KernelChoice("existing", "", (), torch_dtypes_for(groups), notes=notes)
    uncalled = refuse_uncalled_groups(spec.facts, options.dtypes)
    body, groups = choose_body(views, spec, options)

    c10_functions = checkout_functions(views.ws, disk_cache=views.disk_cache)
    kernel_text = views.ws.read(spec.kernel_file)
    namespaces = namespace_prefixes(kernel_text)
    choice = render_functor(templates, body, name=spec.functor, arity=spec.arity, alpha=spec.alpha,
                            expr=options.expr, groups=groups, namespaces=namespaces, c10_functions=c10_functions,
                            alpha_name=spec.alpha_name)
    # the helpers its complex overload calls, once per file (an earlier op may have written them)
    helpers = shared_helpers(templates, choice.text, kernel_text, namespaces=namespaces, c10_functions=c10_functions)
    choice = replace(choice, text=helpers + derived_helpers(body, kernel_text) + choice.text)
    macros = kernel.file.own_macros | views.c10_register_macros()
    if spec.arity == 3 and spec.alpha:
        macros |= alpha_added_register_macros(views.ws)  # added with the Scalar-taking launcher (kernel step)
    registrations = registrations_for(spec.functor, spec.arity, spec.alpha, choice.groups, macros, spec.kernel_file,
                                      output=body.output)
    warning = (Note("todo", uncalled, spec.facts.entries[0].location),) if uncalled else ()
    notes = warning + fallback_notes(body, c10_functions)
    if body.derived:
        notes += (Note("info", f"body: from {body.location}, {body.describe}"),)
    if body.source == "expr" and options.dtypes is None and "int2float" in choice.groups:
        notes += (Note("info", f"int2float registered for the --expr body: integer inputs give float "
                               f"({int_to_float_reason(spec.facts)})", spec.facts.entries[0].location),)
    return KernelChoice(body.source, choice.text, tuple(registrations), torch_dtypes_for(choice.groups),
                        notes=notes, body=body)


def choose_body(views: Views, spec: OpSpec, options: Options) -> tuple[Body, tuple[str, ...]]:
    """The functor's body (`find_body` over the resolver's answer) and its dtype groups
    (`choose_groups`). A derived body serving fewer dtypes than the tests expect is turned down as
    one failing `try` is: the next source is asked, else the placeholder (which takes every group)."""
    while True:
        body = find_body(body_resolution(views, spec, options), op=spec.op, name=spec.functor, arity=spec.arity,
                         alpha=spec.alpha, expr=options.expr, dtypes=options.dtypes, forced=options.body,
                         alpha_name=spec.alpha_name, promotes=int_to_float_reason(spec.facts),
                         scalar=scalar_naming(spec))
        body = replace(body, output=output_type(spec.facts, body.output))  # signbit's meta: bool
        try:
            return body, choose_groups(views, spec.facts, supports=body.supports, defaults=body.defaults,
                                       explicit=options.dtypes, body=body.describe,
                                       minimal=body.source == "placeholder")
        except MpsgenError as exc:
            if not body.derived or options.body != "auto":
                raise
            why = f"its body serves {', '.join(body.supports)} only, and {exc.message.split(': ', 1)[-1]}"
            options = replace(options, rejected=options.rejected + ((body.source, why),))


def scalar_naming(spec: OpSpec) -> str:
    """How the functor's scalar operand got its name (for an --expr naming something else): the
    shared function's call of the stub names it, else nothing in the checkout does."""
    if not spec.alpha:
        return ""
    if spec.call is not None and spec.alpha_name != "alpha":
        return (f"{spec.alpha_name} is the Scalar {spec.stub.name} takes, named as {spec.call.function} passes it "
                f"at {spec.call.where}")
    return (f"alpha is the Scalar {spec.stub.name} takes ({spec.stub.signature}): no call of it in this checkout's "
            f"{NATIVE_DIR}/*.cpp names it, so it is alpha")


def body_resolution(views: Views, spec: OpSpec, options: Options) -> BodyResolution:
    """Every body source's answer for the op (`mpsgen.facts.bodies`), in the kernel file's spelling."""
    if options.expr is not None and options.body != "auto":
        raise MpsgenError(f"--expr and --body {options.body} both choose the body", hint="pass one of them")
    request = BodyRequest(views, spec.facts, spec.op, spec.functor, spec.arity, spec.alpha, options.expr,
                          namespace_prefixes(views.ws.read(spec.kernel_file)),
                          checkout_functions(views.ws, disk_cache=views.disk_cache), alpha_name=spec.alpha_name)
    return resolve_body(request, forced=options.body, rejected=dict(options.rejected))


def choose_reduction_kernel(views: Views, templates: Templates, spec: OpSpec) -> KernelChoice:
    """A reduction's op struct (catalog), its (input, output) pairs (the catalog's sibling op's, read
    from the kernel file), the file's registration macro and the host launcher its siblings call."""
    body = spec.reduction
    kernels = reduction_kernels_of(views, spec.kernel_file)
    host = reduction_host_of(views, spec.host_file)
    if kernels is None or host is None:
        raise MpsgenError(f"{spec.kernel_file} or {spec.host_file} is missing", hint="check the checkout")
    pairs = op_pairs(kernels, body)
    if not pairs:
        raise MpsgenError(f"{spec.kernel_file} registers no {body.pairs_like}_reduction* kernels to take {spec.op}'s "
                          "(input, output) pairs from", location=Location(spec.kernel_file, 1),
                          hint="register the op's pairs by hand")
    macro = registration_macro(views.ws.read(spec.kernel_file), spec.kernel_file)
    register_macro = f"REGISTER_{spec.functor.upper()}"
    registered = frozenset(METAL_TO_TORCH[i] for i, _ in pairs if i in METAL_TO_TORCH)
    if body.load_modes:
        # the base op's struct with a load mode per order: no struct to write, the base op's launcher
        problem = load_mode_problem(views.ws.read(spec.kernel_file), spec.kernel_file, body)
        if problem is not None:
            raise problem
        call = base_launcher_call(views, host, spec.host_file, body.pairs_like)
        orders = plan_orders(views, spec.kernel_file, body, pairs, kernels)
        instances = tuple((o.prefix, f"{body.struct}<TO, {o.order.mode}>") for o in orders if o.register)
        choice = ReductionChoice(body, "", macro, register_macro, pairs, call.launcher, call.location, call.rest,
                                 instances, orders)
        notes = tuple(Note("info", o.why, o.location) for o in orders if o.why)
        return KernelChoice("catalog", "", (), registered, reduction=choice, notes=notes)
    launcher, where = launcher_call(views, host, spec.host_file)
    if body.source == "flags":
        for flag, expr, names in (("--identity", body.identity, ("acc_t",)), ("--combine", body.combine, ("a", "b")),
                                  ("--finalize", body.finalize, ("v",))):
            validate_flag(flag, expr, names)
        text = templates.render("reduction_op_flags.metal.j2", struct=body.struct, acc=body.acc,
                                identity=body.identity, combine=body.combine, finalize=body.finalize)
    else:
        text = templates.render("reduction_op.metal.j2", struct=body.struct, identity=body.identity,
                                combine=body.combine, simd=body.simd, threadgroup=body.threadgroup)
    converted = converted_inputs(kernels, body, pairs)
    choice = ReductionChoice(body, text, macro, register_macro, pairs, launcher, where, converted=converted)
    registered |= {METAL_TO_TORCH[t] for t in converted if t in METAL_TO_TORCH}
    notes = tuple(Note("info", f"{spec.op} registers no {t} kernel ({body.pairs_like}'s {t} kernels are registered here); "
                               f"its host function converts a {t} input to the output's type and reduces it with "
                               f"{spec.op}'s kernels for that type", Location(spec.kernel_file, line))
                  for t, line in ((t, sibling_line(kernels, body.pairs_like, t)) for t in converted))
    return KernelChoice(body.source, text, (), registered, reduction=choice, notes=notes)


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
    if kernel.params is None and spec.arity == 3 and spec.alpha:
        # exec_ternary_kernel taking the op's Scalar (and the c10 kernels it binds), where the
        # checkout's takes none (`generation_problem` checked they can be added): planned first
        launcher = ternary_alpha_launcher(c.views.ws)
        if isinstance(launcher, TernaryAlphaLauncher) and launcher.missing:
            yield from plan_alpha_launcher(c.read, c.templates, launcher)
    if kernel.params is not None:
        if kernel.params.arity == 3 and not exec_with_params_available(c.views.ws, 3):
            # the library's ternary params launcher (and the c10 kernels it binds, where those are
            # missing too), which this checkout lacks (`params_arity` checked they can be added):
            # planned first, so the kernel file registering through them compiles when checked
            yield from plan_launcher(c.read, c.templates, ternary_params_launcher(c.views.ws))
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
    yield plan_host(
        c.read(spec.host_file), c.templates, spec.host_file, stub=spec.stub.name, functor=spec.functor,
        arity=kernel.params.arity if kernel.params is not None else spec.arity, alpha=spec.alpha,
        iterator_type=spec.iterator_type, kernel_stem=spec.kernel_file.rsplit("/", 1)[-1].removesuffix(".metal"),
        registered=c.views.registrations(spec.stub.name), params=kernel.params, alpha_name=spec.alpha_name,
        function=spec.op if spec.compiled is not None else "",
    )


def tests_step(c: StepContext) -> Iterable[FileChange]:
    """The OpInfo decorators and common_mps.py lists, by `mpsgen.facts.rules` (a reduction's
    registered dtypes: the input dtypes of the pairs it registers)."""

    yield from plan_expectations(c.views, c.spec.facts, c.kernel.registered, drop_undefined=c.options.drop_undefined)


def legacy_step(c: StepContext) -> Iterable[FileChange]:
    """(migrate) the MPSGraph implementation and what it leaves unused."""

    if c.spec.legacy:
        changes = plan_legacy(c.views, c.spec, c.options.legacy_files)
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


def plan_op(views: Views, templates: Templates, spec: OpSpec, options: Options,
            steps: tuple[tuple[str, Step], ...]) -> KernelChoice | None:
    """Plan one op into the Workspace: every step in order, each step's FileChanges applied before
    the next step reads. An op that is already native Metal gets a note and no edit. Returns the
    kernel chosen (its body, for the command's run-time check)."""

    ws = views.ws
    facts = spec.facts
    where = spec.shared[0].line.location if spec.shared else facts.entries[0].location
    if spec.composite is not None:
        if facts.native:
            ws.add_note(Note("info", f"{spec.op} is already served on MPS through its shared function: "
                                     f"{spec.composite.describe()}", where))
            return
        for note in spec.notes:
            ws.add_note(Note("info", note, spec.composite.functions[0].location
                                        if spec.composite.functions and spec.composite.functions[0].recorded is None
                                        else where))
        kernel = None
        if spec.composite.registers is not None:
            kernel = plan_owner_kernel(views, templates, spec, options, steps)
        else:
            ws.add_note(Note("info", f"{spec.op}: no kernel, host or test-list edit (its dtypes are those of what it "
                                     "calls); the dispatch line and the legacy implementation change", where))
        for name, step in steps:
            if name in ("dispatch", "legacy"):
                context = StepContext(views, templates, spec, options, KernelChoice("composite", "", (), frozenset()))
                for change in step(context):
                    ws.apply(change)
        ws.add_step("build: cd build && ninja torch_cpu")
        for test in test_names(facts) or (f"test_output_match_{spec.op}",):
            ws.add_step(f"test: python test/test_mps.py -k {test}")
        return kernel
    if (spec.per_device is not None and facts.registrations and options.dtypes is None and options.expr is None
            and all((state := mps_function_state(views, body.kernel, spec.stub)) is not None and state.calls_stub
                    and not state.graph for body in spec.per_device.bodies)):
        reg = facts.registrations[0]
        names = ", ".join(body.kernel for body in spec.per_device.bodies)
        ws.add_note(Note("info", f"{spec.op} is already native Metal: {names} call{'s' if len(spec.per_device.bodies) == 1 else ''} "
                                 f"{spec.stub.name} for kMPS ({spec.stub.name} -> {reg.function})", reg.location))
        return
    if facts.native and facts.registrations and options.dtypes is None and options.expr is None:
        reg = facts.registrations[0]
        ws.add_note(Note("info", f"{spec.op} is already native Metal ({spec.stub.name} -> {reg.function})", reg.location))
        return None
    context = StepContext(views, templates, spec, options, choose_kernel(views, templates, spec, options))
    for note in spec.notes:  # how the stub was found (path:line), how a loss reduces
        ws.add_note(Note("info", note, where))
    for name, step in steps:
        for change in step(context):
            ws.apply(change)
        if name == "kernel" and options.expr is not None and context.kernel.text:
            check_expr(views, spec, options.expr)
    ws.add_step("build: cd build && ninja torch_cpu")
    for test in test_names(facts) or (f"test_output_match_{spec.op}",):
        ws.add_step(f"test: python test/test_mps.py -k {test}")
    return context.kernel


def plan_owner_kernel(views: Views, templates: Templates, spec: OpSpec, options: Options,
                      steps: tuple[tuple[str, Step], ...]) -> KernelChoice:
    """The kernel and host steps of the op owning the stub a composite op's shared function calls
    (threshold_backward calls threshold_stub with value 0): that stub's kernel, as `migrate OWNER`
    writes it. The owner's own dispatch line, test lists and MPSGraph kernel stay: `migrate OWNER`
    later is its dispatch line and the legacy removal (`Composite.describe` says so in the summary)."""
    stub, owner, where = spec.composite.registers
    mode = "migrate" if any(name == "legacy" for name, _ in steps) else "new-op"  # the command's own
    owner_spec = resolve_op(views, owner, replace(options, stub=None, overloads=()), mode=mode)
    if owner_spec.stub is None or owner_spec.stub.name != stub or owner_spec.composite is not None:
        raise MpsgenError(f"{spec.op}'s shared function calls {stub} (at {where}), which {owner} does not resolve to",
                          location=where, hint=f"migrate {owner} first (mpsgen migrate {owner} {spec.op})")
    context = StepContext(views, templates, owner_spec, options, choose_kernel(views, templates, owner_spec, options))
    for name, step in steps:
        if name in ("kernel", "host"):
            for change in step(context):
                views.ws.apply(change)
        if name == "kernel" and options.expr is not None and context.kernel.text:
            check_expr(views, owner_spec, options.expr)
    return context.kernel


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
