"""Classify a space's synonym classes: logically equivalent programs, or programs that
coincide only on the space's scene bank?  (CURI Appendix B.6.)

A synonym class is a set of concepts with identical signatures on the space's scene
bank.  For every class with two or more members, :func:`classify_synonym_classes`

1. groups the members by their truth values on a fresh counterexample bank
   (:func:`~bayes_concepts.synonyms.counterexample_bank`): *check groups*; members in
   different check groups are certainly not equivalent;
2. groups them by proofs, level by level (:data:`~bayes_concepts.synonyms.LEVELS`): at
   each level the representatives of the previous level's groups are compared pairwise
   and the groups are the connected components of the proved pairs (pairs in different
   check groups cannot be equivalent and are not tried, unless ``verify``);
3. labels the class with the weakest level that proves all members equivalent, else
   ``empirical (refuted)`` when a check scene separates members (the scene is reported
   and re-checked with the reference interpreter), else ``not provable (signatures
   only)`` when some member uses an operator the prover does not reason about (the
   relational ones: see :mod:`~bayes_concepts.synonyms.prover`), else ``empirical
   (undecided)``.  The column ``unprovable`` counts such members of each class.
"""
from __future__ import annotations

import itertools
import json
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..engine import evaluate_programs
from ..engine.interpreter import evaluate
from ..scenes import pack_bits
from .counterexamples import counterexample_bank, separating_scene
from .prover import LEVELS, MAX_MINTERMS, EquivalenceProver, ExpansionTooLarge, SynonymError

#: level or outcome -> the status a class gets
STATUS = {"propositional": "propositional", "first-order": "first-order", "domain": "domain facts",
          "refuted": "empirical (refuted)", "undecided": "empirical (undecided)",
          "unprovable": "not provable (signatures only)"}
#: the statuses of classes of programs the prover reasons about (CURI's), strongest proof first
STATUS_ORDER = [STATUS[k] for k in ("propositional", "first-order", "domain", "refuted", "undecided")]
#: the status of a class with members the prover does not reason about (relational programs),
#: neither refuted nor proved: only such spaces have it, after :data:`STATUS_ORDER`
UNPROVABLE = STATUS["unprovable"]
#: columns of :attr:`SynonymClassification.classes`
CLASS_COLUMNS = ["class", "size", "status", "propositional", "first_order", "domain", "refuted", "refuted_multi_object",
                 "groups_propositional", "groups_first_order", "groups_domain", "groups_check_bank", "too_large",
                 "unprovable", "representative", "readable", "concepts", "count", "counterexample"]
#: columns of :attr:`SynonymClassification.members`
MEMBER_COLUMNS = ["concept", "class", "program", "readable", "length", "group_propositional", "group_first_order",
                  "group_domain", "group_check_bank", "provable"]


def first_occurrence_labels(keys) -> np.ndarray:
    """Label equal keys alike, labels numbered in order of first occurrence.

    Parameters
    ----------
    keys : array_like
        (n,) or (n, ...): row ``i`` is the key of item ``i``.

    Returns
    -------
    numpy.ndarray
        int64 (n,): ``labels[i] == labels[j]`` iff rows i and j are equal; item 0 has
        label 0 and each new key the next label.
    """
    keys = np.ascontiguousarray(keys)
    label_of: dict = {}
    return np.array([label_of.setdefault(row.tobytes(), len(label_of)) for row in keys], np.int64)


@dataclass(frozen=True)
class ProofGroups:
    """Members grouped by proofs, per level (:func:`proof_groups`).

    Attributes
    ----------
    labels : dict
        level -> int64 (n_members,): proof group per member, numbered in order of first
        member; each level merges the groups of the one before.
    too_large : int
        Comparisons given up (expansion larger than the prover's ``max_minterms``).
    violations : int
        Proofs of pairs that a check scene separates (a prover bug: must be 0).
    """

    labels: dict
    too_large: int
    violations: int

    def n_groups(self, level: str) -> int:
        """Number of proof groups at ``level``."""
        return int(self.labels[level].max()) + 1 if len(self.labels[level]) else 0


