"""Making splits of a space from specs or predicates, loading CURI's, and their statistics."""
from __future__ import annotations

import base64
import binascii
import dataclasses
import zlib
from pathlib import Path
from typing import Callable, Iterable

import numpy as np

from ..lot.grammar import curi_grammar

from .split import SIDES, Split, SplitSpecError, _NAME
from .spec import (SplitRuleError, _Where, _check_tokens, _is_int, _is_number, _read, _validate, default_splits_dir,
                   load_spec, split_rules)


# ==================================================================== making splits
def _held_out_mask(space, spec: dict, where: _Where) -> np.ndarray:
    h = spec["held_out"]
    mask = np.zeros(space.n_concepts, bool)
    for name, rule in split_rules.items():
        if name not in h:
            continue
        try:
            hit = np.asarray(rule.holds_out(space, h[name], h), bool)
        except SplitRuleError as exc:
            raise where.error(str(exc), ("held_out", name), exc.atom) from None
        if hit.shape != mask.shape:
            raise where.error(f"split rule {name!r} returned shape {hit.shape}, expected ({space.n_concepts},)",
                              ("held_out", name))
        mask |= hit
    return mask


def _expand_classes(space, mask: np.ndarray) -> np.ndarray:
    classes = np.asarray(space.synonym_classes)
    return np.isin(classes, np.unique(classes[mask]))


def _carve_val(space, held: np.ndarray, fraction: float, seed: int, by_class: bool) -> tuple:
    """Split sorted ids ``held`` into (val, test): ``fraction`` of them (seeded; whole synonym
    classes if ``by_class``) to val; test keeps at least one concept."""
    held = np.asarray(held, np.int64)
    if fraction <= 0 or len(held) < 2:
        return np.empty(0, np.int64), held
    target = min(int(round(fraction * len(held))), len(held) - 1)
    if target <= 0:
        return np.empty(0, np.int64), held
    rng = np.random.default_rng(seed)
    if not by_class:
        val = np.sort(held[rng.permutation(len(held))[:target]])
    else:
        classes = np.asarray(space.synonym_classes)[held]
        units = np.unique(classes)
        taken, total = [], 0
        for u in units[rng.permutation(len(units))]:
            if total >= target:
                break
            size = int((classes == u).sum())
            if total + size > len(held) - 1:
                continue
            taken.append(u)
            total += size
        val = held[np.isin(classes, taken)]
    return val, np.setdiff1d(held, val, assume_unique=True)


def _random_sides(space, fractions: dict, seed: int, by_class: bool) -> dict:
    n = space.n_concepts
    units = np.asarray(space.synonym_classes) if by_class else np.arange(n)
    labels, inverse, sizes = np.unique(units, return_inverse=True, return_counts=True)
    order = np.random.default_rng(seed).permutation(len(labels))
    cut_train = fractions["train"] * n
    cut_val = (fractions["train"] + fractions["val"]) * n
    side_of_unit = np.empty(len(labels), np.int8)
    done = 0.0
    for u in order:
        mid = done + sizes[u] / 2.0
        side_of_unit[u] = 0 if mid < cut_train else (1 if mid < cut_val else 2)
        done += sizes[u]
    side = side_of_unit[inverse.ravel()]
    return {s: np.flatnonzero(side == k) for k, s in enumerate(SIDES)}


