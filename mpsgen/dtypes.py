"""Dtype groups: what `--dtypes` names, what each registers in Metal, what torch dtypes it covers."""

from __future__ import annotations

from mpsgen.errors import MpsgenError

# Order is the order registrations are written in.
GROUPS = ("float", "int2float", "integer", "complex", "bool")

# Metal input types each group registers (the output type depends on the group).
METAL_INPUT_TYPES = {
    "float": ("float", "half", "bfloat"),
    "int2float": ("long", "int", "short", "uchar", "char", "bool"),
    "integer": ("long", "int", "short", "uchar", "char", "bool"),
    "complex": ("float2", "half2"),
    "bool": ("bool",),
}

# torch dtypes (as written after `torch.` in test lists) that a group's registrations serve.
TORCH_DTYPES = {
    "float": ("float32", "float16", "bfloat16"),
    "int2float": ("int64", "int32", "int16", "uint8", "int8", "bool"),
    "integer": ("int64", "int32", "int16", "uint8", "int8", "bool"),
    "complex": ("complex64", "complex32"),
    "bool": ("bool",),
}

# Aliases people write in test lists for the same dtype.
TORCH_DTYPE_ALIASES = {
    "float": "float32",
    "half": "float16",
    "long": "int64",
    "int": "int32",
    "short": "int16",
    "cfloat": "complex64",
    "chalf": "complex32",
    "double": "float64",
    "cdouble": "complex128",
}


def parse_groups(spec: str) -> tuple[str, ...]:
    """`"float,int2float"` -> ("float", "int2float"), validated and in canonical order."""
    names = [part.strip() for part in spec.split(",") if part.strip()]
    if not names:
        raise MpsgenError("--dtypes is empty", hint=f"name one or more of: {', '.join(GROUPS)}")
    unknown = [name for name in names if name not in GROUPS]
    if unknown:
        raise MpsgenError(
            f"unknown dtype group {unknown[0]!r}",
            hint=f"use a comma-separated list of: {', '.join(GROUPS)}",
        )
    if "int2float" in names and "integer" in names:
        raise MpsgenError(
            "dtype groups 'int2float' and 'integer' both register the integer input types",
            hint="pick one: int2float (integer in, float out) or integer (integer in, integer out)",
        )
    return tuple(group for group in GROUPS if group in names)


def torch_dtypes_for(groups: tuple[str, ...], without: tuple[str, ...] = ()) -> frozenset[str]:
    """The torch dtypes the groups' registrations serve, but for the Metal input types `without`
    (a group's Metal and torch types stand in the same order)."""
    return frozenset(d for group in groups for t, d in zip(METAL_INPUT_TYPES[group], TORCH_DTYPES[group])
                     if t not in without)
