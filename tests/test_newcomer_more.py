"""The newcomer's list, the rest: figures of a user's own split, the training budget and its
progress lines, counts in the singular, tables with long split names, rendering without
recompiling, the README's, the guide's and the Makefile's promises, the Python API refusing what the
command line refuses, and intervals for learners beside the oracles.

Most tests use the shared small space (``conftest.small_space``: the demo preset's grammar
and samplers at 20,000 programs x 5,000 scenes); the tables' tests use synthetic results.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import numpy as np
import pytest

import bayes_concepts as bc
from bayes_concepts import cli, options, terminal
from bayes_concepts.commands import figures
from bayes_concepts.errors import BayesConceptsError
from bayes_concepts.gap import format_models, format_table, paired_bootstrap, recorded_splits, summarise
from bayes_concepts.results import empty_dataset, load_results
from bayes_concepts.scale import MemoryLimitError
from conftest import TrainingClock, assert_one_line_error, run

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
#: a page of the guide (docs/), by its path under docs/
def _page(name: str) -> str:
    return (ROOT / "docs" / name).read_text(encoding="utf-8")


MAKEFILE = (ROOT / "Makefile").read_text(encoding="utf-8")

#: a split of the user's own: every concept using green and sphere held out
NGS = 'name = "no_green_spheres"\nkind = "held_out"\n[held_out]\npairs = [["green", "sphere"]]\n'


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


# ------------------------------------------------ item 4: the figures draw the results' split
@pytest.fixture(scope="module")
def ngs_results(small_space_dir, tmp_path_factory):
    """``gap --spec ngs.toml --split no_green_spheres`` on the small space: (folder, results file)."""
    folder = tmp_path_factory.mktemp("ngs")
    (folder / "ngs.toml").write_text(NGS)
    out = folder / "ngs.nc"
    assert cli.main(["gap", str(small_space_dir), "--spec", str(folder / "ngs.toml"), "--split", "no_green_spheres",
                     "--negatives", "hard", "--episodes", "20", "--json", "--out", str(out)]) == 0
    return folder, out


def test_results_record_the_spec_of_each_split(ngs_results, small_space):
    _, out = ngs_results
    record = recorded_splits(load_results(out))["no_green_spheres"]
    split = bc.make_split(small_space, tomllib.loads(NGS))
    assert record["spec"] == json.loads(json.dumps(split.spec))
    assert record["concepts_sha256"] == split.concepts_sha256()
    assert record["sizes"] == split.sizes() and record["protocol"] is None


def test_figures_draw_the_episode_view_from_the_results_split(ngs_results, small_space_dir, small_space, workdir,
                                                               capsys):
    """No --episode-split: results without Concept IID draw their own split's episodes (the
    true concept of the episode view is one of its test concepts), not Concept IID's."""
    _, out = ngs_results
    status, stdout, err = run(["figures", out, "--space", small_space_dir, "--out", "figs"], capsys)
    assert status == 0, err
    concepts = (workdir / "figs" / "episode_view_concepts.csv").read_text().splitlines()
    true_id = int(next(line for line in concepts if line.startswith("true concept")).split(",")[2])
    split = bc.make_split(small_space, tomllib.loads(NGS))
    assert true_id in split.test.tolist()
    assert {"green", "sphere"} <= set(small_space.programs[true_id].split())


def test_episode_split_by_name_is_made_from_the_recorded_spec(ngs_results, small_space):
    """--episode-split no_green_spheres without --spec: made again from the spec the results
    recorded (it was "unknown split" before); a split of the space still resolves by name."""
    _, out = ngs_results
    ds = load_results(out)
    split = figures.results_split(ds, small_space, "no_green_spheres")
    assert split.concepts_sha256() == bc.make_split(small_space, tomllib.loads(NGS)).concepts_sha256()
    assert figures.results_split(ds, small_space, "concept_iid").name == "concept_iid"
    assert figures.default_episode_split(ds) == "no_green_spheres"