def make_split(space, spec_or_path) -> Split:
    """The split of ``space`` that a spec (a file path, or a spec dict as :func:`load_spec`
    returns or as written in a file) describes."""
    if isinstance(spec_or_path, dict):
        label = f"<split spec {spec_or_path.get('name', '?')!r}>"
        where, source = _Where(label=label), None
        spec = _validate(spec_or_path, where)
    else:
        raw, where = _read(spec_or_path)
        source = str(spec_or_path)
        spec = _validate(raw, where, default_name=Path(spec_or_path).stem)
    _check_tokens(spec, space.grammar, where)
    n = space.n_concepts
    kind = spec["kind"]
    if kind == "all":
        everything = np.arange(n, dtype=np.int64)
        val, _ = _carve_val(space, everything, spec["val_fraction"], spec["val_seed"], False)
        sides = {"train": everything, "val": val, "test": everything}
    elif kind == "random":
        sides = _random_sides(space, spec["fractions"], spec["seed"], spec["synonym_aware"])
        for side in ("train", "test"):
            if not len(sides[side]):
                raise where.error(f"the random split leaves {side} empty ({n:,} concepts)", ("fractions",))
    else:
        mask = _held_out_mask(space, spec, where)
        if spec["synonym_aware"]:
            mask = _expand_classes(space, mask)
        if not mask.any():
            raise where.error(f"the [held_out] rules match no concept of the space ({n:,} concepts): "
                              "the held-out side would be empty", ("held_out",))
        if mask.all():
            raise where.error(f"the [held_out] rules match every concept of the space ({n:,}): "
                              "train would be empty", ("held_out",))
        if spec.get("val_programs"):  # val named: each must be a held-out concept of the space
            index = {p: i for i, p in enumerate(space.programs)}
            missing = [p for p in spec["val_programs"] if p not in index]
            if missing:
                raise where.error(f"val_programs names {missing[0]!r}, which is not a concept of the space",
                                  ("val_programs",))
            val = np.array(sorted({index[p] for p in spec["val_programs"]}), np.int64)
            if not mask[val].all():
                raise where.error(f"val_programs names {space.programs[int(val[~mask[val]][0])]!r}, which the "
                                  "[held_out] rules do not hold out (val concepts are held out)", ("val_programs",))
            test = np.setdiff1d(np.flatnonzero(mask), val)
            if not len(test):
                raise where.error("val_programs takes every held-out concept: test would be empty", ("val_programs",))
        else:
            val, test = _carve_val(space, np.flatnonzero(mask), spec["val_fraction"], spec["val_seed"],
                                   spec["synonym_aware"])
        sides = {"train": np.flatnonzero(~mask), "val": val, "test": test}
    if spec.get("items") == "by-set" and item_sets(space) is None:
        raise where.error("items = 'by-set' draws each side's episodes from the items of its own set, and this "
                          "space records no item's set: build the pair space from items with a set column, with "
                          "space from-pairs --image-level", ("items",))
    return Split(spec["name"], sides["train"], sides["val"], sides["test"], spec, source,
                 spec["description"], n)


# ============================================================ items by set (image-level splits)
#: the params key of a space that records each item's set (a pair space built with --image-level)
ITEM_SETS = "item_set_codes"


def encode_item_sets(sets) -> dict:
    """What a space's ``params[ITEM_SETS]`` holds for per-item set names ``sets`` (N strings):
    ``{"sets": [names, train, val, test first], "items": N, "codes": text}``, the codes one
    uint8 set index per item, zlib-compressed and base64-encoded (a few kB for 50,000 items;
    no pickle).  More than 255 distinct sets is a :class:`SplitSpecError`."""
    sets = [str(x) for x in sets]
    names = [s for s in SIDES if s in set(sets)] + sorted(set(sets) - set(SIDES))
    if len(names) > 255:
        raise SplitSpecError(f"the items name {len(names):,} sets; at most 255 can be recorded")
    index = {s: k for k, s in enumerate(names)}
    codes = np.fromiter((index[x] for x in sets), np.uint8, len(sets))
    return {"sets": names, "items": len(sets),
            "codes": base64.b64encode(zlib.compress(codes.tobytes(), 9)).decode("ascii")}


def item_sets(space):
    """``(names, codes)`` of a space that records each item's set (``params[ITEM_SETS]``):
    the set names and uint8 (N,) each item's index into them; None for any other space.  A
    record that does not decode to one code per item is a one-line :class:`SplitSpecError`."""
    rec = (space.params or {}).get(ITEM_SETS)
    if rec is None:
        return None
    try:
        names = [str(x) for x in rec["sets"]]
        codes = np.frombuffer(zlib.decompress(base64.b64decode(rec["codes"], validate=True)), np.uint8)
    except (KeyError, TypeError, ValueError, zlib.error, binascii.Error):
        raise SplitSpecError(f"params[{ITEM_SETS!r}] of the space is damaged (not the item sets a build "
                             "recorded); rebuild the space") from None
    if len(codes) != space.n_scenes or (len(codes) and int(codes.max()) >= len(names)):
        raise SplitSpecError(f"params[{ITEM_SETS!r}] records {len(codes):,} items' sets for a space of "
                             f"{space.n_scenes:,} items; rebuild the space")
    return names, codes


def by_set(split) -> bool:
    """Whether ``split`` draws each side's episodes from the items of its own set (its spec's
    ``items = "by-set"``: an image-level split)."""
    return (getattr(split, "spec", None) or {}).get("items") == "by-set"


