"""The tensor layouts `bench` times an op on, and the bytes each moves (the effective-bandwidth model).

A layout says how each tensor operand is laid out against the output's shape:

- `contiguous`: every operand a dense tensor of the output's shape;
- `strided`: every operand a non-contiguous view of the same values (2-D and more: the transpose of
  a dense tensor of the swapped shape; 1-D: every other element of a tensor twice as long);
- `broadcast`: the first operand dense, every other one a single row (shape `(1, ..., 1, C)`)
  broadcast over the rest (a unary op: its operand is that row, expanded);
- `scalar`: the first operand dense, every other one a 0-dim tensor (not for a unary op or a
  reduction: there is no second operand).

A small shape (the default `4x8`) is where launch overhead dominates; the large one (`1024x1024`)
where bandwidth does. A reduction reduces the innermost dim and the outermost one (`dim`).

Bytes moved: each operand's distinct elements read once (a broadcast row counts its own elements,
a 0-dim tensor one, a strided view as many as the dense one) plus the output's elements written
once, each at its dtype's size. Effective bandwidth is that over the median time."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from mpsgen.errors import MpsgenError

CONTIGUOUS, STRIDED, BROADCAST, SCALAR = "contiguous", "strided", "broadcast", "scalar"
LAYOUTS = (CONTIGUOUS, STRIDED, BROADCAST, SCALAR)
DEFAULT_SHAPES = ((1024, 1024), (4, 8))
# a reduction reduces these dims of the shape (the innermost, the outermost)
REDUCED_DIMS = (-1, 0)


@dataclass(frozen=True)
class Case:
    """One timed configuration: a layout at a shape (the output's, before a reduction), and for a
    reduction the dim it reduces."""

    layout: str
    shape: tuple[int, ...]
    dim: int | None = None

    @property
    def shape_text(self) -> str:
        return shape_text(self.shape)


def shape_text(shape: tuple[int, ...]) -> str:
    return "x".join(str(n) for n in shape) if shape else "()"


def parse_shapes(spec: str) -> tuple[tuple[int, ...], ...]:
    """`"1024x1024,4096,2x3x4"` -> ((1024, 1024), (4096,), (2, 3, 4)); one line naming the bad one."""
    shapes = []
    for part in (p.strip() for p in spec.split(",")):
        if not part:
            continue
        if not re.fullmatch(r"[1-9]\d*(?:x[1-9]\d*)*", part):
            raise MpsgenError(f"--shapes {spec}: {part!r} is not a shape",
                              hint="write each shape as sizes joined by x, shapes separated by commas: 1024x1024,4x8")
        shapes.append(tuple(int(n) for n in part.split("x")))
    if not shapes:
        raise MpsgenError("--shapes is empty", hint="e.g. --shapes 1024x1024,4x8")
    return tuple(shapes)


def cases(shapes: tuple[tuple[int, ...], ...], arity: int, reduction: bool) -> tuple[Case, ...]:
    """Every layout the op takes at every shape (a reduction: each at each reduced dim, no scalar
    layout; a unary op: no scalar layout)."""
    layouts = [layout for layout in LAYOUTS if not (layout == SCALAR and (arity < 2 or reduction))]
    out = []
    for shape in shapes:
        for layout in layouts:
            if reduction:
                dims = dict.fromkeys(d % len(shape) for d in REDUCED_DIMS)
                out += [Case(layout, shape, d) for d in dims]
            else:
                out.append(Case(layout, shape))
    return tuple(out)


def operand_shapes(case: Case, arity: int) -> tuple[tuple[int, ...], ...]:
    """The shape of each operand's own storage (what it reads): a broadcast operand's row, a scalar
    operand's `()`."""
    shape = case.shape
    row = (1,) * (len(shape) - 1) + (shape[-1],)
    if case.layout == BROADCAST:
        return (row if arity == 1 else shape,) + (row,) * (arity - 1)
    if case.layout == SCALAR:
        return (shape,) + ((),) * (arity - 1)
    return (shape,) * arity


def output_elements(case: Case) -> int:
    if case.dim is None:
        return math.prod(case.shape)
    return math.prod(n for i, n in enumerate(case.shape) if i != case.dim)


def bytes_moved(case: Case, arity: int, in_size: int, out_size: int) -> int:
    """Bytes read (each operand's own elements once, at `in_size` bytes) plus written (the output's
    elements at `out_size`)."""
    read = sum(math.prod(s) for s in operand_shapes(case, arity)) * in_size
    return read + output_elements(case) * out_size
