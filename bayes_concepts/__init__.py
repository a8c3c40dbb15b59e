"""bayes_concepts: Bayesian oracles for few-shot compositional concept learning.

Everything a researcher uses is reachable from the top level::

    import bayes_concepts as bc

    space = bc.HypothesisSpace.build("demo")                  # programs x scenes -> concepts
    splits = bc.load_splits(space, ["concept_iid", "counting"])
    ds = bc.compute_gap(space, splits, n_episodes=2000, seed=0)   # results xarray.Dataset
    print(bc.format_table(bc.summarise(ds)))

The pipeline, one concept per module: :mod:`.lot` (grammar, programs, sampler),
:mod:`.scenes` (scene schema, samplers, files, scene banks), :mod:`.engine` (executor and
storage), :mod:`.spaces` (the concept-space contract, its kinds and build stages), :mod:`.splits`, :mod:`.episodes`, :mod:`.oracles`,
:mod:`.metrics`, :mod:`.gap`, :mod:`.results`, :mod:`.plots`, :mod:`.learners`,
:mod:`.cogsci`, :mod:`.synonyms`.  Extension points are registries (:mod:`.registry`):
``priors``, ``likelihoods``, ``empty_policies``, ``hard_negative_modes``, ``split_rules``,
``rejection_rules`` -- a new one is a single registered function.

Names are imported on first use, so ``import bayes_concepts`` stays fast (torch,
matplotlib and pyro load only when a learner, a figure or a cognitive-science model is
asked for).
"""
from importlib import import_module

__version__ = "0.1.0"

#: public name -> module that defines it
_EXPORTS = {
    # hypothesis spaces and their parts
    "HypothesisSpace": ".spaces.hypothesis_space", "build_space": ".spaces", "TestBank": ".engine.test_bank", "PRESETS": ".presets",
    "Program": ".lot.program", "Grammar": ".lot.grammar", "load_grammar": ".lot.grammar",
    "curi_grammar": ".lot.grammar", "sample_programs": ".lot.sampler", "rejection_rules": ".lot.rejection",
    "SceneBank": ".scenes.bank", "SceneSchema": ".scenes.schema", "sample_scenes": ".scenes.samplers",
    "read_scenes_jsonl": ".scenes.io", "write_scenes_jsonl": ".scenes.io", "load_clevr_scenes": ".scenes.io",
    "evaluate_programs": ".engine.executor", "evaluate": ".engine.interpreter",
    # modalities: scenes as pictures and sounds
    "render_scenes": ".scenes.render", "object_masks": ".scenes.render", "render_scene_png": ".scenes.render",
    "synthesize_scenes": ".scenes.sound", "SoundSettings": ".scenes.sound", "log_mel_spectrogram": ".scenes.sound",
    "write_wav": ".scenes.sound",
    # splits and episodes
    "Split": ".splits", "load_splits": ".splits", "curi_splits": ".splits", "make_split": ".splits",
    "make_splits": ".splits", "load_spec": ".splits", "split_from_predicate": ".splits",
    "split_stats": ".splits", "splits_table": ".splits", "split_rules": ".splits",
    "Episodes": ".episodes", "EpisodeSampler": ".episodes", "sample_episodes": ".episodes",
    "hard_negative_modes": ".episodes",
    # oracles and their registries
    "Oracle": ".oracles.oracle", "OracleSettings": ".oracles.oracle", "strong_and_weak": ".oracles.oracle",
    "priors": ".oracles.priors", "likelihoods": ".oracles.likelihoods", "empty_policies": ".oracles.empty_policies",
    "Fallback": ".oracles.empty_policies", "Registry": ".registry",
    # metrics, gap, audit, results, figures
    "average_precision": ".metrics", "class_balanced_accuracy": ".metrics", "mean_average_precision": ".metrics",
    "compute_gap": ".gap", "summarise": ".gap", "format_table": ".gap", "paired_bootstrap": ".gap",
    "audit": ".gap", "format_audit": ".gap",
    "save_results": ".results", "load_results": ".results",
    "write_figures": ".plots", "plot_comp_gap": ".plots", "plot_entropies": ".plots",
    "plot_synonym_classes": ".plots", "plot_scene_properties": ".plots", "plot_episode": ".plots",
    "plot_modalities": ".plots", "plot_gap_parts": ".plots", "plot_closure_families": ".suites.closure.plots",
    # learners scored beside the oracles
    "make_learner": ".learners", "check_learner": ".learners", "score_learners": ".learners",
    "RandomLearner": ".learners", "NearestPrototype": ".learners", "ProtoNetLearner": ".learners",
    "train": ".learners", "TrainSettings": ".learners", "save_model": ".learners", "load_model": ".learners",
    "encoders": ".learners", "poolings": ".learners", "training_profiles": ".learners",
    # a model outside the toolkit: episodes exported, its predictions file read back and scored
    "export_episodes": ".export", "write_export": ".export", "read_export": ".export",
    "read_predictions": ".predictions", "predictions_learners": ".predictions", "write_predictions": ".predictions",
    # any benchmark: concept spaces from extensions, attribute-object pairs, divergence, reports
    "ExtensionSpace": ".spaces.extension_space", "load_space": ".spaces.concept_space",
    "ConceptSpace": ".spaces.concept_space", "SpaceIndex": ".spaces.space_index", "space_kinds": ".spaces.concept_space",
    "build_pair_space": ".suites.pairs", "read_pairs_layout": ".suites.pairs", "unseen_pairs_spec": ".suites.pairs",
    "reference_limited_spec": ".suites.pairs", "split_divergence": ".divergence", "divergence_table": ".divergence",
    "audit_splits": ".report", "write_report": ".report", "nested_concepts": ".divergence",
    "search_split": ".split_search",
    # one run settled: protocol, splits, oracle settings, episodes, published results, learners
    "resolve": ".run", "Run": ".run",
    # the oracle ladder: rungs between the memoriser and the strong oracle, published model results
    "rungs": ".rungs", "rung_learner": ".rungs", "Rung": ".rungs", "ladder_profile": ".ladder",
    "ladder_summary": ".ladder", "format_ladder": ".ladder", "ladder_correlations": ".ladder",
    "pooled_correlations": ".ladder", "plot_ladder": ".plots",
    # synonyms: which synonym classes are provably one program
    "prove_equivalent": ".synonyms.prover", "find_counterexample": ".synonyms.counterexamples",
    "classify_synonym_classes": ".synonyms.classify",
    # data files shipped with the package
    "data_file": ".resources", "default_grammar_path": ".lot.grammar",
    # errors
    "BayesConceptsError": ".errors", "ProgramError": ".errors", "GrammarError": ".errors", "SceneError": ".errors",
}

#: subpackages and modules reachable as attributes (``bc.plots``, ``bc.learners``, ...)
_MODULES = ("lot", "scenes", "engine", "splits", "episodes", "oracles", "metrics", "gap", "results", "plots",
            "learners", "cogsci", "synonyms", "registry", "bits", "errors", "cli", "suites", "divergence", "report",
            "resources", "protocols", "scale", "spaces", "modalities", "rng", "gap_cells", "split_search",
            "published", "run", "export", "predictions")

__all__ = sorted(_EXPORTS) + ["__version__"]


def __getattr__(name):
    if name in _MODULES:
        return import_module(f".{name}", __name__)
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'bayes_concepts' has no attribute {name!r}")
    value = getattr(import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
