"""One run, settled: which splits, oracle settings, episodes, published results and learners a
comp-gap, ladder, audit, training or split search computes with.

Every rule that decides a run lives here and is applied once, so the command line and Python
cannot disagree::

    import bayes_concepts as bc

    run = bc.resolve(space, splits=["counting"], prior="uniform")   # a Run
    ds = run.gap(n_episodes=2000, seed=0)                             # what `gap` computes
    rows = run.audit(n_episodes=2000)                                 # what `audit` computes

:func:`resolve` takes the space, a protocol (a name of :data:`~bayes_concepts.protocols.protocols`
or None), the split names (None: every split on offer), split spec files, and the oracle and
episode settings.  The rules:

- **protocol**: given, its splits (and the specs' splits, treated by it), its oracle settings,
  query negatives and hard-negative mode apply; an oracle or episode setting given explicitly
  replaces the protocol's value for this run (an override, recorded in the results).  Left
  out, a space built with CURI's release grammar (``space build --preset curi``) is computed
  as protocol ``curi-release`` -- its splits *and* its oracle settings -- unless split spec
  files are given (:func:`release_protocol`; every command and the API alike, and
  :attr:`Run.chosen_by_space` says so).  Otherwise the space's own splits and the specs',
  with the settings given (defaults: :class:`~bayes_concepts.oracles.OracleSettings`).
- **splits**: a space that offers none is one error naming what to give
  (:func:`no_splits_error`); a protocol's run of all its splits leaves out, counted and
  shown, a split no episode can be drawn from (``skip_undrawable``).
- **episodes**: the shape given, else each split spec's ``[episodes]`` table, else 5+20.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .errors import BayesConceptsError
from .params import Settled

#: OracleSettings fields a protocol fixes and a run may override.
SETTINGS_FIELDS = ("prior", "beta", "likelihood", "epsilon", "weak_empty", "ap_tolerance")
#: Episode settings a protocol fixes and a run may override.
EPISODE_FIELDS = ("query_negatives", "hard_mode")
#: Everything a protocol fixes, in the order overrides are named.
PROTOCOL_FIXES = SETTINGS_FIELDS + EPISODE_FIELDS


class RunError(BayesConceptsError):
    """A run that cannot be settled: no splits, an unknown setting, a bad value (one line;
    ``field``: the setting whose value was refused, when one was)."""

    def __init__(self, message: str, field: str | None = None):
        super().__init__(message)
        self.field = field


# ------------------------------------------------------------------ the space's splits and protocols
def release_protocol(space):
    """The ``curi-release`` protocol when ``space`` was built with CURI's release grammar (its
    manifest's ``params.grammar.file`` is ``curi_release.pcfg``: ``space build --preset curi``),
    else None.  Such a space has no built-in splits of its own: its splits are the protocol's."""
    grammar = space.params.get("grammar")
    if isinstance(grammar, dict) and grammar.get("file") == "curi_release.pcfg":
        from .protocols import get_protocol
        return get_protocol("curi-release")
    return None


def suggested_protocols(space):
    """The protocols a space without split specs could be scored with, as the first registered
    protocol's :meth:`~bayes_concepts.protocols.Protocol.suggestion` for ``space`` that offers
    one (a :class:`~bayes_concepts.protocols.Suggestion`), or None."""
    from .protocols import protocols
    for _, protocol in protocols.items():
        hint = protocol.suggestion(space)
        if hint is not None:
            return hint
    return None


def no_splits_error(space, what: str, where=None, protocols: bool = True) -> RunError:
    """The one-line error for a space that offers no split to ``what`` (``where``: how the
    space is named, default its path); with ``protocols`` it names a protocol to give when one
    applies.  Every reason it states is true of the space: a space built with CURI's release
    grammar never gets here (its splits are protocol ``curi-release``'s)."""
    hint = suggested_protocols(space) if protocols else None
    why = (hint.why if hint is not None and hint.why
           else "it has no saved split specs and lists no built-in splits (a space of CURI's grammar does)"
           if space.has_grammar
           else "it has no saved split specs")
    return RunError(f"{where or space.path}: no splits to {what}: {why}; give --spec FILE (a split spec, TOML)"
                    + (f" or --protocol {hint.names} ({hint.what})" if hint is not None else ""))


