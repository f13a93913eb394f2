"""The C++ / Objective-C++ scanner: small inputs, one tricky construct each."""

from __future__ import annotations

import textwrap

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mpsgen.read.cpp import conditions_by_line, find_definitions, find_directives, identifiers, mask_code, match_brace
from mpsgen.errors import MpsgenError
from mpsgen.model import Location


def src(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def kinds_names(text: str) -> list[tuple[str, str]]:
    return [(d.kind, d.name) for d in find_definitions(text, "f.mm") if d.kind != "namespace"]


def only(text: str, kind: str | None = None):
    defs = [d for d in find_definitions(text, "f.mm") if d.kind != "namespace" and (kind is None or d.kind == kind)]
    assert len(defs) == 1, defs
    return defs[0]


# -- mask_code / match_brace ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a // {\nb", "a     \nb"),
        ("a /* { } */ b", "a           b"),
        ('s = "x{\\"}";', 's = "     ";'),
        ("c = '{'; d = '\\'';", "c = ' '; d = '  ';"),
        ('R"X(a)"{)X" + 1', 'R"X(    )X" + 1'),
        ("n = 1'000'000; c = '}';", "n = 1'000'000; c = ' ';"),
        ("// a \\\n continued {\nx", "      \n            \nx"),
        ('u8R"(})"', 'u8R"( )"'),
    ],
)
def test_mask_code_blanks_comments_and_literals(text, expected):
    assert mask_code(text) == expected
    assert len(mask_code(text)) == len(text)


def test_match_brace_skips_masked_braces():
    text = 'f() { s = "}"; /* } */ { } }'
    masked = mask_code(text)
    assert match_brace(masked, text.index("{")) == len(text) - 1


def test_match_brace_reports_unbalanced():
    assert match_brace("{ {", 0) == -1


# -- identifiers --------------------------------------------------------------------------------------


def test_identifiers_ignore_comments_strings_and_numbers():
    masked = mask_code('x = atan2(a, 0x1f) + 1.5e3f; // atan2\ny = "atan2"; z = 1\'000;')
    ids = identifiers(masked)
    assert ids["atan2"] == 1
    assert ids["a"] == 1
    assert "x1f" not in ids and "e3f" not in ids and "f" not in ids


def test_identifiers_count_objc_and_blocks():
    ids = identifiers(mask_code("auto b = ^MPSGraphTensor*(MPSGraph* g) { return [g tanhWithTensor:t name:nil]; };"))
    assert ids["MPSGraph"] == 1 and ids["tanhWithTensor"] == 1 and ids["nil"] == 1


# -- directives ---------------------------------------------------------------------------------------


def test_directive_continuation_lines():
    text = src(
        """
        #define M(a) \\
          foo(a);   \\
          bar(a)
        int x;
        """
    )
    (d,) = find_directives(text)
    assert d.word == "define" and d.name == "M" and d.line == 1
    assert text[d.start : d.end] == "\n".join(text.splitlines()[:3]) + "\n"


def test_hash_inside_raw_string_or_comment_is_not_a_directive():
    text = 'auto s = R"M(\n#include <metal_stdlib>\n)M";\n/*\n#define X\n*/\n#pragma once\n'
    assert [d.word for d in find_directives(text)] == ["pragma"]


def test_stringification_inside_a_define_stays_in_the_define():
    text = "#define S(x) \\\n  #x\nint y;\n"
    assert [(d.word, d.line) for d in find_directives(text)] == [("define", 1)]


# -- definitions: the forms ---------------------------------------------------------------------------


def test_torch_impl_func_is_named_by_its_macro_argument():
    d = only("TORCH_IMPL_FUNC(atan2_out_mps)(const Tensor& a, const Tensor& out) {\n  f(a);\n}\n")
    assert (d.kind, d.name, d.line_count) == ("impl-func", "atan2_out_mps", 3)


def test_torch_impl_func_with_parameters_on_the_next_line():
    d = only("TORCH_IMPL_FUNC(logit_backward_out_mps)\n(const Tensor& g, const Tensor& out) {\n}\n")
    assert (d.kind, d.name, d.location) == ("impl-func", "logit_backward_out_mps", Location("f.mm", 1))


