"""Ideal observers against people on Shepard, Hovland & Jenkins' six structures (issue 26).

Every fast path against a slow, obvious twin: the enumeration by truth table against every
program of the grammar up to 15 tokens (strings expanded from the productions, run by the
interpreter) and against a plain-Python relaxation over all pairs of truth tables; its
kernels against loops; the vectorised trial-by-trial predictive against Bayes' rule one
concept at a time; the block-error kernel against a loop and against every trial order;
orbit merging against no merging.  Then a tiny fit, the figure, and bad input."""
from __future__ import annotations

import hashlib
import itertools
import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import xarray as xr
from hypothesis import given, settings, strategies as st
from scipy.stats import binom

from bayes_concepts.cli import main
from bayes_concepts.suites.shj import boolean as bl
from bayes_concepts.cogsci import sequential as sq
from bayes_concepts.suites.shj import fit as shj
from bayes_concepts.suites.shj import people
from bayes_concepts.suites.shj.analysis import GID_HUMAN, GID_MODEL, GID_PPC_BAND, plot_shj_fit, shj_tables
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


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), beta=st.one_of(st.just(0.0), st.floats(0.0, 8.0)),
       epsilon=st.one_of(st.just(sq.MIN_EPSILON), st.just(0.5 - 1e-9), st.floats(sq.MIN_EPSILON, 0.4999)),
       prior=st.sampled_from(sq.PRIOR_KINDS), n_concepts=st.integers(1, 16), tied=st.booleans())
def test_block_errors_equal_the_slow_twin_at_every_margin(seed, beta, epsilon, prior, n_concepts, tied):
    """The kernel against its slow twin where errors are tiny (ε at its floor, a large β: block
    errors far below 1e-16, which a kernel taking 1 - P(right) would round away), at ε next to
    1/2, with one concept, with tied lengths and with a structure no concept has; and several β
    scored at once equal to each scored alone."""
    rng = np.random.default_rng(seed)
    design = sq.Design(n_stimuli=4, repeats=2, n_blocks=3)
    ext = bl.extensions(4, rng.choice(16, n_concepts, replace=False))
    lengths = np.full(len(ext), 5.0) if tied else rng.integers(3, 12, len(ext)).astype(float)
    log_pcfg = -lengths * rng.uniform(0.3, 1.0)
    structure = bl.extensions(4, [int(rng.integers(16))])[0]
    states = sq.prefix_states(design, "exact")
    kernel = sq.block_errors(ext, lengths, log_pcfg, structure[None], beta, epsilon, prior=prior, design=design,
                             states=states)[0]
    log_prior = sq.log_prior(prior, beta, lengths, log_pcfg)
    slow = sq.block_errors_slow(ext, log_prior, epsilon, structure, design, states)
    np.testing.assert_allclose(kernel, slow, rtol=1e-9, atol=0)
    data = sq.structure_data(ext, structure[None], lengths, log_pcfg, design, states)
    with torch.no_grad():
        both = sq.block_errors_torch(torch.tensor([1.5, beta], dtype=torch.float64), epsilon, data, prior).numpy()
    np.testing.assert_allclose(both[1, 0], kernel, rtol=1e-12, atol=0)
    assert both.shape == (2, 1, design.n_blocks)


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
    assert data.counts.shape == (6, 16) and (data.n_trials == 640).all() and data.published
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
    ("type,block,p\n", "line 1: expected the columns of a cell table"),
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


# ============================================================================ your own judgements (issue 57)
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "shj" / "made_up_study.csv"


def _posterior(beta=0.26, epsilon=0.40, lapse=0.045, n=40, seed=0):
    """A fixed posterior (draws around one point), so that verdicts are tested without a fit."""
    rng = np.random.default_rng(seed)
    draws = {"beta": beta + 0.01 * rng.standard_normal(n), "epsilon": epsilon + 0.003 * rng.standard_normal(n),
             "lapse": np.clip(lapse + 0.002 * rng.standard_normal(n), 0, 1)}
    return xr.Dataset({k: (("chain", "draw"), v[None]) for k, v in draws.items()},
                      coords={"chain": [0], "draw": np.arange(n)}, attrs={"method": "fixed"})


