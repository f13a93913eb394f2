"""C++ read as a parser reads it (tree-sitter-cpp), handed to the rest of mpsgen as plain data.

tree-sitter parses a file without its include tree or the build's generated headers, recovers
locally around what it cannot read, and gives every node its byte span: on upstream's
`cpu/BinaryOpsKernel.cpp` it finds all 94 `cpu_kernel`/`cpu_kernel_vec` calls with their lambdas
in a few milliseconds, where libclang stops at the first header the checkout lacks. Macros that
expand to attributes (`C10_HOST_DEVICE`, `__ubsan_ignore_*__`) are blanked first, offsets kept, as
the preprocessor would drop them; with them blanked the real kernel files parse without an error
node in the functions mpsgen reads.

`parse(text) -> Syntax` (a frozen tree of `kind`, `start`/`end` character offsets, `field`,
`children`; `text_of(node)`), kept per text; `read_cpu_kernels(text, path) -> CpuKernels`: a
`cpu/*.cpp` file's stub registrations, function definitions (templates included, by name, with
their lines), `#include`s, `#define`s, and for a kernel function its scalar lambdas
(`ScalarLambda`: the lambda handed to `cpu_kernel` / `cpu_kernel_vec` first, its Vectorized twin
ignored, with the `AT_DISPATCH_*` call around it and the `if` branch it stands in)."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, replace

import tree_sitter
import tree_sitter_cpp

# Macros that expand to attributes or nothing where the kernels and Math.h use them (c10/macros,
# c10/util/Exception.h): blanked before parsing, as the preprocessor removes them.
ATTRIBUTE_MACROS = (
    "C10_HOST_DEVICE", "C10_DEVICE", "C10_HOST", "JITERATOR_HOST_DEVICE", "C10_ALWAYS_INLINE", "C10_NOINLINE",
    "C10_UNUSED", "C10_API", "TORCH_API", "__ubsan_ignore_undefined__", "__ubsan_ignore_float_divide_by_zero__",
    "__ubsan_ignore_signed_int_overflow__", "__ubsan_ignore_float_cast_overflow__",
)
_ATTRIBUTES = re.compile(r"\b(?:" + "|".join(map(re.escape, ATTRIBUTE_MACROS)) + r")\b"
                         r"|\bC10_CLANG_DIAGNOSTIC_\w+\([^)\n]*\)")
REGISTER_MACROS = ("REGISTER_DISPATCH", "ALSO_REGISTER_AVX512_DISPATCH", "ALSO_REGISTER_SVE256_DISPATCH",
                   "REGISTER_ARCH_DISPATCH")
KERNEL_CALLS = ("cpu_kernel", "cpu_kernel_vec")

_LANGUAGE = tree_sitter.Language(tree_sitter_cpp.language())


@dataclass(frozen=True)
class Syntax:
    """One node of the parse: its grammar `kind`, its span in the text (characters), the field its
    parent holds it in ("" when none), its children (every token included)."""

    kind: str
    start: int
    end: int
    field: str
    children: tuple[Syntax, ...]

    def child(self, field: str) -> Syntax | None:
        return next((c for c in self.children if c.field == field), None)

    def named(self) -> tuple[Syntax, ...]:
        """The children that are not punctuation or keywords."""
        return tuple(c for c in self.children if c.kind[:1].isalpha() and (c.children or c.kind in _LEAF_KINDS))

    def walk(self):
        stack = [self]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(node.children))


_LEAF_KINDS = frozenset({"identifier", "type_identifier", "field_identifier", "namespace_identifier", "number_literal",
                         "primitive_type", "true", "false", "null", "this", "string_content", "auto",
                         "statement_identifier", "raw_string_literal", "char_literal", "string_literal"})


@dataclass(frozen=True)
class Source:
    """A parsed text: `root`, and the text its offsets index (attribute macros blanked)."""

    text: str
    root: Syntax

    def text_of(self, node: Syntax) -> str:
        return self.text[node.start:node.end]

    def line_of(self, node: Syntax) -> int:
        return self.text.count("\n", 0, node.start) + 1

    def errors(self) -> int:
        return sum(1 for n in self.root.walk() if n.kind in ("ERROR", "MISSING"))


@functools.lru_cache(maxsize=128)
def parse(text: str) -> Source:
    """The text's parse, attribute macros blanked (offsets kept). Kept per text in process."""
    blanked = _ATTRIBUTES.sub(lambda m: " " * len(m.group()), text)
    data = blanked.encode("utf-8")
    tree = tree_sitter.Parser(_LANGUAGE).parse(data)
    if len(data) == len(blanked):
        def offset(b: int) -> int:
            return b
    else:  # non-ASCII text: byte offsets -> character offsets
        starts = [0] * (len(data) + 1)
        pos = 0
        for i, ch in enumerate(blanked):
            n = len(ch.encode("utf-8"))
            for k in range(n):
                starts[pos + k] = i
            pos += n
        starts[len(data)] = len(blanked)

        def offset(b: int) -> int:
            return starts[b]

    def convert(node, field: str) -> Syntax:
        children = []
        for i, child in enumerate(node.children):
            children.append(convert(child, node.field_name_for_child(i) or ""))
        kind = "MISSING" if node.is_missing else node.type
        return Syntax(kind, offset(node.start_byte), offset(node.end_byte), field, tuple(children))

    return Source(blanked, convert(tree.root_node, ""))


