"""Building a space from given programs runs the same stages as a sampled build."""
import numpy as np
import pytest

from bayes_concepts.spaces.hypothesis_space import HypothesisSpace
from bayes_concepts.errors import BayesConceptsError
from bayes_concepts.lot import curi_grammar, sample_programs

SEED, SAMPLES, SCENES = 4, 15_000, 4_000

RELEASED_SIZE = {"large": "0.7", "small": "0.35"}


def released_form(postfix: str) -> str:
    """A program as CURI's release printed it: ``lambda S.`` first, sizes as numbers."""
    return "lambda S. " + " ".join(RELEASED_SIZE.get(t, t) for t in postfix.split())


def sampled_programs(seed, n):
    """The programs a sampled build of ``seed`` draws, in draw order (as build_fields seeds them)."""
    seeds = np.random.SeedSequence(seed).generate_state(3, np.uint32)
    g = curi_grammar()
    return sample_programs(n, g, seed=int(seeds[0]), max_depth=g.max_depth).strings()


@pytest.fixture(scope="module")
def sampled():
    return HypothesisSpace.build(samples=SAMPLES, scenes=SCENES, seed=SEED)


@pytest.fixture(scope="module")
def given(tmp_path_factory):
    path = tmp_path_factory.mktemp("programs") / "released.txt"
    texts = [released_form(p) for p in sampled_programs(SEED, SAMPLES)]
    assert any("0.7" in t for t in texts) and any("0.35" in t for t in texts)
    path.write_text("\n".join(texts) + "\n", encoding="utf-8")
    return HypothesisSpace.from_programs(path, scenes=SCENES, seed=SEED), path


def test_released_strings_give_the_sampled_build(sampled, given):
    space, _ = given
    assert space.programs == sampled.programs
    for name in ("lengths", "counts", "synonym_classes", "signatures", "scene_codes"):
        assert np.array_equal(getattr(space, name), getattr(sampled, name)), name
    assert np.array_equal(space.test_bank.scene_ids, sampled.test_bank.scene_ids)
    assert np.array_equal(space.test_bank.signatures, sampled.test_bank.signatures)
    # the grammar's log-probability of each program equals the sampler's
    assert np.allclose(space.log_pcfg, sampled.log_pcfg, rtol=0, atol=1e-9)
    for stage in ("unique", "after_rejection", "after_firing_filter", "after_collapse_dedupe", "synonym_classes",
                  "test_bank"):
        assert space.stages[stage] == sampled.stages[stage], stage
    assert space.stages["given"] == SAMPLES
    assert space.params["programs_from"]["programs"] == SAMPLES


def test_given_programs_round_trip_through_the_store(given, tmp_path):
    space, _ = given
    space.save(tmp_path / "s")
    assert HypothesisSpace.load(tmp_path / "s") == space


def test_a_bad_program_names_file_and_line(tmp_path):
    path = tmp_path / "p.txt"
    path.write_text("x color? red = exists=\nx color? = exists=\n", encoding="utf-8")
    with pytest.raises(BayesConceptsError, match=r"p\.txt line 2: "):
        HypothesisSpace.from_programs(path, scenes=1000)


def test_cli_builds_from_a_program_file(given, tmp_path):
    from bayes_concepts.cli import main
    _, path = given
    out = tmp_path / "cli"
    assert main(["space", "build", str(out), "--programs", str(path), "--scenes", str(SCENES),
                 "--seed", str(SEED), "--quiet"]) == 0
    assert HypothesisSpace.load(out).programs == given[0].programs
