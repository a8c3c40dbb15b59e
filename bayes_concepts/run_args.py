"""The options that describe a run, and the :class:`~bayes_concepts.run.Run` they describe.

The options several commands take to say what they compute with -- ``DIR``, ``--protocol``,
``--split``, ``--spec``, ``--episode-shape``, the oracle options, ``--hard-mode``,
``--ap-tolerance``, ``--scheduler`` -- and :func:`resolve_args`, which reads them and asks the
library for the run (:func:`bayes_concepts.run.resolve`): an option given explicitly is passed on,
one left out is the library's default (which is the option's) or the protocol's value.
"""
from __future__ import annotations

from .errors import BayesConceptsError
from .options import Given, LazyChoices, LazyHelp, describe_choices, finite, given_options, lazy_registry, whole
from .run import PROTOCOL_FIXES  # the options a protocol fixes (their dests)


def open_space(path):
    """The saved space in folder ``path``, of any kind: a HypothesisSpace, or an ExtensionSpace
    (pair benchmarks, ConceptWorld)."""
    from .spaces import load_space
    return load_space(path)


OVERRIDE_NOTE = "; with --protocol: given explicitly, replaces the protocol's value (recorded as an override)"


def protocol_option(p, help_text: str | None = None):
    p.add_argument("--protocol", choices=LazyChoices(lazy_registry("protocols", "protocols")), metavar="NAME",
                   default=None,
                   help=help_text or LazyHelp(lambda: "compute as a named protocol: its splits, oracle settings and "
                                      "query negatives (" + describe_choices(lazy_registry("protocols", "protocols")()) + "); an "
                                      "oracle or negatives option given explicitly with "
                                      "it replaces the protocol's value for this run, recorded in the results "
                                      "(attrs protocol_overrides) and in the printed settings"))


def split_option(p, help_text: str, required: bool = False):
    """--split NAME [NAME ...] (every command takes several names the same way; see
    :func:`split_names`, :func:`one_split`)."""
    p.add_argument("--split", nargs="+", metavar="NAME", required=required, default=None, help=help_text)


def split_names(args):
    """The split names of --split as a list, None for all (left out, or ``all`` alone);
    ``all`` beside other names is an error."""
    names = getattr(args, "split", None)
    if not names or names == ["all"]:
        return None
    if "all" in names:
        raise BayesConceptsError(f"--split {' '.join(names)}: 'all' stands alone (it means every split)")
    return list(names)


def one_split(args, what: str):
    """The one split name of --split for a command that works on one split (``what``: why,
    e.g. "episodes are drawn for one split"), None when left out; several is one line."""
    names = getattr(args, "split", None)
    if names is None:
        return None
    if len(names) != 1:
        raise BayesConceptsError(f"--split {' '.join(names)}: {what}; give one name (run once per split)")
    return names[0]


def episode_shape_option(p, what: str = "for every split, in place of its spec's [episodes] table"):
    p.add_argument("--episode-shape", metavar="P,N[,QP,QN]", default=None,
                   help="episode shape: P positives and N negatives in the support set, QP and QN in the query set "
                        f"(default: as the support; 5,20 when nothing says otherwise); {what}")


def episode_shape(args):
    """The --episode-shape of ``args`` as an EpisodeShape, or None when not given (bad text: one line)."""
    from .episodes import EpisodeShape
    text = getattr(args, "episode_shape", None)
    return None if text is None else EpisodeShape.parse(text, "--episode-shape")


def cell_options(p, split_help: str, negatives_help: str, query_help: str):
    """The options that pick a run's cells and their episodes' negatives, as ``gap`` takes them:
    DIR, --split, --spec, --negatives (hard, easy or both) and --query-negatives."""
    p.add_argument("dir", metavar="DIR", help="a saved hypothesis space")
    split_option(p, split_help)
    p.add_argument("--spec", nargs="+", metavar="FILE", help="split spec files (TOML) defining more splits")
    p.add_argument("--negatives", choices=["hard", "easy", "both"], default="both", help=negatives_help)
    p.add_argument("--query-negatives", choices=["hard", "easy", "random"], default=None, action=Given,
                   help=query_help)


def hard_mode_option(p, protocol: bool = False):
    modes = lazy_registry("episodes", "hard_negative_modes")
    p.add_argument("--hard-mode", choices=LazyChoices(modes), metavar="MODE", default="union", action=Given,
                   help=LazyHelp(lambda: f"how hard negatives are drawn ({describe_choices(modes())}; default union)"
                                  + (OVERRIDE_NOTE if protocol else "")))


