"""CURI's build presets: ``demo`` (seconds; ``make demo`` and the tests), ``paper`` (the paper's
scale: 2,000,000 samples, 990,000 scenes, read from its text) and ``curi`` (the space of CURI's
public release: its grammar file with location values 0..8 and a fourth rejection rule, its
sampler with local retries and release depth 5 -- no nonterminal deeper than 4 -- location
bins 0..7 and the open filter boundaries, > 10 scenes and < 10 %)."""
from __future__ import annotations

from ...presets import PRESETS, Preset

PRESETS.register("demo", Preset("CURI's language at a demo scale (200,000 samples, 100,000 scenes; seconds)",
                                dict(samples=200_000, scenes=100_000, scene_sampler="clevr")))
PRESETS.register("paper", Preset("CURI's paper scale (2,000,000 samples, 990,000 scenes)",
                                 dict(samples=2_000_000, scenes=990_000, scene_sampler="clevr")))
PRESETS.register("curi", Preset("the space of CURI's public release (its grammar file, sampler and filter)",
                                dict(samples=2_000_000, scenes=990_000, scene_sampler="clevr",
                                     grammar_file="curi_release.pcfg", retries="local", max_depth=5,
                                     location_bins=(0, 7), filter_bounds="open")))
