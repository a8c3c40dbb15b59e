"""Attribute-object pair benchmarks (CZSL and RLCL layouts): pair spaces from files, published results, data fetching."""
