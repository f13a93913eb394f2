"""The index cache under .mpsgen/cache/: same plans with and without it, never stale, corrupt files
ignored; and the fast readers (lazy yaml, ast spans) read what the full ones read."""

from __future__ import annotations

import json

import pytest

from mpsgen.cache import cache_file, cached_index
from mpsgen.nfyaml import NativeFunctions, scan_entries
from mpsgen.testlists import plan_testlist_edits
from support import FIXTURE_CHECKOUT, copy_checkout, run_cli

CMI = "torch/testing/_internal/common_methods_invocations.py"
NF = "aten/src/ATen/native/native_functions.yaml"


@pytest.mark.parametrize("argv", [["migrate", "mish"], ["migrate", "atan2", "xlogy"], ["new-op", "hypot"]])
def test_dry_run_is_the_same_without_cache_with_a_cold_and_with_a_warm_one(tmp_path, monkeypatch, argv):
    root = copy_checkout(tmp_path)
    monkeypatch.setenv("MPSGEN_NO_CACHE", "1")
    uncached = run_cli(["-C", str(root), *argv, "--dry-run"])
    assert not (root / ".mpsgen" / "cache").exists()
    monkeypatch.delenv("MPSGEN_NO_CACHE")
    cold = run_cli(["-C", str(root), *argv, "--dry-run"])
    assert cache_file(root, "opinfo-calls", CMI).is_file()
    warm = run_cli(["-C", str(root), *argv, "--dry-run"])
    assert uncached.exit_code == cold.exit_code == warm.exit_code == 0, uncached.stderr
    assert uncached.stdout == cold.stdout == warm.stdout
    assert uncached.stdout.startswith("diff --git")


def test_a_changed_file_is_reindexed(tmp_path):
    calls = []

    def build(text):
        calls.append(text)
        return {"length": len(text)}

    assert cached_index(tmp_path, "f.py", "one", "k", lambda: build("one")) == {"length": 3}
    assert cached_index(tmp_path, "f.py", "one", "k", lambda: build("one")) == {"length": 3}
    assert cached_index(tmp_path, "f.py", "three", "k", lambda: build("three")) == {"length": 5}
    assert calls == ["one", "three"]
    stored = json.loads(cache_file(tmp_path, "k", "f.py").read_text())
    assert stored["data"] == {"length": 5} and len(stored["sha256"]) == 64


@pytest.mark.parametrize("content", ["{not json", "[]", '{"format": 1, "kind": "k", "path": "f.py"}', ""])
def test_a_corrupt_cache_file_is_ignored_and_rebuilt(tmp_path, content):
    path = cache_file(tmp_path, "k", "f.py")
    path.parent.mkdir(parents=True)
    path.write_text(content)
    assert cached_index(tmp_path, "f.py", "text", "k", lambda: ["fresh"]) == ["fresh"]
    assert json.loads(path.read_text())["data"] == ["fresh"]
    assert cached_index(tmp_path, "f.py", "text", "k", lambda: ["not used"]) == ["fresh"]


def test_the_cache_is_ignored_by_git_and_an_unwritable_place_is_no_error(tmp_path):
    cached_index(tmp_path, "f.py", "text", "k", lambda: 1)
    assert (tmp_path / ".mpsgen" / "cache" / ".gitignore").read_text().splitlines()[-1] == "*"
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert cached_index(blocker, "f.py", "text", "k", lambda: 2) == 2  # .mpsgen cannot be created under a file


def test_lazy_yaml_entries_equal_the_full_scan():
    text = (FIXTURE_CHECKOUT / NF).read_text()
    nf = NativeFunctions(text, NF)
    full = tuple(scan_entries(text, NF))
    assert nf.entries == full
    for entry in full:
        assert nf.entry(entry.name) == {e.name: e for e in full}[entry.name]
        assert nf.op_entries(entry.base) == tuple(e for e in full if e.base == entry.base)
    assert nf.op_names == tuple(dict.fromkeys(e.base for e in full))


def test_lazy_yaml_entries_equal_the_full_scan_on_the_real_file(real_torch_files):
    text = (real_torch_files / NF).read_text()
    nf = NativeFunctions(text, NF)
    for entry in scan_entries(text, NF):
        if entry.base in ("mish", "asinh", "sigmoid_backward", "add", "abs"):
            assert entry in nf.op_entries(entry.base)


def test_spans_after_non_ascii_text_on_the_same_line():
    text = 'X = {"caf\u00e9": [torch.float32], "asinh": [torch.float32, torch.int32]}  # \u00e9\n'
    new, changes = plan_testlist_edits(text, "m.py", ("asinh",), frozenset({"float32", "int32"}), False)
    assert new == 'X = {"caf\u00e9": [torch.float32]}  # \u00e9\n'
    assert [c.action for c in changes] == ["removed-entry"]


def test_implicitly_concatenated_keys_are_not_a_test_list():
    text = 'X = {"as" "inh": [torch.float32]}\n'
    assert plan_testlist_edits(text, "m.py", ("asinh",), frozenset({"float32"}), False) == (text, ())
