"""Attribute-object pair benchmarks (MIT-States, UT-Zappos, C-GQA in CZSL's layout; RLCL's
lists): pair spaces built from the published files, their split specs, pair files written
back out, and RLCL's published results.

- :mod:`.layout`: reading a benchmark's items and pair files (:func:`read_pairs_layout`);
- :mod:`.space`: the pair space of a layout and its split specs;
- :mod:`.build`: ``space from-pairs`` (:func:`build_pair_space`);
- :mod:`.published`: RLCL's tables, registered as ``rlcl``.
"""
from .layout import PAIR_FILES, PairsLayout, PairsLayoutError, read_pairs_layout
from .space import (IMAGE_LEVEL, K_BY, check_pair_files_target, episode_worlds, episode_worlds_spec,
                    exclusion_lines, pair_space, reference_limited_spec, seen_pairs_per_attribute, set_counts,
                    spec_to_toml, split_pairs, unseen_pairs_spec, write_pair_files)
from .build import build_pair_space
from . import published  # noqa: F401,E402  (registers RLCL's published tables)

__all__ = ["PairsLayout", "PairsLayoutError", "read_pairs_layout", "pair_space", "unseen_pairs_spec",
           "reference_limited_spec", "seen_pairs_per_attribute", "episode_worlds", "episode_worlds_spec",
           "spec_to_toml", "build_pair_space", "exclusion_lines", "PAIR_FILES", "split_pairs", "write_pair_files",
           "check_pair_files_target", "set_counts", "IMAGE_LEVEL", "K_BY"]