def side_items(space, split, side: str = "test") -> np.ndarray | None:
    """int64: the item ids (of ``space``) that ``side``'s episodes of ``split`` are drawn from
    -- the items of the set named ``side`` for a by-set split (:func:`by_set`) --, or None
    (every item: any other split).  No such item is a one-line :class:`SplitSpecError`."""
    if not by_set(split):
        return None
    recorded = item_sets(space)
    if recorded is None:
        raise SplitSpecError(f"split {split.name!r} draws its episodes by set (items = 'by-set') and this space "
                             "records no item's set: build it with space from-pairs --image-level")
    names, codes = recorded
    base = side.split("+")[0]
    if base not in names or not (codes == names.index(base)).any():
        raise SplitSpecError(f"split {split.name!r} draws its {side} episodes from the {base}-set items (items = "
                             f"'by-set'), and the space has none (its sets: {', '.join(names)})")
    return np.flatnonzero(codes == names.index(base)).astype(np.int64)


def side_space(space, split, side: str = "test"):
    """The space ``side``'s episodes of ``split`` are drawn and scored on: ``space`` itself,
    or for a by-set split (:func:`by_set`) the same concepts (same ids, descriptions, lengths
    and priors) over the items of the set named ``side`` only -- their extensions, counts
    |ext h| (the size likelihood's), synonym classes and a test bank drawn there (as the
    space's own: ``test_positives`` positives per concept, its seed) -- so support, queries
    and the test bank all come from that set.  Concepts with no item there keep count 0 (never
    drawn, never consistent with a positive).  Kept in the space's index, one per set.
    ``params["item_subset"]`` records the set, its items and the items left out."""
    items = side_items(space, split, side)
    if items is None:
        return space
    base = side.split("+")[0]
    return space.index.derived(f"items_of_set:{base}", lambda: _subspace(space, items, base))


def _subspace(space, items: np.ndarray, name: str):
    from ..bits import gather_bits
    from ..engine.test_bank import draw_test_bank
    from ..spaces.build import synonym_classes
    from ..spaces.extension_space import ExtensionSpace
    if not isinstance(space, ExtensionSpace):
        raise SplitSpecError(f"items by set need a space of items (a pair space), not a {space.kind} space")
    params = dict(space.params or {})
    signatures = gather_bits(np.asarray(space.signatures), items)
    counts = np.bitwise_count(signatures).sum(axis=1, dtype=np.int64)
    test_bank = draw_test_bank(signatures, counts, int(params.get("test_positives", 3)), int(params.get("seed", 0)))
    params["item_subset"] = {"set": name, "items": int(len(items)), "of": int(space.n_scenes),
                             "left_out": int(space.n_scenes - len(items))}
    names = space.item_names
    return dataclasses.replace(
        space, signatures=signatures, counts=counts, synonym_classes=synonym_classes(signatures),
        scene_codes=np.ascontiguousarray(np.asarray(space.scene_codes)[items]),
        item_names=[names[int(j)] for j in items], test_bank=test_bank, params=params,
        stages={**space.stages, "items_of_set": int(len(items)), "test_bank": test_bank.n_scenes}, path=None,
        build_seconds={})


def split_from_predicate(space, name: str, predicate: Callable, *, val_fraction: float = 0.1,
                         val_seed: int = 0, synonym_aware: bool = False, description: str = "") -> Split:
    """A held-out split given by ``predicate(program: Program) -> bool`` (True: held out).

    The held-out concepts (whole synonym classes when ``synonym_aware``) are divided into val
    (``val_fraction`` of them, seeded by ``val_seed``) and test, as for spec files.
    """
    label = f"split {name!r}"
    if not isinstance(name, str) or not _NAME.match(name):
        raise SplitSpecError(f"{label}: name must be letters, digits, '_', '.' or '-'")
    if not _is_number(val_fraction) or not 0 <= val_fraction < 1:
        raise SplitSpecError(f"{label}: val_fraction must be a number in [0, 1), got {val_fraction!r}")
    if not _is_int(val_seed) or val_seed < 0:
        raise SplitSpecError(f"{label}: val_seed must be an integer >= 0, got {val_seed!r}")
    n = space.n_concepts
    mask = np.fromiter((bool(predicate(space.program(i))) for i in range(n)), bool, n)
    if synonym_aware:
        mask = _expand_classes(space, mask)
    if not mask.any():
        raise SplitSpecError(f"{label}: the predicate holds out no concept of the space ({n:,} concepts)")
    if mask.all():
        raise SplitSpecError(f"{label}: the predicate holds out every concept of the space ({n:,}): "
                             "train would be empty")
    val, test = _carve_val(space, np.flatnonzero(mask), float(val_fraction), int(val_seed), bool(synonym_aware))
    spec = {"name": name, "description": description, "kind": "predicate",
            "predicate": getattr(predicate, "__qualname__", repr(predicate)),
            "synonym_aware": bool(synonym_aware), "val_fraction": float(val_fraction), "val_seed": int(val_seed)}
    return Split(name, np.flatnonzero(~mask), val, test, spec, None, description, n)


