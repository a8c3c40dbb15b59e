"""The ladder's fixed-set rungs (memoriser, compound, atom, bounded_length, strong) against
brute-force twins, on the four kinds of space: CURI programs, relational (clevr) programs,
ConceptWorld and attribute-object pairs.

For random splits steered into corners (an empty or one-concept training side, every
concept in training, a concept whose atoms are all seen but one compound is not):

* each rung's concept set equals a twin written from the rung's definition in plain Python
  sets, with each concept's atoms and compounds read from its program, its parts or its
  ConceptWorld definition -- not through ``divergence.concept_structure``;
* the sets nest: memoriser ⊆ compound ⊆ atom ⊆ strong, and bounded_length is the train
  concepts plus every strong concept no longer than the longest of them;
* each rung's ``evaluate`` equals a per-episode Bayes twin: prior ∝ exp(−β·length), the size
  likelihood, the posterior over the rung's concepts, its predictive on the query and the
  test bank, AP by ``sklearn.metrics.average_precision_score`` (to 1e-9; where two
  test-bank scores are near-tied, so that rounding may order them either way, within the
  range AP takes over those orders; NaN where the concept has no test-bank positive, as the
  toolkit reports it).

Also: ConceptWorld's atoms and compounds (its definition graphs) on hand-checked concepts,
what the recombiners know in its four experiments, the structure's save/load round trip and
the one-line error of a space saved without it; ``check_rung``'s one-line refusals.
"""
from __future__ import annotations

import dataclasses
import math
import re
from collections import Counter
from pathlib import Path

import numpy as np
import oracle_reference as R
import pytest
from hypothesis import HealthCheck, event, given, settings, strategies as st
from sklearn.metrics import average_precision_score

from bayes_concepts.suites.conceptworld.definitions import load_definitions
from bayes_concepts.suites.conceptworld.space import conceptworld_space, experiment_splits
from bayes_concepts.divergence import concept_structure, nested_concepts
from bayes_concepts.episodes import sampler_for
from bayes_concepts.lot import Program
from bayes_concepts.oracles import OracleSettings
from bayes_concepts.suites.pairs import pair_space, read_pairs_layout
from bayes_concepts.rungs import Rung, RungError, check_rung, rung_learner, rungs
from bayes_concepts.spaces.concept_space import load_space
from bayes_concepts.spaces.extension_space import ExtensionSpaceError
from bayes_concepts.splits import Split

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "pairs"
RUNGS = ("memoriser", "compound", "atom", "bounded_length", "strong")
KINDS = ("curi", "clevr", "conceptworld", "pairs")
TOL = 1e-9
DEFS = load_definitions()


# ==================================================================== the spaces and twins
@pytest.fixture(scope="module")
def cw_space():
    return conceptworld_space(depth=7, per_concept=4, broken_per_concept=1, noise_scenes=10)


@pytest.fixture(scope="module")
def pairs_space():
    return pair_space(read_pairs_layout(FIXTURE / "items.tsv", FIXTURE))


def _edges(node, atom_of) -> set:
    out, stack = set(), [node]
    while stack:
        n = stack.pop()
        for k, c in enumerate(n.children):
            out.add(f"{atom_of(n)}({k}:{atom_of(c)})")
            stack.append(c)
    return out


def _relational_atom(node) -> str:
    """A node's atom with variable names renamed away: a binder as its operator, an object
    variable as VAR."""
    if node.kind == "binder":
        return node.op.split(":", 1)[0]
    if node.kind == "variable" and node.type == "OBJ":
        return "VAR"
    return node.op


def twin_types(space, kind: str) -> list:
    """Per concept: (set of atoms, set of compounds), read from its program, parts or
    ConceptWorld definition."""
    if kind == "curi":
        return [(set(text.split()), _edges(Program.parse(text, space.grammar).root, lambda n: n.op))
                for text in space.programs]
    if kind == "clevr":
        out = []
        for text in space.programs:
            root = Program.parse(text, space.grammar).root
            out.append(({_relational_atom(n) for n in root.walk()}, _edges(root, _relational_atom)))
        return out
    if kind == "pairs":
        return [(set(parts), {tuple(parts)} if len(parts) == 2 else set()) for parts in space.parts]
    out = []
    for name in space.descriptions:
        atoms, compounds = DEFS.graph(name)
        out.append((set(atoms), set(compounds)))
    return out


