"""The ``bayes-concepts`` command.

Subcommands::

    bayes-concepts explain PROGRAM            readable form, LaTeX, length, PCFG log-prob, uses x
    bayes-concepts eval PROGRAM [PROGRAM ...] --scenes FILE.jsonl [--json]
    bayes-concepts sample [--n N] [--seed S]  draw programs from the grammar
    bayes-concepts space build|info|show      hypothesis spaces
    bayes-concepts splits DIR                 train/val/test sizes and leakage of every split
    bayes-concepts splits search DIR --out SPEC.toml   the hardest fair split (a spec file, with its audit)
    bayes-concepts episodes DIR --split S ... sample episodes; episodes show FILE INDEX
    bayes-concepts gap DIR                    the comp-gap table (strong vs weak oracle)
    bayes-concepts train DIR --split S --learner schema-relnet --out MODEL_DIR   a neural baseline
    bayes-concepts render DIR SCENE_ID [--sound] --out FILE   one scene as a picture (PNG) or sound (WAV)
    bayes-concepts render DIR --bank [--sound]    every scene, cached (checksummed) in DIR/rendered/
    bayes-concepts posterior DIR --support F  the oracles' posterior for a support set
    bayes-concepts audit DIR --spec FILE      a one-page report on a new split
    bayes-concepts figures RESULTS.nc --space DIR --out figs/
    bayes-concepts demo                       the main job on the built-in demo space
    bayes-concepts people shj [--out DIR]     the ideal observer fitted to people (Shepard, Hovland & Jenkins)

Bad input (a malformed program, a bad scene file, an option out of range, an output
path that cannot be written) prints one line on stderr and exits with status 2, before
any long computation; nothing is left half-written and nothing the toolkit did not write
is deleted.  Output piped into ``head`` ends quietly.  Progress of long work goes to
stderr: bars on a terminal, a line every 15 s when stderr is a file.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import sys
import time
from pathlib import Path

from . import __version__
from .errors import BayesConceptsError


def _grammar(args):
    from .lot import curi_grammar, load_grammar
    return load_grammar(_grammar_path(args.grammar)) if args.grammar else curi_grammar()


def _grammar_path(text):
    """``--grammar``'s file: a path that exists, else a grammar shipped in the package named as
    ``clevr.pcfg``, ``clevr`` or ``hypotheses/clevr.pcfg`` (the source tree's name, which a
    wheel install has under the package), else the path as given (loading it names it)."""
    if text is None or Path(text).exists():
        return text
    p = Path(text)
    if p.parent in (Path("."), Path("hypotheses")):
        from .resources import DataFileError, data_file
        try:
            return data_file(p.name if p.suffix == ".pcfg" else p.name + ".pcfg")
        except DataFileError:
            pass
    return text


# ------------------------------------------------------------------ checking input early
class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors are one line (as the toolkit's other errors)."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


class _Given(argparse._StoreAction):
    """Store action that also records the option as given on the command line (in
    ``args._given``), so an option given with its default value is told from one left out."""

    def __call__(self, parser, namespace, values, option_string=None):
        super().__call__(parser, namespace, values, option_string)
        namespace._given = set(getattr(namespace, "_given", ())) | {self.dest}


def _given(args) -> set:
    """The ``dest`` names of the :class:`_Given` options given on the command line."""
    return set(getattr(args, "_given", ()))


def _whole(minimum: int):
    """argparse type: a whole number >= ``minimum``."""
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {value}")
        return value
    parse.__name__ = "whole number"
    return parse


def _finite(text):
    """argparse type: a finite float (no nan, inf or overflow)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
    return value


def _check_output_file(path, option: str, create_parents: bool = False):
    """Raise unless a file can be written at ``path`` (checked before any computation); with
    ``create_parents``, missing parent folders are fine when they can be created (the writer
    creates them, as ``space build`` does)."""
    p = Path(path)
    if p.is_dir():
        raise BayesConceptsError(f"{option} {path}: is a directory; give a file name")
    parent = p.parent
    if parent.exists() and not parent.is_dir():
        raise BayesConceptsError(f"{option} {path}: {parent} is not a directory")
    if create_parents and not parent.exists():
        from .engine.store import nearest_existing_folder
        first, problem = nearest_existing_folder(parent)
        if problem == "not a directory":
            raise BayesConceptsError(f"{option} {path}: {first} is not a directory")
        if problem:
            raise BayesConceptsError(f"{option} {path}: cannot create folders in {first} (permission denied)")
        return
    if not parent.is_dir():
        raise BayesConceptsError(f"{option} {path}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise BayesConceptsError(f"{option} {path}: cannot write into {parent} (permission denied)")
    if p.exists() and not os.access(p, os.W_OK):
        raise BayesConceptsError(f"{option} {path}: the file exists and is not writable")


def _check_output_dir(path, option: str):
    """Raise unless directory ``path`` exists or can be created, and files can be written in it."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise BayesConceptsError(f"{option} {path}: exists and is not a directory")
    from .engine.store import nearest_existing_folder
    first, problem = nearest_existing_folder(p)
    if problem == "not a directory":
        raise BayesConceptsError(f"{option} {path}: {first} is not a directory")
    if problem:
        raise BayesConceptsError(f"{option} {path}: cannot write into {first} (permission denied)")


def _check_gap_memory(n_episodes: int, n_cells: int, n_learners: int = 2, option: str = "--episodes"):
    """Refuse, before any allocation, a comp-gap run whose results (``n_cells`` cells of
    ``n_episodes`` episodes, ``n_learners`` learners) cannot fit in the memory available:
    one line naming the option, the estimate and what is available."""
    from .scale import check_memory, gap_bytes
    check_memory(gap_bytes(n_episodes, n_cells, n_learners, keep_episodes=n_learners > 2),
                 f"{option} {n_episodes}", "give fewer episodes (or fewer splits)",
                 f"results of {n_cells} cell(s) x {n_learners} learner(s)")


def _json_safe(value):
    """``value`` with NaN and infinities as None and numpy scalars as Python numbers, so the
    printed JSON is valid (the standard has no NaN)."""
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _print_json(value):
    print(json.dumps(_json_safe(value), allow_nan=False, ensure_ascii=False))


class _LogProgress:
    """Stands in for stderr while a progress bar runs and stderr is not a terminal: the
    bar's redraws (text starting with a carriage return) become one line every ``every``
    seconds (the first at once); all other text passes through."""

    def __init__(self, stream, every: float = 15.0):
        self.stream, self.every, self.last = stream, every, -math.inf

    def write(self, text):
        if not text.startswith("\r"):
            return self.stream.write(text)
        line = text.strip("\r\n ")
        now = time.monotonic()
        if line and now - self.last >= self.every:
            self.last = now
            self.stream.write(line + "\n")
            self.stream.flush()
        return len(text)

    def flush(self):
        self.stream.flush()


def _progress_output():
    """A context manager to run work with progress bars in: on a terminal, nothing; else
    stderr with the bars' redraws throttled into log lines."""
    if sys.stderr.isatty():
        return contextlib.nullcontext()
    return contextlib.redirect_stderr(_LogProgress(sys.stderr))


def _check_depth_option(grammar, max_depth):
    from .lot.sampler import check_max_depth
    try:
        check_max_depth(grammar, max_depth)
    except BayesConceptsError as exc:
        raise BayesConceptsError(f"--max-depth {max_depth}: {exc}") from None


def _log(msg):
    print(msg, file=sys.stderr, flush=True)


def _counted(n: int, word: str, plural: str | None = None) -> str:
    """``1 episode``, ``2,000 episodes``: a count with its noun in the right number."""
    return f"{n:,} {word if n == 1 else plural or word + 's'}"


def _parse_programs(texts, grammar) -> list:
    """Parse the programs given on the command line with ``grammar``.  A program that fails
    in CURI's language (a grammar without relational operators or variables) on a token of
    the relational languages -- a variable such as ``y``, a binder such as ``filter:y``, a
    relational operator such as ``left`` -- gets a hint at the end of its one-line error:
    that token is unknown there, and such programs need a relational grammar."""
    from .errors import ProgramError
    from .lot import Program
    out = []
    for text in texts:
        try:
            out.append(Program.parse(text, grammar))
        except ProgramError as exc:
            hint = _relational_hint(exc, text, grammar)
            if hint is None:
                raise
            prefix = (f"in program {exc.program!r}, " if exc.program else "") + f"token {exc.position}: "
            message = str(exc)[len(prefix):] if str(exc).startswith(prefix) else str(exc)
            raise ProgramError(f"{message}; {hint}", exc.program, exc.position) from None
    return out


def _relational_hint(exc, text, grammar):
    """The hint of :func:`_parse_programs` for error ``exc`` of ``text``, or None."""
    import re
    from .lot.operators import operators, split_binder
    if grammar.is_relational or exc.position is None:
        return None
    given = text.split() if isinstance(text, str) else list(text)
    if not 0 <= exc.position < len(given):
        return None
    tok = given[exc.position]
    if tok in grammar.token_kinds:
        return None
    name, var = split_binder(tok)
    if var is None and re.fullmatch(r"[a-z]", tok):  # an object variable of a relational language
        return (f"{tok} is unknown (unbound) in CURI's language, whose one object variable is x, bound by the final "
                f"exists=/for-all=: programs with variables such as {tok} need a relational grammar, e.g. "
                "--grammar hypotheses/clevr.pcfg")
    if name in operators and name not in grammar.operators:
        return (f"{name} is a relational operator, not one of CURI's language: give a grammar that declares it, "
                "e.g. --grammar hypotheses/clevr.pcfg")
    return None


def cmd_explain(args) -> int:
    from .lot import rejection_reason
    from .synonyms import unprovable_operators
    g = _grammar(args)
    text = " ".join(args.program)
    (p,) = _parse_programs([text], g)
    unprovable = unprovable_operators(p)
    info = {
        "program": p.postfix,
        "readable": p.readable,
        "latex": p.latex,
        "prefix": p.prefix,
        "length": p.length,
        "log_pcfg": p.log_prob(),
        "uses_x": p.uses_x,
        "quantifier": p.quantifier,
        "rejected_by": rejection_reason(p),
        "not_provable": list(unprovable),
    }
    if args.json:
        _print_json(info)  # a program the grammar cannot derive has log_pcfg -inf: null in JSON
        return 0
    rows = [("program", info["program"]), ("readable", info["readable"]), ("latex", info["latex"]),
            ("prefix", info["prefix"]), ("length", str(info["length"])),
            ("log p_pcfg", f"{info['log_pcfg']:.4f}"),
            ("uses x", "yes" if p.uses_x else "no (the quantifier can be collapsed)" if p.quantifier else "no"),
            ("quantifier", {"exists": "∃x∈S", "forall": "∀x∈S", None: "none"}[p.quantifier]),
            ("rejection", f"rejected by rule '{info['rejected_by']}'" if info["rejected_by"] else "kept")]
    if unprovable:
        rows.append(("synonyms", "not provable: the synonym prover does not reason about "
                                 f"{', '.join(unprovable)}; synonyms are decided by signatures only"))
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"{k:<{width}}  {v}")
    return 0


def cmd_eval(args) -> int:
    from .engine import evaluate_programs, signature_bits
    from .scenes import SceneBank, read_scenes_jsonl
    g = _grammar(args)
    programs = _parse_programs(args.program, g)
    from .scale import check_memory, scene_bank_bytes
    schema = g.schema.with_max_objects(args.max_objects or g.schema.max_objects)
    scenes = read_scenes_jsonl(args.scenes, schema)  # --max-objects bounds the objects a scene may have
    if not scenes:
        from .errors import SceneError
        raise SceneError(f"--scenes {args.scenes}: no scenes in the file (it is empty or holds only blank lines)")
    # the bank has as many object slots as the file's largest scene, not --max-objects: the cost
    # follows the data (empty slots change no program's value)
    slots = max(schema.min_objects, max(len(s["objects"]) for s in scenes))
    schema = schema.with_max_objects(slots)
    check_memory(scene_bank_bytes(len(scenes), slots, schema.n_attributes, schema.n_relations),
                 f"--scenes {args.scenes}", "give fewer scenes", f"{len(scenes):,} scenes of up to {slots:,} objects")
    bank = SceneBank.from_scenes(scenes, schema)
    labels = signature_bits(evaluate_programs(programs, bank, g), bank.n_scenes).astype(int)
    if args.json:
        print(json.dumps({text: [int(v) for v in row] for text, row in zip(args.program, labels)},
                         ensure_ascii=False))
        return 0
    for j in range(len(scenes)):
        print(" ".join(str(int(row[j])) for row in labels))
    return 0


def cmd_sample(args) -> int:
    from .lot import sample_programs
    g = _grammar(args)
    if args.max_depth is not None:
        _check_depth_option(g, args.max_depth)
    sample = sample_programs(args.n, g, seed=args.seed, max_depth=args.max_depth)
    for s, lp in zip(sample.strings(), sample.log_prob):
        print(f"{lp:.4f}\t{s}" if args.log_prob else s)
    return 0


def cmd_demo(args) -> int:
    """The main job on the built-in default: build the demo space if missing, print the
    comp-gap table of all CURI splits (hard and easy negatives), write results and figures."""
    _check_gap_memory(args.episodes, 9 * 2)  # CURI's nine splits, hard and easy negatives: before any import
    from .spaces.hypothesis_space import HypothesisSpace
    from .engine.store import check_save_target
    from .gap import compute_gap, format_table, summarise
    from .oracles import OracleSettings
    from .results import save_results
    from .splits import curi_splits
    t0 = time.perf_counter()
    space_dir = Path(args.space)
    build = not (space_dir / "manifest.json").exists()
    if build:  # an empty or missing directory, or an unfinished build of ours; never anything else
        check_save_target(space_dir)
    _check_output_file(args.out, "--out", create_parents=True)  # save_results creates missing folders
    if args.figures:
        _check_output_dir(args.figures, "--figures")
    if build:
        print(f"building the demo space in {space_dir} (200,000 programs x 100,000 clevr scenes) ...", flush=True)
        with _progress_output():
            HypothesisSpace.build("demo", progress=True, log=_log).save(space_dir)
    space = HypothesisSpace.load(space_dir)
    print(f"{space}\n", flush=True)
    with _progress_output():
        ds = compute_gap(space, curi_splits(space), ("hard", "easy"), args.episodes, OracleSettings(), args.seed,
                         progress=True)
    print(format_table(summarise(ds, seed=args.seed)))
    save_results(ds, args.out)
    print(f"\nresults: {args.out}")
    if args.figures:
        paths = _write_figures(ds, space, args.figures, "concept_iid", args.seed)
        print(f"figures: {len(paths)} files in {args.figures}")
    print(f"done in {time.perf_counter() - t0:.0f} s")
    return 0


def _write_figures(ds, space, out, episode_split, seed: int = 0):
    """All figures of ``ds``, with an episode view of the most uncertain of 200 hard test
    episodes of ``episode_split`` (a :class:`~bayes_concepts.splits.Split`, or the name of one
    of the space's splits; highest posterior entropy of the strong oracle), drawn as the
    results' episodes were (their query negatives and hard-negative mode)."""
    import numpy as np
    from .episodes import sample_episodes
    from .plots import oracles_for, write_figures
    split = episode_split if not isinstance(episode_split, str) else \
        _splits_for(space, [episode_split])[episode_split]
    query_negatives = ds.attrs.get("query_negatives")
    eps = sample_episodes(space, split, "test", "hard", 200, seed=seed,
                          query_negatives=None if query_negatives in (None, "same as support") else query_negatives,
                          hard_mode=ds.attrs.get("hard_mode", "union"))
    strong, weak = oracles_for(space, split, ds)
    entropy = strong.evaluate(eps)["posterior_entropy"]
    return write_figures(ds, space, out, episodes=eps, episode_index=int(np.nanargmax(entropy)),
                         oracles=(strong, weak), seed=seed)


