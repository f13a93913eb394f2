"""The command line. Thin: parse options, call one library function, render its result.

Library modules are imported inside the commands so that `mpsgen --help` stays fast."""

from __future__ import annotations

import contextlib
import json
import sys

import click

EXIT_INTERNAL = 3


class _State:
    def __init__(self, checkout_dir, debug):
        self.checkout_dir = checkout_dir
        self.debug = debug

    def checkout(self):
        from mpsgen.checkout import Checkout

        return Checkout.find(self.checkout_dir)


def run_guarded(state: _State, func):
    """Run `func`; user errors become one line on stderr and their exit code, never a traceback
    (unless --debug)."""
    from mpsgen.errors import MpsgenError

    try:
        return func()
    except MpsgenError as exc:
        if state.debug:
            raise
        click.echo(f"mpsgen: error: {exc}", err=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        click.echo("mpsgen: interrupted; nothing was written", err=True)
        sys.exit(130)
    except Exception as exc:  # a bug: say so in one line, the traceback is behind --debug
        if state.debug:
            raise
        click.echo(f"mpsgen: internal error: {type(exc).__name__}: {exc} (run with --debug for the traceback)", err=True)
        sys.exit(EXIT_INTERNAL)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("-C", "checkout_dir", metavar="PATH", default=None,
              help="Run as if started in PATH (a PyTorch checkout). Default: search upward from the current directory.")
@click.option("--debug", is_flag=True, help="Show tracebacks instead of one-line errors.")
@click.version_option(package_name="mpsgen")
@click.pass_context
def main(ctx, checkout_dir, debug):
    """Add native Metal operators to a PyTorch checkout and migrate MPSGraph operators to Metal.

    Exit codes: 0 done, 1 a check failed, 2 bad usage or input, 3 internal error."""
    ctx.obj = _State(checkout_dir, debug)


def _kernel_options(func):
    options = [
        click.option("--expr", default=None, metavar="EXPR",
                     help="Functor body as one Metal expression over x (unary); a, b (binary); a, b, c (ternary); alpha when the stub takes a Scalar."),
        click.option("--dtypes", default=None, metavar="GROUPS",
                     help="Comma-separated dtype groups to register: float, int2float, integer, complex, bool. Default: the catalog's, else float."),
        click.option("--stub", default=None, metavar="NAME", help="Dispatch stub to register (default: resolved from the op's name)."),
        click.option("--overload", "overloads", multiple=True, metavar="NAME",
                     help="Only these overloads (e.g. Tensor_out) and the entries delegating to them. Repeatable."),
        click.option("--kernel-file", default=None, metavar="FILE", help="The .metal file for the functor (default: chosen by the stub's header)."),
        click.option("--host-file", default=None, metavar="FILE", help="The .mm host file for the kernel function (default: chosen by the stub's header)."),
        click.option("--dry-run", is_flag=True, help="Print the unified diff of every change; write nothing."),
        click.option("--json", "as_json", is_flag=True, help="Print one JSON document instead of the human report."),
        click.option("--require-clean", is_flag=True,
                     help="Refuse to run when a file the change touches has uncommitted changes (default: warn)."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _options(expr, dtypes, stub, overloads, kernel_file, host_file):
    from mpsgen.dtypes import parse_groups
    from mpsgen.resolve import Options

    return Options(
        expr=expr,
        dtypes=parse_groups(dtypes) if dtypes is not None else None,
        stub=stub,
        overloads=tuple(overloads),
        kernel_file=kernel_file,
        host_file=host_file,
    )


@main.command("new-op")
@click.argument("op")
@_kernel_options
@click.pass_obj
def new_op(state, op, expr, dtypes, stub, overloads, kernel_file, host_file, dry_run, as_json, require_clean):
    """Give OP (CPU/CUDA kernels through a shared stub) a native Metal MPS kernel."""

    def run():
        from mpsgen.newop import plan_new_op

        checkout = state.checkout()
        with _writing(checkout, dry_run):
            plan = plan_new_op(checkout, op, _options(expr, dtypes, stub, overloads, kernel_file, host_file))
            return _finish(plan, "new-op", dry_run, as_json, require_clean)

    sys.exit(run_guarded(state, run))


@main.command("migrate")
@click.argument("ops", nargs=-1, required=True)
@_kernel_options
@click.pass_obj
def migrate(state, ops, expr, dtypes, stub, overloads, kernel_file, host_file, dry_run, as_json, require_clean):
    """Move OPS from MPSGraph onto native Metal kernels (several ops: one transaction)."""

    def run():
        from mpsgen.migrate import plan_migrate

        if len(ops) > 1 and (expr or stub or kernel_file or host_file):
            from mpsgen.errors import MpsgenError

            raise MpsgenError("--expr, --stub, --kernel-file and --host-file apply to one op", hint="migrate such ops one at a time")
        checkout = state.checkout()
        with _writing(checkout, dry_run):
            plan = plan_migrate(checkout, tuple(ops), _options(expr, dtypes, stub, overloads, kernel_file, host_file))
            return _finish(plan, "migrate", dry_run, as_json, require_clean)

    sys.exit(run_guarded(state, run))


@contextlib.contextmanager
def _writing(checkout, dry_run):
    """Hold the checkout's lock from reading to writing, so that two runs never interleave; a dry
    run writes nothing and takes no lock."""
    if dry_run:
        yield
        return
    from mpsgen.lock import CheckoutLock

    with CheckoutLock(checkout.root) as lock:
        if lock.stale_removed is not None:
            click.echo(f"mpsgen: warning: took over the lock of a run that is gone ({lock.stale_removed.describe()})", err=True)
        yield


def _check_git(plan, require_clean) -> None:
    """Warn (or with --require-clean refuse) when a file the plan changes has uncommitted work."""
    from pathlib import Path

    from mpsgen.gitstate import uncommitted

    dirty = uncommitted(Path(plan.root), [edit.path for edit in plan.edits])
    if dirty and require_clean:
        from mpsgen.errors import MpsgenError

        more = f" (and {len(dirty) - 1} more)" if len(dirty) > 1 else ""
        raise MpsgenError(f"{dirty[0]}{more} has uncommitted changes and --require-clean was given",
                          hint="commit or stash them first, or run without --require-clean")
    for rel in dirty:
        click.echo(f"mpsgen: warning: {rel} has uncommitted changes; mpsgen's edits will mix with them "
                   "(commit or stash first to review them apart)", err=True)


def _finish(plan, command, dry_run, as_json, require_clean=False) -> int:
    from mpsgen.apply import apply_plan, plan_to_json, render_diff

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
        if sys.stdout.isatty():
            from rich.console import Console
            from rich.syntax import Syntax

            Console().print(Syntax(diff, "diff", theme="ansi_dark", background_color="default"))
        else:
            sys.stdout.write(diff)
            sys.stdout.flush()
    from mpsgen.report import render_summary

    render_summary(plan, command=command, dry_run=dry_run, to_stderr=dry_run)
    return 0