@pytest.fixture(scope="module")
def worlds(request, cw_space, pairs_space):
    """kind -> (space, twin types, dense signatures bool (H, N)); built on first use."""
    made = {}

    def get(kind):
        if kind not in made:
            space = {"curi": lambda: request.getfixturevalue("small_space"),
                     "clevr": lambda: request.getfixturevalue("clevr_space"),
                     "conceptworld": lambda: cw_space, "pairs": lambda: pairs_space}[kind]()
            dense = np.stack([np.asarray(space.signature(i), bool) for i in range(space.n_concepts)])
            made[kind] = (space, twin_types(space, kind), dense)
        return made[kind]
    return get


def twin_sets(space, types, split) -> dict:
    """Each rung's concept set from its definition, in Python sets."""
    train = {int(i) for i in split.train}
    strong_ids = getattr(split, "strong_concepts", None)
    strong = ({int(i) for i in strong_ids} if strong_ids is not None
              else train | {int(i) for i in split.test})
    seen_atoms = set().union(*(types[i][0] for i in train))
    seen_compounds = set().union(*(types[i][1] for i in train))
    atom = train | {c for c in strong if types[c][0] <= seen_atoms}
    compound = train | {c for c in strong if types[c][0] <= seen_atoms and types[c][1] <= seen_compounds}
    if train:
        cap = max(int(space.lengths[i]) for i in train)
        bounded = train | {c for c in strong if int(space.lengths[c]) <= cap}
    else:
        bounded = set()
    return {"memoriser": train, "compound": compound, "atom": atom, "bounded_length": bounded, "strong": strong}


# ======================================================================= random splits
def _split(n, train, test, val=(), strong_all=False) -> Split:
    split = Split("random", np.asarray(sorted(train), np.int64), np.asarray(sorted(val), np.int64),
                  np.asarray(sorted(test), np.int64), {}, None, "", n)
    if strong_all:  # as a protocol whose strong oracle knows every concept sets it
        split.strong_concepts = np.arange(n, dtype=np.int64)
    return split


def _atoms_seen_compound_not(types, rng, tries: int = 200):
    """(concept c, train ids) with every atom of c in some train concept and one compound of c
    in none, or None if none was found."""
    n = len(types)
    by_atom, by_compound = {}, {}
    for i, (atoms, comps) in enumerate(types):
        for a in atoms:
            by_atom.setdefault(a, set()).add(i)
        for x in comps:
            by_compound.setdefault(x, set()).add(i)
    for _ in range(tries):
        c = int(rng.integers(n))
        if not types[c][1]:
            continue
        x = sorted(types[c][1])[int(rng.integers(len(types[c][1])))]
        allowed = set(range(n)) - by_compound[x] - {c}
        train = set()
        for a in sorted(types[c][0]):
            options = sorted(by_atom[a] & allowed)
            if not options:
                break
            train.add(options[int(rng.integers(len(options)))])
        else:
            extra = sorted(allowed - train)
            train |= {int(i) for i in rng.choice(extra, size=min(len(extra), int(rng.integers(0, 6))),
                                                 replace=False)} if extra else set()
            return c, train
    return None


#: the corners a random split is steered into
MODES = ("random", "empty_train", "one_train", "all_train", "atoms_seen_compound_not")


def draw_split(data, kind: str, types, mode: str):
    """A random split of a space of ``kind`` in corner ``mode`` (one of :data:`MODES`);
    returns (split, a concept that must be in the atom set but not the compound set, or
    None)."""
    n = len(types)
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    strong_all = data.draw(st.booleans(), label="strong_all") if kind != "conceptworld" else True
    everything = set(range(n))
    if mode == "random":
        p = data.draw(st.sampled_from([(0.8, 0.15, 0.05), (0.4, 0.5, 0.1), (0.1, 0.8, 0.1)]), label="shares")
        side = rng.choice(3, size=n, p=p)
        return _split(n, np.flatnonzero(side == 0), np.flatnonzero(side == 1), np.flatnonzero(side == 2),
                      strong_all), None
    if mode == "empty_train":
        test = rng.choice(n, size=int(rng.integers(1, n + 1)), replace=False)
        return _split(n, [], test, strong_all=strong_all), None
    if mode == "one_train":
        t = int(rng.integers(n))
        rest = sorted(everything - {t})
        test = rng.choice(rest, size=int(rng.integers(0, len(rest) + 1)), replace=False)
        return _split(n, [t], test, strong_all=strong_all), None
    if mode == "all_train":
        return _split(n, range(n), [], strong_all=strong_all), None
    found = _atoms_seen_compound_not(types, rng)
    assert found is not None, "no concept whose atoms can be seen without one of its compounds"
    c, train = found
    rest = sorted(everything - train - {c})
    test = {c} | {int(i) for i in rng.choice(rest, size=min(len(rest), int(rng.integers(0, 20))), replace=False)}
    return _split(n, train, test, strong_all=strong_all), c