@pytest.mark.parametrize(
    ("text", "name", "static"),
    [
        ("Tensor& hardswish_out_mps(const Tensor& self, Tensor& out) {\n  return out;\n}\n", "hardswish_out_mps", False),
        ("Tensor hardswish_mps(const Tensor& self)\n{\n  return self;\n}\n", "hardswish_mps", False),
        ("static void helper(const Tensor& t) {}\n", "helper", True),
        ("static inline MPSGraphTensor* trunc_tensor(MPSGraph* g, MPSGraphTensor* t) {}\n", "trunc_tensor", True),
        ("template <typename T, int N = sizeof(T)>\nstatic T twice(T x) {\n  return x + x;\n}\n", "twice", True),
        ("std::tuple<Tensor&, Tensor&> pair_out(const Tensor& a) {}\n", "pair_out", False),
        ("std::function<bool(int)> make_pred() {}\n", "make_pred", False),
        ("void Foo::bar() const {}\n", "bar", False),
        # explicit specializations (a real host file names a Metal type this way): the template's name
        ("template <>\nstd::string type_name<int64_t>() {\n  return \"long\";\n}\n", "type_name", False),
        ("template <>\nstatic inline int width<std::pair<int, int>>(int x) {}\n", "width", True),
        ("bool operator>(const A& a, const A& b) {}\n", "operator>", False),
    ],
)
def test_function_definitions(text, name, static):
    d = only(text)
    assert (d.kind, d.name, d.is_static) == ("function", name, static)


def test_macro_instances_with_and_without_semicolon():
    text = src(
        """
        CREATE_UNARY(asinh_out_mps, asinh)
        CREATE_UNARY(acosh_out_mps, acosh);
        REGISTER_DISPATCH(atan2_stub, &atan2_kernel)
        """
    )
    defs = find_definitions(text, "f.mm")
    assert [(d.kind, d.name, d.args) for d in defs] == [
        ("macro-instance", "CREATE_UNARY", ("asinh_out_mps", "asinh")),
        ("macro-instance", "CREATE_UNARY", ("acosh_out_mps", "acosh")),
        ("macro-instance", "REGISTER_DISPATCH", ("atan2_stub", "atan2_kernel")),
    ]
    assert [d.location.line for d in defs] == [1, 2, 3]


def test_macro_instance_followed_by_a_function():
    text = "GEN(sinh_out_mps, sinh)\nTORCH_IMPL_FUNC(frac_out_mps)(const Tensor& s) {\n}\n"
    assert kinds_names(text) == [("macro-instance", "GEN"), ("impl-func", "frac_out_mps")]


def test_multiline_define_is_one_macro_definition():
    text = src(
        """
        int a;

        #define GEN(func_out, sel)                                      \\
          TORCH_IMPL_FUNC(func_out)(const Tensor& self) {               \\
            run(^MPSGraphTensor*(MPSGraph* g) { return [g sel]; });     \\
          }

        GEN(x_out_mps, x)
        """
    )
    macro = only(text, "macro")
    assert macro.name == "GEN" and macro.line_count == 4 and macro.location.line == 3
    assert text[macro.start : macro.end].startswith("#define GEN")
    assert text[macro.start : macro.end].endswith("  }\n\n")


def test_prototypes_variables_types_and_usings():
    text = src(
        """
        using is_noop_p = std::function<bool(const Tensor&)>;
        typedef MPSGraphTensor* (^UnaryOpBlock)(MPSGraph*, MPSGraphTensor*);
        static void helper(const Tensor& t);
        static const std::unordered_map<std::string, int> table = {{"a{", 1}, {"b", 2}};
        static auto blk = ^MPSGraphTensor*(MPSGraph* g) { return nil; };
        static auto lam = [](int x) { return x; };
        struct CachedGraph : public MPSCachedGraph {
          CachedGraph(MPSGraph* g) : MPSCachedGraph(g) {}
        };
        static MetalShaderLibrary lib(R"METAL(kernel void k() { })METAL");
        """
    )
    assert kinds_names(text) == [
        ("declaration", ""),
        ("declaration", ""),
        ("declaration", "helper"),
        ("declaration", ""),
        ("declaration", ""),
        ("declaration", ""),
        ("type", "CachedGraph"),
        ("declaration", "lib"),
    ]


def test_nested_namespaces_and_their_members():
    text = src(
        """
        namespace at::native {
        namespace mps {
        static void helper() {}
        } // namespace mps
        namespace {
        void anon() {}
        }
        TORCH_IMPL_FUNC(k)(const Tensor& t) {}
        } // namespace at::native
        """
    )
    defs = find_definitions(text, "f.mm")
    assert [(d.kind, d.name, d.namespace) for d in defs] == [
        ("namespace", "at::native", ""),
        ("namespace", "mps", "at::native"),
        ("function", "helper", "at::native::mps"),
        ("namespace", "", "at::native"),
        ("function", "anon", "at::native"),
        ("impl-func", "k", "at::native"),
    ]


