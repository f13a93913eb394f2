"""What a body source offers for an elementwise functor: one Metal expression with its provenance,
or the reason it has none. The body resolver (`--body {auto,catalog,c10,cpu,graph}`) tries its sources
in a declared order and keeps every answer for the report; each source returns one of these."""

from __future__ import annotations

from dataclasses import dataclass

from mpsgen.model import Location


@dataclass(frozen=True)
class BodyOffer:
    """A body a source derived: `expr` is one Metal expression over the functor's operands (`x`, or
    `a`, `b`[, `c`]) and a params struct's fields, as `--expr` takes it."""

    source: str  # "expr", "catalog", "c10", "cpu", "graph"
    expr: str
    location: Location | None  # where the checkout states it (path:line)
    describe: str  # e.g. "atan2's CPU kernel"
    output: str = ""  # the Metal output type of every registration ("": as the dtype group says; "bool")
    supports: tuple[str, ...] = ()  # dtype groups the source covers (its AT_DISPATCH list, the graph's casts)
    helpers: tuple[str, ...] = ()  # Metal helper definitions the expression calls, written before the functor
    # the expression reads its operands only as truth values (`a && b`): a complex operand is read as
    # c10::complex's truth value (either part nonzero), so the complex group takes the same expression
    truth: bool = False
    # a params op's optional fields: field -> the host's C++ value when unset (the CPU kernel's own)
    defaults: tuple[tuple[str, str], ...] = ()
    # the integer group's own expression where the source states one apart (a CPU kernel's
    # integral-types lambda beside its floating one: fmod's `x % d`); "" when `expr` serves it
    integer_expr: str = ""


@dataclass(frozen=True)
class NoBody:
    """A source's reason for offering no body (quoted above a placeholder's `#error`)."""

    source: str
    reason: str
    location: Location | None = None
