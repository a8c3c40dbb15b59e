"""Meta-training of the neural learners (CURI section 4.1, Appendix E).

Episodes come from the split's *train* concepts through the same
:class:`~bayes_concepts.episodes.EpisodeSampler` as the oracles' episodes (hard or
easy negatives), in blocks of ``chunk_episodes`` whose seeds derive from the
learner's seed and the block number, so a run is reproducible and resumes exactly
where it stopped.  Every ``val_every`` steps the learner is scored on fixed
validation episodes from the split's *val* concepts (train concepts if the split
has none; the history says which) and the weights with the best validation mAP are
kept (written to ``out`` as the model).  Training stops at ``max_steps``, at the time
``budget``, or after ``patience`` validations without improvement.  The budget covers the
whole run, from drawing the validation episodes to the written model: a step starts only
when it and the validation and save that close the run are expected to end within the
budget (each expected to take as long as the slowest of its recent runs), so a run ends about
when its budget is spent, not a step and a validation later; the first validation is always
made, however long it takes.  A resumed run's budget is its own, counted from its start (the
steps of the runs before it do not count against it), and it makes a new warm-up and
cosine cycle over that budget.

Under a time budget the schedule scales to what the budget affords: warm-up takes at most
:data:`WARMUP_SHARE` of the steps the budget is expected to afford (estimated from the
steps' times, :func:`budget_warmup`), and unless ``val_episodes``/``val_every`` are given
the validations take about :data:`VALIDATION_SHARE` of it (:func:`budget_val_episodes`
from a timed probe of 32 validation episodes, :func:`budget_val_every` from the steps'
times).  The history's ``budget`` entry records what was used.

Loss per episode: mean binary cross-entropy of the query labels under the prototype
logits + alpha × the concept decoder's mean token cross-entropy.  Adam, CURI's
learning rate 1e-3 and 64 episodes per step for schema models.

Progress: a tqdm bar on a terminal; otherwise one plain line every
``report_every_s`` seconds and at every validation (readable in a log file).
"""
from __future__ import annotations

import json
import math
import os
import re
import sys
import time
import zlib
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np
import torch

from ..episodes import EpisodeSampler
from ..splits import by_set
from .binding import space_record
from .protocol import LearnerError
from .profiles import training_profiles
from .store import (WEIGHTS, read_card, read_tensors, save_model, sha256_file, write_json_atomic,
                    write_tensors_atomic)

CHECKPOINT = "checkpoint.safetensors"
CHECKPOINT_STATE = "checkpoint.json"


