"""ConceptWorld's baselines trained and scored as the seed does: per experiment, multi-class
image classification, F1 per class on each test condition.

The seed (Wu et al., §4-5 and Appendix 2-5) poses each of its four experiments as one
K-way classification of 32 x 32 pictures (K = 3-5 classes, each class a union of concepts
at the training lengths), trains each model on the training concepts (Adam, cross-entropy,
early stopping on a validation loss) and reports, per test condition, the F1 score of each
class over that condition's test set.  :data:`SEED_EXPERIMENTS` states each experiment's
classes, its training concepts and test conditions with the seed's sample counts (its
Tables 3, 5, 7 and 9); a class whose test concepts are the same in two conditions is tested
on the same scenes in both, as in the seed.

Inputs are the grid cells only: every scene is drawn anew from its concept by the
ConceptWorld generator and drawn as an RGB picture, float32 (3, 32, 32) in [0, 1], one pixel
per grid point, black where empty (:func:`grid_images`; the seed's images).  The class
label is the index of the class whose concept generated the scene; it is the training
target and is never part of a net's input (no scene label, such as a space's ``source``
attribute, is read: :func:`space_images` draws a space's scenes from their item names).

Differences from the seed, at CPU scale (:class:`BaselineSettings`): ResNet-18 is trained
from scratch (no ImageNet weights can be downloaded); the CNN has 32 channels (the seed's
128); epochs, sample counts and seeds are knobs (the seed: up to 100 epochs, its counts, 10
seeds); every net uses learning rate 1e-3 (the seed tuned WReN and PrediNet to 1e-5 over
100 epochs, too slow to move in a CPU budget).

The episode form (:func:`episode_form`): a trained net's last hidden layer embeds a
ConceptWorld space's scenes and an episode's support gives two prototypes
(:class:`GridNetLearner`), so the nets are scored (mAP, CBA) on the same episodes of the
experiment's protocol splits as the strong and weak oracles.

>>> results = run_baselines(["cnn"], ["productivity"], seeds=[0], settings=QUICK_SETTINGS)  # doctest: +SKIP
>>> results.f1.groupby(["learner", "condition", "concept"]).f1.mean()                  # doctest: +SKIP
"""
from __future__ import annotations

import math
import time
import zlib
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from multiprocessing import get_context

import numpy as np
import torch
from torch import nn

from .definitions import load_definitions
from .generate import sample_scene
from ...errors import BayesConceptsError
from ...learners.grid_nets import grid_nets, make_grid_net, parameter_count
from ...scenes.grid import EMPTY, render_grids
from ...params import whole_number

__all__ = ["BaselineError", "SEED_EXPERIMENTS", "SEED_MODEL_NAMES", "BaselineSettings", "QUICK_SETTINGS",
           "FULL_SETTINGS", "ExperimentData", "BaselineResults", "experiment_data", "grid_images", "space_images",
           "f1_per_class", "train_grid_net", "predict_classes", "train_and_score", "run_baselines", "GridNetLearner",
           "episode_form"]


class BaselineError(BayesConceptsError):
    """Bad input to the ConceptWorld baselines (an unknown learner, experiment or knob)."""


def _concepts(*pairs) -> tuple:
    return tuple(pairs)