def proof_groups(programs, prover: EquivalenceProver, check_groups, verify: bool = False) -> ProofGroups:
    """Group programs by proofs of equivalence, level by level.

    Parameters
    ----------
    programs : sequence of str or Program
        The members of one synonym class.
    prover : EquivalenceProver
    check_groups : array_like
        int (n_members,): members with different labels differ on some scene, so cannot be
        equivalent.
    verify : bool
        Also try pairs in different check groups at the first-order and domain levels
        (the propositional level always tries every pair); a proof of such a pair is a
        violation.

    Returns
    -------
    ProofGroups
        At each level the groups are the connected components of the proved pairs
        between the previous level's group representatives (first members).
    """
    check = np.asarray(check_groups)
    labels = np.arange(len(programs), dtype=np.int64)
    by_level, too_large, violations = {}, 0, 0
    for level in LEVELS:
        reps = np.unique(labels, return_index=True)[1]
        component = np.arange(len(reps))
        for a, b in itertools.combinations(range(len(reps)), 2):
            differ = check[reps[a]] != check[reps[b]]
            if component[a] == component[b] or (differ and not verify and level != "propositional"):
                continue  # joined already (a proof could not change the components), or not equivalent
            try:
                proved = prover.equivalent(programs[reps[a]], programs[reps[b]], level)
            except ExpansionTooLarge:
                too_large += 1
                continue
            if proved and differ:
                violations += 1
            elif proved:
                component[component == component[b]] = component[a]
        labels = first_occurrence_labels(component[labels])
        by_level[level] = labels
    return ProofGroups(by_level, too_large, violations)


def class_status(groups: ProofGroups, n_check_groups: int, n_unprovable: int = 0) -> str:
    """The status of a class (one of :data:`STATUS_ORDER`, or :data:`UNPROVABLE`): the weakest level with a single
    proof group, else refuted when it has several check groups, else not provable when
    ``n_unprovable`` members use operators the prover does not reason about, else undecided."""
    for level in LEVELS:
        if groups.n_groups(level) == 1:
            return STATUS[level]
    if n_check_groups > 1:
        return STATUS["refuted"]
    return STATUS["unprovable"] if n_unprovable else STATUS["undecided"]


@dataclass(frozen=True)
class SynonymClassification:
    """The result of :func:`classify_synonym_classes`.

    Attributes
    ----------
    classes : pandas.DataFrame
        One row per synonym class with two or more members, columns
        :data:`CLASS_COLUMNS`: ``status``; whether it is proved whole at each level;
        ``unprovable``: members whose programs use operators the prover does not reason
        about (relational ones);
        ``refuted`` (some check scene separates members) and ``refuted_multi_object``
        (some check scene with at least the space's ``sample_min_objects`` objects
        does); the number of groups per level and on the check bank; ``too_large``;
        a representative program; the member ids (space-separated); its count on the
        space's bank; ``counterexample`` (JSON: ``scene``, the separated members
        ``first``/``second``, ``true_for``/``false_for``; empty when not refuted).
    members : pandas.DataFrame
        One row per member concept, columns :data:`MEMBER_COLUMNS`, with its group at each
        level and on the check bank, and whether the prover reasons about its program.
    violations : int
        Proofs contradicted by a check scene, or scenes on which the executor and the
        reference interpreter disagree: must be 0.
    check_scenes : int
        Size of the counterexample bank.
    prover : EquivalenceProver
        The prover used (its atom table serves displays such as ``prover.skeleton``).
    """

    classes: pd.DataFrame
    members: pd.DataFrame
    violations: int
    check_scenes: int
    prover: EquivalenceProver


