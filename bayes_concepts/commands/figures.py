"""``figures RESULTS.nc``: the figures of a results file; ``demo``: the main job on the demo space."""
from __future__ import annotations

import time
from pathlib import Path

from ..errors import BayesConceptsError
from ..command_registry import command
from ..options import results_out_option, whole
from ..preflight import check_gap_memory, check_output_dir, check_results_out
from ..run_args import open_space, protocol_option
from ..terminal import log_line, progress_output
from ..run import results_split  # noqa: F401 (figures.results_split)


def _figures_arguments(p):
    p.add_argument("results", metavar="RESULTS.nc", help="a results file written by gap --out or demo")
    p.add_argument("--space", required=True, metavar="DIR", help="the space the results were computed on")
    p.add_argument("--out", default="figs", metavar="DIR",
                   help="directory for the figures (default figs; the committed paper_figs/ are redrawn by make "
                        "figures, never by default)")
    p.add_argument("--episode-split", default=None, metavar="NAME",
                   help="split of the episode view: one the results were computed on (made again from the spec "
                        "they record), a split of the space, or one defined by a --spec file (default: concept_iid "
                        "when the results hold it, else their first split)")
    p.add_argument("--spec", nargs="+", metavar="FILE",
                   help="split spec files (TOML) defining the episode view's split; a split the results hold must "
                        "have the concepts they were computed with")
    protocol_option(p, "the protocol whose splits the episode view's split is taken from, for results that do "
                        "not record one (results of gap --protocol record theirs, and another is refused)")
    p.add_argument("--seed", type=whole(0), default=0,
                   help="seed of the episode view and bootstrap (a whole number >= 0; default 0)")


@command("figures", order=130, arguments=_figures_arguments, help="write the figures of a results file (PNG and PDF)")
def cmd_figures(args) -> int:
    from ..results import load_results
    check_output_dir(args.out, "--out")
    ds = load_results(args.results)
    space = open_space(args.space)
    sha = ds.attrs.get("space_manifest_sha256")
    if sha not in (None, "unsaved") and sha != space.manifest_sha256():
        raise BayesConceptsError(f"{args.results} was computed on another space than {args.space} "
                                 "(space manifest hashes differ)")
    name = args.episode_split or default_episode_split(ds)
    split = results_split(ds, space, name, args.spec, args.protocol, args.results)
    paths = _write_figures(ds, space, args.out, split, args.seed)
    print(f"wrote {len(paths)} files to {args.out}:")
    for p in paths:
        print(f"  {p}")
    return 0


def _write_figures(ds, space, out, episode_split, seed: int = 0):
    """All figures of ``ds``, with an episode view of the most uncertain of 200 hard test
    episodes of ``episode_split`` (a :class:`~bayes_concepts.splits.Split`, or the name of one
    of the space's splits; highest posterior entropy of the strong oracle), drawn as the
    results' episodes were (their query negatives and hard-negative mode)."""
    import numpy as np
    from ..episodes import sample_episodes
    from ..plots import oracles_for, write_figures
    from ..splits import space_splits
    split = episode_split if not isinstance(episode_split, str) else \
        space_splits(space, [episode_split])[episode_split]
    query_negatives = ds.attrs.get("query_negatives")
    eps = sample_episodes(space, split, "test", "hard", 200, seed=seed,
                          query_negatives=None if query_negatives in (None, "same as support") else query_negatives,
                          hard_mode=ds.attrs.get("hard_mode", "union"))
    strong, weak = oracles_for(space, split, ds)
    entropy = strong.evaluate(eps)["posterior_entropy"]
    return write_figures(ds, space, out, episodes=eps, episode_index=int(np.nanargmax(entropy)),
                         oracles=(strong, weak), seed=seed)


def default_episode_split(ds) -> str:
    """The split of the episode view when none is named: Concept IID when the results hold it,
    else their first split."""
    names = [str(s) for s in ds["split"].values.tolist()]
    return "concept_iid" if "concept_iid" in names or not names else names[0]


def _demo_arguments(p):
    p.add_argument("--space", default="spaces/demo", metavar="DIR",
                   help="the demo space; built here if it has no manifest.json and is missing or empty "
                        "(default spaces/demo)")
    p.add_argument("--episodes", type=whole(1), default=2000,
                   help="test episodes per split and negatives (default 2000)")
    p.add_argument("--seed", type=whole(0), default=0, help="seed of the episodes (a whole number >= 0; default 0)")
    results_out_option(p, "results file to write (default results.nc)", default="results.nc")
    p.add_argument("--figures", default="demo_figs", metavar="DIR",
                   help="directory for the figures (default demo_figs; '' to skip figures; "
                        "'make figures' writes the committed paper_figs)")


@command("demo", order=140, arguments=_demo_arguments, compiles=True,
         help="build the demo space if missing, print the comp-gap table, write results")