def test_episode_split_with_other_concepts_than_the_results_is_refused(ngs_results, small_space_dir, workdir,
                                                                         capsys):
    folder, out = ngs_results
    (workdir / "ngs.toml").write_text(NGS.replace('"sphere"', '"cube"'))  # the same name, other concepts
    status, _, err = run(["figures", out, "--space", small_space_dir, "--out", "figs", "--episode-split",
                          "no_green_spheres", "--spec", "ngs.toml"], capsys)
    assert_one_line_error(status, err, "--episode-split no_green_spheres", "other concepts")
    assert not (workdir / "figs" / "episode_view.png").exists()


def test_episode_split_of_a_predicate_split_and_a_contradicting_protocol(small_space_dir, ngs_results):
    saved = bc.load_space(small_space_dir)  # the saved space, as gap read it: its kernels are compiled
    split = bc.split_from_predicate(saved, "short", lambda p: p.length <= 5)
    ds = bc.compute_gap(saved, {"short": split}, "hard", n_episodes=3)
    with pytest.raises(BayesConceptsError, match="Python predicate"):
        figures.results_split(ds, saved, "short")
    ds.attrs["protocol"] = "paper"
    from bayes_concepts.protocols import get_protocol
    with pytest.raises(BayesConceptsError, match="computed with protocol paper"):
        figures.results_split(ds, saved, "short", protocol=get_protocol("curi-release"))


# ------------------------------------------------ item 9: the training budget and its lines
@pytest.fixture(scope="module")
def concept_iid(small_space):
    return bc.load_splits(small_space, ["concept_iid"])["concept_iid"]


def _learner(space):
    return bc.ProtoNetLearner(space, "schema", "average", seed=0)


def test_next_cost_reserves_the_step_the_draw_and_the_closing_validation():
    from bayes_concepts.learners.training import _next_cost, _recent_max
    cost = {"step": 0.5, "draw": 2.0, "validate": 3.0, "save": 0.25}
    assert _next_cost(cost, draws=False) == 0.5 + 3.0 + 0.25
    assert _next_cost(cost, draws=True) == 0.5 + 2.0 + 3.0 + 0.25
    assert _recent_max(0.0, 1.5) == 1.5 and _recent_max(2.0, 0.5) == pytest.approx(1.6)  # a slow one lingers
    assert _recent_max(2.0, 3.0) == 3.0


def test_train_ends_within_its_budget(small_space, concept_iid, tmp_path, monkeypatch):
    """Validations of 2 s, steps of 0.5 s, a budget of 10 s: 12 steps fit with the closing
    validation (2 + 12 x 0.5 + 2 = 10); the rule before (stop once the budget is spent, then
    validate) took 16 steps and ended at 12 s -- as --budget 60s ran 74 s."""
    from bayes_concepts.learners import training
    learner = _learner(small_space)
    monkeypatch.setattr(training, "time", TrainingClock(learner, step=0.5, per_validation=2.0))
    h = learner.train(concept_iid, budget=10, val_every=1000, val_episodes=20, batch_episodes=4, chunk_episodes=64,
                      out=tmp_path / "m", progress=False, max_steps=50)  # max_steps: a bound should the rule fail
    assert (h["stopped"], h["steps"]) == ("budget", 12)
    assert h["wall_s"] == pytest.approx(10.0) and h["val_curve"][-1]["step"] == 12


def test_train_counts_the_budget_from_started(small_space, concept_iid, monkeypatch):
    """``started`` (the command line passes its own start): time spent before train() counts
    (5 s, then 2 + 2 x 0.5 + 2: two steps end at 10 s), and a budget already spent takes no step."""
    from bayes_concepts.learners import training
    h = _learner(small_space).train(concept_iid, budget=10, val_episodes=20, progress=False,
                                    started=time.perf_counter() - 60)
    assert (h["stopped"], h["steps"]) == ("budget", 0)
    learner = _learner(small_space)
    clock = TrainingClock(learner, step=0.5, per_validation=2.0)
    monkeypatch.setattr(training, "time", clock)
    h = learner.train(concept_iid, budget=10, val_episodes=20, batch_episodes=4, chunk_episodes=64, progress=False,
                      started=clock.t - 5.0, max_steps=50)  # max_steps: a bound should the rule fail
    assert (h["stopped"], h["steps"]) == ("budget", 2) and h["wall_s"] == pytest.approx(10.0)


