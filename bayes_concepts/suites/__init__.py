"""Benchmark suites: one package per benchmark, holding its presets, protocols, published
results, figures and extra commands, and registering them in the toolkit's registries.

Importing this package registers every built-in suite; the registries import it on first use.
"""