def _aggregate(path, out):
    """The trial-by-trial file as a cell table of counts, by pandas (the test's own aggregation)."""
    t = pd.read_csv(path, dtype={"stimulus": str})
    t["wrong"] = (t["response"] != t["category"]).astype(int)
    cells = t.groupby(["type", "block"]).agg(errors=("wrong", "sum"), trials=("wrong", "size")).reset_index()
    cells.to_csv(out, index=False)
    return cells


def test_the_formats_read_as_the_same_counts(tmp_path):
    trials = people.read_human(FIXTURE)
    cells = _aggregate(FIXTURE, tmp_path / "cells.csv")
    table = people.read_human(tmp_path / "cells.csv")
    cells.to_csv(tmp_path / "bom.csv", index=False, encoding="utf-8-sig")          # as a spreadsheet saves it
    np.testing.assert_array_equal(people.read_human(tmp_path / "bom.csv").errors, table.errors)
    np.testing.assert_array_equal(trials.errors, table.errors)
    np.testing.assert_array_equal(trials.trials, table.trials)
    assert trials.errors.sum() == cells["errors"].sum() and trials.trials.sum() == len(pd.read_csv(FIXTURE))
    assert trials.format == "trials" and table.format == "counts" and trials.subjects == (3,) * 6
    assert trials.name == "made_up_study" and not trials.published
    assert trials.sha256 == hashlib.sha256(FIXTURE.read_bytes()).hexdigest()
    # the same cells as rates with n, columns in another order
    rates = cells.assign(p_error=cells["errors"] / cells["trials"], n=cells["trials"])
    rates = rates[["p_error", "n", "block", "type"]]
    rates.to_csv(tmp_path / "rates.csv", index=False)
    np.testing.assert_array_equal(people.read_human(tmp_path / "rates.csv").errors, trials.errors)
    # one row per learner, type and block (subject column), summed
    t = pd.read_csv(FIXTURE, dtype={"stimulus": str})
    t["wrong"] = (t["response"] != t["category"]).astype(int)
    per = t.groupby(["subject", "type", "block"]).agg(errors=("wrong", "sum"), trials=("wrong", "size")).reset_index()
    per.to_csv(tmp_path / "per_subject.csv", index=False)
    again = people.read_human(tmp_path / "per_subject.csv")
    np.testing.assert_array_equal(again.errors, trials.errors)
    assert again.subjects == (3,) * 6
    # correct instead of response/category
    t.assign(correct=1 - t["wrong"])[["subject", "type", "block", "trial", "correct"]].to_csv(tmp_path / "c.csv",
                                                                                              index=False)
    np.testing.assert_array_equal(people.read_human(tmp_path / "c.csv").errors, trials.errors)


def test_the_published_table_is_named_only_when_it_is_the_published_file(tmp_path):
    pub = people.read_human()
    assert pub.published and pub.name == people.PUBLISHED_NAME and (pub.trials == 640).all()
    np.testing.assert_array_equal(pub.errors, np.rint(pub.rates * 640))
    copy = tmp_path / "copy.csv"
    copy.write_bytes(Path(pub.source).read_bytes())
    assert people.read_human(copy).published                        # the same bytes elsewhere: by sha256
    edited = tmp_path / "edited.csv"
    edited.write_text(Path(pub.source).read_text().replace("0.2109", "0.2110"))
    with pytest.raises(shj.HumanDataError, match="needs the trials behind each cell"):
        people.read_human(edited)                                     # not published: 640 is not assumed
    mine = people.read_human(edited, trials=640, name="my replication")
    assert not mine.published and mine.name == "my replication"


