"""An expression may cast with `static_cast<TYPE>(...)`: the MPSGraph source writes bool results
that way (signbit), and a user's --expr may too; the type between the brackets is no operand."""

import pytest

from mpsgen.facts.functor import validate_expr
from mpsgen.errors import MpsgenError


def test_a_static_cast_to_a_named_type_is_a_call():
    validate_expr("static_cast<bool>(signbit(x))", ("x",))
    validate_expr("static_cast<float>(a) * static_cast<metal::half>(b)", ("a", "b"))


def test_the_cast_s_argument_is_still_checked():
    with pytest.raises(MpsgenError, match="uses 'y', which is not an operand"):
        validate_expr("static_cast<bool>(y)", ("x",))


def test_a_comparison_is_not_read_as_a_cast():
    with pytest.raises(MpsgenError, match="uses 'static_cast', which is not an operand"):
        validate_expr("static_cast < x", ("x",))