def _results_split(ds, space, name, specs=None, protocol=None, results: str = "the results"):
    """Split ``name`` made again on ``space`` as results ``ds`` were computed with it, for the
    episode view: from the ``--spec`` files ``specs`` when one defines it, else from the spec
    the results recorded (:func:`bayes_concepts.gap.recorded_splits`), else a split of the
    results' protocol (or of ``protocol``) or of the space; treated by the protocol the results
    were computed with.  A split made again whose concepts differ from the recorded ones, a
    ``protocol`` other than the results', and a split made from a Python predicate (no spec to
    make it from) are one-line errors."""
    from .gap import recorded_splits
    from .protocols import get_protocol
    from .splits import make_split, make_splits
    recorded = ds.attrs.get("protocol")
    if protocol is not None and recorded and recorded != protocol.name:
        raise BayesConceptsError(f"--protocol {protocol.name}: {results} were computed with protocol {recorded}")
    proto = get_protocol(recorded) if recorded else protocol
    record = recorded_splits(ds).get(name) or {}
    spec = record.get("spec") if isinstance(record.get("spec"), dict) else None
    own = make_splits(space, specs or ())
    if name in own:
        split = proto.adapt(space, own[name]) if proto is not None else own[name]
    elif spec is not None and spec.get("kind") in ("all", "random", "held_out"):
        split = make_split(space, spec)
        treated_by = record.get("protocol")
        if treated_by:
            split = get_protocol(treated_by).adapt(space, split)
    elif spec is not None and spec.get("kind") == "predicate":
        raise BayesConceptsError(f"--episode-split {name}: the split of {results} was made from a Python predicate "
                                 "(split_from_predicate), which a command cannot make again; draw its episode view "
                                 "in Python (plot_episode), or give a spec file defining it with --spec")
    elif proto is not None:
        split = proto.splits(space, [name])[name]
    else:
        split = _splits_for(space, [name])[name]
    want = record.get("concepts_sha256")
    if want and split.concepts_sha256() != want:
        raise BayesConceptsError(f"--episode-split {name}: the split made here has other concepts than the one "
                                 f"{results} were computed with; give the spec file it was made from with --spec")
    return split


def _default_episode_split(ds) -> str:
    """The split of the episode view when none is named: Concept IID when the results hold it,
    else their first split."""
    names = [str(s) for s in ds["split"].values.tolist()]
    return "concept_iid" if "concept_iid" in names or not names else names[0]


def cmd_figures(args) -> int:
    from .results import load_results
    _check_output_dir(args.out, "--out")
    ds = load_results(args.results)
    space = _load_space(args.space)
    sha = ds.attrs.get("space_manifest_sha256")
    if sha not in (None, "unsaved") and sha != space.manifest_sha256():
        raise BayesConceptsError(f"{args.results} was computed on another space than {args.space} "
                                 "(space manifest hashes differ)")
    name = args.episode_split or _default_episode_split(ds)
    split = _results_split(ds, space, name, args.spec, _protocol(args), args.results)
    paths = _write_figures(ds, space, args.out, split, args.seed)
    print(f"wrote {len(paths)} files to {args.out}:")
    for p in paths:
        print(f"  {p}")
    return 0


def cmd_space_build(args) -> int:
    from .spaces.hypothesis_space import HypothesisSpace
    from .engine.store import check_save_target
    check_save_target(args.out, args.force)  # before the build: never delete what the toolkit did not write
    if args.preset == "shj":
        return _space_build_shj(args)
    if args.preset == "conceptworld":
        return _space_build_conceptworld(args)
    if args.definitions is not None:
        raise BayesConceptsError("--definitions is ConceptWorld's definitions file: it goes with --preset conceptworld")
    from .scale import parse_scheduler
    parse_scheduler(args.scheduler)
    if args.programs:
        if args.samples is not None or args.max_depth is not None:
            raise BayesConceptsError("--programs takes the programs from the file: --samples and --max-depth do "
                                     "not apply")
        if not Path(args.programs).is_file():
            raise BayesConceptsError(f"--programs {args.programs}: no such file")
    elif args.max_depth is not None:
        _check_depth_option(_grammar(args), args.max_depth)
    for f in args.scenes_from or ():
        if not Path(f).is_file():
            raise BayesConceptsError(f"--scenes-from {f}: no such file")
    _check_build_memory(args)
    t = time.perf_counter()
    log = None if args.quiet else _log  # --quiet: neither stage lines nor progress bars
    with _nothing_written(args.out), (contextlib.nullcontext() if args.quiet else _progress_output()):
        if args.programs:
            preset = _build_params(args.preset)
            space = HypothesisSpace.from_programs(
                args.programs, grammar=_grammar_path(args.grammar), scenes=args.scenes or preset.get("scenes"),
                scene_sampler=args.scene_sampler, scenes_from=args.scenes_from, seed=args.seed,
                reject=not args.no_rejection, progress=not args.quiet, log=log, scheduler=args.scheduler)
        else:
            space = HypothesisSpace.build(args.preset, grammar=_grammar_path(args.grammar), samples=args.samples,
                                          scenes=args.scenes, scene_sampler=args.scene_sampler,
                                          scenes_from=args.scenes_from, max_depth=args.max_depth, seed=args.seed,
                                          progress=not args.quiet, log=log, scheduler=args.scheduler)
    if space.n_concepts == 0:
        stages = ", ".join(f"{k.replace('_', ' ')} {v:,}" for k, v in space.stages.items())
        raise BayesConceptsError(f"no concept survives the build ({stages}): nothing written to {args.out}; "
                                 "sample more programs or use more scenes")
    space.save(args.out, overwrite=args.force)
    st = space.stages
    print(f"built {args.out} in {time.perf_counter() - t:.1f} s")
    print("stage                      survivors")
    for key, label in [("sampled", "sampled"), ("given", "given programs"), ("unique", "unique"),
                       ("after_rejection", "rejection rules"),
                       ("after_firing_filter", "firing filter"), ("after_collapse_dedupe", "collapse + dedupe"),
                       ("synonym_classes", "synonym classes"), ("test_bank", "test-bank scenes")]:
        if key in st:
            print(f"{label:<26} {st[key]:>10,}")
    return 0


#: Bytes a sampled program holds at least while a build runs (its tokens, parse and dedup
#: entries), besides its signature over the scene bank (one bit per scene).
_BUILD_PROGRAM_BYTES = 200