def test_a_trial_by_trial_file_and_its_table_give_the_same_fit(tmp_path):
    _aggregate(FIXTURE, tmp_path / "cells.csv")
    fits = []
    for human in (FIXTURE, tmp_path / "cells.csv"):
        data = shj.shj_data("and_or_not", "length", method="sampled", n_orders=2, human=human, name="made up")
        assert data.design.n_blocks == 4 and (data.n_trials == 48).all()
        post = shj.fit_shj(data, steps=6, num_samples=20, seed=3)
        pred = shj.shj_predictions(post, data, max_draws=10, seed=3)
        fits.append((post, shj.shj_summary(post, data, pred, seed=3)))
    for v in ("beta", "epsilon", "lapse"):
        np.testing.assert_array_equal(fits[0][0][v].values, fits[1][0][v].values)
    a, b = (dict(s) for _, s in fits)
    assert a.pop("human")["format"] == "trials" and b.pop("human")["format"] == "counts"
    a.pop("fit_seconds"), b.pop("fit_seconds")
    assert a == b


def test_fewer_trials_per_cell_widen_the_predictive_intervals():
    rates = shj.human_errors().values
    post = _posterior()
    width = {}
    for n in (20, 640):
        data = shj.shj_data("and_or_not", "length", method="sampled", n_orders=2, human=rates, trials=n)
        assert (data.n_trials == n).all() and (data.counts == np.rint(rates * n)).all()
        pred = shj.shj_predictions(post, data, max_draws=40, seed=0)
        width[n] = float((pred["ppc_high"] - pred["ppc_low"]).mean())
        assert json.loads(pred.attrs["trials_per_cell"]) == n
        order = shj_tables(pred)["order"]                              # the people's intervals, from their counts
        assert (order["people_low"] < order["people_high"]).all()
        width[f"people {n}"] = float((order["people_high"] - order["people_low"]).mean())
    assert width[20] > 3 * width[640] and width["people 20"] > 3 * width["people 640"]


def test_a_reversed_study_gets_the_verdict_that_the_model_disagrees():
    rates = shj.human_errors().values
    post = _posterior()
    data = shj.shj_data("and_or_not", "length", method="sampled", n_orders=2, human=rates[::-1], trials=640,
                        name="reversed study")
    s = shj.shj_summary(post, data, shj.shj_predictions(post, data, max_draws=40))
    assert s["people_order"]["order"].startswith("VI < V < ") and s["people_order"]["order"].endswith("< I")
    ag = s["agreement"]
    assert ag["verdict"] == "disagrees" and ag["probability"] < 0.05 and ag["kendall_tau"]["at_mean"] < 0
    assert "VI < I" in ag["failed"] and "reversed study" in ag["text"]
    assert "human_order" not in s and "order_check" not in s         # the published order is not theirs
    # the published study against the same model: its own order, and the published one
    pub = shj.shj_data("and_or_not", "length", method="sampled", n_orders=2)
    p = shj.shj_summary(post, pub, shj.shj_predictions(post, pub, max_draws=40))
    assert p["agreement"]["verdict"] in ("agrees", "partly agrees") and p["agreement"]["kendall_tau"]["at_mean"] > 0.5
    assert p["human_order"] == shj.HUMAN_ORDER and "order_check" in p


def test_people_order_groups_what_the_counts_do_not_tell_apart():
    rates = np.tile(np.array([[0.05], [0.10], [0.20], [0.205], [0.30], [0.40]]), (1, 8))
    few = people.people_order(people.read_human(rates, trials=40), seed=1)
    many = people.people_order(people.read_human(rates, trials=40000), seed=1)
    assert many["order"] == "I < II < III < IV < V < VI" and many["comparisons"]["III < IV"] > 0.95
    assert "{III, IV}" in few["order"] and "III < IV" not in few["comparisons"]
    assert few == people.people_order(people.read_human(rates, trials=40), seed=1) | {"draws": few["draws"],
                                                                                     "means": few["means"]}


