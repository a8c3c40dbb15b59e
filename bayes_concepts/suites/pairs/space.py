"""Pair spaces and their splits: the space of a layout, unseen-pair and reference-limited split specs, episode worlds, pair files written back out, the build's notes."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ...spaces.extension_space import ExtensionSpace, description_log_prob
from ...splits import ITEM_SETS, encode_item_sets
from .layout import ROLES, SIDES, PairsLayout, PairsLayoutError


def _tokens_of(attributes, objects) -> dict:
    """(role, value) -> description token; a name used in both roles is prefixed by its role."""
    both = set(attributes) & set(objects)
    out = {}
    for role, values in (("attribute", attributes), ("object", objects)):
        for v in values:
            out[(role, v)] = f"{role}:{v}" if v in both else v
    return out


def pair_space(layout: PairsLayout, primitives: bool = True, test_positives: int = 3, seed: int = 0,
               min_count: int = 1, image_level: bool = False) -> ExtensionSpace:
    """The pair space of an attribute-object benchmark (see the module docstring).

    Concept order: the attributes alone, the objects alone (both sorted; only with
    ``primitives``, and only those in a train or test pair), then the pairs of train and
    test (sorted).  ``params["excluded"]`` records what is left out
    (:meth:`PairsLayout.exclusions`).  When the layout has unseen pairs, the space carries the
    seen-vs-unseen split spec as ``spec_files["unseen_pairs.toml"]``.

    ``image_level``: record each item's set (``params["item_set_codes"]``:
    :func:`bayes_concepts.splits.encode_item_sets`), which by-set splits read (``items =
    "by-set"``), and carry the image-level twin of the seen-vs-unseen spec
    (``unseen_pairs_by_set.toml``: :func:`by_set_spec`).  A layout without sets, or without
    test-set items, is a one-line :class:`PairsLayoutError` (:func:`image_level_error`).
    Without it nothing is recorded: the space is the same, file for file, as before.
    """
    if image_level and image_level_error(layout):
        raise PairsLayoutError(image_level_error(layout))
    attr_values, attr_code = np.unique(np.array(layout.attributes, dtype=str), return_inverse=True)
    obj_values, obj_code = np.unique(np.array(layout.objects, dtype=str), return_inverse=True)
    attr_values, obj_values = attr_values.tolist(), obj_values.tolist()
    a_index = {a: k for k, a in enumerate(attr_values)}
    o_index = {o: k for k, o in enumerate(obj_values)}
    pairs = sorted(set(layout.pairs["train"]) | set(layout.pairs["test"]))
    used_a, used_o = {a for a, _ in pairs}, {o for _, o in pairs}
    token = _tokens_of(sorted(used_a), sorted(used_o))
    concepts = []  # (parts, item ids): id lists, not (concepts x items) masks -- C-GQA's 9,000 x 155,000 is 1.4 GB
    attr_items, obj_items = _items_by_code(attr_code), _items_by_code(obj_code)
    if primitives:
        concepts += [(((("attribute", a),)), attr_items(k)) for k, a in enumerate(attr_values) if a in used_a]
        concepts += [(((("object", o),)), obj_items(k)) for k, o in enumerate(obj_values) if o in used_o]
    pair_code = attr_code.astype(np.int64) * len(obj_values) + obj_code  # one integer per (attribute, object)
    pair_items = _items_by_code(pair_code)
    concepts += [((("attribute", a), ("object", o)), pair_items(a_index[a] * len(obj_values) + o_index[o]))
                 for a, o in pairs]
    n_values = {"attribute": len(used_a), "object": len(used_o)}
    params = {"kind": "pairs", "primitives": bool(primitives), "sources": layout.sources,
              "pairs": {k: len(v) for k, v in layout.pairs.items()}}
    excluded = layout.exclusions()
    if excluded:
        params["excluded"] = excluded
    if layout.notes:
        params["layout_notes"] = layout.notes
    if layout.sets is not None:
        params["item_sets"] = set_counts(layout)
    if image_level:
        params[ITEM_SETS] = encode_item_sets(layout.sets)
    space = ExtensionSpace.from_extensions(
        [m for _, m in concepts], [" ".join(token[p] for p in parts) for parts, _ in concepts],
        n_items=layout.n_items, item_names=layout.items,
        item_labels={"attribute": layout.attributes, "object": layout.objects},
        parts=[parts for parts, _ in concepts], log_probs=[description_log_prob(p, n_values) for p, _ in concepts],
        min_count=min_count, test_positives=test_positives, seed=seed, params=params)
    if not layout.unseen_pairs():
        return space
    spec = unseen_pairs_spec(space, layout.pairs["train"])
    files = {"unseen_pairs.toml": spec_to_toml(spec)}
    if image_level:
        twin = by_set_spec(spec)
        files[f"{twin['name']}.toml"] = spec_to_toml(twin)
    return space.with_spec_files(files)


def _items_by_code(codes):
    """``items(c)``: the ids (sorted) of the items whose code is ``c`` (one stable sort of
    ``codes``, then a slice per code: no mask over all items per concept)."""
    codes = np.asarray(codes)
    order = np.argsort(codes, kind="stable")
    ordered = codes[order]

    def items(c):
        lo, hi = np.searchsorted(ordered, c, "left"), np.searchsorted(ordered, c, "right")
        return order[lo:hi]
    return items


def _pair_ids(space) -> dict:
    """``{(attribute, object): concept id}`` of the two-part concepts of a pair space."""
    out = {}
    for i, parts in enumerate(() if space.has_programs else space.parts):  # programs have no parts: no pairs
        roles = [r for r, _ in parts]
        if roles == ["attribute", "object"]:
            out[(parts[0][1], parts[1][1])] = i
    return out


def _held_out_given_seen(space, seen_pairs) -> np.ndarray:
    """bool (n,): pairs not in ``seen_pairs``, and primitives that occur in no seen pair."""
    seen = set(map(tuple, seen_pairs))
    seen_values = {("attribute", a) for a, _ in seen} | {("object", o) for _, o in seen}
    held = np.zeros(space.n_concepts, bool)
    for i, parts in enumerate(space.parts):
        if len(parts) == 2:
            held[i] = (parts[0][1], parts[1][1]) not in seen
        elif len(parts) == 1:
            held[i] = tuple(parts[0]) not in seen_values
    return held


def unseen_pairs_spec(space, seen_pairs, name: str = "unseen_pairs") -> dict:
    """The seen-vs-unseen split as a spec dict: every pair not in ``seen_pairs`` (and every
    primitive in no seen pair) held out as test, no val.  A space whose every pair is seen
    has no such split: a :class:`PairsLayoutError`."""
    held = _held_out_given_seen(space, seen_pairs)
    if not held.any():
        raise PairsLayoutError("no unseen pair: every pair of the space is a seen (train) pair, so there is no "
                               "seen-vs-unseen split (reference-limited splits, --k or --worlds, still build)")
    return {"name": name, "kind": "held_out", "synonym_aware": False, "val_fraction": 0.0,
            "description": "seen pairs (train_pairs.txt) vs unseen pairs (test pairs not in train_pairs.txt)",
            "held_out": {"programs": [space.descriptions[i] for i in np.flatnonzero(held)]}}


def split_pairs(space, split) -> dict:
    """``{"train": [(attribute, object), ...], "test": [...]}``: the pairs (two-part concepts) of
    each side of ``split`` of a pair space, in concept order; primitives are left out (a pair
    file lists pairs only)."""
    ids = {i: pair for pair, i in _pair_ids(space).items()}
    return {side: [ids[int(i)] for i in getattr(split, side) if int(i) in ids] for side in ("train", "test")}


def check_pair_files_target(space, out_dir):
    """Refuse (one-line :class:`PairsLayoutError`) to write pair files for a space with no
    attribute-object pairs, or into a folder that already holds ``train_pairs.txt`` or
    ``test_pairs.txt`` (never overwritten: they may be a benchmark's own)."""
    if not _pair_ids(space):
        raise PairsLayoutError("pair files need a pair space (attribute-object pairs, `space from-pairs`); this "
                               "space has no two-part concepts")
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise PairsLayoutError(f"{out}: is a file; give a folder for the pair files")
    for name in ("train_pairs.txt", "test_pairs.txt"):
        if (out / name).exists():
            raise PairsLayoutError(f"{out / name}: already exists; give an empty or new folder (pair files are "
                                   "never overwritten)")


def write_pair_files(space, split, out_dir) -> list:
    """Write ``split`` of a pair space as ``out_dir/train_pairs.txt`` and ``test_pairs.txt``
    ("attribute object" per line, the layout :func:`read_pairs_layout` reads), each file
    written whole or not at all.  Returns ``[(path, number of pairs), ...]``.  A name with
    white space in it cannot be written to that layout: a :class:`PairsLayoutError`."""
    check_pair_files_target(space, out_dir)
    sides = split_pairs(space, split)
    for pairs in sides.values():
        for a, o in pairs:
            if any(ch.isspace() for ch in a + o):
                raise PairsLayoutError(f"pair ({a!r}, {o!r}) has white space in a name: the pair-file layout "
                                       "separates attribute and object by a space")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for side, pairs in sides.items():
        path = out / f"{side}_pairs.txt"
        tmp = path.with_name(path.name + ".partial")
        tmp.write_text("".join(f"{a} {o}\n" for a, o in pairs), encoding="utf-8")
        tmp.replace(path)
        written.append((path, len(pairs)))
    return written


#: the roles a reference-limited split may limit the seen pairs of (``by``), and its spec-name suffix
K_BY = {"attribute": "", "object": "_obj"}


def seen_pairs_per_attribute(space, k: int, seed: int = 0, by: str = "attribute") -> list:
    """``k`` pairs per attribute (``by="object"``: per object; all of them when it has at most
    ``k``), drawn with ``seed`` from its pairs in the space (in concept order): the seen pairs of
    an RLCL-style reference-limited split.  Every attribute (object) of a pair keeps at least
    one seen pair, so none is a novel atom; with ``by="object"`` attributes may be."""
    if by not in K_BY:
        raise PairsLayoutError(f"by must be one of {', '.join(K_BY)}, got {by!r}")
    role = ROLES.index(by)
    rng = np.random.default_rng(seed)
    groups = {}
    for pair, i in sorted(_pair_ids(space).items(), key=lambda kv: kv[1]):
        groups.setdefault(pair[role], []).append(pair)
    seen = []
    for key in sorted(groups):
        ps = groups[key]
        pick = rng.permutation(len(ps))[: int(k)]
        seen += [ps[j] for j in sorted(pick)]
    return seen


def _check_pair_space(space):
    if not _pair_ids(space):
        raise PairsLayoutError("reference-limited splits need a space of (attribute, object) pairs "
                               "(bayes_concepts.pairs.pair_space, or bayes-concepts space from-pairs)")


def _whole(v, least: int) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) and v >= least


