"""The garbage collector's setting around a build: fewer collections inside, as it was after."""
import gc

import pytest

from bayes_concepts.collector import COLLECT_EVERY, fewer_collections
from bayes_concepts.spaces.hypothesis_space import HypothesisSpace


@pytest.fixture
def python_default():
    """Python's own thresholds during the test (the suite's processes collect less), put back after."""
    kept = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield (700, 10, 10)
    gc.set_threshold(*kept)


def test_fewer_collections_inside_and_the_setting_back_after(python_default):
    with fewer_collections():
        assert gc.get_threshold() == (COLLECT_EVERY, 10, 10)
    assert gc.get_threshold() == python_default
    with pytest.raises(KeyError):
        with fewer_collections(1234):
            assert gc.get_threshold()[0] == 1234
            raise KeyError("a block that fails")
    assert gc.get_threshold() == python_default


@pytest.mark.parametrize("threshold", [0, COLLECT_EVERY, 10 * COLLECT_EVERY])
def test_a_process_that_collects_as_rarely_or_never_is_left_alone(python_default, threshold):
    gc.set_threshold(threshold, 10, 10)
    with fewer_collections():
        assert gc.get_threshold() == (threshold, 10, 10)
    assert gc.get_threshold() == (threshold, 10, 10)


def test_a_build_collects_less_and_leaves_the_setting_as_it_was(python_default):
    seen = []
    space = HypothesisSpace.build(samples=300, scenes=300, seed=0, log=lambda line: seen.append(gc.get_threshold()))
    assert space.n_concepts > 0 and seen
    assert {t[0] for t in seen} == {COLLECT_EVERY}
    assert gc.get_threshold() == python_default