def test_figure_and_json_name_the_study_and_record_its_sha256(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["people", "shj", "--human", str(FIXTURE), "--name", "a made-up study", "--orders", "2",
                 "--steps", "5", "--samples", "20", "--draws", "5", "--seed", "1", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "a made-up study" in printed and "verdict: the model's order" in printed
    s = json.loads((out / "shj_people.json").read_text())
    h = s["human"]
    assert h["name"] == "a made-up study" and h["file"] == str(FIXTURE) and not h["published"]
    assert h["sha256"] == hashlib.sha256(FIXTURE.read_bytes()).hexdigest()
    assert h["trials"] == people.read_human(FIXTURE).trials.tolist() and h["subjects_per_type"]["VI"] == 3
    assert s["title"].startswith("People (a made-up study) vs the ideal observer")
    assert "Nosofsky" not in json.dumps(s) and "human_order" not in s
    assert s["settings"]["n_trials_per_cell"] == 48
    data = shj.shj_data("and_or_not", "length", method="sampled", n_orders=2, human=FIXTURE, name="a made-up study")
    pred = shj.shj_predictions(_posterior(), data, max_draws=5)
    axes, _ = plot_shj_fit(pred, title=s["title"])
    assert axes[0].figure.texts[0].get_text() == s["title"]          # suptitle
    labels = [t.get_text() for t in axes[0].get_legend().get_texts()]
    assert "people (a made-up study)" in labels and axes[0].get_title() == "type I"


def test_structures_are_checked_and_named(tmp_path):
    shipped = pd.read_csv(people.data_file("human", "shj_structures.csv"))
    assert people.read_structures().kind == "shj"
    # a symmetry of the cube (d1 flipped, d2 and d3 swapped) and the categories swapped: still SHJ's six
    moved = shipped.assign(d1=1 - shipped["d1"], d2=shipped["d3"], d3=shipped["d2"], category=1 - shipped["category"])
    moved.to_csv(tmp_path / "moved.csv", index=False)
    assert people.read_structures(tmp_path / "moved.csv").kind == "shj"
    # types 2 and 3 swapped: the user's own numbering, named as such
    swapped = shipped.assign(type=shipped["type"].replace({2: 3, 3: 2}))
    swapped.to_csv(tmp_path / "swapped.csv", index=False)
    own = people.read_structures(tmp_path / "swapped.csv")
    assert own.kind == "own" and own.shj_types == ("I", "III", "II", "IV", "V", "VI") and own.name == "swapped"
    # type I split 5/3: refused, or accepted as one's own
    unbalanced = shipped.copy()
    unbalanced.loc[(unbalanced["type"] == 1) & (unbalanced["category"] == 0), "category"] = [1, 0, 0, 0]
    unbalanced.to_csv(tmp_path / "unbalanced.csv", index=False)
    with pytest.raises(shj.HumanDataError, match="type 1 splits the stimuli 3/5"):
        people.read_structures(tmp_path / "unbalanced.csv")
    u = people.read_structures(tmp_path / "unbalanced.csv", unbalanced=True)
    assert u.kind == "own" and u.unbalanced and u.shj_types[0] is None
    assert u.provenance()["types"]["I"]["sizes"] == [3, 5]
    data = shj.shj_data("and_or_not", "length", method="sampled", n_orders=2, structures=tmp_path / "swapped.csv")
    assert not data.published
    s = shj.shj_summary(_posterior(), data, shj.shj_predictions(_posterior(), data, max_draws=5))
    assert "human_order" not in s and s["structures"]["kind"] == "own"
    axes, _ = plot_shj_fit(shj.shj_predictions(_posterior(), data, max_draws=5))
    assert axes[1].get_title() == "structure 2 (SHJ III)"


_TRIAL_HEAD = "subject,type,block,trial,correct\n"


@pytest.mark.parametrize("text, message", [
    ("subject,block,trial,correct\ns1,1,1,1\n", "line 1: a trial-by-trial file needs the column type"),
    ("type,errors,trials\n1,2,3\n", "line 1: a cell table of counts needs the column block"),
    (_TRIAL_HEAD + "s1,1,,1,1\n", "line 2: block is empty"),
    (_TRIAL_HEAD + "s1,,1,1,1\n", "line 2: type is empty"),
    ("type,block,errors,trials\n1,1,12,10\n", "line 2: errors 12 exceed trials 10"),
    ("type,block,p_error,n\n1,1,-0.1,20\n", "line 2: p_error -0.1 is outside [0.0, 1.0]"),
    (_TRIAL_HEAD + "".join(f"s{t},{t},1,1,1\n" for t in range(1, 7)) + "s7,2,,,\n",
     "line 8: subject s7 (type 2) has no trials"),
    ("subject,type,block,errors,trials\n" + "".join(f"s{t},{t},1,1,2\n" for t in range(1, 7)) + "s7,3,1,0,0\n",
     "line 8: subject s7 (type 3) has no trials"),
    (_TRIAL_HEAD + "s1,1,1,1,maybe\n", "line 2: correct 'maybe' is not 1/0"),
    (_TRIAL_HEAD + "s1,1,1,1,1\ns1,1,1,1,0\n", "line 3: subject s1 type 1 block 1 trial 1 is given twice"),
    (_TRIAL_HEAD + "".join(f"s1,1,1,{k},1\n" for k in range(1, 18)), "more than 16 trials in type 1 block 1"),
    ("type,block,p_error\n" + "".join(f"{t},1,0.1\n" for t in range(1, 7)), "needs the trials behind each cell"),
    ("type,block,errors,trials\n" + "".join(f"{t},1,1,2\n" for t in range(1, 7)) + "1,2,0,1\n",
     "type 2 lacks block 2"),
])
def test_bad_study_files_are_one_line(tmp_path, capsys, text, message):
    f = tmp_path / "study.csv"
    f.write_text(text)
    with pytest.raises(shj.HumanDataError, match=re.escape(message)):
        people.read_human(f)
    assert main(["people", "shj", "--human", str(f)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(f) in err and message in err and "Traceback" not in err


def test_bad_structures_and_options_are_one_line(tmp_path, capsys):
    shipped = pd.read_csv(people.data_file("human", "shj_structures.csv"))
    shipped.loc[(shipped["type"] == 1) & (shipped["category"] == 1), "category"] = [0, 1, 1, 1]
    f = tmp_path / "five_three.csv"
    shipped.to_csv(f, index=False)
    for argv, message in ((["--structures", str(f)], "type 1 splits the stimuli 5/3"),
                          (["--unbalanced"], "--unbalanced accepts --structures"),
                          (["--trials", "20"], "--trials gives the trials"),
                          (["--human", str(FIXTURE), "--trials", "20"], "--trials is for a table of rates")):
        assert main(["people", "shj", *argv]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and message in err and "Traceback" not in err


def test_the_published_study_fits_as_committed():
    """The published table through the counts path: the grid check (deterministic) equals the
    committed benchmark's, held-out blocks included."""
    committed = json.loads((Path(__file__).resolve().parents[1] / "benchmarks" / "results" /
                            "shj_fit.json").read_text())["fit"]["grid_check"]
    data = shj.shj_data("and_or_not", "length")
    g = shj.grid_posterior(data, n_grid=12)
    assert g["held_out"]["log_predictive"] == pytest.approx(committed["held_out"]["log_predictive"], abs=1e-6)
    assert g["log_evidence"] == pytest.approx(committed["log_evidence"], abs=1e-6)
    for k, v in committed["posterior_mean"].items():
        assert g["posterior_mean"][k] == pytest.approx(v, rel=1e-9)
