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


def test_a_process_of_its_own_freezes_everything_at_exit_and_still_runs_its_exit_handlers(tmp_path):
    """collect_less: at exit, after the handlers registered later (a weakref.finalize that
    removes a folder, as spilled signatures do, held in a cycle), every object still alive is
    frozen (Python's shutdown collections walk nothing; it was 0.4-2.5 s of a command's exit)."""
    import subprocess
    import sys
    folder = tmp_path / "spill"
    folder.mkdir()
    code = f"""
import atexit, gc, os, shutil, weakref
atexit.register(lambda: print(gc.get_freeze_count() > 2_000_000, os.path.exists({str(folder)!r})))  # runs last
from bayes_concepts.collector import collect_less
collect_less()
collect_less()   # called twice, registered once
class Box: pass
kept = [[Box()] for _ in range(1_000_000)]
held = Box(); held.me = held
weakref.finalize(held, shutil.rmtree, {str(folder)!r}, True)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["True", "False"]
    assert not folder.exists()
