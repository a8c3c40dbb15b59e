"""``space build|info|show``: build, inspect and browse hypothesis spaces.

``space build --preset NAME`` builds the space of a preset of
:data:`~bayes_concepts.presets.PRESETS` (the one registry of presets): with its build
settings, or by its own ``make`` / ``cli_build`` (SHJ's, ConceptWorld's, a plugin's) -- what
``bc.build_space(NAME)`` builds from Python.
"""
from __future__ import annotations

import contextlib
import json
import sys
import time
from pathlib import Path

from ..errors import BayesConceptsError
from ..command_registry import command, command_group
from ..options import LazyChoices, LazyHelp, check_depth_option, grammar_of, grammar_path, whole
from ..run_args import scheduler_option
from ..terminal import log_line, nothing_written, print_json, progress_output

command_group("space", help="build, inspect and browse hypothesis spaces", order=40)

#: ``space build --templates FILE``: questions drawn from each template unless ``--per-template``
TEMPLATE_QUESTIONS = 20

def _preset_help() -> str:
    """``--preset``'s help: every preset's summary, the presets of build settings first."""
    from ..registry import describe
    from ..presets import PRESETS
    entries = PRESETS.items()
    return "; ".join(f"{name}: {describe(entry)}" for name, entry in entries).replace("%", "%%")


def _build_arguments(p):
    p.add_argument("out", metavar="OUT", help="directory to write: new, empty, or (with --force) a saved space")
    from ..presets import PRESETS
    for _, preset in PRESETS.items():  # a preset's own options (e.g. ConceptWorld's --definitions)
        if preset.add_arguments is not None:
            preset.add_arguments(p)
    p.add_argument("--preset", choices=LazyChoices(PRESETS.names), metavar="NAME", default=None,
                   help=LazyHelp(_preset_help))
    p.add_argument("--samples", type=whole(1), help="programs to sample from the grammar (default: the preset's)")
    p.add_argument("--programs", metavar="FILE",
                   help="build from the programs in FILE (one per line; CURI's released strings accepted) "
                        "instead of sampling")
    p.add_argument("--templates", metavar="FILE.toml",
                   help="build from the questions of your own CLEVR-like template file (the format of the packaged "
                        "hypotheses/closure/clevr_templates.toml: nodes and constraints = [\"OUT_NEQ 1 3\", "
                        "\"NULL <C2>\"]), each question's constraints its domain, instead of sampling; the file is "
                        "checked whole before any work; default grammar clevr.pcfg, default --scenes the clevr "
                        "preset's")
    p.add_argument("--per-template", type=whole(1), metavar="N",
                   help=f"with --templates: questions drawn from each template (default {TEMPLATE_QUESTIONS}; seed "
                        "--seed)")
    p.add_argument("--no-rejection", action="store_true",
                   help="with --programs or --templates: keep programs the grammar's rejection rules would drop")
    p.add_argument("--scenes", type=whole(1), help="scenes in the sampled scene bank (default: the preset's)")
    p.add_argument("--scene-sampler", choices=["clevr", "uniform"],
                   help="how scenes are sampled (default clevr: CLEVR's ground plane and camera)")
    p.add_argument("--scenes-from", nargs="+", metavar="FILE", help="JSON Lines (.jsonl) or CLEVR (.json) scene files")
    p.add_argument("--max-depth", type=whole(1), help="maximum derivation depth (default: the grammar's)")
    p.add_argument("--seed", type=whole(0), help="master seed of the build (a whole number >= 0; default 0)")
    p.add_argument("--force", action="store_true",
                   help="replace OUT if it is a saved space (a directory holding anything else is never deleted)")
    p.add_argument("--quiet", action="store_true", help="no progress bars and no stage lines (errors and the final summary only)")
    scheduler_option(p, "the executor's scene chunks")


@command("space build", order=10, arguments=_build_arguments, compiles=True,
         help="build a hypothesis space into directory OUT")