def parse_duration(text) -> float:
    """Seconds of a duration: a number (seconds) or text like ``90s``, ``30m``, ``2h``, ``1h30m``."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        value = float(text)
    else:
        s = str(text).strip().lower()
        m = re.fullmatch(r"(?:(\d+(?:\.\d+)?)h)?\s*(?:(\d+(?:\.\d+)?)m(?:in)?)?\s*(?:(\d+(?:\.\d+)?)s?)?", s)
        if not s or not m or not any(m.groups()):
            raise LearnerError(f"budget {text!r}: expected seconds or a duration like 90s, 30m, 2h, 1h30m")
        h, mi, sec = (float(g) if g else 0.0 for g in m.groups())
        value = 3600 * h + 60 * mi + sec
    if not (math.isfinite(value) and value > 0):
        raise LearnerError(f"budget {text!r}: must be a positive duration")
    return value


def format_duration(seconds: float) -> str:
    seconds = int(round(seconds))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}h{m:02d}m{s:02d}s" if h else (f"{m}m{s:02d}s" if m else f"{s}s")


#: Validation steps and episodes when neither a time budget nor ``val_every``/``val_episodes`` scale them.
VAL_EVERY, VAL_EPISODES = 500, 1000
#: Share of a time budget the validations are planned to take (unless their number and size are given).
VALIDATION_SHARE = 0.2
#: Validations a budget's validation size is planned for before any step is timed: the first,
#: one between and the closing one.
PLANNED_VALIDATIONS = 3
#: Fewest validation episodes a budget scales the validation set down to (fewer make the choice of
#: the best weights a coin toss).
LEAST_VAL_EPISODES = 100
#: Validation episodes timed to size the validation set under a budget.
PROBE_EPISODES = 32
#: Most of the steps a run is expected to take that its warm-up may take.
WARMUP_SHARE = 0.1
#: What the history says the budget covers.
BUDGET_COVERS = ("this run, from its start (the command's start on the command line, loading the space included) "
                 "to the written model; a resumed run's budget is its own, not the total of the runs")


def expected_steps(steps_done: int, remaining_s: float, step_s: float) -> float:
    """Steps a run is expected to take in all: ``steps_done`` and as many more ``step_s``-second
    steps as fit in ``remaining_s`` seconds (infinite while no step is timed, ``step_s`` 0)."""
    if step_s <= 0:
        return math.inf
    return steps_done + max(0.0, remaining_s) / step_s


def budget_warmup(warmup_steps: int, steps_done: int, remaining_s: float, step_s: float,
                  share: float = WARMUP_SHARE) -> int:
    """Warm-up steps of a run that has taken ``steps_done`` steps and has ``remaining_s``
    seconds left for steps of ``step_s`` seconds: at most ``share`` of the steps it is
    expected to take (:func:`expected_steps`), at least 1, at most ``warmup_steps`` (0: none).
    """
    if warmup_steps <= 0:
        return 0
    expected = expected_steps(steps_done, remaining_s, step_s)
    if not math.isfinite(expected):
        return int(warmup_steps)
    return int(min(warmup_steps, max(1, math.floor(share * expected))))


def budget_val_episodes(requested: int, budget_s: float, episode_s: float, fixed_s: float = 0.0,
                        share: float = VALIDATION_SHARE, planned: int = PLANNED_VALIDATIONS,
                        least: int = LEAST_VAL_EPISODES) -> int:
    """Validation episodes under a ``budget_s``-second budget when a validation takes
    ``fixed_s`` seconds (embedding the test bank) and ``episode_s`` more an episode: as many
    as let ``planned`` validations take ``share`` of the budget, at least ``least``, at most
    ``requested``."""
    if episode_s <= 0:
        return int(requested)
    fit = math.floor((share * budget_s / planned - fixed_s) / episode_s)
    return int(min(requested, max(least, fit)))


def budget_val_every(requested: int, validate_s: float, step_s: float, share: float = VALIDATION_SHARE) -> int:
    """Steps between validations that take ``validate_s`` seconds, with steps of ``step_s``
    seconds, so that validating takes at most ``share`` of the time: at least ``requested``
    (validations are never made more often than asked)."""
    if step_s <= 0 or validate_s <= 0:
        return int(requested)
    return int(max(requested, math.ceil(validate_s * (1 - share) / (share * step_s) - 1e-9)))


def available_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


@dataclass(frozen=True)
class TrainSettings:
    """How a learner is meta-trained.

    negatives: ``hard`` or ``easy`` support (and query) negatives; hard_mode and
    query_negatives: as in :meth:`EpisodeSampler.sample`; batch_episodes: episodes per Adam
    step (CURI: 64; at most chunk_episodes, else an error); lr: Adam's learning rate (CURI: 1e-3 for
    schemas); max_steps: step limit
    (None: none); budget_s: wall-clock limit in seconds of this run (None: none; the default is 30
    minutes when neither limit is given; a resumed run's is its own); val_every: steps between
    validations (None: 500, more under a time budget, :func:`budget_val_every`);
    val_episodes: validation episodes (fixed; None: 1000, fewer under a time budget,
    :func:`budget_val_episodes`); patience: validations without improvement
    before stopping (0: never stop early); chunk_episodes: episodes drawn per sampler call;
    threads: torch threads (None: every core available); report_every_s: seconds between
    plain progress lines when output is not a terminal.

    lr_schedule: ``constant`` (CURI's) or ``cosine``: after ``warmup_steps`` of linear
    warm-up (under a time budget at most a tenth of the steps it affords, :func:`budget_warmup`),
    the rate follows a half cosine from ``lr`` down to ``lr_final`` × ``lr`` at the
    end of the run, the end being ``max_steps`` or the time ``budget_s``, whichever comes
    first (progress = max(step / max_steps, elapsed / span), so a time budget decays
    on the clock, over the span from the run's first step to the closing validation).  block_passes: how many times each block of ``chunk_episodes``
    sampled episodes is used (in a fresh order each pass) before the next block is drawn;
    CURI drew a fixed pool of 500,000 episodes and used each about 128 times; 1 (the
    default, every episode fresh) costs about 0.5 ms of sampling per hard-negative episode
    on the CURI-scale space (~5 % of a schema relation net's step), more where the
    sampler has to re-read a memory-mapped space.

    profile: the name of the training profile these settings came from
    (:mod:`~bayes_concepts.learners.profiles`), recorded with them; the defaults above are
    the ``cpu`` profile's, and :func:`~bayes_concepts.learners.profiles.resolve_profile`
    gives another profile's values.
    """

    negatives: str = "hard"
    hard_mode: str = "union"
    query_negatives: str | None = None
    batch_episodes: int = 64
    lr: float = 1e-3
    max_steps: int | None = None
    budget_s: float | None = None
    val_every: int | None = None
    val_episodes: int | None = None
    patience: int = 10
    chunk_episodes: int = 4096
    threads: int | None = None
    report_every_s: float = 30.0
    lr_schedule: str = "cosine"
    warmup_steps: int = 100
    lr_final: float = 0.02
    block_passes: int = 1
    profile: str = "cpu"

    def __post_init__(self):
        if self.negatives not in ("hard", "easy"):
            raise LearnerError(f"negatives must be 'hard' or 'easy', got {self.negatives!r}")
        for name in ("batch_episodes", "val_every", "val_episodes", "chunk_episodes"):
            v = getattr(self, name)
            if v is None and name in ("val_every", "val_episodes"):
                continue
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise LearnerError(f"{name} must be a positive integer, got {v!r}")
        if self.batch_episodes > self.chunk_episodes:
            # a step takes its batch from one drawn block of chunk_episodes episodes: a larger
            # batch was silently cut to the block while the card reported the batch asked for
            raise LearnerError(f"batch_episodes (--batch) {self.batch_episodes:,} is above the {self.chunk_episodes:,} "
                               f"episodes drawn per block (chunk_episodes), the most one step can use; "
                               f"ask for at most {self.chunk_episodes:,}")
        if self.max_steps is not None and (not isinstance(self.max_steps, (int, np.integer)) or self.max_steps < 0):
            raise LearnerError(f"max_steps must be an integer >= 0, got {self.max_steps!r}")
        if self.budget_s is not None:
            object.__setattr__(self, "budget_s", parse_duration(self.budget_s))
        if not (isinstance(self.lr, (int, float)) and self.lr > 0):
            raise LearnerError(f"lr must be a positive number, got {self.lr!r}")
        if not isinstance(self.patience, (int, np.integer)) or self.patience < 0:
            raise LearnerError(f"patience must be an integer >= 0, got {self.patience!r}")
        if self.lr_schedule not in LR_SCHEDULES:
            raise LearnerError(f"lr_schedule must be one of {', '.join(LR_SCHEDULES)}, got {self.lr_schedule!r}")
        if isinstance(self.warmup_steps, bool) or not isinstance(self.warmup_steps, (int, np.integer)) \
                or self.warmup_steps < 0:
            raise LearnerError(f"warmup_steps must be an integer >= 0, got {self.warmup_steps!r}")
        if not (isinstance(self.lr_final, (int, float)) and 0 <= self.lr_final <= 1):
            raise LearnerError(f"lr_final must be a number in [0, 1], got {self.lr_final!r}")
        if isinstance(self.block_passes, bool) or not isinstance(self.block_passes, (int, np.integer)) \
                or self.block_passes < 1:
            raise LearnerError(f"block_passes must be a positive integer, got {self.block_passes!r}")
        if self.profile not in training_profiles.names():
            raise LearnerError(f"unknown training profile {self.profile!r} (expected one of "
                               f"{', '.join(training_profiles.names())})")

    def learning_rate(self, step: int, elapsed_s: float, *, warmup_steps: int | None = None, first_step: int = 0,
                      span_s: float | None = None) -> float:
        """Adam's rate at ``step`` after ``elapsed_s`` seconds (see ``lr_schedule``).

        warmup_steps: the run's warm-up (default the setting's; :func:`budget_warmup` under a
        time budget), counted from ``first_step`` (a resumed run's first step under a time
        budget); span_s: the seconds the cosine spans (default the budget), ``elapsed_s``
        counted from the span's start.
        """
        lr = float(self.lr)
        warmup = self.warmup_steps if warmup_steps is None else warmup_steps
        if warmup and step - first_step < warmup:
            lr *= (step - first_step + 1) / warmup
        if self.lr_schedule == "constant":
            return lr
        max_steps, budget = self.limits()
        span = budget if span_s is None else span_s
        progress = 0.0
        if max_steps:
            progress = max(progress, step / max_steps)
        if budget:
            progress = max(progress, elapsed_s / span if span and span > 0 else 1.0)
        progress = min(1.0, progress)
        return lr * (self.lr_final + (1 - self.lr_final) * 0.5 * (1 + math.cos(math.pi * progress)))

    def limits(self) -> tuple:
        """(max_steps, budget_s) with the default 30-minute budget when neither is set."""
        if self.max_steps is None and self.budget_s is None:
            return None, 1800.0
        return self.max_steps, self.budget_s

    def as_dict(self) -> dict:
        return asdict(self)


LR_SCHEDULES = ("constant", "cosine")


def stream_seed(seed: int, what: str, index: int = 0) -> int:
    """Seed of one block of training episodes (``what`` = ``train``) or of the validation set."""
    ss = np.random.SeedSequence([int(seed), zlib.crc32(what.encode()), int(index)])
    return int(ss.generate_state(1, np.uint32)[0])


@dataclass
class _State:
    step: int = 0
    wall_s: float = 0.0
    train_s: float = 0.0
    sample_s: float = 0.0
    curve: list = field(default_factory=list)
    best_map: float = -math.inf
    best_step: int = -1
    bad_validations: int = 0
    stopped: str | None = None
    val_episodes: int | None = None  # the validation set's size, kept by a resumed run
    costs: dict = field(default_factory=dict)  # seconds the budget rule expects (validate, save), kept on resume


class _Reporter:
    """tqdm bar on a terminal, plain lines otherwise."""

    def __init__(self, learner, split_name, progress, log, total, every_s):
        self.tty = sys.stderr.isatty() if progress == "auto" else bool(progress)
        self.enabled = progress is not False
        self.log = log or (lambda line: print(line, file=sys.stderr, flush=True))
        self.every_s = every_s
        self.last = time.perf_counter()
        self.head = f"train {learner.name} on {split_name}"
        self.before_s = 0.0  # wall seconds of the runs before this one (a resumed run's budget is its own)
        self.bar = None
        if self.enabled and self.tty:
            from tqdm.auto import tqdm
            self.bar = tqdm(total=total, desc=self.head, unit="step", leave=False, dynamic_ncols=True)

    def update(self, state, loss, rate, budget, validated=False):
        if not self.enabled:
            return
        last = state.curve[-1] if state.curve else None
        if self.bar is not None:
            self.bar.n = state.step
            post = {"loss": f"{loss:.4f}", "ep/s": f"{rate:.0f}"} if math.isfinite(loss) else {}
            if last:
                post["val mAP"] = f"{100 * last['val_map']:.1f}"
                post["best"] = f"{100 * state.best_map:.1f}"
            if budget:
                post["time"] = f"{format_duration(state.wall_s - self.before_s)}/{format_duration(budget)}"
            self.bar.set_postfix(post, refresh=True)
            return
        now = time.perf_counter()
        if not validated and now - self.last < self.every_s:
            return
        self.last = now
        # no loss before this run's first step (the first validation): say so rather than "loss nan"
        line = f"{self.head}: step {state.step:,} " + (
            f"({rate:.0f} episodes/s) loss {loss:.4f}" if math.isfinite(loss) else "(before the first training step)")
        if last:
            line += (f" | val mAP {100 * last['val_map']:.1f} at step {last['step']:,} (best "
                     f"{100 * state.best_map:.1f} at step {state.best_step:,})")
        line += (f" | {format_duration(state.wall_s - self.before_s)} of {format_duration(budget)}" if budget
                 else f" | {format_duration(state.wall_s)}")
        self.log(line)

    def close(self, message: str):
        if self.bar is not None:
            self.bar.close()
        if self.enabled:
            self.log(message)


def _episode_block(sampler, train_ids, settings, seed, index, n_positive=5, n_negative=20):
    return sampler.sample(train_ids, settings.chunk_episodes, settings.negatives,
                          query_negatives=settings.query_negatives, seed=stream_seed(seed, "train", index),
                          n_positive=n_positive, n_negative=n_negative, hard_mode=settings.hard_mode,
                          meta={"side": "train"})


def _block_rows(block_index: int, step_in_block: int, per_block: int, batch: int, seed: int, n_rows: int):
    """Rows of a drawn block (``n_rows`` episodes) for one step: pass 0 in order, every later
    pass in a fresh permutation seeded by (seed, block, pass)."""
    n_pass, k = divmod(step_in_block, per_block)
    if n_pass == 0:
        return slice(k * batch, (k + 1) * batch)
    rng = np.random.default_rng(stream_seed(seed, "order", block_index * 1_000_003 + n_pass))
    return np.sort(rng.permutation(n_rows)[k * batch: (k + 1) * batch])


def _optimizer_tensors(opt) -> tuple:
    """Adam's state as named tensors plus its JSON-able hyperparameters."""
    sd = opt.state_dict()
    tensors = {}
    for pid, st in sd["state"].items():
        for key, value in st.items():
            tensors[f"optim.{pid}.{key}"] = value if torch.is_tensor(value) else torch.tensor(value)
    return tensors, sd["param_groups"]


def _load_optimizer(opt, tensors: dict, groups: list):
    state = {}
    for name, value in tensors.items():
        if name.startswith("optim."):
            _, pid, key = name.split(".", 2)
            state.setdefault(int(pid), {})[key] = value
    opt.load_state_dict({"state": state, "param_groups": groups})


def _identity(learner, split, settings) -> dict:
    """What a checkpoint must match to be resumed."""
    return {"architecture": learner.architecture(), "seed": learner.seed, "split": split.name,
            "split_sha256": split.concepts_sha256(),
            "settings": {k: v for k, v in settings.as_dict().items()
                         if k not in ("max_steps", "budget_s", "patience", "threads", "report_every_s")},
            "space": learner.space.manifest_sha256() or "unsaved"}


def _write_checkpoint(out: Path, learner, opt, state: _State, identity: dict):
    tensors = {f"model.{k}": v for k, v in learner.model.state_dict().items()}
    opt_tensors, groups = _optimizer_tensors(opt)
    tensors.update(opt_tensors)
    tensors["rng.torch"] = torch.get_rng_state()
    digest = write_tensors_atomic(out / CHECKPOINT, tensors)
    write_json_atomic(out / CHECKPOINT_STATE, {"state": asdict(state), "identity": identity, "param_groups": groups,
                                               "sha256": digest})


def _read_checkpoint(out: Path, learner, opt, identity: dict) -> _State:
    path = out / CHECKPOINT_STATE
    if not path.exists():
        raise LearnerError(f"{out}: nothing to resume (no {CHECKPOINT_STATE})")
    try:
        saved = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise LearnerError(f"{path}: cannot read as JSON ({exc})") from None
    theirs = saved.get("identity") or {}
    # a key the checkpoint lacks (one written before the key was recorded) is not compared
    diff = [k for k in identity if k in theirs and theirs[k] != json.loads(json.dumps(identity[k]))]
    if diff or not theirs:
        diff = diff or list(identity)
        raise LearnerError(f"{out}: the checkpoint was made with other {', '.join(diff)}; cannot resume it")
    tensors = read_tensors(out / CHECKPOINT, saved.get("sha256"))
    learner.model.load_state_dict({k[len("model."):]: v for k, v in tensors.items() if k.startswith("model.")})
    _load_optimizer(opt, tensors, saved["param_groups"])
    torch.set_rng_state(tensors["rng.torch"])
    learner.weights_changed()
    return _State(**saved["state"])


def _recent_max(previous: float, seconds: float, decay: float = 0.8) -> float:
    """What the budget rule expects the next one of a kind of work to take: its latest time, or
    more after a slower one (the slowest recent time, forgotten by ``decay`` per occurrence), so
    a machine busy with other jobs does not make a run overshoot."""
    return max(float(seconds), decay * float(previous))


def _next_cost(cost: dict, draws: bool) -> float:
    """Seconds the budget rule reserves before a step: a step's expected time (and a block
    draw's, when this step draws a block), and a validation's with the model's saving, for the
    validation (and save) that closes the run (each :func:`_recent_max` of its times)."""
    return cost["step"] + (cost["draw"] if draws else 0.0) + cost["validate"] + cost["save"]


def train(learner, split, *, protocol=None, settings: TrainSettings | None = None, out=None, resume: bool = False,
          progress="auto", log=None, started: float | None = None, **options) -> dict:
    """Meta-train ``learner`` (a :class:`~bayes_concepts.learners.protonet.ProtoNetLearner`)
    on ``split`` of its space.

    Parameters
    ----------
    split : Split or str
        Episodes from ``split.train``; validation on ``split.val`` (``split.train`` when empty).
        A name is one of ``protocol``'s splits.
    protocol : Protocol, optional
        A comp-gap protocol (:data:`bayes_concepts.protocols.protocols`, e.g.
        ``protocols.get("closure-baselines")``) whose split ``split`` names (a CLOSURE family,
        a ConceptWorld condition) and whose episodes are drawn as its comp gap draws them:
        its ``query_negatives`` and ``hard_mode``, unless given in ``options``.  The history
        records the protocol's name.
    settings : TrainSettings, optional
        Overridden by keyword ``options`` (any field of :class:`TrainSettings`; ``budget``
        is accepted for ``budget_s`` and may be text like ``"30m"``).
    out : path, optional
        Model directory: the best weights and card are written whenever validation
        improves, a resumable checkpoint at every validation.
    resume : bool
        Continue the run saved in ``out`` (same architecture, seed, split and settings).
    progress : ``"auto"`` | bool
        ``auto``: a bar on a terminal, plain lines otherwise; False: silent.
    log : callable(str), optional
        Receives the plain progress lines (default: stderr).
    started : float, optional
        The :func:`time.perf_counter` value the time budget counts from (default: this call);
        the command line passes the time it started, so ``--budget`` bounds the whole command.
        A resumed run's budget is its own: the runs before it do not count against it.

    Returns
    -------
    dict
        The training history (also the card's ``training`` entry): settings, split,
        seed, steps, episodes, wall time, episodes/s, validation curve (step, val mAP,
        val CBA, mean training loss since the last validation, elapsed seconds), best
        step and mAP, why training stopped.  The learner ends with the best weights.
    """
    entered = time.perf_counter()  # the time budget counts from here (validation episodes drawn included)
    if started is not None:
        entered = min(entered, float(started))
    if "budget" in options:
        options["budget_s"] = options.pop("budget")
    split, options = _protocol_split(learner.space, split, protocol, options)
    try:
        settings = replace(settings or TrainSettings(), **options)
    except TypeError as exc:
        raise LearnerError(f"train: {exc}") from None
    space = learner.space
    if len(split.train) == 0:
        raise LearnerError(f"split {split.name!r} has no train concepts")
    if by_set(split):  # the spec's items field would otherwise be ignored: refused, not dropped
        raise LearnerError(f"split {split.name!r} draws its episodes by set (items = 'by-set'), which training "
                           "does not apply yet: train on the pair-level split of the same concepts")
    max_steps, budget = settings.limits()
    out = Path(out) if out is not None else None
    identity = _identity(learner, split, settings)
    split_hash = identity["split_sha256"]
    if out is not None and not resume and (out / CHECKPOINT_STATE).exists():
        raise LearnerError(f"{out} already holds a training run; resume it (--resume) or choose another directory")
    threads_before = torch.get_num_threads()
    torch.set_num_threads(settings.threads or available_cores())
    threads_used = torch.get_num_threads()
    sampler = EpisodeSampler(space)
    val_side = "val" if len(split.val) else "train"
    opt = torch.optim.Adam(learner.model.parameters(), lr=settings.lr)
    state = _read_checkpoint(out, learner, opt, identity) if resume else _State()
    requested_val = settings.val_episodes or VAL_EPISODES
    bank_embedded_s = None  # seconds the probe spent embedding the test bank the first validation reuses

    def draw_val(n: int):
        # episodes 0:n of the requested set: a smaller validation set is a prefix of the full one
        return sampler.sample(split.ids(val_side), requested_val, settings.negatives, part=(0, n),
                              query_negatives=settings.query_negatives, seed=stream_seed(learner.seed, "val"),
                              hard_mode=settings.hard_mode, meta={"split": split.name, "side": val_side})

    if state.val_episodes:  # resumed: the validation set of the run before
        n_val = state.val_episodes
    elif settings.val_episodes is None and budget is not None:
        # timed twice: the first scoring embeds the test bank once (a validation's fixed cost), the second not
        probe = draw_val(min(PROBE_EPISODES, requested_val))
        t_probe = time.perf_counter()
        learner.weights_changed()
        learner.evaluate(probe)
        t_again = time.perf_counter()
        learner.evaluate(probe)
        episode_s = (time.perf_counter() - t_again) / max(1, len(probe))
        fixed_s = max(0.0, (t_again - t_probe) - episode_s * len(probe))
        n_val = budget_val_episodes(requested_val, budget, episode_s, fixed_s)
        bank_embedded_s = fixed_s  # the first validation need not embed the bank again; its cost counts it
    else:
        n_val = requested_val
    state.val_episodes = n_val
    val_eps = draw_val(n_val)
    if resume and out is not None and (out / WEIGHTS).exists():
        best_card = read_card(out)
        best_weights = read_tensors(out / WEIGHTS, best_card.get("weights_sha256"))
    else:
        best_weights = None
    batch = settings.batch_episodes
    per_block = max(1, settings.chunk_episodes // batch)  # steps per pass over a block
    per_draw = per_block * settings.block_passes  # steps per drawn block
    reporter = _Reporter(learner, split.name, progress, log, max_steps, settings.report_every_s)
    block_index, block = -1, None
    loss_sum, loss_n, last_loss = 0.0, 0, float("nan")
    start = entered - state.wall_s  # state.wall_s counts every run's time; the budget this run's (entered on)
    reporter.before_s = state.wall_s
    # what the budget rule expects the next step, a block of episodes and the closing validation to cost
    cost = {"step": 0.0, "draw": 0.0, "validate": 0.0, "save": 0.0, **state.costs}
    first_step = state.step  # this run's first step
    first_step_at = None  # seconds into this run its first step started
    warmup = None  # the warm-up, once it is over (until then re-estimated at every step under a budget)
    val_every = settings.val_every or VAL_EVERY
    last_validated = state.curve[-1]["step"] if state.curve else 0

    best_eval = {}  # per-episode AP and CBA of the best validation (for "did it learn?")

    def validate():
        nonlocal best_weights, loss_sum, loss_n, last_validated, bank_embedded_s
        t_val = time.perf_counter()
        if bank_embedded_s is None:
            learner.weights_changed()
        else:  # as if this validation had embedded the bank, as the closing one will
            t_val -= bank_embedded_s
        bank_embedded_s = None
        r = learner.evaluate(val_eps)
        val_map, val_cba = float(np.nanmean(r["ap"])), float(np.nanmean(r["cba"]))
        state.wall_s = time.perf_counter() - start
        state.curve.append({"step": state.step, "val_map": val_map, "val_cba": val_cba,
                            "train_loss": loss_sum / loss_n if loss_n else None, "elapsed_s": round(state.wall_s, 3),
                            "lr": opt.param_groups[0]["lr"]})
        loss_sum, loss_n = 0.0, 0
        last_validated = state.step
        if val_map > state.best_map:
            state.best_map, state.best_step, state.bad_validations = val_map, state.step, 0
            best_eval["ap"], best_eval["cba"] = np.asarray(r["ap"], float), np.asarray(r["cba"], float)
            best_weights = {k: v.detach().clone() for k, v in learner.model.state_dict().items()}
            if out is not None:
                learner.card = {"training": history()}
                t_save = time.perf_counter()
                save_model(learner, out)
                cost["save"] = _recent_max(cost["save"], time.perf_counter() - t_save)
        else:
            state.bad_validations += 1
        # kept for a resumed run's budget rule (this validation's time so far: the checkpoint is written next)
        state.costs = {"validate": _recent_max(cost["validate"], time.perf_counter() - t_val), "save": cost["save"]}
        if out is not None:
            _write_checkpoint(out, learner, opt, state, identity)
        cost["validate"] = _recent_max(cost["validate"], time.perf_counter() - t_val)
        reporter.update(state, last_loss, rate(), budget, validated=True)

    def rate():
        return state.step * batch / state.train_s if state.train_s > 0 else 0.0

    def history() -> dict:
        return {"split": split.name, "split_sha256": split_hash, "split_sizes": split.sizes(),
                "protocol": getattr(split, "protocol", None),
                "space": space_record(space), "validation_side": val_side,
                "settings": settings.as_dict(), "seed": learner.seed, "steps": state.step,
                "episodes": state.step * batch, "wall_s": round(state.wall_s, 3), "train_s": round(state.train_s, 3),
                "sampling_s": round(state.sample_s, 3),
                "episodes_per_s": round(rate(), 2), "threads": threads_used,
                "device": str(learner.device), "precision": learner.precision, "val_curve": state.curve,
                "best_step": state.best_step, "best_val_map": state.best_map, "stopped": state.stopped,
                "budget": {"budget_s": budget, "covers": BUDGET_COVERS if budget is not None else None,
                           "this_run_s": round(state.wall_s - reporter.before_s, 3),
                           "warmup_steps": settings.warmup_steps if warmup is None else warmup,
                           "val_episodes": n_val, "val_every": val_every}}

    learner.model.train()
    try:
        if not state.curve:
            validate()
        while True:
            state.wall_s = time.perf_counter() - start
            run_s = time.perf_counter() - entered  # this run's time: what its budget bounds
            if max_steps is not None and state.step >= max_steps:
                state.stopped = "max_steps"
                break
            draws = state.step // per_draw != block_index
            if budget is not None and run_s + _next_cost(cost, draws) > budget:
                state.stopped = "budget"  # the next step and the closing validation would end past the budget
                break
            if settings.patience and state.bad_validations >= settings.patience:
                state.stopped = "early_stopping"
                break
            t0 = time.perf_counter()
            if state.step // per_draw != block_index:
                block_index = state.step // per_draw
                t_sample = time.perf_counter()
                block = _episode_block(sampler, split.train, settings, learner.seed, block_index)
                state.sample_s += time.perf_counter() - t_sample
                cost["draw"] = _recent_max(cost["draw"], time.perf_counter() - t_sample)
            t_step = time.perf_counter()
            rows = _block_rows(block_index, state.step % per_draw, per_block, batch, learner.seed,
                              len(block.concept))
            if first_step_at is None:
                first_step_at = run_s
            # under a time budget the cosine spans this run's steps: from its first step to the closing validation
            span = None if budget is None else budget - first_step_at - cost["validate"] - cost["save"]
            run_warmup = warmup
            if run_warmup is None:
                run_warmup = _run_warmup(settings, state.step - first_step if budget is not None else state.step,
                                         max_steps, budget, run_s, cost)
                if state.step - (first_step if budget is not None else 0) >= run_warmup:
                    warmup = run_warmup  # over: fixed from here on
            for group in opt.param_groups:
                group["lr"] = settings.learning_rate(
                    state.step, state.wall_s if budget is None else run_s - first_step_at, warmup_steps=run_warmup,
                    first_step=first_step if budget is not None else 0, span_s=span)
            # scene ids, not codes: the learner reads each scene's own relations and positions
            total, _, _ = learner.episode_loss(block.support_scenes[rows], block.support_labels[rows],
                                               block.query_scenes[rows], block.query_labels[rows], block.concept[rows])
            opt.zero_grad(set_to_none=True)
            total.backward()
            opt.step()
            last_loss = float(total.detach())
            if not math.isfinite(last_loss):
                raise LearnerError(f"training diverged at step {state.step} (loss {last_loss}); lower the "
                                   f"learning rate")
            loss_sum += last_loss
            loss_n += 1
            state.step += 1
            state.train_s += time.perf_counter() - t0
            cost["last_step"] = time.perf_counter() - t_step
            cost["step"] = _recent_max(cost["step"], cost["last_step"])
            state.wall_s = time.perf_counter() - start
            if settings.val_every is None and budget is not None:
                val_every = budget_val_every(VAL_EVERY, cost["validate"] + cost["save"], cost["step"])
                due = state.step - last_validated >= val_every
            else:
                due = state.step % val_every == 0
            if due:
                validate()
            else:
                reporter.update(state, last_loss, rate(), budget)
        if state.curve[-1]["step"] != state.step:
            validate()
    except KeyboardInterrupt:
        state.stopped = "interrupted"
        if out is not None:
            _write_checkpoint(out, learner, opt, state, identity)
        raise
    finally:
        torch.set_num_threads(threads_before)
        learner.model.eval()
    if best_weights is not None:
        learner.model.load_state_dict(best_weights)
    learner.weights_changed()
    hist = history()
    hist["validation"] = _learned_record(learner, space, val_eps, best_eval, state.best_step, state.step)
    learner.card = {"training": hist, "validation": hist["validation"]}
    learner.training_space = space  # the very space object (tells an unsaved space apart: binding)
    if out is not None:
        save_model(learner, out)
        _write_checkpoint_state_only(out, state, identity)
    n_episodes = state.step * batch
    reporter.close(f"{reporter.head}: stopped ({state.stopped}) after {state.step:,} step{'s' * (state.step != 1)} "
                   f"({n_episodes:,} episode{'s' * (n_episodes != 1)}, {format_duration(state.wall_s)}, "
                   f"{rate():.0f} episodes/s); "
                   f"best val mAP {100 * state.best_map:.1f} at step {state.best_step:,}")
    return hist


def _learned_record(learner, space, val_eps, best_eval: dict, best_step: int = 0, steps: int = 0) -> dict:
    """"Did it learn?" (:func:`~.learned.learned_check`): the kept weights' validation AP and
    CBA per episode (from their validation, or scored again after a resumed run) against the
    random learner's on the same validation episodes.  Weights kept from step 0 of a run that
    took steps are the untrained net's: not learned, whatever their margin over random."""
    from .learned import learned_check
    from .reference import RandomLearner
    from .scoring import score_learner
    if "ap" not in best_eval:
        r = learner.evaluate(val_eps)
        best_eval = {"ap": np.asarray(r["ap"], float), "cba": np.asarray(r["cba"], float)}
    rnd = score_learner(RandomLearner(space, seed=learner.seed), space, val_eps, "random")
    rec = learned_check(100 * best_eval["ap"], 100 * rnd["ap"], 100 * best_eval["cba"], 100 * rnd["cba"])
    rec["best_step"] = int(best_step)
    if steps > 0 and best_step == 0:
        rec["learned"] = False
        rec["untrained"] = True  # no step improved on the initial weights' validation
    return rec


def _run_warmup(settings: TrainSettings, steps_done: int, max_steps, budget, run_s: float, cost: dict) -> int:
    """This run's warm-up after ``steps_done`` of its steps: :func:`budget_warmup` of the time
    left for steps (the budget less this run's ``run_s`` seconds and the closing validation) at
    the latest step's time (not the budget rule's cautious recent maximum: the first steps are
    slow); the setting's without a budget (``max_steps`` alone leaves it as set)."""
    warmup = settings.warmup_steps
    if budget is not None:
        remaining = budget - run_s - cost["validate"] - cost["save"]
        warmup = budget_warmup(warmup, steps_done, remaining, cost.get("last_step", 0.0))
    return warmup


def _protocol_split(space, split, protocol, options: dict) -> tuple:
    """(the split to train on, the options with ``protocol``'s episode settings filled in)."""
    if protocol is None:
        if isinstance(split, str):
            raise LearnerError(f"train: split {split!r} is given by name; give the protocol whose split it is "
                               "(protocol=protocols.get(NAME)) or a Split")
        return split, options
    if isinstance(split, str):
        split = protocol.splits(space, [split])[split]
    options = {"query_negatives": protocol.query_negatives, "hard_mode": protocol.hard_mode, **options}
    return split, options


def _write_checkpoint_state_only(out: Path, state: _State, identity: dict):
    """Record the final state (why training stopped) next to the last checkpoint's tensors."""
    path = out / CHECKPOINT_STATE
    saved = json.loads(path.read_text())
    saved["state"] = asdict(state)
    if sha256_file(out / CHECKPOINT) == saved.get("sha256"):
        write_json_atomic(path, saved)
