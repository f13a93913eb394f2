"""The rows of scan's tables, shared by the terminal, plain-text and Markdown renderers."""

from __future__ import annotations

from collections import Counter

from mpsgen.commands.scanreport import BACKINGS, TIERS, ScanReport
from mpsgen.render.scan_json import location_text

BACKING_MEANINGS = {
    "native": "native Metal through a shared stub/kernel",
    "mpsgraph": "separate MPS kernel built on MPSGraph",
    "mps-other": "separate MPS kernel without MPSGraph",
    "mps-unknown": "separate MPS kernel, definition not found",
    "composite": "composite kernel: nothing to write",
    "none": "no MPS kernel (CPU fallback / unsupported)",
}


def candidate_rows(report: ScanReport) -> list[tuple[str, ...]]:
    """(rank, op, tier, backing, implementation, lines, graph sites, stub signature, xfails, reason)."""
    rows = []
    for rank, r in enumerate(report.candidates(), start=1):
        rows.append((
            str(rank), r.op, r.candidate.tier, r.backing, location_text(r.implementation) or "-", str(r.legacy_lines),
            str(r.graph_sites), f"{r.stub} {r.stub_signature}" if r.stub else "-", str(r.xfail_entries),
            r.candidate.reason,
        ))
    return rows


def summary_rows(report: ScanReport) -> list[tuple[str, str, str, str]]:
    """(backing, meaning, ops, graph sites in the definitions of their kernels)."""
    counts = report.by_backing()
    sites = Counter()
    for r in report.ops:
        sites[r.backing] += r.graph_sites
    return [(b, BACKING_MEANINGS[b], str(counts[b]), str(sites.get(b, 0))) for b in BACKINGS]


def file_rows(report: ScanReport) -> list[tuple[str, str, str, str]]:
    """(host file, graph sites, MPSGraph kernels, other MPS kernels), files with anything first."""
    files = sorted(report.files, key=lambda f: (-f.graph_sites, f.path))
    return [
        (f.path.rsplit("/", 1)[-1] + (" (not scanned)" if f.error else ""), str(f.graph_sites), str(f.mpsgraph_kernels), str(f.other_kernels))
        for f in files
        if f.graph_sites or f.mpsgraph_kernels or f.other_kernels or f.error
    ]


def candidates_line(report: ScanReport, *, listed: bool) -> str:
    """`candidates: N ready, N need --expr, N need a hand-written port`, pointing at --candidates
    when the list was not shown."""
    tiers = Counter(r.candidate.tier for r in report.ops if r.candidate)
    ready, reduce, expr, port = (tiers.get(t, 0) for t in TIERS)
    reductions = f"{reduce} reductions ready, " if reduce else ""
    return (f"candidates: {ready} ready, {reductions}{expr} need --expr, {port} need a hand-written port"
            + ("" if listed else " (mpsgen scan --candidates lists them)"))