# ------------------------------------------------------------------------------------ kernel files


@dataclass(frozen=True)
class Dispatch:
    """An `AT_DISPATCH_*` call: the macro as written, the one it expands to (a file's own
    `#define` of one, followed), and the extra types it lists (`kHalf`, `kBFloat16`, `kBool`)."""

    macro: str
    expands_to: str
    extra: tuple[str, ...]
    line: int


@dataclass(frozen=True)
class ScalarLambda:
    """A scalar lambda handed to `cpu_kernel` / `cpu_kernel_vec` inside a kernel function."""

    kernel: str  # the kernel function holding it
    node: Syntax  # the lambda_expression
    params: tuple[tuple[str, str], ...]  # (type as written, name)
    returns: str  # the trailing return type, "" when none is written
    captures: str  # the capture list as written, e.g. "[=]"
    body: Syntax  # its compound statement
    dispatch: Dispatch | None  # the AT_DISPATCH_* call around it
    condition: str  # the `if` condition of the branch it stands in ("" at the top), "!" prefixed for an else
    line: int
    # constants of the scope it captures from, declared before it with a literal value
    # (`const scalar_t three(3.0f);`): (name, type as written, the literal)
    constants: tuple[tuple[str, str, str], ...] = ()
    # every name its scope declares before it with a value (`auto beta = beta_.to<scalar_t>();`):
    # (name, type as written, the value's node); what a captured name stands for
    scope: tuple[tuple[str, str, Syntax], ...] = ()
    # the kernel function's parameter names after the iterator (`beta_`, `threshold_`): the
    # stub's scalars as the kernel names them
    kernel_params: tuple[str, ...] = ()
    # every `if` branch it stands in, outermost first (as `condition`: "!" prefixed for an else)
    conditions: tuple[str, ...] = ()
    # each of `conditions`' condition expression (the node inside the `if`'s parentheses)
    condition_nodes: tuple[Syntax, ...] = ()


@dataclass(frozen=True)
class FunctionDef:
    """A function definition of the file (a template's `template <...>` included in `node`)."""

    name: str
    node: Syntax  # the template_declaration, or the function_definition
    line: int


@dataclass(frozen=True)
class CpuKernels:
    path: str
    source: Source
    registrations: dict  # stub -> (kernel function, line)
    functions: dict  # name -> tuple[FunctionDef, ...] in file order
    includes: tuple[str, ...]
    defines: dict  # file macro name -> its body text

    def lambdas(self, function: str) -> tuple[ScalarLambda, ...]:
        out = []
        for definition in self.functions.get(function, ()):
            out += _lambdas_in(self, function, definition.node)
        return tuple(out)


