"""Ideal observers against people on Shepard, Hovland & Jenkins' six structures (issue 26).

Every fast path against a slow, obvious twin: the enumeration by truth table against every
program of the grammar up to 15 tokens (strings expanded from the productions, run by the
interpreter) and against a plain-Python relaxation over all pairs of truth tables; its
kernels against loops; the vectorised trial-by-trial predictive against Bayes' rule one
concept at a time; the block-error kernel against a loop and against every trial order;
orbit merging against no merging.  Then a tiny fit, the figure, and bad input."""
from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st
from scipy.stats import binom

from bayes_concepts.cli import main
from bayes_concepts.suites.shj import boolean as bl
from bayes_concepts.cogsci import sequential as sq
from bayes_concepts.suites.shj import fit as shj
from bayes_concepts.suites.shj.analysis import GID_HUMAN, GID_MODEL, GID_PPC_BAND, plot_shj_fit
from bayes_concepts.engine import evaluate_programs, signature_bits
from bayes_concepts.engine.interpreter import evaluate
from bayes_concepts.lot import Program, sample_programs
from bayes_concepts.scenes import SceneBank

LANGUAGES = tuple(bl.SHJ_LANGUAGES)
#: the connectives of each language, as plain Python on 8-bit truth tables (the test's own semantics)
CONNECTIVES = {"and": lambda a, b: a & b, "or": lambda a, b: a | b, "xor": lambda a, b: a ^ b,
               "iff": lambda a, b: ~(a ^ b) & 255}
OPERATORS = {"and_or_not": ("and", "or"), "and_not": ("and",), "xor_iff": ("and", "or", "xor", "iff")}


# ============================================================================ brute-force twins
def all_programs(grammar, max_length):
    """Every program string of the grammar up to ``max_length`` tokens, by expanding the leftmost
    nonterminal (a symbol expands to at least one token, so longer forms are pruned)."""
    out = []
    stack = [((grammar.start,), 1.0)]
    while stack:
        form, prob = stack.pop()
        if sum(1 for s in form) > max_length:
            continue
        i = next((k for k, s in enumerate(form) if grammar.is_nonterminal(s)), None)
        if i is None:
            out.append((" ".join(form), prob))
            continue
        for p in grammar.rules(form[i]):
            stack.append((form[:i] + p.rhs + form[i + 1:], prob * p.prob))
    return out


def literal_tables(grammar):
    scenes = bl.stimulus_scenes(grammar)
    out = []
    for p in grammar.rules("BOOL"):
        if not any(grammar.is_nonterminal(s) for s in p.rhs):
            prog = Program.parse(" ".join(p.rhs) + " exists=", grammar)
            out.append(bl.truth_table([evaluate(prog, s, grammar) for s in scenes]))
    return out


def relaxed_min_lengths(language):
    """Shortest length of every truth table by relaxation over all pairs, in plain Python."""
    grammar = bl.language_grammar(language)
    best = [math.inf] * 256
    for t in literal_tables(grammar):
        best[t] = 4
    changed = True
    while changed:
        changed = False
        for a in range(256):
            la = best[a]
            if la == math.inf:
                continue
            if la + 1 < best[~a & 255]:
                best[~a & 255], changed = la + 1, True
            for b in range(256):
                lb = best[b]
                if lb == math.inf:
                    continue
                for name in OPERATORS[language]:
                    r = CONNECTIVES[name](a, b)
                    if la + lb + 1 < best[r]:
                        best[r], changed = la + lb + 1, True
    return np.array([v + 1 for v in best])          # + the quantifier


