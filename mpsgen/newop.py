"""`mpsgen new-op`: give an op that has CPU/CUDA kernels through a shared stub a native Metal kernel."""

from __future__ import annotations

from mpsgen.checkout import Checkout, Workspace
from mpsgen.functor import FunctorChoice
from mpsgen.model import Location, Plan
from mpsgen.resolve import Context, OpSpec, Options, resolve_op
from mpsgen.templates import Templates


def plan_native_kernel(ws: Workspace, ctx: Context, templates: Templates, spec: OpSpec, options: Options) -> None:
    """The parts new-op and migrate share: yaml dispatch, Metal functor + registrations, host stub."""
    from mpsgen.dispatch import plan_dispatch
    from mpsgen.functor import choose_functor
    from mpsgen.host import mps_registrations, plan_host
    from mpsgen.metal import available_macros, plan_kernel, read_kernel_file, registered_groups, registrations_for

    kernel = read_kernel_file(ws.read(spec.kernel_file), spec.kernel_file)
    registered = mps_registrations(ws, spec.stub.name)
    if spec.yaml_native and registered and options.dtypes is None and options.expr is None:
        ws.add_note(f"{registered[0].location}: {spec.op} is already native Metal ({spec.stub.name} -> {registered[0].function})")
        return
    plan_dispatch(ws, spec)
    if spec.params is not None:
        from mpsgen.expectations import plan_expectations
        from mpsgen.params import plan_params_kernel

        groups = plan_params_kernel(ws, templates, spec, options)
        add_next_steps(ws, spec, plan_expectations(ws, spec, groups, drop_undefined=options.drop_undefined))
        return
    if spec.functor in kernel.functors and options.dtypes is None and options.expr is None:
        # An existing functor is reused as it is registered (as upstream did for conj_physical).
        groups = registered_groups(kernel, spec.functor)
        if not groups:
            from mpsgen.errors import MpsgenError

            raise MpsgenError(
                f"struct {spec.functor}_functor exists in {spec.kernel_file} but is registered for no dtype",
                hint="pass --dtypes to choose the dtype groups to register",
            )
        choice = FunctorChoice("existing", "", groups)
        registrations = []
    else:
        choice = choose_functor(
            templates, op=spec.op, name=spec.functor, arity=spec.arity, alpha=spec.alpha,
            expr=options.expr, dtypes=options.dtypes,
        )
        macros = available_macros(ws, kernel)
        registrations = registrations_for(spec.functor, spec.arity, spec.alpha, choice.groups, macros, spec.kernel_file)
    # An existing functor is kept; only registrations that are missing are added.
    plan_kernel(ws, spec.kernel_file, spec.functor, choice.text, registrations)
    if choice.source == "placeholder" and spec.functor not in kernel.functors:
        after = ws.read(spec.kernel_file)
        line = after[: after.find(f"#error \"mpsgen: write the body of {spec.functor}_functor")].count("\n") + 1
        ws.add_note(f"{Location(spec.kernel_file, line)}: fill in the body of {spec.functor}_functor (the #error stops the build there until you do)")
    plan_host(
        ws, templates, spec.host_file, stub=spec.stub.name, functor=spec.functor, arity=spec.arity,
        alpha=spec.alpha, iterator_type=spec.iterator_type,
        kernel_stem=spec.kernel_file.rsplit("/", 1)[-1].removesuffix(".metal"),
    )
    from mpsgen.expectations import plan_expectations

    tests = plan_expectations(ws, spec, choice.groups, drop_undefined=options.drop_undefined)
    add_next_steps(ws, spec, tests)


def plan_new_op(checkout: Checkout, op: str, options: Options) -> Plan:
    ws = Workspace(checkout)
    ctx = Context(ws)
    templates = Templates(checkout.root)
    spec = resolve_op(ctx, op, options, mode="new-op")
    plan_native_kernel(ws, ctx, templates, spec, options)
    return ws.plan((op,))


def add_next_steps(ws: Workspace, spec: OpSpec, tests: tuple[str, ...]) -> None:
    ws.add_note("build: cd build && ninja torch_cpu")
    for test in tests or (f"test_output_match_{spec.op}",):
        ws.add_note(f"test: python test/test_mps.py -k {test}")
