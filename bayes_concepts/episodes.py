"""Episodes: support and query sets for few-shot concept learning.

An episode has a concept h, drawn from a split's side with weight ∝ exp(-0.2·l(h)),
and a support and a query set of 5 positives + 20 negatives each (configurable):

* positives: 10 distinct scenes of h's extension (5 support, 5 query);
* hard negatives (``negatives="hard"``): scenes on which h is false but some
  *alternative* concept h′ is true (a concept of the whole space, not a synonym of
  h, true on all 5 positives of that set), drawn uniformly from the union of the
  alternatives' extensions minus ext(h) (``hard_mode="union"``, the default: an
  alternative is drawn ∝ |ext h′|, a scene of it uniformly, and kept with
  probability 1/(number of alternatives true on it)).  ``hard_mode="alternative"``
  draws the alternative uniformly first (hard-negative modes are a registry,
  :data:`hard_negative_modes`; a new mode is one registered function).  When no
  alternative has scenes left
  (or 400 draws per missing negative fail), random scenes on which h is false top
  the set up and are flagged (``*_topup``);
* easy negatives (``negatives="easy"``): uniform random scenes other than the
  positives; one that satisfies h is labelled positive and flagged
  (``*_relabelled``).  In a space with question domains every negative, easy or
  hard, is a scene of h's domain outside its extension: an easy negative is a
  uniform scene of that set, never relabelled (a question answered yes on most
  of its domain would otherwise give support sets of no negative);
* ``query_negatives="random"`` draws the query's negatives as easy negatives
  even in the hard setting, as CURI's released code did.

Every label equals the concept's signature bit.  Sampling runs in a numba kernel
with one random stream per episode, so episodes do not depend on thread count.

>>> eps = sample_episodes(space, split, side="test", negatives="hard", n=1000, seed=0)  # doctest: +SKIP
>>> eps.support_scenes.shape                                                           # doctest: +SKIP
(1000, 25)
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import NamedTuple

import numba
import numpy as np

from .bits import (block_counts, block_of_rank, has_bit, nonzero_words, pop_lowest_bit, popcount64, select_in_block,
                   read_only, unpack_bits)
from .engine.rows import RowFile, check_reads, row_at, row_source, rows_for_random_reads, word_at, words_at
from .engine.index import signature_block_counts
from .errors import BayesConceptsError
from .registry import Registry
from .scale import check_memory, episodes_bytes
from .splits import by_set, item_sets, side_items, side_space
from .rng import block_seeds, next_below
from .params import whole_number

BLOCK = 64
#: union hard negatives are drawn by scanning the bank when the alternatives' extensions add
#: up to this many times the bank or more (fewer random reads; the same distribution)
UNION_SCAN = 0.5
#: union hard negatives switch from rejection to drawing from the explicitly built union (the
#: alternatives' signatures OR-ed, minus ext(h)) once the rejection tries have read this many
#: times the words that building it reads (1: at most twice the cheaper method's reads)
UNION_EXPLICIT = 1.0
#: union hard negatives' rejection tries (the bank scan, and alternative-weighted) look at this
#: many of their next tries together, reading the scenes' rows side by side so that the memory
#: reads overlap; the tries are taken one at a time from the same random stream, so the
#: episodes are those of one try at a time (1)
SCAN_BATCH = 16
ARRAY_FIELDS = ("concept", "support_scenes", "support_labels", "support_source", "support_topup",
                "support_relabelled", "query_scenes", "query_labels", "query_source", "query_topup",
                "query_relabelled")
#: the arrays an episodes batch's identity (:meth:`Episodes.sha256`) is computed from, with
#: the dtype each is hashed in (little-endian, whatever the platform)
IDENTITY_DTYPES = {"concept": "<i8", "support_scenes": "<i8", "support_labels": "<i1", "query_scenes": "<i8",
                   "query_labels": "<i1"}
IDENTITY_FIELDS = tuple(IDENTITY_DTYPES)
#: The ``format`` and ``version`` of an episodes export's identity (:mod:`bayes_concepts.export`),
#: which a predictions file copies (:mod:`bayes_concepts.predictions`).
EXPORT_FORMAT = "bayes-concepts episodes export"
EXPORT_VERSION = 1
#: Episodes at the head of each exported cell whose hash the identity also records
#: (``head_sha256``): a run redraws them before any work to check it draws the export's episodes.
EXPORT_HEAD = 32


def test_bank_sha256(ids) -> str:
    """sha256 (hex) of test-bank scene ids as int64 little-endian bytes: the test bank an
    episodes export and a predictions file are for."""
    import hashlib
    return hashlib.sha256(np.ascontiguousarray(ids, "<i8").tobytes()).hexdigest()


class EpisodeError(BayesConceptsError):
    """Episodes cannot be drawn as asked (e.g. no concept on the side has enough positives)."""


#: names of the concepts an exclusion record lists (the rest are counted)
FIRST_NAMES = 5


@dataclass(frozen=True)
class EpisodeShape:
    """How many scenes the two sets of an episode hold.

    The support set has ``positives`` positive and ``negatives`` negative scenes, the query
    set ``query_positives`` and ``query_negatives`` (None: as the support's).  Defaults: 5 +
    20 each.  A concept can be an episode's concept only when its extension has
    :attr:`needed` = ``positives + query_positives`` scenes or more (the positives of the two
    sets are distinct); any other concept of a side is *excluded* from that side's episodes
    (counted and named by :func:`episode_exclusions`), while it stays a hypothesis of the
    oracles.  Bad values are an :class:`EpisodeError` naming the field."""

    positives: int = 5
    negatives: int = 20
    query_positives: int | None = None
    query_negatives: int | None = None

    def __post_init__(self):
        for name, least in (("positives", 1), ("negatives", 0), ("query_positives", 1), ("query_negatives", 0)):
            v = getattr(self, name)
            if v is None and name.startswith("query_"):
                object.__setattr__(self, name, getattr(self, name[len("query_"):]))
                continue
            object.__setattr__(self, name, whole_number(name, v, least, error=EpisodeError, prefix="episode shape: "))

    @property
    def needed(self) -> int:
        """Scenes a concept needs to be drawn: the positives of both sets."""
        return self.positives + self.query_positives

    @property
    def support_size(self) -> int:
        return self.positives + self.negatives

    @property
    def query_size(self) -> int:
        return self.query_positives + self.query_negatives

    def as_dict(self) -> dict:
        return {"positives": self.positives, "negatives": self.negatives,
                "query_positives": self.query_positives, "query_negatives": self.query_negatives}

    def text(self) -> str:
        """``5+20 support, 5+20 query`` (positives+negatives)."""
        return (f"{self.positives}+{self.negatives} support, {self.query_positives}+{self.query_negatives} query "
                "(positives+negatives)")

    @classmethod
    def parse(cls, value, where: str = "episode shape") -> "EpisodeShape":
        """An :class:`EpisodeShape` from None (the default), an EpisodeShape, a dict with its
        field names (a split spec's ``[episodes]`` table) or a text ``P,N`` / ``P,N,QP,QN``
        (the ``--episode-shape`` option); anything else is an :class:`EpisodeError` naming ``where``."""
        if value is None:
            return cls()
        if isinstance(value, cls):
            return value
        if isinstance(value, dict):
            unknown = [k for k in value if k not in ("positives", "negatives", "query_positives", "query_negatives")]
            if unknown:
                raise EpisodeError(f"{where}: unknown key {unknown[0]!r} (expected positives, negatives, "
                                   "query_positives, query_negatives)")
            try:
                return cls(**value)
            except EpisodeError as exc:
                raise EpisodeError(f"{where}: {str(exc).removeprefix('episode shape: ')}") from None
        if isinstance(value, str):
            parts = [p.strip() for p in value.split(",")]
            if len(parts) not in (2, 4) or not all(p.isdigit() for p in parts):
                raise EpisodeError(f"{where}: expected POSITIVES,NEGATIVES or POSITIVES,NEGATIVES,QUERY_POSITIVES,"
                                   f"QUERY_NEGATIVES (whole numbers, e.g. 5,20), got {value!r}")
            try:
                return cls(*map(int, parts))
            except EpisodeError as exc:
                raise EpisodeError(f"{where}: {str(exc).removeprefix('episode shape: ')}") from None
        raise EpisodeError(f"{where}: expected a table of positives, negatives[, query_positives, query_negatives], "
                           f"got {type(value).__name__}")


def episode_exclusions(space, concept_ids, shape=None, first: int = FIRST_NAMES, what: str | None = None) -> dict:
    """The concepts of ``concept_ids`` (int, (m,)) that cannot be an episode's concept with
    ``shape`` (:class:`EpisodeShape`): those with fewer than ``shape.needed`` scenes.

    Returns ``{"rule", "needed", "count", "usable", "first"}``: the rule in words, the scenes
    needed, how many are excluded, how many remain, and the descriptions of the first
    ``first`` excluded (in concept order).  ``what``: what the rule calls the scenes counted
    (default ``items`` in a pair space, else ``scenes``).

    In a space with question domains (:attr:`~bayes_concepts.spaces.ConceptSpace.has_domains`)
    a concept is also excluded when its domain holds fewer than ``shape.negatives +
    shape.query_negatives`` scenes outside its extension (every negative comes from there, as
    :meth:`EpisodeSampler.sample` draws them); the rule says so, and ``negatives_needed`` and
    ``few_negatives`` (how many of the excluded are excluded for that alone) are added.  A
    space without domains gets the record it always had."""
    shape = EpisodeShape.parse(shape)
    ids = np.asarray(concept_ids, np.int64)
    counts = np.asarray(space.counts)[ids] if len(ids) else np.zeros(0, np.int64)
    bad = counts < shape.needed
    what = what or _scene_word(space)
    rule = (f"fewer than {shape.needed} {what} ({shape.positives} support + {shape.query_positives} query "
            "positives)")
    extra = {}
    if space.has_domains and len(ids):
        negatives_needed = shape.negatives + shape.query_negatives
        few = (space.domain_counts()[ids] - counts) < negatives_needed
        extra = {"negatives_needed": int(negatives_needed), "few_negatives": int((few & ~bad).sum())}
        bad = bad | few
        rule += (f", or fewer than {negatives_needed} {what} in its domain outside its extension ({shape.negatives} "
                 f"support + {shape.query_negatives} query negatives: the {what} its question is asked about and "
                 "answered no)")
    small = ids[bad]
    names = [space.programs[int(i)] for i in small[:first]]
    return {"rule": rule + ": never an episode's concept, still a hypothesis of the oracles",
            "needed": shape.needed, "count": int(len(small)), "usable": int(len(ids) - len(small)), "first": names,
            **extra}


@dataclass(frozen=True)
class HardNegativeMode:
    """A registered way of drawing hard negatives: a Python ``draw`` function, or (the
    built-ins) a flag of the numba sampler, ``kernel_union``, with a one-line ``summary``."""

    draw: object = None
    kernel_union: bool | None = None
    summary: str = ""


class HardNegativeModeRegistry(Registry):
    """Hard-negative modes.  A new mode is one registered function::

        @hard_negative_modes.register("most_specific")
        def most_specific(space, concept, positives, alternatives, exclude, n, rng):
            # negatives from the alternative with the smallest extension
            a = alternatives[np.argmin(space.counts[alternatives])]
            ok = space.signature(a) & ~space.signature(concept)
            ok[exclude] = False
            pool = np.flatnonzero(ok)
            return rng.choice(pool, size=min(n, len(pool)), replace=False)

    Arguments: the space; the concept id; int64 (5,) the set's positives; int64 (m,) the
    *alternatives* (concepts true on every positive that are not synonyms of the concept);
    int64 (j,) scenes already used in the episode; ``n`` negatives wanted; a
    ``numpy.random.Generator`` seeded per episode.  It returns up to ``n`` distinct scene
    ids on which the concept is false -- in a space with question domains, of its domain
    (``space.domain(concept)``) -- (checked); the set is topped up with random such
    scenes, flagged ``*_topup``.  Registered modes run in Python, one set at a time; the
    built-in ``union`` and ``alternative`` run in the numba sampler.
    """

    def register(self, name, obj=None, *, replace: bool = False):
        def add(fn):
            doc = (fn.__doc__ or "").strip().splitlines()
            Registry.register(self, name, HardNegativeMode(draw=fn, summary=doc[0] if doc else ""), replace=replace)
            return fn
        return add if obj is None else add(obj)


hard_negative_modes = HardNegativeModeRegistry("hard-negative mode")
Registry.register(hard_negative_modes, "union", HardNegativeMode(kernel_union=True, summary=(
    "each negative uniformly from the union of the consistent alternatives' extensions outside ext(h) (default)")))
Registry.register(hard_negative_modes, "alternative", HardNegativeMode(kernel_union=False, summary=(
    "an alternative uniformly, then one of its scenes outside ext(h)")))


@dataclass
class Episodes:
    """A batch of episodes as arrays (E episodes, K = positives + negatives per set).

    Attributes
    ----------
    concept : int32 (E,)
        The episode's concept id.
    support_scenes, query_scenes : int64 (E, K)
        Scene ids of the space's scene bank; positives first, then negatives.
    support_labels, query_labels : int8 (E, K)
        1 = positive.
    support_source, query_source : int32 (E, K)
        The alternative concept a hard negative was drawn from (-1 for positives, easy
        and top-up negatives).
    support_topup, query_topup : bool (E, K)
        Random top-up negatives (hard setting).
    support_relabelled, query_relabelled : bool (E, K)
        Random negatives that satisfy the concept and are labelled positive.
    meta : dict
        Split, side, negatives, query_negatives, seed, counts, space manifest hash.
    """

    concept: np.ndarray
    support_scenes: np.ndarray
    support_labels: np.ndarray
    support_source: np.ndarray
    support_topup: np.ndarray
    support_relabelled: np.ndarray
    query_scenes: np.ndarray
    query_labels: np.ndarray
    query_source: np.ndarray
    query_topup: np.ndarray
    query_relabelled: np.ndarray
    meta: dict = field(default_factory=dict)

    def __len__(self):
        return len(self.concept)

    def __eq__(self, other):
        if not isinstance(other, Episodes):
            return NotImplemented
        return self.meta == other.meta and all(
            np.array_equal(getattr(self, f), getattr(other, f)) for f in ARRAY_FIELDS)

    def sha256(self, first: int | None = None) -> str:
        """The episodes' identity: sha256 (hex) of their concepts and their support and query
        scene ids and labels (each array's dtype, shape and little-endian bytes, in
        :data:`IDENTITY_FIELDS` order); the flags and ``meta`` do not enter.  Two batches with
        the same hash hold the same episodes; an episodes export records it per cell and a
        predictions file is scored only on the episodes whose hash it carries.  ``first``:
        the hash of the first ``first`` episodes only."""
        import hashlib
        h = hashlib.sha256()
        for f in IDENTITY_FIELDS:
            a = np.ascontiguousarray(getattr(self, f)[:first], IDENTITY_DTYPES[f])
            h.update(f"{f}:{a.dtype.str}:{a.shape};".encode())
            h.update(a.tobytes())
        return h.hexdigest()

    def save(self, path, overwrite: bool = False, target=None) -> Path:
        """Write a ``.npz`` (arrays + a JSON ``meta`` string; no pickle) in one piece, as results
        are written (:mod:`bayes_concepts.output_files`): never over a file the toolkit did not
        write, over an earlier episodes file only with ``overwrite``, and of two writes of one
        path at once exactly one succeeds.  ``target``: :func:`check_episodes_file`'s result
        for ``path``, checked before the work."""
        from .output_files import write_file
        path = Path(path)
        if target is None:
            target = check_episodes_file(path, overwrite)
        arrays = {f: getattr(self, f) for f in ARRAY_FIELDS}
        arrays["meta"] = np.array(json.dumps(self.meta, sort_keys=True))

        def write(tmp):
            with open(tmp, "wb") as fh:
                np.savez_compressed(fh, **arrays)
        return write_file(target, write, what="episodes file")

    @classmethod
    def load(cls, path) -> "Episodes":
        """Read a file written by :meth:`save`; anything else (a damaged or foreign file,
        arrays of the wrong shapes or types) is an :class:`EpisodeError` naming the file."""
        import zipfile
        path = Path(path)
        if not path.is_file():
            raise EpisodeError(f"{path}: no such episodes file")
        try:
            with np.load(path, allow_pickle=False) as data:
                if not hasattr(data, "files"):
                    raise ValueError("a single array, not an episodes .npz")
                missing = [f for f in (*ARRAY_FIELDS, "meta") if f not in data.files]
                if missing:
                    raise EpisodeError(f"{path}: not an episodes file (missing {', '.join(missing)})")
                arrays = {f: data[f] for f in ARRAY_FIELDS}
                meta = json.loads(str(data["meta"]))
        except (OSError, ValueError, EOFError, KeyError, RecursionError, MemoryError, zipfile.BadZipFile) as exc:
            raise EpisodeError(f"{path}: cannot read episodes ({str(exc)[:200]})") from None
        if not isinstance(meta, dict):
            raise EpisodeError(f"{path}: meta is not a JSON object")
        e = arrays["concept"].shape[0] if arrays["concept"].ndim == 1 else -1
        widths = {side: arrays[f"{side}_scenes"].shape[1] if arrays[f"{side}_scenes"].ndim == 2 else -1
                  for side in ("support", "query")}  # the query set may have its own size
        for f, a in arrays.items():
            kind = "b" if f.endswith(("topup", "relabelled")) else "i"
            k = widths[f.split("_")[0]] if f != "concept" else 0
            shape = (e,) if f == "concept" else (e, k)
            if a.dtype.kind != kind or a.shape != shape or e < 0 or k < 0:
                raise EpisodeError(f"{path}: {f} is a {a.dtype} array of shape {a.shape}, expected "
                                   f"{'bool' if kind == 'b' else 'integer'} of shape {shape} (a damaged file?)")
        return cls(**arrays, meta=meta)

    def check_space(self, space, where: str = "episodes"):
        """Raise :class:`EpisodeError` unless these episodes can belong to ``space``: the space
        manifest hash they record (``meta["space"]``) is ``space``'s, and every concept and
        scene id is in range.  ``where`` names the episodes in the message (a file name)."""
        recorded = self.meta.get("space")
        own = space.manifest_sha256()
        if isinstance(recorded, str) and own and recorded != own:
            raise EpisodeError(f"{where} were drawn from another space than {space.path or 'this one'} "
                               f"(space manifest sha256 {recorded[:12]}…, this space's {own[:12]}…)")
        scenes = [getattr(self, f) for f in ARRAY_FIELDS if f.endswith("_scenes")]
        sources = [getattr(self, f) for f in ARRAY_FIELDS if f.endswith("_source")]
        if len(self) and (self.concept.min() < 0 or self.concept.max() >= space.n_concepts
                          or any(a.size and (a.min() < 0 or a.max() >= space.n_scenes) for a in scenes)
                          or any(a.size and (a.min() < -1 or a.max() >= space.n_concepts) for a in sources)):
            raise EpisodeError(f"{where}: concept or scene ids outside the space ({space.n_concepts:,} concepts, "
                               f"{space.n_scenes:,} scenes): drawn from another space?")


@numba.njit(inline="always")
def _used(s, scenes, k):
    for i in range(k):
        if scenes[i] == s:
            return True
    return False


@numba.njit(inline="always")
def _take(s, label, pos, scenes, labels, taken, n_taken):
    """Put scene ``s`` with ``label`` at ``pos`` and remember it as used."""
    scenes[pos] = s
    labels[pos] = label
    taken[n_taken] = s


@numba.njit(inline="always")
def _select(sig, h, cum, rank, block_buf):
    """Scene of the ``rank``-th set bit of concept ``h``'s signature (row source ``sig``), reading
    only the block of :data:`BLOCK` words that holds it; -1 if there is none."""
    b = block_of_rank(cum, rank)
    if b < 0:
        return -1
    words = words_at(sig, h, b * BLOCK, block_buf)
    return select_in_block(words, b * BLOCK, cum[b], rank)


@numba.njit(inline="always")
def _bit(sig, h, s, word_buf):
    """Whether concept ``h`` is true on scene ``s`` (row source ``sig``), as a uint64 0 or 1."""
    word = word_at(sig, h, s >> 6, word_buf)
    return (word >> np.uint64(s & 63)) & np.uint64(1)


@numba.njit(inline="always")
def _outside(outside, h, s):
    """Whether scene ``s`` is outside concept ``h``'s domain (``outside``: ``(rows, row_of)`` of
    :meth:`~bayes_concepts.spaces.space_index.SpaceIndex.outside_rows`: one row of scene bits per
    concept with a domain, so an episode's tries all read its concept's row)."""
    rows, row_of = outside
    if row_of.shape[0] == 0:
        return False
    r = row_of[h]
    if r < 0:
        return False
    return ((rows[r, s >> 6] >> np.uint64(s & 63)) & np.uint64(1)) != 0


@numba.njit(inline="always", cache=True)
def _first_alternative(row, alt_mask, alt_words, n_alt_words):
    """The lowest alternative (bit of ``alt_mask``) true on a scene with concept row ``row``; -1
    if none is.  ``alt_words[:n_alt_words]``: the indexes, increasing, of ``alt_mask``'s nonzero
    words (the only words of the row it reads: a try that finds no alternative touches those,
    not the whole row)."""
    for i in range(n_alt_words):
        w = alt_words[i]
        word = row[w] & alt_mask[w]
        if word:
            return w * 64 + pop_lowest_bit(word)[0]
    return -1


@numba.njit(inline="always", cache=True)
def _cover(row, alt_mask, alt_words, n_alt_words):
    """How many alternatives (bits of ``alt_mask``, nonzero in the words ``alt_words[:n_alt_words]``)
    are true on a scene with concept row ``row``."""
    cover = 0
    for i in range(n_alt_words):
        w = alt_words[i]
        cover += popcount64(row[w] & alt_mask[w])
    return cover


@numba.njit(inline="always")
def _first_alternatives(rows, at, nb, h, alt_mask, alt_words, n_alt_words, first):
    """For each of the scenes whose concept rows are ``rows[at[b]]`` (b < ``nb``): -2 if concept
    ``h`` is true on it, else :func:`_first_alternative` of its row (-1: no alternative), into
    ``first[b]``.  The rows are read word by word side by side (one word of every undecided
    row, then the next word), so that their memory reads are independent and overlap."""
    undecided = 0
    for b in range(nb):
        if (rows[at[b], h >> 6] >> np.uint64(h & 63)) & np.uint64(1):
            first[b] = -2
        else:
            first[b] = -1
            undecided += 1
    for i in range(n_alt_words):
        if undecided == 0:
            break
        w = alt_words[i]
        mask = alt_mask[w]
        for b in range(nb):
            if first[b] == -1:
                word = rows[at[b], w] & mask
                if word:
                    first[b] = w * 64 + pop_lowest_bit(word)[0]
                    undecided -= 1


@numba.njit(inline="always")
def _scan_ahead(state, n_scenes, nb, scene_concepts, h, alt_mask, alt_words, n_alt_words, batch):
    """The bank scan's next ``nb`` tries, drawn from a copy of the random stream ``state`` (which
    is left as it is): their scenes into ``cand[:nb]``, the stream's state after each draw into
    ``after[:nb]`` and :func:`_first_alternatives` of each into ``first[:nb]``.  The rows are
    read in memory or through the file's mapping (``scene_concepts``' ``mem``).  ``batch``: the
    scratch (cand int64 (B,), after uint64 (B,), first int64 (B,), alt int64 (B,) (an alternative
    per try, :func:`_reject_ahead`), look uint64 (1,) (the stream's copy)) of
    :func:`_fill_negatives`."""
    cand, after, first, alt, look = batch
    look[0] = state[0]
    for b in range(nb):
        cand[b] = next_below(look, n_scenes)
        after[b] = look[0]
    _first_alternatives(scene_concepts[0], cand, nb, h, alt_mask, alt_words, n_alt_words, first)


@numba.njit(inline="always")
def _weighted_try(state, total, alts, n_alts, alt_cum, counts, sig, cum, block_buf):
    """One try of the alternative-weighted rejection: an alternative drawn ∝ its extension size
    and a scene of it uniformly, with one draw of ``state`` (``alt_cum``: the alternatives'
    cumulative extension sizes, ``total`` the last); returns (alternative, scene)."""
    r = next_below(state, total)
    lo, hi = 0, n_alts - 1  # first j with alt_cum[j] > r
    while lo < hi:
        mid = (lo + hi) // 2
        if alt_cum[mid] > r:
            hi = mid
        else:
            lo = mid + 1
    a = alts[lo]
    return a, _select(sig, a, cum[a], r - (alt_cum[lo] - counts[a]), block_buf)


@numba.njit(inline="always")
def _reject_ahead(state, total, nb, alts, n_alts, alt_cum, counts, sig, cum, scene_concepts, h, block_buf, batch):
    """The alternative-weighted rejection's next ``nb`` tries as they go when none of them draws
    a cover (a try whose scene passes and has more than one alternative true on it draws once
    more: the tries after it are then drawn again), from a copy of the random stream ``state``
    (left as it is): each try's scene into ``cand[b]``, the stream's state after its draw into
    ``after[b]``, its alternative into ``alt[b]`` and -2 into ``first[b]`` if ``h`` is true on the
    scene (else -1).  The scenes are selected first and their rows' words of ``h`` read after,
    side by side, in memory or through the file's mapping.  ``batch``: :func:`_scan_ahead`'s
    scratch."""
    cand, after, first, alt, look = batch
    look[0] = state[0]
    for b in range(nb):
        a, cand[b] = _weighted_try(look, total, alts, n_alts, alt_cum, counts, sig, cum, block_buf)
        after[b] = look[0]
        alt[b] = a
    mem = scene_concepts[0]
    w = h >> 6
    bit = np.uint64(h & 63)
    for b in range(nb):
        first[b] = -2 if (mem[cand[b], w] >> bit) & np.uint64(1) else -1


@numba.njit(cache=True)
def _draw_from_union(h, alts, n_alts, alt_mask, alt_words, n_alt_words, sig, scene_concepts, state, scenes, labels,
                     source, taken, n_taken, pos, row_buf, outside):
    """Fill positions ``pos``.. of a set uniformly, without replacement, from the union of the
    alternatives' extensions minus ext(h) and the scenes already taken, built explicitly from
    their signatures (row source ``sig``); stops early when it runs out.  Returns (pos, n_taken)."""
    k = scenes.shape[0]
    n_words = sig[0].shape[1]
    union = np.zeros(n_words, np.uint64)
    sig_buf = np.empty(n_words, np.uint64)
    for j in range(n_alts):
        row = row_at(sig, alts[j], sig_buf)
        for w in range(n_words):
            union[w] |= row[w]
    row = row_at(sig, h, sig_buf)
    for w in range(n_words):
        union[w] &= ~row[w]
    for i in range(n_taken):
        t = taken[i]
        union[t >> 6] &= ~(np.uint64(1) << np.uint64(t & 63))
    left = 0
    for w in range(n_words):
        left += popcount64(union[w])
    while pos < k and left > 0:
        s = select_in_block(union, 0, 0, next_below(state, left))
        union[s >> 6] &= ~(np.uint64(1) << np.uint64(s & 63))
        left -= 1
        if _outside(outside, h, s):  # not a scene the question is asked about
            continue
        _take(s, 0, pos, scenes, labels, taken, n_taken)
        source[pos] = _first_alternative(row_at(scene_concepts, s, row_buf), alt_mask, alt_words, n_alt_words)
        n_taken += 1
        pos += 1
    return pos, n_taken


@numba.njit(cache=True)
def _fill_negatives(h, positives, hard, sig, cum, scene_concepts, counts, classes, n_scenes, state,
                    scenes, labels, source, topup, relabelled, taken, n_taken, alts, union, union_scan, alt_mask,
                    alt_cum, buffers, union_explicit, outside, easy_in_domain, scan_batch):
    """Fill positions len(positives).. of one set; returns the updated n_taken.

    ``union``: draw hard negatives uniformly from the union of the alternatives' extensions
    minus ext(h) (an alternative drawn ∝ its extension size, a scene of it uniformly, kept
    with probability 1/(number of alternatives true on it); or, when the extensions add up to
    ``union_scan``·N scenes or more, a scene of the bank uniformly, kept if it is in the union;
    and once those tries have read ``union_explicit`` times what building the union outside
    ext(h) from the alternatives' signatures reads, uniformly from that set, built),
    instead of alternative first.  A union negative's ``source`` is an alternative true on it.

    ``sig`` and ``scene_concepts`` are row sources (:func:`bayes_concepts.engine.rows.row_source`);
    ``buffers``: (row (Hw,), common (Hw,), block (BLOCK,), word (1,)) scratch for file reads,
    int64 (Hw,) for the indexes of ``alt_mask``'s nonzero words, and the bank scan's scratch
    (:func:`_scan_ahead`).  ``scan_batch``: how many of their next tries the union's rejection
    loops look at together (:data:`SCAN_BATCH`; 1: one at a time, the slow twin, as when the
    scene rows are read with pread: a system call each, nothing to overlap); the tries are taken
    one at a time from the same stream either way, so the sets do not depend on it.
    ``outside``: the scenes outside each concept's domain (:func:`_outside`; none without
    question domains): every negative, easy or hard, comes from
    the domain of h minus its extension.  ``easy_in_domain`` (a space with question domains):
    an easy negative is a uniform scene of that set, never a scene of ext(h) relabelled
    positive (else a question answered yes on most of its domain gives sets of no negative)."""
    row_buf, common, block_buf, word_buf, alt_words, batch = buffers
    n_pos = positives.shape[0]
    k = scenes.shape[0]
    for i in range(n_pos):
        scenes[i] = positives[i]
        labels[i] = 1
    pos = n_pos
    if hard:
        hw = scene_concepts[0].shape[1]
        n_alts = np.int64(0)  # int64 from the start: a literal 0 would compile _draw_from_union twice
        common[:] = row_at(scene_concepts, positives[0], row_buf)
        for i in range(1, n_pos):
            row = row_at(scene_concepts, positives[i], row_buf)
            for w in range(hw):
                common[w] &= row[w]
        for w in range(hw):
            word = common[w]
            while word:
                b, word = pop_lowest_bit(word)
                a = w * 64 + b
                if classes[a] != classes[h]:
                    alts[n_alts] = a
                    n_alts += 1
                    if union:
                        alt_mask[w] |= np.uint64(1) << np.uint64(b)
        if union and n_alts > 0:
            n_alt_words = nonzero_words(alt_mask, alt_words)
            total = 0
            for j in range(n_alts):
                total += counts[alts[j]]
                alt_cum[j] = total
            budget = 400 * (k - pos)
            # rejection sampling is cheap while the union outside ext(h) is large; once it has
            # read as many words as building that set explicitly would, build it (exactly the
            # same distribution: each negative uniform on what is left of the set)
            sig_words = sig[0].shape[1]
            explicit = union_explicit * (n_alts + 1 + k - pos) * sig_words
            spent = 0
            looks = scan_batch if scene_concepts[1] < 0 else 1  # pread: one row at a time
            if looks > 1:
                cand, after, first, alt = batch[0], batch[1], batch[2], batch[3]
                while pos < k and budget > 0 and total < union_scan * n_scenes and spent < explicit:
                    nb = min(looks, budget, np.int64((explicit - spent) / (hw + BLOCK)) + 1)
                    _reject_ahead(state, total, nb, alts, n_alts, alt_cum, counts, sig, cum, scene_concepts, h,
                                  block_buf, batch)
                    for b in range(nb):
                        if not (pos < k and budget > 0 and spent < explicit):
                            break
                        budget -= 1
                        spent += hw + BLOCK
                        state[0] = after[b]
                        s = cand[b]
                        if first[b] == -2 or _outside(outside, h, s) or _used(s, taken, n_taken):
                            continue
                        cover = _cover(row_at(scene_concepts, s, row_buf), alt_mask, alt_words, n_alt_words)
                        if cover > 1:
                            # this try draws once more: the tries looked at after it are not the next ones
                            if next_below(state, cover) == 0:
                                _take(s, 0, pos, scenes, labels, taken, n_taken)
                                source[pos] = alt[b]
                                n_taken += 1
                                pos += 1
                            break
                        _take(s, 0, pos, scenes, labels, taken, n_taken)
                        source[pos] = alt[b]
                        n_taken += 1
                        pos += 1
            while pos < k and budget > 0 and total < union_scan * n_scenes and spent < explicit:
                budget -= 1
                spent += hw + BLOCK
                a, s = _weighted_try(state, total, alts, n_alts, alt_cum, counts, sig, cum, block_buf)
                row = row_at(scene_concepts, s, row_buf)  # bit h of the scene's row is bit s of h's signature
                if has_bit(row, h) or _outside(outside, h, s) or _used(s, taken, n_taken):
                    continue
                cover = _cover(row, alt_mask, alt_words, n_alt_words)
                if cover > 1 and next_below(state, cover) != 0:
                    continue
                _take(s, 0, pos, scenes, labels, taken, n_taken)
                source[pos] = a
                n_taken += 1
                pos += 1
            # a broad union (the alternatives' extensions add up to union_scan·N or more): draw
            # scenes of the bank uniformly and keep those of the union -- the same distribution
            # for fewer reads (N/|U| tries of one row each against Σ|ext a|/|U| tries of two)
            if looks > 1:
                cand, after, first = batch[0], batch[1], batch[2]
                while pos < k and budget > 0 and total >= union_scan * n_scenes and spent < explicit:
                    # the tries this loop can still make, at most `looks`, looked at together
                    nb = min(looks, budget, np.int64((explicit - spent) / hw) + 1)
                    _scan_ahead(state, n_scenes, nb, scene_concepts, h, alt_mask, alt_words, n_alt_words, batch)
                    for b in range(nb):
                        if not (pos < k and budget > 0 and spent < explicit):
                            break
                        budget -= 1
                        spent += hw
                        state[0] = after[b]  # the stream as if this try had drawn its scene itself
                        s = cand[b]
                        a = first[b]
                        if a < 0 or _outside(outside, h, s) or _used(s, taken, n_taken):
                            continue
                        _take(s, 0, pos, scenes, labels, taken, n_taken)
                        source[pos] = a
                        n_taken += 1
                        pos += 1
            while pos < k and budget > 0 and total >= union_scan * n_scenes and spent < explicit:
                budget -= 1
                spent += hw
                s = next_below(state, n_scenes)
                row = row_at(scene_concepts, s, row_buf)
                if has_bit(row, h) or _outside(outside, h, s) or _used(s, taken, n_taken):
                    continue
                a = _first_alternative(row, alt_mask, alt_words, n_alt_words)
                if a < 0:
                    continue
                _take(s, 0, pos, scenes, labels, taken, n_taken)
                source[pos] = a
                n_taken += 1
                pos += 1
            if pos < k and budget > 0:
                pos, n_taken = _draw_from_union(h, alts, n_alts, alt_mask, alt_words, n_alt_words, sig,
                                                scene_concepts, state, scenes, labels, source, taken, n_taken, pos,
                                                row_buf, outside)
            for i in range(n_alt_words):
                alt_mask[alt_words[i]] = 0
            n_alts = np.int64(0)  # what the budget did not find is topped up below
        tries = 0
        while pos < k and n_alts > 0:
            j = next_below(state, n_alts)
            a = alts[j]
            s = _select(sig, a, cum[a], next_below(state, counts[a]), block_buf)
            if _bit(sig, h, s, word_buf) == 0 and not _outside(outside, h, s) and not _used(s, taken, n_taken):
                _take(s, 0, pos, scenes, labels, taken, n_taken)
                source[pos] = a
                n_taken += 1
                pos += 1
                tries = 0
            else:
                tries += 1
                if tries >= 8:  # a' gives nothing new (mostly inside ext(h)): drop it
                    alts[j] = alts[n_alts - 1]
                    n_alts -= 1
                    tries = 0
        while pos < k:
            s = next_below(state, n_scenes)
            if _bit(sig, h, s, word_buf) == 0 and not _outside(outside, h, s) and not _used(s, taken, n_taken):
                _take(s, 0, pos, scenes, labels, taken, n_taken)
                topup[pos] = True
                n_taken += 1
                pos += 1
    else:
        while pos < k:
            s = next_below(state, n_scenes)
            if not _outside(outside, h, s) and not _used(s, taken, n_taken):
                y = _bit(sig, h, s, word_buf)
                if y and easy_in_domain:  # a negative: a scene of the domain outside the extension
                    continue
                _take(s, y, pos, scenes, labels, taken, n_taken)
                relabelled[pos] = y == 1
                n_taken += 1
                pos += 1
    return n_taken


class SamplerTables(NamedTuple):
    """What the sampling kernel reads of a space."""

    signatures: tuple  #: row source (:func:`~bayes_concepts.engine.rows.row_source`) of the signatures (H, Sw)
    cum: np.ndarray  #: int (H, blocks + 1): set bits before each block of a signature
    scene_concepts: tuple  #: row source of the per-scene concept bitsets (S, Hw)
    counts: np.ndarray  #: int64 (H,) |ext(h)|
    classes: np.ndarray  #: int (H,) synonym class of each concept
    n_scenes: int  #: S
    outside: tuple  #: (rows uint64 (D, Sw), row_of int64 (H,)): SpaceIndex.outside_rows, scenes outside domains


class DrawRules(NamedTuple):
    """How the sampling kernel draws each episode's two sets."""

    n_positive: int  #: support positives
    n_query_positive: int  #: query positives
    hard_support: bool  #: hard negatives in the support set (else easy)
    hard_query: bool  #: the same for the query set
    union: bool  #: hard negatives from the union of the alternatives (else alternative first)
    union_scan: float  #: :data:`UNION_SCAN`
    union_explicit: float  #: :data:`UNION_EXPLICIT`
    easy_in_domain: bool = False  #: easy negatives from the domain minus the extension (a space with question domains)
    scan_batch: int = SCAN_BATCH  #: union tries looked at together (:data:`SCAN_BATCH`; 1: one at a time)


class EpisodeSets(NamedTuple):
    """One side's arrays (E, K) that the sampling kernel fills."""

    scenes: np.ndarray  #: int64 scene ids
    labels: np.ndarray  #: int8 0/1
    source: np.ndarray  #: int32 the alternative a hard negative came from (-1: none)
    topup: np.ndarray  #: bool a hard negative topped up at random
    relabelled: np.ndarray  #: bool an easy negative that turned out positive


@numba.njit(parallel=True, cache=True)
def _sample_episodes(concepts, seeds, tables, rules, support_sets, query_sets):
    """Draw episode e's support and query sets for concept ``concepts[e]`` from its own random
    stream ``seeds[e]``: ``tables`` :class:`SamplerTables`, ``rules`` :class:`DrawRules`,
    ``support_sets``/``query_sets`` :class:`EpisodeSets` (filled).  The records are unpacked
    into locals first: the loop is the code the positional arguments gave."""
    sig, cum, scene_concepts, counts, classes, n_scenes, outside = tables
    n_pos, n_pos_q, hard_support, hard_query, union, union_scan, union_explicit, easy_in_domain, scan_batch = rules
    s_scenes, s_labels, s_source, s_topup, s_relabelled = support_sets
    q_scenes, q_labels, q_source, q_topup, q_relabelled = query_sets
    n_concepts = counts.shape[0]
    hw = scene_concepts[0].shape[1]
    for e in numba.prange(concepts.shape[0]):
        state = np.empty(1, np.uint64)
        state[0] = seeds[e]
        h = concepts[e]
        taken = np.empty(s_scenes.shape[1] + q_scenes.shape[1], np.int64)
        alts = np.empty(n_concepts, np.int64)
        alt_mask = np.zeros(hw, np.uint64)
        alt_cum = np.empty(n_concepts, np.int64)
        nb = max(scan_batch, 1)
        batch = (np.empty(nb, np.int64), np.empty(nb, np.uint64), np.empty(nb, np.int64), np.empty(nb, np.int64),
                 np.empty(1, np.uint64))
        buffers = (np.empty(hw, np.uint64), np.empty(hw, np.uint64), np.empty(BLOCK, np.uint64),
                   np.empty(1, np.uint64), np.empty(hw, np.int64), batch)
        n_taken = 0
        while n_taken < n_pos + n_pos_q:  # n_pos + n_pos_q distinct positives
            s = _select(sig, h, cum[h], next_below(state, counts[h]), buffers[2])
            if not _used(s, taken, n_taken):
                taken[n_taken] = s
                n_taken += 1
        support_pos = taken[:n_pos].copy()
        query_pos = taken[n_pos: n_pos + n_pos_q].copy()
        n_taken = _fill_negatives(h, support_pos, hard_support, sig, cum, scene_concepts, counts, classes,
                                  n_scenes, state, s_scenes[e], s_labels[e], s_source[e], s_topup[e],
                                  s_relabelled[e], taken, n_taken, alts, union, union_scan, alt_mask, alt_cum,
                                  buffers, union_explicit, outside, easy_in_domain, scan_batch)
        _fill_negatives(h, query_pos, hard_query, sig, cum, scene_concepts, counts, classes, n_scenes, state,
                        q_scenes[e], q_labels[e], q_source[e], q_topup[e], q_relabelled[e], taken, n_taken, alts,
                        union, union_scan, alt_mask, alt_cum, buffers, union_explicit, outside, easy_in_domain,
                        scan_batch)


class EpisodeSampler:
    """Draws episodes from a space; holds the per-space indexes (per-scene concept bitsets,
    block counts) so that many batches reuse them."""

    def __init__(self, space):
        self.space = space
        self.signatures = rows_for_random_reads(space.signatures)
        self.cum = signature_block_counts(space) if BLOCK == 64 else block_counts(np.asarray(space.signatures), BLOCK)
        self.scene_concepts = rows_for_random_reads(space.scene_concepts())

    def release_pages(self):
        """Drop the pages of the row files this sampler read through their mappings from the
        process's resident set (:meth:`~bayes_concepts.engine.rows.RowFile.release`)."""
        for rows in (self.signatures, self.scene_concepts):
            if isinstance(rows, RowFile):
                rows.release()

    def sample(self, concept_ids, n: int, negatives: str = "hard", *, query_negatives: str | None = None,
               seed: int = 0, n_positive: int = 5, n_negative: int = 20, beta: float = 0.2,
               hard_mode: str = "union", meta: dict | None = None, part: tuple | None = None,
               n_query_positive: int | None = None, n_query_negative: int | None = None) -> Episodes:
        """Draw ``n`` episodes whose concepts come from ``concept_ids`` (weights exp(-beta·l)).

        The support set holds ``n_positive`` + ``n_negative`` scenes (K), the query set
        ``n_query_positive`` + ``n_query_negative`` (Kq; None: as the support's): see
        :class:`EpisodeShape`.  Concepts with fewer than ``n_positive + n_query_positive``
        scenes are never drawn; ``meta["excluded"]`` counts them (:func:`episode_exclusions`).

        part: ``(lo, hi)`` draws only episodes ``lo:hi`` of the ``n``, exactly as the whole draw
        would (each episode has its own random stream), so that chunks of one batch can be drawn
        apart -- in other processes -- and concatenated.

        hard_mode: ``union`` (default: each hard negative uniformly from the scenes outside ext(h)
        on which some consistent alternative is true) or ``alternative`` (an alternative
        uniformly, then one of its scenes outside ext(h): specific alternatives get as many
        negatives as broad ones, which makes the weak oracle's job much harder)."""
        mode = hard_negative_modes.get(hard_mode)
        if negatives not in ("hard", "easy"):
            raise EpisodeError(f"negatives must be 'hard' or 'easy', got {negatives!r}")
        if query_negatives not in (None, "hard", "easy", "random"):
            raise EpisodeError(f"query_negatives must be 'hard', 'easy' or 'random', got {query_negatives!r}")
        whole_number("n", n, 0, error=EpisodeError, note=" (episodes to draw)")
        drawn = n if part is None else max(0, min(int(part[1]), n) - int(part[0]))
        check_memory(episodes_bytes(drawn, n_positive + n_negative, n_positive + n_negative), f"n {n:,}",
                     "draw fewer episodes", f"{drawn:,} episodes")
        space = self.space
        shape = EpisodeShape(n_positive, n_negative, n_query_positive, n_query_negative)
        n_positive, n_negative = shape.positives, shape.negatives
        ids = np.asarray(concept_ids, np.int64)
        usable = ids[space.counts[ids] >= shape.needed] if len(ids) else ids
        if space.has_domains and len(usable):  # negatives come from the domain minus the extension
            negatives_left = space.domain_counts()[usable] - space.counts[usable]
            usable = usable[negatives_left >= shape.negatives + shape.query_negatives]
            if len(usable) == 0:
                raise EpisodeError(f"no concept on this side has {shape.negatives + shape.query_negatives} or more "
                                   "scenes in its domain outside its extension (the scenes its question is asked "
                                   "about and answered no), which its support and query negatives need")
        if len(usable) == 0:
            raise EpisodeError(f"no concept on this side has {shape.needed} or more positive scenes "
                               f"({len(ids)} concept{'s' * (len(ids) != 1)} on the side); episodes need "
                               f"{shape.positives} support and "
                               f"{shape.query_positives} query positives")
        if shape.support_size + shape.query_size > space.n_scenes:
            raise EpisodeError(f"the scene bank ({space.n_scenes} scenes) is too small for sets of "
                               f"{shape.support_size} and {shape.query_size} scenes")
        rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(1)[0])
        w = np.exp(-beta * space.lengths[usable].astype(np.float64))
        concepts = rng.choice(usable, size=n, p=w / w.sum()).astype(np.int32)
        seeds = block_seeds(seed, n)
        lo, hi = (0, n) if part is None else (int(part[0]), int(part[1]))
        if not 0 <= lo <= hi <= n:
            raise ValueError(f"part must be a range (lo, hi) within 0..{n}, got {part!r}")
        concepts, seeds, n_all, n = concepts[lo:hi], seeds[lo:hi], n, hi - lo
        arrays = {}
        for side, k in (("support", shape.support_size), ("query", shape.query_size)):
            arrays[f"{side}_scenes"] = np.full((n, k), -1, np.int64)
            arrays[f"{side}_labels"] = np.zeros((n, k), np.int8)
            arrays[f"{side}_source"] = np.full((n, k), -1, np.int32)
            arrays[f"{side}_topup"] = np.zeros((n, k), bool)
            arrays[f"{side}_relabelled"] = np.zeros((n, k), bool)
        qn = query_negatives or negatives
        sets = [tuple(arrays[f"{side}_{f}"] for f in ("scenes", "labels", "source", "topup", "relabelled"))
                for side in ("support", "query")]
        if mode.draw is None:
            # what the kernel only reads, read-only whatever its source (bits.read_only): one compiled kernel
            tables = SamplerTables(row_source(self.signatures), read_only(self.cum), row_source(self.scene_concepts),
                                   read_only(space.counts), read_only(space.synonym_classes), int(space.n_scenes),
                                   tuple(read_only(a) for a in space.index.outside_rows()))
            rules = DrawRules(int(n_positive), int(shape.query_positives), negatives == "hard", qn == "hard",
                              bool(mode.kernel_union), float(UNION_SCAN), float(UNION_EXPLICIT),
                              bool(space.has_domains), int(SCAN_BATCH))
            _sample_episodes(concepts, seeds, tables, rules, EpisodeSets(*sets[0]), EpisodeSets(*sets[1]))
            check_reads(self.signatures, self.scene_concepts)
        else:
            self._sample_with(mode.draw, hard_mode, concepts, seeds, (n_positive, shape.query_positives),
                              (negatives == "hard", qn == "hard"), sets)
        info = dict(meta or {})
        info.update({"negatives": negatives, "query_negatives": qn, "hard_mode": hard_mode, "seed": int(seed),
                     "n": int(n_all), **({} if part is None else {"part": [lo, hi]}),
                     "n_positive": n_positive, "n_negative": n_negative,
                     "n_query_positive": shape.query_positives, "n_query_negative": shape.query_negatives,
                     "excluded": {k: v for k, v in episode_exclusions(space, ids, shape).items() if k != "rule"},
                     "beta": beta,
                     "space": space.manifest_sha256(),
                     "support_topup": int(arrays["support_topup"].sum()),
                     "query_topup": int(arrays["query_topup"].sum())})
        return Episodes(concept=concepts, **arrays, meta=info)


    def alternatives(self, concept: int, positives) -> np.ndarray:
        """int64 (m,): the concepts true on every scene of ``positives`` that are not synonyms of
        ``concept`` (the concepts hard negatives come from)."""
        common = np.bitwise_and.reduce(self.scene_concepts[np.asarray(positives, np.int64)], axis=0)
        ids = np.flatnonzero(unpack_bits(common, self.space.n_concepts))
        classes = np.asarray(self.space.synonym_classes)
        return ids[classes[ids] != classes[concept]].astype(np.int64)

    def _sample_with(self, draw, name, concepts, seeds, n_positives, hard_sets, sets):
        """Fill ``sets`` ((scenes, labels, source, topup, relabelled) of support and query) with a
        registered Python hard-negative mode ``draw``; one generator per episode.  ``n_positives``:
        (support, query) positives."""
        space = self.space
        for e, h in enumerate(concepts.tolist()):
            rng = np.random.default_rng(int(seeds[e]))
            truth = space.signature(h)
            # a space with question domains: every negative from the domain minus the extension
            domain = space.domain(h) if space.has_domains else None
            positives = rng.choice(np.flatnonzero(truth), size=sum(n_positives), replace=False)
            used = set(positives.tolist())
            for j, (scenes, labels, source, topup, relabelled) in enumerate(sets):
                n_positive = n_positives[j]
                n_neg = scenes.shape[1] - n_positive
                pos = positives[j * n_positives[0]: j * n_positives[0] + n_positive]
                scenes[e, :n_positive], labels[e, :n_positive] = pos, 1
                neg = []
                if hard_sets[j]:
                    got = np.asarray(draw(space, h, pos.copy(), self.alternatives(h, pos),
                                          np.array(sorted(used), np.int64), n_neg, rng), np.int64).ravel()
                    if (len(got) > n_neg or len(set(got.tolist())) != len(got) or (len(got) and (
                            got.min() < 0 or got.max() >= space.n_scenes or truth[got].any()
                            or used.intersection(got.tolist())
                            or (domain is not None and not domain[got].all())))):
                        raise EpisodeError(f"hard-negative mode {name!r} returned scenes that are not at most {n_neg} "
                                           "distinct unused scenes on which the concept is false"
                                           + (" in its domain" if domain is not None else ""))
                    neg = got.tolist()
                    used.update(neg)
                while len(neg) < n_neg:
                    s = int(rng.integers(space.n_scenes))
                    if s in used or ((hard_sets[j] or domain is not None) and truth[s]) or (
                            domain is not None and not domain[s]):
                        continue
                    i = n_positive + len(neg)
                    labels[e, i] = int(truth[s])
                    relabelled[e, i] = bool(truth[s])
                    topup[e, i] = hard_sets[j]
                    neg.append(s)
                    used.add(s)
                scenes[e, n_positive:] = neg


def sampler_for(space) -> EpisodeSampler:
    """The :class:`EpisodeSampler` of ``space``, made on first use and kept in the space's index."""
    return space.index.derived("episode_sampler", lambda: EpisodeSampler(space))


def is_episodes_file(path) -> bool:
    """Whether ``path`` is an episodes file this toolkit wrote (:meth:`Episodes.save`): a zip
    archive holding the episode arrays and ``meta``.  Reads the archive's table only."""
    import zipfile
    try:
        with zipfile.ZipFile(path) as z:
            names = set(z.namelist())
    except (OSError, zipfile.BadZipFile, ValueError):
        return False
    return all(f"{f}.npy" in names for f in (*ARRAY_FIELDS, "meta"))


def check_episodes_file(path, overwrite: bool = False, option: str | None = None):
    """Check, before any work, that an episodes file may be written at ``path`` (see
    :func:`bayes_concepts.output_files.check_target`); the target for :meth:`Episodes.save`."""
    from .output_files import check_target
    return check_target(path, ours=is_episodes_file, what="episodes file", overwrite=overwrite, option=option)


def sample_episodes(space, split, side: str = "test", negatives: str = "hard", n: int = 1000, *, seed: int = 0,
                    query_negatives: str | None = None, sampler: EpisodeSampler | None = None,
                    **kw) -> Episodes:
    """Draw ``n`` episodes for ``split``'s ``side`` (``train``/``val``/``test``).

    A by-set split (spec ``items = "by-set"``: :func:`bayes_concepts.splits.by_set`) draws them
    from the items of the set named ``side`` only (:func:`bayes_concepts.splits.side_space`:
    support, queries and the concepts' counts there); the scene ids are the space's own, and
    ``meta["items"]`` records the set, its items and the items left out."""
    ids = split.ids(side) if hasattr(split, "ids") else getattr(split, side)
    meta = {"split": getattr(split, "name", None), "side": side}
    if not by_set(split):
        sampler = sampler or EpisodeSampler(space)
        return sampler.sample(ids, n, negatives, query_negatives=query_negatives, seed=seed, meta=meta, **kw)
    items = side_items(space, split, side)
    bank = side_space(space, split, side)
    eps = sampler_for(bank).sample(ids, n, negatives, query_negatives=query_negatives, seed=seed, meta=meta, **kw)
    eps.support_scenes = items[eps.support_scenes]
    eps.query_scenes = items[eps.query_scenes]
    eps.meta["space"] = space.manifest_sha256()
    eps.meta["items"] = dict(bank.params["item_subset"])
    return eps


def episode_shapes(space, splits: dict, episode_shape=None, skip_undrawable: bool = False) -> tuple:
    """``(shapes, excluded)`` of a gap run: split name -> its episode shape (a dict of
    :class:`~bayes_concepts.episodes.EpisodeShape` fields: ``episode_shape`` when given, else
    the split spec's ``[episodes]`` table, else 5+20 each), and an exclusion record
    ``{"space": {kind: {...}}, "space_notes": {kind: {...}}, "<split>": {"too_small": {...}}}``:
    what the space's build left out (a pair space's ``params["excluded"]``), what it noted (a
    pair space's ``params["layout_notes"]``: e.g. attributes ``seen_attrs.txt`` lists that no
    seen pair uses) and each split's test concepts too small for its shape.  A by-set split
    (``items = "by-set"``) counts its test concepts' items in the test set, where its test
    episodes are drawn (:func:`bayes_concepts.splits.side_space`); a space that records its
    items' sets adds ``space_notes["items_by_set"]`` (:func:`by_set_note`): the items of other
    sets that by-set splits leave out of their test episodes and test bank.  Query sets of
    different sizes across splits are a one-line error, and so is a split with test concepts
    none of which has the scenes an episode needs (:class:`EpisodeError` naming the split,
    the counts and the fix: :func:`drawable_fix`), before any episode is drawn.

    skip_undrawable: a split none of whose test concepts can be an episode's concept is not an
    error but left out of ``shapes`` (it is not scored) and counted in
    ``excluded["not_scored"]`` (split name -> ``{"test", "needed", "negatives_needed",
    "reason"}``), as a protocol's run of all its splits does (one family with no usable concept
    does not stop the others); when every split is such, the first one's error is raised."""
    given = None if episode_shape is None else EpisodeShape.parse(episode_shape)
    shapes, excluded, undrawable = {}, {}, []
    built = (space.params or {}).get("excluded")
    if built:
        excluded["space"] = built
    noted = (space.params or {}).get("layout_notes")
    if noted:
        excluded["space_notes"] = noted
    for name, split in splits.items():
        spec = getattr(split, "spec", None) or {}
        shape = given or EpisodeShape.parse(spec.get("episodes"), f"split {name}: [episodes]")
        bank = side_space(space, split, "test")  # a by-set split's test episodes: the test-set items
        ex = episode_exclusions(bank, split.test, shape,
                                what=None if bank is space else f"test-set {_scene_word(space)}")
        if len(split.test) and not ex["usable"]:
            error = _undrawable_error(name, bank, space, split.test, shape, ex)
            if not skip_undrawable:
                raise error
            undrawable.append(error)
            excluded.setdefault("not_scored", {})[name] = {
                "test": int(len(split.test)), "needed": int(shape.needed),
                "negatives_needed": ex.get("negatives_needed"),
                "reason": str(error).removeprefix(f"split {name}: ")}
            continue
        shapes[name] = shape.as_dict()
        excluded[name] = {"too_small": {k: ex[k] for k in ("count", "first", "rule")}, "usable": ex["usable"]}
    if undrawable and not shapes:
        raise undrawable[0]
    if item_sets(space) is not None and "test" in item_sets(space)[0]:  # the same for every by-set split
        excluded["space_notes"] = {**excluded.get("space_notes", {}), "items_by_set": by_set_note(space)}
    sizes = {s["query_positives"] + s["query_negatives"] for s in shapes.values()}
    if len(sizes) > 1:
        raise BayesConceptsError("the splits' episode shapes give query sets of different sizes ("
                                 + ", ".join(f"{n}: {s['query_positives'] + s['query_negatives']}"
                                             for n, s in shapes.items())
                                 + "): score them in separate runs, or give one --episode-shape")
    return shapes, excluded


def _undrawable_error(name, bank, space, test_ids, shape, ex) -> EpisodeError:
    """The one-line error of split ``name`` none of whose test concepts can be an episode's
    concept: too few positives (and the fix, :func:`drawable_fix`), or -- every test concept
    having the positives -- too few negatives in its question's domain."""
    unit = ("test-set " if bank is not space else "") + _scene_word(space)
    counts = np.asarray(bank.counts)[np.asarray(test_ids, np.int64)]
    if "negatives_needed" in ex and (counts >= shape.needed).any():
        room = (bank.domain_counts() - np.asarray(bank.counts))[np.asarray(test_ids, np.int64)][
            counts >= shape.needed]
        return EpisodeError(
            f"split {name}: none of its {len(test_ids):,} test concepts has both {shape.needed} or more {unit} "
            f"({shape.positives} support + {shape.query_positives} query positives) and {ex['negatives_needed']} or "
            f"more {unit} in its domain outside its extension ({shape.negatives} support + {shape.query_negatives} "
            f"query negatives; the most is {int(room.max())}), so no episode can be drawn: give a smaller "
            f"--episode-shape, or build the space with more --scenes")
    return EpisodeError(
        f"split {name}: none of its {len(test_ids):,} test concepts has {shape.needed} or more {unit} "
        f"({shape.positives} support + {shape.query_positives} query positives), so no episode can be "
        f"drawn: {drawable_fix(bank, test_ids, shape.needed)}")


def by_set_note(space) -> dict:
    """What the by-set splits of a space that records its items' sets leave out of their test
    episodes and test bank (:func:`bayes_concepts.splits.side_space`): ``{"count", "first",
    "by_set", "rule"}``, the items of the other sets, counted per set."""
    names, codes = item_sets(space)
    test = names.index("test")
    n_test = int((codes == test).sum())
    per = [f"{s} {int((codes == k).sum()):,}" for k, s in enumerate(names) if k != test and (codes == k).any()]
    return {"count": int(len(codes) - n_test), "first": per, "by_set": True,
            "rule": f"their test episodes (support and queries) and test bank are drawn from the {n_test:,} test-set "
                    "items only, and the oracles' size likelihood counts |ext h| there (CZSL's generalised "
                    "setting: seen pairs' test-set items are hard negatives and distractors); pair-level splits use "
                    "every item"}


def drawable_fix(space, test_ids, needed: int) -> str:
    """How to make a split's test concepts that are too small (``test_ids``, fewer than
    ``needed`` scenes: support + query positives) drawable: with synthetic items (a pair space
    built with ``--items-per-pair``), more items per pair; in any case a smaller
    ``--episode-shape`` (its positives within the largest of them)."""
    counts = np.asarray(space.counts)[np.asarray(test_ids, np.int64)] if len(test_ids) else np.zeros(0, int)
    unit = _scene_word(space)
    largest = int(counts.max()) if len(counts) else 0
    synthetic = str(((space.params or {}).get("sources") or {}).get("items", "")).startswith("synthetic")
    fixes = []
    if synthetic:
        fixes.append(f"rebuild with --items-per-pair >= {needed} (each pair has "
                     f"{largest if largest else 'no'} synthetic items now)")
    if largest >= 2:
        p = largest // 2
        fixes.append(f"give a smaller --episode-shape (support + query positives <= {largest}, the {unit} of the "
                     f"largest of them, e.g. --episode-shape {p},20,{largest - p},20)")
    elif not synthetic:
        fixes.append(f"no episode shape fits: the test concepts have fewer than 2 {unit} each")
    return "; or ".join(fixes)


def _scene_word(space) -> str:
    """What the space's scenes are called in messages: ``items`` in a pair space, else ``scenes``."""
    return "items" if (space.params or {}).get("kind") == "pairs" else "scenes"
