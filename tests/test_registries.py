"""Extension by registration: new priors, likelihoods, weak-empty policies, hard-negative
modes and split rules are registered from outside the package, chosen by name, and used by
compute_gap, the oracles, the episode sampler, split specs and the command line."""
import json
import textwrap

import numpy as np
import pytest
from scipy.special import logsumexp

import bayes_concepts as bc

SHORT = 8


@pytest.fixture
def registered():
    """Register one of each extension for a test, and remove them afterwards."""
    @bc.priors.register("short_only")
    def short_only(space, concepts, settings):
        """log weight 0 for programs of at most 8 tokens, -inf for longer ones"""
        return np.where(np.asarray(space.lengths)[concepts] <= SHORT, 0.0, -np.inf)

    @bc.split_rules.register("max_count", validate=lambda v, where, key: int(v))
    def max_count(space, value, table):
        """hold out concepts true on more than ``value`` scenes"""
        return np.asarray(space.counts) > value

    @bc.likelihoods.register("asymmetric")
    def asymmetric(counts, n_scenes, n_drawn, k, hard, settings):
        """a missed positive costs log 0.01, a false alarm log 0.1"""
        wp = np.arange(k + 1)[None, :, None]
        wn = np.arange(k + 1)[None, None, :]
        return wp * np.log(0.01) + wn * np.log(0.1), np.zeros((1, 1, 1))

    @bc.empty_policies.register("shortest")
    def shortest(oracle):
        """all weight on the oracle's shortest concept"""
        best = oracle.concepts[np.argmin(np.asarray(oracle.space.lengths)[oracle.concepts])]
        return bc.Fallback.fixed([best], [1.0], entropy=0.0)

    @bc.hard_negative_modes.register("most_specific")
    def most_specific(space, concept, positives, alternatives, exclude, n, rng):
        """negatives from the alternative with the smallest extension"""
        if len(alternatives) == 0:
            return np.zeros(0, np.int64)
        a = alternatives[np.argmin(np.asarray(space.counts)[alternatives])]
        ok = space.signature(a) & ~space.signature(concept)
        ok[exclude] = False
        pool = np.flatnonzero(ok)
        return rng.choice(pool, size=min(n, len(pool)), replace=False)

    yield
    for registry, name in ((bc.priors, "short_only"), (bc.split_rules, "max_count"), (bc.likelihoods, "asymmetric"),
                           (bc.empty_policies, "shortest"), (bc.hard_negative_modes, "most_specific")):
        registry.unregister(name)


def test_registered_prior_and_split_rule_drive_compute_gap(small_space, registered):
    space = small_space
    limit = int(np.quantile(space.counts, 0.9))
    split = bc.make_split(space, {"name": "broad", "kind": "held_out", "held_out": {"max_count": limit},
                                  "val_fraction": 0.0})
    assert np.array_equal(split.test, np.flatnonzero(np.asarray(space.counts) > limit))
    assert np.array_equal(split.train, np.flatnonzero(np.asarray(space.counts) <= limit))
    settings = bc.OracleSettings(prior="short_only")
    ds = bc.compute_gap(space, {"broad": split}, ("hard",), 60, settings, seed=1)
    assert json.loads(ds.attrs["oracle_settings"])["prior"] == "short_only"
    assert ds["ap"].notnull().any()
    # the prior is zero on long programs: no posterior ever puts weight on one
    strong, _ = bc.strong_and_weak(space, split, settings)
    eps = bc.EpisodeSampler(space).sample(split.test, 20, "hard", seed=2)
    for e in range(len(eps)):
        ids, probs = strong.fit(eps.support_scenes[e], eps.support_labels[e]).posterior()
        assert (np.asarray(space.lengths)[ids[probs > 0]] <= SHORT).all()


def test_unknown_rule_key_lists_registered_rules(small_space, registered):
    with pytest.raises(bc.BayesConceptsError, match="max_count"):
        bc.make_split(small_space, {"name": "x", "kind": "held_out", "held_out": {"nope": 1}})


def test_registered_likelihood_equals_brute_force(small_space, registered):
    space = small_space
    settings = bc.OracleSettings(likelihood="asymmetric", prior="length")
    oracle = bc.Oracle(space, np.arange(space.n_concepts), settings)
    eps = bc.EpisodeSampler(space).sample(np.arange(space.n_concepts), 5, "hard", seed=3)
    truth = np.array([space.signature(h) for h in range(space.n_concepts)])  # (H, N) bool
    lp = -0.2 * np.asarray(space.lengths, float)
    lp -= logsumexp(lp)
    for e in range(len(eps)):
        scenes, labels = eps.support_scenes[e], eps.support_labels[e].astype(bool)
        pred = truth[:, scenes]
        wp = (labels & ~pred).sum(1)
        wn = (~labels & pred).sum(1)
        logw = lp + wp * np.log(0.01) + wn * np.log(0.1)
        post = np.exp(logw - logsumexp(logw))
        ids, probs = oracle.fit(scenes, eps.support_labels[e]).posterior()
        got = np.zeros(space.n_concepts)
        got[ids] = probs
        kept = got > 0  # the oracle drops concepts below e^-50 of the best
        assert np.allclose(got[kept], post[kept] / post[kept].sum(), atol=1e-12)
        assert post[~kept].sum() < 1e-15
        query = eps.query_scenes[e]
        assert np.allclose(oracle.predict_proba(query), truth[:, query].T.astype(float) @ got, atol=1e-12)


