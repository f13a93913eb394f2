"""The library launcher family: `exec_ternary_kernel_with_params`, added to the checkout's
`MetalShaderLibrary.h` (declaration) and `OperationUtils.h` (definition) where a ternary params op
needs it and the checkout lacks it (2.15's library has the unary and binary ones only). Facts:
`mpsgen.facts.launcher`. Both texts are the shipped templates (a checkout's `.mpsgen/templates/`
overrides them), placed right after the binary params launcher's declaration and definition."""

from __future__ import annotations

from mpsgen.edit.templates import Templates
from mpsgen.facts.launcher import LAUNCHER, LIBRARY, UTILS, TernaryLauncher
from mpsgen.model import Change, FileChange, Location, Note
from mpsgen.textedit import LineIndex, newline_of, replace_spans


def plan_launcher(read, templates: Templates, launcher: TernaryLauncher) -> tuple[FileChange, ...]:
    """The declaration and the definition, each a span insertion (after the ternary alpha kernels
    and their registration macros where the checkout's c10/metal lacks them); the summary says why."""
    changes = []
    if launcher.add_kernels is not None:
        add = launcher.add_kernels
        text = read(add.header)
        added = "\n" + templates.render("ternary_alpha_kernels.h.j2")
        newline = newline_of(text)
        if newline != "\n":
            added = added.replace("\n", newline)
        line = add.location.line - 1
        note = Note("info", "this checkout's c10/metal has no ternary kernels taking a value next to the tensors: "
                            "ternary_alpha_dense/ternary_alpha_strided and REGISTER_TERNARY_ALPHA_OP (with "
                            "REGISTER_OPMATH_TERNARY_ALPHA_OP) added after REGISTER_TERNARY_OP, naming kernels "
                            f"<name>_<dense|strided>_<out>_<in>_<alpha> as 2.15's do, for {LAUNCHER} to bind; "
                            "review them with the op", Location(add.header, line + 1))
        changes.append(FileChange(add.header, replace_spans(text, [(add.at, add.at, added)]),
                                  (Change("launcher", Location(add.header, line + 1),
                                          "ternary alpha kernels and REGISTER_TERNARY_ALPHA_OP"),), (note,)))
    for rel, at, template, kind in ((LIBRARY, launcher.declaration_end, "ternary_params_launcher_declaration.h.j2",
                                     "declaration"),
                                    (UTILS, launcher.definition_end, "ternary_params_launcher.h.j2", "definition")):
        text = read(rel)
        added = templates.render(template, indent=launcher.indent)
        if kind == "definition":
            added = "\n" + added  # a blank line between it and the binary one
        newline = newline_of(text)
        if newline != "\n":
            added = added.replace("\n", newline)
        line = LineIndex(text).line_of(at) if at < len(text) else LineIndex(text).line_count + 1
        if kind == "definition":
            line += 1  # after the blank line that opens it
        note = ()
        if kind == "declaration":
            note = (Note("info", f"this checkout's library has no launcher for a ternary kernel with a params struct: "
                                 f"MetalShaderLibrary::{LAUNCHER} added ({LIBRARY} and {UTILS}, after the binary "
                                 f"one's), binding the arguments where the kernels REGISTER_TERNARY_ALPHA_OP "
                                 f"instantiates take them ({launcher.kernels}); review it with the op",
                        Location(rel, line)),)
        changes.append(FileChange(rel, replace_spans(text, [(at, at, added)]),
                                  (Change("launcher", Location(rel, line), f"{LAUNCHER} ({kind})"),), note))
    return tuple(changes)