def oracle_options(p, protocol: bool = False):
    """--prior, --beta, --likelihood, --epsilon, --weak-empty and --seed; with ``protocol`` (the
    command has --protocol) their help says that, given explicitly, they override the protocol."""
    priors, likelihoods = lazy_registry("oracles", "priors"), lazy_registry("oracles", "likelihoods")
    empty_policies = lazy_registry("oracles", "empty_policies")
    note = OVERRIDE_NOTE if protocol else ""
    p.add_argument("--prior", choices=LazyChoices(priors), metavar="NAME", default="length", action=Given,
                   help=LazyHelp(lambda: f"prior over concepts ({describe_choices(priors())}; default length){note}"))
    p.add_argument("--beta", type=finite, default=0.2, action=Given,
                   help=f"rate of the length prior per token (default 0.2){note}")
    p.add_argument("--likelihood", choices=LazyChoices(likelihoods), metavar="NAME", default="size", action=Given,
                   help=LazyHelp(lambda: f"likelihood of the support labels ({describe_choices(likelihoods())}; "
                                          f"default size){note}"))
    p.add_argument("--epsilon", type=finite, default=0.05, action=Given,
                   help=f"label-noise rate of the noisy likelihood, in (0, 0.5) (default 0.05){note}")
    p.add_argument("--weak-empty", choices=LazyChoices(empty_policies), metavar="POLICY", default="zero",
                   action=Given,
                   help=LazyHelp(lambda: f"what an oracle does when no concept fits the support "
                                          f"({describe_choices(empty_policies())}; default zero){note}"))
    p.add_argument("--seed", type=whole(0), default=0, help="seed of the episodes (a whole number >= 0; default 0)")


def ap_tolerance_option(p):
    """--ap-tolerance (gap and audit; it overrides a protocol's value when given)."""
    p.add_argument("--ap-tolerance", type=finite, default=None, action=Given, metavar="T",
                   help="the largest error allowed in each episode's AP on the test bank, a fraction in [0, 1]: "
                        "AP is computed to within T with a certificate, the results hold each episode's "
                        "certified bound (ap_bound) and the table's footer states T.  0 computes AP exactly.  "
                        "Default: 1e-4 for a likelihood that is not consistent-only (noisy), 0 for the others "
                        "(size, consistent), whose AP is exact anyway: with them a tolerance above 0 holds "
                        "with every bound 0, and applies only to the episodes the noisy weak-empty policy "
                        "scores with the noisy likelihood" + OVERRIDE_NOTE)


def scheduler_option(p, what: str, reads_space: bool = False):
    p.add_argument("--scheduler", metavar="local:N|ADDRESS", default=None,
                   help=f"run {what} on Dask: local:N starts a LocalCluster of N processes on this machine, "
                        "ADDRESS (tcp://host:8786) joins a running cluster whose workers have this package "
                        "installed" + (" and see the space at the same path" if reads_space else "")
                        + "; default: this process.  The "
                        "results are the same, value for value, wherever they run (guide: Scale out with Dask).")


def resolve_args(args, what: str = "score", splits=None, space=None):
    """The :class:`~bayes_concepts.run.Run` the command line describes (``what``: the verb an
    error names): the space ``DIR``, ``--protocol``, ``--split`` (or ``splits``), ``--spec``,
    ``--episode-shape`` and the oracle and negatives options given explicitly (an option left
    out: the protocol's value, else the library's default, which is the option's).  A refused
    value is one line naming its option."""
    from .run import RunError, resolve
    given = given_options(args)
    settings = {k: getattr(args, k) for k in PROTOCOL_FIXES if k in given}
    names, shape = split_names(args) if splits is None else splits, episode_shape(args)
    try:
        run = resolve(space if space is not None else args.dir, getattr(args, "protocol", None), names,
                      getattr(args, "spec", None), episode_shape=shape, what=what, **settings)
    except RunError as exc:
        if exc.field is not None:
            raise BayesConceptsError(f"--{exc.field.replace('_', '-')} {str(exc).partition(' ')[2]}") from None
        raise
    run.naming = lambda k: f"--{k.replace('_', '-')} {getattr(args, k)}"  # overrides named as options
    return run


def override_text(args, run) -> str:
    """How the run of ``args`` is computed, as a line's part: ``protocol curi-release overridden
    by --prior length`` (empty without a protocol)."""
    return run.describe(lambda k: f"--{k.replace('_', '-')} {getattr(args, k)}")
