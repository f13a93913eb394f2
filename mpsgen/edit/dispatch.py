"""The `native_functions.yaml` part of a change: MPS joins the shared dispatch line, and (migrate)
the separate `MPS: x_mps` line goes."""

from __future__ import annotations

import re

from mpsgen.facts.resolve import OpSpec
from mpsgen.facts.views import site_groups
from mpsgen.model import Change, FileChange
from mpsgen.read.checkout import NATIVE_FUNCTIONS
from mpsgen.read.nfyaml import DispatchLine
from mpsgen.textedit import replace_spans


_KEYS_LINE = re.compile(r"^    ([A-Za-z][\w, ]*):", re.M)


def with_mps(line: DispatchLine, text: str = "") -> str:
    """The line with `MPS` added to its keys where PyTorch writes it: after CUDA (`CPU, CUDA, MPS,
    MTIA: x`), and after any other key the file's dispatch lines naming both mostly write before
    MPS (2.15: `MPS, XPU` on 416 lines, `XPU, MPS` on 11, so `CPU, CUDA, MPS, XPU`). Everything
    else on the line (kernel, trailing comment, line ending) stays."""
    keys = list(line.keys)
    position = keys.index("CUDA") + 1 if "CUDA" in keys else len(keys)
    for i, key in enumerate(keys[position:], start=position):
        if _mps_mostly_after(text, key):
            position = i + 1
    keys.insert(position, "MPS")
    colon = line.text.index(":")
    indent = line.text[: len(line.text) - len(line.text.lstrip(" "))]
    return f"{indent}{', '.join(keys)}{line.text[colon:]}"


def _mps_mostly_after(text: str, key: str) -> bool:
    """Whether more dispatch lines of `text` naming both MPS and `key` write MPS after it."""
    after = before = 0
    for m in _KEYS_LINE.finditer(text):
        keys = [k.strip() for k in m.group(1).split(",")]
        if "MPS" in keys and key in keys:
            if keys.index("MPS") > keys.index(key):
                after += 1
            else:
                before += 1
    return after > before


def joining_site(sites):
    """Which line of a function MPS joins: its only line, else the one with CUDA (MPS is written
    after CUDA), else the first."""
    return next((s for s in sites if "CUDA" in s.line.keys), sites[0]) if len(sites) > 1 else sites[0]


def dispatch_edit(text: str, shared, legacy) -> tuple[str, list[tuple[object, str]]]:
    """The yaml text with MPS added to each shared function that lacks it (on its one line, or on
    the line with CUDA when one function serves CPU and CUDA on several lines) and each legacy
    `MPS:` line removed; returns the new text and (site, description) pairs for the report. The
    sites' offsets must refer to `text`."""
    spans, done = [], []
    for sites in site_groups(tuple(shared)).values():
        if any("MPS" in s.line.keys for s in sites):
            continue
        site = joining_site(sites)
        _check_span(text, site.line)
        spans.append((site.line.start, site.line.end, with_mps(site.line, text)))
        several = (f"; {site.line.kernel} serves CPU and CUDA on {len(sites)} lines "
                   f"({', '.join(str(s.line.location.line) for s in sites)}): MPS joins the one with "
                   f"{'CUDA' if 'CUDA' in site.line.keys else site.line.keys[0]}") if len(sites) > 1 else ""
        done.append((site, f"{site.entry.name}: {site.line.keys_text} -> MPS added ({site.line.kernel}){several}"))
    for site in legacy:
        _check_span(text, site.line)
        spans.append((site.line.start, site.line.end, ""))
        done.append((site, f"{site.entry.name}: removed `MPS: {site.line.kernel}`"))
    return (replace_spans(text, spans) if spans else text), done


def plan_dispatch(text: str, spec: OpSpec) -> FileChange:
    """The dispatch lines of `spec` edited in native_functions.yaml's `text`."""
    new_text, done = dispatch_edit(text, spec.shared, spec.legacy)
    changes = tuple(Change("dispatch", site.line.location, description) for site, description in done)
    return FileChange(NATIVE_FUNCTIONS, new_text, changes)


def _check_span(text: str, line: DispatchLine) -> None:
    if text[line.start : line.end] != line.text:
        raise AssertionError(f"{line.location}: native_functions.yaml changed under the plan")