def test_bodies_with_blocks_lambdas_autoreleasepool_and_tricky_literals():
    text = src(
        """
        TORCH_IMPL_FUNC(k_out_mps)(const Tensor& self, const Tensor& out) {
          @autoreleasepool {
            std::string key = "k_out_mps{" + getTensorsStringKey({self}) + "}";  // } in a comment
            auto g = LookUpOrCreateCachedGraph<CachedGraph>(key, [&](auto mpsGraph, auto newCachedGraph) {
              newCachedGraph->t = ^MPSGraphTensor*(MPSGraph* m) { return nil; }(mpsGraph);
            });
            char open = '{', quote = '\\'';
            auto shader = R"SH(kernel void f() { if (x) { )SH";
            dispatch_sync(queue, ^() {
              run(1'000'000);
            });
          }
        }

        void after() {}
        """
    )
    impl, after = find_definitions(text, "f.mm")
    assert (impl.name, impl.line_count) == ("k_out_mps", 13)
    assert impl.identifiers["LookUpOrCreateCachedGraph"] == 1
    assert "kernel" not in impl.identifiers  # raw-string contents are not code
    assert "getTensorsStringKey" in impl.identifiers and "comment" not in impl.identifiers
    assert after.name == "after" and after.location.line == 15


def test_stray_semicolon_after_a_body_belongs_to_it():
    text = "MPSGraphTensor* trunc_tensor(MPSGraph* g, MPSGraphTensor* t) {\n  return t;\n};\n\nvoid next() {}\n"
    first = find_definitions(text, "f.mm")[0]
    assert text[first.start : first.end] == "MPSGraphTensor* trunc_tensor(MPSGraph* g, MPSGraphTensor* t) {\n  return t;\n};\n\n"
    assert kinds_names(text) == [("function", "trunc_tensor"), ("function", "next")]


def test_define_directly_followed_by_its_instances():
    text = "#define GEN(a) \\\n  void a() {}\nGEN(x)\nGEN(y)\n\nvoid z() {}\n"
    x = [d for d in find_definitions(text, "f.mm") if d.args == ("x",)][0]
    assert text[: x.start] + text[x.end :] == "#define GEN(a) \\\n  void a() {}\nGEN(y)\n\nvoid z() {}\n"


def test_objc_interface_block():
    text = "@interface Foo : NSObject {\n  int x;\n}\n@end\nvoid f() {}\n"
    assert kinds_names(text) == [("objc", ""), ("function", "f")]


def test_preprocessor_inside_a_body_when_balanced():
    text = src(
        """
        void f() {
        #if defined(__APPLE__)
          if (a) {
            g();
          }
        #else
          h();
        #endif
        #define LOCAL_BRACE {
        }
        void g() {}
        """
    )
    assert kinds_names(text) == [("function", "f"), ("function", "g")]


def test_conditional_definitions_at_namespace_scope():
    text = "#if X\nvoid f() {}\n#else\nvoid f(int) {}\n#endif\n"
    assert kinds_names(text) == [("function", "f"), ("function", "f")]


# -- definitions: spans -------------------------------------------------------------------------------


def test_span_takes_attached_comments_and_the_blank_line_below():
    text = src(
        """
        void a() {}

        // about b {
        /* more */
        void b() {}

        void c() {}
        """
    )
    b = [d for d in find_definitions(text, "f.mm") if d.name == "b"][0]
    assert text[b.start : b.end] == "// about b {\n/* more */\nvoid b() {}\n\n"
    assert b.location.line == 5 and b.line_count == 3
    assert text[: b.start] + text[b.end :] == "void a() {}\n\nvoid c() {}\n"


def test_comment_separated_by_a_blank_line_is_not_attached():
    text = "// file header\n\nvoid f() {}\n\nvoid g() {}\n"
    f = [d for d in find_definitions(text, "f.mm") if d.name == "f"][0]
    assert text[f.start : f.end] == "void f() {}\n\n"


def test_last_item_of_a_scope_takes_the_blank_line_above():
    text = "namespace mps {\nvoid a() {}\n\nvoid b() {}\n} // namespace mps\n"
    b = [d for d in find_definitions(text, "f.mm") if d.name == "b"][0]
    assert text[: b.start] + text[b.end :] == "namespace mps {\nvoid a() {}\n} // namespace mps\n"


def test_item_inside_a_group_of_lines_takes_no_blank_line():
    text = "G(a)\nG(b)\nG(c)\n\nvoid f() {}\n"
    c = [d for d in find_definitions(text, "f.mm") if d.args == ("c",)][0]
    assert text[: c.start] + text[c.end :] == "G(a)\nG(b)\n\nvoid f() {}\n"