def classify_synonym_classes(space, check_scenes: int = 200_000, seed: int = 0, max_minterms: int = MAX_MINTERMS,
                             progress: bool = False, verify: bool = False) -> SynonymClassification:
    """Classify every synonym class of ``space`` with two or more members.

    Parameters
    ----------
    space : HypothesisSpace
        Needs ``synonym_classes``, ``programs``, ``program(i)``, ``counts``, ``lengths``,
        ``grammar`` and ``schema``.
    check_scenes : int
        Scenes of the counterexample bank (≥ 1).
    seed : int
        Seed of the counterexample bank.
    max_minterms : int
        Give up a first-order/domain comparison beyond this many minterms.
    progress : bool
        Show a progress bar.
    verify : bool
        Also try to prove pairs that a check scene separates (a soundness check of the
        prover; slower): each such proof counts as a violation.

    Returns
    -------
    SynonymClassification
    """
    if check_scenes < 1:
        raise SynonymError(f"check_scenes must be >= 1, got {check_scenes}")
    from tqdm.auto import tqdm
    class_of = np.asarray(space.synonym_classes)
    class_ids, class_sizes = np.unique(class_of, return_counts=True)
    multi = class_ids[class_sizes >= 2]
    member_ids = np.flatnonzero(np.isin(class_of, multi))
    prover = EquivalenceProver(space.grammar, space.schema.max_objects, max_minterms)

    bank = counterexample_bank(space.schema, check_scenes, seed)
    signatures = evaluate_programs([space.programs[i] for i in member_ids], bank, space.grammar) \
        if len(member_ids) else np.zeros((0, bank.n_words), np.uint64)
    row_of = dict(zip(member_ids.tolist(), range(len(member_ids))))
    # scenes with at least as many objects as the space's sampler draws (CURI: 2)
    preferred = np.asarray(bank.n_objects) >= space.schema.sample_min_objects
    preferred_words = pack_bits(preferred)

    class_rows, member_rows, violations = [], [], 0
    for c in tqdm(multi.tolist(), disable=not progress, desc="synonym classes", leave=False):
        ids = np.flatnonzero(class_of == c).tolist()
        programs = [space.programs[i] for i in ids]
        class_signatures = signatures[[row_of[i] for i in ids]]
        check = first_occurrence_labels(class_signatures)
        n_check = int(check.max()) + 1
        n_check_preferred = int(first_occurrence_labels(class_signatures & preferred_words).max()) + 1
        provable = [prover.provable(p) for p in programs]
        groups = proof_groups(programs, prover, check, verify)
        violations += groups.violations
        counterexample = ""
        if n_check > 1:
            second, s = separating_scene(class_signatures, 0, bank.n_scenes, preferred)
            scene = bank.scene(s)
            truth = [evaluate(p, scene, space.grammar) for p in programs]
            violations += truth[0] == truth[second]  # the executor and the reference interpreter disagree
            counterexample = json.dumps({
                "scene": scene, "first": ids[0], "second": ids[second],
                "true_for": [i for i, t in zip(ids, truth) if t],
                "false_for": [i for i, t in zip(ids, truth) if not t]})
        n_groups = {level: groups.n_groups(level) for level in LEVELS}
        class_rows.append({
            "class": int(c), "size": len(ids), "status": class_status(groups, n_check, provable.count(False)),
            "propositional": n_groups["propositional"] == 1, "first_order": n_groups["first-order"] == 1,
            "domain": n_groups["domain"] == 1, "refuted": n_check > 1, "refuted_multi_object": n_check_preferred > 1,
            "groups_propositional": n_groups["propositional"], "groups_first_order": n_groups["first-order"],
            "groups_domain": n_groups["domain"], "groups_check_bank": n_check, "too_large": groups.too_large,
            "unprovable": provable.count(False), "representative": programs[0],
            "readable": space.program(ids[0]).readable,
            "concepts": " ".join(map(str, ids)), "count": int(space.counts[ids[0]]),
            "counterexample": counterexample})
        for j, i in enumerate(ids):
            member_rows.append({
                "concept": i, "class": int(c), "program": programs[j], "readable": space.program(i).readable,
                "length": int(space.lengths[i]), "group_propositional": int(groups.labels["propositional"][j]),
                "group_first_order": int(groups.labels["first-order"][j]),
                "group_domain": int(groups.labels["domain"][j]), "group_check_bank": int(check[j]),
                "provable": bool(provable[j])})
    classes = pd.DataFrame(class_rows, columns=CLASS_COLUMNS)
    members = pd.DataFrame(member_rows, columns=MEMBER_COLUMNS)
    return SynonymClassification(classes, members, int(violations), int(bank.n_scenes), prover)


def summarise_statuses(classes: pd.DataFrame) -> pd.DataFrame:
    """Classes and concepts per status.

    Parameters
    ----------
    classes : pandas.DataFrame
        :attr:`SynonymClassification.classes`.

    Returns
    -------
    pandas.DataFrame
        One row per status of :data:`STATUS_ORDER`, then one for :data:`UNPROVABLE` when some
        class has it (a space of relational programs), and a last row for all classes,
        columns ``status``, ``classes``, ``concepts``, ``share of classes %``, ``largest class``.
    """
    rows = []
    statuses = STATUS_ORDER + ([UNPROVABLE] if (classes.status == UNPROVABLE).any() else [])
    for status in statuses:
        d = classes[classes.status == status]
        rows.append({"status": status, "classes": len(d), "concepts": int(d["size"].sum()),
                     "share of classes %": 100 * len(d) / max(1, len(classes)),
                     "largest class": int(d["size"].max()) if len(d) else 0})
    rows.append({"status": "all classes with ≥ 2 members", "classes": len(classes),
                 "concepts": int(classes["size"].sum()) if len(classes) else 0, "share of classes %": 100.0,
                 "largest class": int(classes["size"].max()) if len(classes) else 0})
    return pd.DataFrame(rows)
