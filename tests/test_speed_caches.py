"""What makes `scan` and `migrate` fast without changing an answer (issue 29): each kept result
follows the text it was computed from, and a confirmation plans the same refusals without reports."""

from __future__ import annotations

import pytest

from mpsgen.commands.confirm import migrate_refusal
from mpsgen.edit.workspace import Workspace
from mpsgen.errors import MpsgenError
from mpsgen.model import FileChange
from mpsgen.read import cpp
from mpsgen.read.checkout import Checkout
from support import FIXTURE_CHECKOUT, copy_checkout, run_cli


@pytest.fixture(autouse=True)
def disk_only(monkeypatch):
    """These tests are about what the user cache on disk keeps: the process's memo
    (`mpsgen.read.cache._MEMO`, tests/test_cache.py) is empty and keeps nothing."""
    from mpsgen.read import cache

    cache.forget()
    monkeypatch.setattr(cache, "MEMO_SIZE", 0)
    yield
    cache.forget()

HOST = """\
namespace at::native {
// a comment with { a brace
static void helper() { int x = 1; }
void kernel_mps() { helper(); }
} // namespace at::native
"""


def test_mask_code_follows_the_text():
    first = cpp.mask_code(HOST)
    assert first == cpp._mask_code(HOST)
    edited = HOST.replace("a comment", '"a { string"; // comment')
    assert cpp.mask_code(edited) == cpp._mask_code(edited) != first
    assert cpp.mask_code(HOST) == first


def test_definitions_follow_the_text_and_path_and_are_the_callers_own():
    names = [d.name for d in cpp.find_definitions(HOST, "a.mm") if d.kind == "function"]
    assert names == ["helper", "kernel_mps"]
    edited = HOST.replace("static void helper() { int x = 1; }\n", "")
    assert [d.name for d in cpp.find_definitions(edited, "a.mm") if d.kind == "function"] == ["kernel_mps"]
    assert {d.location.path for d in cpp.find_definitions(HOST, "b.mm")} == {"b.mm"}
    mine = cpp.find_definitions(HOST, "a.mm")
    mine.clear()  # a caller's list: the kept result is not touched
    assert [d.name for d in cpp.find_definitions(HOST, "a.mm") if d.kind == "function"] == names


def test_an_unscannable_text_is_refused_every_time():
    broken = HOST.replace("void kernel_mps() { helper(); }", "void kernel_mps() { helper();")
    for _ in range(2):
        with pytest.raises(MpsgenError):
            cpp.find_definitions(broken, "a.mm")


def test_the_memo_keeps_only_the_last_texts():
    for i in range(cpp.CACHED_TEXTS + 20):
        cpp.mask_code(f"int x{i}; // {i}\n")
    assert cpp._mask_code.cache_info().currsize == cpp.CACHED_TEXTS
    misses = cpp._mask_code.cache_info().misses
    assert cpp.mask_code("int x0; // 0\n") == "int x0;     \n"  # the oldest went: computed again, the same
    assert cpp._mask_code.cache_info().misses == misses + 1


def test_list_macros_follow_the_text():
    from mpsgen.edit.kernel import find_list_macros

    text = "#define REGISTER_LIST(T) \\\n  REGISTER_UNARY_OP(a, T, T); \\\n  REGISTER_UNARY_OP(b, T, T)\n\nREGISTER_LIST(float);\n"
    first = find_list_macros(text)
    assert [m.ops for m in first] == [("a", "b")]
    edited = text.replace("REGISTER_UNARY_OP(b, T, T)", "REGISTER_UNARY_OP(b, T, T); \\\n  REGISTER_UNARY_OP(c, T, T)")
    assert [m.ops for m in find_list_macros(edited)] == [("a", "b", "c")]
    first.clear()  # a caller's list: the kept result is not touched
    assert [m.ops for m in find_list_macros(text)] == [("a", "b")]


def test_a_workspace_without_reports_holds_the_same_texts():
    checkout = Checkout(FIXTURE_CHECKOUT)
    rel = "aten/src/ATen/native/mps/operations/UnaryOps.mm"
    text = checkout.read(rel) + "// added\n"
    with_reports, texts_only = Workspace(checkout), Workspace(checkout, reports=False)
    for ws in (with_reports, texts_only):
        ws.apply(FileChange(rel, text, (), ()))
        assert ws.read(rel) == text
    assert texts_only.planned_texts() == with_reports.planned_texts()


@pytest.mark.parametrize(("command", "op"), [("migrate", "sgn"), ("migrate", "threshold"), ("migrate", "frac"),
                                           ("new-op", "special_ndtri"), ("new-op", "sgn"), ("new-op", "asinh")])