def reference_limited_spec(space, k: int, seed: int = 0, name: str | None = None, by: str = "attribute") -> dict:
    """An RLCL-style split spec: ``k`` seen pairs per attribute, or per object with
    ``by="object"`` (:func:`seen_pairs_per_attribute`), every other pair (and every primitive in
    no seen pair) held out as test, no val.  The held-out concepts are listed in the spec
    (``held_out.programs``); its name is ``seen_k<K>`` (per attribute) or ``seen_k<K>_obj``."""
    _check_pair_space(space)
    if by not in K_BY:
        raise PairsLayoutError(f"by (what k limits the seen pairs of) must be one of {', '.join(K_BY)}, got {by!r}")
    if not _whole(k, 1):
        raise PairsLayoutError(f"k (seen pairs per {by}) must be an integer >= 1, got {k!r}")
    held = _held_out_given_seen(space, seen_pairs_per_attribute(space, int(k), int(seed), by=by))
    if not held.any():
        raise PairsLayoutError(f"k = {k} keeps every pair of every {by}: nothing would be held out")
    return {"name": name or f"seen_k{k}{K_BY[by]}", "kind": "held_out", "synonym_aware": False, "val_fraction": 0.0,
            "description": f"reference-limited (RLCL): {k} seen pair(s) per {by}, drawn with seed {seed}",
            "held_out": {"programs": [space.descriptions[i] for i in np.flatnonzero(held)]}}