def split_list(names):
    """Split names as a list, None for all (None, empty, or ``all`` alone); ``all`` beside
    other names is an error."""
    if names is None or isinstance(names, str) and names == "all":
        return None
    names = [names] if isinstance(names, str) else list(names)
    if not names or names == ["all"]:
        return None
    if "all" in names:
        raise RunError(f"splits {' '.join(names)}: 'all' stands alone (it means every split)")
    return names


def dropped_conditions_note(splits) -> list:
    """Lines on the ConceptWorld conditions a protocol could not make a split of on this space,
    once each."""
    seen = {}
    for split in splits.values():
        seen.update(getattr(split, "dropped_conditions", None) or {})
    return [f"note: condition {c!r} left out: {why}" for c, why in seen.items()]


def results_split(ds, space, name, specs=None, protocol=None, results: str = "the results"):
    """Split ``name`` made again on ``space`` as results ``ds`` were computed with it, for the
    episode view: from the ``--spec`` files ``specs`` when one defines it, else from the spec
    the results recorded (:func:`bayes_concepts.gap.recorded_splits`), else a split of the
    results' protocol (or of ``protocol``) or of the space; treated by the protocol the results
    were computed with.  A split made again whose concepts differ from the recorded ones, a
    ``protocol`` other than the results', and a split made from a Python predicate (no spec to
    make it from) are one-line errors."""
    from .gap import recorded_splits
    from .protocols import get_protocol
    from .splits import make_split, make_splits, space_splits
    recorded = ds.attrs.get("protocol")
    protocol = get_protocol(protocol)
    if protocol is not None and recorded and recorded != protocol.name:
        raise BayesConceptsError(f"--protocol {protocol.name}: {results} were computed with protocol {recorded}")
    proto = get_protocol(recorded) if recorded else protocol
    record = recorded_splits(ds).get(name) or {}
    spec = record.get("spec") if isinstance(record.get("spec"), dict) else None
    own = make_splits(space, specs or ())
    if name in own:
        split = proto.adapt(space, own[name]) if proto is not None else own[name]
    elif spec is not None and spec.get("kind") in ("all", "random", "held_out"):
        split = make_split(space, spec)
        treated_by = record.get("protocol")
        if treated_by:
            split = get_protocol(treated_by).adapt(space, split)
    elif spec is not None and spec.get("kind") == "predicate":
        raise BayesConceptsError(f"--episode-split {name}: the split of {results} was made from a Python predicate "
                                 "(split_from_predicate), which a command cannot make again; draw its episode view "
                                 "in Python (plot_episode), or give a spec file defining it with --spec")
    elif proto is not None:
        split = proto.splits(space, [name])[name]
    else:
        split = space_splits(space, [name])[name]
    want = record.get("concepts_sha256")
    if want and split.concepts_sha256() != want:
        raise BayesConceptsError(f"--episode-split {name}: the split made here has other concepts than the one "
                                 f"{results} were computed with; give the spec file it was made from with --spec")
    return split


