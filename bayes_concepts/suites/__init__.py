"""Benchmark suites: one package per benchmark, holding its presets, protocols, published
results, figures and extra commands, and registering them in the toolkit's registries.

The core (language, engine, spaces, splits, episodes, oracles, gap, ladder) names no
benchmark: a registry the suites fill names its built-ins ``"bayes_concepts.suites:MODULE"``
and imports, on its first use, the module ``MODULE`` of each suite of :data:`SUITES` that has
one (``protocols``, ``presets``, ``published``, ``plots``, ``parts``, ``command``), in the
order of :data:`SUITES` (so registries list their names in the same order whichever module
was imported first); nothing else of a suite is loaded.  A suite of one's own is a package that registers
its parts the same way, loaded with ``--plugin MODULE`` or an entry point of the group
``bayes_concepts.plugins``.

- :mod:`~bayes_concepts.suites.curi`: CURI's presets and protocols (``paper``, ``curi-release``);
- :mod:`~bayes_concepts.suites.closure`: CLOSURE on CLEVR (``closure``, ``closure-baselines``);
- :mod:`~bayes_concepts.suites.shj`: people (Shepard, Hovland and Jenkins's six types);
- :mod:`~bayes_concepts.suites.conceptworld`: ConceptWorld's grids and experiments;
- :mod:`~bayes_concepts.suites.pairs`: attribute-object pair benchmarks (CZSL, RLCL).
"""
#: the built-in suites, in the order the registries list their entries
SUITES = ("curi", "closure", "shj", "conceptworld", "pairs")
