"""The command line. Thin: parse options, call one library function, render its result.

Library modules are imported inside the commands so that `mpsgen --help` stays fast."""

from __future__ import annotations

import contextlib
import json
import sys

import click

from mpsgen import _stage

EXIT_INTERNAL = 3
EXIT_INTERRUPTED = 130
INTERRUPTED = "interrupted; nothing was written"


class _State:
    def __init__(self, checkout_dir, debug):
        self.checkout_dir = checkout_dir
        self.debug = debug

    def checkout(self):
        from mpsgen.read.checkout import Checkout

        return Checkout.find(self.checkout_dir)


def run_guarded(state: _State, func, as_json: bool = False):
    """Run `func`; user errors become one line on stderr and their exit code, never a traceback
    (unless --debug). With `as_json` the error is also one JSON document on stdout."""
    from mpsgen.errors import MpsgenError

    try:
        _stage("command")
        return func()
    except MpsgenError as exc:
        if state.debug:
            raise
        _error_json(as_json, exc.message, str(exc.location) if exc.location else None, exc.hint)
        click.echo(f"mpsgen: error: {exc}", err=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        _error_json(as_json, INTERRUPTED, None, None)
        click.echo(f"mpsgen: {INTERRUPTED}", err=True)
        sys.exit(EXIT_INTERRUPTED)
    except Exception as exc:  # a bug: say so in one line, the traceback is behind --debug
        if state.debug:
            raise
        _error_json(as_json, f"internal error: {type(exc).__name__}: {exc}", None, "run with --debug for the traceback")
        click.echo(f"mpsgen: internal error: {type(exc).__name__}: {exc} (run with --debug for the traceback)", err=True)
        sys.exit(EXIT_INTERNAL)


def _error_json(as_json: bool, message: str, location: str | None, hint: str | None) -> None:
    if as_json:
        click.echo(json.dumps({"error": message, "location": location, "hint": hint}, indent=2))


class _Interrupted(Exception):
    """Ctrl-C outside a command's guarded run, carried past click's own handling (which would print
    a blank line and "Aborted!")."""


def usage_error(exc: click.exceptions.ClickException) -> tuple[str, str]:
    """Bad usage as (one line, what to do): click's message without its closing full stop, the
    command's help as the hint."""
    message = " ".join(exc.format_message().split()).removesuffix(".")
    ctx = getattr(exc, "ctx", None)
    words = ctx.command_path.split()[1:] if ctx is not None else []  # the program is mpsgen however started
    return message, f"see `{' '.join(['mpsgen', *words])} --help`"


def _set_checkout_dir(ctx, param, value):
    if value is not None:
        ctx.find_object(_State).checkout_dir = value


def _set_debug(ctx, param, value):
    if value:
        ctx.find_object(_State).debug = True


def _global_options() -> list[click.Option]:
    """-C and --debug once more on every command (hidden from its help), so that they work after
    the command's name as well as before it (`mpsgen scan -C PATH`, `mpsgen migrate atan2 --debug`)."""
    return [click.Option(["-C", "global_checkout_dir"], metavar="PATH", default=None, hidden=True, expose_value=False,
                         callback=_set_checkout_dir),
            click.Option(["--debug", "global_debug"], is_flag=True, hidden=True, expose_value=False, callback=_set_debug)]


class _Main(click.Group):
    """The command group, whose errors outside a command's own run (bad usage, Ctrl-C while click
    parses) are one line too: usage errors exit 2 (with `--json` also as a JSON document on stdout),
    Ctrl-C exits 130."""

    def add_command(self, cmd, name=None):
        cmd.params.extend(_global_options())
        super().add_command(cmd, name)

    def make_context(self, *args, **kwargs):
        try:
            return super().make_context(*args, **kwargs)
        except KeyboardInterrupt:
            raise _Interrupted() from None

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            raise _Interrupted() from None

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)
        argv = list(sys.argv[1:] if args is None else args)
        try:
            _stage("cli")
            result = super().main(argv, prog_name, complete_var, False, **extra)
        except click.exceptions.NoArgsIsHelpError as exc:  # `mpsgen` alone: the help, exit 2
            exc.show()
            sys.exit(exc.exit_code)
        except click.exceptions.ClickException as exc:
            message, hint = usage_error(exc)
            _error_json("--json" in argv, message, None, hint)
            click.echo(f"mpsgen: error: {message} ({hint})", err=True)
            sys.exit(exc.exit_code)
        except (_Interrupted, click.exceptions.Abort, KeyboardInterrupt, EOFError):
            _error_json("--json" in argv, INTERRUPTED, None, None)
            click.echo(f"mpsgen: {INTERRUPTED}", err=True)
            sys.exit(EXIT_INTERRUPTED)
        sys.exit(result if isinstance(result, int) else 0)


FORMAT_HELP = ("How to show the report: rich tables and colour on a terminal, plain lines elsewhere (auto), "
               "or always one of them. NO_COLOR turns colour off.")


def _format_option(*choices: str):
    return click.option("--format", "fmt", type=click.Choice(["auto", *choices]), default="auto", show_default=True,
                        help=FORMAT_HELP)