# ------------------------------------------------------------------ the run
@dataclass
class Run(Settled):
    """One settled run: the space, its splits and every setting a computation over them uses.

    space; splits ``{name: Split}``; protocol (a :class:`~bayes_concepts.protocols.Protocol`
    or None); chosen_by_space (the protocol was chosen because the space was built with its
    grammar); settings (:class:`~bayes_concepts.oracles.OracleSettings`); query_negatives and
    hard_mode (how episodes draw their query and hard negatives); overrides (the protocol's
    values replaced for this run, as :meth:`Protocol.record` records them) and overridden
    (``{field: value}`` given explicitly over the protocol); episode_shape (an
    :class:`~bayes_concepts.episodes.EpisodeShape` or None); names (the split names asked,
    None for all); specs (the spec files); skip_undrawable (a protocol's run of all its
    splits leaves out a split no episode can be drawn from, counted and shown)."""

    space: object
    splits: dict
    settings: object
    protocol: object = None
    chosen_by_space: bool = False
    query_negatives: str | None = None
    hard_mode: str = "union"
    overrides: dict = field(default_factory=dict)
    overridden: dict = field(default_factory=dict)
    episode_shape: object = None
    names: list | None = None
    specs: tuple = ()
    skip_undrawable: bool = False
    #: how an override is named in :meth:`describe` (``field -> text``; default ``field=value``;
    #: the command line names its options: ``--prior length``)
    naming: object = None

    # ---------------------------------------------------------------- what the run offers
    def every_split(self) -> dict:
        """Every split the run could score (all of the protocol's or the space's, and the specs'),
        not only those asked for."""
        if self.names is None:
            return self.splits
        if self.protocol is not None:
            return self.protocol.splits_with(self.space, None, self.specs)
        from .splits import space_splits
        return space_splits(self.space, None, self.specs)

    @property
    def episode_options(self) -> dict:
        """The keyword arguments every episode sampler of this run takes."""
        return {"query_negatives": self.query_negatives, "hard_mode": self.hard_mode}

    def published(self, given=None):
        """The published results a ladder of this run is compared with: ``given`` (a benchmark
        name, a TOML file, a :class:`~bayes_concepts.published.PublishedResults`, or ``"none"``),
        else the protocol's (:meth:`Protocol.published`), else the first registered published
        results whose conditions include every split name (CURI's for CURI's splits); None
        for ``"none"`` or when no default fits.  Checked against every split the run offers: the
        conditions it shares with them are ranked and the others named (:meth:`not_splits`); a
        :class:`~bayes_concepts.published.PublishedError` when none is common, or none is among
        the splits scored.  A name that is neither a benchmark nor a file lists the benchmarks."""
        from pathlib import Path
        from . import published as pub
        if given == "none":
            return None
        if given is not None and not isinstance(given, str):
            results = given
        elif given is not None:
            if given not in pub.benchmarks() and not Path(given).exists():
                raise pub.PublishedError(f"--published {given}: neither a benchmark with published results "
                                         f"({', '.join(pub.benchmarks())}) nor a file (TOML, in the format of "
                                         "hypotheses/published/README.md); or none, to compare with no models")
            results = pub.load(given) if given in pub.benchmarks() else pub.read(given)
        else:
            results = self.protocol.published() if self.protocol is not None else None
            if results is None:
                for name in pub.published_results.names():
                    candidate = pub.load(name)
                    if self.splits and set(self.splits) <= set(candidate.conditions()):
                        results = candidate
                        break
        if results is not None:
            self.not_splits(results)
        return results

    def not_splits(self, published) -> list:
        """The conditions of ``published`` that are no split this run offers (left out of the
        correlations, and named); a :class:`~bayes_concepts.published.PublishedError` when none of
        its conditions is a split, or none is among the splits scored (nothing to correlate)."""
        from .published import PublishedError
        every = list(self.every_split())
        common, others = published.coverage(every)
        source = published.source or published.benchmark
        where = self.space.path or "the space"
        if not common:
            raise PublishedError(f"{source}: none of its conditions ({', '.join(others)}) is a split of {where} "
                                 f"({', '.join(every)}): nothing to correlate with; give results for these splits, "
                                 "or --published none")
        if not set(common) & set(self.splits):
            raise PublishedError(f"{source}: none of the splits scored ({', '.join(self.splits)}) has published "
                                 f"numbers (it has {', '.join(common)} of this space): add one to --split, or "
                                 "--published none")
        return others

    def predictors(self) -> dict:
        """The baseline predictors of each split's difficulty (:mod:`bayes_concepts.difficulty`)."""
        from .difficulty import split_predictors
        return split_predictors(self.space, self.splits, episode_shape=self.episode_shape,
                                chance_levels=self.protocol.chance_levels() if self.protocol is not None else None)

    def learners(self, specs, seed: int = 0, allow_other_space: bool = False) -> dict:
        """The learners ``specs`` (model directories, reference learner names) to score beside
        the oracles on this run's splits (:func:`~bayes_concepts.learners.learners_for_gap`)."""
        if not specs:
            return {}
        from .learners import learners_for_gap
        return learners_for_gap(self.space, self.splits, list(specs), seed, allow_other_space=allow_other_space)

    def predictions(self, files, names=None, negatives=("hard", "easy"), n_episodes: int = 20_000, seed: int = 0,
                    taken=()) -> dict:
        """The learners of predictions files (:func:`~bayes_concepts.predictions.predictions_learners`)
        for this run's splits and episodes, checked before any work; ``{}`` without files
        (``names`` without files is refused)."""
        from .predictions import predictions_learners
        return predictions_learners(self.space, self.splits, files, names, negatives=negatives,
                                    n_episodes=n_episodes, seed=seed, episode_shape=self.episode_shape,
                                    skip_undrawable=self.skip_undrawable, taken=taken, **self.episode_options)

    # ---------------------------------------------------------------- computing
    def gap(self, negatives=("hard", "easy"), n_episodes: int = 20_000, seed: int = 0, learners=None,
            progress: bool = False, scheduler=None, allow_other_space: bool = False, parts: bool = False):
        """The comp-gap results Dataset of this run (:func:`~bayes_concepts.gap.compute_gap`),
        recorded and annotated by its protocol when it has one.  ``learners``: learner specs
        (as :meth:`learners` takes them) or ``{name: learner}``."""
        from .gap import compute_gap
        if learners and not isinstance(learners, dict):
            learners = self.learners(learners, seed, allow_other_space)
        ds = compute_gap(self.space, self.splits, negatives, n_episodes, self.settings, seed,
                         progress=progress, learners=learners or None, scheduler=scheduler,
                         allow_other_space=allow_other_space, parts=parts, episode_shape=self.episode_shape,
                         skip_undrawable=self.skip_undrawable, **self.episode_options)
        if self.protocol is not None:
            self.protocol.record(ds, self.overrides)
            self.protocol.annotate(self.space, self.scored(ds), ds, self.settings, seed, n_episodes)
        return ds

    def ladder(self, rungs=None, negatives=("hard", "easy"), n_episodes: int = 5_000, seed: int = 0,
               learners=None, progress: bool = False, scheduler=None, alphas=None, budgets=None,
               allow_other_space: bool = False):
        """The ladder's results Dataset of this run (:func:`~bayes_concepts.ladder.ladder_profile`),
        recorded by its protocol when it has one."""
        from .ladder import ladder_profile
        if learners and not isinstance(learners, dict):
            learners = self.learners(learners, seed, allow_other_space)
        ds = ladder_profile(self.space, self.splits, rungs, negatives, n_episodes, self.settings, seed,
                            progress=progress, episode_shape=self.episode_shape, scheduler=scheduler,
                            alphas=alphas, budgets=budgets, models=learners or {},
                            skip_undrawable=self.skip_undrawable, **self.episode_options)
        if self.protocol is not None:
            self.protocol.record(ds, self.overrides)
        return ds

    def audit(self, n_episodes: int = 2000, seed: int = 0, n_worst: int = 10, log=None, learners=None) -> list:
        """One audit report per split (:func:`~bayes_concepts.report.audit_splits`); ``learners``
        ({name: learner} or {name: {split: learner}}) scored on the same episodes."""
        from .report import audit_splits
        return audit_splits(self.space, self.splits, n_episodes, self.settings, seed, n_worst=n_worst, log=log,
                            episode_shape=self.episode_shape, learners=learners, **self.episode_options)

    def search_split(self, objective: str = "compound-divergence", **kwargs):
        """The hardest fair split under this run's oracle settings, hard-negative mode and
        episode shape (:func:`~bayes_concepts.split_search.search_split`; ``kwargs`` as it takes them)."""
        from .split_search import search_split
        return search_split(self.space, objective, settings=self.settings, hard_mode=self.hard_mode,
                            episode_shape=self.episode_shape, **kwargs)

    def audit_split(self, split, n_episodes: int = 2000, seed: int = 0) -> dict:
        """The audit of one split made outside the run (a split found by search) with its settings."""
        from .gap import audit
        return audit(self.space, split, n_episodes=n_episodes, settings=self.settings, seed=seed,
                     episode_shape=self.episode_shape, **self.episode_options)

    def sample_episodes(self, name: str, side: str = "test", negatives: str = "hard", n: int = 1000, seed: int = 0):
        """Episodes of split ``name`` drawn as this run draws them (its shape, else the spec's
        ``[episodes]`` table; its query negatives and hard-negative mode); the file records the
        protocol, when there is one (``meta["protocol"]``)."""
        from .episodes import EpisodeShape, sample_episodes
        split = self.splits[name]
        shape = self.episode_shape or EpisodeShape.parse((getattr(split, "spec", None) or {}).get("episodes"),
                                                         f"split {name}: [episodes]")
        eps = sample_episodes(self.space, split, side=side, negatives=negatives, n=n, seed=seed,
                              n_positive=shape.positives, n_negative=shape.negatives,
                              n_query_positive=shape.query_positives, n_query_negative=shape.query_negatives,
                              **self.episode_options)
        if self.protocol is not None:
            eps.meta["protocol"] = self.protocol.name
        return eps

    def chance_levels(self):
        """The protocol's chance level of each split's answer (:meth:`Protocol.chance_levels`), or None."""
        return self.protocol.chance_levels() if self.protocol is not None else None

    @property
    def title(self) -> str | None:
        """A report's title: ``Difficulty report: protocol NAME``, None without a protocol."""
        return f"Difficulty report: protocol {self.protocol.name}" if self.protocol is not None else None

    def train(self, split_name: str, learner, **options):
        """Train ``learner`` on split ``split_name`` of this run with its episodes (the
        protocol's query negatives and hard-negative mode unless overridden); ``options`` as
        the learner's ``train`` takes them."""
        episodes = {**self.episode_options, **options}
        if self.protocol is not None:
            episodes["protocol"] = self.protocol
        return learner.train(self.splits[split_name], **episodes)

    # ---------------------------------------------------------------- what to say about it
    def scored(self, ds) -> dict:
        """The splits a results Dataset of this run scored (a left-out split is not among them)."""
        kept = set(ds["split"].values.tolist())
        return {n: s for n, s in self.splits.items() if n in kept}

    def notes(self, ds=None) -> list:
        """Lines to print under the run's table: the conditions a protocol dropped, the concepts
        its splits could not use and, given its results, what the protocol says of them."""
        lines = dropped_conditions_note(self.splits)
        if self.protocol is not None:
            lines += [line for line in (self.protocol.left_out_note(self.splits),
                                        self.protocol.results_note(ds) if ds is not None else "") if line]
        return lines

    def gap_lines(self, ds, n_boot: int = 1000, seed: int = 0, seconds: float | None = None, out=None) -> list:
        """The comp-gap table of results ``ds`` of this run, the lines under it (:meth:`gap_notes`)
        and, given the run's ``seconds``, the footer: episodes per cell, the protocol and its
        overrides, the oracle settings, the time and where the results were written (``out``)."""
        from .gap import format_table, summarise
        lines = [format_table(summarise(ds, n_boot=n_boot, seed=seed)), *self.gap_notes(ds)]
        if seconds is not None:
            n, how = int(ds.sizes["episode"]), self.describe()
            lines.append(f"\n{n:,} test episode{'' if n == 1 else 's'} per cell; " + (f"{how}; " if how else "")
                         + f"oracle settings {ds.attrs['oracle_settings']}; {seconds:.1f} s"
                         + (f"; results written to {out}" if out else ""))
        return lines

    def gap_json(self, ds, n_boot: int = 1000, seed: int = 0) -> dict:
        """Results ``ds`` of this run as the ``gap --json`` object: the run's settings (the
        results' attributes) and one entry per (split, negatives)."""
        from .gap import summarise
        from .results import attrs_info
        keep = ("split", "negatives", "episodes", "strong", "weak", "gap", "weak_empty_share", "posterior_entropy",
                "predictive_entropy", "learners", "ap_tolerance", "ap_bound_max", "atom", "compound", "parts",
                "topup_share", "topup_negatives")
        rows = summarise(ds, n_boot=n_boot, seed=seed)
        return {**attrs_info(ds), "results": [{k: r[k] for k in keep if k in r} for r in rows]}

    def audit_lines(self, reports: list) -> list:
        """The audit of this run's splits (one split's in full, several as a table with their
        episodes' note) and the notes under it."""
        from .gap import format_audit, topup_lines
        from .report import audit_frame, episode_note, format_audit_table
        lines = ([format_audit(reports[0])] if len(reports) == 1  # its table names the top-ups
                 else [format_audit_table(audit_frame(reports)), *episode_note(reports),
                       *topup_lines([g for r in reports for g in r["gap"]])])
        return lines + self.notes()

    def audit_footer(self, n_splits: int, n_episodes: int, seconds: float) -> str:
        """The audit's last line: splits, the protocol and its overrides, the oracle settings,
        episodes and time."""
        import json
        how = self.describe()
        return (f"\n{n_splits} split(s)" + (f" of {how}" if how else "")
                + f"; oracle settings {json.dumps(self.settings.as_dict(), sort_keys=True)}"
                + f", {n_episodes:,} test episodes per split and negatives; {seconds:.1f} s")

    def ladder_report(self, ds, published=None, n_boot: int = 1000, seed: int = 0) -> dict:
        """What the ladder reports of results ``ds`` of this run: ``rows`` (each split's profile,
        :func:`~bayes_concepts.ladder.ladder_summary`), ``spread`` (per negatives, each rung's
        max - min gap over splits), ``correlations`` (per negatives, with ``published``, every rung
        and the baseline predictors ranked against the models' difficulty) and ``published``."""
        from .ladder import ladder_correlations, ladder_summary, rung_spreads
        negatives = [str(n) for n in ds["negatives"].values]
        rows = ladder_summary(ds, n_boot=n_boot, seed=seed)
        predictors = self.predictors() if published is not None else None  # beside every rung
        corr = {neg: ladder_correlations(rows, published, neg, n_boot=n_boot, seed=seed, predictors=predictors)
                for neg in negatives} if published is not None else {}
        return {"rows": rows, "negatives": negatives, "spread": {neg: rung_spreads(rows, neg) for neg in negatives},
                "correlations": corr, "published": published,
                "not_splits": self.not_splits(published) if published is not None else []}

    def ladder_lines(self, ds, report: dict, skipped=(), seconds: float | None = None, out=None,
                     figures=None) -> list:
        """The ladder's table of this run, the rungs skipped, the splits not scored, the spreads,
        the correlations and, given ``seconds``, the footer (as :meth:`gap_lines`)."""
        from .ladder import format_correlations, format_ladder
        from .results import get_attr
        lines = [format_ladder(report["rows"]), *(f"(rung {name} skipped: {why})" for name, why in skipped),
                 *(f"{name}: not scored: {rec['reason']}"
                   for name, rec in (get_attr(ds, "excluded", {}).get("not_scored") or {}).items())]
        for neg, spread in report["spread"].items():
            lines.append(f"\nspread over splits ({neg}, max − min gap, mAP points): "
                         + ", ".join(f"{lb} {v:.1f}" for lb, v in spread.items()))
        for c in report["correlations"].values():
            lines.append("\n" + format_correlations(c, f"{report['published'].benchmark} models"))
        if report.get("not_splits"):
            lines.append(f"({report['published'].benchmark}'s published conditions {', '.join(report['not_splits'])}: "
                         f"no split of {self.space.path or 'the space'}; left out)")
        if seconds is not None:
            n, how = int(ds.sizes["episode"]), self.describe()
            lines.append(f"\n{n:,} test episode{'' if n == 1 else 's'} per cell; " + (f"{how}; " if how else "")
                         + f"oracle settings {ds.attrs['oracle_settings']}; {seconds:.1f} s"
                         + (f"; results written to {out}" if out else "") + (f"; figures in {figures}" if figures else ""))
        return lines

    def ladder_json(self, ds, report: dict, skipped=(), figures=()) -> dict:
        """The ``ladder --json`` object: the run's settings, the profiles, the rungs skipped, the
        spreads, the published results named and the correlations (without their draws)."""
        from .ladder import strip_draws
        from .results import attrs_info
        published = report["published"]
        return {**attrs_info(ds), "results": report["rows"],
                "skipped_rungs": [{"rung": n, "why": w} for n, w in skipped], "spread": report["spread"],
                "published": None if published is None else {"benchmark": published.benchmark,
                                                             "measure": published.measure,
                                                             "not_splits": report.get("not_splits", [])},
                "correlations": {neg: strip_draws(c) for neg, c in report["correlations"].items()},
                "figures": list(figures)}

    def gap_notes(self, ds) -> list:
        """Lines under a comp-gap table of this run: each split's episode shape and exclusions,
        why a gap is 0 by construction, and :meth:`notes`."""
        from .gap import exclusion_lines, zero_gap_notes
        return [*exclusion_lines(ds), *(f"note: {line}" for line in zero_gap_notes(self.space, self.scored(ds),
                                                                                     self.settings)),
                *self.notes(ds)]

    def describe(self, override_names=None) -> str:
        """``protocol curi-release overridden by --prior length`` (how overrides are named:
        ``override_names(field) -> str``, default ``field=value``), with why a protocol was
        chosen by the space; empty without a protocol."""
        if self.protocol is None:
            return ""
        name = override_names or self.naming or (lambda k: f"{k}={self.overridden[k]}")
        text = f"protocol {self.protocol.name}"
        if self.chosen_by_space:
            text += (f" ({self.space.path or 'the space'} was built with CURI's release grammar, curi_release.pcfg: "
                     "its splits and oracle settings are the protocol's)")
        if self.overridden:
            text += " overridden by " + ", ".join(name(k) for k in PROTOCOL_FIXES if k in self.overridden)
        return text


