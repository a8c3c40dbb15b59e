"""The ladder's order, defaults, oracle rungs and README columns are declared by each rung's
registration (bayes_concepts/rungs/rung.py) and read from the registry everywhere: a new default
rung is one registration."""
from __future__ import annotations

from bayes_concepts import ladder
from bayes_concepts.rungs import (LADDER_ORDER, Rung, default_rungs, ladder_order, oracle_names, readme_columns,
                                  rungs)


def test_the_built_in_ladder():
    assert LADDER_ORDER == ladder_order() == ("memoriser", "compound", "atom", "bounded_length", "sampling",
                                              "sampling_learned", "mcmc", "learned_prior", "learned_prior_parent",
                                              "strong")
    assert ladder.DEFAULT_RUNGS == default_rungs() == ("memoriser", "compound", "atom", "bounded_length", "sampling",
                                                       "learned_prior", "learned_prior_parent", "strong")
    assert oracle_names() == {"memoriser": "weak", "compound": "compound", "atom": "atom", "strong": "strong"}
    assert readme_columns()[:5] == ("memoriser", "compound", "atom", "bounded_length", "sampling[n=100]")


def test_a_new_default_rung_is_one_registration():
    strong = rungs.get("strong")
    rungs.register("toy_between", Rung("toy_between", "a toy", "knows what the strong oracle knows", strong.build,
                                       position=35, default=True, columns=("toy_between",)))
    try:
        assert ladder_order().index("toy_between") == ladder_order().index("bounded_length") + 1
        assert default_rungs().index("toy_between") == default_rungs().index("bounded_length") + 1
        assert [name for name, _ in ladder.parse_rungs(None)][4] == "toy_between"
        assert readme_columns()[4] == "toy_between"
    finally:
        rungs.unregister("toy_between")
    assert "toy_between" not in default_rungs()
