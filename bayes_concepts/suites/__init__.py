"""Benchmark suites: one package per benchmark, holding its presets, protocols, published
results, figures and extra commands, and registering them in the toolkit's registries.

The core (language, engine, spaces, splits, episodes, oracles, gap, ladder) names no
benchmark: its registries import this package on first use, and this package imports every
built-in suite, in a fixed order (so registries list their names in the same order
whichever module was imported first).  A suite of one's own is a package that registers
its parts the same way, loaded with ``--plugin MODULE`` or an entry point of the group
``bayes_concepts.plugins``.

- :mod:`~bayes_concepts.suites.curi`: CURI's presets and protocols (``paper``, ``curi-release``);
- :mod:`~bayes_concepts.suites.closure`: CLOSURE on CLEVR (``closure``, ``closure-baselines``);
- :mod:`~bayes_concepts.suites.shj`: people (Shepard, Hovland and Jenkins's six types);
- :mod:`~bayes_concepts.suites.conceptworld`: ConceptWorld's grids and experiments;
- :mod:`~bayes_concepts.suites.pairs`: attribute-object pair benchmarks (CZSL, RLCL).
"""
from . import curi, closure, shj, conceptworld, pairs  # noqa: F401  (order: the registries' order)
