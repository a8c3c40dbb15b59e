"""A model scored from its predictions file, exactly as in this process.

``episodes export`` writes the test episodes a gap run scores; a script in another process
(which reads the export with numpy and json only and imports nothing of the toolkit's
scoring) predicts them with a learner and writes the predictions with numpy; ``gap``,
``ladder`` and ``audit --predictions`` score the file.  The numbers -- per-episode AP, CBA
and query predictions, and the bootstrap intervals -- are those of the same learner scored
in this process (``--learner``).  Every bad predictions file is refused in one line, exit 2,
nothing written.
"""
from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bayes_concepts.cli import main
from bayes_concepts.results import load_results

from conftest import run

EPISODES, SEED, SPLIT = 12, 3, "counting"
GAP = ["--split", SPLIT, "--episodes", str(EPISODES), "--seed", str(SEED)]

#: The model outside the toolkit: numpy and json read the export; the learner's own package
#: loads the model (a saved model directory, or a reference learner by name) and predicts;
#: numpy writes the predictions.  ``batch``: the learner's batch path on scene ids;
#: ``dicts``: fit / predict_proba / decision_function per episode on the export's scene dicts.
OUTSIDE = '''
import json, sys
import numpy as np
space_dir, export, out, spec, mode = sys.argv[1:]
from bayes_concepts.spaces import load_space
from bayes_concepts.learners import make_learner
space = load_space(space_dir)
learner = make_learner(space, spec)
ex = np.load(export)
identity = json.loads(str(ex["identity"]))
bank = ex["test_bank"]
scenes = dict(zip(ex["scene_ids"].tolist(), json.loads(str(ex["scenes"]))))
arrays = {"format": np.array("bayes-concepts predictions 1"), "identity": ex["identity"], "test_bank": bank}
for c, cell in enumerate(identity["cells"]):
    S, Y, Q = ex[f"cell{c}/support_scenes"], ex[f"cell{c}/support_labels"], ex[f"cell{c}/query_scenes"]
    query, scores = np.empty(Q.shape), np.empty((len(S), len(bank)))
    if mode == "batch":
        assert (bank == np.asarray(space.test_bank.scene_ids)).all()
        for lo, hi, q, s in learner.episode_predictions(S, Y, Q):
            query[lo:hi], scores[lo:hi] = q, s
    else:
        bank_scenes = [scenes[i] for i in bank.tolist()]
        for e in range(len(S)):
            learner.fit([scenes[i] for i in S[e].tolist()], Y[e])
            query[e] = learner.predict_proba([scenes[i] for i in Q[e].tolist()])
            scores[e] = learner.decision_function(bank_scenes)
    arrays[f"cell{c}/query"], arrays[f"cell{c}/test_bank_scores"] = query, scores
np.savez(out, **arrays)
print("outside-scoring modules imported:", sorted(m for m in sys.modules if m.startswith("bayes_concepts.")
                                                  and m.split(".")[1] in ("gap", "gap_cells", "ladder", "predictions")))
'''


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("predictions")


@pytest.fixture(scope="module")
def export(small_space_dir, work):
    """The test episodes of ``gap --split counting --episodes 12 --seed 3`` (hard and easy), exported."""
    out, answers = work / "export.npz", work / "answers.npz"
    assert main(["episodes", "export", str(small_space_dir), *GAP, "--out", str(out), "--answers", str(answers)]) == 0
    return out


@pytest.fixture(scope="module")
def relnet(small_space_dir, work):
    """A schema relation net trained for two steps on the split (a model directory)."""
    out = work / "relnet"
    assert main(["train", str(small_space_dir), "--split", SPLIT, "--learner", "schema-relnet", "--steps", "2",
                 "--batch", "4", "--val-every", "2", "--val-episodes", "10", "--precision", "fp32", "--out",
                 str(out)]) == 0
    return out