# ============================================================================ the enumeration
@pytest.mark.parametrize("language, max_length", [("and_or_not", 12), ("and_not", 15), ("xor_iff", 12)])
def test_enumeration_equals_every_program_of_the_grammar(language, max_length):
    """Every program up to ``max_length`` tokens (and_not up to 15: three literals), expanded
    from the productions and run by the interpreter: their numbers and summed probabilities
    per length and truth table are the enumeration's."""
    concepts = bl.enumerate_concepts(language)
    grammar = concepts.grammar
    scenes = bl.stimulus_scenes(grammar)
    counts = np.zeros((max_length + 1, 256))
    probs = np.zeros((max_length + 1, 256))
    for i, (text, prob) in enumerate(all_programs(grammar, max_length)):
        prog = Program.parse(text, grammar)
        t = bl.truth_table([evaluate(prog, s, grammar) for s in scenes])
        counts[prog.length, t] += 1
        probs[prog.length, t] += prob
        if i % 97 == 0:                                 # the expansion's probability is the grammar's
            assert math.isclose(prob, math.exp(prog.log_prob(grammar)), rel_tol=1e-9)
    assert counts.sum() > 300
    np.testing.assert_array_equal(concepts.n_programs[: max_length + 1], counts)
    np.testing.assert_allclose(concepts.prob_by_length[: max_length + 1], probs, rtol=1e-12, atol=0)


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_concept_is_reached_and_shortest_lengths_equal_brute_force(language):
    concepts = bl.enumerate_concepts(language)
    assert concepts.reachable.all() and concepts.n_concepts == 256
    np.testing.assert_array_equal(concepts.min_length, relaxed_min_lengths(language))
    structures = shj.shj_structures()
    tables = [bl.truth_table(s) for s in structures]
    lengths = concepts.min_length[tables]
    assert lengths[0] == 5                            # type I: one literal and the quantifier
    for t, text in zip(tables, (concepts.shortest[t] for t in tables)):
        prog = Program.parse(text, concepts.grammar)
        assert prog.length == concepts.min_length[t]
        assert bl.truth_table([evaluate(prog, s, concepts.grammar) for s in bl.stimulus_scenes(concepts.grammar)]) == t
    # the probabilities: of every program (the grammar's derivations end: mass 1), by length below it
    assert abs(concepts.mass - 1.0) < 1e-9
    assert (concepts.prob_by_length.sum(axis=0) <= concepts.prob_sum * (1 + 1e-12)).all()
    assert (concepts.prob_best <= concepts.prob_sum * (1 + 1e-12)).all()
    assert (concepts.prob_shortest <= concepts.prob_best * (1 + 1e-12)).all()


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["and", "or", "xor", "iff", "not"]), st.integers(2, 4))
def test_combine_kernels_equal_their_loops(seed, token, n_stimuli):
    rng = np.random.default_rng(seed)
    arity = 1 if token == "not" else 2
    table = bl.operator_table(token, arity, n_stimuli)
    size = 1 << n_stimuli
    a, b = rng.random(size) * (rng.random(size) < 0.7), rng.random(size) * (rng.random(size) < 0.7)
    b1 = None if arity == 1 else b
    np.testing.assert_allclose(bl.combine_sum(table, a, b1), bl.combine_slow(table, a, b1, "sum"), rtol=1e-12)
    np.testing.assert_allclose(bl.combine_max(table, a, b1), bl.combine_slow(table, a, b1, "max"), rtol=1e-12)
    la = np.where(a > 0, rng.integers(1, 9, size), np.inf)
    lb = np.where(b > 0, rng.integers(1, 9, size), np.inf)
    got = bl.combine_shortest(table, la, a, None if arity == 1 else lb, b1)
    want = bl.combine_slow(table, a, b1, "shortest", la, None if arity == 1 else lb)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_allclose(got[1], want[1], rtol=1e-12)
    if arity == 2:                                   # stacked rows: the sum over them
        A, B = rng.random((3, size)), rng.random((3, size))
        np.testing.assert_allclose(bl.combine_sum(table, A, B), bl.combine_slow(table, A, B, "sum"), rtol=1e-12)


def test_operator_tables_are_the_interpreter_semantics():
    grammar = bl.language_grammar("xor_iff")
    scenes = bl.stimulus_scenes(grammar)
    a_text, b_text = "x d1? 1 = x d2? 0 = or", "x d3? 1 ="
    tab = {t: bl.truth_table([evaluate(t + " exists=", s, grammar) for s in scenes]) for t in (a_text, b_text)}
    for op in ("and", "or", "xor", "iff"):
        got = bl.operator_table(op, 2, 8)[tab[a_text], tab[b_text]]
        assert got == bl.truth_table([evaluate(f"{a_text} {b_text} {op} exists=", s, grammar) for s in scenes])


def test_xor_and_iff_programs_execute_as_interpreted():
    grammar = bl.language_grammar("xor_iff")
    programs = [Program.parse(t, grammar) for t in sample_programs(300, grammar, seed=1).strings()]
    programs += [Program.parse("x d1? 1 = x d2? 0 = xor x d3? 1 = iff x d1? 0 = or exists=", grammar)]
    assert any("xor" in p.postfix for p in programs) and any("iff" in p.postfix for p in programs)
    codes = np.array(bl.stimuli_codes(grammar), np.int8)[:, None, :]
    bank = SceneBank.from_codes(codes, grammar.schema)
    fast = signature_bits(evaluate_programs(programs, bank, grammar), bank.n_scenes)
    slow = np.array([[evaluate(p, s, grammar) for s in bl.stimulus_scenes(grammar)] for p in programs])
    np.testing.assert_array_equal(fast.astype(bool), slow)
    assert "⊕" in Program.parse("x d1? 1 = x d2? 1 = xor exists=", grammar).readable


