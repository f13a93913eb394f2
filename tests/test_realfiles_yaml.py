"""The yaml part of new-op and migrate on the real PyTorch 2.13.0 native_functions.yaml."""

from __future__ import annotations

import difflib

import pytest
from ruamel.yaml import YAML

from mpsgen.edit.dispatch import dispatch_edit
from mpsgen.read.nfyaml import NativeFunctions
from mpsgen.facts.views import DispatchSite, is_legacy_line, is_shared_line

pytestmark = pytest.mark.realfiles
NF = "aten/src/ATen/native/native_functions.yaml"


def _dispatch_of(snippet: str) -> dict:
    data = YAML(typ="safe", pure=True).load(snippet)
    return {", ".join(k.strip() for k in key.split(",")): value for key, value in (data[0].get("dispatch") or {}).items()}


def _migratable_entries(nf: NativeFunctions):
    """Structured entries with both a shared `CPU, CUDA[, ...]: x` line and a separate `MPS: x_mps`."""
    for entry in nf.entries:
        shared = [line for line in entry.dispatch if is_shared_line(line) and "MPS" not in line.keys]
        legacy = [line for line in entry.dispatch if is_legacy_line(line)]
        if entry.structured and shared and legacy:
            yield entry, shared, legacy


def test_real_yaml_has_the_documented_migration_candidates(real_torch_files_older):
    nf = NativeFunctions((real_torch_files_older / NF).read_text(), NF)
    names = {entry.base for entry, _, _ in _migratable_entries(nf)}
    # REAL-FILES.md: 21 structured TensorIterator ops carry both lines, e.g. these.
    assert {"sgn", "acosh", "asinh", "atanh", "frac", "mish", "sigmoid_backward", "logit_backward"} <= names


@pytest.mark.heavy  # every candidate of the real file, one migrate each: CI runs it
def test_migrate_yaml_edit_is_exact_and_minimal_for_every_candidate(real_torch_files):
    text = (real_torch_files / NF).read_text()
    nf = NativeFunctions(text, NF)
    candidates = list(_migratable_entries(nf))
    assert len(candidates) >= 15
    for entry, shared, legacy in candidates:
        new_text, _ = dispatch_edit(text, [DispatchSite(entry, line) for line in shared], [DispatchSite(entry, line) for line in legacy])
        diff = [l for l in difflib.unified_diff(text.splitlines(True), new_text.splitlines(True), n=0) if l[:1] in "+-" and not l.startswith(("+++", "---"))]
        # exactly: the shared line replaced and the MPS line removed, nothing else
        assert len([l for l in diff if l.startswith("-")]) == len(shared) + len(legacy), entry.name
        assert len([l for l in diff if l.startswith("+")]) == len(shared), entry.name
        # the entry, read by a YAML parser, now dispatches MPS through the shared kernel
        old = _dispatch_of(text[entry.start:entry.end])
        new_entry = NativeFunctions(new_text, NF).entry(entry.name)
        new = _dispatch_of(new_text[new_entry.start:new_entry.end])
        expected = {k: v for k, v in old.items() if k != "MPS"}
        for line in shared:
            value = expected.pop(line.keys_text)
            keys = list(line.keys)
            keys.insert(keys.index("CUDA") + 1, "MPS")
            expected[", ".join(keys)] = value
        assert new == expected, entry.name
        # everything outside the entry is byte-identical
        assert new_text[: entry.start] == text[: entry.start]
        tail = len(text) - entry.end
        assert new_text[len(new_text) - tail:] == text[entry.end:]
        # a second edit finds nothing to do
        again = NativeFunctions(new_text, NF).entry(entry.name)
        assert not [l for l in again.dispatch if is_legacy_line(l)]


def test_one_pass_over_every_entry_reads_each_as_its_own_scan_does(real_torch_files):
    """`entries` (one pass over the file) also serves `op_entries` (scan asks for both): the same
    entries, spans and lines as scanning each entry's slice alone."""
    text = (real_torch_files / "aten/src/ATen/native/native_functions.yaml").read_text(encoding="utf-8")
    whole = NativeFunctions(text, "native_functions.yaml")
    alone = NativeFunctions(text, "native_functions.yaml")
    everything = whole.entries
    assert len(everything) > 2000
    for op in alone.op_names:
        assert whole.op_entries(op) == alone.op_entries(op)
    each = sorted((e for op in alone.op_names for e in alone.op_entries(op)), key=lambda e: e.start)
    assert list(everything) == each
