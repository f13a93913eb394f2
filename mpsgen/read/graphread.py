"""The MPSGraph graph of a legacy MPS implementation, read as the compiler reads it.

`read_graph(text, path, name, definitions)` reads the function `name` of a host file (`operations/*.mm`):
a `TORCH_IMPL_FUNC`, a plain function, or a one-line instantiation of a file macro
(`CREATE_MPS_BINARY_COMPARISON_OP_FUNC(logical_and_out_mps, logicalAND, Tensor)`), and returns the
expression tree of message sends that builds the output tensor from the inputs (`GraphNode`, each with
its `path:line`), or the reason it cannot (`Graph.why`).

How it reads, and why so:
- the file's own `#define`s are expanded by pcpp (already mpsgen's preprocessor for kernel files), so a
  method name a macro pastes (`func_stub##WithPrimaryTensor`) is the selector the compiler sees, and
  `^BinaryOpFn(graph, a, b)` is the block's real parameter list; lines are mapped back to the file;
- the expansion is parsed by tree-sitter-objc (`tree-sitter-objc` on PyPI): the Objective-C grammar
  reads message sends, blocks and `@autoreleasepool`. Measured on upstream's UnaryOps.mm, BinaryOps.mm
  and Activation.mm it finds every `[mpsGraph ...]` send outside a `#define` body (which the expansion
  covers); libclang, without Apple's SDK headers, recovered 0-1 sends per file (every body is dropped
  as invalid) and tree-sitter-cpp none (a message send is not C++);
- the few C++ spellings the C-based grammar misreads are rewritten in place, byte for byte the same
  length, before parsing (so every offset stays the file's): a lambda introducer `[&](` becomes a block
  `^  (`, a trailing `-> T` of a lambda is blanked, `a::b` becomes `a__b`, `auto` becomes `AUTO` (a
  type name: `auto x = f(a, b)` is then a variable, not a function declaration), and template arguments
  directly before a call (`to<double>(`, `LookUpOrCreateCachedGraph<CachedGraph>(`) are blanked.
  Comments and string contents are masked first (`cpp.mask_code`), so nothing inside them changes.

The reading is symbolic: statements run in order with an environment of tensors; calls to the same
file's helpers taking the graph are inlined with their parameters bound; an `if` whose condition is a
platform check (`is_macos_*`, `supportsComplex()`) takes the newest platform's branch, one that tests a
tensor's dtype takes the general path (noted in `Graph.notes`), a constant one (a helper's parameter
bound to a literal) its branch; any other condition ends the reading with its text and line.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass

import pcpp
import tree_sitter
import tree_sitter_objc

from mpsgen.model import Location
from mpsgen.read.cpp import Definition, mask_code, match_brace, split_top_level

_LANGUAGE = tree_sitter.Language(tree_sitter_objc.language())
SELECT = "selectWithPredicateTensor:truePredicateTensor:falsePredicateTensor:name:"
# a C++ operator of a condition on the op's scalars -> the graph selector it means per element
_PREDICATES = {
    "<": "lessThanWithPrimaryTensor:secondaryTensor:name:",
    "<=": "lessThanOrEqualToWithPrimaryTensor:secondaryTensor:name:",
    ">": "greaterThanWithPrimaryTensor:secondaryTensor:name:",
    ">=": "greaterThanOrEqualToWithPrimaryTensor:secondaryTensor:name:",
    "==": "equalWithPrimaryTensor:secondaryTensor:name:",
    "!=": "notEqualWithPrimaryTensor:secondaryTensor:name:",
    "&&": "logicalANDWithPrimaryTensor:secondaryTensor:name:",
    "||": "logicalORWithPrimaryTensor:secondaryTensor:name:",
}
_REDUCTION_NONE = re.compile(r"\(*(\w+)(==|!=)(?:at__)?Reduction__None\)*")
_PLACEHOLDERS = ("mpsGraphRankedPlaceHolder", "mpsGraphScalarPlaceHolder", "mpsGraphUnrankedPlaceHolder")


@dataclass(frozen=True)
class GraphNode:
    """One node of the graph. `kind`:
    - `send`: `[graph <selector>...]`, `name` the full selector (`additionWithPrimaryTensor:secondaryTensor:name:`),
      `args` one per keyword but `name:`;
    - `input`: the op's tensor operand number `name` ("0", "1", ...);
    - `number`: a literal (`name` its text, suffix dropped); `scalar`: the function's scalar parameter
      `name` (`beta.to<double>()`, `eps_` bound to it);
    - `cast`: `castMPSTensor(graph, t, ScalarType::Bool)` / `[graph castTensor:t toType:...]`, `name` the type;
    - `dtype`: a tensor's data type (`[t dataType]`); `other`: anything else (`name` its text);
    - `has_value`: `name.has_value()` of an optional scalar parameter (what the stub receives for an
      unset one is the body source's to say)."""

    kind: str
    name: str
    args: tuple[GraphNode, ...] = ()
    location: Location | None = None


@dataclass(frozen=True)
class Graph:
    function: str
    location: Location
    output: GraphNode | None
    inputs: tuple[str, ...] = ()  # the function's tensor parameters in operand order
    scalars: tuple[str, ...] = ()  # its non-tensor parameters
    notes: tuple[str, ...] = ()  # dtype branches passed over, with their lines
    why: str = ""
    why_location: Location | None = None


class _Stop(Exception):
    def __init__(self, why: str, location: Location | None):
        super().__init__(why)
        self.why = why
        self.location = location


# ------------------------------------------------------------------------------ text preparation

_LAMBDA = re.compile(r"\[[ \t]*(?:[&=]|&?\w+)?[ \t]*(?:,[ \t]*&?\w+[ \t]*)*\](?=[ \t]*\()")
_TRAILING = re.compile(r"\)\s*(->\s*[\w:]+\s*\*?)\s*\{")
_TEMPLATE_CALL = re.compile(r"<\s*[\w:]+\s*\*?\s*>(?=\s*\()")


def normalise(masked: str) -> str:
    """Same-length rewrites of the C++ the Objective-C grammar misreads (see the module docstring)."""

    def blank(m: re.Match, keep: str = "") -> str:
        return keep + " " * (len(m.group(0)) - len(keep))

    out = _LAMBDA.sub(lambda m: blank(m, "^"), masked)
    out = _TRAILING.sub(lambda m: m.group(0).replace(m.group(1), " " * len(m.group(1))), out)
    out = _TEMPLATE_CALL.sub(blank, out)
    out = re.sub(r"\bauto\b", "AUTO", out)  # `auto x = f(a, b)` is a declaration of x, not of a function f
    return out.replace("::", "__")


_PASTE_GAP = re.compile(r"[ \t]*(?:\\\r?\n[ \t]*)*##(?:[ \t]|\\\r?\n)*")


def expand(text: str, definitions: list[Definition], item: Definition) -> tuple[str, list[int]]:
    """The item's text with the file's own macros expanded by pcpp, and each output line's line in the file."""
    # `a##   \<newline>   b` pastes `ab` in a compiler; pcpp keeps the blanks after `##`: joined first
    defines = [_PASTE_GAP.sub("##", text[d.code_start : d.code_end]) for d in definitions if d.kind == "macro"]
    head = "\n".join(defines) + "\n"
    body = text[item.code_start : item.code_end]
    first = text.count("\n", 0, item.code_start) + 1
    offset = head.count("\n") + 1  # the composed line where the item starts
    pre = pcpp.Preprocessor()
    pre.line_directive = "#line"
    pre.parse(head + body, "graph.mm")
    out = io.StringIO()
    pre.write(out)
    lines, numbers, current = [], [], 1
    for line in out.getvalue().split("\n"):
        m = re.match(r'\s*#line\s+(\d+)', line)
        if m:
            current = int(m.group(1))
            lines.append("")
            numbers.append(first)
            continue
        lines.append(line)
        numbers.append(max(first, first + current - offset))
        current += 1
    return "\n".join(lines), numbers


# ------------------------------------------------------------------------------------ the reader


def _params(code: str) -> tuple[list[tuple[str, str]], str, int]:
    """(type, name) of the function's parameters, its return type text and the offset of its body's `{`."""
    i = 0
    close = -1
    while i < len(code):
        c = code[i]
        if c == "(":
            end = match_brace(code, i)
            if end < 0:
                break
            after = code[end + 1 :].lstrip()
            if after.startswith("{"):
                opened, close = i, end
                break
            i = end + 1
            continue
        i += 1
    if close < 0:
        return [], "", -1
    params = []
    for part in split_top_level(code[opened + 1 : close], "(<[", ")>]"):
        part = part.split("=", 1)[0].strip()
        m = re.match(r"(.*?)(\w+)\s*$", part, re.S)
        if m:
            params.append((m.group(1).strip(), m.group(2)))
    head = code[:opened]
    return params, head, code.index("{", close)


def read_graph(text: str, path: str, name: str, definitions: list[Definition]) -> Graph:
    """The graph of the legacy function `name` of `text` (`definitions`: `cpp.find_definitions` of it)."""
    items = [d for d in definitions if (d.kind in ("impl-func", "function") and d.name == name)
             or (d.kind == "macro-instance" and name in d.args)]
    if not items:
        return Graph(name, Location(path, 1), None, why=f"{name} is not defined in {path}")
    reader = _Reader(text, path, definitions)
    return reader.function(items[0], name)


class _Reader:
    def __init__(self, text: str, path: str, definitions: list[Definition]):
        self.text = text
        self.path = path
        self.definitions = definitions
        self.notes: list[str] = []
        self.scalars: set[str] = set()
        self.depth = 0

    # -- parsing an item
    def parse(self, item: Definition):
        code, numbers = expand(self.text, self.definitions, item)
        source = normalise(mask_code(code)).encode()
        tree = tree_sitter.Parser(_LANGUAGE).parse(source)
        return code, numbers, source, tree

    def loc(self, node, numbers) -> Location:
        row = node.start_point[0]
        return Location(self.path, numbers[min(row, len(numbers) - 1)])

    def helper(self, name: str) -> Definition | None:
        found = [d for d in self.definitions if d.kind == "function" and d.name == name]
        return found[0] if found else None

    # -- the legacy function
    def function(self, item: Definition, name: str) -> Graph:
        code, numbers, source, tree = self.parse(item)
        location = Location(self.path, numbers[0])
        params, head, body_at = _params(source.decode())
        if body_at < 0:
            return Graph(name, location, None, why=f"{name}: its body could not be delimited", why_location=location)
        returns_tensor = re.search(r"\bTensor\s*$", head.split(name)[0] if name in head else "") is not None
        tensors = [p for t, p in params if "Tensor" in t and "TensorList" not in t]
        if tensors and not returns_tensor:
            tensors = tensors[:-1]  # the out= tensor
        self.scalars = {p for t, p in params if "Tensor" not in t}
        env = {p: GraphNode("input", str(i)) for i, p in enumerate(tensors)}
        env.update({p: GraphNode("scalar", p) for p in self.scalars})
        try:
            out = self.find_output(tree.root_node, source, numbers, env, tensors)
        except _Stop as stop:
            return Graph(name, location, None, tuple(tensors), tuple(sorted(self.scalars)), tuple(self.notes),
                         why=stop.why, why_location=stop.location)
        return Graph(name, location, out, tuple(tensors), tuple(sorted(self.scalars)), tuple(self.notes))

    def find_output(self, root, source, numbers, env, tensors) -> GraphNode:
        body = _body(root)
        if body is None:
            raise _Stop("no function body found", self.loc(root, numbers))
        env = dict(env)
        for stmt in body.children:
            if stmt.type == "declaration":
                self.local(stmt, source, numbers, env)
        blocks = [n for n in _walk(body) if n.type == "block_literal"]
        graphs = [b for b in blocks if _mentions_graph(b, source)]
        if len(graphs) > 1:
            # a block passed on to another block (the builder inside LookUpOrCreateCachedGraph): outermost wins
            graphs = [b for b in graphs if not any(o is not b and _inside(b, o) for o in graphs)]
        if len(graphs) == 1:
            return self.block(graphs[0], source, numbers, env, tensors)
        if len(graphs) > 1:
            lines = ", ".join(str(self.loc(b, numbers).line) for b in graphs)
            raise _Stop(f"{len(graphs)} MPSGraph blocks (lines {lines}): which one builds the output is not plain",
                        self.loc(graphs[0], numbers))
        # no graph here: a same-file helper it calls with its tensors builds it
        for call in (n for n in _walk(body) if n.type == "call_expression"):
            callee = _callee(call, source)
            helper = self.helper(callee)
            if helper is None or self.depth > 3:
                continue
            bound = self.bind_call(call, source, numbers, env, helper)
            if bound is None:
                continue
            self.depth += 1
            try:
                code, hnumbers, hsource, htree = self.parse(helper)
                hparams, _, _ = _params(hsource.decode())
                return self.find_output(htree.root_node, hsource, hnumbers, bound, tensors)
            except _Stop as stop:
                if stop.why.startswith("no MPSGraph"):
                    continue
                raise
            finally:
                self.depth -= 1
        where = self.loc(body, numbers)
        raise _Stop("no MPSGraph graph is built here (no block or helper building one)", where)

    def bind_call(self, call, source, numbers, env, helper: Definition):
        """The helper's parameters bound to the call's arguments, or None when it takes none of the tensors."""
        _, _, hsource, _ = self.parse(helper)
        hparams, _, _ = _params(hsource.decode())
        args = _args(call)
        if len(args) > len(hparams):
            return None
        bound = {}
        takes_tensor = False
        for (ptype, pname), arg in zip(hparams, args):
            value = self.expr(arg, source, numbers, env)
            if value.kind in ("input", "scalar"):
                takes_tensor = takes_tensor or value.kind == "input"
            bound[pname] = value
        return bound if takes_tensor else None

    # -- a graph-building block
    def block(self, block, source, numbers, env, tensors) -> GraphNode:
        body = next((c for c in block.children if c.type == "compound_statement"), None)
        params = [p for p in _walk(block) if p.type == "parameter_list" and (body is None or not _inside(p, body))]
        names = []
        if params:
            for decl in params[0].children:
                if decl.type == "parameter_declaration":
                    names.append((_text(decl, source), _decl_name(decl, source)))
        env = dict(env)
        graph_names = {"mpsGraph"}
        tensor_params = []
        for decl_text, pname in names:
            if re.search(r"\bMPSGraph\b(?!Tensor)|CachedGraph\b|\bAUTO\b", decl_text) and not tensor_params and (
                    "MPSGraphTensor" not in decl_text):
                graph_names.add(pname)
            else:
                tensor_params.append(pname)
        inputs = [v for v in env.values() if v.kind == "input"]
        for i, pname in enumerate(tensor_params):
            env[pname] = inputs[i] if i < len(inputs) else GraphNode("input", str(i))
        self.graph_names = graph_names
        result = self.run(body, source, numbers, env)
        if result is not None:
            return result
        members = [k for k in env if k.startswith("->") and env[k].kind != "input"]
        if members:
            return env[members[-1]]
        raise _Stop("the graph block returns nothing and sets no output tensor", self.loc(block, numbers))

    def run(self, body, source, numbers, env) -> GraphNode | None:
        """Run the statements of `body`; the returned tensor, or None (env updated in place)."""
        for stmt in body.children if body is not None else ():
            result = self.statement(stmt, source, numbers, env)
            if result is not None:
                return result
        return None

    def statement(self, stmt, source, numbers, env):
        kind = stmt.type
        if kind in ("{", "}", "comment", ";"):
            return None
        if kind == "compound_statement":
            return self.run(stmt, source, numbers, env)
        if kind == "return_statement":
            value = next((c for c in stmt.children if c.type not in ("return", ";")), None)
            return None if value is None else self.expr(value, source, numbers, env)
        if kind == "declaration":
            self.declaration(stmt, source, numbers, env)
            return None
        if kind == "expression_statement":
            inner = stmt.children[0] if stmt.children else None
            if inner is not None and inner.type == "assignment_expression":
                self.assign(inner, source, numbers, env)
            return None
        if kind == "if_statement":
            cond = stmt.child_by_field_name("condition")
            try:
                taken = self.condition(cond, source, numbers, env)
            except _Stop as stop:
                predicate = self.scalar_predicate(cond, source, numbers, env)
                if predicate is None:
                    raise
                return self.both_branches(stmt, predicate, stop, source, numbers, env)
            branch = self.branch(stmt, taken)
            return None if branch is None else self.statement(branch, source, numbers, env)
        if kind == "switch_statement":
            return self.switch(stmt, source, numbers, env)
        if kind == "ERROR":
            return None
        return None

    def switch(self, stmt, source, numbers, env):
        """A `switch` on a loss's reduction (a helper reducing the loss: `case Reduction::Mean:` ...):
        the reduction runs as a kernel of its own after the elementwise one, so the statements
        `Reduction::None` reaches (else the `default`'s) are what the graph computes (noted); a
        switch on anything else ends the reading with its text and line."""
        cond = stmt.child_by_field_name("condition")
        text = re.sub(r"[\s()]", "", _text(cond, source))
        bound = env.get(text)
        name = bound.name if bound is not None and bound.kind == "scalar" else text
        body = stmt.child_by_field_name("body")
        cases = [c for c in (body.children if body is not None else ()) if c.type == "case_statement"]
        labels = [re.sub(r"\s+", "", _text(c.child_by_field_name("value"), source)).replace("__", "::")
                  .removeprefix("at::") for c in cases]  # the reader spells `::` as `__`
        where = self.loc(stmt, numbers)
        if name not in self.scalars or not all(l == "" or l.startswith("Reduction::") for l in labels):
            raise _Stop(f"the graph depends on `switch ({_one_line(_text(cond, source)).strip('() ')})` at run time",
                        where)
        start = labels.index("Reduction::None") if "Reduction::None" in labels else (
            labels.index("") if "" in labels else None)
        if start is None:
            raise _Stop(f"`switch ({name})` has no case for Reduction::None", where)
        self.notes.append(f"`switch ({name})` at {where} is read as Reduction::None (the reduction runs as a "
                          "separate kernel)")
        for case in cases[start:]:  # falling through to the next case until a return
            value = case.child_by_field_name("value")
            for child in case.children:
                if (value is not None and child == value) or child.type in ("case", "default", ":"):
                    continue
                result = self.statement(child, source, numbers, env)
                if result is not None:
                    return result
                if child.type == "break_statement":
                    return None
        return None

    @staticmethod
    def branch(stmt, taken: bool):
        branch = stmt.child_by_field_name("consequence") if taken else stmt.child_by_field_name("alternative")
        if branch is not None and branch.type == "else_clause":
            branch = next((c for c in branch.children if c.type != "else"), None)
        return branch

    def both_branches(self, stmt, predicate: GraphNode, stop: _Stop, source, numbers, env):
        """An `if` on the op's scalars alone (`eps.has_value()`, `eps_ >= 0.0`): both branches run, and
        each tensor they set differently becomes a select on the predicate (per element, the same
        choice everywhere); a branch that returns where the other does not ends the reading."""
        envs, results = [], []
        for taken in (True, False):
            scope = dict(env)
            branch = self.branch(stmt, taken)
            results.append(None if branch is None else self.statement(branch, source, numbers, scope))
            envs.append(scope)
        if any(r is not None for r in results):
            if None in results:
                raise stop
            return GraphNode("send", SELECT, (predicate, results[0], results[1]), predicate.location)
        for name in set(envs[0]) & set(envs[1]):
            if envs[0][name] != envs[1][name]:
                env[name] = GraphNode("send", SELECT, (predicate, envs[0][name], envs[1][name]), predicate.location)
        self.notes.append(f"`{_one_line(_text(stmt.child_by_field_name('condition'), source)).replace('__', '::')}` at "
                          f"{predicate.location} is read per element on the op's scalars (both branches kept)")
        return None

    def scalar_predicate(self, cond, source, numbers, env) -> GraphNode | None:
        """A condition over the op's scalars and literals only, as graph nodes (comparisons and logical
        sends, `has_value` of an optional scalar), or None when it reads anything else."""
        t = cond.type
        where = self.loc(cond, numbers)
        if t in ("parenthesized_expression", "condition_clause"):
            inner = [c for c in cond.children if c.type not in ("(", ")")]
            return self.scalar_predicate(inner[0], source, numbers, env) if len(inner) == 1 else None
        if t == "call_expression":
            function = cond.child_by_field_name("function")
            arguments = cond.child_by_field_name("arguments")
            if (function is not None and function.type == "field_expression" and arguments is not None
                    and not [c for c in arguments.children if c.type not in ("(", ")")]
                    and _text(function.child_by_field_name("field"), source) == "has_value"):
                base = function.child_by_field_name("argument")
                if base is not None and base.type == "identifier" and _text(base, source) in self.scalars:
                    return GraphNode("has_value", _text(base, source), (), where)
            return None
        if t == "unary_expression" and _text(cond.children[0], source) == "!":
            inner = self.scalar_predicate(cond.children[1], source, numbers, env)
            return None if inner is None else GraphNode("send", "notWithTensor:name:", (inner,), where)
        if t == "binary_expression":
            selector = _PREDICATES.get(_text(cond.child_by_field_name("operator"), source))
            if selector is None:
                return None
            sides = [self.scalar_predicate(cond.child_by_field_name(f), source, numbers, env) for f in ("left", "right")]
            return None if None in sides else GraphNode("send", selector, tuple(sides), where)
        if t == "number_literal" or t == "identifier":
            value = self.expr(cond, source, numbers, env)
            return value if value.kind in ("number", "scalar") else None
        return None

    def declaration(self, decl, source, numbers, env):
        type_text = ""
        for child in decl.children:
            if child.type in ("type_identifier", "primitive_type", "storage_class_specifier"):
                type_text += _text(child, source) + " "
            if child.type == "init_declarator":
                target = _decl_name(child, source)
                value = child.child_by_field_name("value")
                if not target:  # `auto x = ...` reads `x` as the type
                    target = next((_text(c, source) for c in decl.children if c.type == "type_identifier"), "")
                if value is None or not target:
                    continue
                if re.search(r"\bMPSGraph\b", type_text) and "MPSGraphTensor" not in type_text:
                    self.graph_names.add(target)
                    continue
                env[target] = self.expr(value, source, numbers, env)

    def local(self, decl, source, numbers, env):
        """A local of the function outside its graph (`double eps_ = eps ? eps.value() : -1.0;`): a
        value made of one scalar parameter stands for that parameter (noted); others are not bound."""
        for child in decl.children:
            if child.type != "init_declarator":
                continue
            target = _decl_name(child, source)
            value = child.child_by_field_name("value")
            if not target or value is None:
                continue
            used = {_text(n, source) for n in _walk(value) if n.type == "identifier"} & self.scalars
            if len(used) == 1 and target not in env:
                scalar = used.pop()
                env[target] = GraphNode("scalar", scalar, (), self.loc(child, numbers))
                self.notes.append(f"{target} is read as {scalar} ({_one_line(_text(child, source))} at "
                                  f"{self.loc(child, numbers)})")

    def assign(self, node, source, numbers, env):
        left = node.child_by_field_name("left")
        right = node.child_by_field_name("right")
        if left is None or right is None:
            return
        value = self.expr(right, source, numbers, env)
        if left.type == "field_expression":
            env["->" + _text(left.child_by_field_name("field"), source)] = value
        else:
            env[_text(left, source)] = value

    # -- conditions
    def condition(self, cond, source, numbers, env) -> bool:
        text = _text(cond, source)
        value = self.constant(cond, source, numbers, env)
        if value is not None:
            return bool(value)
        if re.search(r"is_macos|supportsComplex", text):
            return not text.lstrip("( ").startswith("!")
        loss = _REDUCTION_NONE.fullmatch(re.sub(r"\s+", "", text))
        if loss is not None and loss.group(1) in self.scalars:
            # a loss's reduction runs as its own kernel after the elementwise one: the elementwise
            # part is what the graph computes for `Reduction::None`
            self.notes.append(f"`{_one_line(text).replace('__', '::')}` at {self.loc(cond, numbers)} is read as "
                              "Reduction::None "
                              "(the reduction runs as a separate kernel)")
            return loss.group(2) == "=="
        if self.is_dtype(cond, source, env):
            self.notes.append(f"{_one_line(text)} has its own path at {self.loc(cond, numbers)} (passed over)")
            return False
        raise _Stop(f"the graph depends on `{_one_line(text)}` at run time", self.loc(cond, numbers))

    def is_dtype(self, node, source, env) -> bool:
        text = _text(node, source)
        if re.search(r"dataType|MPSDataType|scalar_type|is_complex|isFloatingType|isIntegralType", text):
            return True
        return any(n.type == "identifier" and env.get(_text(n, source), GraphNode("", "")).kind == "dtype"
                   for n in _walk(node))

    def constant(self, node, source, numbers, env):
        """The value of a condition made of bound literals, or None."""
        t = node.type
        if t == "parenthesized_expression":
            inner = [c for c in node.children if c.type not in ("(", ")")]
            return self.constant(inner[0], source, numbers, env) if inner else None
        if t in ("true", "false"):
            return t == "true"
        if t == "identifier":
            bound = env.get(_text(node, source))
            if bound is not None and bound.kind == "literal":
                return bound.name
            return None
        if t == "string_literal":
            return _text(node, source)
        if t == "unary_expression" and _text(node.children[0], source) == "!":
            value = self.constant(node.children[1], source, numbers, env)
            return None if value is None else not value
        if t == "binary_expression":
            op = _text(node.child_by_field_name("operator"), source)
            a = self.constant(node.child_by_field_name("left"), source, numbers, env)
            b = self.constant(node.child_by_field_name("right"), source, numbers, env)
            if op == "&&" and (a is False or b is False):
                return False
            if op == "||" and (a is True or b is True):
                return True
            if a is None or b is None:
                return None
            return {"==": a == b, "!=": a != b, "&&": bool(a and b), "||": bool(a or b)}.get(op)
        return None

    # -- expressions
    def expr(self, node, source, numbers, env) -> GraphNode:
        t = node.type
        where = self.loc(node, numbers)
        if t == "parenthesized_expression":
            inner = [c for c in node.children if c.type not in ("(", ")")]
            return self.expr(inner[0], source, numbers, env)
        if t == "identifier":
            name = _text(node, source)
            return env.get(name, GraphNode("other", name, (), where))
        if t == "number_literal":
            return GraphNode("number", _text(node, source).rstrip("fFlLuU"), (), where)
        if t in ("true", "false"):
            return GraphNode("literal", t == "true", (), where)
        if t == "string_literal":
            return GraphNode("literal", _text(node, source), (), where)
        if t == "unary_expression" and _text(node.children[0], source) == "-" and node.children[1].type == "number_literal":
            return GraphNode("number", "-" + _text(node.children[1], source).rstrip("fFlLuU"), (), where)
        if t == "message_expression":
            return self.send(node, source, numbers, env)
        if t in ("binary_expression", "unary_expression") and self.is_dtype(node, source, env):
            return GraphNode("dtype", _one_line(_text(node, source)), (), where)
        if t == "field_expression":
            field_name = _text(node.child_by_field_name("field"), source)
            base = node.child_by_field_name("argument")
            if field_name == "dataType":
                return GraphNode("dtype", _text(base, source), (), where)
            if base is not None and base.type == "identifier" and _text(base, source) in ("newCachedGraph", "cachedGraph"):
                return env.get("->" + field_name, GraphNode("other", _text(node, source), (), where))
            return GraphNode("other", _text(node, source), (), where)
        if t == "call_expression":
            return self.call(node, source, numbers, env)
        if t == "conditional_expression":
            cond = node.child_by_field_name("condition")
            value = self.constant(cond, source, numbers, env)
            if value is None:
                raise _Stop(f"the graph depends on `{_one_line(_text(cond, source))}` at run time", where)
            return self.expr(node.child_by_field_name("consequence" if value else "alternative"), source, numbers, env)
        if t == "subscript_expression":
            base = self.expr(node.children[0], source, numbers, env)
            return GraphNode("other", _text(node, source), (base,), where)
        return GraphNode("other", _one_line(_text(node, source)), (), where)

    def send(self, node, source, numbers, env) -> GraphNode:
        where = self.loc(node, numbers)
        receiver, keywords, args, expect_arg = None, [], [], False
        for i, child in enumerate(node.children):
            field_name = node.field_name_for_child(i)
            if field_name == "receiver":
                receiver = child
            elif field_name == "method":
                keywords.append(_text(child, source))
            elif child.type == ":":
                expect_arg = True
            elif expect_arg and child.type not in ("[", "]"):
                args.append(child)
                expect_arg = False
        rtext = _text(receiver, source)
        pending = keywords[0] if keywords and not args else None
        if not args:
            keywords = []
        if rtext not in getattr(self, "graph_names", {"mpsGraph"}):
            if pending and not keywords:  # `[t dataType]`
                return GraphNode("dtype" if pending == "dataType" else "other", f"[{rtext} {pending}]", (), where)
            return GraphNode("other", _one_line(_text(node, source)), (), where)
        selector = "".join(k + ":" for k in keywords) if keywords else (pending or "")
        values = tuple(
            self.expr(a, source, numbers, env) for k, a in zip(keywords, args) if k not in ("name",)
        )
        if selector.startswith("castTensor:"):
            to = _text(args[1], source) if len(args) > 1 else ""
            return GraphNode("cast", to.replace("__", "::"), values[:1], where)
        return GraphNode("send", selector, values, where)

    def call(self, node, source, numbers, env) -> GraphNode:
        where = self.loc(node, numbers)
        callee = _callee(node, source)
        args = _args(node)
        func = node.child_by_field_name("function")
        if callee == "castMPSTensor" and len(args) == 3:
            return GraphNode("cast", _text(args[2], source).replace("__", "::"),
                             (self.expr(args[1], source, numbers, env),), where)
        if func is not None and func.type == "field_expression":
            base = func.child_by_field_name("argument")
            if base is not None and base.type == "identifier" and _text(base, source) in self.scalars:
                return GraphNode("scalar", _text(base, source), (), where)
            if callee == "graph":
                return GraphNode("graph", "", (), where)
        if callee in _PLACEHOLDERS and args:
            # the tensor a placeholder stands for: a direct argument, else the one whose shape it takes
            # (`getMPSShape(self)`); a dtype alone (`getMPSScalarType(self)`: a scalar's) is not one
            named = [_text(a, source) for a in args[1:] if a.type == "identifier"] or [
                _text(n, source) for a in args[1:] if "Shape" in _text(a, source) for n in _walk(a)
                if n.type == "identifier"]
            tensor = next((env[n] for n in named if n in env and env[n].kind == "input"), None)
            # a placeholder of none of the inputs (the output's, overwritten later) is no input
            return tensor if tensor is not None else GraphNode("other", _one_line(_text(node, source)), (), where)
        if callee == "getMPSDataType" or callee == "getMPSScalarType":
            return GraphNode("dtype", _text(node, source), (), where)
        helper = self.helper(callee)
        graphs = [i for i, a in enumerate(args) if _text(a, source) in getattr(self, "graph_names", ())]
        if helper is not None and self.depth <= 6 and graphs:
            # a helper taking the graph (first, or after the tensor: `reduceTensor(loss, reduction,
            # mpsGraph, n)`) is inlined with its other parameters bound
            self.depth += 1
            try:
                _, hnumbers, hsource, htree = self.parse(helper)
                hparams, _, _ = _params(hsource.decode())
                bound = {}
                for i, ((ptype, pname), arg) in enumerate(zip(hparams, args)):
                    if i != graphs[0]:
                        bound[pname] = self.expr(arg, source, numbers, env)
                saved = self.graph_names
                self.graph_names = {hparams[graphs[0]][1]} if len(hparams) > graphs[0] else set()
                body = _body(htree.root_node)
                result = self.run(body, hsource, hnumbers, bound)
                self.graph_names = saved
                if result is None:
                    raise _Stop(f"helper {callee} returns no tensor", where)
                return result
            finally:
                self.depth -= 1
        return GraphNode("other", _one_line(_text(node, source)).replace("__", "::"), (), where)


# ------------------------------------------------------------------------------- tree utilities


def _walk(node):
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(n.children))