def make_splits(space, specs: Iterable) -> dict:
    """``{name: Split}`` for spec files / dicts, in the given order; two specs with the same
    name are an error."""
    out, origin = {}, {}
    for s in specs:
        split = make_split(space, s)
        if split.name in out:
            where = _Where(split.source, Path(split.source).read_text(encoding="utf-8")) if split.source \
                else _Where(label=f"<split spec {split.name!r}>")
            raise where.error(f"split name {split.name!r} is already used by {origin[split.name]}", ("name",))
        out[split.name] = split
        origin[split.name] = split.source or "a spec given earlier"
    return out


def spec_files(directory=None) -> list:
    """The ``*.toml`` spec files of ``directory`` (default :func:`default_splits_dir`), sorted by name."""
    d = Path(directory) if directory is not None else default_splits_dir()
    if not d.is_dir():
        raise SplitSpecError(f"{d}: not a directory of split specs")
    return sorted(d.glob("*.toml"))


def curi_splits(space, directory=None) -> dict:
    """Every split declared in ``hypotheses/splits/*.toml`` (CURI's nine), as ``{name: Split}``.

    CURI's specs name CURI's tokens: on a space built from another grammar a spec naming a
    token that grammar lacks is an error naming the file and line (use :func:`load_splits`,
    which offers CURI's splits only for CURI-grammar spaces)."""
    files = spec_files(directory)
    if not files:
        raise SplitSpecError(f"{directory or default_splits_dir()}: no split spec files (*.toml)")
    return make_splits(space, files)


def is_curi_grammar(grammar) -> bool:
    """Whether ``grammar`` has CURI's vocabulary (tokens and their kinds), so CURI's split specs apply."""
    return grammar.token_kinds == curi_grammar().token_kinds


def domain_independent_specs() -> dict:
    """``{name: path}`` of the built-in specs that name no token (kinds ``all`` and ``random``:
    Instance IID and Concept IID), which apply to a space of any grammar."""
    found = {}
    for path in spec_files():
        raw, _ = _read(path)
        if raw.get("kind") in ("all", "random"):
            found[str(raw.get("name", path.stem))] = path
    return found


def load_splits(space, names=None, specs=()) -> dict:
    """The splits called ``names`` (default: every available one), as ``{name: Split}``.

    Available: the split spec files ``specs`` (paths or dicts), and CURI's nine built-in
    specs when the space's grammar is CURI's.  Whatever the grammar, the built-in splits
    that name no token (``concept_iid``, ``instance_iid``: :func:`domain_independent_specs`)
    can be asked for by name; "every available one" of a space of another grammar is its own
    specs only.  Only the specs asked for are read and made, so ``names=["counting"]``
    never touches the other eight.  A spec that names its split like a built-in split is an
    error (rename it), as are two specs with one name and an unknown name (the message
    lists the known ones).
    """
    own = {}
    for s in specs or ():
        spec = s if isinstance(s, dict) else load_spec(s)
        name = spec.get("name")
        label = s if not isinstance(s, dict) else f"<split spec {name!r}>"
        if name in own:
            raise SplitSpecError(f"{label}: split name {name!r} is already used by {own[name][1]}")
        own[name] = (s, label)
    curi = is_curi_grammar(space.grammar)
    builtin = {p.stem: p for p in spec_files()} if curi else domain_independent_specs()
    for name, (_, label) in own.items():
        if name in builtin:
            raise SplitSpecError(f"{label}: split name {name!r} is the name of a built-in split "
                                 f"({builtin[name]}); give your split another name")
    everything = (list(builtin) if curi else []) + list(own)
    wanted = everything if names is None or list(names) == ["all"] else list(names)
    unknown = [n for n in wanted if n not in own and n not in builtin]
    if unknown:
        known = list(builtin) + list(own)
        raise SplitSpecError(f"unknown split {', '.join(map(repr, unknown))} (known: {', '.join(known) or 'none'}"
                             + ("" if curi else "; CURI's other splits name CURI's tokens and apply only to "
                                                "CURI-grammar spaces: pass --spec")
                             + ")")
    return {n: make_split(space, own[n][0] if n in own else builtin[n]) for n in dict.fromkeys(wanted)}


