"""Issue 56, item 8: what the commands print says what happened -- a finished run's log ends on its
final count, one episode has no interval, a rung level with the strong oracle is 0.0 (not
-0.0), and hard episodes topped up with random negatives are counted and shown."""
from __future__ import annotations

import io
import json

import numpy as np
import pytest
from tqdm.auto import tqdm

from bayes_concepts.gap import NO_INTERVAL, ci_text, compute_gap, format_table, paired_bootstrap, summarise
from bayes_concepts.ladder import format_ladder
from bayes_concepts.terminal import LogProgress
from bayes_concepts.splits import load_splits

from conftest import run


def test_a_finished_bar_logs_its_final_count():
    """A bar redrawn faster than the log's interval used to end the log on an early count
    ("comp gap: 78% 14/18"); the last redraw is written when the bar closes."""
    out = io.StringIO()
    log = LogProgress(out, every=1e9)  # only the first redraw passes the throttle
    bar = tqdm(total=18, file=log, desc="comp gap", unit="cell", leave=False, mininterval=0)
    for _ in range(18):
        bar.update(1)
    bar.refresh()
    bar.close()
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("comp gap:   0%")
    assert "100%" in lines[-1] and "18/18" in lines[-1]


def test_the_gap_run_logs_100_percent_at_the_end(small_space_dir, capsys):
    status, out, err = run(["gap", small_space_dir, "--split", "counting", "boolean", "--episodes", "10",
                            "--negatives", "hard"], capsys)
    assert status == 0, err
    bars = [ln for ln in err.splitlines() if ln.startswith("comp gap:")]
    assert bars and "100%" in bars[-1]


@pytest.mark.parametrize("n", [0, 1])
def test_fewer_than_two_episodes_have_no_interval(n):
    mean, lo, hi = paired_bootstrap(np.full(n, 0.8), np.full(n, 0.6))
    assert np.isnan(lo) and np.isnan(hi)
    assert (np.isnan(mean) if n == 0 else mean == pytest.approx(0.2))
    assert ci_text(lo, hi) == NO_INTERVAL
    assert ci_text(1.0, 2.5) == "[1.0, 2.5]"


def test_episodes_1_prints_no_interval(small_space_dir, capsys):
    status, out, err = run(["gap", small_space_dir, "--split", "counting", "--episodes", "1", "--negatives", "hard"],
                           capsys)
    assert status == 0, err
    row = next(ln for ln in out.splitlines() if ln.startswith("counting"))
    assert NO_INTERVAL in row
    lo_hi = [tok for tok in row.split("[")[1:] if not tok.startswith("n < 2")]
    assert lo_hi == []  # no [x, x] interval anywhere on the row


def test_a_gap_that_rounds_to_zero_prints_without_a_sign():
    rows = [{"split": "s", "negatives": "hard", "solved_at": "learned_prior",
             "rungs": {"learned_prior": {"gap": -0.03, "map": 99.0}, "strong": {"gap": 0.0, "map": 99.0}}}]
    text = format_ladder(rows)
    assert "-0.0" not in text and "0.0" in text


def test_topped_up_hard_episodes_are_counted_and_shown(small_space):
    splits = load_splits(small_space, ["counting"])
    ds = compute_gap(small_space, splits, ("hard", "easy"), 30, seed=0)
    assert ds["topup"].dims == ("split", "negatives", "episode")
    assert int(ds["topup"].sel(negatives="easy").sum()) == 0  # easy negatives are random by definition
    rows = summarise(ds)
    by = {r["negatives"]: r for r in rows}
    t = ds["topup"].sel(split="counting", negatives="hard").values
    assert by["hard"]["topup_negatives"] == int(t.sum())
    assert by["hard"]["topup_share"] == pytest.approx(float((t > 0).mean()))
    table = format_table(rows)
    if t.sum():
        assert "topped up at random" in table and f"{int(t.sum()):,} negatives" in table
    else:
        assert "topped up" not in table
    # a cell topped up by construction: the same rows with top-ups
    rows[0]["topup_negatives"], rows[0]["topup_share"] = 7, 0.25
    assert "25 % of episodes, 7 negatives" in format_table(rows)


def test_gap_json_carries_the_topup_share(small_space_dir, capsys):
    status, out, err = run(["gap", small_space_dir, "--split", "counting", "--episodes", "10", "--negatives", "hard",
                            "--json"], capsys)
    assert status == 0, err
    row = json.loads(out)["results"][0]
    assert 0.0 <= row["topup_share"] <= 1.0 and row["topup_negatives"] >= 0


def test_the_stage_table_has_a_row_for_every_stage_the_build_recorded():
    from bayes_concepts.commands.space import _stage_rows
    stages = {"sampled": 100, "unique": 90, "after_rejection": 80, "closure_families_added": 5,
              "clevr_templates_added": 7, "with_domain": 60, "after_firing_filter": 70, "synonym_classes": 50,
              "test_bank": 1000}
    rows = _stage_rows(stages)
    assert sorted(k for k, _ in rows) == sorted(stages)  # none left out
    labels = [lb for _, lb in rows]
    assert labels.index("rejection rules") < labels.index("clevr templates added") < labels.index("firing filter")


def test_the_clevr_build_counts_templates_apart_from_families(clevr_space):
    st = clevr_space.stages
    assert st["closure_families_added"] > 0 and st["clevr_templates_added"] > 0
