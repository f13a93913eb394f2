"""`mpsgen bench` as plain lines and GitHub Markdown: a run's table (`run_lines`) and the before/after
table of `--compare` (`compare_lines`, `compare_markdown`, the table a migration PR carries). The cells
are made once here (`run_table`, `compare_table`); `render.bench_table` shows the same cells with rich."""

from __future__ import annotations

from mpsgen.commands.bench.compare import Compared, Comparison
from mpsgen.commands.bench.layouts import shape_text
from mpsgen.commands.bench.record import Record
from mpsgen.render.text import aligned

SLOWER = "slower"


def us(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x:.2f}" if x < 10 else f"{x:.1f}" if x < 1000 else f"{x:,.0f}"


def gbps(x: float | None) -> str:
    return "-" if x is None else f"{x:.3g}"


def per_shape(x: float | None) -> str:
    """Bytes per new shape, signed, in binary units."""
    if x is None:
        return "-"
    size, unit = abs(x), "B"
    for name in ("KiB", "MiB", "GiB"):
        if size < 1024:
            break
        size, unit = size / 1024, name
    sign = "+" if x > 0 else "-" if x < 0 else ""
    return f"{sign}{size:.0f} {unit}" if unit == "B" else f"{sign}{size:.1f} {unit}"


def speedup(row: Compared) -> str:
    s = row.speedup
    if s is None:
        return "-"
    if not row.slower:
        return f"{s:.2f}x"
    digits = 2
    while f"{s:.{digits}f}" == f"{1:.{digits}f}" and digits < 6:  # slower by less than 0.5%: never "1.00x slower"
        digits += 1
    return f"{s:.{digits}f}x {SLOWER}"


def _scalars(record: Record) -> str:
    return ", ".join(f"{k}={v}" for k, v in record.scalars.items())


def header_lines(record: Record) -> list[str]:
    lines = [f"mpsgen bench {record.op} on {record.device}: {record.call}, median of {record.repeat} after "
             f"{record.warmup} warm-up calls ({record.platform})"]
    lines.append(f"dtypes: {record.dtypes_from}")
    if record.scalars or record.scalars_from:
        lines.append(f"scalars: {_scalars(record) or '-'}" + (f" ({record.scalars_from})" if record.scalars_from else ""))
    if record.dim:
        lines.append(f"reduces: the schema's `{record.dim}`, innermost and outermost")
    lines += [f"note: {n}" for n in record.notes]
    return lines


def run_table(record: Record) -> tuple[list[str], list[list[str]]]:
    reduction = bool(record.dim)
    header = ["layout", "shape", *(["dim"] if reduction else []), "dtype", "out", "median µs", "min µs", "GB/s", "note"]
    rows = [[r.layout, shape_text(r.shape), *([str(r.dim)] if reduction else []), r.dtype, r.out_dtype or "-",
             us(r.median_us), us(r.min_us), gbps(r.gbps), r.note] for r in record.rows]
    return _without_empty_notes(header, rows)


def memory_table(record: Record) -> tuple[list[str], list[list[str]]]:
    names = list(record.memory_measure)
    header = ["dtype", "new shapes", *(f"{n} per new shape" for n in names), "note"]
    rows = [[m.dtype, str(len(m.shapes)), *(per_shape(m.growth.get(n)) for n in names), m.note] for m in record.memory]
    return _without_empty_notes(header, rows)


def memory_lines(record: Record) -> list[str]:
    return [f"{name}: {what}" for name, what in record.memory_measure.items()]


def run_lines(record: Record) -> list[str]:
    lines = header_lines(record)
    if record.rows:
        header, rows = run_table(record)
        numbers = range(header.index("median µs"), header.index("GB/s") + 1)
        lines += [""] + aligned(header, rows, right=tuple(numbers))
    if record.memory:
        header, rows = memory_table(record)
        lines += ["", "memory growth per new shape (a varying-shape sweep):"]
        lines += aligned(header, rows) + memory_lines(record)
    return lines


def compare_table(cmp: Comparison) -> tuple[list[str], list[list[str]]]:
    reduction = any(r.dim is not None for r in cmp.rows)
    header = ["layout", "shape", *(["dim"] if reduction else []), "dtype", "before µs", "after µs", "speedup",
              "GB/s before", "GB/s after", "mem/new shape before", "mem/new shape after", "note"]
    rows = [[r.layout, shape_text(r.shape), *([str(r.dim)] if reduction else []), r.dtype, us(r.before_us),
             us(r.after_us), speedup(r), gbps(r.before_gbps), gbps(r.after_gbps), per_shape(r.before_growth),
             per_shape(r.after_growth), r.note] for r in cmp.rows]
    return _without_empty_notes(header, rows)


def compare_heading(cmp: Comparison) -> list[str]:
    b, a = cmp.before, cmp.after
    return [f"mpsgen bench {cmp.op}: before {b.call} on {b.device}, after {a.call} on {a.device}",
            f"median of {b.repeat} / {a.repeat} timed calls; speedup = before / after; GB/s = bytes read + written / "
            f"median; memory: growth per new shape of the dtype's sweep ({b.memory_key or 'none'} / {a.memory_key or 'none'})"]


def compare_footer(cmp: Comparison) -> list[str]:
    slower = cmp.slower
    timed = [r for r in cmp.rows if r.speedup is not None]
    lines = [f"{len(slower)} of {len(timed)} rows slower after (marked {SLOWER!r})" if slower else
             f"no row slower after ({len(timed)} compared)"]
    lines += [f"note: {n}" for n in cmp.notes]
    both = [n for n in cmp.before.notes if n in cmp.after.notes]
    lines += [f"before and after: {n}" for n in both]
    for side, record in (("before", cmp.before), ("after", cmp.after)):
        lines += [f"{side}: {n}" for n in record.notes if n not in both]
    return lines


def _without_empty_notes(header: list[str], rows: list[list[str]]) -> tuple[list[str], list[list[str]]]:
    """The last column (note) left out when no row has one."""
    if header[-1] == "note" and not any(row[-1] for row in rows):
        return header[:-1], [row[:-1] for row in rows]
    return header, rows


def compare_lines(cmp: Comparison) -> list[str]:
    header, rows = compare_table(cmp)
    numbers = range(header.index("before µs"), header.index("mem/new shape after") + 1)
    return compare_heading(cmp) + [""] + aligned(header, rows, right=tuple(numbers)) + [""] + compare_footer(cmp)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def compare_markdown(cmp: Comparison) -> str:
    header, rows = compare_table(cmp)
    at = header.index("speedup")
    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join("---:" if "µs" in h or h in ("speedup",) or h.startswith(("GB/s", "mem")) else "---"
                            for h in header) + "|"]
    for row in rows:
        cells = [_cell(c) for c in row]
        if cells[at].endswith(SLOWER):
            cells[at] = f"**{cells[at]}**"
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(compare_heading(cmp) + [""] + lines + [""] + compare_footer(cmp)) + "\n"