def test_progress_before_the_first_step_shows_no_loss(small_space, concept_iid):
    lines = []
    _learner(small_space).train(concept_iid, max_steps=2, val_every=1, val_episodes=20, batch_episodes=4,
                                chunk_episodes=64, progress="auto", log=lines.append)
    assert lines and not any("nan" in line for line in lines), lines
    assert "step 0 (before the first training step)" in lines[0]
    assert re.search(r"step 1 \(\d+ episodes/s\) loss \d", lines[1]), lines[1]
    assert "after 2 steps (8 episodes," in lines[-1]


def test_budget_help_states_the_rule():
    train = cli.build_parser()._subparsers._group_actions[0].choices["train"]
    (budget,) = [a for a in train._actions if a.dest == "budget"]
    assert "command's start" in budget.help and "closing validation" in budget.help


# ------------------------------------------------------------ item 9: counts in the singular
@pytest.mark.parametrize("n, word, expected", [(1, "episode", "1 episode"), (0, "episode", "0 episodes"),
                                               (2_000, "step", "2,000 steps"), (1, "class", "1 class"),
                                               (3, "class", "3 classes")])
def test_counted(n, word, expected):
    assert terminal.counted(n, word, "classes" if word == "class" else None) == expected


def test_train_of_one_step_says_one_step(small_space_dir, workdir, capsys):
    status, out, err = run(["train", small_space_dir, "--split", "concept_iid", "--learner", "schema-average",
                            "--steps", "1", "--batch", "1", "--val-every", "1", "--val-episodes", "10",
                            "--out", "model", "--threads", "1"], capsys)
    assert status == 0, err
    assert ": 1 step (1 episode," in out
    # "1 steps" / "1 episodes" as words ("11 episodes/s" is a rate, not a count)
    assert not re.search(r"\b1 (steps|episodes)\b", out + err), out + err


def test_episodes_of_one_episode_say_one_episode(small_space_dir, workdir, capsys):
    status, out, err = run(["episodes", small_space_dir, "--split", "concept_iid", "--negatives", "easy", "--n", "1",
                            "--out", "one.npz"], capsys)
    assert status == 0, err
    assert "wrote 1 easy-negative episode of" in out and "1 distinct concept;" in out
    status, _, err = run(["episodes", "show", "one.npz", "5"], capsys)
    assert_one_line_error(status, err, "(1 episode in one.npz)")


# ---------------------------------------------------------- item 9: long split names in tables
def _synthetic(splits, learners=("strong", "weak"), n=40, seed=0):
    """Results of random metrics (a slow, obvious stand-in for a run) for the table tests."""
    rng = np.random.default_rng(seed)
    ds = empty_dataset(list(splits), ["hard", "easy"], list(learners), n)
    for m in ("ap", "cba"):
        ds[m].values[:] = rng.random(ds[m].shape)
    for m in ("posterior_entropy", "predictive_entropy"):
        ds[m].values[:] = rng.random(ds[m].shape)
    ds["weak_empty"] = ds["empty"].sel(learner="weak", drop=True)
    return ds


def _column_starts(line, fields):
    return [line.index(f) for f in fields]


@pytest.mark.parametrize("name", ["a_split_of_fifteen"[:15], "no_green_spheres_anywhere_at_all"])
def test_long_split_names_keep_the_columns(name):
    rows = summarise(_synthetic([name, "counting"], ("strong", "weak", "random")), n_boot=50)
    text = format_table(rows)
    assert format_models(rows, ["random"]) in text  # the learners' table follows the oracles'
    table = text.split("\n\n")[0].splitlines()
    head = table[0]
    neg_col = head.index("neg")
    data = [line for line in table[2:] if line.startswith((name, "counting"))]
    assert data and all(line[neg_col:neg_col + 4] in ("hard", "easy") for line in data), table
    models = format_models(rows, ["random"]).splitlines()
    neg_col, end = models[0].index("neg"), len(models[0])
    for line in models[2:-1]:
        if line.startswith((name, "counting")):
            assert line[neg_col:neg_col + 4] in ("hard", "easy"), models
        assert len(line) == end, models  # every row ends under the last column (the strong oracle's)


