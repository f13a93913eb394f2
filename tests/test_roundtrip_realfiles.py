"""Round trips on the real files of the newest release (2.15.0): an edit planned for a random op changes only that
op's lines (LF and CRLF alike), and an empty plan leaves every file byte-identical.

Set MPSGEN_SAFETY_FIGURES=FILE to append the figures (cases, files compared, bytes differing)."""

from __future__ import annotations

import difflib
import json
import os
import shutil

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from mpsgen.edit.apply import apply_plan
from mpsgen.read.checkout import COMMON_METHODS, COMMON_MPS, NATIVE_FUNCTIONS, Checkout
from mpsgen.edit.workspace import Workspace
from mpsgen.edit.dispatch import dispatch_edit
from mpsgen.dtypes import GROUPS, torch_dtypes_for
from mpsgen.errors import MpsgenError
from mpsgen.read.nfyaml import NativeFunctions
from mpsgen.read.opinfo import _call_starts, find_opinfos
from mpsgen.edit.opinfo import plan_opinfo_edits
from mpsgen.facts.views import DispatchSite, is_legacy_line, is_shared_line
from mpsgen.read.testlists import find_xfail_dicts
from mpsgen.edit.testlists import plan_testlist_edits
from mpsgen.textedit import LineIndex

pytestmark = pytest.mark.realfiles
# No shrinking: every example parses megabytes; the failing example is printed as found.
SETTINGS = settings(deadline=None, phases=[Phase.explicit, Phase.generate],
                    suppress_health_check=[HealthCheck.function_scoped_fixture])
FIGURES: dict[str, list[int]] = {}


def record(test: str, files: int, differing: int) -> None:
    cases, compared, diff = FIGURES.setdefault(test, [0, 0, 0])
    FIGURES[test] = [cases + 1, compared + files, diff + differing]
    target = os.environ.get("MPSGEN_SAFETY_FIGURES")
    if target:
        with open(target, "a", encoding="utf-8") as handle:
            handle.write(json.dumps({"test": test, "cases": 1, "files": files, "bytes_differing": differing}) + "\n")


def crlf(text: str) -> str:
    return text.replace("\n", "\r\n")