def test_first_item_after_an_opening_brace_takes_the_blank_below():
    text = "namespace mps {\nvoid a() {}\n\nvoid b() {}\n}\n"
    a = [d for d in find_definitions(text, "f.mm") if d.name == "a"][0]
    assert text[: a.start] + text[a.end :] == "namespace mps {\nvoid b() {}\n}\n"


def test_crlf_text_keeps_its_line_endings():
    text = "void a() {}\r\n\r\nvoid b() {\r\n}\r\n"
    b = [d for d in find_definitions(text, "f.mm") if d.name == "b"][0]
    assert text[b.start : b.end] == "\r\nvoid b() {\r\n}\r\n"  # the last item takes the blank above
    assert text[: b.start] + text[b.end :] == "void a() {}\r\n"


# -- refusals -----------------------------------------------------------------------------------------


def assert_refused(text: str, line: int, words: str):
    with pytest.raises(MpsgenError) as info:
        find_definitions(text, "ops/F.mm")
    assert info.value.location == Location("ops/F.mm", line)
    assert words in str(info.value)
    assert info.value.hint


def test_refuses_an_unclosed_body():
    assert_refused("void a() {}\n\nvoid b() {\n  if (x) {\n}\n", 3, "never closes")


def test_refuses_a_stray_closing_brace():
    assert_refused("void a() {}\n}\nvoid b() {}\n", 2, "unbalanced closing brace")


def test_refuses_an_if_branch_splitting_a_body():
    text = src(
        """
        void a() {}

        TORCH_IMPL_FUNC(k_out_mps)(const Tensor& self) {
        #if USE_NEW
          if (self.is_complex()) {
        #else
          if (self.is_floating_point()) {
        #endif
            f();
          }
        }
        """
    )
    assert_refused(text, 3, "#if at line 4")


def test_refuses_a_body_opened_by_a_macro():
    text = src(
        """
        #define BEGIN_IMPL(name) TORCH_IMPL_FUNC(name)(const Tensor& self) {
        #define END_IMPL }

        BEGIN_IMPL(k_out_mps)
          f(self);
        END_IMPL
        """
    )
    assert_refused(text, 4, "hidden in the macro defined at line 1")


def test_operator_assignment_is_a_function_not_an_initializer():
    assert kinds_names("Foo& Foo::operator=(const Foo& o) {\n  return *this;\n}\n") == [("function", "operator=")]


def test_a_torch_library_block_is_delimited():
    text = ('TORCH_LIBRARY_IMPL(aten, MPS, m) {\n  m.impl("k.out", k_out_mps);\n}\n\n'
            "Tensor& k_out_mps(const Tensor& s, Tensor& out) {\n  return out;\n}\n")
    assert kinds_names(text) == [("library-block", "TORCH_LIBRARY_IMPL"), ("function", "k_out_mps")]


def test_refuses_a_body_whose_name_is_a_macro():
    assert_refused("DEFINE_KERNEL(k) {\n  f();\n}\n", 1, "cannot tell what this body defines")


def test_refuses_an_unclosed_namespace():
    assert_refused("namespace at::native {\nvoid f() {}\n", 2, "never closed")


@given(st.text(alphabet=st.sampled_from(list("ab{}()/*'\"\\R\n #;x1_")), max_size=80))
def test_mask_code_keeps_offsets_and_newlines(text):
    masked = mask_code(text)
    assert len(masked) == len(text)
    assert [i for i, c in enumerate(masked) if c == "\n"] == [i for i, c in enumerate(text) if c == "\n"]


@given(st.text(alphabet=st.sampled_from(list("ab{}()/*'\"\\R\n #;x1_")), max_size=80))
def test_scanner_either_delimits_or_refuses(text):
    try:
        defs = find_definitions(text, "f.mm")
    except MpsgenError as error:
        assert error.location is not None and error.location.path == "f.mm"
        return
    for d in defs:
        assert 0 <= d.start <= d.code_start < d.code_end <= d.end <= len(text) or d.code_start == d.code_end


def test_conditions_by_line():
    text = ("a\n"
            "#if __METAL_VERSION__  >= 310 // bfloat\n"
            "b\n"
            "#ifndef X\n"
            "c\n"
            "#else\n"
            "d\n"
            "#endif\n"
            "#endif\n"
            "e\n")
    outer = ("#if __METAL_VERSION__ >= 310",)
    assert conditions_by_line(text) == [(), (), outer, outer, outer + ("#ifndef X",), outer + ("#else",),
                                        outer + ("#else",), outer, (), (), ()]