def read_cpu_kernels(text: str, path: str) -> CpuKernels:
    """A cpu/*.cpp file (or a header of helpers) as plain data."""
    source = parse(text)
    registrations: dict = {}
    functions: dict = {}
    includes = []
    defines = {}
    parents: dict[int, Syntax] = {}
    stack = [source.root]
    while stack:
        node = stack.pop()
        for child in node.children:
            parents[id(child)] = node
        stack.extend(reversed(node.children))
        if node.kind == "call_expression":
            function = node.child("function")
            if function is not None and source.text_of(function) in REGISTER_MACROS:
                args = [a for a in node.child("arguments").children if a.kind not in ("(", ")", ",")]
                if len(args) == 2:
                    target = source.text_of(args[1]).lstrip("&").strip()
                    registrations[source.text_of(args[0]).strip()] = (target.split("::")[-1], source.line_of(node))
        elif node.kind == "function_definition":
            name = _function_name(source, node)
            if name:
                parent = parents.get(id(node))
                outer = parent if parent is not None and parent.kind == "template_declaration" else None
                functions.setdefault(name, []).append(FunctionDef(name, outer or node, source.line_of(outer or node)))
        elif node.kind == "preproc_include":
            path_node = node.child("path")
            if path_node is not None:
                includes.append(source.text_of(path_node).strip("<>\""))
        elif node.kind == "preproc_function_def":
            name = node.child("name")
            value = node.child("value")
            if name is not None and value is not None:
                defines[source.text_of(name)] = source.text_of(value)
    ordered = {name: tuple(sorted(defs, key=lambda d: d.node.start)) for name, defs in functions.items()}
    return CpuKernels(path, source, registrations, ordered, tuple(includes), defines)


def _function_name(source: Source, node: Syntax) -> str:
    declarator = node.child("declarator")
    while declarator is not None and declarator.kind not in ("function_declarator",):
        declarator = declarator.child("declarator")
    if declarator is None:
        return ""
    name = declarator.child("declarator")
    return source.text_of(name).split("::")[-1] if name is not None else ""


def _lambdas_in(kernels: CpuKernels, function: str, definition: Syntax) -> list[ScalarLambda]:
    source = kernels.source
    found = []
    kernel_params = _parameter_names(source, definition)[1:]

    def visit(node: Syntax, dispatch: Dispatch | None, condition: str, consts: tuple = (), scope: tuple = (),
              chain: tuple = (), nodes: tuple = ()) -> None:
        if node.kind == "compound_statement":
            for child in node.children:
                visit(child, dispatch, condition, consts, scope, chain, nodes)
                consts = consts + _literal_constants(source, child)
                scope = scope + _declarations(source, child)
            return
        if node.kind == "call_expression":
            callee = node.child("function")
            name = source.text_of(callee) if callee is not None else ""
            if name.startswith("AT_DISPATCH_") or name in kernels.defines:
                dispatch = _dispatch(kernels, node, name) or dispatch
            elif name in KERNEL_CALLS:
                args = node.child("arguments")
                first = next((a for a in args.children if a.kind == "lambda_expression"), None)
                if first is not None:
                    found.append(replace(_scalar_lambda(source, function, first, dispatch, condition),
                                         constants=consts, scope=scope, kernel_params=kernel_params,
                                         conditions=chain, condition_nodes=nodes))
                return
        if node.kind == "if_statement":
            cond = node.child("condition")
            text = " ".join(source.text_of(cond).split()) if cond is not None else ""
            inner = _condition_value(cond)
            for child in node.children:
                if child.field == "consequence":
                    visit(child, dispatch, text, consts, scope, chain + (text,), nodes + (inner,))
                elif child.field == "alternative":
                    visit(child, dispatch, "!" + text, consts, scope, chain + ("!" + text,), nodes + (inner,))
                else:
                    visit(child, dispatch, condition, consts, scope, chain, nodes)
            return
        for child in node.children:
            visit(child, dispatch, condition, consts, scope, chain, nodes)

    visit(definition, None, "")
    return found


