"""The command line. Thin: parse options, call one library function, render its result.

Library modules are imported inside the commands so that `mpsgen --help` stays fast."""

from __future__ import annotations

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
        click.option("--drop-undefined", is_flag=True,
                     help="Also drop the op's UNDEFINED_XFAILLIST / precision / random entries in common_mps.py (reported otherwise)."),
        click.option("--dry-run", is_flag=True, help="Print the unified diff of every change; write nothing."),
        click.option("--json", "as_json", is_flag=True, help="Print one JSON document instead of the human report."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _options(expr, dtypes, stub, overloads, kernel_file, host_file, drop_undefined=False):
    from mpsgen.dtypes import parse_groups
    from mpsgen.resolve import Options

    return Options(
        expr=expr,
        dtypes=parse_groups(dtypes) if dtypes is not None else None,
        stub=stub,
        overloads=tuple(overloads),
        kernel_file=kernel_file,
        host_file=host_file,
        drop_undefined=drop_undefined,
    )


@main.command("new-op")
@click.argument("op")
@_kernel_options
@click.pass_obj
def new_op(state, op, expr, dtypes, stub, overloads, kernel_file, host_file, drop_undefined, dry_run, as_json):
    """Give OP (CPU/CUDA kernels through a shared stub) a native Metal MPS kernel."""

    def run():
        from mpsgen.newop import plan_new_op

        plan = plan_new_op(state.checkout(), op, _options(expr, dtypes, stub, overloads, kernel_file, host_file, drop_undefined))
        return _finish(plan, "new-op", dry_run, as_json)

    sys.exit(run_guarded(state, run))


@main.command("migrate")
@click.argument("ops", nargs=-1, required=True)
@_kernel_options
@click.pass_obj
def migrate(state, ops, expr, dtypes, stub, overloads, kernel_file, host_file, drop_undefined, dry_run, as_json):
    """Move OPS from MPSGraph onto native Metal kernels (several ops: one transaction)."""

    def run():
        from mpsgen.migrate import plan_migrate

        if len(ops) > 1 and (expr or stub or kernel_file or host_file):
            from mpsgen.errors import MpsgenError

            raise MpsgenError("--expr, --stub, --kernel-file and --host-file apply to one op", hint="migrate such ops one at a time")
        plan = plan_migrate(state.checkout(), tuple(ops), _options(expr, dtypes, stub, overloads, kernel_file, host_file, drop_undefined))
        return _finish(plan, "migrate", dry_run, as_json)

    sys.exit(run_guarded(state, run))


def _finish(plan, command, dry_run, as_json) -> int:
    from mpsgen.apply import apply_plan, plan_to_json, render_diff

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


@main.command("scan")
@click.option("--candidates", is_flag=True, help="List the ops `migrate` can take, easiest first, with the reason.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document: one record per op, candidates, totals.")
@click.option("--markdown", is_flag=True, help="Print GitHub Markdown tables (to paste into an issue).")
@click.pass_obj
def scan(state, candidates, as_json, markdown):
    """Report every operator's MPS backing (native Metal, MPSGraph, other, composite, none) and what to migrate next."""

    def run():
        from mpsgen.errors import MpsgenError
        from mpsgen.scan import render_markdown, report_to_json, scan_checkout

        if as_json and markdown:
            raise MpsgenError("--json and --markdown are two output formats", hint="pick one")
        report = scan_checkout(state.checkout())
        if as_json:
            click.echo(json.dumps(report_to_json(report), indent=2))
        elif markdown:
            click.echo(render_markdown(report, candidates=candidates), nl=False)
        else:
            _render_scan(report, candidates)
        return 0

    sys.exit(run_guarded(state, run))


def _render_scan(report, candidates: bool) -> None:
    from rich.console import Console
    from rich.table import Table

    from mpsgen.scan import candidate_rows, file_rows, summary_rows

    console = Console(highlight=False)
    if candidates:
        table = Table(title="Candidates for mpsgen migrate, easiest first", title_justify="left")
        for column in ("#", "op", "tier", "backing", "implementation", "lines", "graph", "xfails", "reason"):
            numeric = column in ("#", "lines", "graph", "xfails")
            table.add_column(column, justify="right" if numeric else "left", no_wrap=column != "reason")
        for rank, op, tier, backing, where, lines, graph, _stub, xfails, reason in candidate_rows(report):
            table.add_row(rank, op, tier, backing, where.rsplit("/", 1)[-1], lines, graph, xfails, reason)
        console.print(table)
    table = Table(title=f"MPS backing of {len(report.ops)} operators", title_justify="left")
    for column in ("backing", "meaning", "ops", "graph sites in kernels"):
        table.add_column(column, justify="left" if column in ("backing", "meaning") else "right")
    for row in summary_rows(report):
        table.add_row(*row)
    console.print(table)
    tiers = {t: sum(1 for r in report.ops if r.candidate and r.candidate.tier == t) for t in ("ready", "expr", "port")}
    console.print(f"candidates: {tiers['ready']} ready, {tiers['expr']} need --expr, {tiers['port']} need a hand-written port"
                  + ("" if candidates else " (mpsgen scan --candidates lists them)"))
    table = Table(title=f"Graph sites per host file ({report.graph_sites} in all)", title_justify="left")
    for column in ("host file", "graph sites", "MPSGraph kernels", "other MPS kernels"):
        table.add_column(column, justify="left" if column == "host file" else "right")
    for row in file_rows(report):
        table.add_row(*row)
    console.print(table)
    for note in report.notes:
        console.print(f"note: {note}", style="yellow", markup=False)