#: The seed's four experiments as classification tasks: ``classes`` (names as in
#: ``reported.toml``), ``train`` ``{class: ((concept, scenes), ...)}``, ``test``
#: ``{condition: {class: ((concept, scenes), ...)}}`` (conditions as in ``experiments.toml``),
#: the counts of the seed's Tables 3, 5, 7 and 9.  Type 1 and type 2 are the unions
#: (red square, f-pentomino) and (blue square, z-pentomino), half the scenes each.
SEED_EXPERIMENTS = {
    "productivity": {
        "table": "Table 3 (counts), Table 4 (F1)",
        "classes": ("blue", "red", "mixed"),
        "train": {"blue": _concepts(("blue_seq 1", 800), ("blue_seq 2", 800)),
                  "red": _concepts(("red_seq 1", 800), ("red_seq 2", 800)),
                  "mixed": _concepts(("mixed_seq 2", 1600))},
        "test": {f"length {n}": {"blue": _concepts((f"blue_seq {n}", m)), "red": _concepts((f"red_seq {n}", m)),
                                 "mixed": _concepts((f"mixed_seq {n}", m))}
                 for n, m in ((3, 600), (5, 600), (7, 500))},
    },
    "boxworld": {
        "table": "Table 5 (counts), Table 6 (F1)",
        "classes": ("solution", "distractor", "2x2 square"),
        "train": {"solution": _concepts(("solution 1", 500), ("solution 2", 500)),
                  "distractor": _concepts(("distractor 1", 500), ("distractor 2", 500)),
                  "2x2 square": _concepts(("square", 1000))},
        "test": {f"length {n}": {"solution": _concepts((f"solution {n}", 500)),
                                 "distractor": _concepts((f"distractor {n}", 500)),
                                 "2x2 square": _concepts(("square", 500))}
                 for n in (3, 5)},
    },
    "scaling": {
        "table": "Table 7 (counts), Table 8 (F1)",
        "classes": ("blue", "red", "stripes", "checkerboard"),
        "train": {"blue": _concepts(("all_blue_2x2", 700)), "red": _concepts(("all_red_2x2", 700)),
                  "stripes": _concepts(("stripes_2x2", 800)), "checkerboard": _concepts(("checkerboard_2x2", 800))},
        "test": {"2x2 -> 4x4": {"blue": _concepts(("all_blue_4x4", 350)), "red": _concepts(("all_red_4x4", 350)),
                                "stripes": _concepts(("stripes_4x4", 350)),
                                "checkerboard": _concepts(("checkerboard_4x4", 350))}},
    },
    "substitution": {
        "table": "Table 9 (counts), Table 10 (F1)",
        "classes": ("type 1", "type 2", "type 1 sequences", "type 2 sequences", "mixed sequences"),
        "train": {"type 1": _concepts(("red_square", 400), ("f_pent", 400)),
                  "type 2": _concepts(("blue_square", 400), ("z_pent", 400)),
                  "type 1 sequences": _concepts(("type1_pair_sub0 2", 800)),
                  "type 2 sequences": _concepts(("type2_pair_sub0 2", 800)),
                  "mixed sequences": _concepts(("mixed_pair_sub0 2", 800))},
        "test": {f"{k} substitution{'s' if k > 1 else ''}": {
            "type 1": _concepts(("red_square", 200), ("f_pent", 200)),
            "type 2": _concepts(("blue_square", 200), ("z_pent", 200)),
            "type 1 sequences": _concepts((f"type1_pair_sub{k} 2", 400)),
            "type 2 sequences": _concepts((f"type2_pair_sub{k} 2", 400)),
            "mixed sequences": _concepts((f"mixed_pair_sub{k} 2", 400))} for k in (1, 2)},
    },
}

#: our learner -> the seed's row it is compared with (``reported.toml``'s model names; the
#: seed's ResNet without pretraining was reported for productivity only).
SEED_MODEL_NAMES = {"mlp": "MLP", "cnn": "CNN", "resnet18": "ResNet", "wren": "WReN", "predinet": "PrediNet"}


