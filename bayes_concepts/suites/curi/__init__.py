"""CURI (Vedantam et al., 2021): its presets, the paper's and the release's protocols, published results and figures."""
from . import presets, protocols, published  # noqa: F401  (register demo, paper, curi; paper, curi-release; tables)