def test_registered_weak_empty_policy(small_space, registered):
    space = small_space
    split = bc.load_splits(space, ["binding_color"])["binding_color"]
    settings = bc.OracleSettings(weak_empty="shortest")
    _, weak = bc.strong_and_weak(space, split, settings)
    eps = bc.EpisodeSampler(space).sample(split.test, 40, "hard", seed=4)
    r = weak.evaluate(eps)
    assert r["empty"].any()
    best = weak.concepts[np.argmin(np.asarray(space.lengths)[weak.concepts])]
    e = int(np.flatnonzero(r["empty"])[0])
    assert r["posterior_entropy"][e] == 0.0
    expected = np.minimum(space.signature(best)[eps.query_scenes[e]].astype(float), 1.0)
    assert np.array_equal(r["query_pred"][e], expected)
    ids, probs = weak.fit(eps.support_scenes[e], eps.support_labels[e]).posterior()
    assert ids.tolist() == [best] and probs.tolist() == [1.0]


def test_registered_hard_negative_mode(small_space, registered):
    space = small_space
    sampler = bc.EpisodeSampler(space)
    ids = np.flatnonzero(np.asarray(space.counts) >= 10)
    eps = sampler.sample(ids, 25, "hard", seed=5, hard_mode="most_specific")
    assert eps.meta["hard_mode"] == "most_specific"
    again = sampler.sample(ids, 25, "hard", seed=5, hard_mode="most_specific")
    assert eps == again
    for e in range(len(eps)):
        h = eps.concept[e]
        sig = space.signature(h)
        for scenes, labels in ((eps.support_scenes[e], eps.support_labels[e]),
                               (eps.query_scenes[e], eps.query_labels[e])):
            assert np.array_equal(labels, sig[scenes].astype(np.int8))
            assert labels[:5].all() and not labels[5:].any()
        assert len(set(eps.support_scenes[e]) | set(eps.query_scenes[e])) == 50
        alts = sampler.alternatives(h, eps.support_scenes[e, :5])
        if len(alts):
            a = alts[np.argmin(np.asarray(space.counts)[alts])]
            real = ~eps.support_topup[e, 5:]
            assert space.signature(a)[eps.support_scenes[e, 5:][real]].all()


def test_cli_takes_choices_from_plugins(small_space_dir, tmp_path, monkeypatch, capsys):
    (tmp_path / "my_plugin.py").write_text(textwrap.dedent('''
        import numpy as np
        import bayes_concepts as bc

        @bc.priors.register("plugin_uniform", replace=True)
        def plugin_uniform(space, concepts, settings):
            """every concept weight 1 (a plugin's prior)"""
            return np.zeros(len(concepts))
    '''))
    monkeypatch.syspath_prepend(str(tmp_path))
    from bayes_concepts.cli import main
    try:
        code = main(["--plugin", "my_plugin", "gap", str(small_space_dir), "--split", "concept_iid", "--episodes",
                     "20", "--negatives", "hard", "--prior", "plugin_uniform", "--json"])
        out = capsys.readouterr().out
        assert code == 0, out
        assert json.loads(out)["results"][0]["split"] == "concept_iid"
        with pytest.raises(SystemExit):
            main(["--plugin", "my_plugin", "gap", "--help"])
        assert "plugin_uniform" in capsys.readouterr().out
    finally:
        if "plugin_uniform" in bc.priors:
            bc.priors.unregister("plugin_uniform")
    assert main(["--plugin", "no_such_plugin_module", "gap", str(small_space_dir)]) == 2
    assert "no_such_plugin_module" in capsys.readouterr().err