def test_confirming_refuses_as_the_command_does(tmp_path, command, op):
    """migrate_refusal (planned on a texts-only Workspace) and `mpsgen COMMAND OP --dry-run` agree:
    both complete, or both refuse with the same message."""
    root = copy_checkout(tmp_path)
    refusal = migrate_refusal(Checkout(root), op, mode=command)
    result = run_cli(["-C", str(root), command, op, "--dry-run"])
    if refusal is None:
        assert result.exit_code == 0, result.stderr
        assert result.stdout.startswith("diff --git")
    else:
        assert result.exit_code == 2
        assert refusal.message in result.stderr


NF = "aten/src/ATen/native/native_functions.yaml"


def test_an_entry_that_validated_is_kept_until_its_lines_change(tmp_path, monkeypatch):
    """The yaml entries' ruamel.yaml validation is kept in the user cache per entry text: a second
    run reads it from there, and an edit of the entry's lines is parsed (and refused) afresh."""
    from mpsgen.read.cache import cache_file

    monkeypatch.setenv("MPSGEN_CACHE_DIR", str(tmp_path / "cache"))
    root = copy_checkout(tmp_path)
    first = run_cli(["-C", str(root), "new-op", "hypot", "--dry-run"])
    assert first.exit_code == 0, first.stderr
    kept = cache_file(root, "valid-entry-hypot.out", NF)
    assert kept.is_file()
    again = run_cli(["-C", str(root), "new-op", "hypot", "--dry-run"])
    assert again.exit_code == 0 and again.stdout == first.stdout
    path = root / NF
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("    CPU, CUDA: hypot_out\n  tags: pointwise\n",
                                 "    CPU, CUDA: hypot_out\n  tags: [pointwise\n", 1), encoding="utf-8")
    broken = run_cli(["-C", str(root), "new-op", "hypot", "--dry-run"])
    assert broken.exit_code == 2
    assert "malformed YAML at column 1: expected ',' or ']'" in broken.stderr
    path.write_text(text, encoding="utf-8")
    assert run_cli(["-C", str(root), "new-op", "hypot", "--dry-run"]).stdout == first.stdout


def test_a_plan_that_renders_nothing_loads_no_template_engine(tmp_path):
    """Templates builds its jinja2 environment on the first render (an op already native renders none)."""
    from mpsgen.edit.templates import Templates

    templates = Templates(tmp_path)
    assert templates._env is None
    assert templates.exists("functor_expr.metal.j2") is not templates.exists("no-such-template.j2")
    assert templates._env is not None


def test_compiled_templates_are_kept_until_the_template_changes(tmp_path, monkeypatch):
    """jinja2's bytecode cache in the user cache directory: a template edited since is compiled
    afresh (a checkout's override here), and with the cache off or unwritable nothing is kept."""
    from mpsgen.edit.templates import OVERRIDE_DIR, Templates

    monkeypatch.setenv("MPSGEN_CACHE_DIR", str(tmp_path / "cache"))
    override = tmp_path / "pytorch" / OVERRIDE_DIR
    override.mkdir(parents=True)
    (override / "x.j2").write_text("first {{ v }}\n", encoding="utf-8")
    assert Templates(tmp_path / "pytorch").render("x.j2", v=1) == "first 1\n"
    kept = list((tmp_path / "cache" / "templates").iterdir())
    assert len(kept) == 1
    assert Templates(tmp_path / "pytorch").render("x.j2", v=2) == "first 2\n"  # from the kept bytecode
    (override / "x.j2").write_text("second {{ v }}\n", encoding="utf-8")
    assert Templates(tmp_path / "pytorch").render("x.j2", v=3) == "second 3\n"
    monkeypatch.setenv("MPSGEN_CACHE_DIR", str(tmp_path / "off"))
    monkeypatch.setenv("MPSGEN_NO_CACHE", "1")
    assert Templates(tmp_path / "pytorch").render("x.j2", v=4) == "second 4\n"
    assert not (tmp_path / "off").exists()
    monkeypatch.delenv("MPSGEN_NO_CACHE")
    (tmp_path / "file").write_text("", encoding="utf-8")
    monkeypatch.setenv("MPSGEN_CACHE_DIR", str(tmp_path / "file" / "cache"))  # cannot be made
    assert Templates(tmp_path / "pytorch").render("x.j2", v=5) == "second 5\n"