#: consecutive invalid worlds (fewer than two candidate pairs) after which no further world is drawn
WORLD_TRIES = 200


def episode_worlds(space, n_p: int = 5, worlds: int | None = None, seed: int = 0) -> list:
    """Worlds drawn as RLCL's episode sampler draws an episode's label space (see the module
    docstring), one after another from the attributes and objects no earlier world used.

    Returns a list of ``(seen, unseen)``, each a sorted list of (attribute, object) pairs:
    at most ``worlds`` (None: as many as can be drawn)."""
    _check_pair_space(space)
    if not _whole(n_p, 1):
        raise PairsLayoutError(f"n_p (attributes and objects per world) must be an integer >= 1, got {n_p!r}")
    if worlds is not None and not _whole(worlds, 1):
        raise PairsLayoutError(f"worlds must be an integer >= 1 or None, got {worlds!r}")
    rng = np.random.default_rng(seed)
    every = sorted(_pair_ids(space))
    exists = set(every)
    used_a, used_o, out, failures = set(), set(), [], 0
    while (worlds is None or len(out) < worlds) and failures < WORLD_TRIES:
        free = [p for p in every if p[0] not in used_a and p[1] not in used_o]
        seen, p1, p2 = [], set(), set()
        for j in rng.permutation(len(free)):  # step 1: n_p pairs sharing no attribute and no object
            a, o = free[j]
            if a not in p1 and o not in p2:
                seen.append((a, o))
                p1.add(a)
                p2.add(o)
                if len(seen) == n_p:
                    break
        if len(seen) < n_p:
            break  # no world of n_p x n_p is left
        candidates = [(a, o) for a in sorted(p1) for o in sorted(p2) if (a, o) in exists and (a, o) not in seen]
        if len(candidates) < 2:  # seen and unseen pairs cannot both be had: draw again
            failures += 1
            continue
        failures = 0
        order = [candidates[j] for j in rng.permutation(len(candidates))]
        unseen = [order[1]]
        seen.append(order[0])
        for c in order[2:]:
            (seen if rng.random() < 0.5 else unseen).append(c)
        out.append((sorted(seen), sorted(unseen)))
        used_a |= p1
        used_o |= p2
    return out