# ============================================================================ Bayes twin
_DOMAINS = {}


def dense_domains(space) -> np.ndarray:
    """bool (H, N): the scenes each concept's question is asked about (its domain; every scene
    for a concept without one), built once per space."""
    if id(space) not in _DOMAINS:
        _DOMAINS[id(space)] = (space, np.stack([np.asarray(space.domain(i), bool) for i in range(space.n_concepts)]))
    return _DOMAINS[id(space)][1]


def twin_episode(space, dense, omega, support, labels, query, concept, n_drawn: int, hard: bool,
                 beta: float = 0.2) -> dict:
    """One episode scored by enumeration: length prior, size likelihood, zero policy."""
    omega = np.asarray(sorted(omega), np.int64)
    test_ids = np.asarray(space.test_bank.scene_ids, np.int64)
    truth = dense[concept, test_ids]
    N, k = space.n_scenes, len(support)
    fits = (dense[omega][:, support] == labels.astype(bool)[None, :]).all(axis=1)  # labels every scene right
    fits &= dense_domains(space)[omega][:, support].all(axis=1)  # and could have produced each: in its domain
    logw = np.full(len(omega), -math.inf)
    for j in np.flatnonzero(fits).tolist():
        h = int(omega[j])
        size = int(dense[h].sum())
        ll = -n_drawn * math.log(size) - ((k - n_drawn) * math.log(N - size) if hard else 0.0)
        logw[j] = -beta * float(space.lengths[h]) + ll
    if not fits.any():  # the zero policy: every score 0
        q, t = np.zeros(len(query)), np.zeros(len(test_ids))
        ids, probs = omega[:0], np.zeros(0)
    else:
        ids = omega[fits]
        w = np.exp(logw[fits] - logw[fits].max())
        probs = w / w.sum()
        q = np.minimum(probs @ dense[ids][:, query], 1.0)
        t = np.minimum(probs @ dense[ids][:, test_ids], 1.0)
    keep = dense_domains(space)[concept, test_ids]  # the ranking is over the target's domain
    t, truth = t[keep], truth[keep]
    ap = float(average_precision_score(truth.astype(int), t)) if truth.any() else math.nan
    return {"ap": ap, "test_pred": t, "query_pred": q, "truth": truth, "empty": not fits.any(),
            "n_candidates": int(fits.sum()), "ids": ids, "probs": probs, "test_ids": test_ids[keep]}


def _ties_robust(dense, ids, test_ids, scores) -> bool:
    """Equal non-zero scores come from scenes covered by the same concepts (any implementation
    then sums the same terms and keeps the tie)."""
    cover = dense[np.asarray(ids, np.int64)][:, test_ids]
    first = {}
    for j, v in enumerate(np.asarray(scores).tolist()):
        if v and first.setdefault(v, cover[:, j].tobytes()) != cover[:, j].tobytes():
            return False
    return True