# ------------------------------------------------------------ item 9: rendering one scene
def test_the_renderers_kernels_are_cached_on_disk():
    """Rendering one scene compiled its kernels afresh in every process (~20 s); with numba's
    cache every kernel of the renderers is compiled once."""
    from numba.core.caching import NullCache
    from numba.core.registry import CPUDispatcher
    from bayes_concepts.scenes import render, sound
    kernels = [(m.__name__, name, f) for m in (render, sound) for name, f in vars(m).items()
               if isinstance(f, CPUDispatcher)]
    assert len(kernels) >= 5
    for module, name, f in kernels:
        assert not isinstance(f._cache, NullCache), f"{module}.{name}"


def test_render_does_not_load_torch(small_space_dir, tmp_path):
    """``render`` of one scene imported the learners (torch: seconds); the picture itself is
    stubbed here (a subprocess, so that the test sees what the command alone imports)."""
    code = ("import sys\nfrom pathlib import Path\nimport bayes_concepts.scenes.render as r\n"
            "r.render_scene_png = lambda *a, **k: Path(a[2]).write_bytes(b'png')\n"
            "from bayes_concepts.cli import main\n"
            f"assert main(['render', {str(small_space_dir)!r}, '3', '--out', {str(tmp_path / 's.png')!r}]) == 0\n"
            "print('torch' in sys.modules)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip().splitlines()[-1] == "False"


# ------------------------------------------------------------------- item 10: the docs
def _block(lang, text):
    return re.findall(rf"^```{lang}\n(.*?)^```", text, re.S | re.M)


def test_the_guide_s_split_spec_works_on_a_demo_space(small_space):
    (toml,) = _block("toml", _page("jobs/gap.md"))
    split = bc.make_split(small_space, tomllib.loads(toml))
    assert split.name == "no_red_cubes" and len(split.test) and len(split.train)


def test_make_figures_regenerates_paper_figs_from_the_curi_space():
    """`make figures` draws paper_figs/ as the guide (Set up) says they were made -- the curi space with
    protocol curi-release -- and never the demo space's table into paper_figs/."""
    recipe = re.search(r"^figures:(.*?)\n\n", MAKEFILE, re.S | re.M).group(1)
    assert "bayes-concepts demo" not in recipe
    assert re.search(r"reproduce_curi\.py --space \$\(CURI_SPACE\) --episodes 20000 --seed 0 \\\s+"
                     r"--out analyses/out/reproduce_curi_full --figures paper_figs", recipe)
    assert "$(CURI_SPACE)/manifest.json" in recipe.splitlines()[0]
    assert re.search(r"^CURI_SPACE \?= spaces/curi$", MAKEFILE, re.M)
    assert re.search(r"\$\(CURI_SPACE\)/manifest.json:.*\n\t.*--preset curi", MAKEFILE)
    # every committed figure has a writer in the recipe
    writers = {"reproduce_curi.py": {"comp_gap_hard", "comp_gap_easy", "entropy", "episode_view",
                                     "episode_view_concepts", "synonym_classes", "scene_properties"},
               "gap_vs_divergence.py": {"gap_vs_divergence"}, "modalities.py": {"modalities"},
               "shj_fit.py fit": {"shj_people", "shj_people_order"}}
    made = set().union(*(names for script, names in writers.items() if script in recipe))
    committed = {p.stem for p in (ROOT / "paper_figs").iterdir() if p.suffix in (".png", ".pdf", ".csv")}
    assert committed <= made, committed - made
    setup = _page("setup.md")
    assert "`make figures` regenerates the committed `paper_figs/`" in setup
    assert "regenerates `paper_figs/` from the demo space" not in setup + README


def test_the_guide_s_gap_numbers_say_seed_and_episodes():
    curi = _page("benchmarks/curi.md")
    gaps = curi[curi.index("**Gaps** (`curi-release`"):]
    first_number = re.search(r"Counting \d+\.\d \[", gaps)
    assert first_number and gaps.index("seed 0, 20,000 episodes per cell") < first_number.start()
    assert "--episodes 20000 --seed 0" in gaps[:600]


def test_make_docs_builds_the_reference_and_make_test_checks_it():
    test_recipe = re.search(r"^test:.*?\n((?:\t.*\n)+)", MAKEFILE, re.M).group(1)
    assert "docs-check" in test_recipe
    assert re.search(r"^SPHINX := .*sphinx-build -W ", MAKEFILE, re.M)
    assert re.search(r"^docs: .*\n\t.*BAYES_CONCEPTS_DOCS_EXECUTE=cache.*\$\(SPHINX\)", MAKEFILE, re.M | re.S)
    assert '-e ".[test,docs]"' in MAKEFILE
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert {d.split(">")[0] for d in extras["docs"]} == {"sphinx", "numpydoc", "myst-nb"}
    assert "/docs/_build/" in (ROOT / ".gitignore").read_text().splitlines()
    assert "make docs" in README and "docs/_build/html/index.html" in README
    setup = _page("setup.md")
    assert "make docs" in setup and "docs/_build/html/index.html" in setup


def test_docs_reference_every_public_name(tmp_path, monkeypatch):
    """docs/conf.py writes api.rst from bc.__all__: every public name, each under its module."""
    import runpy
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "conf.py").write_text((ROOT / "docs" / "conf.py").read_text().replace(
        "HERE = Path(__file__).resolve().parent\nROOT = HERE.parent",
        f"HERE = Path(__file__).resolve().parent\nROOT = Path({str(ROOT)!r})"))
    runpy.run_path(str(docs / "conf.py"))
    api = (docs / "api.rst").read_text()
    documented = set(re.findall(r"^\.\. auto(?:class|function|data):: (\w+)$", api, re.M))
    assert documented == set(bc.__all__) - {"__version__"}
    assert len(list((docs / "notebooks").glob("*.ipynb"))) == len(list((ROOT / "notebooks").glob("*.ipynb")))