def episode_worlds_spec(space, n_p: int = 5, worlds: int | None = None, seed: int = 0,
                        name: str | None = None) -> dict:
    """RLCL's episode setting as a split spec (:func:`episode_worlds`): train = the worlds' seen
    pairs and their attributes and objects alone, test = their unseen pairs, val
    (``val_programs``; in neither oracle) = every other concept.  No world at all is a
    :class:`PairsLayoutError`."""
    drawn = episode_worlds(space, n_p, worlds, seed)
    if not drawn:
        raise PairsLayoutError(f"no world of {n_p} attributes x {n_p} objects can be drawn: the space has no "
                               f"{n_p} pairs sharing no attribute and object with two more pairs in their grid")
    seen = [p for s, _ in drawn for p in s]
    unseen = {p for _, u in drawn for p in u}
    train = ~_held_out_given_seen(space, seen)
    ids = _pair_ids(space)
    test = np.zeros(space.n_concepts, bool)
    test[[ids[p] for p in unseen]] = True
    val = ~train & ~test
    n_seen = len(seen)
    return {"name": name or f"worlds_np{n_p}", "kind": "held_out", "synonym_aware": False, "val_fraction": 0.0,
            "description": f"RLCL episode worlds: {len(drawn)} world(s) of {n_p} attributes x {n_p} objects, "
                           f"{n_seen} seen and {len(unseen)} unseen pairs ({n_seen / len(drawn):.2f} seen per world), "
                           f"other concepts val; seed {seed}",
            "val_programs": [space.descriptions[i] for i in np.flatnonzero(val)],
            "held_out": {"programs": [space.descriptions[i] for i in np.flatnonzero(~train)]}}


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, list):
        if len(v) > 4:
            return "[\n" + "".join(f"  {_toml_value(x)},\n" for x in v) + "]"
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k} = {_toml_value(x)}" for k, x in v.items()) + "}"
    raise TypeError(f"cannot write {type(v).__name__} to TOML")