def test_rendered_templates_are_kept_by_sources_and_context(tmp_path, monkeypatch):
    """A rendering of plain data is kept in the user cache: the same template sources and context
    render without jinja2; another context, an edited template (a checkout's override here) or a
    context that is not plain data render afresh."""
    from mpsgen.edit.templates import OVERRIDE_DIR, Templates
    from mpsgen.facts.params import ParamField

    monkeypatch.setenv("MPSGEN_CACHE_DIR", str(tmp_path / "cache"))
    override = tmp_path / "pytorch" / OVERRIDE_DIR
    override.mkdir(parents=True)
    (override / "x.j2").write_text("{{ v }}{{ ' with a' if 'a' in s else '' }}\n", encoding="utf-8")
    rendered = []
    real = Templates._render
    monkeypatch.setattr(Templates, "_render", lambda self, name, context: rendered.append(name) or real(self, name, context))

    def render(**context):
        return Templates(tmp_path / "pytorch").render("x.j2", **context)

    assert render(v=1, s=frozenset("ab")) == "1 with a\n"
    assert render(v=1, s=frozenset("ba")) == "1 with a\n"  # the same set: kept
    assert len(rendered) == 1
    assert render(v=1, s=["a", "b"]) == "1 with a\n"  # a list is not the set: rendered
    assert render(v=2, s=frozenset("ab")) == "2 with a\n"
    assert len(rendered) == 3
    (override / "x.j2").write_text("now {{ v }}\n", encoding="utf-8")
    assert render(v=2, s=frozenset("ab")) == "now 2\n"
    assert len(rendered) == 4
    assert render(v=object.__name__, s=frozenset()) == "now object\n"
    for _ in range(2):
        assert render(v=2, s=object()) == "now 2\n"  # not plain data: every time
    assert len(rendered) == 7
    (override / "x.j2").write_text("{{ v.name }}: {{ v.declared }}\n", encoding="utf-8")
    field = ParamField("alpha", "scalar", "const Scalar&")  # a record of mpsgen's model: class and fields
    for _ in range(2):
        assert render(v=field, s=()) == "alpha: const Scalar&\n"
    assert render(v=ParamField("beta", "scalar", "const Scalar&"), s=()) == "beta: const Scalar&\n"
    assert len(rendered) == 9


def test_the_yaml_index_is_kept_until_the_file_changes(tmp_path, monkeypatch):
    """native_functions.yaml's `- func:` lines and full scan, kept in the user cache: what a later
    run reads from there is what the scanner reads, and an edited file is scanned afresh."""
    from mpsgen.facts.views import Views
    from mpsgen.read.cache import cache_file
    from mpsgen.read.nfyaml import scan_entries

    monkeypatch.setenv("MPSGEN_CACHE_DIR", str(tmp_path / "cache"))
    root = copy_checkout(tmp_path)

    def read():
        nf = Views(Workspace(Checkout(root)), disk_cache=True).native_functions
        return nf.op_names, nf.entries, nf.op_entries("hypot")

    fresh = tuple(scan_entries((root / NF).read_text(encoding="utf-8"), NF))
    cold = read()
    assert cache_file(root, "yaml-heads", NF).is_file() and cache_file(root, "yaml-entries", NF).is_file()
    warm = read()
    assert warm == cold and warm[1] == fresh
    assert [line.text for e in warm[1] for line in e.dispatch] == [line.text for e in fresh for line in e.dispatch]
    text = (root / NF).read_text(encoding="utf-8")
    (root / NF).write_text(text.replace("    CPU, CUDA: hypot_out\n", "    CPU, CUDA, MPS: hypot_out\n", 1)
                           + "\n- func: zzz_new(Tensor self) -> Tensor\n", encoding="utf-8")
    names, entries, hypot = read()
    assert names[-1] == "zzz_new" and "zzz_new" not in cold[0]
    assert entries == tuple(scan_entries((root / NF).read_text(encoding="utf-8"), NF))
    assert any(line.keys == ("CPU", "CUDA", "MPS") for e in hypot for line in e.dispatch)


