"""The index cache in the user cache directory (never in the checkout): same plans with and without
it, never stale, corrupt files ignored; and the fast readers (lazy yaml, ast spans) read what the
full ones read."""

from __future__ import annotations

import json

import pytest

from mpsgen.read.cache import cache_dir, cache_file, cached_index
from mpsgen.read.nfyaml import NativeFunctions, scan_entries
from mpsgen.edit.testlists import plan_testlist_edits
from support import FIXTURE_CHECKOUT, copy_checkout, every_file, run_cli

CMI = "torch/testing/_internal/common_methods_invocations.py"
NF = "aten/src/ATen/native/native_functions.yaml"


@pytest.fixture(autouse=True)
def disk_only(monkeypatch):
    """These tests are about the user cache on disk: the process's memo, which a test before may
    have filled with the same texts, is empty and keeps nothing (its own tests turn it back on)."""
    from mpsgen.read import cache

    cache.forget()
    monkeypatch.setattr(cache, "MEMO_SIZE", 0)
    yield
    cache.forget()


@pytest.mark.parametrize("argv", [["migrate", "mish"], ["migrate", "atan2", "xlogy"], ["new-op", "hypot"]])
def test_dry_run_is_the_same_without_cache_with_a_cold_and_with_a_warm_one(tmp_path, monkeypatch, argv):
    root = copy_checkout(tmp_path)
    monkeypatch.setenv("MPSGEN_CACHE_DIR", str(tmp_path / "cache"))
    before = every_file(root)
    monkeypatch.setenv("MPSGEN_NO_CACHE", "1")
    uncached = run_cli(["-C", str(root), *argv, "--dry-run"])
    assert not (tmp_path / "cache").exists()
    monkeypatch.delenv("MPSGEN_NO_CACHE")
    cold = run_cli(["-C", str(root), *argv, "--dry-run"])
    assert cache_file(root, "opinfo-calls", CMI).is_file()
    assert cache_file(root, "opinfo-calls", CMI).is_relative_to(tmp_path / "cache" / "index")
    warm = run_cli(["-C", str(root), *argv, "--dry-run"])
    assert every_file(root) == before  # nothing was written in the checkout, ignored files included
    assert uncached.exit_code == cold.exit_code == warm.exit_code == 0, uncached.stderr
    assert uncached.stdout == cold.stdout == warm.stdout
    assert uncached.stdout.startswith("diff --git")


def test_a_changed_file_is_reindexed(tmp_path, monkeypatch):
    monkeypatch.setenv("MPSGEN_CACHE_DIR", str(tmp_path / "cache"))
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
def test_a_corrupt_cache_file_is_ignored_and_rebuilt(tmp_path, monkeypatch, content):
    monkeypatch.setenv("MPSGEN_CACHE_DIR", str(tmp_path / "cache"))
    path = cache_file(tmp_path, "k", "f.py")
    path.parent.mkdir(parents=True)
    path.write_text(content)
    assert cached_index(tmp_path, "f.py", "text", "k", lambda: ["fresh"]) == ["fresh"]
    assert json.loads(path.read_text())["data"] == ["fresh"]
    assert cached_index(tmp_path, "f.py", "text", "k", lambda: ["not used"]) == ["fresh"]


