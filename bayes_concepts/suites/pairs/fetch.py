"""The published files of the real attribute-object benchmarks, fetched as their repositories
have them (``bayes-concepts data fetch NAME DIR``).

Nothing third-party ships with this package: :func:`fetch` downloads each file of a
benchmark from ``raw.githubusercontent.com`` at a pinned commit (or copies it from a local
copy of the repository, ``source=``), into ``DIR/NAME/<path in the repository>``, and writes
``DIR/NAME/FETCHED.json`` (repository, commit, and each file's sha256 and origin).  Each
file's sha256 is pinned beside the commit (:attr:`Published.sha256`): a download or copy that
differs is refused, naming the file, unless taken with ``unpinned`` (recorded as such).  The
default ``DIR``, ``data/``, is git-ignored.

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
from dataclasses import dataclass, field, replace
from pathlib import Path

from ...errors import BayesConceptsError

__all__ = ["DataError", "Published", "PUBLISHED", "fetch", "DEFAULT_DIR"]

DEFAULT_DIR = "data"
RAW = "https://raw.githubusercontent.com/{repo}/{commit}/{path}"


class DataError(BayesConceptsError):
    """A published file that cannot be fetched or copied; the message names it."""


@dataclass(frozen=True)
class Published:
    """One benchmark's published files: ``repo`` (owner/name), ``commit``, ``files`` (paths) and
    ``sha256`` (each file's hash at that commit: a copy or download that differs is refused)."""

    repo: str
    commit: str
    files: tuple
    read_with: str
    sha256: dict = field(default_factory=dict)  # path -> the sha256 of the file at ``commit``


_MIT_PAIRS = ("all_attrs", "all_objs", "all_pairs", "seen_attrs", "seen_objs", "seen_pairs", "test_unseen_attrs",
              "test_unseen_comps", "test_unseen_objs", "test_unseen_pairs", "val_unseen_attrs", "val_unseen_comps",
              "val_unseen_objs", "val_unseen_pairs")
_RLCL = {"action_obj": ("test_imsitu", "train_hico", "val_visualgenome"),
         "attr_obj": ("test_mit", "train_cgqa", "val_utzap"),
         **{k: ("test", "train", "val") for k in ("cgqa", "hico", "mit_states", "utzap", "vcoco")}}

# the sha256 of each published file at its pinned commit (computed from the repositories" git objects)
_SHA256 = {
    "c-gqa": {
        "dataset/cgqa/compositional-split-natural/train_pairs.txt":
            "b389a853f116f73f5a2f96aa070be3bb0844eda776530217fd518aca5b37f022",
        "dataset/cgqa/compositional-split-natural/val_pairs.txt":
            "298d9669a2b3890200d15d5789ae5e724e59460815b6d8c9af53b12d0b66e479",
        "dataset/cgqa/compositional-split-natural/test_pairs.txt":
            "b5203bcc4125458ced6e4d20d786b54cf4a6dd117998228bb8abd85a7f252682",
    },
    "mit-states": {
        "mitstates_img_split/train_imgs.txt":
            "a15fcba87a43adca2eeca4a1f147c95b2edee5b83144968e6020866cf4cacc1d",
        "mitstates_img_split/val_imgs.txt":
            "5af14085990484b957540e50c204c23ae8f0ccb7d0ab81d408bed61cfb3adf8b",
        "mitstates_img_split/test_imgs.txt":
            "a6809badf5e760dc7af529a2eddc3bf8be814ec38ef2000114fb8e937d75556a",
        "mitstates_pair_split/all_attrs.txt":
            "a30f05e234c896e0f8450f3480ed7e623978fc5b9e8da5a2d046f0bf6e831e03",
        "mitstates_pair_split/all_objs.txt":
            "cc3904cdb0f0aa8f217c2768a61ddbdc90588af208697e5ff85264eed1527001",
        "mitstates_pair_split/all_pairs.txt":
            "83949552792c92ee97ddd7ab846978859c6436f0cff434b29061f5ca0825b791",
        "mitstates_pair_split/seen_attrs.txt":
            "9afa19fc59bd88d3226746f451d5c2f567ed88aeb5619bc4d782498838b508b0",
        "mitstates_pair_split/seen_objs.txt":
            "62b1f5906f01fd262c4451a01a9cbbd4d284f23a13a0fdb41968e685403a9070",
        "mitstates_pair_split/seen_pairs.txt":
            "e20357c453a70e9782fc62d49f488630b4db43f63d030efaf8c5bd674e10d08f",
        "mitstates_pair_split/test_unseen_attrs.txt":
            "55b060c56b750ad9220eb096d6487b6b5bd83fd0024ff39660ac20f364aac499",
        "mitstates_pair_split/test_unseen_comps.txt":
            "c2f8c8c1128cdb67d54d6f8725e4189a48fc4a74ed0e2ec63114adce32ac59cd",
        "mitstates_pair_split/test_unseen_objs.txt":
            "3ebe9586b0247a3ce71974c13409a4c78859a8c27a013e5d1c334a8578324ede",
        "mitstates_pair_split/test_unseen_pairs.txt":
            "7b0ac683a07a4801250ebeb70bdb1a0729f25eda17960388a22a96a26ed45e1e",
        "mitstates_pair_split/val_unseen_attrs.txt":
            "2f9e7751b1f4bdaad9b403ebfe1b1fac24a006b423ce9800bf94e4c0c239f980",
        "mitstates_pair_split/val_unseen_comps.txt":
            "45e9fa94e8836a4ef3d398f02d87b3f6e693ae54cc16baa1d08f557c9fe53cdc",
        "mitstates_pair_split/val_unseen_objs.txt":
            "969be842095f23b0b33093ddea52deb0ffe00c49e4007abebc83a3687223fe6c",
        "mitstates_pair_split/val_unseen_pairs.txt":
            "4860813e1a3a3800b77adc0566e6ce5934c4b7bf0c1a9a1e4fdbc7fc4cba426e",
    },
    "rlcl": {
        "api/datasets/assets/action_obj/test_imsitu.json":
            "3dc997d643de80f30290dff2dbf41a96b0d3458ed0458baf92cb502130342127",
        "api/datasets/assets/action_obj/train_hico.json":
            "c3d0567e806dc749f6f369055dd7b4e78dfe34a23ffc6fd5f2e253b702448241",
        "api/datasets/assets/action_obj/val_visualgenome.json":
            "7e631c79750f3e6322c01082e4f609d4442ec1cf8c231cd34f5c5ec258e562cd",
        "api/datasets/assets/attr_obj/test_mit.json":
            "1e825dcc86c0d7d0ab7ec62f4726761ebd3b1966ea7a508a01f668252c955592",
        "api/datasets/assets/attr_obj/train_cgqa.json":
            "06b83c84a658b86c024db3fbb8d33c097062141e953e42c8c67239fb46dae3d7",
        "api/datasets/assets/attr_obj/val_utzap.json":
            "4eed53d08378c259596f56d048d0b57114d57e828ace9f7716e5e9cbaaef96dd",
        "api/datasets/assets/cgqa/test.json":
            "ecc41f5d8b0b04e1083069b4998c840f0eb384a05ffaf10f816706636665a6f3",
        "api/datasets/assets/cgqa/train.json":
            "7d3351daf76583c9f8f445d9cfbb2d559c46db84367660f81a2f4eaf6d59be29",
        "api/datasets/assets/cgqa/val.json":
            "770d475a2a5879754488fce44e2dc0ef898450956bf758385b683108648b290f",
        "api/datasets/assets/hico/test.json":
            "ff4020f2be5fb9cb94d425dc298c842c32a54f59cedd840346674f259923f750",
        "api/datasets/assets/hico/train.json":
            "1e33282857fba78213dadb27fc4db0a68bef1deb62def5183cc354f74922e958",
        "api/datasets/assets/hico/val.json":
            "7b2d9e7a86f7543d3e47a2760165c1b40a0788943e1a77f6b55f18b230d8efa7",
        "api/datasets/assets/mit_states/test.json":
            "91e917a7ac3d8121e64e9dca139a9820221d47c6574d35d780f42a8d66456049",
        "api/datasets/assets/mit_states/train.json":
            "17f64ed19503e768a340f6b86cef85016fd32439d869700e99572f9766fc179a",
        "api/datasets/assets/mit_states/val.json":
            "6aa01625046c1cb45fa60b67d241b741754ffbc247179d839b4b9122c2896c16",
        "api/datasets/assets/utzap/test.json":
            "091dc33e2a847223543a4e491aaf6b208abcc3066b940557b5b5733dafc6681e",
        "api/datasets/assets/utzap/train.json":
            "08287107d1bf69dca346ccad92f3a5b986917cf1b33c294b4e2b615a76a70136",
        "api/datasets/assets/utzap/val.json":
            "8752d8521960a71c10c9916a02f3721e6b9211a5f17c7e605d5fe959894d7480",
        "api/datasets/assets/vcoco/test.json":
            "659850e9a06860db2da7e8c15f19fc5e8dd55e7e912731b236214c02a23a679e",
        "api/datasets/assets/vcoco/train.json":
            "a621a9e0ed6ff7ac93be9961d73e128a4b47bb59598fb11a9a030827952412f4",
        "api/datasets/assets/vcoco/val.json":
            "8cb0e81917e20e2f8fbea6355d730a4afa2057df37c32206372a700714f48834",
    },
}

_PUBLISHED = {
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
#: benchmark name -> its :class:`Published` files, each pinned by its commit and its sha256
PUBLISHED = {name: replace(pub, sha256=_SHA256[name]) for name, pub in _PUBLISHED.items()}


def _download(url: str, timeout: float) -> bytes:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:  # noqa: S310 (a fixed https URL)
            return r.read()
    except (urllib.error.URLError, OSError) as exc:
        raise DataError(f"{url}: cannot download ({getattr(exc, 'reason', exc)}); with no network, copy the "
                        "repository elsewhere and give it with --from") from None


def _previous(root: Path) -> dict:
    """The per-file records (sha256, origin) of an earlier fetch's ``FETCHED.json``; ``{}`` when
    there is none or it cannot be read (its files are then of unknown origin)."""
    try:
        record = json.loads((root / "FETCHED.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    files = record.get("files") if isinstance(record, dict) else None
    if isinstance(files, dict):
        return {p: f for p, f in files.items() if isinstance(f, dict)}
    sums, origin = record.get("sha256"), record.get("origin")  # the older layout: one origin for all files
    if isinstance(sums, dict) and isinstance(origin, str):
        return {p: {"sha256": h, "origin": origin} for p, h in sums.items()}
    return {}


def fetch(name: str, out_dir=DEFAULT_DIR, source=None, overwrite: bool = False, timeout: float = 60.0,
          log=None, unpinned: bool = False) -> Path:
    """Fetch benchmark ``name`` (:data:`PUBLISHED`) into ``out_dir/name/``, laid out as its
    repository has it: each file downloaded from ``raw.githubusercontent.com`` at the pinned
    commit, or copied from ``source`` (a local copy of the repository, same paths).

    Every file -- downloaded, copied, or kept from an earlier fetch (existing files are kept
    unless ``overwrite``) -- must have the sha256 pinned beside the commit; one that differs is a
    :class:`DataError` naming it, before anything is written, unless ``unpinned`` (then it is
    taken and recorded as unpinned).  New files are written whole or not at all.  Writes
    ``FETCHED.json``: repository, commit, ``origin`` (where the files came from: one place, or
    ``"mixed"``), ``files`` (per file: sha256, origin, ``pinned`` true/false), ``sha256`` and
    ``unpinned`` (the files that differ from their pins).  A kept file keeps the origin the
    earlier fetch recorded for it, so the record never names an origin a file did not come from.
    Returns the folder."""
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
    previous = _previous(root)
    got = {}  # path -> (bytes, origin, written)
    for k, path in enumerate(pub.files, 1):
        target = root / path
        if target.is_file() and not overwrite:
            data = target.read_bytes()
            before = previous.get(path, {})
            origin = (before["origin"] if before.get("sha256") == hashlib.sha256(data).hexdigest()
                      and isinstance(before.get("origin"), str)
                      else f"unknown (already in {root}, not recorded by an earlier fetch)")
            got[path] = (data, origin, False)
        elif src is not None:
            got[path] = ((src / path).read_bytes(), str(src), True)
        else:
            got[path] = (_download(RAW.format(repo=pub.repo, commit=pub.commit, path=path), timeout),
                         "raw.githubusercontent.com", True)
        digest = hashlib.sha256(got[path][0]).hexdigest()
        pin = pub.sha256.get(path)
        if pin is not None and digest != pin and not unpinned:
            where = (str(target) + " (kept from before; --force replaces it)" if not got[path][2]
                     else str(src / path) if src is not None else RAW.format(repo=pub.repo, commit=pub.commit, path=path))
            raise DataError(f"{where}: sha256 {digest[:16]}… is not the pinned {pin[:16]}… of {pub.repo} at "
                            f"{pub.commit[:12]} (a changed copy); give the published file, or --unpinned to take "
                            "it as it is (recorded as unpinned)")
    files, sums, differ = {}, {}, []
    for k, path in enumerate(pub.files, 1):
        data, origin, written = got[path]
        if written:
            target = root / path
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(target.name + ".partial")
            tmp.write_bytes(data)
            tmp.replace(target)
        sums[path] = hashlib.sha256(data).hexdigest()
        pinned = sums[path] == pub.sha256.get(path)
        if not pinned:
            differ.append(path)
        files[path] = {"sha256": sums[path], "origin": origin, "pinned": pinned}
        if log is not None:
            log(f"[{k}/{len(pub.files)}] {path} ({len(data):,} bytes, {'written' if written else 'kept'}"
                f"{'' if pinned else ', UNPINNED: differs from the published file'})")
    origins = list(dict.fromkeys(f["origin"] for f in files.values()))
    record = {"benchmark": name, "repository": f"https://github.com/{pub.repo}", "commit": pub.commit,
              "origin": origins[0] if len(origins) == 1 else "mixed (see files)", "files": files, "sha256": sums,
              "unpinned": differ, "read_with": "bayes-concepts " + pub.read_with.format(root=root)}
    tmp = root / "FETCHED.json.partial"
    tmp.write_text(json.dumps(record, indent=2) + "\n")
    tmp.replace(root / "FETCHED.json")
    return root
