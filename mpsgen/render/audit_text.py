"""`mpsgen audit`'s report: plain lines (a terminal, a log) and GitHub Markdown (`--markdown`, an
issue-ready report). Findings grouped by kind, each with its cases and reproducer."""

from __future__ import annotations

from mpsgen.commands.audit import KIND_LABELS, KINDS
from mpsgen.render.text import one_line

_SHOWN_CASES = 3


def _value(v) -> str:
    return repr(v)


def _case(op: str, case) -> str:
    args = ", ".join(_value(v) for v in case.inputs)
    return f"{op}({args}): MPS kernel {_value(case.got)}, CPU {_value(case.want)}"


def _unclassified(f) -> str:
    return (f"{f.dtype} has {f.unclassified} more mismatching case(s) than try keeps as examples: "
            f"not classified here (mpsgen try {f.op} lists them)")


def _where(f) -> str:
    return f.dtype + (f" [{f.scalars}]" if f.scalars else "")


def _clean(report) -> list[str]:
    """The ops that ran and disagreed with CPU nowhere."""
    return [o.op for o in report.ops if o.status not in ("findings", "not-run")]


def _summary(report) -> str:
    ran = [o for o in report.ops if o.status != "not-run"]
    with_findings = [o for o in report.ops if o.status == "findings"]
    kinds = ", ".join(f"{kind} {n}" for kind, n in report.by_kind().items())
    return (f"{len(ran)} ops run, {len(report.ops) - len(ran)} not run, {len(with_findings)} with findings "
            f"({len(report.findings)} findings{': ' + kinds if kinds else ''}) in {report.seconds:.1f} s "
            f"on {report.jobs} process{'es' if report.jobs != 1 else ''}")


def audit_lines(report) -> list[str]:
    lines = []
    for kind in KINDS:
        found = [f for f in report.findings if f.kind == kind]
        if not found:
            continue
        lines.append(f"== {kind}: {KIND_LABELS[kind]} ({len(found)})")
        for f in found:
            lines.append(one_line(f"{f.op} {_where(f)} ({f.functor}, {f.location}): {f.count} case(s)"))
            for case in f.cases[:_SHOWN_CASES]:
                lines.append(one_line(f"  {_case(f.op, case)}"))
            if f.unclassified:
                lines.append(f"  {_unclassified(f)}")
            if f.uncertain:
                lines.append(one_line(f"  not certain on a Mac: {f.uncertain}"))
            if f.reproducer:
                lines.append(f"  reproduce: {f.reproducer}")
    not_run = [o for o in report.ops if o.status == "not-run"]
    for o in not_run:
        lines.append(one_line(f"not run: {o.op}: {o.reason}"))
    for op, why in report.skipped:
        lines.append(one_line(f"not audited: {op}: {why}"))
    if _clean(report):
        lines.append(one_line(f"no finding: {', '.join(_clean(report))}"))
    lines.append(_summary(report))
    return lines


def audit_markdown(report) -> str:
    out = ["## mpsgen audit: MPS kernels that disagree with CPU", "",
           "Each finding below is a functor of the checkout run on try's edge values and samples and compared with "
           "torch's CPU op; the reproducer runs the same case on MPS and on CPU.", ""]
    by_kind = report.by_kind()  # every kind, a clean run's zeros included
    out += ["| kind | findings |", "|---|---|"]
    out += [f"| {KIND_LABELS[k]} | {by_kind.get(k, 0)} |" for k in KINDS]
    out.append("")
    for kind in KINDS:
        found = [f for f in report.findings if f.kind == kind]
        if not found:
            continue
        out += [f"### {KIND_LABELS[kind]}", ""]
        for f in found:
            out.append(f"#### `{f.op}` {_where(f)}: `{f.functor}` ({f.location})")
            out.append("")
            out += ["| inputs | MPS kernel | CPU |", "|---|---|---|"]
            for case in f.cases[:_SHOWN_CASES]:
                out.append(f"| {', '.join(_value(v) for v in case.inputs)} | {_value(case.got)} | {_value(case.want)} |")
            out.append("")
            if f.unclassified:
                text = _unclassified(f)
                out += [text[0].upper() + text[1:] + ".", ""]
            if f.uncertain:
                out += [f"Not certain on a Mac: {f.uncertain}.", ""]
            if f.reproducer:
                out += ["```python", f.reproducer, "```", ""]
    not_run = [o for o in report.ops if o.status == "not-run"]
    if not_run:
        out += ["<details><summary>not run</summary>", ""]
        out += [f"- `{o.op}`: {one_line(o.reason)}" for o in not_run]
        out += ["", "</details>", ""]
    if _clean(report):
        out += [f"No finding: {', '.join(f'`{op}`' for op in _clean(report))}.", ""]
    out.append(_summary(report))
    return "\n".join(out) + "\n"