# ========================================================================= statistics
def _as_list(splits) -> list:
    return list(splits.values()) if isinstance(splits, dict) else list(splits)


def _leakage(space, split: Split) -> int:
    classes = np.asarray(space.synonym_classes)
    held = split.ids("held_out")
    return int(np.isin(classes[held], classes[split.train]).sum())


def split_stats(space, split: Split) -> dict:
    """Sizes, leakage and lengths of a split.

    leakage: held-out (val or test) concepts whose synonym class has a train member (a concept
    in train itself counts, so for Instance IID every test concept leaks).
    overlap: held-out concepts that are themselves train concepts.
    synonym_classes / mean_length / length_histogram: per side (histogram: {length: concepts}).
    """
    if split.n_concepts != space.n_concepts:
        raise ValueError(f"split {split.name!r} was made for {split.n_concepts:,} concepts, "
                         f"the space has {space.n_concepts:,}")
    classes = np.asarray(space.synonym_classes)
    lengths = np.asarray(space.lengths)
    held = split.ids("held_out")
    out = {"name": split.name, "n_concepts": int(space.n_concepts)}
    out.update(split.sizes())
    out["leakage"] = _leakage(space, split)
    out["overlap"] = int(len(np.intersect1d(split.train, held, assume_unique=True)))
    out["synonym_classes"] = {s: int(len(np.unique(classes[split.ids(s)]))) for s in SIDES}
    out["mean_length"] = {s: (float(lengths[split.ids(s)].mean()) if len(split.ids(s)) else None) for s in SIDES}
    hist = {}
    for s in SIDES:
        ls, cs = np.unique(lengths[split.ids(s)], return_counts=True)
        hist[s] = {int(a): int(b) for a, b in zip(ls, cs)}
    out["length_histogram"] = hist
    return out


def splits_table(space, splits) -> str:
    """A plain-text table: name, train/val/test sizes, leakage, mean length per side, and where
    any split draws its episodes by set (:func:`by_set`), the items its test episodes come from."""
    head = ["split", "train", "val", "test", "leakage", "mean l train", "val", "test"]
    listed = _as_list(splits)
    with_items = any(by_set(sp) for sp in listed)
    if with_items:
        head.append("test episodes from")
    rows = []
    for split in listed:
        st = split_stats(space, split)
        ml = [("-" if st["mean_length"][s] is None else f"{st['mean_length'][s]:.2f}") for s in SIDES]
        rows.append([split.name, f"{st['train']:,}", f"{st['val']:,}", f"{st['test']:,}", f"{st['leakage']:,}", *ml])
        if with_items:
            items = side_items(space, split, "test")
            rows[-1].append("every item" if items is None else f"{len(items):,} test-set items of {space.n_scenes:,}")
    widths = [max(len(r[k]) for r in [head] + rows) for k in range(len(head))]

    def fmt(r):
        return "  ".join(c.ljust(w) if k == 0 else c.rjust(w) for k, (c, w) in enumerate(zip(r, widths))).rstrip()

    lines = [fmt(head), "  ".join("-" * w for w in widths)] + [fmt(r) for r in rows]
    lines.append(f"({space.n_concepts:,} concepts, {space.n_synonym_classes:,} synonym classes; leakage = held-out "
                 "concepts with a synonym in train)")
    return "\n".join(lines)


def splits_json(space, splits) -> dict:
    """``{"splits": {name: {"train": [ids], "val": [ids], "test": [ids], "leakage": n}}}``, and for
    a split that draws its episodes by set ``"items": {"rule": "by-set", "test_items": n}``."""
    out = {}
    for split in _as_list(splits):
        out[split.name] = {s: [int(i) for i in split.ids(s)] for s in SIDES}
        out[split.name]["leakage"] = _leakage(space, split)
        if by_set(split):
            out[split.name]["items"] = {"rule": "by-set", "test_items": int(len(side_items(space, split, "test")))}
    return {"splits": out}


def space_splits(space, names=None, specs=None) -> dict:
    """The space's own splits (CURI's nine on a CURI-grammar space, its saved split specs) and
    the splits of the spec files ``specs``: ``names`` of them in that order, or all."""
    specs = list(specs or ())
    given = {Path(s).resolve() for s in specs if not isinstance(s, dict)}
    # the split specs a space was saved with (space from-pairs writes DIR/splits/*.toml)
    specs += [str(p) for p in space.spec_paths().values() if p.resolve() not in given]
    return load_splits(space, names, specs)