def _text(node, source: bytes) -> str:
    return source[node.start_byte : node.end_byte].decode() if node is not None else ""


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _inside(inner, outer) -> bool:
    return outer.start_byte <= inner.start_byte and inner.end_byte <= outer.end_byte


def _body(root):
    """The outermost compound statement (the function's body)."""
    for n in _walk(root):
        if n.type == "compound_statement" or n.type == "function_definition":
            if n.type == "function_definition":
                return n.child_by_field_name("body")
            return n
    return None


_GRAPH_PARAM = re.compile(r"\bMPSGraph\b(?!Tensor)|CachedGraph\b|\bmpsGraph\b")


def _mentions_graph(block, source: bytes) -> bool:
    """A block building a graph: one taking the graph (`MPSGraph*`, a cached graph, `auto mpsGraph`)."""
    body = next((c for c in block.children if c.type == "compound_statement"), None)
    head = source[block.start_byte : body.start_byte if body is not None else block.end_byte].decode()
    return bool(_GRAPH_PARAM.search(head))


def _callee(call, source: bytes) -> str:
    func = call.child_by_field_name("function")
    text = _text(func, source)
    if func is not None and func.type == "field_expression":
        text = _text(func.child_by_field_name("field"), source)
    return text.split("__")[-1].strip()


def _args(call) -> list:
    arglist = call.child_by_field_name("arguments")
    if arglist is None:
        return []
    return [c for c in arglist.children if c.type not in ("(", ")", ",", "comment")]


def _decl_name(decl, source: bytes) -> str:
    for n in _walk(decl):
        if n.type == "identifier" and n.end_byte > n.start_byte:
            parent = n.parent
            if parent is not None and parent.type in ("init_declarator", "pointer_declarator", "parameter_declaration",
                                                      "reference_declarator", "abstract_pointer_declarator"):
                if parent.type == "init_declarator" and parent.child_by_field_name("declarator") != n:
                    continue
                return _text(n, source)
    # `auto x` in a parameter list reads `x` as the type
    types = [n for n in decl.children if n.type == "type_identifier"]
    return _text(types[-1], source) if types else ""