@dataclass(frozen=True)
class BaselineSettings:
    """Budget knobs of one training.

    scale, test_scale: fractions of the seed's training and test counts (each concept keeps
    at least one scene); val_fraction: of the training scenes held out for early stopping;
    epochs: at most this many passes; patience: stop after this many epochs without a lower
    validation loss (the best epoch's weights are kept); max_cpu_seconds: stop after the epoch
    that crosses this much CPU time; lr: Adam's learning rate; batch_size: per learner, the
    seed's (128; PrediNet 64); noise: (lo, hi) isolated noise points added to each scene (the
    seed's pictures have none); net_options: per learner, sizes given to
    :func:`~bayes_concepts.learners.grid_nets.make_grid_net`."""

    scale: float = 1.0
    test_scale: float = 1.0
    val_fraction: float = 0.1
    epochs: int = 30
    patience: int = 5
    max_cpu_seconds: float = 180.0
    lr: float = 1e-3
    batch_size: dict = field(default_factory=lambda: {"mlp": 128, "cnn": 128, "resnet18": 128, "wren": 128,
                                                      "predinet": 64})
    noise: tuple = (0, 0)
    net_options: dict = field(default_factory=dict)

    def check(self) -> "BaselineSettings":
        for name, v in (("scale", self.scale), ("test_scale", self.test_scale),
                        ("max_cpu_seconds", self.max_cpu_seconds), ("lr", self.lr)):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
                raise BaselineError(f"BaselineSettings.{name} must be a positive number, got {v!r}")
        if isinstance(self.val_fraction, bool) or not isinstance(self.val_fraction, (int, float)) \
                or not 0 < self.val_fraction < 1:
            raise BaselineError(f"BaselineSettings.val_fraction must be in (0, 1), got {self.val_fraction!r}")
        for name, v in (("epochs", self.epochs), ("patience", self.patience)):
            whole_number(name, v, 1, error=BaselineError, prefix="BaselineSettings.")
        lo, hi = self.noise
        if not (isinstance(lo, int) and isinstance(hi, int) and 0 <= lo <= hi):
            raise BaselineError(f"BaselineSettings.noise must be (lo, hi) whole numbers, 0 <= lo <= hi, got "
                                f"{self.noise!r}")
        return self


#: seconds per training: 20 % of the seed's training scenes (10 % of its test scenes), batches
#: of 32, six epochs, narrower nets
QUICK_SETTINGS = BaselineSettings(scale=0.2, test_scale=0.1, epochs=6, patience=6, max_cpu_seconds=20.0,
                                  batch_size={"mlp": 32, "cnn": 32, "resnet18": 32, "wren": 32, "predinet": 32},
                                  net_options={"resnet18": {"width": 16}, "cnn": {"channels": 16},
                                               "wren": {"channels": 32, "g_hidden": 32, "f_hidden": 32}})
#: the benchmark's full scale: the seed's counts, up to 30 epochs or 180 CPU seconds per training
FULL_SETTINGS = BaselineSettings()


# ================================================================================ data
@dataclass
class ExperimentData:
    """One experiment's scenes for one seed: ``classes`` (K names), ``train_grids`` int8
    (n, N, N) with ``train_labels`` int64 (n,) in 0..K-1, ``tests`` ``{condition: (grids int8
    (m, N, N), labels int64 (m,))}``, the palette ``colors`` and the ``counts`` actually drawn
    ``{"train": {class: n}, condition: {class: m}}``."""

    experiment: str
    classes: tuple
    train_grids: np.ndarray
    train_labels: np.ndarray
    tests: dict
    colors: tuple
    counts: dict


def _experiment(experiment: str) -> dict:
    if experiment not in SEED_EXPERIMENTS:
        raise BaselineError(f"no ConceptWorld experiment {experiment!r} (there are {', '.join(SEED_EXPERIMENTS)})")
    return SEED_EXPERIMENTS[experiment]


def _draw(defs, spec: tuple, scale: float, noise: tuple, seed: int, experiment: str, side: str) -> np.ndarray:
    """int8 (n, N, N): the scenes of one class, ``spec`` = ((concept, seed's count), ...);
    the stream depends on the seed, experiment, side (train/test) and spec only, so a class
    tested on the same concepts in two conditions gets the same scenes."""
    key = zlib.crc32(repr((experiment, side, spec)).encode())
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), 4001, key]))
    out = []
    for concept, count in spec:
        n = max(1, int(round(count * scale)))
        out += [sample_scene(defs, concept, rng, noise)[0] for _ in range(n)]
    return np.stack(out)


