"""A `ScanReport` as GitHub-flavoured Markdown tables (`mpsgen scan --markdown`), to paste into an
issue."""

from __future__ import annotations

from collections import Counter

from mpsgen.commands.scanreport import GRAPH_SITE, ScanReport
from mpsgen.render.scan_rows import candidate_rows, file_rows, summary_rows


def _md_table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    def cell(text: str) -> str:
        return text.replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return lines


def render_markdown(report: ScanReport, *, candidates: bool = False) -> str:
    """GitHub-flavoured Markdown: the candidates (with --candidates) or the summary, then the totals
    per backing and per host file."""
    tiers = Counter(r.candidate.tier for r in report.ops if r.candidate)
    out = [f"### MPS backing of {len(report.ops)} operators (`mpsgen scan`)", ""]
    if candidates:
        out += ["#### Candidates for `mpsgen migrate`, easiest first", ""]
        out += _md_table(("#", "op", "tier", "backing", "implementation", "lines", "graph sites", "stub", "xfails", "reason"), candidate_rows(report))
        out.append("")
    out += _md_table(("backing", "meaning", "ops", "graph sites in kernels"), summary_rows(report))
    reductions = f"{tiers['reduce']} reductions ready, " if tiers.get("reduce") else ""
    out += ["", f"Candidates: {tiers.get('ready', 0)} ready, {reductions}{tiers.get('expr', 0)} need `--expr`, {tiers.get('port', 0)} need a hand-written port.", ""]
    out += _md_table(("host file", "graph sites", "MPSGraph kernels", "other MPS kernels"), file_rows(report))
    out += ["", f"Graph sites (`{GRAPH_SITE}`) in `mps/operations/*.mm`: {report.graph_sites}."]
    for note in report.notes:
        out.append(f"\nNote: {note}")
    return "\n".join(out) + "\n"