# ------------------------------------------------------- built-ins resolve in a fresh process
BUILTINS = [
    ("bayes_concepts.lot.rule_registry", "rejection_rules",
     ("top_forall_non_x", "x_compared_with_itself", "set_quantifier_over_own_property",
      "non_x_set_quantifier_over_own_property")),
    ("bayes_concepts.lot.rejection", "rejection_rules",
     ("top_forall_non_x", "x_compared_with_itself", "set_quantifier_over_own_property",
      "non_x_set_quantifier_over_own_property")),
    ("bayes_concepts.oracles.priors", "priors", ("length", "pcfg", "uniform", "pcfg_release")),
    ("bayes_concepts.oracles.likelihoods", "likelihoods", ("size", "consistent", "noisy", "size_release")),
    ("bayes_concepts.oracles.empty_policies", "empty_policies", ("zero", "prior", "noisy")),
    ("bayes_concepts.episodes", "hard_negative_modes", ("union", "alternative")),
    ("bayes_concepts.splits", "split_rules", ("tokens", "pairs", "counts", "min_length", "programs")),
    ("bayes_concepts.protocols", "protocols", ("paper", "curi-release")),
]


def _fresh(code: str) -> str:
    """Run ``code`` in a fresh interpreter; its stdout (the test fails with its stderr)."""
    import subprocess
    import sys
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("module, name, builtins", BUILTINS, ids=[f"{m}.{n}" for m, n, _ in BUILTINS])
def test_builtins_resolve_in_a_fresh_process_through_the_registry_alone(module, name, builtins):
    out = _fresh(f"import json\nfrom {module} import {name} as r\nprint(json.dumps(list(r.names())))")
    names = json.loads(out.strip().splitlines()[-1])
    assert set(builtins) <= set(names), f"{module}.{name} lacks {sorted(set(builtins) - set(names))}"


def test_release_prior_and_likelihood_need_no_protocols_import():
    out = _fresh(textwrap.dedent("""
        import sys
        from bayes_concepts.oracles import OracleSettings, likelihoods, priors
        settings = OracleSettings(prior="pcfg_release", likelihood="size_release")
        priors.get(settings.prior), likelihoods.get(settings.likelihood)
        print("bayes_concepts.protocols" in sys.modules)
    """))
    assert out.strip().splitlines()[-1] == "False"
    from bayes_concepts.oracles.likelihoods import size_release_likelihood
    from bayes_concepts.oracles.priors import pcfg_release_prior
    from bayes_concepts.suites.curi import release
    assert release.pcfg_release_prior is pcfg_release_prior is bc.priors.get("pcfg_release")
    assert release.size_release_likelihood is size_release_likelihood


def test_modules_and_registries_reachable_from_the_package():
    _fresh("import bayes_concepts as bc; bc.protocols; bc.scale; bc.learners; bc.plots; "
           "bc.priors.get('pcfg_release'); bc.rejection_rules.get('top_forall_non_x')")


def test_listing_order_does_not_depend_on_which_module_was_imported_first():
    import subprocess
    import sys
    seen = set()
    for first in ("image", "sound"):
        code = (f"import bayes_concepts.modalities.{first}\n"
                "from bayes_concepts.modalities import modalities\nprint(' '.join(modalities.names()))\n")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr[-1000:]
        seen.add(out.stdout.strip())
    assert seen == {"image sound"}


def test_protocols_listed_in_one_order_whichever_suite_was_imported_first():
    import subprocess
    import sys
    seen = set()
    for first in ("bayes_concepts.suites.conceptworld.protocols", "bayes_concepts.suites.closure", "bayes_concepts.protocols"):
        code = (f"import {first}\n"
                "from bayes_concepts.protocols import protocols\nprint(' '.join(protocols.names()))\n")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr[-1000:]
        seen.add(out.stdout.strip())
    assert len(seen) == 1
    assert seen.pop().split()[:4] == ["paper", "curi-release", "closure", "closure-baselines"]


def test_user_entries_come_after_the_built_ins():
    from bayes_concepts.registry import Registry
    reg = Registry("thing", builtins=("bayes_concepts.oracles.priors",))
    reg.register("mine", object())
    assert reg.names() == ("mine",) and list(reg) == ["mine"] and dict(reg.items())["mine"] is reg.get("mine")


# ------------------------------------------------------------------ help that reads
def test_choice_help_shows_whole_sentences(capsys):
    """A choice's help is its docstring's first paragraph, however many lines it takes (it was
    cut at the first line: "each hard negative", "an x-free concept"), on one line, without
    reStructuredText markup."""
    from bayes_concepts.cli import main
    from bayes_concepts.registry import describe

    def documented():
        """One sentence over
        two lines with ``code`` and :func:`~bayes_concepts.gap.compute_gap`.

        Not this paragraph."""

    assert describe(documented) == "One sentence over two lines with code and compute_gap"
    with pytest.raises(SystemExit):
        main(["gap", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "each hard negative 1/(N - |ext h|), each easy negative 1/N (a constant); 0 if h mislabels a support " \
           "scene;" in help_text
    assert "an x-free concept keeps that of one of its two quantifiers (pcfg sums both); default length)" in help_text
    for registry in (bc.priors, bc.likelihoods):
        for name, obj in registry.items():
            assert describe(obj).count("(") == describe(obj).count(")"), (name, describe(obj))