def check_evaluate(space, dense, learner, omega, episodes) -> int:
    """Asserts ``learner.evaluate(episodes)`` equals the twin; returns the episodes whose AP
    was compared exactly."""
    out = learner.evaluate(episodes)
    hard = episodes.meta["negatives"] == "hard"
    n_drawn = int(episodes.meta["n_positive"])
    exact = 0
    for e in range(len(episodes)):
        ref = twin_episode(space, dense, omega, episodes.support_scenes[e], episodes.support_labels[e],
                           episodes.query_scenes[e], int(episodes.concept[e]), n_drawn, hard)
        assert bool(out["empty"][e]) == ref["empty"]
        assert int(out["n_candidates"][e]) == ref["n_candidates"]
        np.testing.assert_allclose(out["query_pred"][e], ref["query_pred"], rtol=0, atol=TOL)
        if math.isnan(ref["ap"]):
            assert math.isnan(out["ap"][e])
        elif _ties_robust(dense, ref["ids"], ref["test_ids"], ref["test_pred"]) and R.ap_well_conditioned(
                ref["test_pred"]):
            assert out["ap"][e] == pytest.approx(ref["ap"], abs=TOL)
            exact += 1
        else:
            lo, hi = R.average_precision_bounds(ref["test_pred"], ref["truth"], split_ties=True)
            assert lo - TOL <= out["ap"][e] <= hi + TOL
    return exact


# ===================================================================== the property tests
SHAPES = {"conceptworld": dict(n_positive=2, n_negative=6)}  # its small space has concepts of 4 scenes
#: hypothesis examples per (kind, corner): the clevr space's recombiners cost ~1 s a split
EXAMPLES = {"curi": 4, "clevr": 2, "conceptworld": 4, "pairs": 4}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", KINDS)
def test_fixed_set_rungs_equal_their_twins(worlds, kind, mode):
    if mode == "empty_train" and kind == "conceptworld":
        pytest.skip("ConceptWorld's experiments always have training concepts")
    space, types, dense = worlds(kind)

    @settings(max_examples=EXAMPLES[kind], deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow])
    @given(data=st.data())
    def check(data):
        split, corner = draw_split(data, kind, types, mode)
        want = twin_sets(space, types, split)
        learners = {name: rung_learner(name, space, split, OracleSettings()) for name in RUNGS}
        got = {name: set(learners[name].concepts.tolist()) for name in RUNGS}
        for name in RUNGS:
            assert got[name] == want[name], name
            assert learners[name].name == name
        assert got["memoriser"] <= got["compound"] <= got["atom"] <= got["strong"]
        assert got["memoriser"] <= got["bounded_length"] <= got["strong"]
        if corner is not None:
            assert corner in got["atom"] and corner not in got["compound"]
        # evaluate: a few episodes of the strong oracle's concepts
        pool = np.asarray(sorted(want["strong"]), np.int64)
        shape = SHAPES.get(kind, {})
        pool = pool[np.asarray(space.counts)[pool] >= 2 * shape.get("n_positive", 5)] if len(pool) else pool
        if not len(pool):
            return
        negatives = data.draw(st.sampled_from(["hard", "easy"]), label="negatives")
        episodes = sampler_for(space).sample(pool, 4, negatives, seed=data.draw(st.integers(0, 10**6)), **shape)
        exact = sum(check_evaluate(space, dense, learners[name], want[name], episodes) for name in RUNGS)
        assert exact >= len(RUNGS) * len(episodes) // 2  # most APs are compared to 1e-9
        event(f"episodes scored ({negatives} negatives)")
    check()


def test_the_conceptworld_experiments_split_as_the_experiments_do(worlds):
    """The same checks on the experiments' own splits (every concept in the strong oracle)."""
    space, types, dense = worlds("conceptworld")
    from bayes_concepts.suites.conceptworld.space import load_experiments
    for experiment in load_experiments():
        for split in experiment_splits(space, experiment).values():
            want = twin_sets(space, types, split)
            for name in RUNGS:
                assert set(rung_learner(name, space, split).concepts.tolist()) == want[name], (experiment, name)


# ============================================================== ConceptWorld's recombiners
def test_a_square_is_four_unit_point_relations():
    atoms, compounds = DEFS.graph("square")
    assert Counter(atoms) == Counter(["east_point1", "south_point1", "west_point1", "north_point1"])
    assert Counter(compounds) == Counter(["exists(square)", "square(0,1:east_point1)", "square(1,2:south_point1)",
                                          "square(2,3:west_point1)", "square(3,0:north_point1)"])


