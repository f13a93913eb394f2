"""`mpsgen try`'s report as plain lines for logs: what ran, the per-dtype table aligned with nothing
cut, each mismatch on one line with its inputs, and a one-line summary."""

from __future__ import annotations

from mpsgen.commands.tryop.coverage import untaken_lines
from mpsgen.render.text import aligned, one_line


def nearer_summary(report) -> str:
    """" (N cases nearer the op in float64 than CPU)" where the rule for CPU rounding an intermediate matched some."""
    count = sum(len(r.nearer_float64) for r in report.results)
    return f" ({count} case{'s' if count != 1 else ''} nearer the op in float64 than CPU: see the notes)" if count else ""


def coverage_lines(report) -> list[str]:
    """The functor's branch coverage: `branches: N of M taken ...`, each untaken branch on a line of
    its own, and what an untaken branch means for the exit code."""
    c = report.coverage
    if c is None:
        return [f"branches: not measured ({report.coverage_why})"] if report.coverage_why else []
    if c.total == 0:
        return [f"branches: none in {report.ran} ({c.where})"]
    lines = [f"branches: {c.summary} in {report.ran} ({c.where})"]
    lines += [f"untaken branch: {line}" for line in untaken_lines(c)]
    if c.untaken:
        lines.append("error: --strict: an untaken branch fails" if report.strict else
                     "warning: try's values never take these branches, so it judged the body without them "
                     "(--strict makes this exit 1)")
    return lines


def try_lines(report) -> list[str]:
    where = "on MPS" if report.backend == "mps" else "on the host"
    lines = [one_line(f"ran {report.ran} ({report.location}) {where}: {report.backend_detail}")]
    lines += [one_line(f"not run: {note}") for note in report.not_run]
    reference = f"reference: {report.reference}" + (f" ({report.reference_note})" if report.reference_note else "")
    lines.append(one_line(reference))
    rows = []
    scalars = bool(report.scalar_sets)
    for r in report.results:
        tolerance = "exact" if r.tolerance is None else f"{r.tolerance[0]:g}/{r.tolerance[1]:g}"
        row = (r.dtype, f"{r.metal_type} -> {r.out_type or '-'}", str(r.cases), f"{r.max_abs:.3g}", f"{r.max_rel:.3g}",
               tolerance, str(r.mismatches), r.status)
        rows.append(((r.scalars,) if scalars else ()) + row)
    lines.append(f"mpsgen try {report.op} (seed {report.seed})")
    header = ("dtype", "in -> out", "cases", "max abs", "max rel", "rtol/atol", "bad", "status")
    right = (2, 3, 4, 6)
    if scalars:
        header, right = ("scalars",) + header, tuple(k + 1 for k in right)
    lines += aligned(header, rows, right=right)
    notes = set()
    for r in report.results:
        where = f"{r.dtype} [{r.scalars}]" if r.scalars else r.dtype
        if r.note and (r.dtype, r.note) not in notes:
            notes.add((r.dtype, r.note))
            lines.append(one_line(f"{where}: {r.note}"))
        for m in r.examples:
            args = ", ".join(repr(v) for v in m.inputs)
            lines.append(one_line(f"mismatch {where}: {report.op}({args}) = {m.got!r}, reference {m.want!r}"))
    lines += [one_line(line) for line in coverage_lines(report)]
    failed = [r.dtype + (f" [{r.scalars}]" if r.scalars else "") for r in report.results if r.status == "failed"]
    compared = any(r.status == "passed" for r in report.results)
    lines.append(f"{len(report.results)} dtype(s): " + (f"mismatches in {', '.join(failed)}" if failed else
                                                        "all match" + nearer_summary(report) if compared else "nothing compared (every one skipped)"))
    return lines
