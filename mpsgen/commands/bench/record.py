"""A bench run as plain data, and its JSON record (`--json FILE`, read back by `--compare`).

The record (`SCHEMA`, pinned by tests/test_bench.py):

    {"schema": "mpsgen-bench/1", "op", "device", "torch", "platform", "call", "scalars": {name: value},
     "scalars_from", "dtypes_from", "dim", "mps", "warmup", "repeat", "memory_measure", "notes": [...],
     "rows": [{"layout", "shape": [..], "dim", "dtype", "out_dtype", "median_us", "min_us", "repeats",
               "bytes", "gbps", "note"}],
     "memory": [{"dtype", "shapes": [[..]], "readings": {name: [bytes per shape]},
                 "growth": {name: bytes per new shape}, "note"}]}

A row that did not run (torch refused the dtype) has `median_us` null and says why in `note`.
`memory_measure` says what the memory readings are (`device`: the MPS driver's allocated memory;
`rss`: the process's resident set), `growth` is (last reading - first) / (shapes - 1)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from mpsgen.errors import MpsgenError

SCHEMA = "mpsgen-bench/1"


@dataclass(frozen=True)
class Row:
    layout: str
    shape: tuple[int, ...]
    dim: int | None
    dtype: str
    out_dtype: str = ""
    median_us: float | None = None
    min_us: float | None = None
    repeats: int = 0
    bytes: int = 0
    note: str = ""

    @property
    def key(self) -> tuple:
        return (self.layout, self.shape, self.dim, self.dtype)

    @property
    def gbps(self) -> float | None:
        """Effective bandwidth, GB/s (10^9 bytes): bytes read + written over the median time."""
        if not self.median_us or not self.bytes:
            return None
        return self.bytes / (self.median_us * 1e-6) / 1e9


@dataclass(frozen=True)
class Memory:
    dtype: str
    shapes: tuple[tuple[int, ...], ...]
    readings: dict  # name -> tuple of bytes, one per shape of the sweep
    note: str = ""

    @property
    def growth(self) -> dict:
        """name -> bytes per new shape: (last reading - first) / (shapes - 1); None with fewer than two."""
        return {name: growth(values) for name, values in self.readings.items()}


def growth(values) -> float | None:
    values = [v for v in values if v is not None]
    if len(values) < 2:
        return None
    return (values[-1] - values[0]) / (len(values) - 1)


@dataclass(frozen=True)
class Record:
    op: str
    device: str
    torch: str
    platform: str
    call: str  # what ran: `torch 2.13.0: aten::hypot`
    scalars: dict  # schema argument -> value passed
    scalars_from: str
    dtypes_from: str
    dim: str
    mps: str  # how the checkout serves the op on MPS
    warmup: int
    repeat: int
    memory_measure: dict  # reading name -> what it measures
    rows: tuple[Row, ...] = ()
    memory: tuple[Memory, ...] = ()
    notes: tuple[str, ...] = field(default=())

    @property
    def memory_key(self) -> str | None:
        """The reading a comparison shows: the device's on MPS, else the first one measured."""
        if "device" in self.memory_measure:
            return "device"
        return next(iter(self.memory_measure), None)

    def growth_of(self, dtype: str) -> float | None:
        key = self.memory_key
        for m in self.memory:
            if m.dtype == dtype and key is not None:
                return m.growth.get(key)
        return None


def _number(x, digits: int = 3):
    return None if x is None else round(x, digits)


def record_to_json(record: Record) -> dict:
    return {
        "schema": SCHEMA,
        "op": record.op,
        "device": record.device,
        "torch": record.torch,
        "platform": record.platform,
        "call": record.call,
        "scalars": dict(record.scalars),
        "scalars_from": record.scalars_from,
        "dtypes_from": record.dtypes_from,
        "dim": record.dim,
        "mps": record.mps,
        "warmup": record.warmup,
        "repeat": record.repeat,
        "memory_measure": dict(record.memory_measure),
        "notes": list(record.notes),
        "rows": [{"layout": r.layout, "shape": list(r.shape), "dim": r.dim, "dtype": r.dtype, "out_dtype": r.out_dtype,
                  "median_us": _number(r.median_us), "min_us": _number(r.min_us), "repeats": r.repeats,
                  "bytes": r.bytes, "gbps": _number(r.gbps), "note": r.note} for r in record.rows],
        "memory": [{"dtype": m.dtype, "shapes": [list(s) for s in m.shapes],
                    "readings": {k: list(v) for k, v in m.readings.items()},
                    "growth": {k: _number(v, 1) for k, v in m.growth.items()}, "note": m.note} for m in record.memory],
    }


def write_record(record: Record, path: str) -> None:
    try:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(json.dumps(record_to_json(record), indent=2) + "\n")
    except OSError as exc:
        raise MpsgenError(f"--json {path}: {exc.strerror}", hint="pick a writable path") from None


def load_record(path: str) -> Record:
    """The record in `path`; one line naming the file and what is wrong with it (exit 2)."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as exc:
        raise MpsgenError(f"{path}: {exc.strerror}", hint="name a record written by `mpsgen bench OP --json FILE`") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise MpsgenError(f"{path}:{exc.lineno}: not JSON ({exc.msg})",
                          hint="name a record written by `mpsgen bench OP --json FILE`") from None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        found = doc.get("schema") if isinstance(doc, dict) else None
        raise MpsgenError(f"{path}: not a bench record (schema {found!r}, expected {SCHEMA!r})",
                          hint="name a record written by `mpsgen bench OP --json FILE`")
    try:
        rows = tuple(Row(r["layout"], tuple(r["shape"]), r["dim"], r["dtype"], r["out_dtype"], r["median_us"],
                         r["min_us"], r["repeats"], r["bytes"], r["note"]) for r in doc["rows"])
        memory = tuple(Memory(m["dtype"], tuple(tuple(s) for s in m["shapes"]),
                              {k: tuple(v) for k, v in m["readings"].items()}, m["note"]) for m in doc["memory"])
        return Record(doc["op"], doc["device"], doc["torch"], doc["platform"], doc["call"], dict(doc["scalars"]),
                      doc["scalars_from"], doc["dtypes_from"], doc["dim"], doc["mps"], doc["warmup"], doc["repeat"],
                      dict(doc["memory_measure"]), rows, memory, tuple(doc["notes"]))
    except (KeyError, TypeError, AttributeError) as exc:
        raise MpsgenError(f"{path}: a bench record without {exc}", hint="write it again with `mpsgen bench OP --json FILE`") from None
