"""Splits of a hypothesis space into train / val / test concepts.

A :class:`Split` assigns every concept of a :class:`~bayes_concepts.spaces.hypothesis_space.HypothesisSpace`
to sides ``train``, ``val`` and ``test`` (sorted ``int64`` arrays of concept ids).  CURI's nine
splits (Instance IID, Concept IID, Counting, Extrinsic, Intrinsic, Boolean, Binding (colour),
Binding (shape), Complexity; seed paper Appendix C) are declared as data, one TOML file per
split in ``hypotheses/splits/<name>.toml``; nothing about them is written in this module.
New splits are another spec file, or a Python predicate (:func:`split_from_predicate`).

>>> space = HypothesisSpace.build("demo")                       # doctest: +SKIP
>>> splits = curi_splits(space)                                  # doctest: +SKIP
>>> print(splits_table(space, splits))                           # doctest: +SKIP
>>> make_split(space, "my_split.toml").test                      # doctest: +SKIP

Spec format
===========

A spec file is TOML (read with :mod:`tomllib`).  Top-level keys:

``name``           the split's name (letters, digits, ``_ . -``); default: the file name without ``.toml``.
``description``    free text (default ``""``).
``kind``           ``"all"``, ``"random"`` or ``"held_out"`` (required).

``kind = "all"`` -- Instance IID: ``train == test ==`` every concept.  ``val`` is empty unless
``val_fraction`` > 0, in which case it is a seeded subset (``val_seed``) of the concepts, which
stay in train and test too.  ::

    name = "instance_iid"
    kind = "all"

``kind = "random"`` -- Concept IID: whole synonym classes (concepts with identical signatures)
are shuffled with ``seed`` (default 0) and dealt to the sides in the proportions
``fractions`` (required; ``train``, ``val``, ``test`` in [0, 1], missing ones 0, summing to 1;
train and test > 0).  ``synonym_aware`` (default **true** for this kind) = false deals single
concepts instead of classes.  ::

    name = "concept_iid"
    kind = "random"
    fractions = {train = 0.80, val = 0.05, test = 0.15}
    seed = 0

``kind = "held_out"`` -- rule-based (the structured splits).  A ``[held_out]`` table holds any
of the rules below; a concept matching **any** rule is *held out*, every other concept is train.

``tokens = ["cylinder"]``
    the concept's program uses any of these tokens.
``pairs = [["green", "or"], ["purple", "and"]]``
    the program uses both tokens of some pair (the two tokens must differ).
``pairs_require_any = ["material?"]``
    (only with ``pairs``) a pair counts only if the program also uses one of these tokens --
    CURI's "related to material" / "related to location" condition.
``counts = [{value = "green", number = 3}]``
    the program has a ``count=`` node whose counted value is the constant ``value``, compared
    with ``=`` or ``>`` (either operand order) against the integer constant ``number``.
``min_length = 11``
    the program has at least this many tokens (>= 1).
``programs = ["x color? red = exists="]``
    these programs (postfix; each must parse and be a concept of the space; an x-free
    program given with its quantifier is matched in its collapsed form; in a relational
    language a program that differs from a concept only in the names of its bound variables
    is that concept: :func:`find_alpha_equivalent`).

Tokens are matched against the tokens of the concept's canonical postfix string -- the form in
``space.programs``, whose x-free programs have lost their final quantifier -- whatever role the
token plays there.  So ``"1"`` matches a location 1 and the number 1 alike (CURI's token
heuristic, kept on purpose).  Every token must be a token of the space's grammar (operator,
variable, property, value, relation) or an integer.  In a relational language a binder is
written with its variable (``filter:y``): a rule naming the binder alone (``"filter"``,
``"exists"``, ``"forall"``) matches it over any variable, one naming ``"filter:y"`` only
over ``y``.  ``counts`` reads CURI's ``count=`` comparisons; a grammar without ``count=``
(CLEVR's counts a set with ``count``) has none, and the rule is an error there: hold out
``count`` with ``tokens`` or ``pairs`` instead.

Further keys of a held-out split: ``synonym_aware`` (default false, as in CURI's structured
splits): when true, a synonym class with one held-out member is held out whole, so no train
concept shares a signature with a held-out one.  ``val_fraction`` (default 0.1, in [0, 1)) and
``val_seed`` (default 0): that fraction of the held-out concepts (whole classes when
``synonym_aware``) is drawn, seeded, as ``val``; the rest is ``test``.  ::

    name = "intrinsic"
    description = "colour x material combinations never seen in training"
    kind = "held_out"
    synonym_aware = false
    val_fraction = 0.1
    val_seed = 0

    [held_out]
    pairs = [["green", "metal"], ["purple", "rubber"], ["cyan", "rubber"],
             ["red", "metal"], ["green", "rubber"]]
    pairs_require_any = ["material?"]

Items by set (image-level splits)
=================================

Any kind may say ``items = "by-set"``: each side's episodes are drawn from the items of the
set named as the side -- train-side episodes from the train set, test episodes (support and
queries) and the test bank from the test set -- and the oracles' size likelihood counts
|ext h| there (:func:`side_space`).  The concepts of each side are those of the rules above.
It needs a space that records each item's set (a pair space built with ``space from-pairs
--image-level``; anything else is an error naming the line); ``items = "all"``, the default,
draws from every item.  ::

    name = "unseen_pairs_by_set"
    kind = "held_out"
    items = "by-set"

    [held_out]
    programs = ["wet car", "dry cat"]

Errors
======

Bad specs raise :class:`SplitSpecError` with a one-line message ``FILE line N: what was wrong``:
TOML syntax errors, unknown keys, wrong value types, keys that do not apply to the ``kind``
(e.g. a ``[held_out]`` table in a random split), fractions not summing to 1, ``min_length`` < 1,
a pair of identical tokens, ``val_fraction`` outside [0, 1), unknown tokens, explicit programs
that do not parse or are not concepts of the space, and rules that hold out no concept (or
every concept).  Checks that need the space (tokens, programs, emptiness) run in
:func:`make_split`; :func:`load_spec` checks the rest (and tokens, if given a grammar).
"""
from .split import Split, SplitSpecError
from .spec import (SplitRule, SplitRuleError, alpha_normal_tokens, default_splits_dir, find_alpha_equivalent,
                   load_spec, split_rules)
from .make import (ITEM_SETS, by_set, encode_item_sets, item_sets, side_items, side_space, curi_splits, domain_independent_specs, is_curi_grammar, load_splits, make_split, make_splits, space_splits,
                   spec_files, split_from_predicate, split_stats, splits_json, splits_table)

__all__ = ["Split", "SplitSpecError", "load_spec", "make_split", "make_splits", "curi_splits", "load_splits", "space_splits",
           "domain_independent_specs",
           "find_alpha_equivalent", "alpha_normal_tokens",
           "is_curi_grammar", "split_rules", "SplitRule", "SplitRuleError", "spec_files",
           "default_splits_dir", "split_from_predicate", "split_stats", "splits_table", "splits_json",
           "ITEM_SETS", "by_set", "encode_item_sets", "item_sets", "side_items", "side_space"]