def outside(space_dir, export, out, spec, mode="batch") -> Path:
    """Run the outside model in its own process; its predictions file."""
    script = Path(out).with_suffix(".py")
    script.write_text(OUTSIDE)
    done = subprocess.run([sys.executable, str(script), str(space_dir), str(export), str(out), str(spec), mode],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "outside-scoring modules imported: []" in done.stdout  # no gap, ladder or predictions code ran there
    return Path(out)


@pytest.fixture(scope="module")
def prototype_file(small_space_dir, export, work):
    return outside(small_space_dir, export, work / "prototype.npz", "prototype")


def gap_json(args, capsys) -> tuple:
    capsys.readouterr()
    status = main(["gap", *[str(a) for a in args], "--json"])
    out = capsys.readouterr().out
    assert status == 0
    return json.loads(out)["results"]


def _same_learner(space_dir, tmp, learner_args, name, pred_file, capsys):
    """gap with the learner in this process and with its predictions file: the same numbers."""
    direct_nc, file_nc = tmp / f"{name}_direct.nc", tmp / f"{name}_file.nc"
    direct = gap_json([space_dir, *GAP, *learner_args, "--out", direct_nc], capsys)
    via_file = gap_json([space_dir, *GAP, "--predictions", pred_file, "--name", name, "--out", file_nc], capsys)
    a, b = load_results(direct_nc), load_results(file_nc)
    for metric in ("ap", "cba", "predictive_entropy", "query_pred", "concept"):
        x = a[metric].sel(learner=name).values if "learner" in a[metric].dims else a[metric].values
        y = b[metric].sel(learner=name).values if "learner" in b[metric].dims else b[metric].values
        np.testing.assert_array_equal(x, y, err_msg=metric)
    assert np.isfinite(a["ap"].sel(learner=name).values).all()
    for r, s in zip(direct, via_file):
        assert (r["split"], r["negatives"]) == (s["split"], s["negatives"])
        # means, intervals, differences from the weak oracle ('learned' is read from a trained model's card,
        # which a predictions file does not carry)
        assert {k: v for k, v in r["learners"][name].items() if k != "learned"} == s["learners"][name]
        assert r["gap"] == s["gap"]
    return direct


def test_a_prototype_scored_from_its_predictions_file_is_scored_exactly_as_in_process(
        small_space_dir, prototype_file, tmp_path, capsys):
    rows = _same_learner(small_space_dir, tmp_path, ["--learner", "prototype"], "prototype", prototype_file, capsys)
    entry = rows[0]["learners"]["prototype"]
    assert entry["episodes"] == EPISODES and entry["map_ci"][0] <= entry["map"] <= entry["map_ci"][1]


def test_the_export_s_scene_dicts_are_enough_to_predict(small_space_dir, export, work, tmp_path, capsys):
    """The outside model may read the scenes themselves (JSON), not the space's ids: the
    prototype learner fitted on the export's scene dicts episode by episode scores the same."""
    dicts = outside(small_space_dir, export, work / "prototype_dicts.npz", "prototype", "dicts")
    _same_learner(small_space_dir, tmp_path, ["--learner", "prototype"], "prototype", dicts, capsys)


def test_a_trained_relation_net_scored_from_its_predictions_file_is_scored_exactly_as_in_process(
        small_space_dir, export, relnet, work, tmp_path, capsys):
    pred = outside(small_space_dir, export, work / "relnet.npz", relnet)
    name = json.loads((relnet / "card.json").read_text()).get("name") or relnet.name
    _same_learner(small_space_dir, tmp_path, ["--learner", relnet], name, pred, capsys)


def test_ladder_puts_the_predictions_beside_the_rungs(small_space_dir, prototype_file, capsys):
    common = [str(small_space_dir), *GAP, "--rungs", "memoriser", "strong", "--published", "none", "--n-boot", "50",
              "--json"]
    capsys.readouterr()
    assert main(["ladder", *common, "--learner", "prototype"]) == 0
    direct = json.loads(capsys.readouterr().out)["results"]
    assert main(["ladder", *common, "--predictions", str(prototype_file), "--name", "prototype"]) == 0
    via_file = json.loads(capsys.readouterr().out)["results"]
    assert [r["models"]["prototype"] for r in direct] == [r["models"]["prototype"] for r in via_file]
    assert all(set(r["rungs"]) == {"memoriser", "strong"} for r in via_file)
    assert main(["ladder", *common[:-1], "--predictions", str(prototype_file)]) == 0  # the table: a column after them
    head = capsys.readouterr().out.splitlines()[0].split()
    assert head[-1] == "prototype" and head.index("memoriser") < head.index("prototype")


def test_audit_places_the_predictions_between_the_oracles(small_space_dir, prototype_file, tmp_path, capsys):
    from bayes_concepts.gap import summarise
    gap_json([small_space_dir, *GAP, "--predictions", prototype_file, "--out", tmp_path / "gap.nc"], capsys)
    rows = summarise(load_results(tmp_path / "gap.nc"))  # the audit's intervals: bootstrap seed 0, as for the oracles
    capsys.readouterr()
    assert main(["audit", str(small_space_dir), *GAP, "--predictions", str(prototype_file), "--name", "proto"]) == 0
    out = capsys.readouterr().out
    hard = next(r for r in rows if r["negatives"] == "hard")["learners"]["prototype"]
    line = next(x for x in out.splitlines() if x.startswith(f"{SPLIT}  hard  mAP "))
    assert f"{hard['map']:.1f} [{hard['map_ci'][0]:.1f}, {hard['map_ci'][1]:.1f}]" in line
    assert "proto" in out.split("learners on the same test episodes")[0]


def test_the_export_holds_what_a_model_needs_and_no_query_labels(small_space, small_space_dir, export):
    from bayes_concepts.export import read_export
    from bayes_concepts.spaces import load_space
    space = load_space(small_space_dir)
    ex = read_export(export)
    ident = ex["identity"]
    assert ident["space_manifest_sha256"] == space.manifest_sha256()
    assert [(c["split"], c["negatives"]) for c in ident["cells"]] == [(SPLIT, "hard"), (SPLIT, "easy")]
    assert ident["seed"] == SEED and ident["episodes_per_cell"] == EPISODES
    np.testing.assert_array_equal(ex["test_bank"], space.test_bank.scene_ids)
    with zipfile.ZipFile(export) as z:
        assert not any("label" in n and "support" not in n for n in z.namelist())  # no query labels in the export
    with np.load(export.with_name("answers.npz")) as answers:
        assert answers["identity"] == np.load(export)["identity"]
    # the scenes: every id the episodes and the test bank use, as the space's own scene dicts
    used = np.concatenate([ex["test_bank"]] + [a.ravel() for c in ex["cells"]
                                               for a in (c["support_scenes"], c["query_scenes"])])
    assert set(ex["scene_ids"].tolist()) == set(used.tolist())
    for k in (0, len(ex["scene_ids"]) // 2, len(ex["scene_ids"]) - 1):
        assert ex["scenes"][k] == space.scene(int(ex["scene_ids"][k]))
    # the episodes are those the gap draws (its cells' seeds and shapes): the same hash, ids and labels
    from bayes_concepts.gap import cell_seed
    from bayes_concepts.gap_cells import draw_cell
    from bayes_concepts.splits import load_splits
    split = load_splits(space, [SPLIT])[SPLIT]
    for c, cell in enumerate(ident["cells"]):
        eps = draw_cell(space, SPLIT, split, EPISODES, cell["negatives"], cell_seed(SEED, SPLIT, cell["negatives"]),
                        None, "union", cell["shape"])
        assert eps.sha256() == cell["sha256"]
        for key in ("support_scenes", "support_labels", "query_scenes"):
            np.testing.assert_array_equal(ex["cells"][c][key], getattr(eps, key))


def test_the_export_with_pictures(small_space_dir, tmp_path):
    out = tmp_path / "ex.npz"
    assert main(["episodes", "export", str(small_space_dir), "--split", SPLIT, "--negatives", "hard", "--episodes",
                 "2", "--render", "image", "--out", str(out)]) == 0
    from bayes_concepts.engine.rendered import render_items
    from bayes_concepts.export import read_export
    from bayes_concepts.spaces import load_space
    ex = read_export(out)
    assert ex["pictures"].dtype == np.uint8 and len(ex["pictures"]) == len(ex["scene_ids"])
    assert ex["pictures_info"]["modality"] == "image"
    space = load_space(small_space_dir)
    k = [0, len(ex["scene_ids"]) - 1]
    one, _ = render_items(space, "image", ex["scene_ids"][k])
    np.testing.assert_array_equal(ex["pictures"][k], one)
    from bayes_concepts.scenes.render import render_scenes
    np.testing.assert_array_equal(ex["pictures"][k[:1]], render_scenes(
        np.asarray(space.scene_codes[ex["scene_ids"][k[:1]]]), space.schema, height=80, width=120, supersample=2))


# ------------------------------------------------------------------ refusals
def _rewrite(src: Path, dst: Path, change) -> Path:
    with np.load(src) as data:
        arrays = {k: data[k] for k in data.files}
    change(arrays)
    np.savez(dst, **arrays)
    return dst


def _identity(change):
    def edit(arrays):
        ident = json.loads(str(arrays["identity"]))
        change(ident)
        arrays["identity"] = np.array(json.dumps(ident, sort_keys=True))
    return edit


def _set(key, value):
    def edit(arrays):
        arrays[key] = value(arrays[key]) if callable(value) else value
    return edit


def _drop(*keys):
    def edit(arrays):
        for k in keys:
            del arrays[k]
    return edit


def _nan_at(key, value=np.nan):
    def edit(arrays):
        a = arrays[key].copy()
        a[2, 3] = value
        arrays[key] = a
    return edit


def _swap_bank(ids):
    ids = ids.copy()
    ids[[0, 1]] = ids[[1, 0]]
    return ids


BAD = {
    "another space": (_identity(lambda i: i.update(space_manifest_sha256="0" * 64)), "predictions for another space"),
    "a missing cell": (_drop("cell1/query", "cell1/test_bank_scores"), "missing episodes: no cell1/query"),
    "an extra cell": (lambda a: a.update({"cell2/query": a["cell0/query"]}), "extra episodes: cell2/query"),
    "missing episodes": (_set("cell0/query", lambda q: q[:-1]), "has 11 episodes, the export 12: missing"),
    "extra episodes": (_set("cell1/test_bank_scores", lambda s: np.vstack([s, s[:1]])),
                       "has 13 episodes, the export 12: extra episodes"),
    "a NaN probability": (_nan_at("cell0/query"), "NaN at episode 2, query scene 3"),
    "a probability above 1": (_nan_at("cell1/query", 1.5), "probability 1.5 at episode 2, query scene 3 is outside"),
    "a negative probability": (_nan_at("cell0/query", -0.25), "probability -0.25 at episode 2"),
    "a NaN score": (_nan_at("cell1/test_bank_scores"), "cell1/test_bank_scores (split counting, easy negatives): NaN"),
    "an infinite score": (_nan_at("cell0/test_bank_scores", np.inf), "an infinite value at episode 2, test-bank"),
    "query columns": (_set("cell0/query", lambda q: q[:, :-1]), "has shape (12, 24), expected (12, 25)"),
    "score columns": (_set("cell0/test_bank_scores", lambda s: s[:, :-1]), "has shape (12, 1280), expected (12, 1281)"),
    "one score row per episode, flat": (_set("cell0/query", lambda q: q.ravel()), "expected (12, 25)"),
    "wrong test-bank ids": (_set("test_bank", _swap_bank), "wrong test-bank ids: column 0 is scene"),
    "a shorter test bank": (_set("test_bank", lambda ids: ids[:-1]), "test_bank holds 1,280 scene ids"),
    "no identity": (_drop("identity"), "not a predictions file (no identity"),
    "another format": (_set("format", np.array("my predictions")), "format 'my predictions', expected"),
    "strings as probabilities": (_set("cell0/query", lambda q: q.astype(str)), "cell0/query is <U"),
    "an unexpected array": (lambda a: a.update({"notes": np.arange(3)}), "unexpected array 'notes'"),
    "a damaged identity": (_identity(lambda i: i.pop("cells")), "the identity is damaged"),
    "other episodes": (_identity(lambda i: i["cells"][1].update(sha256="f" * 64, head_sha256="f" * 64)),
                       "episodes this run draws for split counting (easy negatives) are not those"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_a_bad_predictions_file_is_refused_in_one_line_and_nothing_is_written(
        case, small_space_dir, prototype_file, tmp_path, capsys):
    change, message = BAD[case]
    bad = _rewrite(prototype_file, tmp_path / "bad.npz", change)
    results = tmp_path / "results.nc"
    status, out, err = run(["gap", small_space_dir, *GAP, "--predictions", bad, "--out", results], capsys)
    assert status == 2, (out, err)
    assert len(err.strip().splitlines()) == 1 and message in err, err
    assert "Traceback" not in err and not results.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.npz"]


def test_an_identity_edited_past_its_head_is_refused_when_the_cell_is_scored(small_space_dir, prototype_file,
                                                                             tmp_path, capsys):
    """The first episodes' hash agrees, the whole cell's does not: refused when the cell is
    scored -- after the oracles' progress, before anything is written."""
    bad = _rewrite(prototype_file, tmp_path / "bad.npz", _identity(lambda i: i["cells"][1].update(sha256="f" * 64)))
    results = tmp_path / "results.nc"
    status, out, err = run(["gap", small_space_dir, *GAP, "--predictions", bad, "--out", results], capsys)
    lines = [x for x in err.strip().splitlines() if not x.startswith("comp gap:")]  # the progress bar's lines
    assert status == 2 and len(lines) == 1 and "counting (easy negatives) are not those" in lines[0], err
    assert not results.exists() and out == ""


@pytest.mark.parametrize("argv, message", [
    (["--split", SPLIT, "--episodes", "12", "--seed", "4"], "predicts episodes of seed 3, this run draws seed 4"),
    (["--split", SPLIT, "--episodes", "13", "--seed", "3"], "episodes per cell 12, this run draws episodes per cell 13"),
    ([*GAP, "--negatives", "hard"], "extra episodes: predictions for split counting (easy negatives)"),
    (["--split", SPLIT, "concept_iid", "--episodes", "12", "--seed", "3"],
     "no predictions for the episodes of split concept_iid (hard negatives)"),
    ([*GAP, "--hard-mode", "alternative"], "hard-negative mode union, this run draws hard-negative mode alternative"),
    ([*GAP, "--query-negatives", "random"], "query negatives as the support's, this run draws query negatives random"),
    ([*GAP, "--episode-shape", "4,20"], "shape 5+20 support, 5+20 query in the file, 4+20 support, 4+20 query"),
    ([*GAP, "--name", "strong"], "the name 'strong' is an oracle's"),
    ([*GAP, "--name", "a", "--name", "b"], "--name given 2 time(s) for 1 --predictions file(s)"),
    ([*GAP, "--learner", "prototype"], "a learner named 'prototype' is already scored"),
])
def test_predictions_for_other_episodes_than_the_run_s_are_refused(argv, message, small_space_dir, prototype_file,
                                                                    tmp_path, capsys):
    results = tmp_path / "results.nc"
    status, out, err = run(["gap", small_space_dir, *argv, "--predictions", prototype_file, "--out", results], capsys)
    assert status == 2 and len(err.strip().splitlines()) == 1 and message in err, err
    assert not results.exists()


def test_what_is_not_a_predictions_file_is_named(small_space_dir, tmp_path, capsys):
    text, npy, obj = tmp_path / "p.json", tmp_path / "p.npy", tmp_path / "obj.npz"
    text.write_text("{}")
    np.save(npy, np.zeros(3))
    np.savez(obj, format=np.array("bayes-concepts predictions 1"), identity=np.array([{"a": 1}], dtype=object),
             test_bank=np.arange(3))
    for path, message in ((text, "this is JSON text"), (npy, "this is a NumPy .npy array"),
                          (tmp_path / "none.npz", "no such predictions file"), (tmp_path, "is a directory"),
                          (obj, "cannot read identity")):
        status, _, err = run(["gap", small_space_dir, *GAP, "--predictions", path], capsys)
        assert status == 2 and len(err.strip().splitlines()) == 1 and message in err, (path, err)
    status, _, err = run(["gap", small_space_dir, *GAP, "--name", "x"], capsys)
    assert status == 2 and "--name given 1 time(s) for 0 --predictions" in err


def test_export_refusals(small_space, small_space_dir, export, tmp_path, capsys):
    # a file the toolkit did not write is never replaced; its own export only with --force
    mine = tmp_path / "mine.npz"
    mine.write_text("notes")
    status, _, err = run(["episodes", "export", small_space_dir, *GAP, "--out", mine], capsys)
    assert status == 2 and mine.read_text() == "notes"
    copy = tmp_path / "copy.npz"
    copy.write_bytes(export.read_bytes())
    status, _, err = run(["episodes", "export", small_space_dir, *GAP, "--out", copy], capsys)
    assert status == 2 and "--force" in err
    assert main(["episodes", "export", str(small_space_dir), *GAP, "--out", str(copy), "--force"]) == 0
    status, _, err = run(["episodes", "export", small_space_dir, *GAP, "--out", copy, "--answers", copy], capsys)
    assert status == 2 and "the same file as --out" in err
    from bayes_concepts.export import ExportError, export_episodes
    from bayes_concepts.splits import load_splits
    with pytest.raises(ExportError, match="save the space first"):
        export_episodes(small_space, load_splits(small_space, [SPLIT]), n_episodes=2)


# ------------------------------------------------------------------ the scorer's twin
class Replay:
    """A protocol-only learner replaying stored predictions episode by episode (the slow,
    obvious path: fit / predict_proba / decision_function), to compare the file's scoring with."""

    def __init__(self, episodes, query, scores):
        self.eps, self.query, self.scores, self.e = episodes, query, scores, -1

    def fit(self, scenes, labels):
        self.e += 1
        assert np.array_equal(scenes, self.eps.support_scenes[self.e])
        return self

    def predict_proba(self, scenes):
        return self.query[self.e]

    def decision_function(self, scenes):
        return self.scores[self.e]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_the_file_s_scoring_equals_the_protocol_path_on_random_predictions(data, small_space_dir, export, tmp_path):
    """Random probabilities and scores -- steered into ties, 0, 1, exactly 0.5 and constant rows
    -- scored from a predictions file equal the same numbers replayed through fit /
    predict_proba / decision_function episode by episode."""
    from bayes_concepts.export import read_export
    from bayes_concepts.learners.scoring import evaluate_by_protocol, score_learner
    from bayes_concepts.predictions import predictions_learners, write_predictions
    from bayes_concepts.spaces import load_space
    from bayes_concepts.splits import load_splits
    from bayes_concepts.gap_cells import draw_cell
    from bayes_concepts.gap import cell_seed
    space = load_space(small_space_dir)
    splits = load_splits(space, [SPLIT])
    ex = read_export(export)
    n_bank = len(ex["test_bank"])
    levels = st.sampled_from([0.0, 0.5, 1.0, 0.25, 0.75, 1e-12, 1 - 1e-12])
    query, scores = [], []
    for cell in ex["cells"]:
        shape = cell["query_scenes"].shape
        kind = data.draw(st.sampled_from(["levels", "uniform", "constant"]))
        seed = data.draw(st.integers(0, 2**16))
        rng = np.random.default_rng(seed)
        if kind == "levels":
            q = rng.choice([0.0, 0.5, 1.0, 0.25, 1e-12], size=shape)
            s = rng.integers(-2, 3, size=(shape[0], n_bank)).astype(float)  # many ties
        elif kind == "uniform":
            q, s = rng.random(shape), rng.standard_normal((shape[0], n_bank))
        else:
            q, s = np.full(shape, data.draw(levels)), np.zeros((shape[0], n_bank))
        query.append(q)
        scores.append(s)
    path = tmp_path / f"p{data.draw(st.integers(0, 10**9))}.npz"
    write_predictions(path, ex, query, scores, overwrite=True)
    learners = predictions_learners(space, splits, [path], n_episodes=EPISODES, seed=SEED)
    name = path.stem
    for c, cell in enumerate(ex["identity"]["cells"]):
        eps = draw_cell(space, SPLIT, splits[SPLIT], EPISODES, cell["negatives"], cell_seed(SEED, SPLIT, cell["negatives"]),
                        None, "union", cell["shape"])
        fast = score_learner(learners[name][SPLIT], space, eps, name)
        slow = evaluate_by_protocol(Replay(eps, query[c], scores[c]), space, eps, name)
        for key in ("ap", "cba", "predictive_entropy", "query_pred", "empty"):
            np.testing.assert_array_equal(fast[key], slow[key], err_msg=key)
    path.unlink()