def experiment_data(experiment: str, seed: int = 0, settings: BaselineSettings | None = None,
                    definitions=None) -> ExperimentData:
    """The scenes of ``experiment`` (one of :data:`SEED_EXPERIMENTS`) for ``seed``, drawn by
    the ConceptWorld generator from the packaged definitions (or ``definitions``), at
    ``settings.scale`` / ``settings.test_scale`` of the seed's counts."""
    s = (settings or BaselineSettings()).check()
    e = _experiment(experiment)
    defs = load_definitions(definitions)
    grids, labels, counts = [], [], {"train": {}}
    for k, c in enumerate(e["classes"]):
        g = _draw(defs, e["train"][c], s.scale, s.noise, seed, experiment, "train")
        grids.append(g)
        labels.append(np.full(len(g), k, np.int64))
        counts["train"][c] = len(g)
    tests = {}
    for cond, per_class in e["test"].items():
        tg, tl = [], []
        counts[cond] = {}
        for k, c in enumerate(e["classes"]):
            g = _draw(defs, per_class[c], s.test_scale, s.noise, seed, experiment, "test")
            tg.append(g)
            tl.append(np.full(len(g), k, np.int64))
            counts[cond][c] = len(g)
        tests[cond] = (np.concatenate(tg), np.concatenate(tl))
    return ExperimentData(experiment, tuple(e["classes"]), np.concatenate(grids), np.concatenate(labels), tests,
                          tuple(defs.colors), counts)


def grid_images(grids, colors) -> torch.Tensor:
    """float32 (S, 3, N, N): RGB pictures in [0, 1] of int8 grid scenes (S, N, N), one pixel
    per point, black where empty (:func:`~bayes_concepts.scenes.grid.render_grids`)."""
    g = np.asarray(grids)
    if g.ndim != 3 or g.shape[1] != g.shape[2] or not np.issubdtype(g.dtype, np.integer):
        raise BaselineError(f"grid_images: expected int grids (S, N, N), got {g.dtype} {g.shape}")
    if g.size and (g.min() < EMPTY or g.max() >= len(colors)):
        raise BaselineError(f"grid_images: colour indices must be in -1..{len(colors) - 1}, got "
                            f"{int(g.min())}..{int(g.max())}")
    rgb = render_grids(g, colors)                                  # uint8 (S, N, N, 3)
    return torch.from_numpy(np.ascontiguousarray(rgb.transpose(0, 3, 1, 2))).float().div_(255.0)


def space_images(space, items=None) -> torch.Tensor:
    """float32 (S, 3, N, N): the pictures of a ConceptWorld space's scenes ``items`` (default
    all), drawn from their item names (the grid cells) only: a scene's labels, its
    generating concept (``source``) among them, are never read."""
    if not space.has_grids:
        raise BaselineError("space_images: not a ConceptWorld space (its items are not grid scenes)")
    ids = range(len(space.item_names)) if items is None else [int(i) for i in np.asarray(items).ravel()]
    return grid_images(np.stack([space.grid(j) for j in ids]), space.grid_colors())


# ============================================================================ scoring
def f1_per_class(y_true, y_pred, n_classes: int) -> np.ndarray:
    """float64 (K,): class k's F1 = 2·TP / (2·TP + FP + FN) of the predictions ``y_pred``
    against ``y_true`` (int (m,), classes 0..K-1), one class against the rest; 0 where the
    class is neither true nor predicted (scikit-learn's ``f1_score(average=None,
    zero_division=0)``)."""
    t = np.asarray(y_true, np.int64)
    p = np.asarray(y_pred, np.int64)
    if t.shape != p.shape or t.ndim != 1:
        raise BaselineError(f"f1_per_class: y_true and y_pred must be 1-D of one length, got {t.shape} and {p.shape}")
    k = np.arange(int(n_classes))
    tp = ((t[:, None] == k) & (p[:, None] == k)).sum(axis=0)
    fp = ((t[:, None] != k) & (p[:, None] == k)).sum(axis=0)
    fn = ((t[:, None] == k) & (p[:, None] != k)).sum(axis=0)
    denom = 2 * tp + fp + fn
    return np.where(denom > 0, 2 * tp / np.maximum(denom, 1), 0.0)


