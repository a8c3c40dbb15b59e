"""CURI's two protocols: ``paper`` (the paper's text) and ``curi-release`` (what its public release computed).

``paper``
    the paper's text: the nine splits of ``hypotheses/splits/`` (held-out val carved from
    the held-out concepts), the length prior w = exp(-0.2·l(h)), the deterministic
    (``consistent``) likelihood, hard negatives in support *and* query, the strong oracle
    over H_train ∪ H_test.
``curi-release``
    what the release computed: the nine splits of ``hypotheses/splits_curi_release/``
    (the release's held-out pairs and token rules, Binding dropping programs that mix
    held-out and training values, Complexity counted on the release's strings, val = test),
    the sampler's log-probability as prior (``pcfg_release``), the release's size likelihood as
    it ran (``size_release``: its positive count was always 0, so only the -log(N - |h|) term
    of every support scene remains; with random negatives the posterior is the prior on the
    consistent concepts), random query negatives, the weak posterior = the strong one restricted to H_train and
    renormalised (all zeros when nothing fits: ``weak_empty="zero"``), the strong oracle over
    every concept.

Both score AP on the space's test bank (3 positives per concept) and CBA on the query set.
"""
from __future__ import annotations

from ...oracles import OracleSettings
from ...protocols import Protocol, protocols

protocols.register("paper", Protocol(
    "paper", "the paper's text: its nine splits, length prior (beta 0.2), deterministic likelihood, hard query "
    "negatives", "splits", OracleSettings(prior="length", beta=0.2, likelihood="consistent", weak_empty="zero")))
protocols.register("curi-release", Protocol(
    "curi-release", "CURI's public release: its splits, the sampler's prior, its size likelihood as it ran "
    "(negatives only), random query negatives, strong oracle over every concept", "splits_curi_release",
    OracleSettings(prior="pcfg_release", likelihood="size_release", weak_empty="zero"), query_negatives="random",
    strong_knows_all=True, drop_mixed=("binding_color", "binding_shape")))