def oracle_settings(**fields):
    """:class:`~bayes_concepts.oracles.OracleSettings` of ``fields`` (missing: its defaults);
    a bad value is one line naming the field."""
    from .oracles import OracleSettings
    try:
        return OracleSettings(**fields)
    except BayesConceptsError:
        raise
    except ValueError as exc:  # "beta must be in [0, 1e6], got ...": names the field
        raise RunError(str(exc), str(exc).partition(" ")[0]) from None


def resolve(space, protocol=None, splits=None, specs=None, *, episode_shape=None, what: str = "score",
            **overrides) -> Run:
    """The :class:`Run` of ``space`` under the rules of this module's docstring.

    space: a ConceptSpace, or the folder of a saved one; protocol: a protocol name or object, None for the space's own splits
    (a release-grammar space without ``specs``: ``curi-release``); splits: split names (None
    or ``"all"``: every split on offer) or ``{name: Split}`` already made; specs: split spec
    files; episode_shape: an EpisodeShape, its text ``"P,N[,QP,QN]"``, or None; what: the verb
    an error names ("score", "audit", "list"); overrides: any of :data:`PROTOCOL_FIXES`
    (``prior="uniform"``, ``query_negatives="random"``), or ``settings`` (an OracleSettings).
    An unknown keyword is an error."""
    from .episodes import EpisodeShape
    from .protocols import get_protocol
    from .splits import space_splits
    unknown = sorted(set(overrides) - set(PROTOCOL_FIXES) - {"settings"})
    if unknown:
        raise RunError(f"resolve: unknown setting {', '.join(unknown)} (expected {', '.join(PROTOCOL_FIXES)} or "
                       "settings)")
    if isinstance(space, (str, Path)):
        from .spaces import load_space
        space = load_space(space)
    specs = tuple(specs or ())
    chosen_by_space = False
    protocol = get_protocol(protocol) if protocol is not None else None
    if protocol is None and not specs:
        protocol = release_protocol(space)
        chosen_by_space = protocol is not None
    given = {k: v for k, v in overrides.items() if k in SETTINGS_FIELDS}
    base = overrides.get("settings")
    if protocol is not None:
        base = base or protocol.settings
    settings = base if not given and base is not None else _settings(base, given)
    episodes = {"query_negatives": overrides.get("query_negatives", None if protocol is None
                                                  else protocol.query_negatives),
                "hard_mode": overrides.get("hard_mode", "union" if protocol is None else protocol.hard_mode)}
    run_overrides, overridden = {}, {}
    if protocol is not None:
        overridden = {k: v for k, v in overrides.items() if k in PROTOCOL_FIXES}
        if given or "settings" in overrides:
            run_overrides["settings"] = settings
        run_overrides.update({k: overrides[k] for k in EPISODE_FIELDS if k in overrides})
    if isinstance(splits, dict):
        names, made = list(splits), dict(splits)
    else:
        names = split_list(splits)
        made = (protocol.splits_with(space, names, specs) if protocol is not None
                else space_splits(space, names, specs))
    if not made and not (isinstance(splits, dict) and not splits):  # {}: a run that makes its own split
        raise no_splits_error(space, what)
    if isinstance(episode_shape, str):
        episode_shape = EpisodeShape.parse(episode_shape, "episode_shape")
    run = Run(space, made, settings, protocol, chosen_by_space, episodes["query_negatives"], episodes["hard_mode"],
              run_overrides, overridden, episode_shape, names, specs,
              skip_undrawable=protocol is not None and names is None)
    return run


def _settings(base, fields: dict):
    """``base`` (an OracleSettings, or None for the defaults) with ``fields`` replaced."""
    if base is None:
        return oracle_settings(**fields)
    from dataclasses import replace
    try:
        return replace(base, **fields)
    except BayesConceptsError:
        raise
    except ValueError as exc:
        raise RunError(str(exc), str(exc).partition(" ")[0]) from None


__all__ = ["Run", "RunError", "resolve", "release_protocol", "suggested_protocols", "no_splits_error", "split_list",
           "dropped_conditions_note", "results_split", "oracle_settings", "PROTOCOL_FIXES"]