@torch.no_grad()
def predict_classes(net: nn.Module, images: torch.Tensor, batch: int = 512) -> np.ndarray:
    """int64 (S,): the most probable class of each picture, float32 (S, 3, N, N)."""
    net.eval()
    out = [net(images[i:i + batch]).argmax(dim=1) for i in range(0, len(images), batch)]
    return torch.cat(out).numpy() if out else np.zeros(0, np.int64)


@torch.no_grad()
def _mean_loss(net, images, labels, batch: int = 512) -> float:
    net.eval()
    total = sum(float(nn.functional.cross_entropy(net(images[i:i + batch]), labels[i:i + batch], reduction="sum"))
                for i in range(0, len(images), batch))
    return total / max(len(images), 1)


def train_grid_net(learner: str, data: ExperimentData, seed: int = 0, settings: BaselineSettings | None = None,
                   log=None) -> tuple:
    """(net, record): grid net ``learner`` trained on ``data``'s training scenes as the seed
    trains (Adam, cross-entropy, early stopping on the validation loss of a held-out
    ``settings.val_fraction``, the best epoch's weights kept).  ``record``: epochs run, best
    epoch, best validation loss, CPU seconds, parameters, training and validation sizes.
    ``log``: called with one progress line per epoch."""
    s = (settings or BaselineSettings()).check()
    if learner not in grid_nets:
        raise BaselineError(f"no grid net {learner!r} (there are {', '.join(grid_nets.names())})")
    t0 = time.process_time()
    torch.manual_seed(int(seed))
    images = grid_images(data.train_grids, data.colors)
    labels = torch.from_numpy(data.train_labels)
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), 4002]))
    order = rng.permutation(len(labels))
    n_val = max(1, int(round(len(labels) * s.val_fraction)))
    val, tr = order[:n_val], order[n_val:]
    if not len(tr):
        raise BaselineError(f"train_grid_net: {len(labels)} training scenes leave none after the validation hold-out")
    net = make_grid_net(learner, len(data.classes), image_size=int(images.shape[-1]), in_channels=3,
                        **s.net_options.get(learner, {}))
    opt = torch.optim.Adam(net.parameters(), lr=s.lr)
    batch = int(s.batch_size.get(learner, 128))
    best, best_state, best_epoch, stale, epoch = math.inf, None, 0, 0, 0
    for epoch in range(1, s.epochs + 1):
        net.train()
        perm = tr[rng.permutation(len(tr))]
        running = 0.0
        for i in range(0, len(perm), batch):
            idx = torch.from_numpy(perm[i:i + batch])
            if len(idx) < 2:  # batch norm needs two pictures
                continue
            opt.zero_grad()
            loss = nn.functional.cross_entropy(net(images[idx]), labels[idx])
            loss.backward()
            opt.step()
            running += float(loss.detach()) * len(idx)
        v = _mean_loss(net, images[val], labels[val])
        if v < best:
            best, best_epoch, stale = v, epoch, 0
            best_state = {k: t.detach().clone() for k, t in net.state_dict().items()}
        else:
            stale += 1
        cpu = time.process_time() - t0
        if log:
            log(f"[{learner} {data.experiment} seed {seed}] epoch {epoch}/{s.epochs}: train loss "
                f"{running / len(tr):.3f}, val loss {v:.3f} (best {best:.3f} at {best_epoch}), {cpu:.1f} CPU s")
        if stale >= s.patience or cpu >= s.max_cpu_seconds:
            break
    if best_state is not None:
        net.load_state_dict(best_state)
    net.eval()
    record = {"epochs": epoch, "best_epoch": best_epoch, "val_loss": best,
              "train_cpu_seconds": time.process_time() - t0, "parameters": parameter_count(net),
              "n_train": int(len(tr)), "n_val": int(n_val),
              "validation": _learned_record(net, images[val], data.train_labels[val], len(data.classes), seed)}
    return net, record


