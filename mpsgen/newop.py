"""`mpsgen new-op`: give an op that has CPU/CUDA kernels through a shared stub a native Metal kernel."""

from __future__ import annotations

from mpsgen.checkout import Checkout, Workspace
from mpsgen.facts import Views
from mpsgen.model import Location, Plan
from mpsgen.resolve import OpSpec, Options, resolve_op
from mpsgen.templates import Templates


def plan_native_kernel(views: Views, templates: Templates, spec: OpSpec, options: Options) -> None:
    """The parts new-op and migrate share: yaml dispatch, Metal functor + registrations, host stub,
    test expectations."""
    from mpsgen.dispatch import plan_dispatch
    from mpsgen.functor import Body, find_body, render_functor
    from mpsgen.host import plan_host
    from mpsgen.metal import namespace_prefixes, plan_kernel, registrations_for
    from mpsgen.rules import choose_groups

    ws = views.ws
    facts = spec.facts
    if facts.native and facts.registrations and options.dtypes is None and options.expr is None:
        reg = facts.registrations[0]
        ws.add_note(f"{reg.location}: {spec.op} is already native Metal ({spec.stub.name} -> {reg.function})")
        return
    if spec.params is not None:  # several scalars: a params struct (mpsgen/params.py)
        from mpsgen.expectations import plan_expectations
        from mpsgen.params import plan_params_kernel

        plan_dispatch(ws, spec)
        registered = plan_params_kernel(views, templates, spec, options)
        add_next_steps(ws, spec, plan_expectations(views, facts, registered, drop_undefined=options.drop_undefined))
        return
    kernel = views.kernel(spec.kernel_file)
    existing = spec.functor in kernel.file.functors and options.dtypes is None and options.expr is None
    if existing:
        # An existing functor is reused as it is registered (as upstream did for conj_physical).
        registered = kernel.registered.get(spec.functor)
        groups = registered.groups if registered else ()
        if not groups:
            from mpsgen.errors import MpsgenError

            raise MpsgenError(
                f"struct {spec.functor}_functor exists in {spec.kernel_file} but is registered for no dtype",
                location=Location(spec.kernel_file, kernel.functor_line(ws.read(spec.kernel_file), spec.functor)),
                hint="pass --dtypes to choose the dtype groups to register",
            )
        body = Body("existing", groups, groups, f"the existing {spec.functor}_functor")
    else:
        body = find_body(op=spec.op, name=spec.functor, arity=spec.arity, alpha=spec.alpha,
                         expr=options.expr, dtypes=options.dtypes)
    groups = choose_groups(views, facts, supports=body.supports, defaults=body.defaults,
                           explicit=groups if existing else options.dtypes, body=body.describe, minimal=body.source == "placeholder")
    plan_dispatch(ws, spec)
    if existing:
        text, registrations = "", []
    else:
        choice = render_functor(templates, body, name=spec.functor, arity=spec.arity, alpha=spec.alpha,
                                expr=options.expr, groups=groups, namespaces=namespace_prefixes(ws.read(spec.kernel_file)))
        text = choice.text
        macros = kernel.file.own_macros | views.c10_register_macros()
        registrations = registrations_for(spec.functor, spec.arity, spec.alpha, choice.groups, macros, spec.kernel_file)
    # An existing functor is kept; only registrations that are missing are added.
    plan_kernel(ws, spec.kernel_file, spec.functor, text, registrations)
    if body.source == "placeholder" and spec.functor not in kernel.file.functors:
        after = ws.read(spec.kernel_file)
        struct = after.find(f"struct {spec.functor}_functor {{")
        line = after[: after.find("#error", struct)].count("\n") + 1
        ws.add_note(f"{Location(spec.kernel_file, line)}: fill in the body of {spec.functor}_functor (the #error stops the build there until you do)")
    plan_host(
        ws, templates, spec.host_file, stub=spec.stub.name, functor=spec.functor, arity=spec.arity,
        alpha=spec.alpha, iterator_type=spec.iterator_type,
        kernel_stem=spec.kernel_file.rsplit("/", 1)[-1].removesuffix(".metal"),
        registered=views.registrations(spec.stub.name),
    )
    from mpsgen.expectations import plan_expectations
    from mpsgen.dtypes import torch_dtypes_for

    tests = plan_expectations(views, facts, torch_dtypes_for(groups), drop_undefined=options.drop_undefined)
    add_next_steps(ws, spec, tests)


def plan_new_op(checkout: Checkout, op: str, options: Options) -> Plan:
    ws = Workspace(checkout)
    views = Views(ws, disk_cache=True)
    templates = Templates(checkout.root)
    spec = resolve_op(views, op, options, mode="new-op")
    plan_native_kernel(views, templates, spec, options)
    return ws.plan((op,))


def add_next_steps(ws: Workspace, spec: OpSpec, tests: tuple[str, ...]) -> None:
    ws.add_step("build: cd build && ninja torch_cpu")
    for test in tests or (f"test_output_match_{spec.op}",):
        ws.add_step(f"test: python test/test_mps.py -k {test}")
