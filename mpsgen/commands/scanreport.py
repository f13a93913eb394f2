"""What `mpsgen scan` reports: the records of every op, the host files' totals and the candidates,
as plain frozen data. Apart from the scan (`mpsgen.commands.scan`) so that a report kept in the user
cache (`mpsgen.commands.kept`) is loaded and rendered without importing what computes it."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from mpsgen.model import Location

BACKINGS = ("native", "mpsgraph", "mps-other", "mps-unknown", "composite", "none")
TIERS = ("ready", "reduce", "expr", "port")

GRAPH_SITE = "LookUpOrCreateCachedGraph"


# --------------------------------------------------------------------------------------------------
# Records
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MpsKernel:
    """One separate `MPS: kernel` dispatch line and what its definition is."""

    kernel: str
    entry: str  # the yaml entry, e.g. `atan2.out`
    dispatch: Location  # the `MPS: ...` line
    backing: str  # mpsgraph | mps-other | mps-unknown
    implementation: Location | None
    definition: str | None  # impl-func, function, or `macro-instance MACRO`
    lines: int  # the definition's length (0 when unknown)
    graph_sites: int  # LookUpOrCreateCachedGraph calls in the definition itself
    graph_helpers: tuple[str, ...]  # same-file helpers (or the generator macro) that build the graph


@dataclass(frozen=True)
class Candidate:
    tier: str  # ready | expr | port
    reason: str


@dataclass(frozen=True)
class OpRecord:
    op: str
    backing: str
    location: Location  # the op's first yaml entry
    overloads: tuple[tuple[str, str], ...]  # (entry name, backing) per entry
    kernels: tuple[MpsKernel, ...]
    stub: str | None
    stub_signature: str | None
    stub_location: Location | None
    functor: str | None  # the functor name the stub maps to (registered or not)
    metal_dtypes: tuple[str, ...]  # dtype groups registered for that functor in kernels/*.metal
    xfail_entries: int
    xfail_keys: tuple[str, ...]
    candidate: Candidate | None

    @property
    def implementation(self) -> Location | None:
        return next((k.implementation for k in self.kernels if k.implementation), None)

    @property
    def graph_sites(self) -> int:
        return sum(k.graph_sites for k in self.kernels)

    @property
    def legacy_lines(self) -> int:
        return sum(k.lines for k in self.kernels)


@dataclass(frozen=True)
class FileTotal:
    """One `mps/operations/*.mm` file: graph sites in it and the separate MPS kernels it defines."""

    path: str
    graph_sites: int
    mpsgraph_kernels: int
    other_kernels: int
    error: str | None = None


@dataclass(frozen=True)
class ScanReport:
    root: str
    ops: tuple[OpRecord, ...]
    files: tuple[FileTotal, ...]
    notes: tuple[str, ...] = ()
    tiers: tuple[str, ...] = TIERS  # the candidate tiers listed (`scan --tier`)

    def by_backing(self) -> dict[str, int]:
        counts = Counter(r.backing for r in self.ops)
        return {b: counts.get(b, 0) for b in BACKINGS}

    def candidates(self) -> tuple[OpRecord, ...]:
        """Ops `migrate` can take, easiest first."""
        chosen = [r for r in self.ops if r.candidate is not None and r.candidate.tier in self.tiers]
        return tuple(sorted(chosen, key=lambda r: (
            TIERS.index(r.candidate.tier), r.implementation is None, r.legacy_lines, r.graph_sites, r.op)))

    @property
    def graph_sites(self) -> int:
        return sum(f.graph_sites for f in self.files)
