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


KERNELS_HEADER = f"{C10_METAL_DIR}/indexing.h"
# the plain ternary registration macro the alpha kernels go after (2.13's indexing.h ends with it)
_TERNARY_OP_DEFINE = re.compile(r"^#define[ \t]+REGISTER_TERNARY_OP\(NAME,[^\n]*\\\n(?:[^\n]*\\\n)*[^\n]*\n", re.M)
# what the added kernels call, which the header must define
_HELPERS = ("ternary_strided", "pos_from_thread_index", "offset_from_coord", "val_at_offs", "ref_at_offs")


@dataclass(frozen=True)
class TernaryAlphaKernels:
    """Where mpsgen adds the ternary alpha kernels and REGISTER_TERNARY_ALPHA_OP a checkout's
    c10/metal lacks (2.13): the offset just past REGISTER_TERNARY_OP's definition in indexing.h."""

    header: str
    at: int
    location: Location


@dataclass(frozen=True)
class TernaryLauncher:
    """Where `exec_ternary_kernel_with_params` goes: the offsets just past the binary params
    launcher's declaration (MetalShaderLibrary.h) and definition (OperationUtils.h), the
    declaration's indentation, and the kernel template it binds for (its location); `add_kernels`
    where those kernels are added first when the checkout's c10/metal has none."""

    declaration_end: int
    indent: str
    definition_end: int
    kernels: Location
    add_kernels: TernaryAlphaKernels | None = None


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
    found = _kernels_to_bind(ws)
    if isinstance(found, str):
        return found
    kernels, add = found
    return TernaryLauncher(declared.end(), declared.group(1), len(utils) if end < 0 else end + 1, kernels, add)


def addable_kernels(ws: Texts) -> TernaryAlphaKernels | str:
    """Where the ternary alpha kernels and their registration macros go in a c10/metal that has the
    plain ternary kernels only (2.13's indexing.h: after REGISTER_TERNARY_OP's definition), or why
    they cannot be added there (the helpers they call, or the macro to follow, missing)."""
    if not ws.exists(KERNELS_HEADER):
        return f"{KERNELS_HEADER} is missing (where the ternary kernels are defined)"
    text = ws.read(KERNELS_HEADER)
    masked = mask_code(text)
    missing = [name for name in _HELPERS if not re.search(rf"\b{name}\b", masked)]
    if missing:
        return (f"no {C10_METAL_DIR}/*.h defines the ternary alpha kernels, and {KERNELS_HEADER} lacks "
                f"{', '.join(missing)}, which mpsgen's would call")
    found = _TERNARY_OP_DEFINE.search(text)
    if found is None:
        return (f"no {C10_METAL_DIR}/*.h defines the ternary alpha kernels, and {KERNELS_HEADER} defines no "
                "REGISTER_TERNARY_OP(NAME, ...) to add them after")
    # the added text opens with a blank line: its first comment line is the one after
    line = LineIndex(text).line_of(found.end()) + 1
    return TernaryAlphaKernels(KERNELS_HEADER, found.end(), Location(KERNELS_HEADER, line))



def _kernels_to_bind(ws):
    """Where the ternary kernels a launcher binds are defined, and the pieces to add when no header
    defines them (added where the plain ternary ones are, if they fit): (location, addition or
    None), or the reason they cannot be had."""
    kernels = _kernel_templates(ws)
    add = None
    if kernels is None:
        add = addable_kernels(ws)
        if isinstance(add, str):
            return add
        kernels = add.location
    if isinstance(kernels, str):
        return kernels
    return kernels, add

def _kernel_templates(ws: Texts) -> Location | str | None:
    """The c10/metal header whose ternary alpha kernels take each argument at the buffer the
    launcher binds it to, and whose REGISTER_TERNARY_ALPHA_OP names them as the launcher does;
    None when no header defines them."""
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
    return None


ADDED_MACROS = frozenset({"REGISTER_TERNARY_ALPHA_OP", "REGISTER_OPMATH_TERNARY_ALPHA_OP"})


def added_register_macros(ws: Texts) -> frozenset[str]:
    """The registration macros the ternary params launcher's step adds with the kernels
    (`TernaryLauncher.add_kernels`): a params kernel planned before that step may name them."""
    launcher = ternary_params_launcher(ws)
    return ADDED_MACROS if isinstance(launcher, TernaryLauncher) and launcher.add_kernels is not None else frozenset()


# ------------------------------------------------------------------ the ternary launcher with a Scalar