def _learned_record(net, images, labels: np.ndarray, n_classes: int, seed: int) -> dict:
    """"Did it learn?" (:func:`bayes_concepts.learners.learned.learned_check` on accuracy): the
    net's accuracy on the validation hold-out against a random guess's (a uniform class per
    scene, seeded) on the same scenes, points per scene (0 or 100), 95 % intervals."""
    from ...learners.learned import learned_check
    with torch.no_grad():
        pred = net(images).argmax(dim=1).numpy()
    guess = np.random.default_rng(np.random.SeedSequence([int(seed), 4003])).integers(n_classes, size=len(labels))
    rec = learned_check(100.0 * (pred == labels), 100.0 * (guess == labels))
    rec["measure"] = "accuracy on the validation hold-out (the record's map and random_map hold accuracies)"
    return rec


def train_and_score(learner: str, experiment: str, seed: int = 0, settings: BaselineSettings | None = None,
                    log=None) -> tuple:
    """(F1 rows, training row, trained net) of one training: ``learner`` trained on ``experiment``'s
    training scenes for ``seed`` and scored on each of its test conditions.  F1 rows: one
    dict per condition and class (``learner``, ``experiment``, ``condition``, ``seed``,
    ``concept``, ``f1``, ``support``), plus ``concept`` = ``"macro"`` (the classes' mean) and
    the condition's ``accuracy``."""
    s = (settings or BaselineSettings()).check()
    t0 = time.process_time()
    data = experiment_data(experiment, seed, s)
    t_data = time.process_time() - t0
    net, record = train_grid_net(learner, data, seed, s, log)
    t1 = time.process_time()
    rows = []
    for cond, (grids, labels) in data.tests.items():
        pred = predict_classes(net, grid_images(grids, data.colors))
        f1 = f1_per_class(labels, pred, len(data.classes))
        base = {"learner": learner, "experiment": experiment, "condition": cond, "seed": int(seed)}
        for k, c in enumerate(data.classes):
            rows.append({**base, "concept": c, "f1": float(f1[k]), "support": int((labels == k).sum())})
        rows.append({**base, "concept": "macro", "f1": float(f1.mean()), "support": int(len(labels)),
                     "accuracy": float((pred == labels).mean())})
    training = {"learner": learner, "experiment": experiment, "seed": int(seed), **record,
                "data_cpu_seconds": t_data, "test_cpu_seconds": time.process_time() - t1,
                "n_test": {cond: int(len(lab)) for cond, (_, lab) in data.tests.items()}}
    if log:
        macro = ", ".join(f"{r['condition']} {r['f1']:.2f}" for r in rows if r["concept"] == "macro")
        log(f"[{learner} {experiment} seed {seed}] done in {record['train_cpu_seconds']:.1f} CPU s; macro F1: {macro}")
    return rows, training, net


@dataclass
class BaselineResults:
    """``f1``: tidy table (pandas DataFrame), one row per learner, experiment, condition, seed
    and class (and ``"macro"``); ``trainings``: one row per training (epochs, CPU seconds,
    parameters, sizes); ``settings``: the knobs used (a dict); ``nets``: with ``keep_nets``,
    ``{(learner, experiment, seed): trained net}``, else empty."""

    f1: object
    trainings: object
    settings: dict
    nets: dict = field(default_factory=dict)