def changed_lines_outside(before: str, after: str, allowed: set[int], inserted_ok=lambda line: False) -> tuple[list, int]:
    """Lines (1-based, of `before`) changed or removed outside `allowed`, lines inserted that
    `inserted_ok` does not accept, and the number of bytes of `before` changed outside `allowed`.
    A removed or inserted block may be shown at several places when its neighbours repeat (`],`):
    it counts as inside when any of those places is."""
    a, b = before.splitlines(keepends=True), after.splitlines(keepends=True)
    lo = 0
    while lo < min(len(a), len(b)) and a[lo] == b[lo]:
        lo += 1
    hi = 0
    while hi < min(len(a), len(b)) - lo and a[len(a) - 1 - hi] == b[len(b) - 1 - hi]:
        hi += 1
    bad, differing = [], 0
    matcher = difflib.SequenceMatcher(a=a[lo:len(a) - hi], b=b[lo:len(b) - hi], autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        i1, i2, j1, j2 = i1 + lo, i2 + lo, j1 + lo, j2 + lo
        if tag == "equal":
            continue
        if tag == "delete" and any(all(i + 1 in allowed for i in range(k1, k2)) for k1, k2 in _slides(a, i1, i2)):
            continue
        outside = [i + 1 for i in range(i1, i2) if i + 1 not in allowed]
        if tag == "insert" and not all(inserted_ok(line) for line in b[j1:j2]):
            outside.append(("inserted", b[j1:j2]))
        bad.extend(outside)
        differing += sum(len(a[i - 1].encode()) for i in outside if isinstance(i, int))
    return bad, differing


def _slides(lines: list[str], i1: int, i2: int):
    """Every position a removed block lines[i1:i2] can be shown at, by sliding it over repeats."""
    yield i1, i2
    k1, k2 = i1, i2
    while k1 > 0 and lines[k1 - 1] == lines[k2 - 1]:
        k1, k2 = k1 - 1, k2 - 1
        yield k1, k2
    k1, k2 = i1, i2
    while k2 < len(lines) and lines[k1] == lines[k2]:
        k1, k2 = k1 + 1, k2 + 1
        yield k1, k2


class RealFiles(tuple):
    def __repr__(self) -> str:  # hypothesis prints its arguments: not the 2 MB of text
        return "<PyTorch 2.15.0 files>"


@pytest.fixture(scope="module")
def real(real_torch_files):
    """The three files in LF and CRLF, parsed once; hypothesis draws ops from them."""
    texts = {}
    for rel in (NATIVE_FUNCTIONS, COMMON_MPS, COMMON_METHODS):
        lf = (real_torch_files / rel).read_bytes().decode("utf-8")
        texts[rel, "\n"], texts[rel, "\r\n"] = lf, crlf(lf)
    nf = {nl: NativeFunctions(texts[NATIVE_FUNCTIONS, nl], NATIVE_FUNCTIONS) for nl in ("\n", "\r\n")}
    yaml_ops = sorted(op for op in nf["\n"].op_names if any(is_shared_line(line) for e in nf["\n"].op_entries(op) for line in e.dispatch))
    xfail_lines: dict[tuple[str, str], set[int]] = {}
    for nl in ("\n", "\r\n"):
        index = LineIndex(texts[COMMON_MPS, nl])
        for d in find_xfail_dicts(texts[COMMON_MPS, nl], COMMON_MPS):
            lines = texts[COMMON_MPS, nl].splitlines()
            for e in d.entries:
                first = index.line_of(e.span[0])
                owned = set(range(first, index.line_of(max(e.span[1] - 1, e.span[0])) + 1))
                # a comment block directly above an entry may describe only it, and then goes with it
                above = first - 1
                while above >= 1 and lines[above - 1].lstrip().startswith("#"):
                    owned.add(above)
                    above -= 1
                xfail_lines.setdefault((e.key, nl), set()).update(owned)
    opinfo_names = sorted({name for _, _, name in _call_starts(texts[COMMON_METHODS, "\n"])})
    return RealFiles((texts, nf, yaml_ops, xfail_lines, opinfo_names))


groups_strategy = st.lists(st.sampled_from(list(GROUPS)), min_size=1, unique=True).filter(
    lambda g: not ("int2float" in g and "integer" in g))
newlines = st.sampled_from(["\n", "\r\n"])


def sites(nf: NativeFunctions, op: str):
    entries = nf.op_entries(op)
    shared = tuple(DispatchSite(e, line) for e in entries for line in e.dispatch if is_shared_line(line))
    legacy = tuple(DispatchSite(e, line) for e in entries for line in e.dispatch if is_legacy_line(line))
    return shared, legacy


def assert_line_endings(after: str, newline: str) -> None:
    assert after.count("\n") == (after.count("\r\n") if newline == "\r\n" else after.count("\n"))
    assert newline == "\r\n" or "\r" not in after


@pytest.mark.heavy
@settings(SETTINGS, max_examples=100)
@given(data=st.data())
def test_yaml_dispatch_edit_of_a_random_op_changes_only_its_dispatch_lines(real, data):
    texts, nfs, yaml_ops, _, _ = real
    op = data.draw(st.sampled_from(yaml_ops), label="op")
    newline = data.draw(newlines, label="newline")
    text, nf = texts[NATIVE_FUNCTIONS, newline], nfs[newline]
    shared, legacy = sites(nf, op)
    after, _ = dispatch_edit(text, shared, legacy)
    allowed = {site.line.location.line for site in shared + legacy}
    bad, differing = changed_lines_outside(text, after, allowed)
    record("roundtrip-yaml", 1, differing)
    assert bad == [], (op, bad[:5])
    assert_line_endings(after, newline)
    # the other ops read the same afterwards, and a second edit changes nothing
    again = NativeFunctions(after, NATIVE_FUNCTIONS)
    for other in data.draw(st.lists(st.sampled_from(yaml_ops), max_size=5), label="others"):
        if other != op:
            assert [(e.name, [(d.keys, d.kernel) for d in e.dispatch]) for e in again.op_entries(other)] == \
                   [(e.name, [(d.keys, d.kernel) for d in e.dispatch]) for e in nf.op_entries(other)]
    assert dispatch_edit(after, *sites(again, op))[0] == after


@settings(SETTINGS, max_examples=25)  # each example parses the whole file with libcst (~0.35 s)
@given(data=st.data())
def test_common_mps_edit_of_a_random_key_changes_only_its_entries(real, data):
    texts, _, _, xfail_lines, _ = real
    key = data.draw(st.sampled_from(sorted({k for k, _ in xfail_lines})), label="key")
    groups = data.draw(groups_strategy, label="groups")
    newline = data.draw(newlines, label="newline")
    text = texts[COMMON_MPS, newline]
    after, _ = plan_testlist_edits(text, COMMON_MPS, (key,), torch_dtypes_for(tuple(groups)), "complex" in groups)
    # the key's element of the complex list may go (2.15: a complex kernel takes it out of UNSUPPORTED_COMPLEX_OPS)
    listed = {i + 1 for i, line in enumerate(text.splitlines()) if line.strip() == f'"{key}",'}
    bad, differing = changed_lines_outside(text, after, set(xfail_lines[key, newline]) | listed,
                                           inserted_ok=lambda line: f'"{key}"' in line)
    record("roundtrip-common_mps", 1, differing)
    assert bad == [], (key, groups, bad[:5])
    assert_line_endings(after, newline)
    compile(after, COMMON_MPS, "exec")


@pytest.mark.heavy
@settings(SETTINGS, max_examples=40)
@given(data=st.data())
def test_opinfo_edit_of_a_random_op_changes_only_its_opinfo_calls(real, data):
    texts, _, _, _, opinfo_names = real
    name = data.draw(st.sampled_from(opinfo_names), label="opinfo")
    groups = data.draw(groups_strategy, label="groups")
    newline = data.draw(newlines, label="newline")
    text = texts[COMMON_METHODS, newline]
    try:
        refs = find_opinfos(text, COMMON_METHODS, name)
    except MpsgenError as refusal:
        # an OpInfo built by a function from a variable (mvlgamma's variant_test_name) is refused at
        # its own line, never guessed: the edit is not made, so there is nothing to compare
        assert refusal.location is not None and "not a string literal" in refusal.message, refusal
        return
    after, _ = plan_opinfo_edits(text, COMMON_METHODS, refs, torch_dtypes_for(tuple(groups)))
    index = LineIndex(text)
    allowed = {line for ref in refs for line in range(index.line_of(ref.span[0]), index.line_of(ref.span[1] - 1) + 1)}
    bad, differing = changed_lines_outside(text, after, allowed)
    record("roundtrip-common_methods_invocations", 1, differing)
    assert bad == [], (name, groups, bad[:5])
    assert_line_endings(after, newline)


def test_an_empty_plan_is_byte_identical_for_every_file(real_torch_files, tmp_path):
    root = tmp_path / "checkout"
    shutil.copytree(real_torch_files, root)
    files = sorted(p for p in root.rglob("*") if p.is_file())
    before = {p: p.read_bytes() for p in files}
    checkout = Checkout(root)
    ws = Workspace(checkout)
    for path in files:
        rel = path.relative_to(root).as_posix()
        text = ws.read(rel)
        assert text.encode("utf-8") == before[path], rel  # reading keeps every byte, line endings included
        ws.write(rel, text)
    plan = ws.plan()
    assert plan.empty
    assert apply_plan(plan) == []
    differing = sum(p.read_bytes() != before[p] for p in files)
    record("empty-plan", len(files), differing)
    assert differing == 0
    assert sorted(p for p in root.rglob("*") if p.is_file()) == files
    assert len(files) > 100


def test_an_empty_plan_is_byte_identical_for_crlf_files(real_torch_files, tmp_path):
    root = tmp_path / "checkout"
    for rel in (NATIVE_FUNCTIONS, COMMON_MPS, COMMON_METHODS):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes((real_torch_files / rel).read_bytes().replace(b"\n", b"\r\n"))
    before = {rel: (root / rel).read_bytes() for rel in (NATIVE_FUNCTIONS, COMMON_MPS, COMMON_METHODS)}
    ws = Workspace(Checkout(root))
    for rel in before:
        ws.write(rel, ws.read(rel))
    assert ws.plan().empty
    apply_plan(ws.plan())
    assert {rel: (root / rel).read_bytes() for rel in before} == before
    record("empty-plan-crlf", len(before), 0)
