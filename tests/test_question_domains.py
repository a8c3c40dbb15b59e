"""Question domains (presuppositions): a concept is defined only on the scenes where its
referents under ``unique`` exist and are unique and its domain constraints (``PROGRAM where
C``: CLEVR's OUT_NEQ) hold.  The executor's domains equal the interpreter's (the slow twin);
episodes draw negatives from the domain minus the extension; the oracles never explain a
labelled scene by a concept outside whose domain it lies; synonyms need equal extension and
domain; the recombiners read the program without its constraints."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from bayes_concepts.divergence import program_atoms_and_compounds
from bayes_concepts.engine import signature_bits
from bayes_concepts.engine.executor import evaluate_with_domains
from bayes_concepts.engine.interpreter import evaluate, evaluate_with_domain
from bayes_concepts.episodes import EpisodeSampler
from bayes_concepts.errors import BayesConceptsError, ProgramError
from bayes_concepts.lot import Program
from bayes_concepts.lot.grammar import load_grammar
from bayes_concepts.resources import data_file
from bayes_concepts.spaces.build import refine_classes
from bayes_concepts.spaces.hypothesis_space import HypothesisSpace
from bayes_concepts.suites.closure import clevr_instances, family_instances, load_families

from test_relational import RELATIONS, TEST_GRAMMAR, bool_expr, random_scenes


def sample_episodes_for(space, ids, n, negatives, seed):
    """Episodes of 3 + 10 support and 2 + 10 query scenes (positives + negatives)."""
    return EpisodeSampler(space).sample(ids, n, negatives, seed=seed, n_positive=3, n_negative=10,
                                        n_query_positive=2, n_query_negative=10)

CLEVR = load_grammar(data_file("clevr.pcfg"))


# ------------------------------------------------------------------ the slow twin
def assert_domains_equal(programs, grammar, bank, scenes):
    ext, dom = evaluate_with_domains(programs, bank, grammar)
    ext, dom = signature_bits(ext, bank.n_scenes), signature_bits(dom, bank.n_scenes)
    for i, p in enumerate(programs):
        want = [evaluate_with_domain(p, s, grammar) for s in scenes]
        want_dom = np.array([d for d, _ in want])
        want_ext = np.array([d and v for d, v in want])
        wrong = np.flatnonzero(want_dom != dom[i])
        assert not len(wrong), f"{p!r}: domain differs on scene {wrong[0]}: {scenes[wrong[0]]}"
        wrong = np.flatnonzero(want_ext != ext[i])
        assert not len(wrong), f"{p!r}: extension differs on scene {wrong[0]}: {scenes[wrong[0]]}"
        assert not (ext[i] & ~dom[i]).any()  # the extension lies within the domain


@st.composite
def constrained_program(draw):
    program = draw(bool_expr(frozenset(), frozenset(), 2))
    constraints = draw(st.lists(bool_expr(frozenset(), frozenset(), 2), min_size=0, max_size=2))
    return " ".join(program + [t for c in constraints for t in ["where"] + c])


BANK, SCENES = random_scenes(200, TEST_GRAMMAR.schema, seed=7)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(constrained_program(), min_size=4, max_size=4))
def test_executor_domain_equals_interpreter_on_random_programs_with_constraints(programs):
    assert_domains_equal(programs, TEST_GRAMMAR, BANK, SCENES)


def _scene(objects):
    k = len(objects)
    return {"objects": [dict(zip(("color", "shape", "x"), o)) for o in objects],
            "relationships": {r: [[] for _ in range(k)] for r in RELATIONS}}


def test_referents_missing_doubled_or_coinciding_put_a_scene_outside_the_domain():
    red_cube, red_sphere = ("red", "cube", 1), ("red", "sphere", 2)
    blue_cube, blue_sphere = ("blue", "cube", 3), ("blue", "sphere", 4)
    scenes = {"one red, one cube, two objects": _scene([red_sphere, blue_cube]),
              "no red": _scene([blue_cube, blue_sphere]),
              "two red": _scene([red_cube, red_sphere, blue_cube]),
              "the red thing is the cube": _scene([red_cube, blue_sphere])}
    red = "S y color? red = filter:y unique"
    cube = "S y shape? cube = filter:y unique"
    differ = f"{red} {cube} same_shape {red} shape? {cube} shape? = not or"   # OUT_NEQ: two objects
    program = f"{red} locationX? {cube} locationX? > not where {differ}"
    got = {name: evaluate_with_domain(program, s, TEST_GRAMMAR) for name, s in scenes.items()}
    assert got == {"one red, one cube, two objects": (True, True), "no red": (False, False),
                   "two red": (False, False), "the red thing is the cube": (False, False)}
    assert evaluate(program, scenes["the red thing is the cube"], TEST_GRAMMAR) is False
    from bayes_concepts.scenes import SceneBank
    bank = SceneBank.from_scenes(list(scenes.values()), TEST_GRAMMAR.schema)
    assert_domains_equal([program, f"{red} locationX? 1 =", "S y color? red = filter:y exist"], TEST_GRAMMAR,
                         bank, list(scenes.values()))
    ext, dom = evaluate_with_domains(["S y color? red = filter:y exist"], bank, TEST_GRAMMAR)
    assert signature_bits(dom, 4).all()  # no unique, no constraint: every scene


# ------------------------------------------------------------------ programs and their constraints
def test_constraints_are_beside_the_program():
    text = "S y color? red = filter:y unique shape? cube = where S y color? blue = filter:y exist"
    p = Program.parse(text, CLEVR)
    assert p.postfix == text and p.length == 10 and p.tokens[-1] == "="
    assert [c.postfix for c in p.constraint_programs] == ["S y color? blue = filter:y exist"]
    assert p.bare.postfix == text.split(" where ")[0] and p != p.bare and p.has_domain
    assert p.log_prob() == p.bare.log_prob()  # the prior reads the program alone
    atoms, compounds = program_atoms_and_compounds(p)
    assert atoms == program_atoms_and_compounds(p.bare)[0] and "blue" not in atoms
    assert "where" in p.readable and "blue" in p.domain_text
    for bad, words in (("S y color? red = filter:y exist where", "needs a program before it"),
                       ("where S y color? red = filter:y exist", "needs a program before it"),
                       ("S y color? red = filter:y exist where S y color? red = filter:y", "expected a BOOL")):
        with pytest.raises(ProgramError, match=words):
            Program.parse(bad, CLEVR)
    with pytest.raises(ProgramError, match="relational languages"):
        Program.parse("x color? red = exists= where x color? red = exists=")


def test_synonyms_need_equal_extension_and_domain():
    classes = np.array([0, 0, 0, 1], np.int32)
    domains = np.array([[0b0111], [0b1111]], np.uint64)
    # 0: every scene; 1: scenes 0-2; 2: scenes 0-3 of a 4-scene bank (its own row, all set)
    assert refine_classes(classes, np.array([1, 2]), domains).tolist() == [0, 1, 2, 3]
    assert refine_classes(classes, np.array([], np.int64), domains[:0]).tolist() == [0, 0, 0, 1]


# ------------------------------------------------------------------ CLOSURE and CLEVR: acceptance
@pytest.fixture(scope="module")
def question_space():
    """A small space of CLOSURE's seven families, their baselines and CLEVR's 90 templates."""
    texts = [i.program for v in family_instances(None, 25, 0).values() for i in v]
    texts += [i.program for v in clevr_instances(None, 2, 0).values() for i in v]
    return HypothesisSpace.from_programs(texts, grammar=data_file("clevr.pcfg"), scenes=4_000, min_count=5,
                                         max_rate=0.5, seed=0)


def test_the_space_stores_domains_only_where_a_concept_has_one(question_space):
    space = question_space
    assert space.has_domains and space.stages["with_domain"] == len(space.domain_ids)
    for i in range(space.n_concepts):
        dom = space.domain(i)
        assert not (space.signature(i) & ~dom).any()
        if space.domain_row(i) < 0:
            assert dom.all()
        else:
            assert not dom.all() and Program.parse(space.programs[i], CLEVR).has_domain
            assert (space.test_domain(i) == dom[space.test_bank.scene_ids]).all()


#: An episode's needs (:func:`sample_episodes_for`): 3 + 2 positives, 10 + 10 negatives in the
#: domain outside the extension.
POSITIVES, NEGATIVES = 5, 20


def askable(space, source) -> dict:
    """Group name -> ids (ascending) of the space's concepts of that group's instances an
    episode can ask: 5 or more positives and 20 or more negatives in their domain."""
    room = space.domain_counts() - space.counts
    out = {}
    for name, instances in source.items():
        ids = np.array(sorted({i for i in (space.find(x.program) for x in instances) if i is not None}), np.int64)
        out[name] = ids[(space.counts[ids] >= POSITIVES) & (room[ids] >= NEGATIVES)]
    return out


#: Questions per template and scenes of the larger bank, for the templates the small bank
#: cannot ask (three-hop chains of four unique referents, comparisons of two related objects:
#: on 4,000 scenes their referents are rarely all unique).
RARE_PER_TEMPLATE, RARE_SCENES = 10, 16_000


@pytest.fixture(scope="module")
def rare_question_space(question_space):
    """``(space or None, {template: instances})``: the CLEVR templates none of whose questions
    ``question_space`` can ask, :data:`RARE_PER_TEMPLATE` questions each over a larger bank
    (:data:`RARE_SCENES` scenes); None when they give no question at all."""
    from bayes_concepts.suites.closure import load_clevr_templates
    small = askable(question_space, clevr_instances(None, 2, 0))
    rare = {name: t for name, t in load_clevr_templates().items() if not len(small[name])}
    instances = clevr_instances(rare, RARE_PER_TEMPLATE, 0)
    texts = [i.program for v in instances.values() for i in v]
    if not texts:
        return None, instances
    space = HypothesisSpace.from_programs(texts, grammar=data_file("clevr.pcfg"), scenes=RARE_SCENES, min_count=5,
                                          max_rate=0.5, seed=0)
    return space, instances


def test_an_episode_never_holds_a_scene_outside_its_question_s_domain(question_space, rare_question_space):
    """Every one of CLOSURE's families (its seven tests and their CLEVR baselines) and every one
    of CLEVR's 90 templates is asked -- on the small bank, or on a larger one for the templates
    it cannot ask -- except a template that is never answered yes, named with its reason; each
    asked group's episodes, hard and easy, hold only scenes of their question's domain."""
    from bayes_concepts.suites.closure import load_clevr_templates
    templates, families = load_clevr_templates(), load_families()
    assert len(templates) == 90 and sum(f.role == "test" for f in families.values()) == 7
    rare_space, rare = rare_question_space
    banks = [(question_space, {**family_instances(None, 25, 0), **clevr_instances(None, 2, 0)})]
    if rare_space is not None:
        banks.append((rare_space, rare))
    asked = {}  # group -> (space, ids): the first bank that asks it
    for space, source in banks:
        for name, ids in askable(space, source).items():
            if len(ids) and name not in asked:
                asked[name] = (space, ids)
    never = {name: t.never_yes for name, t in templates.items() if t.never_yes}
    assert all(not rare.get(name) for name in never)  # no question at all: nothing to ask
    missing = sorted((set(templates) | set(families)) - asked.keys() - never.keys())
    assert not missing, (f"{len(missing)} groups never asked (fewer than {POSITIVES} positives or {NEGATIVES} "
                         f"negatives in their domain, on {question_space.n_scenes:,} and {RARE_SCENES:,} scenes): "
                         f"{missing}")
    assert not asked.keys() & never.keys()
    # "are there an equal number": its OUT_NEQ makes the counts differ, so the answer is never yes
    assert sorted(never) == ["compare_integer_0"], (
        f"{len(never)} of CLEVR's templates cannot be asked on any bank: "
        + "; ".join(f"{name}: {why}" for name, why in never.items()))
    assert len(asked) == 90 - len(never) + len(families)
    for k, (name, (space, ids)) in enumerate(asked.items()):
        sampler = EpisodeSampler(space)
        for negatives in ("hard", "easy"):
            eps = sampler.sample(ids, 8, negatives, seed=k, n_positive=3, n_negative=10, n_query_positive=2,
                                 n_query_negative=10)
            for e, h in enumerate(eps.concept):
                dom, ext = space.domain(int(h)), space.signature(int(h))
                for scenes, labels in ((eps.support_scenes[e], eps.support_labels[e]),
                                       (eps.query_scenes[e], eps.query_labels[e])):
                    assert dom[scenes].all(), (name, space.programs[h])
                    assert (labels == ext[scenes]).all()


def test_a_compare_question_s_negatives_never_have_the_two_compared_objects_equal(question_space):
    space = question_space
    compare = {i.program for name in ("compare_mat", "compare_mat_spa")
               for i in family_instances([name], 25, 0)[name]}
    ids = np.array([i for i, p in enumerate(space.programs) if p in compare])
    assert len(ids)
    eps = sample_episodes_for(space, ids, n=200, negatives="hard", seed=1)
    checked = 0
    for e, h in enumerate(eps.concept):
        p = Program.parse(space.programs[h], CLEVR)
        (differ,) = p.constraint_programs          # OUT_NEQ: the two compared objects differ
        for s, y in zip(eps.support_scenes[e], eps.support_labels[e]):
            if y == 0:
                assert evaluate(differ, space.scene(int(s)), CLEVR)
                checked += 1
    assert checked


def test_easy_negatives_of_a_question_answered_yes_on_most_of_its_domain_are_negatives(question_space):
    """In a space with question domains an easy negative is a uniform scene of the domain
    outside the extension, never a positive relabelled: a question answered yes on nearly all
    of its domain ("is there a thing of the same material as the X") otherwise gave support
    sets of no negative, which a prototype learner cannot train on.  The draw is uniform on
    that set: each of its scenes is drawn about equally often (within 5 sigma)."""
    space = question_space
    room = space.domain_counts() - space.counts
    ok = np.flatnonzero((space.counts >= 5) & (room >= 20))
    rate = space.counts[ok] / space.domain_counts()[ok]
    high = ok[np.argsort(-rate)[:5]]
    assert rate.max() >= 0.8, rate.max()  # 10 uniform scenes of the domain: all yes 1 time in 10 or more
    sampler = EpisodeSampler(space)
    for query_negatives in (None, "random"):
        eps = sampler.sample(high, 400, "easy", query_negatives=query_negatives, seed=3, n_positive=3, n_negative=10,
                             n_query_positive=2, n_query_negative=10)
        for scenes, labels, relabelled, k in ((eps.support_scenes, eps.support_labels, eps.support_relabelled, 3),
                                              (eps.query_scenes, eps.query_labels, eps.query_relabelled, 2)):
            assert (labels[:, :k] == 1).all() and (labels[:, k:] == 0).all() and not relabelled.any()
            for e, h in enumerate(eps.concept):
                assert space.domain(int(h))[scenes[e]].all()
                assert (space.signature(int(h))[scenes[e]] == labels[e]).all()
    h = int(high[0])  # uniform on the domain minus the extension
    pool = np.flatnonzero(space.domain(h) & ~space.signature(h))
    eps = sampler.sample([h], 2000, "easy", seed=4, n_positive=3, n_negative=10, n_query_positive=2,
                         n_query_negative=10)
    drawn = np.concatenate([eps.support_scenes[:, 3:].ravel(), eps.query_scenes[:, 2:].ravel()])
    assert np.isin(drawn, pool).all()
    hits = np.bincount(np.searchsorted(pool, drawn), minlength=len(pool))
    mean = len(drawn) / len(pool)
    assert np.abs(hits - mean).max() <= 5 * np.sqrt(mean), (hits.min(), hits.max(), mean)


def test_a_registered_python_hard_negative_mode_tops_up_inside_the_domain(question_space):
    """The sampler's Python path (a hard-negative mode registered as a function) tops its sets
    up, and draws easy negatives, from the domain minus the extension too."""
    from bayes_concepts.episodes import hard_negative_modes
    space = question_space
    room = space.domain_counts() - space.counts
    ids = np.flatnonzero((space.counts >= 5) & (room >= 20) & (space.domain_counts() < space.n_scenes))[:20]
    name = "nothing_test_domains"
    hard_negative_modes.register(name, lambda space, concept, positives, alternatives, exclude, n, rng: [],
                                 replace=True)
    try:
        for negatives in ("hard", "easy"):
            eps = EpisodeSampler(space).sample(ids, 50, negatives, hard_mode=name, seed=2, n_positive=3,
                                               n_negative=10, n_query_positive=2, n_query_negative=10)
            for e, h in enumerate(eps.concept):
                for scenes, labels in ((eps.support_scenes[e], eps.support_labels[e]),
                                       (eps.query_scenes[e], eps.query_labels[e])):
                    assert space.domain(int(h))[scenes].all() and labels.sum() in (2, 3)
    finally:
        hard_negative_modes.unregister(name)


def test_the_oracle_never_explains_a_scene_outside_a_concept_s_domain(question_space):
    from bayes_concepts.oracles.oracle import Oracle
    space = question_space
    eps = sample_episodes_for(space, np.arange(space.n_concepts), n=100, negatives="hard", seed=5)
    oracle = Oracle(space, np.arange(space.n_concepts))
    for e in range(20):
        oracle.fit(eps.support_scenes[e], eps.support_labels[e], hard=True)
        ids, _ = oracle.posterior()
        for h in ids:
            assert space.domain(int(h))[eps.support_scenes[e]].all()


def test_novel_compounds_of_and_mat_spa_are_counted_on_programs_without_constraints():
    train = set()
    for v in clevr_instances(None, 10, 0).values():
        for i in v:
            train |= set(program_atoms_and_compounds(Program.parse(i.program, CLEVR))[1])
    novel = set()
    for i in family_instances(["and_mat_spa"], 30, 0)["and_mat_spa"]:
        novel |= set(program_atoms_and_compounds(Program.parse(i.program, CLEVR))[1]) - train
    assert not any(c.startswith(("and(0:same_", "not(0:same_")) for c in novel), novel


def test_a_template_constraint_the_template_cannot_have_is_one_line(tmp_path):
    from bayes_concepts.suites.closure import load_clevr_templates
    path = tmp_path / "t.toml"
    path.write_text('[[template]]\nname = "mine_0"\nquestion = "Is there a <Z> <C> <M> <S>?"\n'
                    'nodes = ["scene", "filter_exist <Z> <C> <M> <S> <- 0"]\nconstraints = ["OUT_NEQ 1 9"]\n')
    with pytest.raises(BayesConceptsError, match="names node 9, which the template lacks") as info:
        load_clevr_templates(path)
    assert "\n" not in str(info.value)


def test_concepts_with_too_few_negatives_in_their_domain_are_counted_and_a_protocol_skips_a_split_of_none(
        question_space):
    """Episode exclusions count a concept whose domain holds too few scenes outside its
    extension (the sampler never draws it), and a protocol's run of all its splits leaves a
    split none of whose test concepts is drawable out -- counted, with the reason -- instead of
    stopping; one split asked for alone is still a one-line error."""
    from bayes_concepts.episodes import EpisodeError, EpisodeShape, episode_exclusions, episode_shapes
    from bayes_concepts.splits import Split
    space = question_space
    shape = EpisodeShape(3, 10, 2, 10)
    room = space.domain_counts() - space.counts
    ok = np.flatnonzero((space.counts >= 5) & (room >= 20))
    few = np.flatnonzero((space.counts >= 5) & (room < 20))
    assert len(ok) and len(few)
    ex = episode_exclusions(space, np.r_[ok[:3], few[:2]], shape)
    assert (ex["count"], ex["usable"], ex["few_negatives"], ex["negatives_needed"]) == (2, 3, 2, 20)
    assert "in its domain outside its extension" in ex["rule"]
    with pytest.raises(EpisodeError):  # what the sampler refuses, the exclusions count
        sample_episodes_for(space, few[:2], 1, "hard", 0)

    def split(name, test):
        return Split(name, ok[3:6], np.zeros(0, np.int64), np.asarray(test, np.int64), {}, None, name,
                     space.n_concepts)
    splits = {"good": split("good", ok[:3]), "bad": split("bad", few[:2])}
    with pytest.raises(EpisodeError, match="split bad: none of its 2 test concepts has both 5 or more"):
        episode_shapes(space, splits, shape)
    shapes, excluded = episode_shapes(space, splits, shape, skip_undrawable=True)
    assert list(shapes) == ["good"] and "bad" not in excluded
    assert excluded["not_scored"]["bad"]["test"] == 2
    assert "outside its extension" in excluded["not_scored"]["bad"]["reason"]
    with pytest.raises(EpisodeError, match="split bad"):  # no split left: the error
        episode_shapes(space, {"bad": splits["bad"]}, shape, skip_undrawable=True)


# ------------------------------------------------------------------ a user's own constraints
MY_TEMPLATES = '''[[template]]
name = "mine_0"
question = "Is the <Z> <C> <M> <S> the same size as the <Z2> <C2> <M2> <S2>?"
nodes = ["scene", "filter_unique <Z> <C> <M> <S> <- 0", "scene", "filter_unique <Z2> <C2> <M2> <S2> <- 2",
         "query_size <- 1", "query_size <- 3", "equal_size <- 4 5"]
constraints = ["OUT_NEQ 1 3"]
'''


def test_a_user_s_template_declares_constraints_that_become_the_question_s_domain(tmp_path):
    """A CLEVR-like template file of one's own declares its generator's constraints as CLEVR's
    do (OUT_NEQ here): its questions carry them as their domain (``where``), not as conjuncts,
    and a space built from them stores the domains they ask for."""
    from bayes_concepts.suites.closure import clevr_instances, load_clevr_templates
    path = tmp_path / "mine.toml"
    path.write_text(MY_TEMPLATES)
    templates = load_clevr_templates(path)
    assert templates["mine_0"].constraints == (("OUT_NEQ", 1, 3),)
    programs = [i.program for i in clevr_instances(templates, 12, 0)["mine_0"]]
    assert programs and all(" where " in p for p in programs)
    for p in programs:
        (differ,) = Program.parse(p, CLEVR).constraint_programs
        bare = Program.parse(p, CLEVR).bare.postfix
        assert differ.postfix not in bare  # beside the program, not a conjunct of it
    space = HypothesisSpace.from_programs(programs, grammar=data_file("clevr.pcfg"), scenes=800, min_count=1,
                                          max_rate=1.0, seed=0)
    assert space.has_domains
    for i in range(space.n_concepts):  # every stored domain is the interpreter's, scene by scene
        p = space.programs[i]
        want = [evaluate_with_domain(p, space.scene(s), CLEVR)[0] for s in range(0, space.n_scenes, 7)]
        assert space.domain(i)[::7].tolist() == want


@pytest.mark.parametrize("constraint, words", [
    ("OUT_NEQ 1 9", "names node 9, which the template lacks"),
    ("SAME_AS 1 3", "unknown kind 'SAME_AS'"),
    ("OUT_NEQ 1", "OUT_NEQ takes two node numbers"),
])
def test_a_bad_constraint_in_a_user_s_template_is_one_line(tmp_path, constraint, words):
    from bayes_concepts.suites.closure import load_clevr_templates
    path = tmp_path / "mine.toml"
    path.write_text(MY_TEMPLATES.replace('"OUT_NEQ 1 3"', f'"{constraint}"'))
    with pytest.raises(BayesConceptsError, match=words) as info:
        load_clevr_templates(path)
    assert "\n" not in str(info.value) and str(path) in str(info.value)


def test_a_program_file_s_constraints_through_the_command_line(tmp_path, capsys):
    """``space build --programs FILE``: a program's ``where`` constraints are its domain; a
    constraint that holds on no scene of the bank drops the concept, counted and shown; an
    unknown operator in a constraint is one line, exit 2, and nothing is written."""
    from conftest import assert_one_line_error, run
    red = "S y color? red = filter:y unique"
    cube = "S y shape? cube = filter:y unique"
    never = "S y color? red = filter:y exist S y color? red = filter:y exist not and"
    lines = [f"{red} {cube} left where {red} {cube} same_shape {red} shape? {cube} shape? = not or",
             f"{red} {cube} front",
             f"{red} {cube} behind where {never}"]  # a constraint that never holds
    good = tmp_path / "programs.txt"
    good.write_text("\n".join(lines) + "\n")
    status, out, err = run(["--grammar", data_file("clevr.pcfg"), "space", "build", tmp_path / "s", "--programs",
                            good, "--scenes", 2000, "--quiet"], capsys)
    assert status == 0, err
    assert "dropped: 1 concepts defined on no scene of the bank" in out, out
    space = HypothesisSpace.load(tmp_path / "s")
    assert space.stages["empty_domain"] == 1 and space.n_concepts == 2 and space.has_domains
    assert not any(never in p for p in space.programs)
    bad = tmp_path / "bad.txt"
    bad.write_text(f"{red} {cube} left where {red} {cube} out_neq\n")
    status, out, err = run(["--grammar", data_file("clevr.pcfg"), "space", "build", tmp_path / "b", "--programs",
                            bad, "--scenes", 2000, "--quiet"], capsys)
    assert_one_line_error(status, err, "out_neq")
    assert not (tmp_path / "b").exists()


NEVER_YES = '''
[[template]]
name = "mine_1"
question = "Are there an equal number of <Z> <C> <M> <S>s and <Z2> <C2> <M2> <S2>s?"
nodes = ["scene", "filter_count <Z> <C> <M> <S> <- 0", "scene", "filter_count <Z2> <C2> <M2> <S2> <- 2",
         "equal_integer <- 1 3"]
constraints = ["OUT_NEQ 1 3"]
'''


def test_a_user_s_template_file_through_the_command_line(tmp_path, capsys):
    """``space build OUT --templates FILE``: the questions of one's own templates, each with
    its constraints as its domain (the grammar defaults to clevr.pcfg); a template that gives
    no question is named with the reason, and a question defined on no scene of the bank is
    dropped, counted and shown."""
    from conftest import run
    path = tmp_path / "mine.toml"
    path.write_text(MY_TEMPLATES + NEVER_YES)
    status, out, err = run(["space", "build", tmp_path / "s", "--templates", path, "--per-template", 10, "--scenes",
                            2000, "--quiet"], capsys)
    assert status == 0, err
    space = HypothesisSpace.load(tmp_path / "s")
    dropped = space.stages["empty_domain"]
    assert space.stages["given"] == space.n_concepts + dropped and dropped >= 1  # none lost unseen
    assert f"dropped: {dropped} concepts defined on no scene of the bank" in out, out
    assert "1 template gives none: mine_1 (OUT_NEQ makes the two counts differ" in out, out
    assert f"templates {path}: {space.stages['given']} concepts" in out, out
    assert space.has_domains and all(" where " in p for p in space.programs)
    assert space.params["programs_from"]["source"].startswith(str(path))
    for i in range(space.n_concepts):  # every stored domain is the interpreter's, scene by scene
        want = [evaluate_with_domain(space.programs[i], space.scene(s), CLEVR)[0] for s in range(0, 2000, 9)]
        assert space.domain(i)[::9].tolist() == want


@pytest.mark.parametrize("edit, args, words", [
    (('"OUT_NEQ 1 3"', '"OUT_NEQ 1 9"'), [], "constraint 'OUT_NEQ 1 9' names node 9, which the template lacks"),
    (('"OUT_NEQ 1 3"', '"SAME_AS 1 3"'), [], "unknown kind 'SAME_AS' (known: NULL, OUT_NEQ)"),
    (('nodes = [', 'nodez = ['), [], "unknown key(s) nodez"),
    (None, ["--programs", "{path}"], "--programs does not apply"),
    (None, ["--samples", 5], "--samples does not apply"),
    (None, ["--preset", "conceptworld"], "--preset conceptworld builds its own space: --templates does not apply"),
])
def test_a_bad_template_file_or_option_is_one_line_and_nothing_is_written(tmp_path, capsys, edit, args, words):
    from conftest import assert_one_line_error, run
    path = tmp_path / "mine.toml"
    path.write_text(MY_TEMPLATES.replace(*edit) if edit else MY_TEMPLATES)
    argv = ["space", "build", tmp_path / "s", "--templates", path, "--scenes", 500, "--quiet"]
    status, out, err = run(argv + [str(a).format(path=path) for a in args], capsys)
    assert_one_line_error(status, err, words)
    if edit:
        assert str(path) in err and "mine_0" in err  # the file and the entry
    assert not (tmp_path / "s").exists()


def test_per_template_needs_templates_and_a_file_of_templates_that_ask_nothing_is_one_line(tmp_path, capsys):
    from conftest import assert_one_line_error, run
    status, out, err = run(["space", "build", tmp_path / "s", "--per-template", 3], capsys)
    assert_one_line_error(status, err, "--per-template goes with --templates FILE")
    status, out, err = run(["space", "build", tmp_path / "s", "--templates", tmp_path / "none.toml"], capsys)
    assert_one_line_error(status, err, "none.toml: no such file")
    path = tmp_path / "never.toml"
    path.write_text(NEVER_YES)
    status, out, err = run(["space", "build", tmp_path / "s", "--templates", path, "--scenes", 500], capsys)
    assert_one_line_error(status, err, "no template gives a question (mine_1: OUT_NEQ makes the two counts differ")
    assert not (tmp_path / "s").exists()


@pytest.mark.parametrize("line, words", [
    ("S y color? red = filter:y exist where z color? red =", "variable z is not bound here"),  # names what it lacks
    ("S y color? red = filter:y exist where S y color? red = filter:y same_as", "'same_as': unknown token"),
    ("S y color? red = filter:y exist where", "needs a program before it and a BOOL constraint after it"),
    ("S y color? red = filter:y exist where S y color? red = filter:y", "expected a BOOL"),
])
def test_a_bad_constraint_in_a_program_file_is_one_line_naming_the_line(tmp_path, capsys, line, words):
    """``space build --programs FILE``: a constraint reading a variable nothing binds, an
    unknown operator, a ``where`` with no constraint after it, a constraint that is not a
    yes/no: one line naming the file, the line and the token; exit 2; nothing written."""
    from conftest import assert_one_line_error, run
    path = tmp_path / "programs.txt"
    path.write_text("S y shape? cube = filter:y exist\n" + line + "\n")
    status, out, err = run(["--grammar", data_file("clevr.pcfg"), "space", "build", tmp_path / "s", "--programs", path,
                            "--scenes", 300, "--quiet"], capsys)
    assert_one_line_error(status, err, f"{path} line 2", words)
    assert not (tmp_path / "s").exists()


def test_the_sampler_s_rows_of_each_concept_are_the_per_scene_bitsets_read_the_other_way(question_space):
    """``SpaceIndex.outside_rows`` (a row of scene bits per concept with a domain, what the
    episode sampler reads) holds the bits of ``scene_outside`` (a row of concept bits per scene,
    what the oracles read): every (concept, scene) pair, padding bits 0; a space without
    question domains has none."""
    from bayes_concepts.bits import unpack_bits
    space = question_space
    rows, row_of = space.index.outside_rows()
    per_scene = unpack_bits(space.index.scene_outside(), space.n_concepts)            # (S, H)
    assert (row_of >= 0).sum() == len(space.domain_ids) and len(rows) == len(space.domain_ids)
    per_concept = np.zeros((space.n_concepts, space.n_scenes), bool)
    has = np.flatnonzero(row_of >= 0)
    per_concept[has] = unpack_bits(rows[row_of[has]], space.n_scenes)
    assert np.array_equal(per_concept, per_scene.T) and per_scene.any()
    assert not np.any(unpack_bits(rows, rows.shape[1] * 64)[:, space.n_scenes:])     # padding
    plain = HypothesisSpace.build("demo", samples=2_000, scenes=500, seed=0)
    rows, row_of = plain.index.outside_rows()
    assert rows.shape == (0, 1) and row_of.shape == (0,)
