"""`mpsgen bench --compare BEFORE AFTER`: two records of one op side by side, row by row (layout,
shape, dim, dtype): the median times, the speedup (before / after), the effective bandwidth of each,
and the memory growth per new shape of the row's dtype in each. A row where the new kernel is slower
(after > before) is marked, never left out; a row only one record has is shown with the other side
empty."""

from __future__ import annotations

from dataclasses import dataclass

from mpsgen.commands.bench.record import Record, Row
from mpsgen.errors import MpsgenError


@dataclass(frozen=True)
class Compared:
    layout: str
    shape: tuple[int, ...]
    dim: int | None
    dtype: str
    before_us: float | None
    after_us: float | None
    before_gbps: float | None
    after_gbps: float | None
    before_growth: float | None  # bytes per new shape (the record's memory_key reading)
    after_growth: float | None
    note: str = ""

    @property
    def speedup(self) -> float | None:
        if not self.before_us or not self.after_us:
            return None
        return self.before_us / self.after_us

    @property
    def slower(self) -> bool:
        return self.speedup is not None and self.speedup < 1.0


@dataclass(frozen=True)
class Comparison:
    op: str
    before: Record
    after: Record
    rows: tuple[Compared, ...]
    notes: tuple[str, ...]

    @property
    def slower(self) -> tuple[Compared, ...]:
        return tuple(r for r in self.rows if r.slower)


def compare_records(before: Record, after: Record, before_name: str = "before", after_name: str = "after") -> Comparison:
    if before.op != after.op:
        raise MpsgenError(f"{before_name} times {before.op} and {after_name} {after.op}",
                          hint="compare two records of the same op")
    notes = []
    if before.device != after.device:
        notes.append(f"the records ran on different devices ({before_name}: {before.device}, {after_name}: {after.device})")
    if before.memory_key != after.memory_key:
        notes.append(f"memory growth is {before.memory_key or 'not measured'} before and {after.memory_key or 'not measured'} after")
    if before.scalars != after.scalars:
        notes.append(f"the scalars differ ({before_name}: {before.scalars}, {after_name}: {after.scalars})")
    old = {r.key: r for r in before.rows}
    new = {r.key: r for r in after.rows}
    keys = list(old) + [k for k in new if k not in old]
    rows = []
    for key in keys:
        b, a = old.get(key), new.get(key)
        dtype = key[3]
        note = "; ".join(n for n in (_side_note(before_name, b), _side_note(after_name, a)) if n)
        rows.append(Compared(key[0], key[1], key[2], dtype, b.median_us if b else None, a.median_us if a else None,
                             b.gbps if b else None, a.gbps if a else None, before.growth_of(dtype), after.growth_of(dtype),
                             note))
    return Comparison(before.op, before, after, tuple(rows), tuple(notes))


def _side_note(name: str, row: Row | None) -> str:
    if row is None:
        return f"not in {name}"
    return f"{name}: {row.note}" if row.note else ""
