"""People: Shepard, Hovland and Jenkins's six category structures (three binary dimensions),
learned by the sequential ideal observer and fitted to people's learning curves.

    from bayes_concepts.suites.shj import enumerate_concepts, shj_analysis
    concepts = enumerate_concepts("and_or_not")     # every concept over 8 stimuli: l_min, programs, P
    run = shj_analysis("and_or_not", "length", out="shj_out")   # SVI fit to Nosofsky et al. (1994)
    run["summary"]["parameters"], run["summary"]["order_model"], run["summary"]["correlation"]

Modules: :mod:`.boolean` (the enumerated boolean concepts and their space), :mod:`.fit`
(human data, pyro fit, predictions, grid evidence, language comparison), :mod:`.analysis` (the
figure, the files, the whole run).  Their names are imported on first use (pyro and torch
load only when a fit is asked for), so that loading the suites to fill the registries stays
fast.
"""
from ...lazy_names import lazy_getattr

#: public name -> the module of this suite that defines it
_EXPORTS = {
    "SHJ_LANGUAGES": ".boolean", "BooleanConcepts": ".boolean", "boolean_space": ".boolean",
    "enumerate_concepts": ".boolean",
    "compare_languages": ".fit", "fit_shj": ".fit", "grid_posterior": ".fit", "human_errors": ".fit",
    "shj_data": ".fit", "shj_predictions": ".fit", "shj_structures": ".fit", "shj_summary": ".fit",
    "plot_shj_fit": ".analysis", "shj_analysis": ".analysis", "write_shj_outputs": ".analysis",
}

__all__ = sorted(_EXPORTS)

__getattr__ = lazy_getattr(__name__, _EXPORTS)
