"""ConceptWorld as a concept space, and its four experiments as splits.

:func:`conceptworld_space` builds an :class:`~bayes_concepts.spaces.extension_space.ExtensionSpace`
whose concepts are every concept of the definitions file, families instantiated up to a
stated ``depth`` (sequences of up to ``depth`` squares; Box-World paths up to the file's
limit), and whose items are grid scenes: ``per_concept`` scenes generated from each
concept, ``broken_per_concept`` of them with one of the concept's points removed
(distractors), and ``noise_scenes`` scenes of scattered points.  Every concept's extension
is computed on the whole bank by the fast executor, so a scene counts for every concept
it satisfies, not only the one it was drawn from.

Concept descriptions are ``"name"`` or ``"name n"`` (``"red_seq 3"``; tokens of roles
``concept`` and ``n``); description length l(h) = 1 + the concept's composition depth (n
for a family; the number of related objects otherwise).  Item names are ``"j:"`` and the
scene's points (:func:`~bayes_concepts.scenes.grid.encode_grid`); :meth:`ExtensionSpace.grids <bayes_concepts.spaces.extension_space.ExtensionSpace.grids>`
reads the grids back.

Atoms and compounds (the divergence measures, and the compound and atom oracles of the
gap in parts and the ladder) come from the definitions file, not from the description:
a concept's atoms are the leaf definitions of its instantiated definition graph (point
relations and colour predicates that use no other definition), its compounds the graph's
edges, parent definition -> the definition it uses, with the file's slot where there is
one (:meth:`~bayes_concepts.conceptworld.definitions.Definitions.graph`), both counted
with multiplicity.  The build records them in ``params["structure"]``
(:func:`definition_structure`), so a saved space keeps them.  A family instance's graph
repeats its edges once per element: ``red_seq 7`` has no edge type ``red_seq 2`` lacks,
so in the productivity experiment the compound oracle knows every longer chain of a
family it saw with two elements (the recombiner's reading: seen parts in seen
arrangements, any number of times), and so do Box-World paths of any length.

:func:`experiment_splits` turns ``hypotheses/conceptworld/experiments.toml`` into one
split per test condition: train = the experiment's training concepts (the weak oracle's
H_train), test = the condition's concepts; the strong oracle knows every concept.
"""
from __future__ import annotations

import hashlib
import re
import time
import tomllib
from pathlib import Path

import numpy as np

from ...resources import data_file
from ...scenes.grid import encode_grid
from ...scenes.schema import GENERATOR_LABELS  # a ConceptWorld item's 'source' label
from ...spaces.extension_space import ExtensionSpace
from ...splits import Split
from .definitions import EXPERIMENTS_FILE, DefinitionsError, load_definitions
from .execute import evaluate_concepts
from .generate import break_scene, sample_scene

__all__ = ["GENERATOR_LABELS", "conceptworld_space", "definition_structure",
           "load_experiments", "experiment_splits", "condition_slug", "load_reported", "DEFAULTS"]


#: the build's defaults (``space build --preset conceptworld``)
DEFAULTS = {"depth": 7, "per_concept": 40, "broken_per_concept": 10, "noise_scenes": 200, "noise": (0, 3),
            "test_positives": 3, "seed": 0}


def conceptworld_space(depth: int = 7, per_concept: int = 40, broken_per_concept: int = 10, noise_scenes: int = 200,
                       noise=(0, 3), test_positives: int = 3, seed: int = 0, definitions=None,
                       log=None) -> ExtensionSpace:
    """The ConceptWorld space (module docstring).

    depth: families are instantiated for n up to ``depth``; per_concept: scenes drawn from
    each concept; broken_per_concept: of those, how many also appear with one point
    removed; noise_scenes: scenes of scattered points only; noise: (lo, hi) isolated noise
    points per generated scene; definitions: a definitions file (default the packaged one).
    """
    if not isinstance(depth, int) or depth < 1:
        raise DefinitionsError(f"depth: expected a whole number >= 1, got {depth!r}")
    t0 = time.perf_counter()
    defs = load_definitions(definitions)
    concepts = defs.instances(depth)
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), 24]))
    grids, sources = [], []
    for c in concepts:
        for k in range(int(per_concept)):
            g, m = sample_scene(defs, c, rng, tuple(noise))
            grids.append(g)
            sources.append(c.name)
            if k < int(broken_per_concept):
                grids.append(break_scene(g, m, rng))
                sources.append(f"broken {c.name}")
    N = defs.size
    for _ in range(int(noise_scenes)):
        g = np.full((N, N), -1, np.int8)
        cells = rng.choice(N * N, size=int(rng.integers(5, 60)), replace=False)
        g.flat[cells] = rng.choice(np.asarray(defs.scene_colors, np.int8), size=len(cells))
        grids.append(g)
        sources.append("noise")
    grids = np.stack(grids)
    t_gen = time.perf_counter() - t0
    member = evaluate_concepts(defs, concepts, grids)
    t_exec = time.perf_counter() - t0 - t_gen
    names = [c.name for c in concepts]
    parts = [(("concept", c.family),) + ((("n", str(c.n)),) if c.n is not None else ()) for c in concepts]
    lengths = np.array([1 + c.depth for c in concepts], np.int64)
    src = Path(defs.source)
    params = {"kind": "conceptworld", "depth": int(depth), "per_concept": int(per_concept),
              "broken_per_concept": int(broken_per_concept), "noise_scenes": int(noise_scenes),
              "noise": list(map(int, noise)), "grid_size": N, "colors": list(defs.colors),
              "definitions": {"file": src.name, "sha256": hashlib.sha256(src.read_bytes()).hexdigest()},
              "structure": definition_structure(defs, concepts)}
    space = ExtensionSpace.from_extensions(
        member, names, item_names=[f"{j}:{encode_grid(g)}" for j, g in enumerate(grids)],
        item_labels={"source": [s.split(" ")[0] if s != "noise" else "noise" for s in sources]},
        parts=parts, lengths=lengths, test_positives=test_positives, seed=seed, params=params)
    space.build_seconds.update({"generate": t_gen, "execute": t_exec, "total": time.perf_counter() - t0})
    if log:
        log(f"{len(concepts)} concepts, {len(grids):,} scenes: generated in {t_gen:.1f} s, executed in {t_exec:.1f} s")
    return space