def _one_thread():
    torch.set_num_threads(1)


def _task(args):
    learner, experiment, seed, settings, keep = args
    rows, training, net = train_and_score(learner, experiment, seed, settings, log=_print_log)
    return rows, training, (net.state_dict() if keep else None)


def _print_log(line: str) -> None:
    print(line, flush=True)


def run_baselines(learners=("mlp", "cnn", "resnet18", "wren", "predinet"), experiments=tuple(SEED_EXPERIMENTS),
                  seeds=(0,), settings: BaselineSettings | None = None, jobs: int = 1, log=None,
                  keep_nets: bool = False) -> BaselineResults:
    """Train every learner on every experiment for every seed and score it (:func:`train_and_score`).

    jobs: trainings run in this many processes, one torch thread each (``jobs`` = 1: in this
    process, with its thread setting); log: called with progress lines (in the processes,
    lines are printed); keep_nets: keep the trained nets (for :func:`episode_form`)."""
    import pandas as pd
    s = (settings or BaselineSettings()).check()
    learners, experiments, seeds = list(learners), list(experiments), [int(x) for x in seeds]
    for name in learners:
        if name not in grid_nets:
            raise BaselineError(f"no grid net {name!r} (there are {', '.join(grid_nets.names())})")
    for e in experiments:
        _experiment(e)
    whole_number("jobs", jobs, 1, error=BaselineError, prefix="run_baselines: ")
    tasks = [(m, e, sd) for e in experiments for sd in seeds for m in learners]
    nets = {}
    if jobs == 1:
        done = []
        for m, e, sd in tasks:
            rows, training, net = train_and_score(m, e, sd, s, log)
            done.append((rows, training))
            if keep_nets:
                nets[(m, e, sd)] = net
    else:
        with ProcessPoolExecutor(max_workers=jobs, mp_context=get_context("spawn"), initializer=_one_thread) as pool:
            out = list(pool.map(_task, [(m, e, sd, s, bool(keep_nets)) for m, e, sd in tasks]))
        done = [(rows, training) for rows, training, _ in out]
        if keep_nets:
            for (m, e, sd), (_, _, state) in zip(tasks, out):
                net = make_grid_net(m, len(SEED_EXPERIMENTS[e]["classes"]), **s.net_options.get(m, {}))
                net.load_state_dict(state)
                nets[(m, e, sd)] = net.eval()
    rows = [r for rs, _ in done for r in rs]
    trainings = [t for _, t in done]
    return BaselineResults(pd.DataFrame(rows), pd.DataFrame(trainings), _settings_record(s), nets)