@pytest.mark.parametrize("n", [2, 3, 7])
def test_a_longer_chain_repeats_the_edges_of_a_chain_of_two(n):
    atoms, compounds = DEFS.graph(f"red_seq {n}")
    two = DEFS.graph("red_seq 2")
    assert set(compounds) == set(two[1]) and set(atoms) == set(two[0])
    c = Counter(compounds)
    assert c["chain(link:east1)"] == n - 1 and c["chain(of:red_square)"] == n
    assert c["red_square(solid_square)"] == n and c["red_square(red)"] == n and c["east1(east_point1)"] == n - 1
    # one element, no link: a chain of one has fewer edge types
    assert "chain(link:east1)" not in DEFS.graph("red_seq 1")[1]
    # every kind must occur: its own slot
    assert Counter(DEFS.graph(f"mixed_seq {n}")[1])["chain(each:blue_square)"] == n


def test_exists_ties_a_relation_to_the_objects_of_its_arguments():
    _, compounds = DEFS.graph("f_pent_west_z_pent")
    assert {"exists(z_pent)", "exists(f_pent)", "exists(west)", "west(west_point)", "west(0:z_pent)",
            "west(1:f_pent)"} <= set(compounds)


def test_patterns_differ_by_which_part_has_which_colour():
    checker = {x for x in DEFS.graph("checkerboard_2x2")[1] if x.endswith(("red)", "blue)"))}
    stripes = {x for x in DEFS.graph("stripes_2x2")[1] if x.endswith(("red)", "blue)"))}
    assert checker == {"checkerboard_2x2(0:red)", "checkerboard_2x2(1:blue)", "checkerboard_2x2(2:red)",
                       "checkerboard_2x2(3:blue)"}
    assert stripes == {"stripes_2x2(0:red)", "stripes_2x2(1:blue)", "stripes_2x2(2:blue)", "stripes_2x2(3:red)"}
    big = Counter(DEFS.graph("checkerboard_4x4")[1])
    # four declared 2x2 parts; square_of_squares is called on them, so they are not declared again
    assert [big[f"checkerboard_4x4({k}:solid_square)"] for k in range(4)] == [1, 1, 1, 1]
    assert big["checkerboard_4x4(0,1,2,3:square_of_squares)"] == 1
    assert big["solid_square(0,1:east_point1_same_color)"] == 4
    assert big["square_of_squares(0.1,1.0:east_point1)"] == 1  # A.p2 -> B.p1


def test_box_world_and_any_concepts():
    c = Counter(DEFS.graph("solution 3")[1])
    assert (c["boxworld_solution(piece:solid_square)"], c["boxworld_solution(gem:white)"],
            c["boxworld_solution(locks:east1)"], c["boxworld_solution(opens:same_color)"]) == (7, 1, 3, 3)
    assert "white" in DEFS.graph("distractor 1")[0]
    any_c = Counter(DEFS.graph("mixed_pair_sub1 2")[1])
    assert any_c["any(chain)"] == 2 and any_c["chain(each:f_pent)"] == 2 and any_c["chain(each:z_pent)"] == 2


def test_the_atoms_are_the_leaf_definitions():
    """Every atom is a definition whose body calls no other definition."""
    leaves = {name for t in ("point", "color", "relation") for name, body in DEFS.tables[t].items()
              if not set(re.findall(r"(\w+)\s*\(", body)) - {"all", "any"}}
    used = set().union(*(DEFS.graph(c.name)[0] for c in DEFS.instances(7)))
    assert used <= leaves and {"east_point1", "same_color_point", "red", "blue", "white"} <= used


def _names(space, ids) -> set:
    return {space.descriptions[i] for i in ids}


def test_what_the_recombiners_know_in_the_four_experiments(cw_space):
    s = cw_space
    st_ = concept_structure(s)
    prod = nested_concepts(s, experiment_splits(s, "productivity")["length_7"], structure=st_)
    assert {"red_seq 7", "blue_seq 5", "mixed_seq 7"} <= _names(s, prod["compound"])  # seen edges, repeated
    box = nested_concepts(s, experiment_splits(s, "boxworld")["length_5"], structure=st_)
    assert {"solution 5", "distractor 5"} <= _names(s, box["compound"])
    scaling = experiment_splits(s, "scaling")["2x2_to_4x4"]
    sc = nested_concepts(s, scaling, structure=st_)
    assert not np.isin(scaling.test, sc["compound"]).any() and np.isin(scaling.test, sc["atom"]).all()
    for split in experiment_splits(s, "substitution").values():  # a pentomino in a chain: a new edge
        sub = nested_concepts(s, split, structure=st_)
        assert not np.isin(split.test, sub["compound"]).any() and np.isin(split.test, sub["atom"]).all()