def test_the_guide_says_how_to_run_notebooks_headless_and_lists_sample():
    setup = _page("setup.md")
    assert "jupyter execute notebooks/" in setup and "BAYES_CONCEPTS_SPACE" in setup
    (synopsis,) = [b for b in _block("text", _page("cli.md")) if "bayes-concepts explain" in b]
    assert re.search(r"^bayes-concepts sample ", synopsis, re.M)


def test_scheduler_and_grammar_help():
    ap = cli.build_parser()
    gap = ap._subparsers._group_actions[0].choices["gap"]
    (scheduler,) = [a for a in gap._actions if a.dest == "scheduler"]
    assert scheduler.help.endswith(".") and "value for value" in scheduler.help
    (grammar,) = [a for a in ap._actions if a.dest == "grammar"]
    assert "hypotheses/curi.pcfg" not in grammar.help and "shipped with the package" in grammar.help


@pytest.mark.parametrize("given", ["hypotheses/clevr.pcfg", "clevr.pcfg", "clevr"])
def test_grammar_names_a_packaged_grammar_from_anywhere(given, workdir):
    """A wheel install has no hypotheses/ folder beside the user: --grammar hypotheses/clevr.pcfg
    (what the error hints say) names the packaged file."""
    path = Path(options.grammar_path(given))
    assert path.is_file() and path.name == "clevr.pcfg"
    assert options.grammar_path("mine.pcfg") == "mine.pcfg"  # not shipped: left for the loader to name


# -------------------------------------------------- beyond: the Python API refuses as the CLI
def test_compute_gap_refuses_what_cannot_fit(small_space, concept_iid):
    with pytest.raises(MemoryLimitError, match=r"n_episodes 1,000,000,000,000: needs about"):
        bc.compute_gap(small_space, {"concept_iid": concept_iid}, "hard", n_episodes=10 ** 12)


