"""Attribute-object pair benchmarks (CZSL and RLCL layouts): pair spaces from files, published results, data fetching."""
from . import published  # noqa: F401  (registers RLCL's published tables)