def test_the_stubs_are_kept_until_a_header_changes(tmp_path, monkeypatch):
    """Every header's stubs, kept in the user cache while the headers (names and texts) hash the
    same: equal to a fresh read, and an edited or a new header is read afresh."""
    from mpsgen.read.cache import cache_file
    from mpsgen.read.stubs import read_stubs

    monkeypatch.setenv("MPSGEN_CACHE_DIR", str(tmp_path / "cache"))
    root = copy_checkout(tmp_path)
    header = root / "aten/src/ATen/native/BinaryOps.h"

    def both():
        return read_stubs(Checkout(root), disk_cache=True), read_stubs(Checkout(root))

    cached, fresh = both()
    assert cache_file(root, "stubs", "aten/src/ATen/native").is_file()
    assert cached == fresh and list(cached) == list(fresh) and "hypot_stub" in cached
    assert both()[0] == fresh
    header.write_text(header.read_text(encoding="utf-8").replace("hypot_stub", "hypot2_stub"), encoding="utf-8")
    cached, fresh = both()
    assert cached == fresh and "hypot2_stub" in cached and "hypot_stub" not in cached
    (root / "aten/src/ATen/native/Extra.h").write_text(
        "using extra_fn = void(*)(TensorIteratorBase&);\nDECLARE_DISPATCH(extra_fn, extra_stub)\n", encoding="utf-8")
    cached, fresh = both()
    assert cached == fresh and cached["extra_stub"].location.path == "aten/src/ATen/native/Extra.h"


def test_a_kernel_plan_without_reports_writes_the_same_text():
    """plan_kernel(reports=False), what a confirmation plans: the same new text (functor, list
    macros and explicit registrations), no changes or notes."""
    from pathlib import Path

    from mpsgen.edit.kernel import plan_kernel
    from mpsgen.facts.choice import registrations_for

    rel = "aten/src/ATen/native/mps/kernels/ListMacros.metal"
    text = (Path(__file__).resolve().parent / "data" / "listmacro" / "ListMacros.metal").read_text(encoding="utf-8")
    functor = "struct xi_functor {\n  template <typename T>\n  inline T operator()(const T x) {\n    return x;\n  }\n};\n"
    registrations = registrations_for("xi", 1, False, ("float", "int2float", "complex", "integer"),
                                      frozenset({"REGISTER_UNARY_OP"}), rel)
    full = plan_kernel(text, rel, "xi", functor, registrations)
    bare = plan_kernel(text, rel, "xi", functor, registrations, reports=False)
    assert full.changes and bare.text == full.text != text
    assert bare.changes == () and bare.notes == ()


def test_scans_opinfo_index_is_kept_until_the_file_changes(tmp_path, monkeypatch):
    """scan's count of common_mps.py keys per op reads each OpInfo file's calls from the user cache
    while the file hashes the same: the same counts as without the cache, and an OpInfo renamed
    since moves its keys."""
    from mpsgen.commands.scan import _xfail_by_op
    from mpsgen.facts.views import Views
    from mpsgen.read.cache import cache_file

    monkeypatch.setenv("MPSGEN_CACHE_DIR", str(tmp_path / "cache"))
    root = copy_checkout(tmp_path)
    cmi = "torch/testing/_internal/common_methods_invocations.py"

    def counts(cached: bool):
        monkeypatch.setenv("MPSGEN_NO_CACHE", "" if cached else "1")
        return _xfail_by_op(Views(Workspace(Checkout(root)), disk_cache=True), [])

    cold = counts(True)
    assert cache_file(root, "scan-opinfo-ops", cmi).is_file()
    assert counts(True) == cold == counts(False) and "atan2" in cold
    path = root / cmi
    path.write_text(path.read_text(encoding="utf-8").replace("'atan2'", "'atan2', aten_name='zzz_renamed'", 1),
                    encoding="utf-8")
    edited = counts(True)
    assert edited == counts(False) != cold
    assert edited["zzz_renamed"] == cold["atan2"]


def test_the_indented_json_is_json_dumps_text():
    import json

    from mpsgen.render.jsontext import dumps_indented

    doc = {"a": [1, 2.5, -0.0, 1e300, True, False, None, "é\"\\\n\t\u2028", [], {}, [[{}]], ()],
           "": {"nested": {"deeper": [{"x": 1}, [1, [2, [3]]]]}}, 1: "int key", 2.5: "float key",
           True: "bool key", None: "none key", "nan": float("nan"), "inf": [float("inf"), float("-inf")],
           "big": 10**30, "tuple": (1, "two")}
    for value in (doc, [], {}, "s", 3, None, [doc, doc]):
        for indent in (2, 4):
            assert dumps_indented(value, indent) == json.dumps(value, indent=indent)
    with pytest.raises(TypeError):  # what json.dumps says of a value it cannot write
        dumps_indented({"a": {1, 2}})


def test_scan_json_is_the_standard_encoders_text(tmp_path):
    import json

    result = run_cli(["-C", str(FIXTURE_CHECKOUT), "scan", "--json"])
    assert result.exit_code == 0
    assert result.stdout == json.dumps(json.loads(result.stdout), indent=2) + "\n"