def cmd_space_build(args) -> int:
    from ..spaces.hypothesis_space import HypothesisSpace
    from ..engine.store import check_save_target
    from ..presets import PRESETS, preset_params
    check_save_target(args.out, args.force)  # before the build: never delete what the toolkit did not write
    entry = PRESETS.get(args.preset) if args.preset is not None else None
    given = [o for o, v in (("--templates", args.templates), ("--per-template", args.per_template)) if v is not None]
    if given and entry is not None and (entry.cli_build is not None or entry.make is not None):
        raise BayesConceptsError(f"--preset {args.preset} builds its own space: {' and '.join(given)} "
                                 f"do{'es' if len(given) == 1 else ''} not apply")
    if entry is not None and entry.cli_build is not None:  # a preset that reads the options its own way
        return entry.cli_build(args)
    for name, other in PRESETS.items():  # a preset's own options go with it only
        for option, dest, what in other.options:
            if getattr(args, dest) is not None and name != args.preset:
                raise BayesConceptsError(f"{option} is {what}: it goes with --preset {name}")
    if entry is not None and entry.make is not None:  # a preset that builds its space its own way
        return _build_made(args, entry)
    from ..scale import parse_scheduler
    parse_scheduler(args.scheduler)
    questions = _template_questions(args)  # (programs, templates that give none) or None
    if args.programs:
        if args.samples is not None or args.max_depth is not None:
            raise BayesConceptsError("--programs takes the programs from the file: --samples and --max-depth do "
                                     "not apply")
        if not Path(args.programs).is_file():
            raise BayesConceptsError(f"--programs {args.programs}: no such file")
    elif args.max_depth is not None:
        check_depth_option(grammar_of(args), args.max_depth)
    for f in args.scenes_from or ():
        if not Path(f).is_file():
            raise BayesConceptsError(f"--scenes-from {f}: no such file")
    _check_build_memory(args)
    t = time.perf_counter()
    log = None if args.quiet else log_line  # --quiet: neither stage lines nor progress bars
    with nothing_written(args.out), (contextlib.nullcontext() if args.quiet else progress_output()):
        if args.programs or questions:
            preset = preset_params(args.preset or ("clevr" if questions else None))
            space = HypothesisSpace.from_programs(
                questions[0] if questions else args.programs, grammar=grammar_path(args.grammar),
                source=f"{args.templates} (its templates' questions, in order)" if questions else None,
                scenes=args.scenes or preset.get("scenes"),
                scene_sampler=args.scene_sampler, scenes_from=args.scenes_from, seed=args.seed,
                reject=not args.no_rejection, progress=not args.quiet, log=log, scheduler=args.scheduler)
        else:
            space = HypothesisSpace.build(args.preset, grammar=grammar_path(args.grammar), samples=args.samples,
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
    if questions:
        programs, silent = questions
        print(f"templates {args.templates}: {len(programs):,} concepts from the questions of its templates "
              f"({args.per_template or TEMPLATE_QUESTIONS} per template, seed {args.seed or 0})")
        if silent:
            print(f"no question: {len(silent)} template{'s' * (len(silent) != 1)} give{'s' * (len(silent) == 1)} none: "
                  + "; ".join(f"{name} ({why})" for name, why in silent.items()))
    print("stage                      survivors")
    for key, label in _stage_rows(st):
        print(f"{label:<26} {st[key]:>10,}")
    if st.get("empty_domain"):  # a constraint or a unique referent that holds on no scene of the bank
        print(f"dropped: {st['empty_domain']:,} concepts defined on no scene of the bank (a domain constraint or a "
              "unique referent that never holds)")
    return 0


def _from_sets_arguments(p):
    p.add_argument("sets", metavar="FILE",
                   help="the concepts and their items: JSON Lines ({\"concept\": NAME, \"items\": [ID, ...]} per "
                        "line) or CSV/TSV with a header (concept,item: a row per membership; or concept,items: a row "
                        "per concept, ids separated by spaces or ;)")
    p.add_argument("out", metavar="OUT", help="directory to write the space to")
    p.add_argument("--items", metavar="FILE", default=None,
                   help="the items, in order: JSON Lines or CSV/TSV with an item key or column, further keys or "
                        "columns as the items' labels (the learners' schema features); an id the sets file names "
                        "that this file does not list is refused (default: the ids the sets file names, labelled "
                        "by their names)")
    p.add_argument("--split", nargs="+", metavar="SPEC.toml", default=(),
                   help="split spec files to save with the space (each must make a split of it; names as in "
                        "a spec's name or the file name)")
    p.add_argument("--min-count", type=whole(1), default=1, metavar="N",
                   help="concepts with fewer items are left out and counted (default 1)")
    p.add_argument("--test-positives", type=whole(1), default=3, metavar="N",
                   help="positives per concept in the test bank (default 3, as CURI's)")
    p.add_argument("--seed", type=whole(0), default=0, help="seed of the test bank (a whole number >= 0; default 0)")
    p.add_argument("--force", action="store_true", help="replace OUT if it is a saved space")


@command("space from-sets", order=25, arguments=_from_sets_arguments,
         help="a space of concepts given as item sets (JSON Lines or CSV) into OUT")
def cmd_space_from_sets(args) -> int:
    from ..engine.store import check_save_target
    from ..spaces.sets_file import read_sets
    from ..splits import make_split
    from ..text_files import read_text
    check_save_target(args.out, args.force)
    t = time.perf_counter()
    sets = read_sets(args.sets, items=args.items)
    specs = {}
    for f in args.split:
        if not Path(f).is_file():
            raise BayesConceptsError(f"--split {f}: no such file")
        name = Path(f).name if Path(f).suffix == ".toml" else Path(f).name + ".toml"
        if name in specs:
            raise BayesConceptsError(f"--split {f}: a spec file named {name} is given twice")
        specs[name] = read_text(f, what="split spec")
    space = sets.space(min_count=args.min_count, test_positives=args.test_positives, seed=args.seed,
                       spec_files=specs)
    splits = {name: make_split(space, path) for name, path in zip(specs, args.split)}  # each must make a split
    with nothing_written(args.out):
        space.save(args.out, overwrite=args.force)
    print(f"built {args.out} in {time.perf_counter() - t:.1f} s: {space.n_concepts:,} concepts over "
          f"{space.n_scenes:,} items; {space.n_synonym_classes:,} synonym classes; test bank "
          f"{space.test_bank.n_scenes:,} items")
    for line in sets.exclusion_lines():
        print(line)
    for fname, split in splits.items():
        sz = split.sizes()
        print(f"split {split.name}: train {sz['train']:,}, val {sz['val']:,}, test {sz['test']:,} concepts "
              f"({Path(args.out) / 'splits' / fname})")
    print(f"next: bayes-concepts audit {args.out}")
    return 0


def _build_made(args, entry) -> int:
    """``space build OUT --preset NAME`` of a preset that makes its space itself
    (``entry.make(seed=...)``): the sampling options do not apply."""
    given = [opt for opt, v in (("--samples", args.samples), ("--programs", args.programs), ("--scenes", args.scenes),
                                ("--scene-sampler", args.scene_sampler), ("--scenes-from", args.scenes_from),
                                ("--max-depth", args.max_depth), ("--no-rejection", args.no_rejection or None),
                                ("--scheduler", args.scheduler), ("--grammar", getattr(args, "grammar", None)))
             if v is not None]
    if given:
        raise BayesConceptsError(f"--preset {args.preset} builds its own space: {', '.join(given)} "
                                 f"do{'es' if len(given) == 1 else ''} not apply")
    t = time.perf_counter()
    with nothing_written(args.out):
        space = entry.make(seed=args.seed or 0)
    space.save(args.out, overwrite=args.force)
    print(f"built {args.out} in {time.perf_counter() - t:.1f} s: {space.n_concepts:,} concepts (preset {args.preset})")
    return 0


def _template_questions(args):
    """``(programs, {template: why it gives none})`` of ``--templates FILE`` (None without it),
    read and checked whole before any work; the grammar defaults to the packaged clevr.pcfg
    (the templates' language).  Options that do not go with it are one-line errors."""
    if args.templates is None:
        if args.per_template is not None:
            raise BayesConceptsError("--per-template goes with --templates FILE")
        return None
    for option, value in (("--programs", args.programs), ("--samples", args.samples), ("--max-depth", args.max_depth)):
        if value is not None:
            raise BayesConceptsError(f"--templates takes the programs from the template file's questions: {option} "
                                     "does not apply")
    if not Path(args.templates).is_file():
        raise BayesConceptsError(f"--templates {args.templates}: no such file")
    from ..suites.closure import template_file_concepts
    from ..resources import data_file
    programs, silent = template_file_concepts(args.templates, args.per_template or TEMPLATE_QUESTIONS, args.seed or 0)
    if not programs:
        raise BayesConceptsError(f"--templates {args.templates}: no template gives a question ("
                                 + "; ".join(f"{name}: {why}" for name, why in silent.items())
                                 + f"): nothing written to {args.out}")
    if getattr(args, "grammar", None) is None:
        args.grammar = str(data_file("clevr.pcfg"))
    return programs, silent


#: the build's own stages, in order, with their labels in the stage table
_STAGES = [("sampled", "sampled"), ("given", "given programs"), ("unique", "unique"),
           ("after_rejection", "rejection rules"), ("after_firing_filter", "firing filter"),
           ("after_collapse_dedupe", "collapse + dedupe"), ("synonym_classes", "synonym classes"),
           ("test_bank", "test-bank scenes")]


def _stage_rows(stages: dict) -> list:
    """``[(key, label), ...]`` of the stage table: the build's own stages in order, and every
    other stage the build recorded (concepts a benchmark's programs added: CLOSURE's families,
    CLEVR's templates; question domains) after the rejection rules, labelled by its name."""
    own = [k for k, _ in _STAGES]
    rows = []
    for key, label in _STAGES:
        if key in stages:
            rows.append((key, label))
        if key == "after_rejection":
            rows += [(k, k.replace("_", " ")) for k in stages if k not in own]
    return rows


#: Bytes a sampled program holds at least while a build runs (its tokens, parse and dedup
#: entries), besides its signature over the scene bank (one bit per scene).
_BUILD_PROGRAM_BYTES = 200


def _check_build_memory(args):
    """Refuse, before any work, a ``space build`` whose scene bank (``--scenes``) or sampled
    programs and their signatures (``--samples``) cannot fit in the memory available: one
    line naming the option, as ``gap --episodes`` is refused."""
    from ..scale import check_memory, scene_bank_bytes
    from ..presets import preset_params
    preset = preset_params(args.preset or "paper")
    scenes = int(args.scenes or preset.get("scenes") or 0)
    if args.grammar:
        schema = grammar_of(args).schema
    elif preset.get("grammar_file"):
        from ..lot import load_grammar
        from ..resources import data_file
        schema = load_grammar(data_file(preset["grammar_file"])).schema
    else:
        schema = grammar_of(args).schema
    bank = scene_bank_bytes(scenes, schema.max_objects, schema.n_attributes, schema.n_relations)
    if args.scenes:
        check_memory(bank, f"--scenes {args.scenes:,}", "give fewer scenes",
                     f"a bank of {args.scenes:,} scenes of up to {schema.max_objects} objects")
    samples = 0 if args.programs else int(args.samples or preset.get("samples") or 0)
    if args.samples and not args.programs:
        check_memory(bank + samples * (_BUILD_PROGRAM_BYTES + (scenes + 7) // 8), f"--samples {args.samples:,}",
                     "sample fewer programs (or use fewer scenes)",
                     f"{samples:,} programs and their signatures over {scenes:,} scenes")


def _histogram(values, edges):
    import numpy as np
    counts, _ = np.histogram(values, bins=edges)
    return counts


def _info_arguments(p):
    p.add_argument("dir", metavar="DIR", help="a saved hypothesis space")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--no-verify", action="store_true", help="skip the file checksum check (and say so)")


@command("space info", order=30, arguments=_info_arguments,
         help="summarise a space: counts, histograms, manifest sha256")
def cmd_space_info(args) -> int:
    import numpy as np
    from ..spaces import load_space
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
        print_json(info)
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


def _show_arguments(p):
    p.add_argument("dir", metavar="DIR", help="a saved hypothesis space")
    p.add_argument("concept", nargs="+", metavar="ID|PROGRAM", help="a concept id, or a program (quoted or as tokens)")
    p.add_argument("--max-synonyms", type=whole(0), default=20, help="synonyms to list (default 20)")
    p.add_argument("--no-verify", action="store_true", help="skip the file checksum check (and say so)")


@command("space show", order=40, arguments=_show_arguments, help="show one concept by id or program")
def cmd_space_show(args) -> int:
    from ..spaces.concept_space import load_space
    from ..spaces.hypothesis_space import HypothesisSpace
    from ..lot import Program
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
        from ..splits import find_alpha_equivalent
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
    n_dom = space.domain_count(i)
    print(f"domain      {n_dom:,} of {space.n_scenes:,} scenes ({n_dom / space.n_scenes:.3%}): {p.domain_text}"
          + (f"; negatives come from the {n_dom - space.count(i):,} scenes of the domain outside the extension"
             if n_dom < space.n_scenes else ""))
    from ..synonyms import unprovable_operators
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
    from ..synonyms import unprovable_tokens
    tokens = unprovable_tokens(space.grammar) if space.has_grammar else {}
    if not tokens:
        return 0, []
    n, used = 0, {}
    for text in space.programs:
        hit = [tokens[t] for t in text.split() if t in tokens]
        n += bool(hit)
        used.update(dict.fromkeys(hit))
    return n, list(used)


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
