"""CURI's published results (its papers' tables), registered as ``curi``."""
from __future__ import annotations

from ...published import PublishedResults, published_results, read
from ...resources import data_file


@published_results.register("curi")
def _curi_results() -> PublishedResults:
    """``hypotheses/published/curi.toml``."""
    return read(data_file("published", "curi.toml"))
