"""The published files of the real attribute-object benchmarks, fetched as their repositories
have them (``bayes-concepts data fetch NAME DIR``).

Nothing third-party ships with this package: :func:`fetch` downloads each file of a
benchmark from ``raw.githubusercontent.com`` at a pinned commit (or copies it from a local
copy of the repository, ``source=``), into ``DIR/NAME/<path in the repository>``, and writes
``DIR/NAME/FETCHED.json`` (repository, commit, and each file's sha256).  The default ``DIR``,
``data/``, is git-ignored.

========== ===================================================================== ====================
name       repository (commit) and files                                         read with
========== ===================================================================== ====================
c-gqa      minho511/Compositional-Zero-Shot-Learning-Demo:                       ``--pairs-dir
           ``dataset/cgqa/compositional-split-natural/{train,val,test}_pairs.txt``  .../compositional-
           (pairs only: no image metadata)                                       split-natural
                                                                                 --items-per-pair N``
mit-states hxm97/A-Dynamic-Learning-Method-towards-Realistic-Compositional-Zero-  ``--items
           Shot-Learning: ``mitstates_img_split/{train,val,test}_imgs.txt``      .../mitstates_img_split
           (53,753 images' labels) and ``mitstates_pair_split/*.txt``            --pairs-dir
                                                                                 .../mitstates_pair_split``
rlcl       bighuang624/RL-CZSL: ``api/datasets/assets/<layout>/*.json`` (seven   ``--pairs-dir
           layouts of pair lists)                                                .../assets/<layout>
                                                                                 --items-per-pair N``
========== ===================================================================== ====================
"""
from __future__ import annotations

import hashlib
import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from ...errors import BayesConceptsError

__all__ = ["DataError", "Published", "PUBLISHED", "fetch", "DEFAULT_DIR"]

DEFAULT_DIR = "data"
RAW = "https://raw.githubusercontent.com/{repo}/{commit}/{path}"


class DataError(BayesConceptsError):
    """A published file that cannot be fetched or copied; the message names it."""


@dataclass(frozen=True)
class Published:
    """One benchmark's published files: ``repo`` (owner/name), ``commit`` and ``files`` (paths)."""

    repo: str
    commit: str
    files: tuple
    read_with: str


_MIT_PAIRS = ("all_attrs", "all_objs", "all_pairs", "seen_attrs", "seen_objs", "seen_pairs", "test_unseen_attrs",
              "test_unseen_comps", "test_unseen_objs", "test_unseen_pairs", "val_unseen_attrs", "val_unseen_comps",
              "val_unseen_objs", "val_unseen_pairs")
_RLCL = {"action_obj": ("test_imsitu", "train_hico", "val_visualgenome"),
         "attr_obj": ("test_mit", "train_cgqa", "val_utzap"),
         **{k: ("test", "train", "val") for k in ("cgqa", "hico", "mit_states", "utzap", "vcoco")}}

PUBLISHED = {
    "c-gqa": Published(
        "minho511/Compositional-Zero-Shot-Learning-Demo", "80417915e9e94d721e01fbf3f061468afcff9bcb",
        tuple(f"dataset/cgqa/compositional-split-natural/{s}_pairs.txt" for s in ("train", "val", "test")),
        "space from-pairs OUT --pairs-dir {root}/dataset/cgqa/compositional-split-natural --items-per-pair 20"),
    "mit-states": Published(
        "hxm97/A-Dynamic-Learning-Method-towards-Realistic-Compositional-Zero-Shot-Learning",
        "58739b86bddd88f6c0a57f72affa88ba433669b9",
        tuple(f"mitstates_img_split/{s}_imgs.txt" for s in ("train", "val", "test"))
        + tuple(f"mitstates_pair_split/{n}.txt" for n in _MIT_PAIRS),
        "space from-pairs OUT --items {root}/mitstates_img_split --pairs-dir {root}/mitstates_pair_split"),
    "rlcl": Published(
        "bighuang624/RL-CZSL", "d304554192eeb2d991893b721fe992d7cddfd041",
        tuple(f"api/datasets/assets/{layout}/{n}.json" for layout, names in _RLCL.items() for n in names),
        "space from-pairs OUT --pairs-dir {root}/api/datasets/assets/mit_states --items-per-pair 20"),
}


def _download(url: str, timeout: float) -> bytes:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:  # noqa: S310 (a fixed https URL)
            return r.read()
    except (urllib.error.URLError, OSError) as exc:
        raise DataError(f"{url}: cannot download ({getattr(exc, 'reason', exc)}); with no network, copy the "
                        "repository elsewhere and give it with --from") from None


def fetch(name: str, out_dir=DEFAULT_DIR, source=None, overwrite: bool = False, timeout: float = 60.0,
          log=None) -> Path:
    """Fetch benchmark ``name`` (:data:`PUBLISHED`) into ``out_dir/name/``, laid out as its
    repository has it: each file downloaded from ``raw.githubusercontent.com`` at the pinned
    commit, or copied from ``source`` (a local copy of the repository, same paths).  Each file is
    written whole or not at all; existing files are kept unless ``overwrite``.  Writes
    ``FETCHED.json`` (repository, commit, origin, each file's sha256) and returns the folder."""
    if name not in PUBLISHED:
        raise DataError(f"unknown benchmark {name!r} (known: {', '.join(PUBLISHED)})")
    pub = PUBLISHED[name]
    root = Path(out_dir) / name
    src = None if source is None else Path(source)
    if src is not None and not src.is_dir():
        raise DataError(f"{src}: not a folder (give a copy of {pub.repo}, laid out as the repository)")
    if src is not None:
        missing = [p for p in pub.files if not (src / p).is_file()]
        if missing:
            raise DataError(f"{src / missing[0]}: missing ({len(missing)} of {len(pub.files)} files of {pub.repo} "
                            "are not in the local copy)")
    sums = {}
    for k, path in enumerate(pub.files, 1):
        target = root / path
        if target.is_file() and not overwrite:
            data = target.read_bytes()
        else:
            if src is not None:
                data = (src / path).read_bytes()
            else:
                data = _download(RAW.format(repo=pub.repo, commit=pub.commit, path=path), timeout)
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(target.name + ".partial")
            tmp.write_bytes(data)
            tmp.replace(target)
        sums[path] = hashlib.sha256(data).hexdigest()
        if log is not None:
            log(f"[{k}/{len(pub.files)}] {path} ({len(data):,} bytes)")
    record = {"benchmark": name, "repository": f"https://github.com/{pub.repo}", "commit": pub.commit,
              "origin": str(src) if src is not None else "raw.githubusercontent.com", "sha256": sums,
              "read_with": "bayes-concepts " + pub.read_with.format(root=root)}
    (root / "FETCHED.json").write_text(json.dumps(record, indent=2) + "\n")
    return root