def _condition_value(cond: Syntax | None) -> Syntax | None:
    """The expression an `if`'s condition clause holds (`(eps < scalar_t(0))` -> `eps < scalar_t(0)`)."""
    if cond is None:
        return None
    inner = [c for c in cond.children if c.kind not in ("(", ")")]
    return inner[0] if len(inner) == 1 else cond


_LITERAL = re.compile(r"\(?\s*(?:([\w:]+)\s*\(\s*)?(-?\d[\d.]*(?:[eE][-+]?\d+)?[fF]?)\s*\)?\s*\)?")


def _literal_constants(source: Source, node: Syntax) -> tuple[tuple[str, str, str], ...]:
    """The names a declaration statement gives a literal value (`const scalar_t three(3.0f);`,
    `const auto six = scalar_t(6);`): (name, type, literal); its type is the declared one, or for
    `auto` the type the literal is converted to."""
    found = []
    for name, declared, value in _declarations(source, node):
        m = _LITERAL.fullmatch(source.text_of(value).strip())
        if m is None:
            continue
        kind = declared if declared not in ("auto", "") else (m.group(1) or "")
        if kind:
            found.append((name, kind, m.group(2)))
    return tuple(found)


def _declarations(source: Source, node: Syntax) -> tuple[tuple[str, str, Syntax], ...]:
    """The names a declaration statement gives a value (`auto beta = beta_.to<scalar_t>();`,
    `scalar_t value = value_scalar.to<scalar_t>();`): (name, type as written, the value's node)."""
    if node.kind != "declaration":
        return ()
    ptype = node.child("type")
    declared = source.text_of(ptype).strip() if ptype is not None else ""
    found = []
    for child in node.children:
        if child.kind == "init_declarator":
            name, value = child.child("declarator"), child.child("value")
            if name is not None and value is not None and name.kind == "identifier":
                if value.kind == "argument_list":  # `scalar_t threshold(threshold_.to<scalar_t>());`
                    inner = [c for c in value.children if c.kind not in ("(", ")", ",")]
                    if len(inner) != 1:
                        continue
                    value = inner[0]
                elif value.kind == "initializer_list":
                    continue
                found.append((source.text_of(name), declared, value))
        elif child.kind == "function_declarator" and child.field == "declarator":
            # `const scalar_t delta_val(delta);` reads as a function declaration (C++'s most vexing
            # parse) taking a parameter of type `delta`; in a function body it is a variable
            # initialised from the name: one parameter, a bare name with no declarator
            name, plist = child.child("declarator"), child.child("parameters")
            params = [p for p in (plist.children if plist is not None else ()) if p.kind not in ("(", ")", ",")]
            if name is None or name.kind != "identifier" or len(params) != 1:
                continue
            only = params[0]
            ptype = only.child("type")
            if only.kind == "parameter_declaration" and only.child("declarator") is None and ptype is not None \
                    and ptype.kind == "type_identifier" and len(only.children) == 1:
                found.append((source.text_of(name), declared, ptype))
    return tuple(found)


def _parameter_names(source: Source, definition: Syntax) -> tuple[str, ...]:
    """A function definition's parameter names, in order."""
    node = definition
    if node.kind == "template_declaration":
        node = next((c for c in node.children if c.kind == "function_definition"), node)
    declarator = node.child("declarator")
    while declarator is not None and declarator.kind != "function_declarator":
        declarator = declarator.child("declarator")
    plist = declarator.child("parameters") if declarator is not None else None
    names = []
    for p in (plist.children if plist is not None else ()):
        if p.kind in ("parameter_declaration", "optional_parameter_declaration"):
            d = p.child("declarator")
            names.append(source.text_of(d).lstrip("&*").strip() if d is not None else "")
    return tuple(names)


