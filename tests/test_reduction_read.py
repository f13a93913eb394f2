"""Reading the reduction family (`mpsgen.read.reduction`, `mpsgen.facts.reduction`) from the overlay's
files: the kernels the file instantiates by op prefix, variant and pair, each at the line that
registers it; the host launcher's variant suffixes, which stub functions reach it and with which
prefixes."""

from __future__ import annotations

from pathlib import Path

from mpsgen.edit.workspace import Workspace
from mpsgen.facts.reduction import reduction_of
from mpsgen.facts.views import Views, read_op
from mpsgen.read.checkout import Checkout
from mpsgen.read.reduction import ReductionName, parse_reduction_name, read_reduction_host
from reduction_support import REDUCE_METAL, REDUCE_MM, reduction_checkout

VARIANTS = {"", "_flat", "_flat_strided", "_outer", "_outer_small_dim", "_narrow", "_innermost", "_innermost_chunk"}
SUM_PAIRS = {("float", "float"), ("half", "half"), ("half", "float"), ("bfloat", "bfloat"), ("bfloat", "float"),
             ("int", "long"), ("long", "long"), ("bool", "long")}


def test_names_are_split_at_the_first_reduction_with_the_input_type_first():
    assert parse_reduction_name("prod_reduction_outer_small_dim_half_float") == ReductionName("prod", "_outer_small_dim", "half", "float")
    assert parse_reduction_name("norm_l2_combine_reduction_float_bfloat") == ReductionName("norm_l2_combine", "", "float", "bfloat")
    assert parse_reduction_name("var_reduction_innermost_float3_half") == ReductionName("var", "_innermost", "float3", "half")
    assert parse_reduction_name("sum_dense_float_float") is None


def views_of(root: Path) -> Views:
    return Views(Workspace(Checkout.find(root, None)))


def test_kernels_by_prefix_variant_and_pair_at_their_lines(tmp_path):
    root = reduction_checkout(tmp_path)
    views = views_of(root)
    facts = reduction_of(views, read_op(views, "sum"))
    kernels = facts.kernels
    assert set(kernels.ops) == {"sum", "max"}
    assert set(kernels.ops["sum"]) == VARIANTS
    assert all(set(by_pair) == SUM_PAIRS for by_pair in kernels.ops["sum"].values())
    lines = (root / REDUCE_METAL).read_text().splitlines()
    # each kernel at the REGISTER_SUM line that instantiates it
    line = kernels.ops["sum"]["_narrow"][("half", "float")]
    assert lines[line - 1] == "REGISTER_SUM(half, float);"
    assert kernels.pairs("max") == {(t, t) for t in ("float", "half", "bfloat", "int", "long")}


def test_host_launcher_suffixes_routes_and_prefixes(tmp_path):
    root = reduction_checkout(tmp_path)
    host = read_reduction_host((root / REDUCE_MM).read_text(), REDUCE_MM)
    assert host.suffix_function == "reduction_kernel_suffix"
    assert host.variants == VARIANTS | {"_combine"}
    assert host.routes("sum_kernel_mps") and host.routes("max_values_kernel_mps")
    assert not host.routes("prod_mps") and not host.routes("reduction_out_mps")
    assert host.prefixes("sum_kernel_mps") == ("sum",)
    assert host.prefixes("max_values_kernel_mps") == ("max",)


def test_facts_of_a_native_and_a_legacy_reduction(tmp_path):
    views = views_of(reduction_checkout(tmp_path))
    native = reduction_of(views, read_op(views, "sum"))
    assert (native.function, native.routed, native.prefixes) == ("sum_kernel_mps", True, ("sum",))
    assert native.required_variants("sum") == VARIANTS and native.missing() == []
    legacy = reduction_of(views, read_op(views, "prod"))
    assert (legacy.function, legacy.routed, legacy.prefixes) == ("", False, ())
    # an elementwise op has no reduction facts
    assert reduction_of(views, read_op(views, "atan2")) is None


def test_a_pass_named_by_one_type_is_not_a_variant_of_value_ops(tmp_path):
    """The launcher names ArgCombine on a path value ops reach too (behind an is_arg flag), but the
    kernel file instantiates `_combine` under one-type names only: it is no variant sum needs."""
    views = views_of(reduction_checkout(tmp_path))
    facts = reduction_of(views, read_op(views, "sum"))
    assert "_combine" in facts.host.picks("sum_kernel_mps")
    assert facts.kernels.single_type_variants == {"_combine"}
    assert facts.launcher_variants == VARIANTS and facts.missing() == []
