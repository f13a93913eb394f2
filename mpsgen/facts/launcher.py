"""A launcher the checkout's library lacks, and whether mpsgen can add it truthfully: a ternary
kernel with a params struct (huber_backward_stub, smooth_l1_backward_stub: `(TensorIterator&, const
Scalar&, double)`). 2.15's c10/metal instantiates ternary kernels with an alpha of any type
(`REGISTER_TERNARY_ALPHA_OP`), so a params struct can take alpha's place as it does for the unary
and binary params kernels; what 2.15's `MetalShaderLibrary` lacks is the host side, which binds the
struct as a buffer (its `exec_ternary_kernel` binds one Scalar). `ternary_params_launcher(ws)` says
where the declaration and the definition go (after the binary params launcher's, whose style they
follow) and checks that the kernels take their arguments where the launcher binds them (read from
the kernel templates' `[[buffer(N)]]` attributes), or says what is missing."""

from __future__ import annotations

import re
from dataclasses import dataclass

from mpsgen.model import Location
from mpsgen.read.checkout import C10_METAL_DIR, MPS_DIR, Texts
from mpsgen.read.cpp import mask_code, match_brace
from mpsgen.textedit import LineIndex

LIBRARY = f"{MPS_DIR}/MetalShaderLibrary.h"
UTILS = f"{MPS_DIR}/OperationUtils.h"
LAUNCHER = "exec_ternary_kernel_with_params"
ANCHOR = "exec_binary_kernel_with_params"
# the argument each kernel template must take at each buffer index for the launcher's binding:
# output, the three inputs, the params struct; the strided one then its shape, the four operands'
# strides and the dimension count, on a grid of (shape[0], shape[1], the other dimensions)
KERNEL_BUFFERS = {
    "ternary_alpha_dense": {4: "alpha"},
    "ternary_alpha_strided": {4: "alpha", 5: "sizes", 6: "output_strides", 7: "input_strides", 8: "other1_strides",
                              9: "other2_strides", 10: "ndim"},
}


@dataclass(frozen=True)
class TernaryLauncher:
    """Where `exec_ternary_kernel_with_params` goes: the offsets just past the binary params
    launcher's declaration (MetalShaderLibrary.h) and definition (OperationUtils.h), the
    declaration's indentation, and the kernel template it binds for (its location)."""

    declaration_end: int
    indent: str
    definition_end: int
    kernels: Location


def ternary_params_launcher(ws: Texts) -> TernaryLauncher | str:
    """The launcher's places, or why mpsgen cannot add it (the missing piece, with its file)."""
    if not ws.exists(LIBRARY):
        return f"{LIBRARY} is missing"
    masked = mask_code(ws.read(LIBRARY))
    declared = re.search(rf"^([ \t]*)template\s*<\s*typename\s+\w+\s*>\s*void\s+{ANCHOR}\s*\([^;]*;[^\n]*\n",
                         masked, re.M)
    if declared is None:
        return f"{LIBRARY} declares no {ANCHOR} (the launcher whose shape a ternary one follows)"
    if not ws.exists(UTILS):
        return f"{UTILS} is missing (where the library's params launchers are defined)"
    utils = mask_code(ws.read(UTILS))
    defined = re.search(rf"\bvoid\s+MetalShaderLibrary::{ANCHOR}\s*\(", utils)
    body = utils.find("{", defined.end()) if defined else -1
    if body < 0:
        return f"{UTILS} defines no MetalShaderLibrary::{ANCHOR} (the launcher whose shape a ternary one follows)"
    close = match_brace(utils, body)
    end = utils.find("\n", close)
    kernels = _kernel_templates(ws)
    if isinstance(kernels, str):
        return kernels
    return TernaryLauncher(declared.end(), declared.group(1), len(utils) if end < 0 else end + 1, kernels)


def _kernel_templates(ws: Texts) -> Location | str:
    """The c10/metal header whose ternary alpha kernels take each argument at the buffer the
    launcher binds it to, and whose REGISTER_TERNARY_ALPHA_OP names them as the launcher does."""
    for rel in ws.checkout.glob(C10_METAL_DIR, "*.h"):
        text = ws.read(rel)
        if "ternary_alpha_strided" not in text:
            continue
        masked = mask_code(text)
        for kernel, buffers in KERNEL_BUFFERS.items():
            found = re.search(rf"\bkernel\s+void\s+{kernel}\s*\(", masked)
            if found is None:
                return f"{rel} defines no {kernel} kernel"
            params = text[found.end():match_brace(masked, found.end() - 1)]
            for index, name in buffers.items():
                if not re.search(rf"\b{name}\s*\[\[\s*buffer\(\s*{index}\s*\)\s*\]\]", params):
                    line = LineIndex(text).line_of(found.start())
                    return f"{rel}:{line}: {kernel} takes no `{name}` at buffer {index}, where the launcher binds it"
            if kernel.endswith("strided") and not re.search(r"\buint3\s+\w+\s*\[\[\s*thread_position_in_grid", params):
                return f"{rel}: {kernel} does not read a 3D grid position"
        if not re.search(r'#NAME\s+"_dense_"\s+#DTYPEO\s+"_"\s+#DTYPEI\s+"_"\s+#DTYPEA', re.sub(r"\\\n", " ", text)):
            return f"{rel}: REGISTER_TERNARY_ALPHA_OP does not name its kernels <name>_dense_<out>_<in>_<alpha>"
        found = re.search(r"\bkernel\s+void\s+ternary_alpha_dense\s*\(", masked)
        return Location(rel, LineIndex(text).line_of(found.start()))
    return f"no {C10_METAL_DIR}/*.h defines the ternary alpha kernels (ternary_alpha_dense, ternary_alpha_strided)"