def spec_to_toml(spec: dict) -> str:
    """A split spec dict (as the specs of this module) as the text of a TOML spec file."""
    lines = [f"{k} = {_toml_value(v)}" for k, v in spec.items() if k != "held_out"]
    if "held_out" in spec:
        lines += ["", "[held_out]"] + [f"{k} = {_toml_value(v)}" for k, v in spec["held_out"].items()]
    return "\n".join(lines) + "\n"


def _seen_test_note(layout) -> str:
    """`` of which 1 also in train_pairs.txt (seen: a train concept of the split, e.g. wet dog)``
    for test pairs that are train pairs too (CZSL's generalized test set), else ``""``."""
    train = {tuple(p) for p in layout.pairs["train"]}
    seen = [p for p in layout.pairs["test"] if tuple(p) in train]
    if not seen:
        return ""
    example = " ".join(seen[0])
    return (f" of which {len(seen):,} also in train_pairs.txt (seen pairs: train concepts of the split, e.g. "
            f"{example!r})")


#: fewer usable test concepts than this, and the build's line for the split says how to get more
def exclusion_lines(excluded: dict, prefix: str = "excluded: ") -> list:
    """One line per kind of an exclusion record (``{kind: {"count", "first", "rule"}}``):
    ``excluded: 1 empty pair (test_pairs.txt: broken wall): listed ..., but no item ...``."""
    words = {"empty_pairs": ("empty pair", "empty pairs"), "na_items": ("NA metadata record", "NA metadata records"),
             "val_pairs": ("val-only pair", "val-only pairs"),
             "val_only_atoms": ("attribute/object in no train or test pair", "attributes/objects in no train or test pair"),
             "too_small": ("concept too small for an episode", "concepts too small for an episode"),
             "seen_attrs_unused": ("attribute of seen_attrs.txt in no seen pair",
                                   "attributes of seen_attrs.txt in no seen pair"),
             "seen_objs_unused": ("object of seen_objs.txt in no seen pair", "objects of seen_objs.txt in no seen pair"),
             "seen_attrs_omitted": ("attribute of a seen pair missing from seen_attrs.txt",
                                    "attributes of seen pairs missing from seen_attrs.txt"),
             "seen_objs_omitted": ("object of a seen pair missing from seen_objs.txt",
                                   "objects of seen pairs missing from seen_objs.txt"),
             "unlisted_pairs": ("pair no pair file names", "pairs no pair file names"),
             "unlisted_items": ("pair no pair file names, its items dropped",
                                "pairs no pair file names, their items dropped")}
    out = []
    for kind, rec in excluded.items():
        n = int(rec.get("count", 0))
        if not n:
            continue
        shown = list(rec.get("first", []))
        more = f", and {n - len(shown):,} more" if n > len(shown) else ""
        word = words.get(kind, (kind, kind))[n != 1]
        out.append(f"{prefix}{n:,} {word} ({', '.join(shown)}{more}): {rec.get('rule', '')}")
    return out


