"""The library launcher family: `exec_ternary_kernel_with_params`, added to the checkout's
`MetalShaderLibrary.h` (declaration) and `OperationUtils.h` (definition) where a ternary params op
needs it and the checkout lacks it (2.15's library has the unary and binary ones only). Facts:
`mpsgen.facts.launcher`. Both texts are the shipped templates (a checkout's `.mpsgen/templates/`
overrides them), placed right after the binary params launcher's declaration and definition.
And `exec_ternary_kernel` taking the Scalar a ternary op carries (addcmul's value), where the
library's takes none (2.13): declared after the plain one in `MetalShaderLibrary.h` and defined
after it in `OperationUtils.mm` (`plan_alpha_launcher`), the call 2.15's host code writes."""

from __future__ import annotations

from mpsgen.edit.templates import Templates
from mpsgen.facts.launcher import (DEFINITIONS, LAUNCHER, LIBRARY, TERNARY, UTILS, TernaryAlphaKernels,
                                   TernaryAlphaLauncher, TernaryLauncher)
from mpsgen.model import Change, FileChange, Location, Note
from mpsgen.textedit import LineIndex, newline_of, replace_spans


def plan_launcher(read, templates: Templates, launcher: TernaryLauncher) -> tuple[FileChange, ...]:
    """The declaration and the definition, each a span insertion (after the ternary alpha kernels
    and their registration macros where the checkout's c10/metal lacks them); the summary says why."""
    changes = []
    if launcher.add_kernels is not None:
        changes.append(_kernels_change(read, templates, launcher.add_kernels, LAUNCHER))
    pieces = ((LIBRARY, launcher.declaration_end, "ternary_params_launcher_declaration.h.j2", "declaration"),
              (UTILS, launcher.definition_end, "ternary_params_launcher.h.j2", "definition"))
    for rel, at, template, kind in pieces:
        text = read(rel)
        added = templates.render(template, indent=launcher.indent)
        changes.append(_insert_piece(rel, text, at, added, kind, f"{LAUNCHER} ({kind})", lambda line: (
            Note("info", f"this checkout's library has no launcher for a ternary kernel with a params struct: "
                         f"MetalShaderLibrary::{LAUNCHER} added ({LIBRARY} and {UTILS}, after the binary "
                         f"one's), binding the arguments where the kernels REGISTER_TERNARY_ALPHA_OP "
                         f"instantiates take them ({launcher.kernels}); review it with the op",
                 Location(rel, line)),) if kind == "declaration" else ()))
    return tuple(changes)


def _insert_piece(rel: str, text: str, at: int, added: str, kind: str, summary: str, notes) -> FileChange:
    """`added` (a launcher's declaration or definition, rendered) inserted into `rel` at offset
    `at`: a definition after a blank line, in the file's newline style; `notes(line)` the notes for
    the line it starts on."""
    if kind == "definition":
        added = "\n" + added  # a blank line between it and the one it follows
    newline = newline_of(text)
    if newline != "\n":
        added = added.replace("\n", newline)
    line = LineIndex(text).line_of(at) if at < len(text) else LineIndex(text).line_count + 1
    if kind == "definition":
        line += 1  # after the blank line that opens it
    return FileChange(rel, replace_spans(text, [(at, at, added)]), (Change("launcher", Location(rel, line), summary),),
                      notes(line))


def _kernels_change(read, templates: Templates, add: TernaryAlphaKernels, launcher: str) -> FileChange:
    """The ternary alpha kernels and their registration macros, after REGISTER_TERNARY_OP in the
    c10/metal header (`add`), with a `launcher` change and a note naming the launcher binding them."""
    text = read(add.header)
    added = "\n" + templates.render("ternary_alpha_kernels.h.j2")
    newline = newline_of(text)
    if newline != "\n":
        added = added.replace("\n", newline)
    line = add.location.line - 1
    note = Note("info", "this checkout's c10/metal has no ternary kernels taking a value next to the tensors: "
                        "ternary_alpha_dense/ternary_alpha_strided and REGISTER_TERNARY_ALPHA_OP (with "
                        "REGISTER_OPMATH_TERNARY_ALPHA_OP) added after REGISTER_TERNARY_OP, naming kernels "
                        f"<name>_<dense|strided>_<out>_<in>_<alpha> as 2.15's do, for {launcher} to bind; "
                        "review them with the op", Location(add.header, line + 1))
    return FileChange(add.header, replace_spans(text, [(add.at, add.at, added)]),
                      (Change("launcher", Location(add.header, line + 1),
                              "ternary alpha kernels and REGISTER_TERNARY_ALPHA_OP"),), (note,))


def plan_alpha_launcher(read, templates: Templates, launcher: TernaryAlphaLauncher) -> tuple[FileChange, ...]:
    """What the checkout lacks of `exec_ternary_kernel(iter, name, alpha, scalar_arg_type)`, each a
    span insertion: the c10/metal alpha kernels, the declaration after the plain one's, the
    definition after the plain one's; the summary says why."""
    changes = []
    if launcher.add_kernels is not None:
        changes.append(_kernels_change(read, templates, launcher.add_kernels, TERNARY))
    pieces = ((LIBRARY, launcher.declaration_end, "ternary_alpha_launcher_declaration.h.j2", "declaration"),
              (DEFINITIONS, launcher.definition_end, "ternary_alpha_launcher.mm.j2", "definition"))
    for rel, at, template, kind in pieces:
        if at is None:
            continue
        text = read(rel)
        added = templates.render(template, indent=launcher.indent, profiler_stream=launcher.profiler_stream,
                                 dispatch3d=launcher.dispatch3d)
        changes.append(_insert_piece(rel, text, at, added, kind, f"{TERNARY} with a Scalar ({kind})", lambda line: (
            Note("info", f"this checkout's MetalShaderLibrary::{TERNARY} takes no Scalar: the one taking the "
                         f"Scalar a ternary op carries ({TERNARY}(iter, name, alpha), as 2.15 calls it) {kind} "
                         f"added after the plain one's, binding alpha where the kernels REGISTER_TERNARY_ALPHA_OP "
                         f"instantiates take it ({launcher.kernels}); review it with the op", Location(rel, line)),)))
    return tuple(changes)
