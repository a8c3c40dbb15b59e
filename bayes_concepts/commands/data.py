"""``data fetch``: the real benchmarks' published files, as their repositories have them."""
from __future__ import annotations

from ..options import LazyChoices, command, command_group, lazy_registry

command_group("data", help="get the real benchmarks' published files (C-GQA, MIT-States, RLCL)", order=160)


def _fetch_arguments(p):
    p.add_argument("name", choices=LazyChoices(lazy_registry("suites.pairs.fetch", "PUBLISHED")), metavar="NAME",
                   help="c-gqa: C-GQA's natural-split pair lists (minho511/Compositional-Zero-Shot-Learning-Demo); "
                        "mit-states: hxm97's realistic-CZSL image labels and pair split of MIT-States; rlcl: "
                        "RLCL's pair lists (bighuang624/RL-CZSL)")
    p.add_argument("dir", nargs="?", default="data", metavar="DIR",
                   help="where to put them (default data/, which git ignores)")
    p.add_argument("--from", default=None, metavar="COPY",
                   help="copy from a local copy of the repository (same paths) instead of downloading")
    p.add_argument("--force", action="store_true", help="replace files already there (default: keep them)")
    p.add_argument("--quiet", action="store_true", help="no line per file")


@command("data fetch", order=10, arguments=_fetch_arguments,
         help="download a benchmark's published files (pinned commit) into DIR/NAME/, laid out as its repository "
              "has them; nothing third-party ships with the package")
def cmd_data_fetch(args) -> int:
    from ..suites.pairs.fetch import PUBLISHED, fetch
    root = fetch(args.name, args.dir, source=getattr(args, "from"), overwrite=args.force,
                 log=None if args.quiet else print)
    pub = PUBLISHED[args.name]
    print(f"fetched {len(pub.files)} files of {pub.repo} at {pub.commit[:12]} into {root} (sha256 in "
          f"{root / 'FETCHED.json'}); read with: bayes-concepts {pub.read_with.format(root=root)}")
    return 0
