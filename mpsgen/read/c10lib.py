"""Which `c10::metal` functions a checkout's headers declare, so that functor bodies call them
rather than carry a helper of their own (PyTorch's MPS review asks for the c10/metal lineage).

Read from `c10/metal/*.h` as the Workspace holds them: the names of functions defined there
(`inline float log1p(float x) {`, templates included). A catalog body lists the ones it calls
when present (`c10 = ["log1p"]` in catalog.toml); without one, its template keeps a local helper
and the plan says so in a note."""

from __future__ import annotations

import functools
import re

from mpsgen.read.cache import cached_index
from mpsgen.read.checkout import Texts
from mpsgen.read.cpp import mask_code

C10_METAL_DIR = "c10/metal"
# the user-cache index's name: v2 since templates defined without `inline` count (an index kept by
# the earlier reader would lack them while the headers hash the same)
C10_INDEX = "c10-functions-v2"
# `inline <type> name(` (after any `template <...>`): a function defined at namespace scope
_FUNCTION = re.compile(r"^[ \t]*(?:static[ \t]+)?(?:constexpr[ \t]+)?inline[ \t]+[\w:<>, ]+?[ \t&*]+(\w+)[ \t]*\("
                       # or a template's definition without `inline` (special_math.h's `float erfc(T x) {`)
                       r"|^template[ \t]*<[^;{}()]*>[ \t]*\n(?:inline[ \t]+)?[\w:<>, ]+?[ \t&*]+(\w+)[ \t]*\(", re.M)


def declared_functions(texts) -> frozenset[str]:
    """The function names the header texts define."""
    return frozenset().union(*(_defined_in(text) for text in texts))


@functools.lru_cache(maxsize=64)
def _defined_in(text: str) -> frozenset[str]:
    # one header text is read once per process (scan plans many candidates against the same headers)
    return frozenset(m.group(1) or m.group(2) for m in _FUNCTION.finditer(mask_code(text)))


def checkout_functions(ws: Texts, disk_cache: bool = False) -> frozenset[str]:
    """The `c10::metal` functions of the checkout as `ws` holds it. `disk_cache`: while the headers
    are the checkout's own, kept in the user cache (`mpsgen.read.cache`) while their names and
    texts hash the same."""
    root = ws.checkout.root / C10_METAL_DIR
    if not root.is_dir():
        return frozenset()
    rels = [f"{C10_METAL_DIR}/{name}" for name in sorted(p.name for p in root.glob("*.h"))]
    texts = [ws.read(rel) for rel in rels]
    if disk_cache and all(text is ws.checkout.read(rel) for rel, text in zip(rels, texts)):
        every = "".join(f"{rel}\0{len(text)}\0{text}" for rel, text in zip(rels, texts))
        return frozenset(cached_index(ws.checkout.root, C10_METAL_DIR, every, C10_INDEX,
                                      lambda: sorted(declared_functions(texts))))
    return declared_functions(texts)


def function_sites(ws: Texts) -> dict[str, tuple[str, int, int]]:
    """name -> (header, line, parameter count) of each `c10::metal` function the checkout's
    `c10/metal/*.h` define (the first definition of a name; parameters counted at top level)."""
    root = ws.checkout.root / C10_METAL_DIR
    if not root.is_dir():
        return {}
    sites: dict[str, tuple[str, int, int]] = {}
    for name in sorted(p.name for p in root.glob("*.h")):
        rel = f"{C10_METAL_DIR}/{name}"
        for function, line, count in _sites_in(ws.read(rel)):
            sites.setdefault(function, (rel, line, count))
    return sites


@functools.lru_cache(maxsize=64)
def _sites_in(text: str) -> tuple[tuple[str, int, int], ...]:
    masked = mask_code(text)
    out = []
    for m in _FUNCTION.finditer(masked):
        depth, pos, commas, empty = 1, m.end(), 0, True
        while pos < len(masked) and depth:
            ch = masked[pos]
            depth += (ch in "(<[") - (ch in ")>]")
            if ch == "," and depth == 1:
                commas += 1
            elif depth and not ch.isspace():
                empty = False
            pos += 1
        group = 1 if m.group(1) else 2
        out.append((m.group(group), masked.count("\n", 0, m.start(group)) + 1, 0 if empty else commas + 1))
    return tuple(out)
