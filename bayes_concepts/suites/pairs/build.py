"""``space from-pairs``: a pair space built from a layout's files, saved with its split specs."""
from __future__ import annotations

import tomllib
from pathlib import Path

from ...splits import by_set, make_split, side_space
from ...episodes import drawable_fix
from ...report import FEW_DRAWABLE
from .layout import FIRST, PairsLayoutError, read_pairs_layout
from .layout import _s
from .space import (K_BY, _seen_test_note, by_set_spec, episode_worlds_spec, exclusion_lines, image_level_error,
                    pair_space, reference_limited_spec, set_count_line, set_counts, spec_to_toml, unseen_pairs_spec)


def build_pair_space(out, items, pairs_dir, primitives: bool = True, ks=(), seed: int = 0,
                     overwrite: bool = False, worlds=(), n_worlds: int | None = None, episodes=None,
                     items_per_pair: int | None = None, unlisted: str = "keep", k_by: str = "attribute",
                     image_level: bool = False) -> list:
    """``bayes-concepts space from-pairs``: read the layout, build the pair space with its
    ``unseen_pairs`` split spec (when it has unseen pairs), a ``seen_k<K>`` spec per ``ks`` and a
    ``worlds_np<N>`` spec (:func:`episode_worlds_spec`, at most ``n_worlds`` worlds) per ``worlds``,
    save it to ``out`` (atomically; the specs in ``out/splits/``).  ``episodes``: None (5+20 each)
    or an episode shape as a dict of its four fields
    (:meth:`bayes_concepts.episodes.EpisodeShape.as_dict`), written into every spec as its
    ``[episodes]`` table (the spec validates it).  ``items=None`` with ``items_per_pair=N``
    audits the pair lists alone (:func:`read_pairs_layout`).  ``k_by``: what ``ks`` limits the seen
    pairs of, ``"attribute"`` (``seen_k<K>``) or ``"object"`` (``seen_k<K>_obj``).
    Where the items have a set column, the summary counts each set's items of seen and unseen
    pairs.  ``image_level=True`` records each item's set in the space and saves, beside every
    split spec, its image-level twin ``<name>_by_set`` (:func:`~.space.by_set_spec`: the same
    concepts, ``items = "by-set"``: test episodes and the test bank from the test-set items,
    the size likelihood's counts there; :data:`~.space.IMAGE_LEVEL`); items without a set
    column are refused in one line before anything is written.  Returns the summary lines to
    print."""
    import time
    if k_by not in K_BY:
        raise PairsLayoutError(f"k_by must be one of {', '.join(K_BY)}, got {k_by!r}")
    shape = dict(episodes) if episodes is not None else {"positives": 5, "negatives": 20, "query_positives": 5,
                                                        "query_negatives": 20}
    if Path(out).exists() and not overwrite:
        raise FileExistsError(f"{out} already exists (pass --force to replace it)")
    t = time.perf_counter()
    layout = read_pairs_layout(items, pairs_dir, items_per_pair=items_per_pair, unlisted=unlisted)
    if image_level and image_level_error(layout):
        raise PairsLayoutError(image_level_error(layout))
    space = pair_space(layout, primitives=primitives, seed=seed, image_level=image_level)
    if not layout.unseen_pairs() and not ks and not worlds:
        raise PairsLayoutError(f"{pairs_dir}: no unseen pair (every test pair is a train pair, or there is none), so "
                               "no split: give --k K (K seen pairs per attribute, or per object with --k-by object) or --worlds NP (RLCL's episode "
                               "worlds)")
    specs = []
    for k in ks:
        specs.append(reference_limited_spec(space, k, seed, by=k_by))
    for n_p in worlds:
        specs.append(episode_worlds_spec(space, n_p, n_worlds, seed))
    if episodes is not None:  # the shape goes into every spec, the seen-vs-unseen one included
        if layout.unseen_pairs():
            specs.insert(0, unseen_pairs_spec(space, layout.pairs["train"]))
        specs = [{**s, "episodes": shape} for s in specs]
    if image_level:  # each split's image-level twin (unseen_pairs_by_set came with the space unless reshaped)
        specs += [by_set_spec(s) for s in specs]
    for spec in specs:
        space = space.with_spec_files({f"{spec['name']}.toml": spec_to_toml(spec)})
    splits = {}
    for fname, text in sorted(space.spec_files.items()):  # every spec must make a split before anything is saved
        splits[fname] = make_split(space, tomllib.loads(text))
    space.save(out, overwrite=overwrite)
    n_pairs = sum(1 for p in space.parts if len(p) == 2)
    n_val = len(layout.val_only_pairs())
    listed = [p for side in ("train", "val", "test") for p in layout.pairs[side]]
    n_attr, n_obj = len({a for a, _ in listed}), len({o for _, o in listed})  # the pair files', not the items
    lines = [f"built {out} in {time.perf_counter() - t:.1f} s: {space.n_concepts:,} concepts ({n_pairs:,} pairs"
             + (f", {space.n_concepts - n_pairs:,} attributes and objects alone" if primitives else "")
             + f") over {space.n_scenes:,} items"
             + (f" (synthetic: {items_per_pair} per listed pair; the real images' counts play no part)"
                if items is None else "") + f"; {space.n_synonym_classes:,} synonym classes",
             f"pair files: train {len(layout.pairs['train']):,}, val {len(layout.pairs['val']):,}, "
             f"test {len(layout.pairs['test']):,} pair{_s(len(layout.pairs['test']))}" + _seen_test_note(layout)
             + f" ({n_attr:,} attribute{_s(n_attr)}, {n_obj:,} object{_s(n_obj)} in the pair files); "
             + (f"{n_val:,} val pair{_s(n_val)} in no train or test list: not concepts (in neither oracle)"
                if n_val else "every val pair is a train or test pair" if layout.pairs["val"] else "the val list is empty")]
    lines += exclusion_lines(layout.exclusions())
    lines += exclusion_lines(layout.notes, prefix="note: ")
    if layout.sets is not None:
        lines.append(set_count_line(set_counts(layout), image_level))
    if not layout.unseen_pairs():
        lines.append("no unseen_pairs split: the layout has no unseen pair (every test pair is a train pair, or "
                     "there is none)")
    pos, qpos = shape["positives"], shape.get("query_positives", shape["positives"])
    for fname, split in splits.items():
        sz = split.sizes()
        bank = side_space(space, split, "test")  # a by-set split's test episodes: the test-set items
        small = [space.descriptions[i] for i in split.test if bank.counts[i] < pos + qpos]
        usable = sz["test"] - len(small)
        lines.append(f"split {split.name}: train {sz['train']:,}, val {sz['val']:,}, test {sz['test']:,} "
                     f"concept{_s(sz['test'])} ({Path(out) / 'splits' / fname}); "
                     + (f"test episodes from the {bank.n_scenes:,} test-set items ({space.n_scenes - bank.n_scenes:,} "
                        f"items of other sets left out of them); " if by_set(split) else "")
                     + f"{usable:,} test concept{_s(usable)} can be drawn for episodes"
                     + (f", {len(small):,} excluded ({', '.join(small[:FIRST])}"
                        + (", ..." if len(small) > FIRST else "") + f"): fewer than {pos + qpos} "
                        + ("test-set " if by_set(split) else "") + f"items ({pos} support "
                        f"+ {qpos} query positives): never an episode's concept, still a hypothesis of the oracles"
                        if small else "")
                     + (f". Split {split.name}: {'no' if not usable else f'only {usable:,}'} test concept"
                        f"{_s(usable) if usable else ''} drawable, so "
                        + ("gap, audit and ladder refuse it (no episode can be drawn)" if not usable
                           else "its gap rests on few concepts")
                        + ": " + drawable_fix(bank, [i for i in split.test if bank.counts[i] < pos + qpos],
                                              pos + qpos)
                        if small and usable < FEW_DRAWABLE else ""))
    lines.append(f"next: bayes-concepts audit {out} --report {Path(out).name}_audit.md")
    return lines