# ======================================================================= episode form
class GridNetLearner:
    """A trained grid net as a few-shot learner of a ConceptWorld space's episodes, so that it
    is scored (mAP, CBA) on the oracles' episodes (the learner protocol of
    :mod:`bayes_concepts.learners.protocol`: ``fit``, ``predict_proba``,
    ``decision_function``).

    A scene's embedding f is the net's ``features`` (its last hidden layer) of the scene's
    picture, drawn from its grid cells (:func:`space_images`; no scene label is read); a
    support set gives the prototypes c_p and c_n, the means of its positives' and negatives'
    embeddings, and a scene u scores logit(u) = ||f(u) − c_n||² − ||f(u) − c_p||² (the
    toolkit's prototype learners' rule, Snell et al. 2017).  The net is not trained on the
    episodes: it was trained on the experiment's classification task."""

    def __init__(self, space, net: nn.Module, name: str):
        if not space.has_grids:
            raise BaselineError("GridNetLearner: not a ConceptWorld space (its items are not grid scenes)")
        self.space, self.net, self.name = space, net, str(name)
        self._embedding = None
        self._w = self._b = None

    def embeddings(self) -> np.ndarray:
        """float64 (N_items, D): every scene of the space embedded once."""
        if self._embedding is None:
            images = space_images(self.space)
            self.net.eval()
            with torch.no_grad():
                parts = [self.net.features(images[i:i + 512]) for i in range(0, len(images), 512)]
            self._embedding = torch.cat(parts).double().numpy()
        return self._embedding

    def _rows(self, scenes) -> np.ndarray:
        ids = np.asarray(scenes)
        if ids.ndim != 1 or (ids.size and not np.issubdtype(ids.dtype, np.integer)):
            raise BaselineError(f"{self.name}: scenes must be scene ids of the space (ints), got {ids.dtype} "
                                f"{ids.shape}")
        if ids.size and (ids.min() < 0 or ids.max() >= len(self.space.item_names)):
            raise BaselineError(f"{self.name}: scene ids must be in 0..{len(self.space.item_names) - 1}")
        return self.embeddings()[ids.astype(np.int64)]

    def fit(self, scenes, labels) -> "GridNetLearner":
        emb = self._rows(scenes)
        y = np.asarray(labels)
        if y.shape != (len(emb),) or not np.isin(y, (0, 1)).all() or y.min() == y.max():
            raise BaselineError(f"{self.name}: labels must be 0/1, one per support scene, with both classes")
        c_p, c_n = emb[y == 1].mean(axis=0), emb[y == 0].mean(axis=0)
        self._w, self._b = 2.0 * (c_p - c_n), float(c_n @ c_n - c_p @ c_p)
        return self

    def decision_function(self, scenes) -> np.ndarray:
        """float64 (n,): ||f(u) − c_n||² − ||f(u) − c_p||² per scene."""
        if self._w is None:
            raise BaselineError(f"{self.name}: call fit() before predicting")
        return self._rows(scenes) @ self._w + self._b

    def predict_proba(self, scenes) -> np.ndarray:
        """float64 (n,): sigmoid of :meth:`decision_function`."""
        return 1.0 / (1.0 + np.exp(-np.clip(self.decision_function(scenes), -500, 500)))


def episode_form(space, experiment: str, nets: dict, n_episodes: int = 1000, seed: int = 0,
                 negatives=("easy", "hard")) -> list:
    """mAP and CBA (percent) of trained grid nets beside the strong and weak oracles on the
    same episodes of ``experiment``'s protocol splits of ``space`` (a ConceptWorld space;
    :func:`bayes_concepts.gap.compute_gap`).  nets: ``{name: trained net}``, each scored as a
    :class:`GridNetLearner`.  Returns one dict per split, negatives and learner (``strong``,
    ``weak`` and each net): ``experiment``, ``split``, ``condition``, ``negatives``,
    ``learner``, ``map``, ``cba`` and, for the nets, ``map_ci`` and ``cba_ci`` (95 %
    bootstrap intervals over episodes)."""
    from ...gap import compute_gap, summarise
    from .space import experiment_splits
    _experiment(experiment)
    splits = experiment_splits(space, experiment)
    learners = {name: GridNetLearner(space, net, name) for name, net in nets.items()}
    ds = compute_gap(space, splits, negatives=tuple(negatives), n_episodes=int(n_episodes), seed=int(seed),
                     learners=learners)
    out = []
    for row in summarise(ds):
        base = {"experiment": experiment, "split": row["split"],
                "condition": splits[row["split"]].spec.get("condition", row["split"]),
                "negatives": row["negatives"], "episodes": row["episodes"]}
        for oracle in ("strong", "weak"):
            out.append({**base, "learner": oracle, "map": row[oracle]["map"], "cba": row[oracle]["cba"]})
        for name, r in row.get("learners", {}).items():
            out.append({**base, "learner": name, "map": r["map"], "cba": r["cba"], "map_ci": r["map_ci"],
                        "cba_ci": r["cba_ci"]})
    return out


def _settings_record(s: BaselineSettings) -> dict:
    out = asdict(s)
    out["noise"] = list(s.noise)
    return out