def definition_structure(defs, concepts) -> dict:
    """``{concept name: {"atoms": {atom: count}, "compounds": {compound: count}}}``: the
    atoms (leaf definitions) and compounds (edges) of each concept's instantiated definition
    graph (:meth:`~bayes_concepts.conceptworld.definitions.Definitions.graph`), counted with
    multiplicity, keys sorted.  ``concepts``: :class:`ConceptDef` list or names.  A
    ConceptWorld space keeps it as ``params["structure"]``, which
    :meth:`~bayes_concepts.spaces.extension_space.ExtensionSpace.atoms_and_compounds` reads
    (the divergence measures and the compound and atom oracles)."""
    out = {}
    for c in concepts:
        c = defs.concept(c) if isinstance(c, str) else c
        atoms, compounds = defs.graph(c)
        out[c.name] = {"atoms": _counts(atoms), "compounds": _counts(compounds)}
    return out


def _counts(items) -> dict:
    counts = {}
    for it in items:
        counts[it] = counts.get(it, 0) + 1
    return dict(sorted(counts.items()))


# ========================================================================== experiments
def load_experiments(path=None) -> dict:
    """``{experiment: {"description", "train": [names], "conditions": {condition: [names]}}}``
    of ``hypotheses/conceptworld/experiments.toml`` (or ``path``)."""
    path = Path(path) if path is not None else data_file(*EXPERIMENTS_FILE.split("/"))
    raw = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    for name, e in raw.items():
        if not isinstance(e.get("train"), list) or not isinstance(e.get("conditions"), dict):
            raise DefinitionsError(f"{path} [{name}]: needs train = [...] and a [{name}.conditions] table")
    return raw


def condition_slug(condition: str) -> str:
    """A split name for a condition: ``"length 3"`` -> ``"length_3"``, ``"2x2 -> 4x4"`` ->
    ``"2x2_to_4x4"``."""
    return re.sub(r"[^A-Za-z0-9]+", "_", condition.replace("->", "to")).strip("_")


def experiment_splits(space, experiment: str, names=None, path=None) -> dict:
    """``{split name: Split}``: one split per test condition of ``experiment`` (train = its
    training concepts, test = the condition's, val empty), each carrying
    ``strong_concepts`` (every concept) and ``excluded`` (names the space lacks)."""
    exps = load_experiments(path)
    if experiment not in exps:
        raise DefinitionsError(f"no ConceptWorld experiment {experiment!r} (there are {', '.join(exps)})")
    e = exps[experiment]

    def ids(texts):
        found = [space.find(t) for t in texts]
        return (np.array(sorted({i for i in found if i is not None}), np.int64),
                [t for t, i in zip(texts, found) if i is None])

    train, missing_train = ids(e["train"])
    if not len(train):
        raise DefinitionsError(f"experiment {experiment}: none of its training concepts is in the space; build it "
                               "with space build --preset conceptworld")
    out, dropped = {}, {}
    depth = (space.params or {}).get("depth")
    for cond, texts in e["conditions"].items():
        slug = condition_slug(cond)
        if names is not None and list(names) != ["all"] and slug not in names:
            continue
        test, missing = ids(texts)
        if not len(test):
            dropped[cond] = (f"none of its concepts ({', '.join(missing[:3])}{', ...' if len(missing) > 3 else ''}) "
                             f"is in the space" + (f" (built with --max-depth {depth}; rebuild with a larger one)"
                                                   if depth else ""))
            continue
        test = np.setdiff1d(test, train)
        if not len(test):
            dropped[cond] = "every one of its concepts in the space is a training concept"
            continue
        split = Split(slug, train, np.zeros(0, np.int64), test,
                      {"kind": "conceptworld", "experiment": experiment, "condition": cond}, None,
                      f"ConceptWorld {experiment}, {cond}: {e.get('description', '')}", space.n_concepts)
        split.strong_concepts = np.arange(space.n_concepts, dtype=np.int64)
        split.excluded = {"train": missing_train, "test": missing}
        out[slug] = split
    for split in out.values():  # what the experiment lost on this space, for the command line's note
        split.dropped_conditions = dict(dropped)
    if names is not None and list(names) != ["all"]:
        unknown = [n for n in names if n not in out]
        if unknown:
            raise DefinitionsError(f"experiment {experiment} has no split {', '.join(map(repr, unknown))} here "
                                   f"(its splits: {', '.join(condition_slug(c) for c in e['conditions'])}; the space "
                                   "must hold the condition's concepts: build with a larger depth)")
    if not out:
        raise DefinitionsError(f"experiment {experiment}: no test concept is in the space (build with a larger depth)")
    return out


def load_reported(path=None) -> dict:
    """The seed's reported F1 scores (``hypotheses/conceptworld/reported.toml``):
    ``{experiment: {"source", "test_concepts", "models": {model: {concept: {condition: F1}}}}}``."""
    path = Path(path) if path is not None else data_file("conceptworld", "reported.toml")
    return tomllib.loads(Path(path).read_text(encoding="utf-8"))
