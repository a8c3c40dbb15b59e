"""Shepard, Hovland & Jenkins' preset ``shj``: every concept over their 8 stimuli, enumerated
(``bc.build_space("shj")``, ``space build --preset shj``)."""
from __future__ import annotations

import time

from ...errors import BayesConceptsError
from ...options import grammar_path
from ...presets import PRESETS, Preset


def _space_build_shj(args) -> int:
    """``space build OUT --preset shj``: every concept over the 8 stimuli of a boolean grammar
    (``--grammar``, default hypotheses/shj.pcfg), enumerated, not sampled."""
    given = [opt for opt, v in (("--samples", args.samples), ("--programs", args.programs),
                                ("--scenes", args.scenes), ("--scene-sampler", args.scene_sampler),
                                ("--scenes-from", args.scenes_from), ("--max-depth", args.max_depth),
                                ("--no-rejection", args.no_rejection or None), ("--scheduler", args.scheduler),
                                *((option, getattr(args, dest)) for name, other in PRESETS.items()
                                  if name != "shj" for option, dest, _ in other.options))
             if v is not None]
    if given:
        raise BayesConceptsError(f"--preset shj enumerates every concept over the grammar's stimuli: "
                                 f"{', '.join(given)} do{'es' if len(given) == 1 else ''} not apply")
    from .boolean import boolean_space
    t = time.perf_counter()
    space = boolean_space(grammar_path(args.grammar) if args.grammar else "and_or_not", seed=args.seed or 0)
    space.save(args.out, overwrite=args.force)
    info = space.params["enumerated"]
    print(f"built {args.out} in {time.perf_counter() - t:.1f} s: {space.n_concepts} concepts (every non-trivial "
          f"concept over {space.n_scenes} stimuli of {info['language']}), description lengths "
          f"{int(space.lengths.min())}..{int(space.lengths.max())} tokens")
    return 0


def _make(seed: int = 0, language: str = "and_or_not"):
    """Every concept over the 8 stimuli of a boolean grammar (``language``: and_or_not, and_not,
    xor_iff, or a grammar file), from Python."""
    from .boolean import boolean_space
    return boolean_space(language, seed=seed)


PRESETS.register("shj", Preset(
    summary="every concept over the 8 stimuli of Shepard, Hovland & Jenkins' experiments (three binary "
            "dimensions), enumerated from a boolean grammar (the global --grammar, default hypotheses/shj.pcfg; "
            "also shj_and_not.pcfg, shj_xor_iff.pcfg) with its shortest description length and summed PCFG "
            "probability",
    make=_make, cli_build=_space_build_shj))
