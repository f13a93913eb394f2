"""A recording read against a checkout: per overload called, its MPS backing, calls, distinct input
signatures (for an MPSGraph op, one cached graph each) and dtypes, and whether `migrate` can take
its op now.

Names: an ATen overload `aten::NAME.OVERLOAD` is the yaml entry `NAME.OVERLOAD` (`default` is the
entry without a dot): `aten::mish.default` -> `mish`, `aten::add_.Tensor` -> `add_.Tensor`,
`aten::mish.out` -> `mish.out`; its op is the entry's base name, as `scan` and `migrate` name ops
(`mish`, `add`). Backing is the entry's, exactly as `scan` reports it per overload (an entry with
`structured_delegate` takes the backing of the entry it delegates to); an overload the checkout's
yaml does not have (another version of PyTorch, or another namespace: `prims::`, custom ops) is
`absent`. The tier and reason are the op's candidate from `scan` (the same resolver), given for
rows whose backing is a separate MPS kernel (mpsgraph, mps-other, mps-unknown).

Graph-cache entries are counted per overload: the in-place and `out=` forms of a structured op run
the same MPS kernel, so their counts may name the same cached graph twice."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from mpsgen.commands.scan import BACKINGS, TIERS, ScanReport
from mpsgen.commands.trace.recorder import Recording, ScriptRun
from mpsgen.read.nfyaml import base_name

ABSENT = "absent"
TRACE_BACKINGS = (*BACKINGS, ABSENT)
_SEPARATE = ("mpsgraph", "mps-other", "mps-unknown")


@dataclass(frozen=True)
class TraceRow:
    op: str
    overload: str  # as recorded: `aten::mish.default`
    entry: str | None  # the yaml entry (`mish`), None when absent
    backing: str
    calls: int
    distinct_shapes: int
    dtypes: tuple[str, ...]
    candidate: str | None  # ready | expr | port
    reason: str | None

    @property
    def graph_entries(self) -> int:
        """Graphs this overload adds to the MPSGraph cache: one per distinct signature."""
        return self.distinct_shapes if self.backing == "mpsgraph" else 0


@dataclass(frozen=True)
class TraceReport:
    script: ScriptRun
    torch_version: str
    rows: tuple[TraceRow, ...]  # most graph-cache entries first, then most calls
    devices: tuple[str, ...]

    @property
    def calls(self) -> int:
        return sum(r.calls for r in self.rows)

    def graph_rows(self) -> tuple[TraceRow, ...]:
        return tuple(r for r in self.rows if r.backing == "mpsgraph")

    def graph_ops(self, tier: str | None = None) -> tuple[str, ...]:
        """MPSGraph ops that ran (with `tier`: only those of that candidate tier), most graphs first."""
        seen: dict[str, None] = {}
        for r in self.graph_rows():
            if tier is None or r.candidate == tier:
                seen.setdefault(r.op)
        return tuple(seen)

    def graph_entries(self, ops: tuple[str, ...] | None = None) -> int:
        return sum(r.graph_entries for r in self.graph_rows() if ops is None or r.op in ops)

    def calls_by_backing(self) -> dict[str, int]:
        counts = Counter()
        for r in self.rows:
            counts[r.backing] += r.calls
        return {b: counts.get(b, 0) for b in TRACE_BACKINGS}

    def tiers(self) -> dict[str, tuple[str, ...]]:
        return {t: self.graph_ops(t) for t in TIERS}


def entry_of(overload: str) -> tuple[str, str] | None:
    """(yaml entry name, op) of an `aten::` overload; None for another namespace."""
    namespace, _, name = overload.partition("::")
    if namespace != "aten" or not name:
        return None
    packet, _, suffix = name.partition(".")
    entry = packet if suffix in ("", "default") else f"{packet}.{suffix}"
    return entry, base_name(entry)


def analyse(recording: Recording, scan: ScanReport) -> TraceReport:
    by_entry = {}
    for record in scan.ops:
        for name, backing in record.overloads:
            by_entry[name] = (record, backing)
    grouped: dict[str, list] = {}
    for call in recording.calls:
        grouped.setdefault(call.overload, []).append(call)
    rows = []
    devices: set[str] = set()
    for overload, calls in grouped.items():
        for call in calls:
            devices.update(call.devices)
        named = entry_of(overload)
        found = by_entry.get(named[0]) if named else None
        if found is None:
            entry, op, backing, candidate = None, named[1] if named else overload.partition(".")[0], ABSENT, None
        else:
            record, backing = found
            entry, op = named[0], record.op
            candidate = record.candidate if backing in _SEPARATE else None
        rows.append(TraceRow(
            op=op,
            overload=overload,
            entry=entry,
            backing=backing,
            calls=sum(c.count for c in calls),
            distinct_shapes=len({c.signature for c in calls}),
            dtypes=tuple(sorted({dtype for c in calls for _, dtype in c.signature})),
            candidate=candidate.tier if candidate else None,
            reason=candidate.reason if candidate else None,
        ))
    rows.sort(key=lambda r: (-r.graph_entries, -r.calls, r.overload))
    return TraceReport(recording.script, recording.torch_version, tuple(rows), tuple(sorted(devices)))


def migrate_command(report: TraceReport) -> str | None:
    ready = report.graph_ops("ready") + report.graph_ops("reduce")
    return f"mpsgen migrate {' '.join(ready)}" if ready else None


def last_line(report: TraceReport) -> str:
    """How many of the MPSGraph ops that ran mpsgen can migrate now, with the command."""
    graph = report.graph_ops()
    if not graph:
        return "No MPSGraph-backed op ran: nothing here for mpsgen migrate."
    tiers = report.tiers()
    ready = tiers["ready"] + tiers["reduce"]
    text = (f"mpsgen can migrate {len(ready)} of the {len(graph)} MPSGraph ops now "
            f"({report.graph_entries(ready)} of {report.graph_entries()} cached graphs)")
    text += f": {migrate_command(report)}" if ready else ""
    extra = []
    if tiers["expr"]:
        extra.append(f"{len(tiers['expr'])} more with --expr ({', '.join(tiers['expr'])})")
    if tiers["port"]:
        extra.append(f"{len(tiers['port'])} need a hand-written port ({', '.join(tiers['port'])})")
    return text + ("; " + "; ".join(extra) if extra else "")
