"""The `native_functions.yaml` part of a change: MPS joins the shared dispatch line, and (migrate)
the separate `MPS: x_mps` line goes."""

from __future__ import annotations

from mpsgen.facts.resolve import OpSpec
from mpsgen.model import Change, FileChange
from mpsgen.read.checkout import NATIVE_FUNCTIONS
from mpsgen.read.nfyaml import DispatchLine
from mpsgen.textedit import replace_spans


def with_mps(line: DispatchLine) -> str:
    """The line with `MPS` added to its keys where PyTorch writes it: after CUDA (`CPU, CUDA, MPS,
    MTIA: x`). Everything else on the line (kernel, trailing comment, line ending) stays."""
    keys = list(line.keys)
    position = keys.index("CUDA") + 1 if "CUDA" in keys else len(keys)
    keys.insert(position, "MPS")
    colon = line.text.index(":")
    indent = line.text[: len(line.text) - len(line.text.lstrip(" "))]
    return f"{indent}{', '.join(keys)}{line.text[colon:]}"


def dispatch_edit(text: str, shared, legacy) -> tuple[str, list[tuple[object, str]]]:
    """The yaml text with MPS added to each shared line that lacks it and each legacy `MPS:` line
    removed; returns the new text and (site, description) pairs for the report. The sites' offsets
    must refer to `text`."""
    spans, done = [], []
    for site in shared:
        if "MPS" in site.line.keys:
            continue
        _check_span(text, site.line)
        spans.append((site.line.start, site.line.end, with_mps(site.line)))
        done.append((site, f"{site.entry.name}: {site.line.keys_text} -> MPS added ({site.line.kernel})"))
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
