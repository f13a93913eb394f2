"""`mpsgen try OP`: run the op's functor, as it stands in the checkout, and compare with a CPU reference."""