def test_boolean_space_saved_and_loaded_and_the_preset(tmp_path):
    from bayes_concepts.spaces import load_space
    concepts = bl.enumerate_concepts("and_or_not")
    space = bl.boolean_space("and_or_not")
    assert space.n_concepts == 254 and space.n_scenes == 8
    tables = bl.space_truth_tables(space)
    assert sorted(tables.tolist()) == [t for t in range(256) if 0 < bin(t).count("1") < 8]
    np.testing.assert_array_equal(space.lengths, concepts.min_length[tables])
    np.testing.assert_allclose(space.log_pcfg, concepts.log_prob_sum[tables])
    np.testing.assert_array_equal(space.counts, [bin(int(t)).count("1") for t in tables])
    assert space.params["enumerated"]["synonyms"] == concepts.synonyms[tables].tolist()
    assert main(["space", "build", str(tmp_path / "shj"), "--preset", "shj", "--quiet"]) == 0
    loaded = load_space(tmp_path / "shj")
    assert loaded.programs == space.programs and loaded.manifest_sha256() == \
        load_space(tmp_path / "shj").manifest_sha256()
    assert main(["--grammar", "shj_xor_iff.pcfg", "space", "build", str(tmp_path / "x"), "--preset", "shj"]) == 0
    assert load_space(tmp_path / "x").params["enumerated"]["language"] == "xor_iff"


# ============================================================================ sequential learning
@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32 - 1), st.floats(0.01, 0.45), st.integers(1, 3), st.integers(1, 40))
def test_trial_predictive_equals_bayes_rule_one_concept_at_a_time(seed, epsilon, n_seq, n_trials):
    rng = np.random.default_rng(seed)
    ext = bl.extensions(8, rng.choice(256, size=int(rng.integers(2, 40)), replace=False))
    log_prior = rng.normal(0, 3, len(ext))
    stimuli = rng.integers(0, 8, (n_seq, n_trials))
    labels = rng.random((n_seq, n_trials)) < 0.5
    fast = sq.trial_predictive(ext, log_prior, epsilon, stimuli, labels)
    slow = sq.trial_predictive_slow(ext, log_prior, epsilon, stimuli, labels)
    np.testing.assert_allclose(fast, slow, rtol=1e-9, atol=1e-12)


def test_block_errors_equal_the_average_over_every_trial_order():
    """Four stimuli shown twice a block (8!/2^4 = 2,520 orders of a block): the block error
    averaged over every order, by the trial-by-trial predictive, equals the kernel's."""
    rng = np.random.default_rng(3)
    design = sq.Design(n_stimuli=4, repeats=2, n_blocks=3)
    ext = bl.extensions(4, np.arange(1, 15))
    lengths = rng.integers(3, 12, len(ext)).astype(float)
    log_pcfg = -lengths * 0.7
    structure = ext[5]
    orders = np.array(sorted(set(itertools.permutations([0, 0, 1, 1, 2, 2, 3, 3]))))
    assert len(orders) == 2520
    kernel = sq.block_errors(ext, lengths, log_pcfg, structure[None], 0.4, 0.2, design=design)[0]
    slow = sq.block_errors_slow(ext, -0.4 * lengths, 0.2, structure, design, sq.prefix_states(design, "exact"))
    np.testing.assert_allclose(kernel, slow, rtol=1e-10)
    first = np.tile([0, 1, 2, 3, 3, 2, 1, 0], 2)      # any earlier blocks: only their counts matter
    for b in range(design.n_blocks):
        seqs = np.concatenate([np.tile(first[: 8 * b], (len(orders), 1)), orders], axis=1)
        errs = sq.trial_errors(ext, -0.4 * lengths, 0.2, structure, seqs)[:, 8 * b:]
        assert abs(errs.mean() - kernel[b]) < 1e-10
    pcfg = sq.block_errors(ext, lengths, log_pcfg, structure[None], 1.3, 0.2, design=design, prior="pcfg")[0]
    np.testing.assert_allclose(pcfg, sq.block_errors_slow(ext, 1.3 * log_pcfg, 0.2, structure, design,
                                                          sq.prefix_states(design, "exact")), rtol=1e-10)


