"""An op whose kernel the checkout already compiles under another functor's name (conj_physical: the
copy kernels' `copy_conj`, pytorch#195872): its stub is registered with that functor and no second
functor is written. The mapping is `compiled_as.toml`'s; whether the checkout compiles the functor,
where and for which dtypes, is read from the checkout's kernel files as the compiler reads them."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from mpsgen.errors import MpsgenError
from mpsgen.facts.views import Views
from mpsgen.model import Location

TABLE = Path(__file__).with_name("compiled_as.toml")


@dataclass(frozen=True)
class CompiledAs:
    """The functor the checkout compiles for an op under another name, where, and what for."""

    op: str
    functor: str  # without `_functor`: the name the host function launches
    location: Location  # the functor's definition in its kernel file
    pairs: frozenset[tuple[str, str]]  # the (input, output) Metal types it is registered for
    why: str
    host_file: str = ""  # the operations/*.mm already launching it (its library holds the kernel), if any

    @property
    def kernel_file(self) -> str:
        return self.location.path


def _table() -> dict[str, dict]:
    try:
        with open(TABLE, "rb") as handle:
            return tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise MpsgenError(f"cannot read {TABLE}: {exc}", hint="reinstall mpsgen") from None


def compiled_as(views: Views, op: str) -> CompiledAs | None:
    """The functor `compiled_as.toml` names for `op` when a kernel file of the checkout defines and
    registers it; None otherwise (no entry, or the checkout does not compile it)."""
    entry = _table().get(op)
    if entry is None:
        return None
    functor = entry["functor"]
    for rel in views.kernel_files():
        text = views.ws.read(rel)
        if functor not in text:
            continue
        kernel = views.kernel(rel)
        if functor in kernel.functors and functor in kernel.registered:
            return CompiledAs(op, functor, Location(rel, kernel.functor_line(text, functor)),
                              kernel.registered[functor].pairs, entry["why"], launching_host(views, functor))
    return None


def launching_host(views: Views, functor: str) -> str:
    """The first operations/*.mm that already launches `functor` by name (`lib.exec_*_kernel(..., "copy_conj")`,
    or the name in a string it passes on): the op's host function goes beside it, where the library
    built from the kernel's file is at hand also when shaders are compiled per file."""
    pattern = re.compile(rf'"{re.escape(functor)}"')
    for rel in views.host_files():
        text = views.ws.read(rel)
        if f'"{functor}"' in text and pattern.search(text):
            return rel
    return ""


ALPHA_SUFFIX = "_alpha"


def alpha_functor(views: Views, kernel_file: str, functor: str) -> tuple[str, int] | None:
    """For a stub passing a Scalar whose functor the kernel file registers without one: the file's
    `<functor>_alpha` when it defines it and registers its every kernel with an alpha type, with the
    line of its definition; None otherwise. 2.13's BinaryKernel.metal registers add_functor without
    an alpha (the add op's own path) and add_alpha_functor with one; exec_binary_kernel names a kernel
    launched with a Scalar `<name>_<kind>_<out>_<in>_<alpha>`, which only add_alpha's are (sub's
    add_stub call, as 2.15's library launches it)."""
    if not views.ws.exists(kernel_file):
        return None
    reading = views.kernel(kernel_file).reading
    own = reading.registered(functor)
    if not own or any(r.alpha for r in own):
        return None
    other = functor + ALPHA_SUFFIX
    theirs = reading.registered(other)
    if other not in reading.functors or not theirs or not all(r.alpha for r in theirs):
        return None
    return other, reading.functors[other].line