def _examples(*lines: str) -> str:
    """A help epilog of examples; `\b` keeps click from rewrapping the lines."""
    return "\b\nExamples:\n" + "\n".join(f"  {line}" for line in lines)


def _complete_ops(ctx, param, incomplete):
    from mpsgen.completion import complete_ops

    return complete_ops(ctx, param, incomplete)


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"]}, epilog=_examples(
    "mpsgen migrate atan2 --dry-run",
    "mpsgen -C ~/pytorch verify --changed --static-only",
    "mpsgen scan --candidates",
))
@click.option("-C", "checkout_dir", metavar="PATH", default=None,
              help="Run as if started in PATH (a PyTorch checkout). Default: search upward from the current directory.")
@click.option("--debug", is_flag=True, help="Show tracebacks instead of one-line errors.")
@click.version_option(package_name="mpsgen")
@click.pass_context
def main(ctx, checkout_dir, debug):
    """Add native Metal operators to a PyTorch checkout and migrate MPSGraph operators to Metal.

    Exit codes: 0 done, 1 a check failed, 2 bad usage or input, 3 internal error."""
    ctx.obj = _State(checkout_dir, debug)


# `--body`'s choices: mpsgen.facts.bodies.BODY_CHOICES (written out: `--help` loads no facts module)
BODY_CHOICES = ("auto", "catalog", "c10", "cpu", "graph")


