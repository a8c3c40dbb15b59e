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