TERNARY = "exec_ternary_kernel"
DEFINITIONS = f"{MPS_DIR}/OperationUtils.mm"
_DECLARED = re.compile(rf"^([ \t]*)void\s+{TERNARY}\s*\(([^;]*)\)\s*;[^\n]*\n", re.M)
_DEFINED = re.compile(rf"\bvoid\s+MetalShaderLibrary::{TERNARY}\s*\(([^)]*)\)\s*\{{")


@dataclass(frozen=True)
class TernaryAlphaLauncher:
    """What a ternary op whose stub passes one Scalar (addcmul's value, mse_backward's norm) needs of
    a library whose `exec_ternary_kernel` takes none (2.13), and where each missing piece goes: the
    declaration of `exec_ternary_kernel(iter, name, alpha, scalar_arg_type)` just past the plain
    one's (MetalShaderLibrary.h; None: declared), its definition just past the plain one's
    (OperationUtils.mm; None: defined), whether that file's profiler calls pass the stream, and the
    c10/metal alpha kernels it binds (`add_kernels` where they are added first). Complete (nothing to
    add) where the declared launcher takes a Scalar already (2.15's optional alpha)."""

    declaration_end: int | None
    indent: str
    definition_end: int | None
    profiler_stream: bool
    kernels: Location | None
    add_kernels: TernaryAlphaKernels | None = None
    dispatch3d: bool = False  # OperationUtils.h has mtl_dispatch3DJob (2.15), else the 2D grid the kernels read alike

    @property
    def missing(self) -> bool:
        return self.declaration_end is not None or self.definition_end is not None or self.add_kernels is not None


def ternary_alpha_launcher(ws: Texts) -> TernaryAlphaLauncher | str:
    """The pieces of the Scalar-taking ternary launcher the checkout lacks and where they go, or
    why mpsgen cannot add them (the missing file or anchor)."""
    if not ws.exists(LIBRARY):
        return f"{LIBRARY} is missing"
    library = mask_code(ws.read(LIBRARY))
    declared = list(_DECLARED.finditer(library))
    if any("Scalar" in d.group(2) for d in declared):
        return TernaryAlphaLauncher(None, "", None, False, None)  # 2.15: exec_ternary_kernel(iter, name, alpha, ...)
    if not declared:
        return f"{LIBRARY} declares no {TERNARY} (the launcher a Scalar-taking one is added beside)"
    if not ws.exists(DEFINITIONS):
        return (f"{DEFINITIONS} is missing (where MetalShaderLibrary::{TERNARY} is defined, beside which mpsgen "
                f"adds the one taking a Scalar)")
    text = ws.read(DEFINITIONS)
    masked = mask_code(text)
    defined = list(_DEFINED.finditer(masked))
    plain = [d for d in defined if "Scalar" not in d.group(1)]
    if not plain:
        return f"{DEFINITIONS} defines no MetalShaderLibrary::{TERNARY} (the launcher a Scalar-taking one follows)"
    definition_end = None
    stream = False
    if not any("Scalar" in d.group(1) for d in defined):
        close = match_brace(masked, plain[0].end() - 1)
        body = masked[plain[0].end():close]
        stream = bool(re.search(r"endProfileKernel\s*\([^;]*,\s*mpsStream\s*\)", body))
        end = masked.find("\n", close)
        definition_end = len(text) if end < 0 else end + 1
    found = _kernels_to_bind(ws)
    if isinstance(found, str):
        return found
    kernels, add = found
    dispatch3d = ws.exists(UTILS) and "mtl_dispatch3DJob" in ws.read(UTILS)
    return TernaryAlphaLauncher(declared[0].end(), declared[0].group(1), definition_end, stream, kernels, add, dispatch3d)


def alpha_added_register_macros(ws: Texts) -> frozenset[str]:
    """The registration macros the Scalar-taking ternary launcher's step adds with the kernels, or
    an earlier op of the same run added (in the workspace, not yet on disk)."""
    launcher = ternary_alpha_launcher(ws)
    if isinstance(launcher, TernaryAlphaLauncher) and launcher.add_kernels is not None:
        return ADDED_MACROS
    if not ws.exists(KERNELS_HEADER):
        return frozenset()
    defined = set(re.findall(r"^[ \t]*#[ \t]*define[ \t]+(REGISTER_\w+)\(", ws.read(KERNELS_HEADER), re.M))
    return ADDED_MACROS & frozenset(defined)
