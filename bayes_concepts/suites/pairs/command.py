"""The pair benchmarks' commands: ``space from-pairs`` (the pair space of an attribute-object benchmark in CZSL's layout) and ``data fetch`` (their published files, at pinned commits)."""
from __future__ import annotations

from ...errors import BayesConceptsError
from ...command_registry import command, command_group
from ...options import LazyChoices, lazy_registry, whole
from ...run_args import episode_shape, episode_shape_option


def _from_pairs_arguments(p):
    p.add_argument("out", metavar="OUT", help="directory to write the pair space to")
    p.add_argument("--items", metavar="FILE|DIR",
                   help="items: TSV with a header (item|image, attribute|attr, object|obj[, set]), JSON Lines / "
                        "a JSON list of objects with those keys, CZSL's metadata .t7 (needs torch), or an image "
                        "folder of 'attribute object' sub-folders, or hxm97's image lists (train_imgs.txt, val_imgs.txt, "
                        "test_imgs.txt: 'path attribute object', no header; the file or its folder); NA records are "
                        "dropped and counted (this or --items-per-pair)")
    p.add_argument("--items-per-pair", type=whole(1), default=None, metavar="N",
                   help="no items file: give every listed pair N synthetic items, to audit the pair lists alone "
                        "(e.g. RLCL's lists without its images); every pair then has N items")
    p.add_argument("--pairs-dir", required=True, metavar="DIR|FILE.json",
                   help="holds train_pairs.txt, val_pairs.txt, test_pairs.txt (or JSON lists train.json, ...), or "
                        "one JSON file of train/val/test lists, or hxm97's pair split (seen_pairs.txt + val/test "
                        "_unseen_comps.txt and _unseen_pairs.txt, joined per side); pairs no item has are left out "
                        "and counted")
    p.add_argument("--unlisted", choices=("keep", "drop"), default="keep",
                   help="items whose pair no pair file names (counted and named either way): keep (default) leaves "
                        "them in the bank, positives of their attribute and object alone where those are concepts; "
                        "drop leaves them out (not items)")
    p.add_argument("--no-primitives", action="store_true",
                   help="only the pairs are concepts (default: also every attribute and every object alone)")
    p.add_argument("--k", type=int, nargs="+", metavar="K",
                   help="also save reference-limited splits seen_kK: K seen pairs per attribute (RLCL; per object "
                        "with --k-by object)")
    p.add_argument("--k-by", choices=("attribute", "object"), default="attribute",
                   help="what --k limits: K seen pairs per attribute (default; splits seen_kK, objects may be novel) "
                        "or per object (splits seen_kK_obj, attributes may be novel)")
    p.add_argument("--image-level", action="store_true",
                   help="also save image-level splits (CZSL's generalised setting), for items with a set column: "
                        "each item's set is recorded and every split gets a twin NAME_by_set (same concepts, "
                        "items = \"by-set\") whose test episodes (support and queries) and test bank come from the "
                        "test-set items only, the size likelihood counting |h| there, so seen pairs' test images are "
                        "hard negatives and distractors; items without a set column are refused")
    p.add_argument("--worlds", type=whole(1), nargs="+", metavar="NP",
                   help="also save RLCL's episode setting worlds_npNP: worlds of NP attributes x NP objects drawn as "
                        "RLCL's episode sampler draws one (NP seen pairs without a shared primitive, the grid's "
                        "other pairs split into seen and unseen); seen pairs train, unseen test, the rest val")
    p.add_argument("--n-worlds", type=whole(1), default=None, metavar="N",
                   help="at most N worlds per --worlds split (default: as many as the space allows)")
    episode_shape_option(p, "written into every split spec it saves")
    p.add_argument("--seed", type=whole(0), default=0,
                   help="seed of the test bank and the seen_kK splits (a whole number >= 0; default 0)")
    p.add_argument("--force", action="store_true", help="replace OUT if it exists")


@command("space from-pairs", order=20, arguments=_from_pairs_arguments,
         help="the pair space of an attribute-object benchmark (CZSL layout) into OUT")
def cmd_space_from_pairs(args) -> int:
    from . import build_pair_space
    if (args.items is None) == (args.items_per_pair is None):
        raise BayesConceptsError("space from-pairs: give --items FILE|DIR or --items-per-pair N"
                         + (", not both" if args.items is not None else ""))
    for line in build_pair_space(args.out, args.items, args.pairs_dir, primitives=not args.no_primitives,
                                 items_per_pair=args.items_per_pair, unlisted=args.unlisted,
                                 k_by=args.k_by, image_level=args.image_level,
                                 ks=args.k or (), seed=args.seed, overwrite=args.force, worlds=args.worlds or (),
                                 n_worlds=args.n_worlds,
                                 episodes=None if args.episode_shape is None else episode_shape(args).as_dict()):
        print(line)
    return 0


# ------------------------------------------------------------------ data fetch
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
    p.add_argument("--unpinned", action="store_true",
                   help="take files whose sha256 differs from the one pinned with the commit (default: refused); "
                        "FETCHED.json records them as unpinned")
    p.add_argument("--quiet", action="store_true", help="no line per file")


@command("data fetch", order=10, arguments=_fetch_arguments,
         help="download a benchmark's published files (pinned commit) into DIR/NAME/, laid out as its repository "
              "has them; nothing third-party ships with the package")
def cmd_data_fetch(args) -> int:
    from .fetch import PUBLISHED, fetch
    import json
    root = fetch(args.name, args.dir, source=getattr(args, "from"), overwrite=args.force,
                 log=None if args.quiet else print, unpinned=args.unpinned)
    pub = PUBLISHED[args.name]
    record = json.loads((root / "FETCHED.json").read_text(encoding="utf-8"))
    differ = record["unpinned"]
    print(f"fetched {len(pub.files)} files of {pub.repo} at {pub.commit[:12]} into {root} ("
          + (f"{len(differ)} UNPINNED, differing from the published files: {', '.join(differ)}; " if differ
             else "each file's sha256 the pinned one; ")
          + f"origin {record['origin']}; FETCHED.json records each file); read with: bayes-concepts "
          f"{pub.read_with.format(root=root)}")
    return 0