def test_orbit_merging_is_exact_and_sampled_orders_converge():
    data = shj.shj_data("and_or_not", "length", method="sampled", n_orders=8, seed=1)
    raw = sq.structure_data(data.ext, data.structures, data.lengths, data.log_pcfg, data.design, data.states)
    with torch.no_grad():
        plain = sq.block_errors_torch(0.3, 0.35, raw).numpy()
    np.testing.assert_allclose(data.curves(0.3, 0.35), plain, rtol=1e-10, atol=1e-13)
    assert data.structure_data.n_states < raw.n_states
    sizes = [len(sq.invariant_symmetries(sq.stimulus_symmetries(data.codes), data.ext, s, data.lengths))
             for s in data.structures]
    assert sizes[5] == 24 and sizes[0] == 8           # parity and one dimension: their symmetry groups
    exact = data.with_states(sq.prefix_states(data.design, "exact"))
    many = data.with_states(sq.prefix_states(data.design, "sampled", 400, seed=2))
    assert np.abs(many.curves(0.3, 0.35) - exact.curves(0.3, 0.35)).max() < 0.01
    w = sq.prefix_states(data.design, "exact").weight
    assert abs(w.sum() - 1.0) < 1e-12


def test_block_errors_are_differentiable():
    data = shj.shj_data("and_or_not", "length", method="sampled", n_orders=4)
    beta = torch.tensor(0.3, dtype=torch.float64, requires_grad=True)
    eps = torch.tensor(0.3, dtype=torch.float64, requires_grad=True)
    f = sq.block_errors_torch(beta, eps, data.structure_data).sum()
    f.backward()
    h = 1e-6
    num = (data.curves(0.3 + h, 0.3).sum() - data.curves(0.3 - h, 0.3).sum()) / (2 * h)
    assert abs(float(beta.grad) - num) < 1e-5 * max(1.0, abs(num))


# ============================================================================ fitting
def test_a_tiny_fit_its_summary_and_figure(tmp_path):
    data = shj.shj_data("and_or_not", "length", method="sampled", n_orders=4)
    assert data.counts.shape == (6, 16) and data.n_trials == 640
    np.testing.assert_array_equal(data.counts, np.rint(data.human.values * 640))
    post = shj.fit_shj(data, steps=8, num_samples=30, seed=0)
    assert set(post.data_vars) == {"beta", "epsilon", "lapse"} and post.sizes["draw"] == 30
    assert ((post["epsilon"] > 0) & (post["epsilon"] < 0.5)).all() and post.attrs["fit_seconds"] > 0
    again = shj.fit_shj(data, steps=8, num_samples=30, seed=0)
    np.testing.assert_array_equal(post["beta"].values, again["beta"].values)      # seeded
    pred = shj.shj_predictions(post, data, max_draws=10)
    assert pred["draws"].shape == (10, 6, 16)
    assert ((pred["ppc_low"] <= pred["ppc_high"]) & (pred["model_low"] <= pred["model_high"])).all()
    s = shj.shj_summary(post, data, pred)
    assert s["cells"] == 96 and -1 <= s["correlation"] <= 1
    assert set(s["mean_error_per_type"]) == set(shj.TYPES)
    json.dumps(s)
    axes, tables = plot_shj_fit(pred)
    assert len(axes) == 7 and len(tables["curves"]) == 96
    human = [ln for ln in axes[2].get_lines() if ln.get_gid() == GID_HUMAN][0]
    np.testing.assert_allclose(human.get_ydata(), data.human.values[2])
    model = [ln for ln in axes[2].get_lines() if ln.get_gid() == GID_MODEL][0]
    np.testing.assert_allclose(model.get_ydata(), pred["model_mean"].values[2])
    assert any(c.get_gid() == GID_PPC_BAND for c in axes[5].collections)
    np.testing.assert_allclose(tables["order"]["people"], data.human.values.mean(axis=1))


def test_nuts_runs():
    data = shj.shj_data("and_or_not", "length", method="sampled", n_orders=2)
    post = shj.fit_shj(data, method="nuts", num_samples=4, warmup_steps=4, seed=0)
    assert post.sizes["draw"] == 4 and post.attrs["method"] == "nuts"


