"""The public API: ``import bayes_concepts as bc`` reaches what a researcher uses, documented."""
import subprocess
import sys

import bayes_concepts as bc

ENTRY_POINTS = ["HypothesisSpace", "Program", "SceneBank", "load_splits", "make_split", "Split", "EpisodeSampler",
                "sample_episodes", "Oracle", "OracleSettings", "strong_and_weak", "compute_gap", "summarise",
                "audit", "save_results", "load_results", "write_figures", "priors", "likelihoods", "empty_policies",
                "hard_negative_modes", "split_rules", "rejection_rules", "make_learner", "check_learner",
                "ExtensionSpace", "render_scenes", "synthesize_scenes"]


def test_all_lists_the_entry_points():
    assert set(ENTRY_POINTS) <= set(bc.__all__)


def test_every_public_name_resolves_and_is_documented():
    for name in bc.__all__:
        obj = getattr(bc, name)
        if name in ("__version__", "PRESETS"):
            continue
        assert (obj.__doc__ or "").strip(), f"bc.{name} has no docstring"


def test_import_is_light():
    code = "import sys, bayes_concepts; print(sorted(m for m in ('torch', 'matplotlib', 'pyro', 'xarray') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_unknown_name_is_an_attribute_error():
    try:
        bc.no_such_name
    except AttributeError as exc:
        assert "no_such_name" in str(exc)
    else:
        raise AssertionError("bc.no_such_name resolved")


def test_scoring_the_oracles_loads_no_torch(small_space_dir, tmp_path):
    """``gap`` scores no model: the learners package's names load on first use, so torch (about
    a second of every process's start) stays unloaded; asking for a neural learner loads it."""
    code = ("import sys\nfrom bayes_concepts.cli import main\n"
            f"status = main(['gap', {str(small_space_dir)!r}, '--split', 'counting', '--episodes', '5', "
            f"'--out', {str(tmp_path / 'r.nc')!r}])\n"
            "print(status, 'torch' in sys.modules)\n"
            "from bayes_concepts.learners import ProtoNetLearner, encoders, poolings, grid_nets\n"
            "from bayes_concepts.registry import Registry\n"
            "print('torch' in sys.modules, all(isinstance(r, Registry) for r in (encoders, poolings, grid_nets)))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-2:] == ["0 False", "True True"]