#: what an image-level (by-set) split does with the items' sets: the build's note and the docs say it
IMAGE_LEVEL = ("each *_by_set split (items = 'by-set') draws its test episodes -- support, queries -- and its test "
               "bank from the test-set items only, and the oracles' size likelihood counts |ext h| there; train-set "
               "items are never a test episode's, and the test-set items of seen pairs are hard negatives and "
               "test-bank distractors (CZSL's generalised setting)")

#: the suffix of an image-level twin of a split spec (the same concepts, items = "by-set")
BY_SET = "_by_set"


def by_set_spec(spec: dict) -> dict:
    """The image-level twin of a split spec: the same concepts, named ``<name>_by_set``, with
    ``items = "by-set"`` (each side's episodes from the items of its own set)."""
    out = {**spec, "name": spec["name"] + BY_SET, "items": "by-set",
           "description": (spec.get("description", "") + "; image-level: each side's episodes and the test bank from "
                           "the items of its own set (items = 'by-set')").lstrip("; ")}
    return out


def image_level_error(layout) -> str | None:
    """Why ``layout`` cannot give image-level splits (one line), or None: its items need a set
    column (hxm97's image lists and CZSL's metadata have one; a TSV needs a ``set`` column)
    holding test-set items."""
    if layout.sets is None:
        return ("--image-level needs each item's set (train/val/test): give items with a set column (a TSV/JSON "
                "'set' column, CZSL's metadata, or hxm97's train_imgs.txt/val_imgs.txt/test_imgs.txt); these items "
                "have none" + (" (--items-per-pair makes synthetic items without sets)"
                               if str(layout.sources.get("items", "")).startswith("synthetic") else ""))
    if "test" not in set(layout.sets):
        return (f"--image-level draws test episodes from the test-set items, and no item is in the test set (sets: "
                f"{', '.join(sorted(set(map(str, layout.sets))))})")
    return None


def set_counts(layout) -> dict:
    """The items' ``set`` column against the pairs: ``{set: {"seen": items of train pairs,
    "unseen": items of test pairs that are not train pairs, "other": items of any other pair
    (val-only or unlisted)}}`` in the order sets first occur; ``{}`` without a set column."""
    if layout.sets is None:
        return {}
    seen, unseen = set(layout.pairs["train"]), set(layout.unseen_pairs())
    out = {}
    for a, o, side in zip(layout.attributes, layout.objects, layout.sets):
        kind = "seen" if (a, o) in seen else "unseen" if (a, o) in unseen else "other"
        out.setdefault(str(side), {"seen": 0, "unseen": 0, "other": 0})[kind] += 1
    return out


def set_count_line(counts: dict, image_level: bool = False) -> str:
    """The build's note on the items' set column (``""`` without one): per set, its items of
    seen pairs, of unseen pairs and of other pairs, and what the splits do with it (with
    ``image_level``, the by-set splits: :data:`IMAGE_LEVEL`)."""
    if not counts:
        return ""
    order = [s for s in SIDES if s in counts] + [s for s in counts if s not in SIDES]
    parts = [f"{s} {sum(counts[s].values()):,} (seen pairs {counts[s]['seen']:,}, unseen pairs "
             f"{counts[s]['unseen']:,}, other pairs {counts[s]['other']:,})" for s in order]
    head = "note: the items' set column: " + "; ".join(parts) + ". "
    if image_level:
        return head + "Recorded per item (--image-level): " + IMAGE_LEVEL
    return head + ("The splits use the pair files, not the sets: every item of a seen pair is a positive of a train "
                   "concept whatever its set; --image-level adds image-level twins of the splits (*_by_set: test "
                   "episodes and the test bank from the test-set items, CZSL's generalised setting)")