def test_grid_likelihood_and_the_order_helpers():
    rng = np.random.default_rng(0)
    curves = rng.random((2, 3, 6, 16)) * 0.5
    lam = np.array([0.0, 0.1])
    counts = rng.integers(0, 300, (6, 16))
    cells = np.arange(96)
    got = shj._loglik_grid(curves, lam, counts, 640, cells)
    want = np.array([[[binom.logpmf(counts.ravel(), 640, np.clip(sq.with_lapse(curves[i, j].ravel(), l), 1e-12,
                                                                      1 - 1e-12)).sum() for l in lam]
                      for j in range(3)] for i in range(2)])
    np.testing.assert_allclose(got, want, rtol=1e-10)
    assert shj.order_check([0.01, 0.05, 0.09, 0.1, 0.11, 0.2]) == {"reproduced": True, "failed": []}
    assert shj.order_check([0.01, 0.1, 0.09, 0.1, 0.11, 0.2])["failed"] == ["II < III", "II < IV (ties II and IV)"]
    assert shj.type_order([0.2, 0.1, 0.1, 0.3, 0.4, 0.5]) == "II = III < I < IV < V < VI"


def test_grid_posterior_runs_small():
    data = shj.shj_data("and_not", "length", method="sampled", n_orders=2)
    g = shj.grid_posterior(data, n_grid=5, n_lapse=31, n_search=(6, 8), n_zoom=5)
    assert np.isfinite(g["log_evidence"]) and g["log_evidence"] <= g["max_log_likelihood"] + 5
    assert set(g["held_out"]) == {"log_predictive_even", "log_predictive_odd", "log_predictive"}
    assert 0 < g["posterior_mean"]["epsilon"] < 0.5


# ============================================================================ the human data and bad input
def test_the_human_tables():
    human = shj.human_errors()
    assert human.shape == (6, 16) and float(human.sel(type=6, block=1)) == pytest.approx(0.4984)
    s = shj.shj_structures()
    assert s.shape == (6, 8) and (s.sum(axis=1) == 4).all()
    assert bl.truth_table(s[5]) == 0b10010110            # type VI: parity of d1, d2, d3


@pytest.mark.parametrize("text, message", [
    ("type,block,p\n", "line 1: expected the header type,block,p_error"),
    ("type,block,p_error\n1,1,0.2\n1,1,0.3\n", "line 3: type 1 block 1 is given twice"),
    ("type,block,p_error\n1,1,zero\n", "line 2: p_error 'zero' is not a number"),
    ("type,block,p_error\n1,1,1.5\n", "line 2: p_error 1.5 is outside [0.0, 1.0]"),
    ("type,block,p_error\n" + "".join(f"{t},1,0.1\n" for t in range(1, 6)), "needs types 1 to 6"),
])
def test_bad_human_table_is_one_line(tmp_path, capsys, text, message):
    f = tmp_path / "human.csv"
    f.write_text(text)
    with pytest.raises(shj.HumanDataError, match=message.replace("[", r"\[").replace("]", r"\]")):
        shj.human_errors(f)
    assert main(["people", "shj", "--human", str(f)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(f) in err and "Traceback" not in err


@pytest.mark.parametrize("argv, message", [
    (["people", "shj", "--method", "nuts", "--steps", "5"], "--steps"),
    (["people", "shj", "--warmup", "5"], "--warmup"),
    (["people", "shj", "--language", "latin"], "--language latin"),
    (["people", "shj", "--language", "nope.pcfg"], "no such grammar file"),
    (["space", "build", "OUT", "--preset", "shj", "--samples", "10"], "--samples"),
    (["--grammar", "curi.pcfg", "space", "build", "OUT", "--preset", "shj"], "objects"),
])
def test_bad_options_are_one_line(tmp_path, capsys, monkeypatch, argv, message):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err and "Traceback" not in err


def test_bad_structures_and_grammar(tmp_path):
    f = tmp_path / "s.csv"
    f.write_text("type,d1,d2,d3,category\n1,0,0,0,0\n1,0,0,0,1\n")
    with pytest.raises(shj.HumanDataError, match="line 3: type 1 stimulus"):
        shj.shj_structures(f)
    g = tmp_path / "g.pcfg"
    g.write_text((bl.language_grammar("and_or_not").source and
                  open(bl.language_grammar("and_or_not").source).read()).replace("BOOL -> BOOL not",
                                                                                 "BOOL -> LIT\nLIT -> BOOL not"))
    with pytest.raises(bl.BooleanGrammarError, match="unit production"):
        bl.enumerate_concepts(str(g))