def test_host_file_definitions_are_kept_until_the_file_changes(tmp_path, monkeypatch):
    """A host file's definitions (what the legacy step removes from), kept in the user cache while
    the file hashes the same: equal to a fresh scan, an edited file is scanned afresh, and an
    edited text in the Workspace is never taken from the cache."""
    from mpsgen.facts.views import Views
    from mpsgen.read.cache import cache_file

    monkeypatch.setenv("MPSGEN_CACHE_DIR", str(tmp_path / "cache"))
    root = copy_checkout(tmp_path)
    rel = "aten/src/ATen/native/mps/operations/UnaryOps.mm"

    def definitions(ws=None):
        views = Views(ws or Workspace(Checkout(root)), disk_cache=True)
        return views.definitions(rel), cpp.find_definitions(views.ws.read(rel), rel)

    def same(found, fresh):
        return found == fresh and [d.identifiers for d in found] == [d.identifiers for d in fresh]

    cold, fresh = definitions()
    assert cache_file(root, "definitions", rel).is_file() and same(cold, fresh)
    warm, _ = definitions()
    assert same(warm, fresh) and warm is not cold
    text = (root / rel).read_text(encoding="utf-8")
    (root / rel).write_text(text + "\nstatic void zzz_added_helper() {}\n", encoding="utf-8")
    edited, fresh = definitions()
    assert same(edited, fresh) and edited[-1].name == "zzz_added_helper"
    ws = Workspace(Checkout(root))
    ws.write(rel, text)  # the Workspace's own text: found, not read from the cache
    planned, fresh = definitions(ws)
    assert same(planned, fresh) and all(d.name != "zzz_added_helper" for d in planned)


def test_c10_functions_are_kept_until_a_header_changes(tmp_path, monkeypatch):
    """The c10::metal functions, kept in the user cache while c10/metal's headers (names and
    texts) hash the same; an edited or new header is read afresh, a Workspace's edit never cached."""
    from mpsgen.read.c10lib import checkout_functions
    from mpsgen.read.cache import cache_file

    monkeypatch.setenv("MPSGEN_CACHE_DIR", str(tmp_path / "cache"))
    root = copy_checkout(tmp_path)
    header = root / "c10/metal/utils.h"
    if not header.is_file():
        header = sorted((root / "c10/metal").glob("*.h"))[0]

    def both(ws=None):
        ws = ws or Workspace(Checkout(root))
        return checkout_functions(ws, disk_cache=True), checkout_functions(ws)

    cached, fresh = both()
    assert cache_file(root, "c10-functions-v2", "c10/metal").is_file() and cached == fresh and fresh
    assert both()[0] == fresh
    text = header.read_text(encoding="utf-8")
    header.write_text(text + "\ninline float zzz_added(float x) {\n  return x;\n}\n", encoding="utf-8")
    cached, fresh = both()
    assert cached == fresh and "zzz_added" in cached
    (root / "c10/metal/zzz_new.h").write_text("inline float zzz_new_fn(float x) {\n  return x;\n}\n", encoding="utf-8")
    assert "zzz_new_fn" in both()[0]
    ws = Workspace(Checkout(root))
    ws.write(str(header.relative_to(root)), text)  # planned: found, not cached
    cached, fresh = both(ws)
    assert cached == fresh and "zzz_added" not in cached


def test_a_kernel_files_literal_reading_survives_the_user_cache():
    """Views.kernel keeps a checkout kernel file's KernelFile as JSON: read back, it is the same,
    a functor whose braces do not balance included."""
    import json

    from mpsgen.read.kernelfile import kernel_file_from_json, kernel_file_to_json, read_kernel_file

    kernels = sorted((FIXTURE_CHECKOUT / "aten/src/ATen/native/mps/kernels").glob("*.metal"))
    texts = [(f"k/{p.name}", p.read_text(encoding="utf-8")) for p in kernels]
    texts.append(("k/Broken.metal", "struct ok_functor {\n  int x;\n};\nstruct bad_functor {\n  int y;\n"
                                    "REGISTER_UNARY_OP(ok, float, float);\n"))
    for rel, text in texts:
        read = read_kernel_file(text, rel, strict=False)
        back = kernel_file_from_json(json.loads(json.dumps(kernel_file_to_json(read))), rel)
        assert (back.path, back.functors, back.registrations, back.own_macros) == \
            (read.path, read.functors, read.registrations, read.own_macros)
        assert {n: (str(e), e.hint) for n, e in back.broken.items()} == {n: (str(e), e.hint) for n, e in read.broken.items()}
    assert list(read.broken) == ["bad"] and read.functors and read.registrations  # the last, broken one
