"""An op's whole plan, decided once, here: `plan_for(views, spec, options, check=None) -> OpPlan`.

    read -> facts: resolve (`OpSpec`: the stub, its dispatch shape, the params struct, a reduction's
    catalog body) -> plan_for: the body and its source (a derived body checked by the command's
    `check`, turned down and asked again here when it fails), the dtype groups and the reasons for
    them (`mpsgen.facts.rules`), the functor text (`mpsgen.facts.functor`), the registrations, the
    test-list rules -> edit/ writes the OpPlan into files (`mpsgen.edit.pipeline.plan_op`)

Every decision new-op, migrate, scan, try and verify share about what an op's kernel is lives
here or below; edit/ takes the OpPlan and only places its texts."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from mpsgen.dtypes import torch_dtypes_for
from mpsgen.errors import MpsgenError
from mpsgen.facts.bodies import BodyRequest, BodyResolution, resolve_body
from mpsgen.facts.choice import OPMATH_SCALAR_TYPE, KernelChoice, ReductionChoice, registrations_for
from mpsgen.facts.functor import (Body, derived_helpers, fallback_notes, find_body, render_functor, shared_helpers,
                                  validate_flag)
from mpsgen.facts.launcher import TernaryAlphaLauncher, alpha_added_register_macros, ternary_alpha_launcher
from mpsgen.facts.paramskernel import choose_params_kernel
from mpsgen.facts.reduction import (base_launcher_call, converted_inputs, launcher_call, load_mode_problem, op_pairs,
                                    plan_orders, sibling_line,
                                    reduction_host_of,
                                    reduction_kernels_of, registration_macro)
from mpsgen.facts.perdevice import mps_function_state
from mpsgen.facts.resolve import OpSpec, Options, resolve_op
from mpsgen.facts.rules import choose_groups, int_to_float_reason, output_type, refuse_uncalled_groups
from mpsgen.facts.templates import Templates
from mpsgen.facts.testplan import TestListRules, test_list_rules
from mpsgen.facts.views import METAL_TO_TORCH, Views
from mpsgen.model import Location, Note
from mpsgen.read.c10lib import checkout_functions
from mpsgen.read.checkout import COMMON_MPS, NATIVE_DIR
from mpsgen.read.kernelfile import namespace_prefixes


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
    alpha_launcher = None
    if spec.arity == 3 and spec.alpha:
        # exec_ternary_kernel taking the op's Scalar (and the c10 kernels it binds), where the
        # checkout's takes none (`generation_problem` checked they can be added): the kernel step
        # writes it first; its registration macros are the ones added with it
        macros |= alpha_added_register_macros(views.ws)
        launcher = ternary_alpha_launcher(views.ws)
        if isinstance(launcher, TernaryAlphaLauncher) and launcher.missing:
            alpha_launcher = launcher
    registrations = registrations_for(spec.functor, spec.arity, spec.alpha, choice.groups, macros, spec.kernel_file,
                                      output=body.output, without=body.not_registered)
    warning = (Note("todo", uncalled, spec.facts.entries[0].location),) if uncalled else ()
    notes = warning + fallback_notes(body, c10_functions)
    if body.derived:
        notes += (Note("info", f"body: from {body.location}, {body.describe}"),)
    if body.source == "expr" and options.dtypes is None and "int2float" in choice.groups:
        notes += (Note("info", f"int2float registered for the --expr body: integer inputs give float "
                               f"({int_to_float_reason(spec.facts)})", spec.facts.entries[0].location),)
    return KernelChoice(body.source, choice.text, tuple(registrations),
                        torch_dtypes_for(choice.groups, body.not_registered), notes=notes, body=body, alpha_launcher=alpha_launcher,
                        scalar_type=OPMATH_SCALAR_TYPE if spec.arity == 3 and spec.alpha else "")


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


# ------------------------------------------------------------------------------------------ the plan


@dataclass(frozen=True)
class Verdict:
    """What the command's check says of a derived body (`commands.bodycheck.check_body`): `passed`
    True (every value matched), False (`why`: the failing values or the compiler's line), None (not
    checked or only compiled); `note`: the line the plan reports."""

    passed: bool | None
    why: str
    note: Note


@dataclass(frozen=True)
class OpPlan:
    """Everything about one op decided before a file is planned: edit/ (`mpsgen.edit.pipeline.plan_op`)
    only writes it. `spec`: the stub, its dispatch shape, the params struct (`OpSpec`); `kernel`: the
    body with its source, the dtypes it serves, the functor text, the registrations (a composite's:
    none, `owner` holds the kernel of the op owning the stub it registers); `tests`: the rules'
    verdicts on the test lists; `native`: the note of an op already native Metal (nothing to
    write); `checked`: each verdict of the body check, in order (a turned-down body's too); `expr`,
    `legacy_files`: what the user asked for that edit/ needs to write (--expr is compiled after the
    kernel is placed)."""

    spec: OpSpec
    kernel: KernelChoice | None = None
    tests: TestListRules | None = None
    native: Note | None = None
    owner: OpPlan | None = None
    expr: str | None = None
    legacy_files: tuple[str, ...] = ()
    checked: tuple[Note, ...] = ()

    @property
    def body_kernel(self) -> KernelChoice | None:
        """The kernel whose body the plan writes (a composite's: its owner's), None when it writes none."""
        if self.native is not None:
            return None
        if self.spec.composite is not None:
            return self.owner.kernel if self.owner is not None else None
        return self.kernel


# a derived body's check, supplied by the command (try lives in commands/): None when not checked
Check = Callable[[OpPlan], "Verdict | None"]


def plan_for(views: Views, spec: OpSpec, options: Options, check: Check | None = None, *,
             templates: Templates | None = None, mode: str = "migrate") -> OpPlan:
    """The op's whole plan, from the views as the plan so far left them (a second op of one
    migration sees the first one's edits). A derived body is given to `check` (the command's run of
    `try` on the kernel as planned); one that fails is turned down (`Options.rejected`, its reason
    the failing values) and the body is decided again: the next source is asked, else the
    placeholder quoting every reason. `mode`: the command (`migrate`, `new-op`), as resolve takes it."""
    templates = templates or Templates(views.checkout.root)
    checked: list[Note] = []
    while True:
        plan = _decide(views, templates, spec, options, mode)
        kernel = plan.body_kernel
        verdict = check(plan) if check is not None and kernel is not None and kernel.body is not None \
            and kernel.body.derived else None
        if verdict is not None:
            checked.append(verdict.note)
        if verdict is None or verdict.passed is not False:
            return replace(plan, checked=tuple(checked))
        options = replace(options, rejected=options.rejected + ((kernel.source, verdict.why),))


def _decide(views: Views, templates: Templates, spec: OpSpec, options: Options, mode: str) -> OpPlan:
    facts = spec.facts
    base = OpPlan(spec, expr=options.expr, legacy_files=options.legacy_files)
    if spec.composite is not None:
        if facts.native:
            where = spec.shared[0].line.location if spec.shared else facts.entries[0].location
            return replace(base, native=Note("info", f"{spec.op} is already served on MPS through its shared "
                                                     f"function: {spec.composite.describe()}", where))
        owner = owner_plan(views, templates, spec, options, mode) if spec.composite.registers is not None else None
        return replace(base, kernel=KernelChoice("composite", "", (), frozenset()), owner=owner)
    if (spec.per_device is not None and facts.registrations and options.dtypes is None and options.expr is None
            and all((state := mps_function_state(views, body.kernel, spec.stub)) is not None and state.calls_stub
                    and not state.graph for body in spec.per_device.bodies)):
        reg = facts.registrations[0]
        names = ", ".join(body.kernel for body in spec.per_device.bodies)
        return replace(base, native=Note(
            "info", f"{spec.op} is already native Metal: {names} call{'s' if len(spec.per_device.bodies) == 1 else ''} "
                    f"{spec.stub.name} for kMPS ({spec.stub.name} -> {reg.function})", reg.location))
    if facts.native and facts.registrations and options.dtypes is None and options.expr is None:
        reg = facts.registrations[0]
        return replace(base, native=Note("info", f"{spec.op} is already native Metal ({spec.stub.name} -> "
                                                 f"{reg.function})", reg.location))
    kernel = choose_kernel(views, templates, spec, options)
    tests = None
    if views.ws.exists(COMMON_MPS) and facts.refs:
        tests = test_list_rules(views, facts, kernel.registered, drop_undefined=options.drop_undefined,
                                after_change=True)
    return replace(base, kernel=kernel, tests=tests)


def owner_plan(views: Views, templates: Templates, spec: OpSpec, options: Options, mode: str) -> OpPlan:
    """The kernel of the op owning the stub a composite op's shared function calls
    (threshold_backward calls threshold_stub with value 0): that stub's kernel, as `migrate OWNER`
    writes it (its kernel and host steps only: the owner's own dispatch line, test lists and
    MPSGraph kernel stay; `Composite.describe` says so in the summary)."""
    stub, owner, where = spec.composite.registers
    owner_spec = resolve_op(views, owner, replace(options, stub=None, overloads=()), mode=mode)
    if owner_spec.stub is None or owner_spec.stub.name != stub or owner_spec.composite is not None:
        raise MpsgenError(f"{spec.op}'s shared function calls {stub} (at {where}), which {owner} does not resolve to",
                          location=where, hint=f"migrate {owner} first (mpsgen migrate {owner} {spec.op})")
    return OpPlan(owner_spec, choose_kernel(views, templates, owner_spec, options), expr=options.expr,
                  legacy_files=options.legacy_files)
