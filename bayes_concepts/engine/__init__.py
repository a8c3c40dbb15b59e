"""The engine: bit-sliced executor (compiler + numba kernels) and the slow interpreter."""
from .executor import compile_for, count, evaluate_programs, popcount, run, signature_bits
from .interpreter import evaluate

__all__ = ["compile_for", "count", "evaluate_programs", "popcount", "run", "signature_bits", "evaluate"]