def _kernel_options(func):
    options = [
        click.option("--expr", default=None, metavar="EXPR",
                     help="Functor body as one Metal expression over x (unary); a, b (binary); a, b, c (ternary); alpha when the stub takes a Scalar; the schema's parameter names (beta, threshold, ...) when it takes several."),
        click.option("--body", "body", type=click.Choice(BODY_CHOICES), default="auto", show_default=True,
                     help="Where the functor body comes from: auto (the first source that has one: the catalog, a c10::metal function, the CPU kernel's scalar code, the legacy MPSGraph graph), or that source only (exit 2 when it has none)."),
        click.option("--identity", default=None, metavar="EXPR",
                     help="(A reduction the catalog lacks) the op struct's identity: one Metal expression, in acc_t."),
        click.option("--combine", default=None, metavar="EXPR",
                     help="(A reduction) how two accumulators a and b combine: one associative, commutative Metal expression."),
        click.option("--finalize", default=None, metavar="EXPR",
                     help="(A reduction) what the accumulator v becomes before the cast to the output type (default: v)."),
        click.option("--acc", default=None, metavar="TYPE",
                     help="(A reduction) the accumulator type (default: opmath_t<TO>; 32-bit or narrower)."),
        click.option("--dtypes", default=None, metavar="GROUPS",
                     help="Comma-separated dtype groups to register: float, int2float, integer, complex, bool. Default: the catalog's, else float."),
        click.option("--stub", default=None, metavar="NAME", help="Dispatch stub to register (default: resolved from the op's name)."),
        click.option("--overload", "overloads", multiple=True, metavar="NAME",
                     help="Only these overloads (e.g. Tensor_out) and the entries delegating to them. Repeatable."),
        click.option("--kernel-file", default=None, metavar="FILE", help="The .metal file for the functor (default: chosen by the stub's header)."),
        click.option("--host-file", default=None, metavar="FILE", help="The .mm host file for the kernel function (default: chosen by the stub's header)."),
        click.option("--drop-undefined", is_flag=True,
                     help="Also drop the op's UNDEFINED_XFAILLIST / precision / random entries in common_mps.py (reported otherwise)."),
        click.option("--dry-run", is_flag=True, help="Print the unified diff of every change; write nothing."),
        click.option("--json", "as_json", is_flag=True, help="Print one JSON document instead of the human report."),
        _format_option("rich", "plain"),
        click.option("--require-clean", is_flag=True,
                     help="Refuse to run when a file the change touches has uncommitted changes (default: warn)."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _options(expr, dtypes, stub, overloads, kernel_file, host_file, drop_undefined=False, legacy_files=(),
             reduction=(None, None, None, None), body="auto"):
    from mpsgen.dtypes import parse_groups
    from mpsgen.facts.resolve import Options

    identity, combine, finalize, acc = reduction
    return Options(
        identity=identity,
        combine=combine,
        finalize=finalize,
        acc=acc,
        expr=expr,
        dtypes=parse_groups(dtypes) if dtypes is not None else None,
        stub=stub,
        overloads=tuple(overloads),
        kernel_file=kernel_file,
        host_file=host_file,
        drop_undefined=drop_undefined,
        legacy_files=tuple(legacy_files),
        body=body,
    )


@main.command("new-op", epilog=_examples(
    "mpsgen new-op hypot --dry-run",
    "mpsgen new-op hypot",
    "mpsgen new-op copysign --dtypes float,int2float",
))
@click.argument("op", shell_complete=_complete_ops)
@_kernel_options
@click.pass_obj
def new_op(state, op, expr, body, identity, combine, finalize, acc, dtypes, stub, overloads, kernel_file, host_file,
           drop_undefined, dry_run, as_json, fmt, require_clean):
    """Give OP (CPU/CUDA kernels through a shared stub) a native Metal MPS kernel."""

    def run():
        _one_format(as_json, fmt)
        checkout = state.checkout()
        arguments = repr(("new-op", op, expr, body, identity, combine, finalize, acc, dtypes, stub, tuple(overloads),
                          kernel_file, host_file, drop_undefined))

        def plan():
            from mpsgen.commands.newop import plan_new_op

            return plan_new_op(checkout, op, _options(expr, dtypes, stub, overloads, kernel_file, host_file, drop_undefined,
                                                      reduction=(identity, combine, finalize, acc), body=body))

        with _writing(checkout, dry_run):
            return _finish(_kept_plan(checkout, arguments, plan), "new-op", dry_run, as_json, fmt, require_clean)

    sys.exit(run_guarded(state, run, as_json))


@main.command("migrate", epilog=_examples(
    "mpsgen migrate atan2 --dry-run",
    "mpsgen migrate asinh acosh atanh",
    'mpsgen migrate remainder --expr "a - b * c10::metal::floor_divide(a, b)" --dtypes float,integer',
))
@click.argument("ops", nargs=-1, required=True, shell_complete=_complete_ops)
@_kernel_options
@click.option("--legacy-file", "legacy_files", multiple=True, metavar="PATH",
              help="A file defining the legacy MPS kernels, besides mps/operations/*.mm (relative to the checkout, or absolute inside it). Repeatable.")
@click.pass_obj
def migrate(state, ops, expr, body, identity, combine, finalize, acc, dtypes, stub, overloads, kernel_file, host_file,
            drop_undefined, dry_run, as_json, fmt, require_clean, legacy_files):
    """Move OPS from MPSGraph onto native Metal kernels (several ops: one transaction)."""

    def run():
        if len(ops) > 1 and (expr or stub or kernel_file or host_file or identity or combine or finalize or acc):
            from mpsgen.errors import MpsgenError

            raise MpsgenError("--expr, --identity, --combine, --finalize, --acc, --stub, --kernel-file and --host-file "
                              "apply to one op", hint="migrate such ops one at a time")
        _one_format(as_json, fmt)
        checkout = state.checkout()
        with _writing(checkout, dry_run):
            legacy = _legacy_files(checkout, legacy_files)
            arguments = repr(("migrate", tuple(ops), expr, body, identity, combine, finalize, acc, dtypes, stub,
                              tuple(overloads), kernel_file, host_file, drop_undefined, legacy))

            def plan():
                from mpsgen.commands.migrate import plan_migrate

                return plan_migrate(checkout, tuple(ops), _options(expr, dtypes, stub, overloads, kernel_file, host_file,
                                                                   drop_undefined, legacy,
                                                                   (identity, combine, finalize, acc), body))

            return _finish(_kept_plan(checkout, arguments, plan), "migrate", dry_run, as_json, fmt, require_clean)

    sys.exit(run_guarded(state, run, as_json))


def _kept_plan(checkout, arguments: str, make):
    """The plan of this command line kept in the user cache while nothing it was computed from
    changed (`mpsgen.commands.kept`), else `make()`, kept."""
    from mpsgen.commands.kept import environment, keep_plan, kept_plan
    from mpsgen.read.checkout import recording

    env = environment(checkout.root)
    plan = kept_plan(checkout, arguments, env)
    if plan is None:
        with recording(checkout.root) as reads:
            plan = make()
        keep_plan(checkout, arguments, plan, reads, env)
    return plan


def _legacy_files(checkout, paths) -> tuple[str, ...]:
    """`--legacy-file` paths as checkout-relative POSIX paths of existing files inside the checkout."""
    from pathlib import Path

    from mpsgen.errors import MpsgenError

    out = []
    for given in paths:
        path = Path(given)
        path = (path if path.is_absolute() else checkout.root / path).resolve()
        try:
            rel = path.relative_to(checkout.root).as_posix()
        except ValueError:
            raise MpsgenError(f"--legacy-file {given}: not inside the checkout {checkout.root}",
                              hint="name a file of the checkout") from None
        if not path.is_file():
            raise MpsgenError(f"--legacy-file {given}: file not found", hint="name the file defining the legacy kernel")
        out.append(rel)
    return tuple(out)


@contextlib.contextmanager
def _writing(checkout, dry_run):
    """Hold the checkout's lock from reading to writing, so that two runs never interleave; a dry
    run writes nothing and takes no lock."""
    if dry_run:
        yield
        return
    from mpsgen.edit.lock import CheckoutLock

    with CheckoutLock(checkout.root) as lock:
        if lock.stale_removed is not None:
            click.echo(f"mpsgen: warning: took over the lock of a run that is gone ({lock.stale_removed.describe()})", err=True)
        yield


def _check_git(plan, require_clean) -> None:
    """Warn (or with --require-clean refuse) when a file the plan changes has uncommitted work."""
    from pathlib import Path

    from mpsgen.read.gitstate import uncommitted

    dirty = uncommitted(Path(plan.root), [edit.path for edit in plan.edits])
    if dirty and require_clean:
        from mpsgen.errors import MpsgenError

        more = f" (and {len(dirty) - 1} more)" if len(dirty) > 1 else ""
        raise MpsgenError(f"{dirty[0]}{more} has uncommitted changes and --require-clean was given",
                          hint="commit or stash them first, or run without --require-clean")
    for rel in dirty:
        click.echo(f"mpsgen: warning: {rel} has uncommitted changes; mpsgen's edits will mix with them "
                   "(commit or stash first to review them apart)", err=True)


def _one_format(as_json: bool, fmt: str, other: str | None = None) -> None:
    """--json (or --markdown) and an explicit --format name two output formats."""
    if fmt != "auto" and (as_json or other):
        from mpsgen.errors import MpsgenError

        raise MpsgenError(f"--{'json' if as_json else other} and --format {fmt} are two output formats", hint="pick one")


def _finish(plan, command, dry_run, as_json, fmt="auto", require_clean=False) -> int:
    from mpsgen.edit.apply import apply_plan, plan_to_json, render_diff
    from mpsgen.render.mode import RICH, colour_allowed, resolve

    _check_git(plan, require_clean)
    applied = False
    if not dry_run and not plan.empty:
        apply_plan(plan)
        applied = True
    if as_json:
        click.echo(json.dumps(plan_to_json(plan, command=command, applied=applied), indent=2))
        return 0
    if dry_run and not plan.empty:
        diff = render_diff(plan)
        if resolve(fmt, sys.stdout) == RICH and colour_allowed():
            from rich.syntax import Syntax

            from mpsgen.render.mode import console

            console().print(Syntax(diff, "diff", theme="ansi_dark", background_color="default"))
        else:
            sys.stdout.write(diff)
            sys.stdout.flush()
    from mpsgen.render.summary import render_summary

    render_summary(plan, command=command, dry_run=dry_run, to_stderr=dry_run,
                   mode=resolve(fmt, sys.stderr if dry_run else sys.stdout))
    return 0


@main.command("verify", epilog=_examples(
    "mpsgen verify atan2 hypot --static-only",
    "mpsgen verify --changed --base origin/main --format github",
    "mpsgen verify --all-native --static-only --json > verify.json",
    "mpsgen verify hypot --test-cmd \"{python} -m pytest -v test/test_mps.py -k {pytest_k}\"",
))
@click.argument("ops", nargs=-1, shell_complete=_complete_ops)
@click.option("--changed", is_flag=True, help="Verify the ops touched by the working tree's diff against HEAD (or --base).")
@click.option("--base", default="HEAD", metavar="REF", show_default=True, help="The git ref --changed compares against.")
@click.option("--all-native", is_flag=True, help="Verify every op registered for MPS through a dispatch stub.")
@click.option("--static-only", is_flag=True, help="Run the static checks only (any OS, no build, no tests).")
@click.option("--build-cmd", default=None, metavar="CMD",
              help="Build command, run in the build directory (default: build-cmd in .mpsgen.toml / [tool.mpsgen], else `ninja torch_cpu`).")
@click.option("--build-dir", default=None, metavar="DIR", help="Build directory, relative to the checkout (default: build).")
@click.option("--test-cmd", default=None, metavar="CMD",
              help="Test command, run in the checkout through the shell; {python}, {k} (unittest -k options) and "
                   "{pytest_k} (one pytest -k expression) are filled in, {k} appended when neither is given "
                   "(default: test-cmd in .mpsgen.toml / [tool.mpsgen], else `{python} test/test_mps.py -v {k}`).")
@click.option("--require-build", is_flag=True, help="A build that cannot run here is a failure, not a skip.")
@click.option("--require-tests", is_flag=True, help="Tests that cannot run here are a failure, not a skip.")
@click.option("--grad", is_flag=True, help="Also run test_output_grad_match_<name>.")
@click.option("--require-metal-compile", is_flag=True,
              help="No C++ compiler for the metal-compile check is a failure, not a skip.")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=None, metavar="SECONDS",
              help="Time limit for each of the build and test stages.")
@click.option("--assume-mps", is_flag=True,
              help="Run build and tests even when this is not macOS (also: MPSGEN_ASSUME_MPS=1).")
@click.option("--log-dir", default=None, metavar="DIR", help="Where build.log and tests.log go (default: the checkout's folder in the user state directory, $MPSGEN_STATE_DIR or the platform's; printed).")
@click.option("--junit-xml", "junit_xml", default=None, metavar="PATH", help="Also write a JUnit XML report to PATH.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document with every finding instead of the table.")
@click.option("--format", "fmt", type=click.Choice(["auto", "rich", "plain", "github"]), default="auto", show_default=True,
              help=FORMAT_HELP + " github: GitHub Actions annotations, one per finding.")
@click.pass_obj
def verify(state, ops, changed, base, all_native, static_only, build_cmd, test_cmd, build_dir, require_build, require_tests,
           grad, require_metal_compile, timeout, assume_mps, log_dir, junit_xml, as_json, fmt):
    """Prove that the MPS change of OPS is complete: static checks, build, test_output_match.

    Exit codes: 0 every required stage passed (skips are listed with their reason), 1 a check
    failed, 2 bad usage or input."""

    def run():
        from mpsgen.commands.verify import VerifyOptions, all_native_ops, changed_ops, check_op_names
        from mpsgen.commands.verify import verify as run_verify
        from mpsgen.errors import MpsgenError

        if sum(bool(x) for x in (ops, changed, all_native)) != 1:
            raise MpsgenError("name the ops, or pass exactly one of --changed and --all-native",
                              hint="e.g. `mpsgen verify atan2`, `mpsgen verify --changed`")
        if static_only and (require_build or require_tests):
            raise MpsgenError("--static-only cannot be combined with --require-build/--require-tests",
                              hint="drop one of them")
        _one_format(as_json, fmt)
        from mpsgen.edit.workspace import Workspace
        from mpsgen.facts.views import Views

        checkout = state.checkout()
        views = Views(Workspace(checkout), disk_cache=True)
        if changed:
            selected = changed_ops(views, base)
        elif all_native:
            selected = all_native_ops(views)
        else:
            selected = check_op_names(views, tuple(ops))
        options = VerifyOptions(static_only=static_only, build_cmd=build_cmd, test_cmd=test_cmd, build_dir=build_dir,
                                require_build=require_build, require_tests=require_tests, grad=grad,
                                timeout=timeout, assume_mps=assume_mps, log_dir=log_dir,
                                require_metal_compile=require_metal_compile)
        from mpsgen.render.mode import GITHUB, PLAIN, resolve

        mode = PLAIN if as_json else resolve(fmt, sys.stdout)
        report = _with_progress(lambda progress: run_verify(checkout, selected, options, progress, views), as_json)
        if junit_xml:
            from mpsgen.render.junit import report_to_junit

            try:
                with open(junit_xml, "w", encoding="utf-8") as handle:
                    handle.write(report_to_junit(report))
            except OSError as exc:
                raise MpsgenError(f"--junit-xml {junit_xml}: {exc.strerror}", hint="pick a writable path") from None
        if as_json:
            from mpsgen.render.verify_json import report_to_json

            click.echo(json.dumps(report_to_json(report), indent=2))
        elif mode == GITHUB:
            from mpsgen.render.github import github_lines

            click.echo("\n".join(github_lines(report, static_only=static_only)))
        elif mode == PLAIN:
            from mpsgen.render.verify_text import verify_lines

            click.echo("\n".join(verify_lines(report)))
        else:
            from mpsgen.render.verify_table import render_verify

            render_verify(report)
        return report.exit_code

    sys.exit(run_guarded(state, run, as_json))


def _kernel_hint(checkout, op: str) -> str:
    """try's hint for an op with no native kernel: which generating command would give it one,
    planned in memory (`commands.confirm.kernel_hint`); loaded only when try refuses so."""
    from mpsgen.commands.confirm import kernel_hint

    return kernel_hint(checkout, op)


@main.command("try", epilog=_examples(
    "mpsgen try hypot",
    "mpsgen try asinh --reference catalog --seed 7",
    "mpsgen try atan2 --json > try.json",
    "mpsgen try softplus --show-source > softplus_try.metal",
))
@click.argument("op", shell_complete=_complete_ops)
@click.option("--backend", type=click.Choice(["auto", "host", "mps"]), default="auto", show_default=True,
              help="Where the functor runs: MPS through torch.mps.compile_shader, or the host C++ compiler with mpsgen's Metal prelude (auto: MPS when available).")
@click.option("--reference", type=click.Choice(["auto", "torch", "catalog"]), default="auto", show_default=True,
              help="What it is compared with: torch's CPU op, or the catalog's Python reference (auto: torch when importable).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the random samples.")
@click.option("--samples", type=click.IntRange(min=0), default=32, show_default=True, help="Random cases per dtype, besides the edge values.")
@click.option("--stub", default=None, metavar="NAME",
              help="The dispatch stub the op's kernel is registered for, where it is not named after the op (huber_loss: huber_stub).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document instead of the table.")
@click.option("--strict", is_flag=True,
              help="Exit 1 when a branch of the functor is never taken by try's values (default: a warning). Measured on the host build with g++ and gcov.")
@click.option("--show-source", is_flag=True,
              help="Print the exact shader source try compiles (what torch.mps.compile_shader takes on a Mac) and exit 0 without running it.")
@_format_option("rich", "plain")
@click.pass_obj
def try_(state, op, backend, reference, seed, samples, stub, as_json, strict, show_source, fmt):
    """Run OP's functor, as it stands in the checkout's kernel file, on edge values and random samples
    of every registered dtype, and compare with a CPU reference.

    Exit codes: 0 every dtype matched, 1 a mismatch (or the kernel does not compile; with --strict, a
    branch of the functor never taken), 2 bad usage or input."""

    def run():
        from mpsgen.commands.tryop.api import TryOptions, report_to_json, source_to_json, try_op, try_source
        from mpsgen.render.mode import RICH, resolve

        _one_format(as_json, fmt)
        if show_source:
            shown = try_source(state.checkout(), op, stub, suggest=_kernel_hint)
            if as_json:
                click.echo(json.dumps(source_to_json(shown), indent=2))
            else:
                click.echo(shown.source, nl=False)
            return 0
        report = try_op(state.checkout(), op, TryOptions(backend, reference, seed, samples, stub, strict),
                        suggest=_kernel_hint)
        if as_json:
            click.echo(json.dumps(report_to_json(report), indent=2))
        elif resolve(fmt, sys.stdout) == RICH:
            from mpsgen.render.try_table import render_try

            render_try(report)
        else:
            from mpsgen.render.try_text import try_lines

            click.echo("\n".join(try_lines(report)))
        return report.exit_code

    sys.exit(run_guarded(state, run, as_json))


@main.command("audit", epilog=_examples(
    "mpsgen audit",
    "mpsgen audit hypot atan2 --markdown > audit.md",
    "mpsgen audit --json > audit.json",
))
@click.argument("ops", nargs=-1, shell_complete=_complete_ops)
@click.option("--jobs", "-j", type=click.IntRange(min=0), default=0, show_default=True,
              help="Worker processes (0: one per core).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of try's random samples.")
@click.option("--samples", type=click.IntRange(min=0), default=32, show_default=True, help="Random cases per dtype, besides the edge values.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document with every op and finding.")
@click.option("--markdown", is_flag=True, help="Print an issue-ready GitHub Markdown report.")
@click.pass_obj
def audit(state, ops, jobs, seed, samples, as_json, markdown):
    """Run try's comparison on every native elementwise and params kernel (or OPS) and report where
    the kernel disagrees with torch's CPU op, grouped by kind, with a reproducer for a Mac.

    Exit codes: 0 nothing found, 1 findings, 2 bad usage or input."""

    def run():
        from mpsgen.commands.audit import AuditOptions
        from mpsgen.commands.audit import audit as run_audit
        from mpsgen.commands.verify import all_native_ops, check_op_names
        from mpsgen.edit.workspace import Workspace
        from mpsgen.errors import MpsgenError
        from mpsgen.facts.views import Views

        if as_json and markdown:
            raise MpsgenError("--json and --markdown are two output formats", hint="pick one")
        checkout = state.checkout()
        views = Views(Workspace(checkout), disk_cache=True)
        selected = check_op_names(views, tuple(ops)) if ops else all_native_ops(views)
        report = _with_progress(lambda progress: run_audit(checkout, tuple(selected),
                                                           AuditOptions(jobs, seed, samples), progress),
                                as_json or markdown)
        if as_json:
            from mpsgen.render.audit_json import report_to_json

            click.echo(json.dumps(report_to_json(report), indent=2))
        elif markdown:
            from mpsgen.render.audit_text import audit_markdown

            click.echo(audit_markdown(report), nl=False)
        else:
            from mpsgen.render.audit_text import audit_lines

            click.echo("\n".join(audit_lines(report)))
        return report.exit_code

    sys.exit(run_guarded(state, run, as_json))


@main.command("scan", epilog=_examples(
    "mpsgen scan --candidates",
    "mpsgen scan --candidates --tier ready,expr",
    "mpsgen scan --new-op",
    "mpsgen scan --json > mps.json",
    "mpsgen scan --candidates --markdown",
))
@click.option("--candidates", is_flag=True, help="List the ops `migrate` can take, easiest first, with the reason.")
@click.option("--tier", "tiers", default=None, metavar="TIERS",
              help="Only these candidate tiers, comma-separated: ready (migrate OP completes), reduce (a reduction migrate OP completes), expr (needs --expr), port (needs a hand-written port). Implies --candidates.")
@click.option("--new-op", "new_op_list", is_flag=True,
              help="List the ops `new-op` can take instead (a shared stub, no MPS kernel), easiest first.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document: one record per op, candidates, totals.")
@click.option("--markdown", is_flag=True, help="Print GitHub Markdown tables (to paste into an issue).")
@_format_option("rich", "plain")
@click.pass_obj
def scan(state, candidates, tiers, new_op_list, as_json, markdown, fmt):
    """Report every operator's MPS backing (native Metal, MPSGraph, other, composite, none) and what to migrate next."""

    def run():
        import dataclasses

        from mpsgen.commands.kept import kept_scan
        from mpsgen.commands.scanreport import TIERS
        from mpsgen.errors import MpsgenError

        if as_json and markdown:
            raise MpsgenError("--json and --markdown are two output formats", hint="pick one")
        _one_format(as_json, fmt, "markdown" if markdown else None)
        chosen = TIERS
        if tiers is not None:
            chosen = tuple(t.strip() for t in tiers.split(",") if t.strip())
            unknown = [t for t in chosen if t not in TIERS]
            if unknown or not chosen:
                raise MpsgenError(f"--tier {tiers}: unknown tier {', '.join(unknown) or '(none given)'}",
                                  hint=f"tiers are {', '.join(TIERS)}")
            if new_op_list and "port" in chosen:
                raise MpsgenError("--new-op lists no port tier", hint="use --tier ready,expr with --new-op")
        if new_op_list:
            if candidates:
                raise MpsgenError("--new-op and --candidates are two lists", hint="pick one")
            from mpsgen.commands.scan import new_op_candidates

            found = [c for c in new_op_candidates(state.checkout()) if c.tier in chosen]
            _print_new_op_list(found, as_json, markdown)
            return 0
        show = candidates or tiers is not None
        checkout = state.checkout()
        report = kept_scan(checkout)  # a checkout nothing changed in: the kept report, and nothing that computes it imported
        if report is None:
            from mpsgen.commands.scan import scan_checkout

            report = scan_checkout(checkout)
        report = dataclasses.replace(report, tiers=chosen)
        if as_json:
            from mpsgen.render.jsontext import dumps_indented
            from mpsgen.render.scan_json import report_to_json

            click.echo(dumps_indented(report_to_json(report)))
        elif markdown:
            from mpsgen.render.scan_markdown import render_markdown

            click.echo(render_markdown(report, candidates=show), nl=False)
        else:
            from mpsgen.render.mode import RICH, resolve

            if resolve(fmt, sys.stdout) == RICH:
                from mpsgen.render.scan_table import render_scan

                render_scan(report, show)
            else:
                from mpsgen.render.scan_text import scan_lines

                click.echo("\n".join(scan_lines(report, candidates=show)))
        return 0

    sys.exit(run_guarded(state, run, as_json))


def _print_new_op_list(found, as_json: bool, markdown: bool) -> None:
    header = ("#", "op", "tier", "stub", "yaml", "reason")
    rows = [(str(i), c.op, c.tier, c.stub, str(c.location), c.reason) for i, c in enumerate(found, 1)]
    if as_json:
        click.echo(json.dumps({"new_op_candidates": [
            {"op": c.op, "tier": c.tier, "stub": c.stub, "signature": c.signature, "arity": c.arity,
             "yaml": str(c.location), "reason": c.reason} for c in found]}, indent=2))
    elif markdown:
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
        click.echo("\n".join(lines))
    else:
        from mpsgen.render.text import aligned

        click.echo(f"Candidates for mpsgen new-op, easiest first ({len(found)})")
        if rows:
            click.echo("\n".join(aligned(header, rows, right=(0,))))


@main.command("trace", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False},
              epilog=_examples(
    "mpsgen trace --save ops.json train.py --epochs 1",
    "mpsgen -C ~/pytorch trace --ops-file ops.json",
    "mpsgen trace --markdown bench.py > trace.md",
))
@click.argument("script", required=False)
@click.argument("script_args", nargs=-1, type=click.UNPROCESSED, metavar="[ARGS]...")
@click.option("--ops-file", default=None, metavar="FILE", help="Analyse a recording saved earlier with --save instead of running a script.")
@click.option("--save", default=None, metavar="FILE", help="Also write the recording to FILE (to analyse it later, against another checkout).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document: {script, ops, totals}.")
@click.option("--markdown", is_flag=True, help="Print a GitHub Markdown table (to paste into an issue).")
@_format_option("rich", "plain")
@click.pass_obj
def trace(state, script, script_args, ops_file, save, as_json, markdown, fmt):
    """Run SCRIPT (as `python SCRIPT ARGS`, in this process) recording every ATen op it calls, and
    report each op's MPS backing in the checkout, its calls and distinct input shapes (one cached
    graph each on MPSGraph), and whether `migrate` can take it now. Options go before SCRIPT.

    The script's printed output goes to stderr. Needs torch (pip install 'mpsgen[trace]').

    Exit codes: 0 the script finished, 1 it raised or exited non-zero (the trace is still printed),
    2 bad usage or input."""

    def run():
        from mpsgen.commands.scan import scan_checkout
        from mpsgen.commands.trace.analysis import analyse
        from mpsgen.commands.trace.recorder import load_recording, record_script, save_recording
        from mpsgen.errors import MpsgenError

        if (script is None) == (ops_file is None):
            raise MpsgenError("name a SCRIPT to run or pass --ops-file, not both" if script else "name a SCRIPT to run, or pass --ops-file FILE",
                              hint="e.g. `mpsgen trace train.py`")
        if as_json and markdown:
            raise MpsgenError("--json and --markdown are two output formats", hint="pick one")
        _one_format(as_json, fmt, "markdown" if markdown else None)
        checkout = state.checkout()
        recording = load_recording(ops_file) if ops_file else record_script(script, tuple(script_args))
        if save:
            save_recording(recording, save)
        run_ = recording.script
        if script and run_.traceback:
            click.echo(run_.traceback.rstrip("\n"), err=True)
        if script and (run_.exception or run_.exit_status):
            what = run_.exception or f"exit status {run_.exit_status}"
            click.echo(f"mpsgen: warning: {run_.path} stopped with {what}; the trace covers what ran before", err=True)
        report = analyse(recording, scan_checkout(checkout))
        if as_json:
            from mpsgen.render.trace_json import trace_to_json

            click.echo(json.dumps(trace_to_json(report), indent=2))
        elif markdown:
            from mpsgen.render.trace_text import trace_markdown

            click.echo(trace_markdown(report), nl=False)
        else:
            from mpsgen.render.mode import RICH, resolve

            if resolve(fmt, sys.stdout) == RICH:
                from mpsgen.render.trace_table import render_trace

                render_trace(report)
            else:
                from mpsgen.render.trace_text import trace_lines

                click.echo("\n".join(trace_lines(report)))
        return 1 if script and (run_.exception or run_.exit_status) else 0

    sys.exit(run_guarded(state, run))