def test_the_cache_is_outside_the_checkout_keyed_by_checkout_and_an_unwritable_place_is_no_error(tmp_path, monkeypatch):
    monkeypatch.setenv("MPSGEN_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    assert cached_index(tmp_path / "one", "f.py", "text", "k", lambda: 1) == 1
    assert cached_index(tmp_path / "two", "f.py", "text", "k", lambda: 2) == 2
    assert cached_index(tmp_path / "one", "f.py", "text", "k", lambda: 3) == 1
    assert cache_file(tmp_path / "one", "k", "f.py") != cache_file(tmp_path / "two", "k", "f.py")
    assert list((tmp_path / "one").iterdir()) == list((tmp_path / "two").iterdir()) == []
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("MPSGEN_CACHE_DIR", str(blocker))  # the cache cannot be created under a file
    assert cached_index(tmp_path / "one", "f.py", "text", "k", lambda: 4) == 4


def test_the_cache_directory_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.delenv("MPSGEN_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "mpsgen"
    monkeypatch.setenv("MPSGEN_CACHE_DIR", str(tmp_path / "mine"))
    assert cache_dir() == tmp_path / "mine"


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


def test_kernel_readings_are_cached_while_the_file_and_its_headers_hash_the_same(tmp_path, monkeypatch):
    """A real kernel file takes the preprocessor seconds: its reading is kept, and used only while
    the file and every header the reading looked at are unchanged."""
    from mpsgen.read import metalread
    from support import copy_checkout

    monkeypatch.setenv("MPSGEN_CACHE_DIR", str(tmp_path / "cache"))
    root = copy_checkout(tmp_path)
    rel = "aten/src/ATen/native/mps/kernels/BinaryKernel.metal"
    text = (root / rel).read_text()

    def read(name):
        path = root / name
        return path.read_text() if path.is_file() else None

    first = metalread.read_kernel_cached(root, text, rel, read)
    assert first == metalread.read_kernel(text, rel, read)
    edited_text = "// planned\n" + text  # an edit planned in memory: every line one lower
    edited_first = metalread.read_kernel_cached(None, edited_text, rel, read)
    assert edited_first == metalread.read_kernel(edited_text, rel, read) != first

    def refuse(*args, **kwargs):
        raise AssertionError("read afresh")

    monkeypatch.setattr(metalread, "read_kernel", refuse)
    assert metalread.read_kernel_cached(root, text, rel, read) == first  # from the cache
    # the edited text too (the memo keeps nothing here): kept by its path and text, not the checkout's
    assert metalread.read_kernel_cached(None, edited_text, rel, read) == edited_first
    utils = "c10/metal/utils.h"

    def edited(name):
        return read(name) + "\n// edited\n" if name == utils else read(name)

    with pytest.raises(AssertionError, match="read afresh"):  # a header it read changed: not from the cache
        metalread.read_kernel_cached(root, text, rel, edited)
    with pytest.raises(AssertionError, match="read afresh"):  # nor for the edited text
        metalread.read_kernel_cached(None, edited_text, rel, edited)
    with pytest.raises(AssertionError, match="read afresh"):  # the checkout's text was never read as an edit
        metalread.read_kernel_cached(None, text, rel, read)


def test_edited_texts_are_kept_by_text_the_most_recently_used_staying(tmp_path, monkeypatch):
    from mpsgen.read import cache

    monkeypatch.setenv("MPSGEN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(cache, "EDITED_KEPT", 2)
    calls = []

    def index(text, rel="f.py"):
        return cached_index(None, rel, text, "k", lambda: calls.append((rel, text)) or [len(text)])

    assert [index("a"), index("a"), index("a", "g.py"), index("bb")] == [[1], [1], [1], [2]]
    assert calls == [("f.py", "a"), ("g.py", "a"), ("f.py", "bb")]  # one path's text is not another's
    assert len(list((tmp_path / "cache" / "edited").glob("*.json"))) == 2
    assert index("bb") == [2] and index("a") == [1]  # ("f.py", "a") was the least recently used: gone
    assert calls[3:] == [("f.py", "a")]
    assert not (tmp_path / "cache" / "index").exists()  # nothing under any checkout's key


def test_the_memo_serves_the_same_text_from_another_checkout_and_an_edited_text(tmp_path, monkeypatch):
    """The process's memo keys an index by its text: a second copy of the checkout, or the same
    edit planned again (root None), is read without the preprocessor; a header the
    reading looked at that changed is read afresh; MPSGEN_NO_CACHE=1 reads everything afresh."""
    from mpsgen.read import cache, metalread

    monkeypatch.setattr(cache, "MEMO_SIZE", 4096)
    monkeypatch.setenv("MPSGEN_CACHE_DIR", str(tmp_path / "cache"))
    one, two = copy_checkout(tmp_path / "one"), copy_checkout(tmp_path / "two")
    rel = "aten/src/ATen/native/mps/kernels/BinaryKernel.metal"
    text = (one / rel).read_text()
    edited_text = text + "\n// an edit\n"

    def reader(root):
        def read(name):
            path = root / name
            return path.read_text() if path.is_file() else None
        return read

    first = metalread.read_kernel_cached(one, text, rel, reader(one))
    edited = metalread.read_kernel_cached(None, edited_text, rel, reader(one))

    def refuse(*args, **kwargs):
        raise AssertionError("read afresh")

    monkeypatch.setattr(metalread, "read_kernel", refuse)
    assert metalread.read_kernel_cached(two, text, rel, reader(two)) == first
    assert not cache_file(two, f"kernel-reading-{metalread._READING_FORMAT}", rel).exists()
    assert metalread.read_kernel_cached(None, edited_text, rel, reader(two)) == edited
    utils = two / "c10/metal/utils.h"
    utils.write_text(utils.read_text() + "\n// edited\n")
    with pytest.raises(AssertionError, match="read afresh"):
        metalread.read_kernel_cached(two, text, rel, reader(two))
    with pytest.raises(AssertionError, match="read afresh"):
        metalread.read_kernel_cached(None, edited_text, rel, reader(two))
    monkeypatch.setenv("MPSGEN_NO_CACHE", "1")
    with pytest.raises(AssertionError, match="read afresh"):
        metalread.read_kernel_cached(one, text, rel, reader(one))


def test_the_memo_keeps_the_most_recently_used(monkeypatch):
    from mpsgen.read import cache

    monkeypatch.setattr(cache, "MEMO_SIZE", 2)
    monkeypatch.setattr(cache, "_edited", lambda kind, rel, digest, build, valid: build())  # the memo alone
    calls = []

    def index(text):
        return cached_index(None, "f.py", text, "k", lambda: calls.append(text) or len(text))

    assert [index("a"), index("bb"), index("a"), index("ccc"), index("a"), index("bb")] == [1, 2, 1, 3, 1, 2]
    assert calls == ["a", "bb", "ccc", "bb"]  # "bb" was the least recently used when "ccc" came


@pytest.mark.parametrize("memo_size", [4096, 0], ids=["memo", "user cache"])
def test_a_text_read_with_other_headers_keeps_each_reading(tmp_path, monkeypatch, memo_size):
    """A kernel file read once with a header as the checkout has it and once as a plan edits it
    (scan confirms candidates that edit a kernels/*.h and candidates that do not, or two that edit
    it differently) keeps both readings, in the process and in the user cache: alternating between
    them reads nothing afresh, run after run."""
    from mpsgen.read import cache, metalread

    monkeypatch.setattr(cache, "MEMO_SIZE", memo_size)
    monkeypatch.setenv("MPSGEN_CACHE_DIR", str(tmp_path / "cache"))
    root = copy_checkout(tmp_path)
    rel = "aten/src/ATen/native/mps/kernels/BinaryKernel.metal"
    text = (root / rel).read_text()
    utils = "c10/metal/utils.h"

    def reader(extra):
        def read(name):
            path = root / name
            found = path.read_text() if path.is_file() else None
            return found + extra if name == utils and found is not None else found
        return read

    plain = metalread.read_kernel_cached(None, text, rel, reader(""))
    edited = metalread.read_kernel_cached(None, text, rel, reader("\n// planned\n"))

    def refuse(*args, **kwargs):
        raise AssertionError("read afresh")

    monkeypatch.setattr(metalread, "read_kernel", refuse)
    for _ in range(2):
        assert metalread.read_kernel_cached(None, text, rel, reader("")) == plain
        assert metalread.read_kernel_cached(None, text, rel, reader("\n// planned\n")) == edited
    with pytest.raises(AssertionError, match="read afresh"):
        metalread.read_kernel_cached(None, text, rel, reader("\n// another\n"))
