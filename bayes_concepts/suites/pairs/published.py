"""RLCL's published results (its Tables 1, 4 and 5), registered as ``rlcl``."""
from __future__ import annotations

from ...published import PublishedResults, published_results, read
from ...resources import data_file


@published_results.register("rlcl")
def _rlcl_results() -> PublishedResults:
    """``hypotheses/published/rlcl.toml``."""
    return read(data_file("published", "rlcl.toml"))
