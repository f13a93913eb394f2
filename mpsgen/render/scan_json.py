"""A `ScanReport` as one JSON document (`mpsgen scan --json`): a record per op, the candidates in
order, totals per backing and per host file."""

from __future__ import annotations

from collections import Counter

from mpsgen.commands.scanreport import BACKINGS, TIERS, OpRecord, ScanReport
from mpsgen.model import Location


def location_text(location: Location | None) -> str | None:
    return str(location) if location else None


def op_to_json(record: OpRecord) -> dict:
    return {
        "op": record.op,
        "backing": record.backing,
        "yaml": location_text(record.location),
        "overloads": {name: backing for name, backing in record.overloads},
        "implementation": location_text(record.implementation),
        "graph_sites": record.graph_sites,
        "kernels": [
            {
                "kernel": k.kernel,
                "entry": k.entry,
                "dispatch": location_text(k.dispatch),
                "backing": k.backing,
                "implementation": location_text(k.implementation),
                "definition": k.definition,
                "lines": k.lines,
                "graph_sites": k.graph_sites,
                "graph_helpers": list(k.graph_helpers),
            }
            for k in record.kernels
        ],
        "stub": record.stub,
        "stub_signature": record.stub_signature,
        "stub_location": location_text(record.stub_location),
        "functor": record.functor,
        "metal_dtypes": list(record.metal_dtypes),
        "xfail_entries": record.xfail_entries,
        "xfail_keys": list(record.xfail_keys),
        "candidate": {"tier": record.candidate.tier, "reason": record.candidate.reason} if record.candidate else None,
    }


def report_to_json(report: ScanReport, root: str | None = None) -> dict:
    """One document: every op, the candidates in order, totals per backing and per host file.
    `root` replaces the checkout's absolute path (tests pass a fixed name)."""
    backing_totals = report.by_backing()
    sites = Counter()
    for record in report.ops:
        sites[record.backing] += record.graph_sites
    tiers = Counter(r.candidate.tier for r in report.ops if r.candidate)
    return {
        "root": report.root if root is None else root,
        "ops": [op_to_json(r) for r in report.ops],
        "candidates": [r.op for r in report.candidates()],
        "totals": {
            "ops": len(report.ops),
            "by_backing": {b: {"ops": backing_totals[b], "graph_sites": sites.get(b, 0)} for b in BACKINGS},
            "candidates": {t: tiers.get(t, 0) for t in TIERS},
            "graph_sites": report.graph_sites,
            "files": [
                {"path": f.path, "graph_sites": f.graph_sites, "mpsgraph_kernels": f.mpsgraph_kernels,
                 "other_kernels": f.other_kernels, "error": f.error}
                for f in report.files
            ],
        },
        "notes": list(report.notes),
    }