_AND = re.compile(r"_AND(\d*)$|_AND_HALF$")


def _dispatch(kernels: CpuKernels, call: Syntax, name: str) -> Dispatch | None:
    source = kernels.source
    args = [source.text_of(a).strip() for a in call.child("arguments").children if a.kind not in ("(", ")", ",")]
    expands_to = name
    if name in kernels.defines:  # a file macro: `_AT_DISPATCH_ALL_TYPES_AND_BOOL(TYPE, NAME, ...)`
        body = " ".join(kernels.defines[name].replace("\\\n", " ").split())
        m = re.match(r"(AT_DISPATCH_\w+)\s*\((.*)\)\s*$", body)
        if not m:
            return None
        expands_to = m.group(1)
        args = [a.strip() for a in m.group(2).split(",")]
    m = _AND.search(expands_to)
    count = 0
    if m and m.group(1) is not None:
        count = int(m.group(1) or 1)
    extra = tuple(args[:count])
    return Dispatch(name, expands_to, extra, source.line_of(call))


def _scalar_lambda(source: Source, function: str, node: Syntax, dispatch: Dispatch | None, condition: str) -> ScalarLambda:
    declarator = node.child("declarator")
    params: list[tuple[str, str]] = []
    returns = ""
    if declarator is not None:
        plist = declarator.child("parameters")
        for p in (plist.children if plist is not None else ()):
            if p.kind == "parameter_declaration":
                name = p.child("declarator")
                ptype = p.child("type")
                params.append((source.text_of(ptype) if ptype is not None else "",
                               source.text_of(name).lstrip("&*") if name is not None else ""))
        trailing = next((c for c in declarator.children if c.kind == "trailing_return_type"), None)
        if trailing is not None:
            returns = source.text_of(trailing).replace("->", "", 1).strip()
    captures = node.child("captures")
    return ScalarLambda(function, node, tuple(params), returns, source.text_of(captures) if captures is not None else "",
                        node.child("body"), dispatch, condition, source.line_of(node))


# where a value is read only for its truth: the operands of `&&`, `||`, `!`, a `bool(...)` /
# `static_cast<bool>(...)` conversion, the condition of `?:` or `if`
_TRUTH_OPERATORS = ("&&", "||")
_TRUTH_CASTS = ("bool", "static_cast<bool>")


def truth_operands(source: Source, lam: ScalarLambda) -> bool:
    """Whether the lambda reads each of its parameters only as a truth value (`a && b`,
    `bool(a) != bool(b)`, `!a`): then any type with a truth value (c10::complex: either part
    nonzero) gives the same result through it."""
    names = {name for _, name in lam.params}
    if not names:
        return False

    def visit(node: Syntax, truth: bool) -> bool:
        if node.kind == "identifier" and source.text_of(node) in names:
            return truth
        for child in node.children:
            if node.kind == "parenthesized_expression":
                inner = truth
            elif node.kind == "binary_expression":
                op = node.child("operator")
                inner = op is not None and source.text_of(op) in _TRUTH_OPERATORS and child.field in ("left", "right")
            elif node.kind == "unary_expression":
                op = node.child("operator")
                inner = op is not None and source.text_of(op) == "!" and child.field == "argument"
            elif node.kind == "conditional_expression" or node.kind == "if_statement":
                inner = child.field == "condition"
            elif node.kind == "condition_clause":
                inner = truth
            elif node.kind == "call_expression":
                function = node.child("function")
                inner = (function is not None and child.field == "arguments"
                         and re.sub(r"\s+", "", source.text_of(function)) in _TRUTH_CASTS)
            elif node.kind == "argument_list":
                inner = truth
            else:
                inner = False
            if not visit(child, inner):
                return False
        return True

    return visit(lam.body, False)