def cmd_demo(args) -> int:
    """The main job on the built-in default: build the demo space if missing, print the
    comp-gap table of all CURI splits (hard and easy negatives), write results and figures."""
    check_gap_memory(args.episodes, 9 * 2)  # CURI's nine splits, hard and easy negatives: before any import
    from ..spaces.hypothesis_space import HypothesisSpace
    from ..engine.store import check_save_target
    from ..gap import compute_gap, format_table, summarise
    from ..oracles import OracleSettings
    from ..results import save_results
    from ..splits import curi_splits
    t0 = time.perf_counter()
    space_dir = Path(args.space)
    build = not (space_dir / "manifest.json").exists()
    if build:  # an empty or missing directory, or an unfinished build of ours; never anything else
        check_save_target(space_dir)
    out_target = check_results_out(args)  # nothing there the toolkit did not write: before any work
    if args.figures:
        check_output_dir(args.figures, "--figures")
    if build:
        print(f"building the demo space in {space_dir} (200,000 programs x 100,000 clevr scenes) ...", flush=True)
        with progress_output():
            HypothesisSpace.build("demo", progress=True, log=log_line).save(space_dir)
    space = HypothesisSpace.load(space_dir)
    print(f"{space}\n", flush=True)
    with progress_output():
        ds = compute_gap(space, curi_splits(space), ("hard", "easy"), args.episodes, OracleSettings(), args.seed,
                         progress=True)
    print(format_table(summarise(ds, seed=args.seed)))
    save_results(ds, args.out, target=out_target)
    print(f"\nresults: {args.out}")
    if args.figures:
        paths = _write_figures(ds, space, args.figures, "concept_iid", args.seed)
        print(f"figures: {len(paths)} files in {args.figures}")
    print(f"done in {time.perf_counter() - t0:.0f} s")
    return 0


#: the small space ``compile`` runs the demo's job on (the demo preset's scene sampler and
#: grammar, fewer programs and scenes: the same kernels, compiled for the same types)
COMPILE_SPACE = {"samples": 20_000, "scenes": 4_000, "seed": 0}


def _compile_arguments(p):
    p.add_argument("--episodes", type=whole(1), default=40,
                   help="test episodes per split and negatives of the small job (default 40)")


@command("compile", order=141, arguments=_compile_arguments, compiles=True,
         help="compile the numba kernels of demo, gap, ladder and the learners once, into numba's cache "
              "(after pip install)")
def cmd_compile(args) -> int:
    """Fill numba's on-disk cache with the kernels ``demo`` (and ``gap`` with its defaults),
    ``ladder`` and a learner scored beside the oracles run, by running those jobs -- build,
    save, load, the comp gap of CURI's splits with hard and easy negatives, results, figures;
    the default ladder with one alpha and one budget; the prototype learner and a network
    trained one step (with the model job's pictures and sounds); the gap with the noisy
    likelihood -- on a small demo-preset space in a temporary directory, which is removed
    afterwards.  The cache is numba's: ``__pycache__`` beside the package's modules, or
    ``NUMBA_CACHE_DIR`` when set.  ``make venv`` runs it; after ``pip install`` run it once, so
    that the first ``demo`` (or ladder) does not wait for the compiler.  Every array a kernel
    only reads is passed read-only (:func:`~bayes_concepts.bits.read_only`), so the kernels
    compiled here also serve spaces built in memory and spaces mapped from disk."""
    import tempfile
    from ..spaces.hypothesis_space import HypothesisSpace
    from ..gap import compute_gap
    from ..ladder import ladder_profile
    from ..learners import make_learner
    from ..oracles import OracleSettings
    from ..results import save_results
    from ..splits import curi_splits
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bayes_concepts_compile_") as tmp:
        space_dir = Path(tmp) / "space"
        HypothesisSpace.build("demo", **COMPILE_SPACE).save(space_dir)
        space = HypothesisSpace.load(space_dir)
        splits = curi_splits(space)
        ds = compute_gap(space, splits, ("hard", "easy"), args.episodes, OracleSettings(), 0)
        save_results(ds, Path(tmp) / "results.nc")
        _write_figures(ds, space, Path(tmp) / "figs", "concept_iid", 0)
        one = {"counting": splits["counting"]}
        ladder_profile(space, one, negatives="hard", n_episodes=args.episodes, seed=0, alphas=[10], budgets=[100])
        compute_gap(space, one, ("hard",), args.episodes, OracleSettings(), 0,
                    learners={"prototype": make_learner(space, "prototype"), "net": _model_job(space, one)})
        compute_gap(space, one, ("hard", "easy"), args.episodes, OracleSettings(likelihood="noisy"), 0)
    print(f"compiled and cached the kernels of demo, gap, ladder and the learners in {time.perf_counter() - t0:.0f} s")
    return 0


def _model_job(space, one: dict):
    """The model job's first steps (``train`` and the image and sound modalities): four scenes
    drawn and heard, a learner's conformance check, and a small network trained one step, which
    is returned to be scored beside the oracles (its scores are float32)."""
    from ..learners import ProtoNetLearner, check_learner, make_learner
    from ..scenes.render import render_scenes
    from ..scenes.sound import log_mel_spectrogram, synthesize_scenes
    codes = space.scene_codes[:4]
    render_scenes(codes, space.schema)
    log_mel_spectrogram(synthesize_scenes(codes, space.schema))
    split = one["counting"]
    check_learner(make_learner(space, "prototype"), space, split=split)
    net = ProtoNetLearner(space, "schema", "relnet", embedding_dim=8, seed=0, encoder_options={"object_dim": 8},
                          pooling_options={"g_hidden": (8,), "g_out": 8, "f_hidden": (8,)})
    net.train(split, max_steps=1, val_every=1, val_episodes=4, batch_episodes=2, progress=False)
    return net
