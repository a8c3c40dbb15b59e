"""The results' attributes have one schema (bayes_concepts.results.ATTRIBUTES), one writer
(set_attrs) and one reader (get_attr): every attribute a comp-gap, ladder or protocol run writes
is declared with its kind and meaning, and reads back as it was written."""
from __future__ import annotations

from pathlib import Path

import pytest
import xarray as xr

import bayes_concepts as bc
from bayes_concepts.results import ATTRIBUTES, ResultsError, get_attr, set_attrs

RELEASE = Path(__file__).parent / "fixtures" / "saved_spaces" / "curi_release"


def test_every_attribute_of_a_run_is_declared_and_reads_back(tmp_path):
    from bayes_concepts.ladder import parse_rungs
    run = bc.resolve(bc.load_space(RELEASE), splits=["complexity"], prior="length")
    ds = run.ladder(parse_rungs(["memoriser", "atom", "strong"], None, None, run.space), ("hard",), 4, 0)
    assert set(ds.attrs) <= set(ATTRIBUTES)
    assert {"oracle_settings", "splits", "excluded", "protocol", "protocol_overrides", "ladder"} <= set(ds.attrs)
    bc.save_results(ds, tmp_path / "r.nc")
    back = bc.load_results(tmp_path / "r.nc")
    for name in ds.attrs:
        assert get_attr(back, name) == get_attr(ds, name), name
    assert get_attr(back, "oracle_settings")["prior"] == "length"
    assert all(a.meaning and a.kind in ("text", "int", "float", "json") for a in ATTRIBUTES.values())


def test_an_undeclared_attribute_is_refused_and_bad_json_is_one_line():
    ds = xr.Dataset()
    with pytest.raises(ResultsError, match="not declared"):
        set_attrs(ds, nosuch=1)
    ds.attrs["excluded"] = "{not json"
    with pytest.raises(ResultsError, match="attribute 'excluded' is not valid JSON"):
        get_attr(ds, "excluded")
    assert get_attr(ds, "splits", {}) == {}