@main.command("bench", epilog=_examples(
    "mpsgen bench hypot --device cpu --shapes 256x256,4x8 --json before.json",
    "mpsgen bench softplus --device cpu --dtypes float32 --repeat 5",
    "mpsgen bench --compare before.json after.json --markdown",
))
@click.argument("op", required=False, shell_complete=_complete_ops)
@click.option("--compare", nargs=2, metavar="BEFORE AFTER", default=None,
              help="Compare two records written with --json (a build before the change, then after) instead of running.")
@click.option("--device", type=click.Choice(["mps", "cpu"]), default="mps", show_default=True,
              help="Where the op runs: mps (a Mac), or cpu (the same harness on torch's CPU kernels).")
@click.option("--shapes", default=None, metavar="SHAPES",
              help="Comma-separated shapes, sizes joined by x, each timed in every layout (default: 1024x1024,4x8).")
@click.option("--dtypes", default=None, metavar="DTYPES",
              help="Comma-separated torch dtypes or dtype groups (default: the dtypes the op's kernel registers).")
@click.option("--repeat", type=click.IntRange(min=1), default=20, show_default=True,
              help="Timed calls per case (after 3 warm-up calls); the median is reported.")
@click.option("--json", "json_file", default=None, metavar="FILE", help="Also write the run's record to FILE (what --compare reads).")
@click.option("--markdown", is_flag=True, help="(--compare) Print the table in GitHub Markdown, to paste into a PR.")
@_format_option("rich", "plain")
@click.pass_obj
def bench(state, op, compare, device, shapes, dtypes, repeat, json_file, markdown, fmt):
    """Time OP through the installed torch on every dtype its kernel registers and the layouts Metal
    kernels break or slow on (contiguous, strided, broadcast, a scalar operand, a small shape), with
    the effective bandwidth and the memory growth over a varying-shape sweep; or, with --compare,
    print the before/after table a migration PR carries. See docs/bench.md.

    Needs torch (pip install 'mpsgen[trace]'). Exit codes: 0 done, 2 bad usage or input (no MPS
    device with --device mps)."""

    def run():
        from mpsgen.errors import MpsgenError

        if (op is None) == (compare is None):
            raise MpsgenError("name an OP to time, or pass --compare BEFORE AFTER" if op is None else
                              "--compare reads two records; it takes no OP", hint="e.g. `mpsgen bench hypot --device cpu`")
        if compare is not None:
            if json_file or shapes or dtypes:
                raise MpsgenError("--json, --shapes and --dtypes belong to a run; --compare reads two records",
                                  hint="run `mpsgen bench OP --json FILE` on each build first")
            _one_format(False, fmt, "markdown" if markdown else None)
            from mpsgen.commands.bench.compare import compare_records
            from mpsgen.commands.bench.record import load_record

            cmp = compare_records(load_record(compare[0]), load_record(compare[1]), compare[0], compare[1])
            if markdown:
                from mpsgen.render.bench_text import compare_markdown

                click.echo(compare_markdown(cmp), nl=False)
            elif _rich(fmt):
                from mpsgen.render.bench_table import render_compare

                render_compare(cmp)
            else:
                from mpsgen.render.bench_text import compare_lines

                click.echo("\n".join(compare_lines(cmp)))
            return 0
        if markdown:
            raise MpsgenError("--markdown prints the --compare table", hint="run with --json FILE, then --compare")
        from mpsgen.commands.bench.harness import BenchOptions, bench_op
        from mpsgen.commands.bench.layouts import DEFAULT_SHAPES, parse_shapes
        from mpsgen.commands.bench.model import parse_dtypes
        from mpsgen.commands.bench.record import write_record

        options = BenchOptions(device=device, shapes=parse_shapes(shapes) if shapes else DEFAULT_SHAPES,
                               dtypes=parse_dtypes(dtypes) if dtypes else None, repeat=repeat)
        checkout = state.checkout()
        record = _with_progress(lambda progress: bench_op(checkout, op, options, progress), False)
        if json_file:
            write_record(record, json_file)
        if _rich(fmt):
            from mpsgen.render.bench_table import render_run

            render_run(record)
        else:
            from mpsgen.render.bench_text import run_lines

            click.echo("\n".join(run_lines(record)))
        return 0

    sys.exit(run_guarded(state, run))


def _rich(fmt: str) -> bool:
    from mpsgen.render.mode import RICH, resolve

    return resolve(fmt, sys.stdout) == RICH


def _with_progress(func, quiet):
    """Run `func(progress)` under a live progress display on stderr (when stderr is a terminal).
    The first progress report is the `working` stage of the test hook (`mpsgen._stage`)."""
    first = [True]

    def working() -> None:
        if first[0]:
            first[0] = False
            _stage("working")

    if quiet or not sys.stderr.isatty():
        return func(lambda *args: working())
    from rich.console import Console
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from mpsgen.render.mode import colour_allowed

    tasks = {}
    console = Console(stderr=True, color_system="auto" if colour_allowed() else None)
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), TextColumn("{task.fields[note]}"),
                  TimeElapsedColumn(), console=console, transient=True) as bar:

        def progress(stage, done, total, message):
            working()
            if stage not in tasks:
                tasks[stage] = bar.add_task(stage, total=total, note="")
            bar.update(tasks[stage], completed=done, total=total, note=message[:60])

        return func(progress)
