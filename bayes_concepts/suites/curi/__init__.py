"""CURI (Vedantam et al., 2021): its presets, the paper's and the release's protocols, published results and figures."""
