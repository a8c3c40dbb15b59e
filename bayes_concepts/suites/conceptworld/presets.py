"""ConceptWorld's preset ``conceptworld``: every concept of its definitions file up to a depth, over
grid scenes generated from them (``bc.build_space("conceptworld")``, ``space build --preset
conceptworld``)."""
from __future__ import annotations

import time
from pathlib import Path

from ...errors import BayesConceptsError
from ...presets import PRESETS, Preset
from ...terminal import log_line, nothing_written


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
    from .definitions import load_definitions
    from .space import DEFAULTS, conceptworld_space
    t = time.perf_counter()
    per = args.scenes or DEFAULTS["per_concept"]
    if args.definitions is not None and not Path(args.definitions).is_file():
        raise BayesConceptsError(f"--definitions {args.definitions}: no such file")
    defs = load_definitions(args.definitions)  # the whole file checked (names, arity, cycles) before any work
    if args.scenes:  # refused before any work when the grids cannot fit (32 x 32 bytes each, and their bits)
        from ...scale import check_memory
        n_concepts = len(defs.instances(args.max_depth or DEFAULTS["depth"]))
        n_scenes = n_concepts * (per + min(DEFAULTS["broken_per_concept"], per)) + DEFAULTS["noise_scenes"]
        check_memory(n_scenes * (2 * defs.size * defs.size + n_concepts), f"--scenes {args.scenes:,}",
                     "give fewer scenes per concept", f"{n_scenes:,} grid scenes of {defs.size} x {defs.size} "
                     f"points for {n_concepts} concepts")
    with nothing_written(args.out):
        space = conceptworld_space(depth=args.max_depth or DEFAULTS["depth"], per_concept=per,
                                   broken_per_concept=min(DEFAULTS["broken_per_concept"], per),
                                   seed=args.seed or 0, definitions=args.definitions, log=None if args.quiet else log_line)
    space.save(args.out, overwrite=args.force)
    print(f"built {args.out} in {time.perf_counter() - t:.1f} s: {space.n_concepts} ConceptWorld concepts up to depth "
          f"{space.params['depth']} over {space.n_scenes:,} grid scenes ({per} per concept, distractors with one point "
          f"removed, noise scenes); {space.n_synonym_classes} synonym classes")
    print(f"next: bayes-concepts gap {args.out} --protocol conceptworld-productivity (or -boxworld, -scaling, "
          "-substitution)")
    return 0


def _definitions_argument(p):
    p.add_argument("--definitions", metavar="FILE.toml", default=None,
                   help="with --preset conceptworld: your own ConceptWorld definitions file (the packaged "
                        "hypotheses/conceptworld/concepts.toml's format), checked whole before the build")


def _make(seed: int = 0, depth: int | None = None, per_concept: int | None = None, definitions=None, log=None):
    """The ConceptWorld space from Python (the defaults of ``space build --preset conceptworld``)."""
    from .space import DEFAULTS, conceptworld_space
    per = per_concept or DEFAULTS["per_concept"]
    return conceptworld_space(depth=depth or DEFAULTS["depth"], per_concept=per,
                              broken_per_concept=min(DEFAULTS["broken_per_concept"], per), seed=seed,
                              definitions=definitions, log=log)


PRESETS.register("conceptworld", Preset(
    summary="every concept of ConceptWorld's definitions file (hypotheses/conceptworld/concepts.toml) up to "
            "--max-depth (default 7) over grid scenes generated from them (--scenes per concept, default 40), for "
            "the protocols conceptworld-productivity, -boxworld, -scaling and -substitution",
    make=_make, cli_build=_space_build_conceptworld, add_arguments=_definitions_argument,
    options=(("--definitions", "definitions", "ConceptWorld's definitions file"),)))
