"""A `ScanReport` as plain text for logs: the same tables as on a terminal, as aligned columns with
every cell whole (op names, full `path:line` of implementations, reasons)."""

from __future__ import annotations

from mpsgen.commands.scanreport import ScanReport
from mpsgen.render.scan_rows import candidate_rows, candidates_line, file_rows, summary_rows
from mpsgen.render.text import aligned, one_line

CANDIDATE_HEADER = ("#", "op", "tier", "backing", "implementation", "lines", "graph sites", "stub", "xfails", "reason")


def scan_lines(report: ScanReport, *, candidates: bool) -> list[str]:
    lines = []
    if candidates:
        lines.append("Candidates for mpsgen migrate, easiest first")
        lines += aligned(CANDIDATE_HEADER, candidate_rows(report), right=(0, 5, 6, 8))
        lines.append("")
    lines.append(f"MPS backing of {len(report.ops)} operators")
    lines += aligned(("backing", "meaning", "ops", "graph sites in kernels"), summary_rows(report), right=(2, 3))
    lines.append(candidates_line(report, listed=candidates))
    lines.append("")
    lines.append(f"Graph sites per host file ({report.graph_sites} in all)")
    lines += aligned(("host file", "graph sites", "MPSGraph kernels", "other MPS kernels"), file_rows(report), right=(1, 2, 3))
    lines += [one_line(f"note: {note}") for note in report.notes]
    return lines
