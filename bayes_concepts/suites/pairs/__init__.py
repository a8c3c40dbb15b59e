"""Attribute-object pair benchmarks (MIT-States, UT-Zappos, C-GQA in CZSL's layout; RLCL's
lists): pair spaces built from the published files, their split specs, pair files written
back out, the files fetched at pinned commits, and RLCL's published results.

- :mod:`.layout`: reading a benchmark's items and pair files (:func:`read_pairs_layout`);
- :mod:`.space`: the pair space of a layout and its split specs;
- :mod:`.build`: ``space from-pairs`` (:func:`build_pair_space`);
- :mod:`.fetch`: ``data fetch`` (the published files, at pinned commits);
- :mod:`.published`, :mod:`.parts`, :mod:`.command`: what the suite registers.

Names are imported on first use, so that loading the suite's registrations stays light.
"""
from ...lazy_names import lazy_getattr

#: public name -> the module of this suite that defines it
_EXPORTS = {
    "PAIR_FILES": ".layout", "PairsLayout": ".layout", "PairsLayoutError": ".layout", "read_pairs_layout": ".layout",
    "IMAGE_LEVEL": ".space", "K_BY": ".space", "check_pair_files_target": ".space", "episode_worlds": ".space",
    "episode_worlds_spec": ".space", "exclusion_lines": ".space", "pair_space": ".space",
    "reference_limited_spec": ".space", "seen_pairs_per_attribute": ".space", "set_counts": ".space",
    "spec_to_toml": ".space", "split_pairs": ".space", "unseen_pairs_spec": ".space", "write_pair_files": ".space",
    "build_pair_space": ".build",
}

__all__ = sorted(_EXPORTS)

__getattr__ = lazy_getattr(__name__, _EXPORTS)