def test_the_structure_survives_save_and_load(cw_space, tmp_path):
    copy = dataclasses.replace(cw_space)
    copy.save(tmp_path / "cw")
    back = load_space(tmp_path / "cw")
    a, b = concept_structure(cw_space), concept_structure(back)
    assert a.atom_names == b.atom_names and a.compound_names == b.compound_names
    assert (a.atoms != b.atoms).nnz == 0 and (a.compounds != b.compounds).nnz == 0
    for i in (0, cw_space.find("red_seq 3"), cw_space.find("solution 2")):
        atoms, compounds = back.atoms_and_compounds(i)
        assert Counter(atoms) == Counter(DEFS.graph(cw_space.descriptions[i])[0])
        assert Counter(compounds) == Counter(DEFS.graph(cw_space.descriptions[i])[1])


def test_a_conceptworld_space_without_the_structure_asks_for_a_rebuild(cw_space, tmp_path):
    old = dataclasses.replace(cw_space, params={k: v for k, v in cw_space.params.items() if k != "structure"})
    old.save(tmp_path / "old")
    back = load_space(tmp_path / "old")  # it still loads, and runs what needs no atoms
    split = experiment_splits(back, "productivity")["length_3"]
    assert set(rung_learner("memoriser", back, split).concepts.tolist()) == set(split.train.tolist())
    with pytest.raises(ExtensionSpaceError, match="rebuild it") as err:
        rung_learner("compound", back, split)
    assert len(str(err.value).splitlines()) == 1
    damaged = dataclasses.replace(cw_space, params={**cw_space.params, "structure": {"square": {"atoms": {"x": 0}}}})
    with pytest.raises(ExtensionSpaceError, match="square") as err:
        damaged.atoms_and_compounds(0)
    assert len(str(err.value).splitlines()) == 1


# ==================================================================== check_rung refusals
def test_check_rung_refuses_an_unknown_name_and_a_bad_knob_in_one_line(small_space):
    split = _split(small_space.n_concepts, range(10), range(10, 20))
    cases = [lambda: check_rung("no_such_rung"), lambda: check_rung("compound", knobs={"alpha": 1.0}),
             lambda: rung_learner("bounded_length", small_space, split, n=3),
             lambda: rung_learner("no_such_rung", small_space, split)]
    rungs.register("_test_knobbed", Rung("_test_knobbed", "a test rung", "knows nothing",
                                         lambda space, split, settings, size: None, knobs={"size": (1, "a size")},
                                         check_knob=lambda k, v: None if v >= 1 else "must be >= 1"))
    try:
        cases.append(lambda: check_rung("_test_knobbed", knobs={"size": 0}))
        messages = []
        for case in cases:
            with pytest.raises(RungError) as err:
                case()
            messages.append(str(err.value))
        assert all(len(m.splitlines()) == 1 for m in messages)
        assert "no_such_rung" in messages[0] and "memoriser" in messages[0]
        assert "takes no knobs" in messages[1] and "'alpha'" in messages[1]
        assert "'n'" in messages[2]
        assert "size must be >= 1" in messages[4]
        assert check_rung("_test_knobbed", knobs={"size": 2}).name == "_test_knobbed"
    finally:
        rungs.unregister("_test_knobbed")


def test_a_definition_that_uses_itself_is_a_one_line_error(tmp_path):
    p = tmp_path / "loop.toml"
    p.write_text('[point]\ne1 = "b.x == a.x + 1 and b.y == a.y"\nloop = "loop(a, b) or e1(a, b)"\n'
                 '[object.dot2]\nparts = ["p1", "p2"]\nwhere = "e1(p1, p2)"\n'
                 '[relation]\nr = "any(loop(x, y) for x in X for y in Y)"\n'
                 '[concept.pair]\nexists = "dot2(X) and dot2(Y) and r(X, Y)"\n')
    from bayes_concepts.suites.conceptworld.definitions import DefinitionsError
    with pytest.raises(DefinitionsError, match="'loop' uses itself") as err:
        load_definitions(p).graph("pair")
    assert len(str(err.value).splitlines()) == 1
