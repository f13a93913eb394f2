"""mpsgen: native Metal operators for PyTorch's MPS backend, generated and migrated."""

__version__ = "0.1.0"