def _check_build_memory(args):
    """Refuse, before any work, a ``space build`` whose scene bank (``--scenes``) or sampled
    programs and their signatures (``--samples``) cannot fit in the memory available: one
    line naming the option, as ``gap --episodes`` is refused."""
    from .scale import check_memory, scene_bank_bytes
    from .spaces.build import PRESETS
    preset = PRESETS.get(args.preset or "paper", {})
    scenes = int(args.scenes or preset.get("scenes") or 0)
    if args.grammar:
        schema = _grammar(args).schema
    elif preset.get("grammar_file"):
        from .lot import load_grammar
        from .resources import data_file
        schema = load_grammar(data_file(preset["grammar_file"])).schema
    else:
        schema = _grammar(args).schema
    bank = scene_bank_bytes(scenes, schema.max_objects, schema.n_attributes, schema.n_relations)
    if args.scenes:
        check_memory(bank, f"--scenes {args.scenes:,}", "give fewer scenes",
                     f"a bank of {args.scenes:,} scenes of up to {schema.max_objects} objects")
    samples = 0 if args.programs else int(args.samples or preset.get("samples") or 0)
    if args.samples and not args.programs:
        check_memory(bank + samples * (_BUILD_PROGRAM_BYTES + (scenes + 7) // 8), f"--samples {args.samples:,}",
                     "sample fewer programs (or use fewer scenes)",
                     f"{samples:,} programs and their signatures over {scenes:,} scenes")


def _space_build_shj(args) -> int:
    """``space build OUT --preset shj``: every concept over the 8 stimuli of a boolean grammar
    (``--grammar``, default hypotheses/shj.pcfg), enumerated, not sampled."""
    given = [opt for opt, v in (("--samples", args.samples), ("--programs", args.programs),
                                ("--scenes", args.scenes), ("--scene-sampler", args.scene_sampler),
                                ("--scenes-from", args.scenes_from), ("--max-depth", args.max_depth),
                                ("--no-rejection", args.no_rejection or None), ("--scheduler", args.scheduler),
                                ("--definitions", args.definitions))
             if v is not None]
    if given:
        raise BayesConceptsError(f"--preset shj enumerates every concept over the grammar's stimuli: "
                                 f"{', '.join(given)} do{'es' if len(given) == 1 else ''} not apply")
    from .cogsci.boolean import boolean_space
    t = time.perf_counter()
    space = boolean_space(_grammar_path(args.grammar) if args.grammar else "and_or_not", seed=args.seed or 0)
    space.save(args.out, overwrite=args.force)
    info = space.params["enumerated"]
    print(f"built {args.out} in {time.perf_counter() - t:.1f} s: {space.n_concepts} concepts (every non-trivial "
          f"concept over {space.n_scenes} stimuli of {info['language']}), description lengths "
          f"{int(space.lengths.min())}..{int(space.lengths.max())} tokens")
    return 0


def _space_build_conceptworld(args) -> int:
    """``space build OUT --preset conceptworld``: every concept of ConceptWorld's definitions
    file up to a depth (``--max-depth``, default 7) over a bank of grid scenes generated from
    them (``--scenes``: scenes per concept, default 40)."""
    given = [opt for opt, v in (("--samples", args.samples), ("--programs", args.programs),
                                ("--scene-sampler", args.scene_sampler), ("--scenes-from", args.scenes_from),
                                ("--no-rejection", args.no_rejection or None), ("--scheduler", args.scheduler),
                                ("--grammar", getattr(args, "grammar", None)))
             if v is not None]
    if given:
        raise BayesConceptsError(f"--preset conceptworld generates its scenes from the ConceptWorld definitions: "
                                 f"{', '.join(given)} do{'es' if len(given) == 1 else ''} not apply")
    from .conceptworld.definitions import load_definitions
    from .conceptworld.space import DEFAULTS, conceptworld_space
    t = time.perf_counter()
    per = args.scenes or DEFAULTS["per_concept"]
    if args.definitions is not None and not Path(args.definitions).is_file():
        raise BayesConceptsError(f"--definitions {args.definitions}: no such file")
    defs = load_definitions(args.definitions)  # the whole file checked (names, arity, cycles) before any work
    if args.scenes:  # refused before any work when the grids cannot fit (32 x 32 bytes each, and their bits)
        from .scale import check_memory
        n_concepts = len(defs.instances(args.max_depth or DEFAULTS["depth"]))
        n_scenes = n_concepts * (per + min(DEFAULTS["broken_per_concept"], per)) + DEFAULTS["noise_scenes"]
        check_memory(n_scenes * (2 * defs.size * defs.size + n_concepts), f"--scenes {args.scenes:,}",
                     "give fewer scenes per concept", f"{n_scenes:,} grid scenes of {defs.size} x {defs.size} "
                     f"points for {n_concepts} concepts")
    with _nothing_written(args.out):
        space = conceptworld_space(depth=args.max_depth or DEFAULTS["depth"], per_concept=per,
                                   broken_per_concept=min(DEFAULTS["broken_per_concept"], per),
                                   seed=args.seed or 0, definitions=args.definitions, log=None if args.quiet else _log)
    space.save(args.out, overwrite=args.force)
    print(f"built {args.out} in {time.perf_counter() - t:.1f} s: {space.n_concepts} ConceptWorld concepts up to depth "
          f"{space.params['depth']} over {space.n_scenes:,} grid scenes ({per} per concept, distractors with one point "
          f"removed, noise scenes); {space.n_synonym_classes} synonym classes")
    print(f"next: bayes-concepts gap {args.out} --protocol conceptworld-productivity (or -boxworld, -scaling, "
          "-substitution)")
    return 0


@contextlib.contextmanager
def _nothing_written(out):
    """Ctrl-C in the block (a build, before its save) says that nothing was written to ``out``."""
    from .scale import Interrupted
    try:
        yield
    except KeyboardInterrupt as exc:
        if isinstance(exc, Interrupted):
            raise
        raise Interrupted(f"while building {out}: nothing was written to {out}") from None


def _build_params(preset) -> dict:
    from .spaces.build import PRESETS
    return PRESETS.get(preset, {}) if preset else {}


def _histogram(values, edges):
    import numpy as np
    counts, _ = np.histogram(values, bins=edges)
    return counts


def cmd_space_info(args) -> int:
    import numpy as np
    from .spaces import load_space
    space = load_space(args.dir, verify=not args.no_verify)
    if not space.has_programs:  # a space of items describes itself
        print(json.dumps(space.info()) if args.json else "\n".join(space.summary_lines()))
        return 0
    sizes = np.bincount(space.synonym_classes)
    rate = space.counts / max(space.n_scenes, 1)
    length_hist = {int(l): int(c) for l, c in zip(*np.unique(space.lengths, return_counts=True))}
    rate_edges = [0, 1e-4, 1e-3, 1e-2, 0.05, 0.1000001]
    rate_hist = _histogram(rate, rate_edges)
    size_hist = {int(s): int(c) for s, c in zip(*np.unique(sizes, return_counts=True))}
    unprovable = _unprovable_concepts(space)
    info = {"concepts": space.n_concepts, "scenes": space.n_scenes, "test_bank": space.test_bank.n_scenes,
            "synonym_classes": space.n_synonym_classes, "not_provable_concepts": unprovable[0],
            "params": space.params, "stages": space.stages,
            "length_histogram": length_hist,
            "firing_rate_histogram": {f"({rate_edges[i]:g}, {min(rate_edges[i + 1], 0.1):g}]": int(c)
                                      for i, c in enumerate(rate_hist)},
            "synonym_class_size_histogram": size_hist,
            "manifest_sha256": space.manifest_sha256(), "checksums_verified": not args.no_verify}
    if args.json:
        _print_json(info)
        return 0
    print(f"{args.dir}: {space.n_concepts:,} concepts in {space.n_synonym_classes:,} synonym classes, "
          f"{space.n_scenes:,} scenes, test bank {space.test_bank.n_scenes:,} scenes")
    p = space.params
    src = p.get("scene_sampler") or ", ".join(str(s.get("file")) for s in p.get("scenes_from") or [])
    given = p.get("programs_from")
    origin = (f"{given.get('programs', 0):,} given programs ({given.get('source')})" if isinstance(given, dict)
              else f"{p.get('samples') or 0:,} samples")
    depth = f", depth <= {p['max_depth']}" if p.get("max_depth") is not None else ""
    print(f"built from {origin} (seed {p.get('seed')}{depth}), scenes: {src}")
    print(f"manifest sha256 {info['manifest_sha256']} (recorded by results and episodes files)"
          + ("" if not args.no_verify else "; file checksums NOT verified (--no-verify)"))
    if unprovable[0]:
        print(f"synonym classes are decided by signatures on the {space.n_scenes:,} scenes; {unprovable[0]:,} of "
              f"{space.n_concepts:,} concepts use operators the synonym prover does not reason about "
              f"({', '.join(unprovable[1])}): their classes are not provable")

    def bars(title, hist):
        print(f"\n{title}")
        top = max(max(hist.values(), default=0), 1)
        for k, c in hist.items():
            print(f"  {str(k):>16}  {c:>7,}  {'#' * max(1 if c else 0, round(40 * c / top))}")
    bars("length (tokens)", length_hist)
    bars("firing rate", info["firing_rate_histogram"])
    bars("synonym-class size", size_hist)
    return 0


def cmd_space_show(args) -> int:
    from .spaces.concept_space import load_space
    from .spaces.hypothesis_space import HypothesisSpace
    from .lot import Program
    space = load_space(args.dir, verify=not args.no_verify)
    if args.no_verify:
        print(f"(file checksums of {args.dir} not verified: --no-verify)", file=sys.stderr)
    what = " ".join(args.concept)
    if not isinstance(space, HypothesisSpace):
        return _show_described_concept(space, what, args.max_synonyms)
    if what.lstrip("-").isdigit():
        i = int(what)
        if not 0 <= i < space.n_concepts:
            raise BayesConceptsError(f"concept id {i} out of range (the space has {space.n_concepts:,} concepts, "
                                     f"ids 0..{space.n_concepts - 1})")
    else:
        from .splits import find_alpha_equivalent
        i = find_alpha_equivalent(space, what)
        if i is None:
            print(f"{Program.parse(what, space.grammar).readable}: not a concept of this space "
                  "(rejected, filtered out by firing rate, or never sampled)")
            return 1
        if space.find(what) is None:
            print(f"(the space holds this program with other names of its bound variables: #{i})")
    p = space.program(i)
    syn = [j for j in space.synonyms(i) if j != i]
    print(f"id          {i}")
    print(f"program     {p.postfix}")
    print(f"readable    {p.readable}")
    print(f"length      {p.length}")
    print(f"log p_pcfg  {space.log_pcfg[i]:.4f}")
    print(f"count       {space.count(i):,} of {space.n_scenes:,} scenes ({space.count(i) / space.n_scenes:.3%})")
    from .synonyms import unprovable_operators
    unprovable = unprovable_operators(p)
    print(f"synonyms    class {space.synonym_class(i)}, {len(syn)} other member{'s' if len(syn) != 1 else ''}"
          + (f" (by signatures on the {space.n_scenes:,} scenes; not provable: the synonym prover does not reason "
             f"about {', '.join(unprovable)})" if unprovable else ""))
    for j in syn[: args.max_synonyms]:
        print(f"  {j:>8}  {space.program(j).readable}")
    if len(syn) > args.max_synonyms:
        print(f"  ... and {len(syn) - args.max_synonyms} more")
    return 0


def _unprovable_concepts(space) -> tuple:
    """``(n, operators)``: how many concepts of a program space use operators the synonym
    prover does not reason about, and which (from the programs' tokens, without parsing)."""
    from .synonyms import unprovable_tokens
    tokens = unprovable_tokens(space.grammar) if space.has_grammar else {}
    if not tokens:
        return 0, []
    n, used = 0, {}
    for text in space.programs:
        hit = [tokens[t] for t in text.split() if t in tokens]
        n += bool(hit)
        used.update(dict.fromkeys(hit))
    return n, list(used)


def _load_space(path):
    from .spaces import load_space
    return load_space(path)  # any kind: a HypothesisSpace, or an ExtensionSpace (pair benchmarks)


def _splits_for(space, names=None, specs=None):
    from pathlib import Path
    from .splits import load_splits
    specs = list(specs or ())
    given = {Path(s).resolve() for s in specs if not isinstance(s, dict)}
    # the split specs a space was saved with (space from-pairs writes DIR/splits/*.toml)
    specs += [str(p) for p in space.spec_paths().values() if p.resolve() not in given]
    return load_splits(space, names, specs)


def _release_protocol(space):
    """The ``curi-release`` protocol when ``space`` was built with CURI's release grammar (its
    manifest's ``params.grammar.file`` is ``curi_release.pcfg``: ``space build --preset curi``),
    else None.  Such a space has no built-in splits of its own: its splits are the protocol's."""
    grammar = space.params.get("grammar")
    if isinstance(grammar, dict) and grammar.get("file") == "curi_release.pcfg":
        from .protocols import get_protocol
        return get_protocol("curi-release")
    return None


def _show_described_concept(space, what: str, max_synonyms: int) -> int:
    """``space show`` for a space of concept descriptions (pairs, ConceptWorld): its concept
    ``what``, an id or a description ("red square", "(red, square)" or a ConceptWorld name)."""
    n = space.n_concepts
    if what.lstrip("-").isdigit():
        i = int(what)
        if not 0 <= i < n:
            raise BayesConceptsError(f"concept id {i} out of range (the space has {n:,} concepts, ids 0..{n - 1})")
    else:
        i = space.find(what)
        if i is None:  # the readable form of a pair: (red, square)
            i = space.find(" ".join(what.strip().strip("()").replace(",", " ").split()))
        if i is None:
            print(f"{what}: not a concept of this space (give an id 0..{n - 1} or a concept's description, "
                  "such as 'red square' or '(red, square)')")
            return 1
    d = space.program(i)
    syn = [j for j in space.synonyms(i) if j != i]
    print(f"id          {i}")
    print(f"concept     {d.postfix}")
    if d.readable != d.postfix:
        print(f"readable    {d.readable}")
    print(f"length      {d.length}")
    print(f"log prior   {space.log_pcfg[i]:.4f}")
    print(f"count       {space.count(i):,} of {space.n_scenes:,} scenes ({space.count(i) / space.n_scenes:.3%})")
    print(f"synonyms    class {space.synonym_class(i)}, {len(syn)} other member{'s' if len(syn) != 1 else ''} "
          f"(same extension on the {space.n_scenes:,} scenes)")
    for j in syn[:max_synonyms]:
        print(f"  {j:>8}  {space.program(j).readable}")
    if len(syn) > max_synonyms:
        print(f"  ... and {len(syn) - max_synonyms} more")
    return 0


def _no_splits(args, what: str, space=None):
    """The one-line error for a space that offers no split to ``what``."""
    grammar = (space.params.get("grammar") if space is not None else None) or {}
    clevr = isinstance(grammar, dict) and grammar.get("file") == "clevr.pcfg" and hasattr(args, "protocol")
    conceptworld = (space is not None and space.params.get("kind") == "conceptworld"
                    and hasattr(args, "protocol"))
    why = ("it is a ConceptWorld space and has no saved split specs" if conceptworld
           else "the space's grammar is not CURI's and it has no saved split specs")
    return BayesConceptsError(f"{args.dir}: no splits to {what}: {why}; give --spec FILE (a split spec, TOML)"
                              + (" or --protocol closure (CLOSURE's families: the space was built with clevr.pcfg)"
                                 if clevr else "")
                              + (f" or --protocol {'|'.join(_conceptworld_protocols())} (ConceptWorld's experiments)"
                                 if conceptworld else ""))


def _conceptworld_protocols() -> list:
    """The registered protocols of ConceptWorld's experiments (conceptworld-*)."""
    from .protocols import protocols
    return [n for n in protocols.names() if n.startswith("conceptworld-")]


def cmd_splits(args) -> int:
    """Sizes and leakage of the space's splits.  Without --protocol and --spec, a space built
    with CURI's release grammar lists the splits of protocol ``curi-release`` (and says so);
    a space that offers no split at all is an error."""
    from .splits import splits_json, splits_table
    space = _load_space(args.dir)
    protocol = _protocol(args)
    auto = protocol is None and not args.spec and _release_protocol(space)
    if auto:
        protocol = auto
    splits = (_protocol_splits(space, protocol, None, args.spec) if protocol is not None
              else _splits_for(space, specs=args.spec))
    if not splits:
        raise _no_splits(args, "list", space)
    if args.json:
        print(json.dumps(splits_json(space, splits)))
    else:
        print(splits_table(space, splits))
        if auto:
            print(f"splits of protocol {auto.name}: {args.dir} was built with CURI's release grammar "
                  "(curi_release.pcfg)")
    return 0


def _splits_search_parser():
    """The parser of ``splits search DIR`` (beside ``splits DIR``)."""
    p = _Parser(prog="bayes-concepts splits search",
                description="search the held-out set (whole synonym classes) that maximises the comp gap or the "
                            "compound divergence under constraints, and write its split spec with its audit")
    p.add_argument("dir", metavar="DIR", help="a saved hypothesis space")
    p.add_argument("--objective", default="gap", metavar="gap|gap:RUNG|compound-divergence",
                   help="what to maximise: the hard-negative mAP gap (a proxy on a fixed pool of episodes in the "
                        "loop, a proper evaluation at the end), the gap of any rung of the oracle ladder "
                        "(gap:atom, gap:compound, gap:learned_prior[alpha=10], ...: strong minus that rung; every "
                        "swap re-scores the whole pool, so give fewer --pool-episodes) or the compound divergence "
                        "(default gap, the memoriser's)")
    p.add_argument("--pairs-out", metavar="DIR",
                   help="pair spaces: also write the split found as pair files, DIR/train_pairs.txt and "
                        "DIR/test_pairs.txt (\"attribute object\" per line), for a CZSL codebase")
    p.add_argument("--constraint", action="append", metavar="NAME<=VALUE",
                   help="a bound the split must meet: atom-divergence or compound-divergence, with <= or >= "
                        "(repeatable; default atom-divergence<=0.02)")
    p.add_argument("--test-share", type=_finite, default=0.2,
                   help="share of the concepts on the test side (default 0.2)")
    p.add_argument("--share-tolerance", type=_finite, default=0.01,
                   help="how far the test share may stray from --test-share (default 0.01)")
    p.add_argument("--method", choices=["anneal", "greedy"], default="anneal",
                   help="simulated annealing (default) or greedy ascent over swaps of synonym classes")
    p.add_argument("--iterations", type=_whole(1), default=None,
                   help="steps of the search; with it the result depends only on the seed (default: until --budget)")
    p.add_argument("--budget", type=_finite, default=300.0, metavar="SECONDS",
                   help="wall-clock seconds of the search loop at most (default 300)")
    p.add_argument("--pool-episodes", type=_whole(100), default=20_000,
                   help="episodes of the gap proxy's fixed pool (default 20,000)")
    p.add_argument("--episodes", type=_whole(1), default=2000,
                   help="test episodes per negatives of the final audit of the split found (default 2000)")
    _episode_shape_option(p, "of the gap proxy's pool, the divergences' weights and the final audit, and written "
                             "into the spec as its [episodes] table")
    p.add_argument("--name", default="searched", help="the split's name in the spec (default searched)")
    p.add_argument("--seed", type=_whole(0), default=0, help="seed of the search, its pool and the audit (default 0)")
    p.add_argument("--out", required=True, metavar="SPEC.toml", help="the split spec to write")
    return p


def cmd_splits_search(args) -> int:
    """``splits search``: run :func:`bayes_concepts.split_search.search_split`, audit the split
    found, write its spec (the audit as comments on top) and check that the file makes the same
    split again."""
    import re
    from .gap import audit, format_audit
    from .split_search import SearchError, objective_rung, parse_constraint, search_split, spec_toml
    from .splits import make_split
    objective_rung(args.objective)  # a bad objective before any work
    constraints = [parse_constraint(c) for c in (args.constraint or ["atom-divergence<=0.02"])]
    for option, value, ok, rule in (("--test-share", args.test_share, 0 < args.test_share < 1, "in (0, 1)"),
                                    ("--share-tolerance", args.share_tolerance, 0 < args.share_tolerance < 0.5,
                                     "in (0, 0.5)"),
                                    ("--budget", args.budget, args.budget > 0, "> 0 seconds")):
        if not ok:
            raise SearchError(f"{option} {value:g}: must be {rule}")
    if not re.match(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$", args.name):
        raise SearchError(f"--name {args.name!r}: letters, digits, '_', '.' or '-'")
    _check_output_file(args.out, "--out", create_parents=True)
    shape = _episode_shape(args)
    space = _load_space(args.dir)
    objective_rung(args.objective, space)  # a rung that cannot apply to this space
    if args.pairs_out:
        from .pairs import check_pair_files_target
        check_pair_files_target(space, args.pairs_out)
    t = time.perf_counter()
    _log(f"searching {args.dir}: objective {args.objective}, constraints "
         f"{', '.join(f'{a}{b}{c:g}' for a, b, c in constraints)}, test share {args.test_share:g} "
         f"(± {args.share_tolerance:g}), {args.method}, seed {args.seed}")
    result = search_split(space, args.objective, test_share=args.test_share, share_tolerance=args.share_tolerance,
                          constraints=constraints, seed=args.seed, iterations=args.iterations, budget_s=args.budget,
                          method=args.method, pool_episodes=args.pool_episodes, name=args.name, log=_log,
                          episode_shape=shape)
    _log(f"auditing the split found ({args.episodes:,} test episodes per negatives) ...")
    report = audit(space, result.split, n_episodes=args.episodes, seed=args.seed, episode_shape=shape)
    text = format_audit(report)
    hard = next(r for r in report["gap"] if r["negatives"] == "hard")
    summary = [f"split search ({result.settings['method']}, seed {args.seed}) on {args.dir}: objective "
               f"{args.objective}, {result.iterations:,} steps ({result.accepted:,} accepted) in "
               f"{result.seconds:.0f} s",
               f"constraints: {', '.join(result.settings['constraints']) or 'none'}; test share "
               f"{result.test_share:.3f} (asked {args.test_share:g} ± {args.share_tolerance:g})",
               f"in the loop: {args.objective} {result.value:.4g}"
               + (" (proxy on the fixed pool)" if args.objective.startswith("gap") else "")
               + f"; audit: hard-negative mAP gap {hard['gap']['map']:.1f} [{hard['gap']['map_ci'][0]:.1f}, "
                 f"{hard['gap']['map_ci'][1]:.1f}]"]
    body = spec_toml(result.spec, [*summary, "", *text.splitlines()])
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".partial")
    tmp.write_text(body, encoding="utf-8")
    tmp.replace(out)
    again = make_split(space, out)
    if again.concepts_sha256() != result.split.concepts_sha256():  # the spec must make the split it describes
        raise SearchError(f"{out}: the spec written does not make the split found again (a bug: please report it)")
    print(text)
    print("\n" + "\n".join(summary))
    if args.pairs_out:
        from .pairs import write_pair_files
        written = write_pair_files(space, result.split, args.pairs_out)
        print("pair files written: " + ", ".join(f"{p} ({n:,} pairs)" for p, n in written))
    print(f"spec written to {out} (bayes-concepts gap {args.dir} --spec {out} --split {result.split.name}); "
          f"{time.perf_counter() - t:.0f} s in all")
    return 0


def cmd_episodes(args) -> int:
    from .episodes import sample_episodes
    from .scale import check_memory, episodes_bytes
    _check_output_file(args.out, "--out")
    check_memory(episodes_bytes(args.n), f"--n {args.n}", "draw fewer episodes")
    space = _load_space(args.dir)
    split = _splits_for(space, [args.split], args.spec)[args.split]
    from .episodes import EpisodeShape
    shape = _episode_shape(args) or EpisodeShape.parse(split.spec.get("episodes"), f"split {args.split}: [episodes]")
    eps = sample_episodes(space, split, side=args.side, negatives=args.negatives, n=args.n, seed=args.seed,
                          query_negatives=args.query_negatives, hard_mode=args.hard_mode,
                          n_positive=shape.positives, n_negative=shape.negatives,
                          n_query_positive=shape.query_positives, n_query_negative=shape.query_negatives)
    eps.save(args.out)
    topup = eps.meta["support_topup"] + eps.meta["query_topup"]
    print(f"wrote {_counted(len(eps), args.negatives + '-negative episode')} of {args.split}/{args.side} to "
          f"{args.out} ({_counted(len(set(eps.concept.tolist())), 'distinct concept')}; "
          f"{_counted(topup, 'random top-up negative')})")
    return 0


def _describe_scene(scene: dict) -> str:
    """Objects as 'large red metal cube @(3,5)': every attribute but the location, then x, y; an
    object with a 3-D position (a scene with relations) as 'red metal cube @(-1.33,0.87)', its
    ground-plane coordinates."""
    def one(o):
        words = " ".join(str(v) for k, v in o.items() if k not in ("x", "y", "3d_coords"))
        if "x" in o and "y" in o:
            return words + f" @({o['x']},{o['y']})"
        xyz = o.get("3d_coords")
        return words + (f" @({xyz[0]:.2f},{xyz[1]:.2f})" if xyz else "")
    return "; ".join(one(o) for o in scene["objects"])


def _check_episodes_file(path):
    """An episodes file is an ``.npz`` (a zip archive): anything else -- a scene file, a
    ``.npy`` array, text -- is one line saying what the file is instead."""
    from .episodes import EpisodeError
    try:
        with open(path, "rb") as fh:
            head = fh.read(8)
    except FileNotFoundError:
        raise EpisodeError(f"{path}: no such episodes file") from None
    except IsADirectoryError:
        raise EpisodeError(f"{path}: is a directory, not an episodes file") from None
    if head.startswith(b"PK\x03\x04"):
        return
    kind = ("an empty file" if not head else "a NumPy .npy array" if head.startswith(b"\x93NUMPY")
            else "JSON text (a scene file?)" if head.lstrip()[:1] in (b"{", b"[") else "not a zip archive")
    raise EpisodeError(f"{path}: not an episodes file (expected the .npz that 'bayes-concepts episodes --out' "
                       f"writes; this is {kind})")


def cmd_episodes_show(args) -> int:
    from .episodes import Episodes
    _check_episodes_file(args.file)
    eps = Episodes.load(args.file)
    if not 0 <= args.index < len(eps):
        raise BayesConceptsError(f"episode index {args.index} out of range ({_counted(len(eps), 'episode')} in "
                                 f"{args.file})")
    space = _load_space(args.space) if args.space else None
    if space is not None:
        eps.check_space(space, args.file)
    e, c = args.index, int(eps.concept[args.index])
    meta = eps.meta
    print(f"episode {e} of {args.file}: split {meta.get('split')}/{meta.get('side')}, {meta.get('negatives')} "
          f"negatives (query: {meta.get('query_negatives')}), seed {meta.get('seed')}")
    print(f"concept #{c}" + (f": {space.program(c).readable}   ({space.programs[c]})" if space else
                              "  (pass --space DIR for programs and scenes)"))
    for side in ("support", "query"):
        print(f"\n{side}:")
        for k in range(getattr(eps, f"{side}_scenes").shape[1]):
            sid = int(getattr(eps, f"{side}_scenes")[e, k])
            lab = int(getattr(eps, f"{side}_labels")[e, k])
            flags = []
            if getattr(eps, f"{side}_topup")[e, k]:
                flags.append("random top-up")
            if getattr(eps, f"{side}_relabelled")[e, k]:
                flags.append("random, relabelled positive")
            src = int(getattr(eps, f"{side}_source")[e, k])
            if src >= 0:
                flags.append(f"hard negative via #{src}" + (f" {space.program(src).readable}" if space else ""))
            scene = _describe_scene(space.scene(sid)) if space else ""
            print(f"  {'+' if lab else '-'} scene {sid:>7}  {scene}" + (f"   [{', '.join(flags)}]" if flags else ""))
    return 0


def _option_error(exc: ValueError) -> BayesConceptsError:
    """``beta must be in [0, 1e6], got ...`` (an OracleSettings field's message) as the option's
    one-line error: ``--beta must be ...``, ``--ap-tolerance must be ...``."""
    field, _, rest = str(exc).partition(" ")
    return BayesConceptsError(f"--{field.replace('_', '-')} {rest}")


def _settings(args):
    from .oracles import OracleSettings
    try:
        return OracleSettings(prior=args.prior, beta=args.beta, likelihood=args.likelihood, epsilon=args.epsilon,
                              weak_empty=args.weak_empty, ap_tolerance=getattr(args, "ap_tolerance", None))
    except BayesConceptsError:
        raise
    except ValueError as exc:  # "beta must be in [0, 1e6], got ..." names the field: name the option
        raise _option_error(exc) from None


def _run_info(ds) -> dict:
    """The run's settings from a results Dataset's attributes, for --json output: the oracle
    settings as an object, the seed, episodes per cell, negatives and the space's hash."""
    info = {}
    for key, value in ds.attrs.items():
        if isinstance(value, str) and value.startswith(("{", "[")):  # attributes holding JSON (settings, ...)
            try:
                value = json.loads(value)
            except ValueError:
                pass
        info["settings" if key == "oracle_settings" else key] = value
    return info


def cmd_gap(args) -> int:
    n_learners = (4 if args.parts else 2) + len(args.learner or ())
    n_negatives = 2 if args.negatives == "both" else 1
    _check_gap_memory(args.episodes, n_negatives, n_learners)  # the least it can need (one split): before any import
    from .gap import compute_gap, format_table, summarise
    from .results import save_results
    _settings(args)  # a bad --beta or --epsilon is an error before any work
    from .scale import parse_scheduler
    parse_scheduler(args.scheduler)
    if args.out:
        _check_output_file(args.out, "--out", create_parents=True)  # save_results creates missing folders
    space = _load_space(args.dir)
    protocol = _protocol(args)
    overrides = _protocol_overrides(args, protocol) if protocol is not None else {}
    if protocol is None and not args.spec and _release_protocol(space):
        raise BayesConceptsError(f"{args.dir} was built with CURI's release grammar (curi_release.pcfg): its splits "
                                 "are those of protocol curi-release; give --protocol curi-release (or --spec FILE)")
    names = [args.split] if args.split != "all" else None
    splits = (_protocol_splits(space, protocol, names, args.spec) if protocol is not None
              else _splits_for(space, names, args.spec))
    if not splits:
        raise _no_splits(args, "score", space)
    negatives = ("hard", "easy") if args.negatives == "both" else (args.negatives,)
    _check_gap_memory(args.episodes, len(splits) * len(negatives), n_learners)
    t = time.perf_counter()
    from .learners import learners_for_gap
    learners = learners_for_gap(space, splits, args.learner, args.seed, allow_other_space=args.allow_other_space)
    settings, query_negatives, hard_mode = (
        (_settings(args), args.query_negatives, args.hard_mode) if protocol is None
        else (overrides.get("settings", protocol.settings), overrides.get("query_negatives", protocol.query_negatives),
              overrides.get("hard_mode", protocol.hard_mode)))
    with _progress_output():
        ds = compute_gap(space, splits, negatives, args.episodes, settings, args.seed,
                         query_negatives=query_negatives, hard_mode=hard_mode,
                         progress=not args.json, learners=learners, scheduler=args.scheduler,
                         allow_other_space=args.allow_other_space, parts=args.parts,
                         episode_shape=_episode_shape(args))
    if protocol is not None:
        protocol.record(ds, overrides)
        protocol.annotate(space, splits, ds, settings, args.seed, args.episodes)  # e.g. ConceptWorld's multi-class form
    rows = summarise(ds, seed=args.seed)
    if args.out:
        save_results(ds, args.out)
    if args.json:
        keep = ("split", "negatives", "episodes", "strong", "weak", "gap", "weak_empty_share",
                "posterior_entropy", "predictive_entropy", "learners", "ap_tolerance", "ap_bound_max", "atom",
                "compound", "parts")
        _print_json({**_run_info(ds), "results": [{k: r[k] for k in keep if k in r} for r in rows]})
        return 0
    print(format_table(rows))
    for line in _exclusion_note(ds):
        print(line)
    from .gap import zero_gap_notes
    for line in zero_gap_notes(space, splits, settings):  # a gap of 0.0 [0.0, 0.0] by construction says why
        print(f"note: {line}")
    for line in _dropped_conditions_note(splits):
        print(line)
    if protocol is not None:
        for line in (protocol.left_out_note(splits), protocol.results_note(ds)):
            if line:
                print(line)
    print(f"\n{_counted(args.episodes, 'test episode')} per cell; "
          + (f"protocol {protocol.name}" + (f" overridden by {_override_text(args)}" if overrides else "") + "; "
             if protocol is not None else "")
          + f"oracle settings {ds.attrs['oracle_settings']}; "
          f"{time.perf_counter() - t:.1f} s" + (f"; results written to {args.out}" if args.out else ""))
    return 0


def _published_for(args, protocol, space, splits):
    """The published results a ladder is compared with: --published NAME|FILE, or by default the
    protocol's benchmark (closure, conceptworld-*) or CURI's for CURI's split names; None for
    ``--published none`` or when no default fits."""
    from . import published as pub
    given = args.published
    if given == "none":
        return None
    if given is not None:
        return pub.load(given) if given in pub.benchmarks() else pub.read(given)
    name = protocol.name if protocol is not None else ""
    if name.startswith("closure"):
        return pub.load("closure")
    if name.startswith("conceptworld-"):
        return pub.load("conceptworld", experiment=name.removeprefix("conceptworld-"))
    curi = set(pub.load("curi").conditions())
    if splits and set(splits) <= curi:
        return pub.load("curi")
    return None


def cmd_ladder(args) -> int:
    from .ladder import (FLAT_SPREAD, format_ladder, ladder_correlations, ladder_profile, ladder_summary,
                         parse_rungs, rung_spreads, strip_draws)
    from .results import save_results
    _settings(args)
    if args.out:
        _check_output_file(args.out, "--out", create_parents=True)
    if args.figures:
        _check_output_dir(args.figures, "--figures")
    space = _load_space(args.dir)
    specs = parse_rungs(args.rungs, args.alpha, args.budget, space)  # bad rungs and knobs before any work
    protocol = _protocol(args)
    overrides = _protocol_overrides(args, protocol) if protocol is not None else {}
    names = None if not args.split or args.split == ["all"] else list(args.split)
    splits = (_protocol_splits(space, protocol, names, args.spec) if protocol is not None
              else _splits_for(space, names, args.spec))
    if not splits:
        raise _no_splits(args, "score", space)
    published = _published_for(args, protocol, space, splits)
    if published is not None:  # against every split the space offers, not only those scored
        every = splits if names is None else (_protocol_splits(space, protocol, None, args.spec) if protocol is not None
                                              else _splits_for(space, None, args.spec))
        published.check(list(every))
    negatives = ("hard", "easy") if args.negatives == "both" else (args.negatives,)
    _check_gap_memory(args.episodes, len(splits) * len(negatives), len(specs))
    settings, query_negatives, hard_mode = (
        (_settings(args), args.query_negatives, args.hard_mode) if protocol is None
        else (overrides.get("settings", protocol.settings), overrides.get("query_negatives", protocol.query_negatives),
              overrides.get("hard_mode", protocol.hard_mode)))
    t = time.perf_counter()
    with _progress_output():
        ds = ladder_profile(space, splits, specs, negatives, args.episodes, settings, args.seed,
                            query_negatives=query_negatives, hard_mode=hard_mode, progress=not args.json,
                            episode_shape=_episode_shape(args), scheduler=args.scheduler)
    if protocol is not None:
        protocol.record(ds, overrides)
    rows = ladder_summary(ds, n_boot=args.n_boot, seed=args.seed)
    corr = {neg: ladder_correlations(rows, published, neg, n_boot=args.n_boot, seed=args.seed)
            for neg in negatives} if published is not None else {}
    if args.out:
        save_results(ds, args.out)
    figures = []
    if args.figures:
        from .plots import _figure_of, plot_ladder
        out = Path(args.figures)
        out.mkdir(parents=True, exist_ok=True)
        for neg in negatives:
            drawn, data = plot_ladder(rows, neg, corr.get(neg), published)
            fig = _figure_of(drawn)
            for fmt in ("png", "pdf"):
                path = out / f"ladder_{neg}.{fmt}"
                fig.savefig(path, dpi=150 if fmt == "png" else None, format=fmt,
                            metadata={"CreationDate": None} if fmt == "pdf" else {"Software": None})
                figures.append(str(path))
            data.to_csv(out / f"ladder_{neg}.csv", index=False)
    if args.json:
        _print_json({**_run_info(ds), "results": rows,
                     "spread": {neg: rung_spreads(rows, neg) for neg in negatives},
                     "published": None if published is None else {"benchmark": published.benchmark,
                                                                  "measure": published.measure},
                     "correlations": {neg: strip_draws(c) for neg, c in corr.items()}, "figures": figures})
        return 0
    print(format_ladder(rows))
    for neg in negatives:
        spread = rung_spreads(rows, neg)
        print(f"\nspread over splits ({neg}, max − min gap, mAP points): "
              + ", ".join(f"{lb} {v:.1f}" for lb, v in spread.items()))
    for neg, c in corr.items():
        print(f"\nrank correlation of each rung's gap with {published.benchmark}'s models ({published.measure}, "
              f"mean model; higher = harder), {neg} negatives, {len(c['conditions'])} conditions; 95 % intervals "
              f"bootstrap conditions and episodes:")
        for lb, v in c["rungs"].items():
            m = v["mean_model"]
            if m.get("flat"):
                print(f"  {lb:24s} flat: its gaps spread less than {FLAT_SPREAD:g} mAP point over the conditions, "
                      "so it ranks nothing")
                continue
            print(f"  {lb:24s} Spearman {m['spearman']:+.2f} [{m['spearman_ci'][0]:+.2f}, {m['spearman_ci'][1]:+.2f}]"
                  f"  Kendall {m['kendall']:+.2f} [{m['kendall_ci'][0]:+.2f}, {m['kendall_ci'][1]:+.2f}]")
        if c.get("unmatched"):
            print(f"  (no published numbers for {', '.join(c['unmatched'])}: left out)")
    print(f"\n{_counted(args.episodes, 'test episode')} per cell; "
          + (f"protocol {protocol.name}; " if protocol is not None else "")
          + f"oracle settings {ds.attrs['oracle_settings']}; {time.perf_counter() - t:.1f} s"
          + (f"; results written to {args.out}" if args.out else "")
          + (f"; figures in {args.figures}" if figures else ""))
    return 0


def _learner_with_modality(learner: str, modality) -> str:
    """``--learner relnet --modality image`` -> ``image-relnet``; ``--learner image-relnet`` as given;
    an error when ``--modality`` contradicts the learner's encoder."""
    if modality is None:
        return learner
    if "-" not in learner:
        return f"{modality}-{learner}"
    if learner.split("-", 1)[0] != modality:
        raise BayesConceptsError(f"--learner {learner} and --modality {modality} disagree: give --learner POOLING "
                                 f"with --modality, or --learner {modality}-{learner.split('-', 1)[1]}")
    return learner


def cmd_render(args) -> int:
    import numpy as np

    from .scenes.render import render_scene_png
    from .scenes.sound import SoundSettings, synthesize_scene, write_wav
    _check_picture_memory(args)
    if args.bank:
        return _render_bank(args)
    if args.scene_id is None or args.out is None or args.rebuild:
        raise BayesConceptsError("render: give SCENE_ID and --out FILE for one scene, or --bank (without them) "
                                 "for the whole scene bank" + (" (--rebuild goes with --bank)" if args.rebuild else ""))
    suffix = ".wav" if args.sound else ".png"
    if Path(args.out).suffix.lower() != suffix:
        raise BayesConceptsError(f"--out {args.out}: expected a {suffix} file"
                                 + (" (a sound with --sound)" if args.sound else " (or --sound for a .wav)"))
    _check_output_file(args.out, "--out")
    space = _load_space(args.space)
    if not 0 <= args.scene_id < space.n_scenes:
        raise BayesConceptsError(f"scene id {args.scene_id} out of range (the space has {space.n_scenes:,} "
                                 f"scenes, 0..{space.n_scenes - 1})")
    j = int(args.scene_id)  # checked above; (importing the learners would load torch: seconds)
    from .conceptworld.space import is_conceptworld
    if is_conceptworld(space):
        return _render_grid(args, space, j)
    codes = np.asarray(space.scene_codes[j])
    if args.sound:
        settings = SoundSettings()
        write_wav(synthesize_scene(codes, space.schema, settings), settings.rate, args.out)
    else:
        positions = space.positions([j])  # objects placed in 3-D (spaces whose scenes carry relations)
        render_scene_png(codes, space.schema, args.out, None if positions is None else positions[0],
                         height=args.height or 160, width=args.width or 240)
    print(f"scene {args.scene_id} written to {args.out}")
    return 0


#: Bytes per pixel of one picture while it is rendered (2 x 2 rays a pixel, three float64
#: channels each, and the uint8 picture).
_RENDER_PIXEL_BYTES = 2 * 2 * 3 * 8 + 3


def _check_picture_memory(args):
    """Refuse, before any work, ``render --height H --width W`` whose picture cannot be drawn
    in the memory available (one line naming both options, as ``gap --episodes`` is refused)."""
    if args.sound or not (args.height or args.width):
        return
    from .scale import check_memory
    h, w = args.height or 160, args.width or 240
    check_memory(h * w * _RENDER_PIXEL_BYTES, f"--height {h:,} --width {w:,}", "give a smaller picture",
                 f"one picture of {h * w:,} pixels")


def _render_grid(args, space, j: int) -> int:
    """``render SPACE J --out FILE.png`` on a ConceptWorld space: scene ``j`` as the seed's
    grid picture, (N, N) pixels (32 x 32), one per point, black background; ``--height H
    --width H`` with H a whole multiple of N enlarges it (blocks of H/N pixels a point)."""
    from .conceptworld.space import space_colors, space_grid
    from .scenes.grid import write_grid_png
    if args.sound:
        raise BayesConceptsError(f"render --sound: {args.space} is a ConceptWorld space: its grid scenes are "
                                 "pictures and have no sound (leave out --sound, write a .png)")
    grid = space_grid(space, j)
    n = grid.shape[0]
    h, w = args.height or n, args.width or n
    if h != w or h % n:
        given = " ".join(f"--{k} {v}" for k, v in (("height", args.height), ("width", args.width)) if v)
        raise BayesConceptsError(f"render {given}: {args.space} is a "
                                 f"ConceptWorld space of {n} x {n} grids: the picture is square, a whole multiple "
                                 f"of {n} pixels a side (give both, equal, e.g. --height {8 * n} --width {8 * n}, "
                                 f"or neither for {n} x {n})")
    write_grid_png(args.out, grid, space_colors(space), scale=h // n)
    print(f"scene {j} written to {args.out} ({h} x {w} grid picture, {int((grid >= 0).sum())} points)")
    return 0


def _render_bank(args) -> int:
    import time

    from .engine.rendered import RENDERED_DIR
    if args.scene_id is not None or args.out is not None:
        raise BayesConceptsError("render --bank renders every scene into the space's own folder: give no SCENE_ID "
                                 "and no --out")
    space = _load_space(args.space)
    from .conceptworld.space import is_conceptworld
    if is_conceptworld(space):
        raise BayesConceptsError(f"render --bank: {args.space} is a ConceptWorld space: its grid scenes are stored in "
                                 "its item names and drawn one at a time (render SPACE SCENE_ID --out FILE.png); "
                                 "there is no cached bank")
    if not space.has_pictures:
        raise BayesConceptsError(f"{args.space}: this {space.kind} space has no pictures: its concepts are given sets "
                                 f"of {space.scene_noun}s, not scenes that can be drawn (render --bank needs a program "
                                 "space)")
    options = {} if args.sound else {"height": args.height, "width": args.width}
    t = time.perf_counter()
    bank = space.rendered_bank("sound" if args.sound else "image", rebuild=args.rebuild, **options)
    where = Path(getattr(bank, "filename", None) or Path(args.space) / RENDERED_DIR)
    print(f"{'sounds' if args.sound else 'pictures'} of {bank.shape[0]:,} scenes: {bank.dtype} {tuple(bank.shape)} "
          f"in {where} ({bank.nbytes / 1e6:,.1f} MB, checksum verified, {time.perf_counter() - t:.1f} s)")
    return 0


#: What ``train --out DIR`` writes into DIR (with ``.partial`` siblings while writing them).
_MODEL_FILES = ("card.json", "model.safetensors", "checkpoint.json", "checkpoint.safetensors")


def _check_train_options(args):
    """Before any work: ``--threads`` within the cores this process may use, and ``--out`` a
    new or empty directory, or one holding only what train writes (a run to --resume)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    if args.threads is not None and args.threads > cores:
        raise BayesConceptsError(f"--threads {args.threads}: more than the {cores} core(s) this process may use; "
                                 f"give 1 to {cores}, or leave it out for all of them")
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise BayesConceptsError(f"--out {args.out}: exists and is not a directory")
    if out.is_dir():
        own = {*_MODEL_FILES, *(f + ".partial" for f in _MODEL_FILES)}
        foreign = sorted(p.name for p in out.iterdir() if p.name not in own)
        if foreign:
            listed = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
            raise BayesConceptsError(f"--out {args.out}: holds files train did not write ({listed}); give a new or "
                                     "empty directory (or a model directory to --resume)")
    _check_output_dir(args.out, "--out")


def _train_interrupted(out) -> str:
    """What an interrupted ``train`` left in ``out``: its unfinished ``.partial`` files removed,
    and the checkpoint to --resume from, if one was written."""
    out = Path(out)
    removed = []
    for name in _MODEL_FILES:
        partial = out / (name + ".partial")
        if partial.is_file():
            partial.unlink()
            removed.append(partial.name)
    try:
        step = json.loads((out / "checkpoint.json").read_text())["state"]["step"]
        kept = f"{out} keeps the checkpoint of step {step:,}: continue with --resume, or delete {out}"
    except (OSError, ValueError, KeyError, TypeError):
        kept = f"no checkpoint was written to {out}"
    return f"while training: {kept}" + (f" (unfinished {', '.join(removed)} removed)" if removed else "")


def cmd_train(args) -> int:
    from .learners import ProtoNetLearner, parse_architecture
    from .learners.profiles import resolve_profile
    from .learners.training import format_duration, parse_duration
    from .scale import Interrupted
    from .learners.features import check_learner_space
    _check_train_options(args)
    space = _load_space(args.dir)
    check_learner_space(space)  # before the split: a ConceptWorld space has no learner to train
    split = _splits_for(space, [args.split], args.spec)[args.split]
    encoder, pooling = parse_architecture(_learner_with_modality(args.learner, args.modality))
    profiled, encoder_options, pooling_options = resolve_profile(
        args.profile, encoder, pooling, explicit={"batch_episodes": args.batch, "lr": args.lr})
    learner = ProtoNetLearner(space, encoder, pooling, alpha=args.alpha, seed=args.seed, precision=args.precision,
                              name=args.name, encoder_options=encoder_options, pooling_options=pooling_options)
    options = dict(negatives=args.negatives, query_negatives=args.query_negatives, hard_mode=args.hard_mode,
                   val_every=args.val_every, val_episodes=args.val_episodes,
                   patience=args.patience, threads=args.threads, max_steps=args.steps,
                   budget_s=parse_duration(args.budget) if args.budget else None, **profiled)
    try:
        h = learner.train(split, out=args.out, resume=args.resume, started=getattr(args, "started", None), **options)
    except BaseException as exc:
        if _caused_by_interrupt(exc):  # Ctrl-C, or an error while the checkpoint was written after it
            raise Interrupted(_train_interrupted(args.out)) from None
        raise
    print(f"{learner.name} on {split.name}: {_counted(h['steps'], 'step')} ({_counted(h['episodes'], 'episode')}, "
          f"{format_duration(h['wall_s'])}, {h['episodes_per_s']:.0f} episodes/s, stopped: {h['stopped']}); "
          f"best validation mAP {100 * h['best_val_map']:.1f} at step {h['best_step']:,} "
          f"({h['validation_side']} concepts); training profile {args.profile}; model written to {args.out}")
    return 0


def _check_consistent_labels(scenes, labels, where, settings):
    """The same scene (the same objects, in any order) labelled both 1 and 0 fits no concept:
    an error, unless the likelihood allows wrong labels (``noisy``) or the weak-empty policy
    is not ``zero`` -- then a note on stderr."""
    seen = {}
    for i, (scene, label) in enumerate(zip(scenes, labels), 1):
        key = tuple(sorted(json.dumps(o, sort_keys=True) for o in scene["objects"]))
        j, other = seen.setdefault(key, (i, label))
        if other != label:
            text = (f"{where} lines {j} and {i}: the same scene is labelled {other} and {label}, so no concept fits "
                    "the support")
            if settings.likelihood == "noisy" or settings.weak_empty != "zero":
                print(f"bayes-concepts: note: {text}", file=sys.stderr)
                return
            raise BayesConceptsError(f"{text} (every posterior probability would be 0); fix the labels, or model "
                                     "label noise with --likelihood noisy")


def cmd_posterior(args) -> int:
    from .oracles import strong_and_weak, Oracle
    from .scenes import read_scenes_jsonl
    settings = _settings(args)
    space = _load_space(args.dir)
    schema = space.schema.with_max_objects(max(space.schema.max_objects, 10))
    support = read_scenes_jsonl(args.support, schema)
    if not support:
        raise BayesConceptsError(f"{args.support}: no support scenes")
    labels = []
    for i, s in enumerate(support, 1):
        if s.get("label") not in (0, 1) or isinstance(s.get("label"), bool):
            raise BayesConceptsError(f"{args.support} line {i}: label: expected 0 or 1, got {s.get('label')!r}")
        labels.append(s["label"])
    _check_consistent_labels(support, labels, args.support, settings)
    query = read_scenes_jsonl(args.query, schema) if args.query else []
    if args.query and not query:
        raise BayesConceptsError(f"--query {args.query}: no scenes in the file (it is empty or holds only blank lines)")
    hard = args.negatives == "hard"
    if args.split:
        split = _splits_for(space, [args.split], args.spec)[args.split]
        oracles = dict(zip(("strong", "weak"), strong_and_weak(space, split, settings)))
    else:
        import numpy as np
        oracles = {"strong": Oracle(space, np.arange(space.n_concepts), settings, "strong")}
    out = {}
    for name, oracle in oracles.items():
        oracle.fit(support, labels, hard=hard)
        ids, probs = oracle.posterior()
        top = len(ids) if args.top == 0 else args.top
        out[name] = {"posterior": [{"id": int(i), "program": space.programs[i], "p": float(p)}
                                   for i, p in zip(ids[:top], probs[:top]) if p > 0],
                     "predictive": [float(v) for v in oracle.predict_proba(query)] if query else [],
                     "empty": bool(oracle.empty_), "n_concepts": int(len(ids))}
    if args.json:
        _print_json(out)
        return 0
    for name, r in out.items():
        print(f"{name} oracle: {r['n_concepts']:,} concept{'' if r['n_concepts'] == 1 else 's'} fit"
              f"{'s' if r['n_concepts'] == 1 else ''} the support" +
              (" (none fit: weak-empty policy applies)" if r["empty"] else ""))
        for row in r["posterior"]:
            print(f"  {row['p']:8.4f}  {space.program(row['id']).readable}   [#{row['id']}]")
        for j, p in enumerate(r["predictive"]):
            print(f"  query {j}: p(y=1) = {p:.4f}")
    return 0


def cmd_audit(args) -> int:
    """Audit splits.  With --protocol, the protocol's splits (and any --spec splits) with its
    oracle settings and query negatives (an oracle option given explicitly replaces the
    protocol's value).  Without --protocol and --spec, a space built with CURI's release grammar
    is audited on the splits of protocol ``curi-release`` (with the oracle settings of the
    options; the output says so); a space that offers no split at all is an error."""
    _check_gap_memory(args.episodes, 2)  # the least it can need (one split, hard and easy): before any import
    from .gap import format_audit
    from .report import audit_frame, audit_splits, format_audit_table, report_format, write_report
    from .splits import load_spec
    _settings(args)  # a bad --beta or --epsilon is an error before any work
    if args.report:  # a report that cannot be written is an error before any work, not after it
        report_format(args.report)
        _check_output_file(args.report, "--report", create_parents=True)  # write_report creates its folders
    space = _load_space(args.dir)
    protocol = _protocol(args)
    overrides = _protocol_overrides(args, protocol) if protocol is not None else {}
    if args.split:
        names = None if args.split == "all" else [args.split]
    elif protocol is not None:  # every split of the protocol, and the --spec files' splits
        names = None
    else:  # the --spec files' splits, else every split the space offers (CURI's nine, or its saved specs)
        names = [load_spec(s)["name"] for s in args.spec] if args.spec else None
    auto = protocol is None and not args.spec and _release_protocol(space)  # a release-grammar space
    if protocol is not None:
        splits = _protocol_splits(space, protocol, names, args.spec)
    else:
        splits = _protocol_splits(space, auto, names) if auto else _splits_for(space, names, args.spec)
    if not splits:
        raise _no_splits(args, "audit", space)
    _check_gap_memory(args.episodes, 2 * len(splits))
    settings = overrides.get("settings", protocol.settings) if protocol is not None else _settings(args)
    episodes = ({"query_negatives": protocol.query_negatives, "hard_mode": protocol.hard_mode}
                if protocol is not None else {})
    t = time.perf_counter()
    reports = audit_splits(space, splits, args.episodes, settings, args.seed, episode_shape=_episode_shape(args),
                           **episodes)
    print(format_audit(reports[0]) if len(reports) == 1 else format_audit_table(audit_frame(reports)))
    if len(reports) > 1:
        from .report import episode_note
        for line in episode_note(reports):
            print(line)
    if protocol is not None and protocol.left_out_note(splits):
        print(protocol.left_out_note(splits))
    for line in _dropped_conditions_note(splits):
        print(line)
    ladder_rows = None
    if args.ladder:
        from .ladder import format_ladder, ladder_profile, ladder_summary
        with _progress_output():
            ds = ladder_profile(space, splits, None, ("hard",), args.episodes, settings, args.seed,
                                progress=True, episode_shape=_episode_shape(args), **episodes)
        ladder_rows = ladder_summary(ds, seed=args.seed)
        print("\nthe oracle ladder (hard negatives):\n" + format_ladder(ladder_rows))
    if args.report:
        title = f"Difficulty report: protocol {protocol.name}" if protocol is not None else None
        paths = write_report(space, reports, args.report, settings=settings, seed=args.seed, title=title,
                             ladder=ladder_rows)
        print(f"\nreport: {paths[0]}" + (f" (+ {_counted(len(paths) - 1, 'figure')})" if len(paths) > 1 else ""))
    print(f"\n{len(reports)} split(s)"
          + (f" of protocol {auto.name} ({args.dir} was built with CURI's release grammar; oracle settings as "
             "the options give them)" if auto else "")
          + (f" of protocol {protocol.name}" + (f" overridden by {_override_text(args)}" if overrides else "")
             + f"; oracle settings {json.dumps(settings.as_dict(), sort_keys=True)}" if protocol is not None else "")
          + f", {args.episodes:,} test episodes per split and negatives; {time.perf_counter() - t:.1f} s")
    return 0


def _episode_shape_option(p, what: str = "for every split, in place of its spec's [episodes] table"):
    p.add_argument("--episode-shape", metavar="P,N[,QP,QN]", default=None,
                   help="episode shape: P positives and N negatives in the support set, QP and QN in the query set "
                        f"(default: as the support; 5,20 when nothing says otherwise); {what}")


def _episode_shape(args):
    """The --episode-shape of ``args`` as an EpisodeShape, or None when not given (bad text: one line)."""
    from .episodes import EpisodeShape
    text = getattr(args, "episode_shape", None)
    return None if text is None else EpisodeShape.parse(text, "--episode-shape")


def _dropped_conditions_note(splits) -> list:
    """Lines on the ConceptWorld conditions a protocol could not make a split of on this space
    (:func:`~bayes_concepts.conceptworld.space.experiment_splits`), once each."""
    seen = {}
    for split in splits.values():
        seen.update(getattr(split, "dropped_conditions", None) or {})
    return [f"note: condition {c!r} left out: {why}" for c, why in seen.items()]


def _exclusion_note(ds) -> list:
    """Lines on a gap run's episodes: each split's shape and the test concepts too small for it
    (count, first names, rule), and what the space's build left out (results' attributes)."""
    try:
        shapes = json.loads(ds.attrs.get("episode_shape", "{}"))
        excluded = json.loads(ds.attrs.get("excluded", "{}"))
    except ValueError:
        return []
    lines = []
    for name, sh in shapes.items():
        ex = excluded.get(name, {}).get("too_small", {"count": 0, "first": []})
        lines.append(f"{name}: episodes {sh['positives']}+{sh['negatives']} support, {sh['query_positives']}+"
                     f"{sh['query_negatives']} query; {excluded.get(name, {}).get('usable', 0):,} usable test "
                     f"concepts, {ex['count']:,} excluded" + (f" ({', '.join(ex['first'])}"
                                                             + (", ..." if ex["count"] > len(ex["first"]) else "")
                                                             + f"): {ex['rule']}" if ex["count"] else ""))
    for kind, rec in excluded.get("space", {}).items():
        lines.append(f"left out by the space's build, {kind.replace('_', ' ')}: {rec['count']:,} "
                     f"({', '.join(rec['first'])}{', ...' if rec['count'] > len(rec['first']) else ''}): "
                     f"{rec['rule']}")
    return lines


def cmd_space_from_pairs(args) -> int:
    from .pairs import build_pair_space
    if (args.items is None) == (args.items_per_pair is None):
        raise BayesConceptsError("space from-pairs: give --items FILE|DIR or --items-per-pair N"
                         + (", not both" if args.items is not None else ""))
    for line in build_pair_space(args.out, args.items, args.pairs_dir, primitives=not args.no_primitives,
                                 items_per_pair=args.items_per_pair, unlisted=args.unlisted,
                                 k_by=args.k_by, image_level=args.image_level,
                                 ks=args.k or (), seed=args.seed, overwrite=args.force, worlds=args.worlds or (),
                                 n_worlds=args.n_worlds,
                                 episodes=None if args.episode_shape is None else _episode_shape(args).as_dict()):
        print(line)
    return 0


#: Oracle and episode options whose values a protocol fixes (``args`` attribute names).  Given
#: explicitly together with --protocol, each replaces the protocol's value for the run (a
#: recorded override); left out, the protocol's value applies -- never the option's default.
_PROTOCOL_FIXES = ("prior", "beta", "likelihood", "epsilon", "weak_empty", "ap_tolerance", "query_negatives",
                   "hard_mode")
_SETTINGS_FIELDS = ("prior", "beta", "likelihood", "epsilon", "weak_empty", "ap_tolerance")
_OVERRIDE_NOTE = "; with --protocol: given explicitly, replaces the protocol's value (recorded as an override)"


def _protocol_option(p, help_text: str | None = None):
    p.add_argument("--protocol", choices=_LazyChoices(_registry("protocols", "protocols")), metavar="NAME",
                   default=None,
                   help=help_text or _LazyHelp(lambda: "compute as a named protocol: its splits, oracle settings and "
                                      "query negatives (" + _choices(_registry("protocols", "protocols")()) + "); an "
                                      "oracle or negatives option given explicitly with "
                                      "it replaces the protocol's value for this run, recorded in the results "
                                      "(attrs protocol_overrides) and in the printed settings"))


def _protocol(args):
    """The protocol named by --protocol (None without it)."""
    name = getattr(args, "protocol", None)
    if name is None:
        return None
    from .protocols import protocols
    return protocols.get(name)


def _protocol_overrides(args, protocol) -> dict:
    """The options of :data:`_PROTOCOL_FIXES` given explicitly on the command line, as overrides
    of ``protocol`` (the keyword arguments :meth:`Protocol.compute_gap` takes): ``settings``
    (the protocol's oracle settings with the given fields replaced), ``query_negatives``,
    ``hard_mode``.  An option left out keeps the protocol's value."""
    given = _given(args)
    overrides = {}
    fields = {k: getattr(args, k) for k in _SETTINGS_FIELDS if k in given}
    if fields:
        try:
            overrides["settings"] = protocol.settings_with(**fields)
        except BayesConceptsError:
            raise
        except ValueError as exc:  # "beta must be in ..." names the field: name the option
            raise _option_error(exc) from None
    for k in ("query_negatives", "hard_mode"):
        if k in given:
            overrides[k] = getattr(args, k)
    return overrides


def _override_text(args) -> str:
    """``--prior length, --query-negatives hard``: the options given explicitly that replace the
    protocol's values (empty when none)."""
    given = _given(args)
    return ", ".join(f"--{k.replace('_', '-')} {getattr(args, k)}" for k in _PROTOCOL_FIXES if k in given)


def _protocol_splits(space, protocol, names=None, specs=None) -> dict:
    """The protocol's splits (``names``, default all) plus any --spec files, treated by the protocol."""
    from .splits import SplitSpecError, make_splits
    own = {n: protocol.adapt(space, s) for n, s in make_splits(space, specs or ()).items()}
    if names is None:
        splits = protocol.splits(space)
        clash = sorted(set(splits) & set(own))
        if clash:
            raise SplitSpecError(f"split name {clash[0]!r} is a split of protocol {protocol.name}; rename your split")
        return {**splits, **own}
    return {n: own[n] if n in own else protocol.splits(space, [n])[n] for n in names}


def _registry(module: str, name: str):
    """A thunk giving the registry ``name`` of ``bayes_concepts.<module>``, imported when first
    called: building the parser imports nothing heavy, so a request refused before any work (e.g.
    too many episodes for the memory) never pays for numba, scipy and xarray."""
    def load():
        from importlib import import_module
        return getattr(import_module(f"{__package__}.{module}"), name)
    return load


class _LazyChoices:
    """The names of a registry as argparse ``choices``, read on first use (a value given for the
    option, an error message, --help).  Options using it set a ``metavar``: argparse would
    otherwise spell every choice into the usage line when the option is added."""

    def __init__(self, load):
        self._load = load

    def _names(self) -> tuple:
        return tuple(self._load().names())

    def __contains__(self, value) -> bool:
        return value in self._names()

    def __iter__(self):
        return iter(self._names())


class _LazyHelp:
    """An option's help text built when help is shown (it describes a registry's entries)."""

    def __init__(self, make):
        self._make = make

    def __str__(self) -> str:
        return self._make()

    def __mod__(self, params) -> str:  # argparse expands %(default)s and the like with "%"
        return self._make() % params

    def strip(self) -> str:
        return self._make().strip()

    def __contains__(self, text) -> bool:
        return text in self._make()


def _choices(registry) -> str:
    from .registry import describe
    return "; ".join(f"{name}: {describe(obj)}" for name, obj in registry.items())


def _hard_mode_option(p, protocol: bool = False):
    modes = _registry("episodes", "hard_negative_modes")
    p.add_argument("--hard-mode", choices=_LazyChoices(modes), metavar="MODE", default="union", action=_Given,
                   help=_LazyHelp(lambda: f"how hard negatives are drawn ({_choices(modes())}; default union)"
                                  + (_OVERRIDE_NOTE if protocol else "")))


def _oracle_options(p, protocol: bool = False):
    """--prior, --beta, --likelihood, --epsilon, --weak-empty and --seed; with ``protocol`` (the
    command has --protocol) their help says that, given explicitly, they override the protocol."""
    priors, likelihoods = _registry("oracles", "priors"), _registry("oracles", "likelihoods")
    empty_policies = _registry("oracles", "empty_policies")
    note = _OVERRIDE_NOTE if protocol else ""
    p.add_argument("--prior", choices=_LazyChoices(priors), metavar="NAME", default="length", action=_Given,
                   help=_LazyHelp(lambda: f"prior over concepts ({_choices(priors())}; default length){note}"))
    p.add_argument("--beta", type=_finite, default=0.2, action=_Given,
                   help=f"rate of the length prior per token (default 0.2){note}")
    p.add_argument("--likelihood", choices=_LazyChoices(likelihoods), metavar="NAME", default="size", action=_Given,
                   help=_LazyHelp(lambda: f"likelihood of the support labels ({_choices(likelihoods())}; "
                                          f"default size){note}"))
    p.add_argument("--epsilon", type=_finite, default=0.05, action=_Given,
                   help=f"label-noise rate of the noisy likelihood, in (0, 0.5) (default 0.05){note}")
    p.add_argument("--weak-empty", choices=_LazyChoices(empty_policies), metavar="POLICY", default="zero",
                   action=_Given,
                   help=_LazyHelp(lambda: f"what an oracle does when no concept fits the support "
                                          f"({_choices(empty_policies())}; default zero){note}"))
    p.add_argument("--seed", type=_whole(0), default=0, help="seed of the episodes (a whole number >= 0; default 0)")


def _ap_tolerance_option(p):
    """--ap-tolerance (gap and audit; it overrides a protocol's value when given)."""
    p.add_argument("--ap-tolerance", type=_finite, default=None, action=_Given, metavar="T",
                   help="the largest error allowed in each episode's AP on the test bank, a fraction in [0, 1]: "
                        "AP is computed to within T with a certificate, the results hold each episode's "
                        "certified bound (ap_bound) and the table's footer states T.  0 computes AP exactly.  "
                        "Default: 1e-4 for a likelihood that is not consistent-only (noisy), 0 for the others "
                        "(size, consistent), whose AP is exact anyway: with them a tolerance above 0 holds "
                        "with every bound 0, and applies only to the episodes the noisy weak-empty policy "
                        "scores with the noisy likelihood" + _OVERRIDE_NOTE)


def _scheduler_option(p, what: str, reads_space: bool = False):
    p.add_argument("--scheduler", metavar="local:N|ADDRESS", default=None,
                   help=f"run {what} on Dask: local:N starts a LocalCluster of N processes on this machine, "
                        "ADDRESS (tcp://host:8786) joins a running cluster whose workers have this package "
                        "installed" + (" and see the space at the same path" if reads_space else "")
                        + "; default: this process.  The "
                        "results are the same, value for value, wherever they run (README: Scaling out).")


def build_parser() -> argparse.ArgumentParser:
    ap = _Parser(prog="bayes-concepts", description="Bayesian oracles for compositional concept learning")
    ap.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    ap.add_argument("--plugin", metavar="MODULE", action="append",
                    help="import MODULE first, so the priors, likelihoods, split rules, ... it registers are "
                         "choices (repeatable; installed packages can also register through the entry-point "
                         "group bayes_concepts.plugins)")
    ap.add_argument("--grammar", metavar="FILE|NAME",
                    help="grammar file, or the name of one shipped with the package: curi.pcfg (CURI's language, the "
                         "default), curi_release.pcfg, clevr.pcfg (hypotheses/NAME works from anywhere, a wheel "
                         "install included)")
    sub = ap.add_subparsers(dest="command", required=True)

    p = sub.add_parser("explain", help="show a program's readable form, LaTeX, length and PCFG log-prob (a "
                                       "relational program: with --grammar hypotheses/clevr.pcfg)")
    p.add_argument("program", nargs="+", help="postfix program (quote it, or give its tokens)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=cmd_explain)

    p = sub.add_parser("eval", help="evaluate programs on the scenes of a JSON Lines file (with --grammar "
                                    "hypotheses/clevr.pcfg: relational programs on scenes with '3d_coords' or "
                                    "'relationships')")
    p.add_argument("program", nargs="+", help="one or more postfix programs, each quoted")
    p.add_argument("--scenes", required=True, metavar="FILE.jsonl", help="scenes, one JSON object per line")
    p.add_argument("--max-objects", type=_whole(1), default=None,
                   help="most objects a scene may have (default: the grammar's; CURI's 5, clevr.pcfg's 10)")
    p.add_argument("--json", action="store_true",
                   help='print {"<program>": [0, 1, ...]}; default: one line per scene, one label per program')
    p.set_defaults(func=cmd_eval)

    p = sub.add_parser("sample", help="draw programs from the grammar")
    p.add_argument("--n", type=_whole(0), default=10, help="programs to draw (default 10)")
    p.add_argument("--seed", type=_whole(0), default=0, help="seed of the draw (a whole number >= 0; default 0)")
    p.add_argument("--max-depth", type=_whole(1), default=None,
                   help="maximum derivation depth, the start symbol at depth 0 (default: the grammar's, 6)")
    p.add_argument("--log-prob", action="store_true", help="print the PCFG log-probability before each program")
    p.set_defaults(func=cmd_sample)

    sp = sub.add_parser("space", help="build, inspect and browse hypothesis spaces").add_subparsers(
        dest="space_command", required=True)
    p = sp.add_parser("build", help="build a hypothesis space into directory OUT")
    p.add_argument("out", metavar="OUT", help="directory to write: new, empty, or (with --force) a saved space")
    p.add_argument("--definitions", metavar="FILE.toml", default=None,
                   help="with --preset conceptworld: your own ConceptWorld definitions file (the packaged "
                        "hypotheses/conceptworld/concepts.toml's format), checked whole before the build")
    p.add_argument("--preset", choices=["demo", "paper", "curi", "clevr", "shj", "conceptworld"], default=None,
                   help="demo: 200,000 samples x 100,000 scenes; paper: CURI's 2,000,000 x 990,000 as the paper "
                        "describes it (default); curi: the space of CURI's release (its grammar file, local "
                        "retries at its depth, location bins 0..7, filter > 10 and < 10%%); clevr: CLEVR's "
                        "relational language (clevr.pcfg, 3-10 objects with 3-D positions and CLEVR's relations), "
                        "20,000 samples x 20,000 scenes plus 100 concepts of each CLOSURE family and 50 questions of "
                        "each CLEVR template (protocols closure, closure-baselines); "
                        "shj: every concept over the 8 stimuli of Shepard, Hovland & Jenkins' experiments (three "
                        "binary dimensions), enumerated from a boolean grammar (the global --grammar, default "
                        "hypotheses/shj.pcfg; also shj_and_not.pcfg, shj_xor_iff.pcfg) with its shortest "
                        "description length and summed PCFG probability; conceptworld: every concept of "
                        "ConceptWorld's definitions file (hypotheses/conceptworld/concepts.toml) up to --max-depth "
                        "(default 7) over grid scenes generated from them (--scenes per concept, default 40), for "
                        "the protocols conceptworld-productivity, -boxworld, -scaling and -substitution")
    p.add_argument("--samples", type=_whole(1), help="programs to sample from the grammar (default: the preset's)")
    p.add_argument("--programs", metavar="FILE",
                   help="build from the programs in FILE (one per line; CURI's released strings accepted) "
                        "instead of sampling")
    p.add_argument("--no-rejection", action="store_true",
                   help="with --programs: keep programs the grammar's rejection rules would drop")
    p.add_argument("--scenes", type=_whole(1), help="scenes in the sampled scene bank (default: the preset's)")
    p.add_argument("--scene-sampler", choices=["clevr", "uniform"],
                   help="how scenes are sampled (default clevr: CLEVR's ground plane and camera)")
    p.add_argument("--scenes-from", nargs="+", metavar="FILE", help="JSON Lines (.jsonl) or CLEVR (.json) scene files")
    p.add_argument("--max-depth", type=_whole(1), help="maximum derivation depth (default: the grammar's)")
    p.add_argument("--seed", type=_whole(0), help="master seed of the build (a whole number >= 0; default 0)")
    p.add_argument("--force", action="store_true",
                   help="replace OUT if it is a saved space (a directory holding anything else is never deleted)")
    p.add_argument("--quiet", action="store_true", help="no progress bars and no stage lines (errors and the final summary only)")
    _scheduler_option(p, "the executor's scene chunks")
    p.set_defaults(func=cmd_space_build)
    p = sp.add_parser("from-pairs", help="the pair space of an attribute-object benchmark (CZSL layout) into OUT")
    p.add_argument("out", metavar="OUT", help="directory to write the pair space to")
    p.add_argument("--items", metavar="FILE|DIR",
                   help="items: TSV with a header (item|image, attribute|attr, object|obj[, set]), JSON Lines / "
                        "a JSON list of objects with those keys, CZSL's metadata .t7 (needs torch), or an image "
                        "folder of 'attribute object' sub-folders, or hxm97's image lists (train_imgs.txt, val_imgs.txt, "
                        "test_imgs.txt: 'path attribute object', no header; the file or its folder); NA records are "
                        "dropped and counted (this or --items-per-pair)")
    p.add_argument("--items-per-pair", type=_whole(1), default=None, metavar="N",
                   help="no items file: give every listed pair N synthetic items, to audit the pair lists alone "
                        "(e.g. RLCL's lists without its images); every pair then has N items")
    p.add_argument("--pairs-dir", required=True, metavar="DIR|FILE.json",
                   help="holds train_pairs.txt, val_pairs.txt, test_pairs.txt (or JSON lists train.json, ...), or "
                        "one JSON file of train/val/test lists, or hxm97's pair split (seen_pairs.txt + val/test "
                        "_unseen_comps.txt and _unseen_pairs.txt, joined per side); pairs no item has are left out "
                        "and counted")
    p.add_argument("--unlisted", choices=("keep", "drop"), default="keep",
                   help="items whose pair no pair file names (counted and named either way): keep (default) leaves "
                        "them in the bank, positives of their attribute and object alone where those are concepts; "
                        "drop leaves them out (not items)")
    p.add_argument("--no-primitives", action="store_true",
                   help="only the pairs are concepts (default: also every attribute and every object alone)")
    p.add_argument("--k", type=int, nargs="+", metavar="K",
                   help="also save reference-limited splits seen_kK: K seen pairs per attribute (RLCL; per object "
                        "with --k-by object)")
    p.add_argument("--k-by", choices=("attribute", "object"), default="attribute",
                   help="what --k limits: K seen pairs per attribute (default; splits seen_kK, objects may be novel) "
                        "or per object (splits seen_kK_obj, attributes may be novel)")
    p.add_argument("--image-level", action="store_true",
                   help="ask for an image-level split (CZSL's generalised setting: test-set images of seen pairs); "
                        "refused: splits hold out concepts, not items (the build counts each set's items of seen "
                        "and unseen pairs instead)")
    p.add_argument("--worlds", type=_whole(1), nargs="+", metavar="NP",
                   help="also save RLCL's episode setting worlds_npNP: worlds of NP attributes x NP objects drawn as "
                        "RLCL's episode sampler draws one (NP seen pairs without a shared primitive, the grid's "
                        "other pairs split into seen and unseen); seen pairs train, unseen test, the rest val")
    p.add_argument("--n-worlds", type=_whole(1), default=None, metavar="N",
                   help="at most N worlds per --worlds split (default: as many as the space allows)")
    _episode_shape_option(p, "written into every split spec it saves")
    p.add_argument("--seed", type=_whole(0), default=0,
                   help="seed of the test bank and the seen_kK splits (a whole number >= 0; default 0)")
    p.add_argument("--force", action="store_true", help="replace OUT if it exists")
    p.set_defaults(func=cmd_space_from_pairs)
    p = sp.add_parser("info", help="summarise a space: counts, histograms, manifest sha256")
    p.add_argument("dir", metavar="DIR", help="a saved hypothesis space")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--no-verify", action="store_true", help="skip the file checksum check (and say so)")
    p.set_defaults(func=cmd_space_info)
    p = sp.add_parser("show", help="show one concept by id or program")
    p.add_argument("dir", metavar="DIR", help="a saved hypothesis space")
    p.add_argument("concept", nargs="+", metavar="ID|PROGRAM", help="a concept id, or a program (quoted or as tokens)")
    p.add_argument("--max-synonyms", type=_whole(0), default=20, help="synonyms to list (default 20)")
    p.add_argument("--no-verify", action="store_true", help="skip the file checksum check (and say so)")
    p.set_defaults(func=cmd_space_show)

    p = sub.add_parser("splits", help="train/val/test sizes and synonym leakage of every split")
    p.add_argument("dir", metavar="DIR", help="a saved hypothesis space")
    p.add_argument("--spec", nargs="+", metavar="FILE", help="extra split spec files (TOML)")
    _protocol_option(p)
    p.add_argument("--json", action="store_true", help="print the concept ids of every side as JSON")
    p.set_defaults(func=cmd_splits)

    p = sub.add_parser("episodes", help="sample episodes (or: episodes show FILE INDEX)")
    p.add_argument("dir", metavar="DIR", help="a saved hypothesis space")
    p.add_argument("--split", required=True, help="the split whose concepts the episodes are drawn for")
    p.add_argument("--spec", nargs="+", metavar="FILE", help="split spec files (TOML) defining more splits")
    p.add_argument("--negatives", choices=["hard", "easy"], required=True,
                   help="negatives of the support set: hard (true under a consistent alternative) or easy (random)")
    p.add_argument("--query-negatives", choices=["hard", "easy", "random"], default=None,
                   help="negatives of the query set (default: as --negatives; random: CURI's released code)")
    _hard_mode_option(p)
    p.add_argument("--n", type=_whole(1), required=True, help="episodes to draw")
    _episode_shape_option(p)
    p.add_argument("--side", choices=["train", "val", "test"], default="test",
                   help="which concepts of the split (default test)")
    p.add_argument("--seed", type=_whole(0), default=0, help="seed of the episodes (a whole number >= 0; default 0)")
    p.add_argument("--out", required=True, metavar="FILE.npz", help="the episodes file to write")
    p.set_defaults(func=cmd_episodes)

    p = sub.add_parser("gap", help="the compositionality gap of splits: strong vs weak oracle")
    p.add_argument("dir", metavar="DIR", help="a saved hypothesis space")
    p.add_argument("--split", default="all", help="one split, or 'all' (default)")
    p.add_argument("--spec", nargs="+", metavar="FILE", help="split spec files (TOML) defining more splits")
    p.add_argument("--negatives", choices=["hard", "easy", "both"], default="both",
                   help="support negatives: hard, easy or both (default)")
    p.add_argument("--query-negatives", choices=["hard", "easy", "random"], default=None, action=_Given,
                   help="negatives of the query set (default: as --negatives; random: CURI's released code)"
                        + _OVERRIDE_NOTE)
    _hard_mode_option(p, protocol=True)
    p.add_argument("--episodes", type=_whole(1), default=20_000,
                   help="test episodes per split and negatives (default 20,000)")
    _episode_shape_option(p)
    _protocol_option(p)
    p.add_argument("--learner", action="append", metavar="MODEL_DIR|NAME",
                   help="also score a trained model (scored on its training split) or a reference learner "
                        "(random, prototype) on the same episodes; repeatable.  A model is scored only on the "
                        "space it was trained on (the manifest sha256 its card records) and on a split with its "
                        "training split's concepts; anything else is an error")
    p.add_argument("--allow-other-space", action="store_true",
                   help="score a model on a space or split other than the one it was trained on (its training "
                        "concepts may then be test concepts); the results record the override")
    _oracle_options(p, protocol=True)
    _ap_tolerance_option(p)
    p.add_argument("--out", metavar="results.nc", help="also write the per-episode results (netCDF)")
    p.add_argument("--parts", action="store_true",
                   help="also score the atom and the compound oracle (concepts whose atoms / atoms and compounds "
                        "all occur in train concepts) on the same episodes and split each gap into novel atoms, novel "
                        "compounds and novel arrangements (about twice the oracles' work)")
    p.add_argument("--json", action="store_true", help="print the table, the settings and the seed as JSON")
    _scheduler_option(p, "the oracles' episode chunks", reads_space=True)
    p.set_defaults(func=cmd_gap)

    p = sub.add_parser("ladder", help="the oracle ladder: every rung's mAP on the same episodes, from the memoriser "
                                      "to the strong oracle, and rank correlations with published models")
    p.add_argument("dir", metavar="DIR", help="a saved concept space")
    p.add_argument("--split", nargs="+", metavar="NAME", default=None,
                   help="splits to score (default: all of the protocol's or the space's)")
    p.add_argument("--spec", nargs="+", metavar="FILE", help="split spec files (TOML) defining more splits")
    _protocol_option(p)
    p.add_argument("--rungs", nargs="+", metavar="RUNG", default=None,
                   help=_LazyHelp(lambda: "rungs to score, each NAME or NAME[knob=value,...] (e.g. sampling[n=100]; "
                                          "default: " + " ".join(_registry("ladder", "DEFAULT_RUNGS")()) + "); "
                                          "registered: " + _choices(_registry("rungs", "rungs")())))
    p.add_argument("--alpha", nargs="+", type=_finite, metavar="A", default=None,
                   help="a curve of the learned priors' concentration alpha (> 0): every rung that takes alpha is "
                        "scored once per value (default: each rung's own, 1)")
    p.add_argument("--budget", nargs="+", type=_whole(1), metavar="N", default=None,
                   help="a curve of the sampling learners' budget n (hypotheses drawn per episode, >= 1): every rung "
                        "that takes n is scored once per value (default: each rung's own, 1,000)")
    p.add_argument("--negatives", choices=["hard", "easy", "both"], default="both",
                   help="support negatives: hard, easy or both (default)")
    p.add_argument("--query-negatives", choices=["hard", "easy", "random"], default=None, action=_Given,
                   help="negatives of the query set (default: as --negatives)" + _OVERRIDE_NOTE)
    _hard_mode_option(p, protocol=True)
    p.add_argument("--episodes", type=_whole(1), default=5_000,
                   help="test episodes per split and negatives (default 5,000)")
    _episode_shape_option(p)
    _oracle_options(p, protocol=True)
    p.add_argument("--published", metavar="NAME|FILE", default=None,
                   help="published model results to correlate with: a benchmark (curi, closure, conceptworld, rlcl), "
                        "a TOML file in the same format, or none (default: the protocol's benchmark, or curi for "
                        "CURI's splits)")
    p.add_argument("--n-boot", type=_whole(10), default=1000,
                   help="bootstrap resamples for intervals (default 1,000)")
    p.add_argument("--out", metavar="results.nc", help="also write the per-episode results (netCDF)")
    p.add_argument("--figures", metavar="DIR", help="write ladder_<negatives>.png/.pdf/.csv (plot_ladder) into DIR")
    p.add_argument("--json", action="store_true", help="print the profiles, spreads and correlations as JSON")
    _scheduler_option(p, "the oracles' episode chunks", reads_space=True)
    p.set_defaults(func=cmd_ladder)

    p = sub.add_parser("train", help="meta-train a neural baseline (CURI's prototypical networks) on a split")
    p.add_argument("dir", metavar="DIR", help="a saved hypothesis space")
    p.add_argument("--split", required=True, help="train on this split's train concepts, validate on its val concepts")
    p.add_argument("--spec", nargs="+", metavar="FILE", help="split spec files (TOML) defining more splits")
    p.add_argument("--learner", required=True, metavar="ENCODER-POOLING",
                   help="architecture: schema-average, schema-concat, schema-relnet or schema-transformer "
                        "(image-... and sound-... likewise); with --modality, just the pooling")
    p.add_argument("--modality", choices=["schema", "image", "sound"],
                   help="how scenes are shown to the learner (the encoder part of --learner)")
    p.add_argument("--out", required=True, metavar="MODEL_DIR",
                   help="directory for the weights and card (the card records the space's manifest sha256 and "
                        "the split's concept sets: gap scores the model there only)")
    p.add_argument("--negatives", choices=["hard", "easy"], default="hard", help="negatives of the training episodes (default hard)")
    p.add_argument("--query-negatives", choices=["hard", "easy", "random"], default=None,
                   help="negatives of the query sets (default: as --negatives)")
    _hard_mode_option(p)
    p.add_argument("--budget", metavar="TIME",
                   help="wall-clock budget of the whole command, e.g. 90s, 30m, 2h (default 30m unless --steps).  "
                        "It counts from the command's start (loading the space included) to the written model: a "
                        "training step starts only when it and the closing validation and save are expected to end "
                        "within the budget, each expected to take as long as the slowest of its recent runs, so the "
                        "command ends about when the budget is spent, not a step and a validation later (the first "
                        "validation is always made, however long it takes).")
    p.add_argument("--steps", type=int, help="most training steps")
    p.add_argument("--alpha", type=float, default=0.0, help="weight of the concept loss (default 0)")
    p.add_argument("--profile", default="cpu", metavar="NAME",
                   help="the training settings and architecture options not given here.  cpu (the default): "
                        "chosen for a CPU: Adam 1e-3 with 100 warm-up steps then a cosine decay to the end of "
                        "the budget, 64 episodes per step, no batch norm in the relation net's g, the image "
                        "encoder's small CNN at 80 x 120.  curi: CURI's published settings: a constant Adam "
                        "rate (schema 1e-3, image 1e-4, sound 5e-5), 64 episodes per step for schemas and 8 for "
                        "images and sounds, batch norm in the relation net's g, ResNet-18 to layer 3 at 160 x 240 "
                        "for images (slow on a CPU).  Options given here win over the profile; the card records "
                        "both")
    p.add_argument("--batch", type=_whole(1), default=None,
                   help="episodes per step (default: the profile's; cpu 64, curi 64 for schemas and 8 for "
                        "images and sounds)")
    p.add_argument("--lr", type=float, default=None,
                   help="Adam's learning rate (default: the profile's; cpu 1e-3 with warm-up and cosine decay, "
                        "curi constant 1e-3 for schemas, 1e-4 for images, 5e-5 for sounds)")
    p.add_argument("--val-every", type=int, default=500, help="steps between validations")
    p.add_argument("--val-episodes", type=int, default=1000, help="validation episodes (val concepts) per check (default 1000)")
    p.add_argument("--patience", type=int, default=10, help="validations without improvement before stopping (0: never)")
    p.add_argument("--precision", choices=["auto", "fp32", "bf16"], default="auto",
                   help="arithmetic precision (auto: bf16 on a CPU with fast bfloat16 products, else fp32)")
    p.add_argument("--threads", type=_whole(1), help="torch threads, 1 to the cores this process may use (more is "
                   "refused; default: every core)")
    p.add_argument("--name", help="the model's name in results (default ENCODER-POOLING)")
    p.add_argument("--seed", type=_whole(0), default=0,
                   help="seed of initialisation and episodes (a whole number >= 0; default 0)")
    p.add_argument("--resume", action="store_true", help="continue the run saved in MODEL_DIR")
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("posterior", help="posterior and predictive of the oracles for a support set")
    p.add_argument("dir", metavar="DIR", help="a saved hypothesis space")
    p.add_argument("--support", required=True, metavar="FILE.jsonl", help='scenes with a "label": 0|1 field')
    p.add_argument("--query", metavar="FILE.jsonl", help="scenes to predict p(y = 1) for")
    p.add_argument("--split", help="also the weak oracle of this split (default: the strong oracle over all concepts)")
    p.add_argument("--spec", nargs="+", metavar="FILE", help="split spec files (TOML) defining more splits")
    p.add_argument("--negatives", choices=["hard", "easy"], default="hard",
                   help="how the support negatives were drawn (the size likelihood depends on it; default hard)")
    p.add_argument("--top", type=_whole(0), default=10, help="concepts to list (0: every concept with p > 0)")
    _oracle_options(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=cmd_posterior)

    p = sub.add_parser("audit", help="audit splits: sizes, leakage, comp gap, coverage, entropies, divergences")
    p.add_argument("dir", metavar="DIR", help="a saved hypothesis space")
    p.add_argument("--spec", nargs="+", metavar="FILE",
                   help="split spec files (default: the space's own splits; with --protocol, added to its splits)")
    p.add_argument("--split", help="audit only this split (or 'all'); default: the --spec splits, else all (with "
                                   "--protocol: the protocol's and the --spec splits)")
    p.add_argument("--episodes", type=_whole(1), default=2000,
                   help="test episodes per split and negatives (default 2000)")
    _episode_shape_option(p)
    p.add_argument("--report", metavar="OUT.md|OUT.html",
                   help="also write a one-page difficulty report (Markdown with PNGs, or one HTML file)")
    p.add_argument("--ladder", action="store_true",
                   help="also score the oracle ladder's default rungs on the same hard-negative episodes and print "
                        "(and, with --report, show) each split's ladder profile: where it stops being hard")
    _protocol_option(p)
    _oracle_options(p, protocol=True)
    _ap_tolerance_option(p)
    p.set_defaults(func=cmd_audit)

    p = sub.add_parser("render", help="draw one scene of a space as a PNG picture, or a WAV sound with --sound; "
                                      "--bank: every scene, cached in the space directory")
    p.add_argument("space", metavar="SPACE", help="a saved hypothesis space")
    p.add_argument("scene_id", metavar="SCENE_ID", type=int, nargs="?", help="index in the space's scene bank")
    p.add_argument("--sound", action="store_true", help="write the scene's sound (WAV) instead of its picture")
    p.add_argument("--out", metavar="FILE.png|FILE.wav",
                   help="where to write the picture (.png) or, with --sound, the clip (.wav)")
    p.add_argument("--bank", action="store_true",
                   help="render every scene of the bank into SPACE/rendered/ (uint8 pictures or float32 clips, .npy, "
                        "checksummed; read back by later runs and by image/sound learners); an existing bank is "
                        "checked instead")
    p.add_argument("--rebuild", action="store_true", help="with --bank: render again, replacing a damaged or stale bank")
    p.add_argument("--height", type=_whole(1), default=None,
                   help="picture height in pixels (default 160 for one scene, 80 with --bank; a ConceptWorld "
                        "space: its 32 x 32 grid picture, or a whole multiple of 32 equal to --width)")
    p.add_argument("--width", type=_whole(1), default=None,
                   help="picture width in pixels (default 240 for one scene, 120 with --bank)")
    p.set_defaults(func=cmd_render)

    p = sub.add_parser("figures", help="write the figures of a results file (PNG and PDF)")
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
    _protocol_option(p, "the protocol whose splits the episode view's split is taken from, for results that do "
                        "not record one (results of gap --protocol record theirs, and another is refused)")
    p.add_argument("--seed", type=_whole(0), default=0,
                   help="seed of the episode view and bootstrap (a whole number >= 0; default 0)")
    p.set_defaults(func=cmd_figures)

    p = sub.add_parser("demo", help="build the demo space if missing, print the comp-gap table, write results")
    p.add_argument("--space", default="spaces/demo", metavar="DIR",
                   help="the demo space; built here if it has no manifest.json and is missing or empty "
                        "(default spaces/demo)")
    p.add_argument("--episodes", type=_whole(1), default=2000,
                   help="test episodes per split and negatives (default 2000)")
    p.add_argument("--seed", type=_whole(0), default=0, help="seed of the episodes (a whole number >= 0; default 0)")
    p.add_argument("--out", default="results.nc", metavar="FILE.nc", help="results file to write (default results.nc)")
    p.add_argument("--figures", default="demo_figs", metavar="DIR",
                   help="directory for the figures (default demo_figs; '' to skip figures; "
                        "'make figures' writes the committed paper_figs)")
    p.set_defaults(func=cmd_demo)
    _add_people_parser(sub)
    _add_data_parser(sub)
    return ap


def cmd_data_fetch(args) -> int:
    from .data import PUBLISHED, fetch
    root = fetch(args.name, args.dir, source=getattr(args, "from"), overwrite=args.force,
                 log=None if args.quiet else print)
    pub = PUBLISHED[args.name]
    print(f"fetched {len(pub.files)} files of {pub.repo} at {pub.commit[:12]} into {root} (sha256 in "
          f"{root / 'FETCHED.json'}); read with: bayes-concepts {pub.read_with.format(root=root)}")
    return 0


def _add_data_parser(sub):
    """``data fetch``: the real benchmarks' published files, as their repositories have them."""
    dp = sub.add_parser("data", help="get the real benchmarks' published files (C-GQA, MIT-States, RLCL)").add_subparsers(
        dest="data_command", required=True)
    p = dp.add_parser("fetch", help="download a benchmark's published files (pinned commit) into DIR/NAME/, laid "
                                    "out as its repository has them; nothing third-party ships with the package")
    p.add_argument("name", choices=("c-gqa", "mit-states", "rlcl"),
                   help="c-gqa: C-GQA's natural-split pair lists (minho511/Compositional-Zero-Shot-Learning-Demo); "
                        "mit-states: hxm97's realistic-CZSL image labels and pair split of MIT-States; rlcl: "
                        "RLCL's pair lists (bighuang624/RL-CZSL)")
    p.add_argument("dir", nargs="?", default="data", metavar="DIR",
                   help="where to put them (default data/, which git ignores)")
    p.add_argument("--from", default=None, metavar="COPY",
                   help="copy from a local copy of the repository (same paths) instead of downloading")
    p.add_argument("--force", action="store_true", help="replace files already there (default: keep them)")
    p.add_argument("--quiet", action="store_true", help="no line per file")
    p.set_defaults(func=cmd_data_fetch)


def _add_people_parser(sub):
    """``people shj``: the ideal observer fitted to people's learning curves."""
    pp = sub.add_parser("people", help="ideal observers against people's category learning").add_subparsers(
        dest="people_command", required=True)
    p = pp.add_parser("shj", help="fit the sequential ideal observer's beta, epsilon and lapse rate to the six "
                                  "structures of Shepard, Hovland & Jenkins (Nosofsky et al. 1994's 6 x 16 error "
                                  "table) and write the figure, its numbers and a summary")
    p.add_argument("--language", default="and_or_not", metavar="NAME|FILE", action=_Given,
                   help="the observer's language: and_or_not (hypotheses/shj.pcfg, the default), and_not or xor_iff, "
                        "or a boolean grammar file")
    p.add_argument("--space", metavar="DIR",
                   help="a saved space built with 'space build OUT --preset shj' (instead of --language)")
    p.add_argument("--prior", choices=["length", "pcfg"], default="length",
                   help="the prior over concepts: length (exp(-beta * shortest description length), the default) or "
                        "pcfg (the grammar's probability to the power beta)")
    p.add_argument("--method", choices=["svi", "nuts"], default="svi",
                   help="svi (a multivariate normal guide, about two minutes here; the default) or nuts (exact "
                        "MCMC; far slower: each step evaluates the model many times)")
    p.add_argument("--steps", type=_whole(1), action=_Given, default=300,
                   help="optimisation steps of svi (default 300); refused with --method nuts")
    p.add_argument("--samples", type=_whole(1), default=1000, help="posterior draws kept (default 1000)")
    p.add_argument("--warmup", type=_whole(0), action=_Given, default=300,
                   help="warm-up steps of nuts (default 300); refused with --method svi")
    p.add_argument("--orders", type=_whole(1), default=None,
                   help="average the block errors over this many sampled random trial orders (seeded by --seed) "
                        "instead of exactly over all orders (the default; sampling is faster, with Monte Carlo "
                        "error)")
    p.add_argument("--draws", type=_whole(1), default=100,
                   help="posterior draws whose curves the figure and the predictive check use (default 100)")
    p.add_argument("--compare", action="store_true",
                   help="also compare every language with both priors by the marginal likelihood (grid quadrature) "
                        "and held-out blocks (about five minutes); without it the fit is checked against its own "
                        "grid posterior")
    p.add_argument("--human", metavar="FILE.csv",
                   help="another error table (type,block,p_error); default Nosofsky et al. (1994)")
    p.add_argument("--structures", metavar="FILE.csv",
                   help="other category structures (type,d1,d2,d3,category); default Shepard et al. (1961)")
    p.add_argument("--seed", type=_whole(0), default=0,
                   help="seed of the fit, the posterior draws and any sampled orders (a whole number >= 0; default 0)")
    p.add_argument("--out", metavar="DIR",
                   help="write shj_people.png/.pdf (the figure), shj_people.csv and shj_people_order.csv (its "
                        "numbers) and shj_people.json (the summary) into DIR")
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    p.set_defaults(func=cmd_people_shj)


#: Bytes per sampled SHJ trial order while its prefix counts are made: a block of 16 trials
#: over 8 stimuli, int64 one-hot, cumulative and sorted copies.
_SHJ_ORDER_BYTES = 4 * 16 * 8 * 8


def cmd_people_shj(args) -> int:
    given = _given(args)
    if args.method == "nuts" and "steps" in given:
        raise BayesConceptsError("--steps sets the svi optimisation: it does not apply with --method nuts")
    if args.method == "svi" and "warmup" in given:
        raise BayesConceptsError("--warmup sets the nuts warm-up: it does not apply with --method svi")
    if args.space and "language" in given:
        raise BayesConceptsError("give --space or --language, not both (a saved space has its own language)")
    for option, path in (("--human", args.human), ("--structures", args.structures)):
        if path and not Path(path).is_file():
            raise BayesConceptsError(f"{option} {path}: no such file")
    if args.out:
        _check_output_dir(args.out, "--out")
    from .cogsci.boolean import SHJ_LANGUAGES
    language = args.language
    if not args.space and language not in SHJ_LANGUAGES:
        if not Path(language).is_file() and not language.endswith(".pcfg"):
            raise BayesConceptsError(f"--language {language}: expected one of {', '.join(SHJ_LANGUAGES)} or a grammar "
                                     "file")
        language = str(_grammar_path(language))
        if not Path(language).is_file():
            raise BayesConceptsError(f"--language {args.language}: no such grammar file")
    if args.orders:  # the sampled orders' prefix counts are held at once: refused before any work
        from .scale import check_memory
        check_memory(args.orders * _SHJ_ORDER_BYTES, f"--orders {args.orders:,}",
                     "sample fewer orders (or leave --orders out: the exact average over all orders)",
                     f"the prefix counts of {args.orders:,} trial orders")
    space = None
    if args.space:
        from .spaces import load_space
        space = load_space(args.space)
    from .cogsci.shj_plots import shj_analysis
    run = shj_analysis(language, args.prior, space=space, method=args.method, steps=args.steps,
                       num_samples=args.samples, warmup_steps=args.warmup,
                       states="sampled" if args.orders else "exact", n_orders=args.orders or 32, seed=args.seed,
                       draws=args.draws, compare=args.compare, human=args.human, structures=args.structures,
                       out=args.out, progress=not args.json)
    s = run["summary"]
    if args.json:
        from .cogsci.shj_plots import _json_default
        print(json.dumps(s, default=_json_default))
        return 0
    par = s["parameters"]
    print(f"{s['language']}, {s['prior']} prior, {s['method']} ({s['times']['fit_seconds']:.0f} s):")
    for name in ("beta", "epsilon", "lapse"):
        v = par[name]
        print(f"  {name:8s} {v['mean']:.4f}   {v['prob']:.0%} interval [{v['low']:.4f}, {v['high']:.4f}]")
    print(f"  block errors, model vs people ({s['cells']} cells): r = {s['correlation']:.3f}, "
          f"RMSE = {s['rmse']:.3f}; {s['ppc']['cells_inside']}/{s['ppc']['cells']} cells inside the "
          f"{s['ppc']['prob']:.0%} predictive interval")
    print("  mean error per type   " + "  ".join(f"{t}: {v['people']:.3f}/{v['model']:.3f}"
                                               for t, v in s["mean_error_per_type"].items()) + "  (people/model)")
    print(f"  order, people: {s['order_people']}")
    print(f"  order, model:  {s['order_model']}  ({'reproduces' if s['order_check']['reproduced'] else 'misses'} "
          f"{s['human_order']}" + (f"; fails {', '.join(s['order_check']['failed'])}" if s['order_check']['failed']
                                   else "") + ")")
    if "comparison" in s:
        c = s["comparison"]
        print("  language/prior          log evidence   held-out log density   order")
        for key, v in c.items():
            if isinstance(v, dict):
                print(f"  {key:22s} {v['log_evidence']:12.1f}   {v['held_out']['log_predictive']:20.1f}   "
                      f"{v['order_model']}")
        print(f"  best by evidence: {c['best_by_evidence']}; best on held-out blocks: {c['best_by_held_out']}")
    for path in run["paths"]:
        print(f"wrote {path}")
    return 0


def load_plugins(argv) -> list:
    """Import the modules that register extensions (priors, likelihoods, split rules, ...)
    before the parser takes its choices from the registries: every ``--plugin MODULE`` of
    ``argv``, and every entry point of the group ``bayes_concepts.plugins`` of installed
    packages.  Returns ``argv`` without the ``--plugin`` options."""
    from importlib import import_module
    from importlib.metadata import entry_points
    rest, modules = [], []
    i = 0
    while i < len(argv):
        if argv[i] == "--plugin" and i + 1 < len(argv):
            modules.append(argv[i + 1])
            i += 2
        elif argv[i].startswith("--plugin="):
            modules.append(argv[i].split("=", 1)[1])
            i += 1
        else:
            rest.append(argv[i])
            i += 1
    for ep in entry_points(group="bayes_concepts.plugins"):
        try:
            ep.load()
        except Exception as exc:  # noqa: BLE001 -- any error of a plugin's code is one line naming it
            raise BayesConceptsError(f"plugin {ep.value} (entry point {ep.name} of group bayes_concepts.plugins): "
                                     f"{_plugin_problem(exc)}") from None
    for name in modules:
        try:
            import_module(name)
        except Exception as exc:  # noqa: BLE001
            raise BayesConceptsError(f"--plugin {name}: {_plugin_problem(exc)}") from None
    return rest


def _plugin_problem(exc) -> str:
    """What went wrong importing a plugin module, in a few words (its own line where it raised)."""
    if isinstance(exc, ModuleNotFoundError):
        return f"cannot import it ({exc})"
    text = " ".join(str(exc).split()) or type(exc).__name__
    if isinstance(exc, ValueError) and "already registered" in text:
        return (f"{text.replace(' (pass replace=True)', '')}: a plugin registers names of its own (register with "
                "replace=True to replace one on purpose)")
    import traceback
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" at {Path(frames[-1].filename).name} line {frames[-1].lineno}" if frames else ""
    return f"importing it raised {type(exc).__name__}{where}: {text}"


def _silence_stdout():
    """After a broken pipe: point stdout at /dev/null, so that the interpreter's final flush
    of what is still buffered does not fail a second time (with a message on stderr)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # stdout is not a file descriptor (tests capture it)
        pass


#: the commands that run the numba kernels (the first run compiles them)
_COMPILING_COMMANDS = ("cmd_gap", "cmd_ladder", "cmd_audit", "cmd_demo", "cmd_posterior", "cmd_space_build",
                       "cmd_splits_search", "cmd_train", "cmd_people_shj", "cmd_episodes")


def _kernels_cached() -> bool:
    """Whether numba's on-disk cache already holds the oracles' kernels, compiled by an earlier
    run: under ``NUMBA_CACHE_DIR`` when it is set (numba then caches nowhere else), else beside
    the module (``__pycache__``)."""
    where = os.environ.get("NUMBA_CACHE_DIR")
    place = Path(where) if where else Path(__file__).resolve().parent / "oracles" / "__pycache__"
    return place.is_dir() and next(place.rglob("kernels.*.nbi"), None) is not None


def main(argv=None) -> int:
    started = time.perf_counter()  # train --budget counts from here
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        argv = load_plugins(argv)
    except BayesConceptsError as exc:
        print(f"bayes-concepts: error: {exc}", file=sys.stderr)
        return 2
    if argv[:2] == ["episodes", "show"]:  # 'episodes show FILE INDEX' next to 'episodes DIR ...'
        p = _Parser(prog="bayes-concepts episodes show", description="one episode of an episodes file")
        p.add_argument("file", metavar="FILE.npz", help="an episodes file written by 'bayes-concepts episodes'")
        p.add_argument("index", type=_whole(0), help="the episode's index (0-based)")
        p.add_argument("--space", metavar="DIR", help="the space the episodes came from (default: from --space)")
        args = p.parse_args(argv[2:])
        args.func = cmd_episodes_show
    elif argv[:2] == ["splits", "search"]:  # 'splits search DIR ...' next to 'splits DIR'
        args = _splits_search_parser().parse_args(argv[2:])
        args.func = cmd_splits_search
    else:
        args = build_parser().parse_args(argv)
    args.started = started
    # (not inside the test suite, whose checks of one-line errors and quiet runs hold for a
    # fresh clone too; tests/test_ladder.py checks the line itself)
    if (getattr(args.func, "__name__", "") in _COMPILING_COMMANDS and not os.environ.get("PYTEST_CURRENT_TEST")
            and not _kernels_cached()):
        print("bayes-concepts: compiling the numba kernels once (about a minute on a 2-core machine; later runs "
              "reuse them from the cache, and progress estimates settle after the first step)", file=sys.stderr)
    from .scale import safe_interrupts
    try:
        with safe_interrupts():  # Ctrl-C never inside numba's Python code (a SystemError, a crash)
            status = args.func(args)
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's final flush
        return status
    except KeyboardInterrupt as exc:
        return _interrupted(exc)
    except BaseException as exc:
        if _caused_by_interrupt(exc):  # an error while unwinding from Ctrl-C: the interrupt is the news
            return _interrupted(_caused_by_interrupt(exc))
        return _failure(exc)


def _caused_by_interrupt(exc):
    """The KeyboardInterrupt ``exc`` was raised while handling (or because of), or None."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, KeyboardInterrupt):
            return exc
        exc = exc.__cause__ or exc.__context__
    return None


def _interrupted(exc) -> int:
    """Ctrl-C: one line (what the interrupted work left and how it is cleaned, when it says), 130."""
    detail = str(exc) if type(exc) is not KeyboardInterrupt else ""
    print("bayes-concepts: interrupted" + (f" {detail}" if detail else ""), file=sys.stderr)
    return 130


def _failure(exc) -> int:
    """The exit status (and one line on stderr) of an exception a command raised."""
    try:
        raise exc
    except BayesConceptsError as exc:
        print(f"bayes-concepts: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # output piped into head & co.: stop quietly
        _silence_stdout()
        return 0
    except (FileExistsError, ValueError) as exc:
        print(f"bayes-concepts: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        name = f" {exc.filename}" if getattr(exc, "filename", None) else ""
        print(f"bayes-concepts: error:{name}: {exc.strerror or exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