@pytest.mark.parametrize("kwargs, needle", [
    ({"n": 10 ** 13}, "n 10,000,000,000,000: needs about"),
    ({"n": -1}, "n must be a whole number >= 0"),
    ({"n": 2.5}, "n must be a whole number >= 0"),
    ({"negatives": "h"}, "negatives must be 'hard' or 'easy'"),
    ({"query_negatives": "no"}, "query_negatives must be"),
])
def test_sample_episodes_refuses_bad_input(small_space, concept_iid, kwargs, needle):
    args = {"n": 5, "negatives": "hard", **kwargs}
    with pytest.raises(BayesConceptsError, match=re.escape(needle)):
        bc.sample_episodes(small_space, concept_iid, "test", args.pop("negatives"), **args)


@pytest.mark.parametrize("kwargs, needle", [({"n_boot": 0}, "n_boot"), ({"level": 1.5}, "level"),
                                            ({"weak": np.zeros(3)}, "one shape")])
def test_paired_bootstrap_refuses_bad_input(kwargs, needle):
    args = {"strong": np.ones(4), "weak": np.zeros(4), **kwargs}
    with pytest.raises(BayesConceptsError, match=needle):
        paired_bootstrap(**args)


# -------------------------------------------- beyond: learners get intervals like the oracles
def test_learners_get_bootstrap_intervals_and_paired_differences():
    ds = _synthetic(["counting"], ("strong", "weak", "model"), n=60, seed=3)
    ds["ap"].loc[{"learner": "model", "split": "counting", "negatives": "hard"}][:5] = np.nan  # scored on fewer
    (row,) = [r for r in summarise(ds, n_boot=400, seed=1) if r["negatives"] == "hard"]
    got = row["learners"]["model"]
    model = 100 * ds["ap"].sel(split="counting", negatives="hard", learner="model").values
    weak = 100 * ds["ap"].sel(split="counting", negatives="hard", learner="weak").values
    ok = np.isfinite(model)
    assert got["episodes"] == 55
    assert got["map"] == pytest.approx(model[ok].mean())
    assert got["vs_weak"]["map"] == pytest.approx((model[ok] - weak[ok]).mean())  # paired: the same episodes
    for value, (lo, hi) in ((got["map"], got["map_ci"]), (got["vs_weak"]["map"], got["vs_weak"]["map_ci"]),
                            (got["cba"], got["cba_ci"]), (got["vs_weak"]["cba"], got["vs_weak"]["cba_ci"])):
        assert lo < value < hi
    assert (got["vs_weak"]["map_ci"][1] - got["vs_weak"]["map_ci"][0]) > 0
    text = format_models([row], ["model"])
    assert f"{got['map']:.1f} [{got['map_ci'][0]:.1f}, {got['map_ci'][1]:.1f}]" in text
    assert f"{got['vs_weak']['map']:.1f} [{got['vs_weak']['map_ci'][0]:.1f}, " in text


def test_figure_data_of_learners_carries_their_paired_difference():
    from bayes_concepts.plots import comp_gap_data, plot_comp_gap
    oracles_only = comp_gap_data(_synthetic(["counting", "boolean"]), "hard", n_boot=50)
    committed = (ROOT / "paper_figs" / "comp_gap_hard.csv").read_text().splitlines()[0].split(",")
    assert list(oracles_only.columns) == committed  # results of the oracles alone draw the same table
    ds = _synthetic(["counting", "boolean"], ("strong", "weak", "model"))
    axes, data = plot_comp_gap(ds, "hard", n_boot=50)
    model = data[data.learner == "model"]
    for _, r in model.iterrows():
        x = 100 * ds[r["metric"]].sel(split=r["split"], negatives="hard", learner="model").values
        w = 100 * ds[r["metric"]].sel(split=r["split"], negatives="hard", learner="weak").values
        assert r["vs_weak"] == pytest.approx((x - w).mean()) and r["vs_weak_ci_lo"] < r["vs_weak"] < r["vs_weak_ci_hi"]
    assert data[data.learner != "model"]["vs_weak"].isna().all()
    texts = [t.get_gid() for ax in axes for t in ax.texts if (t.get_gid() or "").startswith("vs_weak:")]
    assert len(texts) == len(model)
