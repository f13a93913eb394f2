"""The test side of a change: OpInfo decorators in common_methods_invocations.py and the xfail/skip
lists of common_mps.py follow the kernel's registered dtypes."""

from __future__ import annotations

from mpsgen.checkout import COMMON_METHODS, COMMON_MPS, Workspace
from mpsgen.dtypes import torch_dtypes_for
from mpsgen.errors import MpsgenError
from mpsgen.resolve import OpSpec

OPINFO_DEFINITIONS = "torch/testing/_internal/opinfo/definitions"


def opinfo_test_name(key: str) -> str:
    """`nn.functional.mish` -> `nn_functional_mish`, as test_mps.py instantiates it."""
    return key.replace(".", "_")


def find_op_opinfos(ws: Workspace, op: str):
    """The op's OpInfos in common_methods_invocations.py, then in opinfo/definitions/*.py."""
    from mpsgen.cache import cached_index
    from mpsgen.opinfo import find_opinfos, scan_calls

    found = []
    sources = [COMMON_METHODS] + ws.checkout.glob(OPINFO_DEFINITIONS, "*.py")
    for rel in sources:
        if not ws.exists(rel):
            continue
        text = ws.read(rel)
        if op not in text:
            continue
        # the index of an unedited file comes from .mpsgen/cache/ (validated by the text's hash)
        on_disk = ws.checkout.root if text is ws.checkout.read(rel) else None
        index = cached_index(on_disk, rel, text, "opinfo-calls", lambda: scan_calls(text))
        try:
            refs = find_opinfos(text, rel, op, frozenset({op}), index=index)
        except MpsgenError:
            continue
        if refs:
            found.append((rel, refs))
    return found


def plan_expectations(ws: Workspace, spec: OpSpec, groups: tuple[str, ...], *, drop_undefined: bool = False) -> tuple[str, ...]:
    """Edit the op's OpInfo decorators and common_mps.py entries; returns the test names to run."""
    from mpsgen.opinfo import plan_opinfo_edits, tested_dtypes
    from mpsgen.testlists import plan_testlist_edits

    if not ws.exists(COMMON_MPS):
        ws.add_note(f"{COMMON_MPS} not in this checkout: MPS test expectations not updated")
        return ()
    backward = spec.op.endswith("_backward")
    covered = torch_dtypes_for(groups)
    found = find_op_opinfos(ws, spec.op)
    if not found:
        ws.add_note(f"no OpInfo found for {spec.op}: common_mps.py not updated; run the test that covers it by hand")
        return ()
    keys: list[str] = []
    tested: dict[str, frozenset[str]] = {}
    for rel, refs in found:
        text = ws.read(rel)
        new_text, changes = plan_opinfo_edits(text, rel, refs, covered)
        _record(ws, changes)
        if new_text != text:
            ws.write(rel, new_text)
        for ref in refs:
            if ref.kind == "python-ref":
                continue
            keys.append(ref.key)
            dtypes = tested_dtypes(ref)
            if dtypes is not None:
                tested[ref.key] = dtypes
    keys = list(dict.fromkeys(keys))
    text = ws.read(COMMON_MPS)
    new_text, changes = plan_testlist_edits(
        text, COMMON_MPS, tuple(keys), covered, "complex" in groups, drop_undefined,
        tested_dtypes=tested, backward=backward,
    )
    _record(ws, changes)
    if new_text != text:
        ws.write(COMMON_MPS, new_text)
    kind = "test_output_grad_match" if backward else "test_output_match"
    return tuple(f"{kind}_{opinfo_test_name(key)}" for key in keys)


def _record(ws: Workspace, changes) -> None:
    for change in changes:
        if change.action == "kept":
            ws.add_note(f"{change.location}: kept {change.dict_name}[{change.key!r}]: {change.detail}")
        else:
            ws.add_change(change.action, change.location, f"{change.dict_name}[{change.key!r}]: {change.detail}" if change.dict_name else f"{change.key}: {change.detail}")
