"""Every stage of an episode against this machine's limits, measured in the same run.

    python benchmarks/roofline.py [SPACE_DIR] [--episodes N] [--splits concept_iid counting] [--full]
    python benchmarks/roofline.py hashes SPACE_DIR OUT.json [--compare BEFORE.json]

``SPACE_DIR`` defaults to ``spaces/paper`` (CURI's scale).  The default run (2 splits x 300 hard
episodes, a few minutes on 2 cores) writes ``benchmarks/results/roofline.json``; ``--full`` runs
every split's hard and easy cells at 20,000 episodes (the size table's shape; about an hour on
2 cores) and writes ``benchmarks/results/roofline_full.json``.

**The machine's limits** (one thread, measured first, in this process): a streaming read (sum of
a 256 MiB float64 array, GB/s), a vector add in L1 (float64 adds/s of ``a + b`` on 2 KiB
arrays), random gathers (``s += w[idx[i]]``, gathers/s, from a table in L1 (16 KiB), in L2
the size of the class weights (84 KB, 16-bit ids) and of the test scenes' scores (487 KB), and
beyond L2 (64 MiB); the bound takes the best in-cache rate: under load a 16 KiB table has
measured below an 84 KB one here), and one ``pread(2)`` of a 2.5 KB row of the space's
per-scene concept index (calls/s; the page cache is warm).

**The stages** (one thread; the kernels the oracles run, called stage after stage on the same
episodes): each stage's time is read from the CPU's time-stamp counter between stages
(``llvm.readcyclecounter``, its rate measured against ``time.perf_counter`` in the same run),
summed over the episodes; per stage the best of ``--repeat`` runs.  Per stage the work is
counted in the same run: bytes streamed (a word read from a row: 8 B; a class or scene id of the
test bank's lists: 2 or 4 B), operations (64-bit word operations or float adds) and gathers
(random reads or scattered adds into a table in cache: a class weight, a scene's score).  A
stage's *bound* is the larger of bytes / streaming read, operations / vector-add rate and
gathers / gather rate (in cache for tables up to 4 MiB, else beyond L2's); its *fraction* is
bound / measured time: 1 at the machine's limit.

1. ``sampling``: :meth:`~bayes_concepts.episodes.EpisodeSampler.sample` (hard negatives: the
   union of the alternatives' rows), with the bytes and the read calls it made
   (``/proc/self/io`` ``rchar``/``syscr``: its rows are read with pread) and its system CPU time;
   its bound also counts each read call at the measured pread rate;
2. ``posterior``: :func:`~bayes_concepts.oracles.kernels.episode_candidates` and
   :func:`~bayes_concepts.oracles.kernels.normalise` (the support's rows read by the oracle
   first, as :meth:`~bayes_concepts.oracles.Oracle.evaluate` does a slice at a time);
3. ``class_weights``: :func:`~bayes_concepts.oracles.kernels.add_class_weights`;
4. ``query``: the query scenes' predictive, as the kernel computes it;
5. ``test_bank_scoring``: size (few classes): :func:`~bayes_concepts.oracles.kernels.narrow_scores`
   (a floor under the positives' scores from their cover, the heavy classes' rows ORed, then each
   touched word of scenes scored from every class's word of it; counted by :func:`_narrow_work`);
   noisy (every class): every test scene's :func:`~bayes_concepts.oracles.kernels.scene_score`
   (a gather per pair);
6. ``ap``: :func:`~bayes_concepts.metrics.average_precision_sparse` of the touched scenes (size)
   or :func:`~bayes_concepts.oracles.kernels.average_precision_every_score` (noisy).

Beside them: the whole episode as :meth:`~bayes_concepts.oracles.Oracle.evaluate` runs it
(both threads, the strong and the weak oracle), and the table's time this implies
(9 splits x hard/easy x 20,000 episodes); the flat noisy episode's scoring by the deferred
kernel (16 episodes per pass; the pass for 8 beside it) against torch and scipy CSR x dense
products; AP by sorting the scores against AP by level.

``hashes`` writes sha256 prefixes of every result (ap, cba, query_pred, ap_bound, n_candidates)
of the strong and weak oracles, size and noisy (AP tolerance 0 and the default), on 400 hard and
400 easy episodes of two splits; ``--compare`` checks them against an earlier run (exit 1 on a
difference, listing it): how a speed change shows that its results are bit-identical.
``benchmarks/results/roofline_hashes_before.json`` holds them as they were before issue 41's
changes (commit d05af1d).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import sys
import time
from pathlib import Path

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _summary import RESULTS, write_summary  # noqa: E402  (benchmarks/ is not a package)

import bayes_concepts as bc  # noqa: E402
from bayes_concepts.bits import count_bits  # noqa: E402
from bayes_concepts.engine.rows import RowFile  # noqa: E402
from bayes_concepts.metrics import average_precision_sparse  # noqa: E402
from bayes_concepts.oracles import kernels as K  # noqa: E402

STAGES = ("posterior", "class_weights", "query", "test_bank_scoring", "ap")
ALL_SPLITS = ("binding_color", "binding_shape", "boolean", "complexity", "concept_iid", "counting", "extrinsic",
              "instance_iid", "intrinsic")


# ------------------------------------------------------------------------- the machine's limits
@intrinsic
def _cycles(typingctx):
    """The CPU's time-stamp counter (``llvm.readcyclecounter``: rdtsc on x86), a uint64."""
    def codegen(context, builder, signature, args):
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.IntType(64), []),
                                            "llvm.readcyclecounter")
        return builder.call(fn, [])
    return types.uint64(), codegen


@numba.njit(cache=False)
def _cycles_now():
    return _cycles()


def ticks_per_second() -> float:
    """The time-stamp counter's rate, against ``time.perf_counter`` over 0.2 s."""
    _cycles_now()
    t0, c0 = time.perf_counter(), _cycles_now()
    time.sleep(0.2)
    t1, c1 = time.perf_counter(), _cycles_now()
    return (c1 - c0) / (t1 - t0)



@numba.njit(cache=False)
def _stream_sum(a):
    s0 = 0.0
    s1 = 0.0
    s2 = 0.0
    s3 = 0.0
    for i in range(0, a.shape[0] - 3, 4):
        s0 += a[i]
        s1 += a[i + 1]
        s2 += a[i + 2]
        s3 += a[i + 3]
    return (s0 + s1) + (s2 + s3)


@numba.njit(cache=False)
def _vector_add(a, b, c, reps):
    for _ in range(reps):
        for i in range(a.shape[0]):
            c[i] = a[i] + b[i]
        a[0] = c[a.shape[0] - 1]
    return c[0]


@numba.njit(cache=False)
def _gather(w, idx):
    s0 = 0.0
    s1 = 0.0
    s2 = 0.0
    s3 = 0.0
    for i in range(0, idx.shape[0] - 3, 4):  # four chains of adds, as scene_score keeps
        s0 += w[idx[i]]
        s1 += w[idx[i + 1]]
        s2 += w[idx[i + 2]]
        s3 += w[idx[i + 3]]
    return (s0 + s1) + (s2 + s3)


def _best(fn, repeat=5):
    best = np.inf
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def machine_limits(row_file: RowFile | None) -> dict:
    """The limits of one thread of this machine (see the module docstring)."""
    rng = np.random.default_rng(0)
    big = rng.random(32 << 20)  # 256 MiB
    _stream_sum(big[:1024])
    stream = big.nbytes / _best(lambda: _stream_sum(big))
    a, b, c = rng.random(256), rng.random(256), np.empty(256)
    reps = 200_000
    _vector_add(a, b, c, 1)
    adds = a.shape[0] * reps / _best(lambda: _vector_add(a, b, c, reps))
    out = {"stream_read_gb_s": stream / 1e9, "vector_add_gadd_s": adds / 1e9}
    idx_n = 8 << 20
    # L1: 16 KiB; L2: the class weights' size (10,484 float64, 84 KB; 16-bit ids, as the test
    # bank's); scenes: the test scenes' scores (60,879 float64, 487 KB); beyond L2: 64 MiB
    for tag, n, dtype in (("l1", 2 << 10, np.uint16), ("l2", 10_484, np.uint16), ("scenes", 60_879, np.uint32),
                          ("beyond_l2", 8 << 20, np.uint32)):
        w = rng.random(n)
        idx = rng.integers(0, n, idx_n).astype(dtype)  # unsigned: no wraparound test per index
        _gather(w, idx[:16])
        out[f"gather_{tag}_ggather_s"] = idx_n / _best(lambda: _gather(w, idx)) / 1e9
    if row_file is not None:
        ids = rng.integers(0, row_file.shape[0], 20_000)
        buf = np.empty(row_file.shape[1], row_file.dtype)
        row_bytes = buf.nbytes

        def preads():
            for i in ids:
                os.preadv(row_file.fd, [buf], row_file.offset + int(i) * row_bytes)
        # the cost of one call from Python includes the interpreter's: numba's pread is measured
        # by what RowFile's gather costs per row
        t = _best(lambda: row_file[ids], 3)
        out["pread_row_calls_s"] = len(ids) / t
        out["pread_row_bytes"] = row_bytes
    return out


# ---------------------------------------------------------------------------- the staged kernel
@numba.njit(cache=True)
def _staged(upto, support, labels, query, truths, rows, omega, log_prior, first, second, consistent_only, classes,
            cls_ptr, cls_idx, lane_ptr, lane_cls, n_test, test_sig, class_rep, out_ap, work, ticks):
    """Stages 1..upto of every episode, one thread; returns a checksum (keeps the work alive).
    ``ticks`` (5,): the time-stamp counter's ticks spent in each stage are added to it (a read
    of the counter between stages, ~25 cycles).
    ``work`` (5, 3): the test-bank scoring's and the AP's bytes, operations and gathers are
    added to rows 3 and 4 (see :func:`_work` for the others)."""
    n_concepts = log_prior.shape[0]
    n_classes = cls_ptr.shape[0] - 1
    ids = np.empty(n_concepts, np.int64)
    logw = np.empty(n_concepts)
    probs = np.empty(n_concepts)
    class_w = np.zeros(n_classes)
    class_list = np.empty(n_classes, np.int64)
    scores = np.zeros(n_test)
    touched = np.empty(n_test, np.int64)
    dense_p = np.zeros(n_concepts)
    cand = np.zeros(omega.shape[0], np.uint64)
    kq = query.shape[1]
    qpred = np.empty(kq)
    cls_weight = np.empty(n_classes)
    check = 0.0
    for e in range(support.shape[0]):
        c0 = _cycles()
        n = K.episode_candidates(support[e], labels[e], rows, omega, log_prior, first, second, consistent_only,
                                 ids, logw, np.zeros((0, 1), np.uint64))
        if n == 0:
            out_ap[e] = np.nan
            ticks[0] += _cycles() - c0
            continue
        K.normalise(logw, n, probs)
        check += probs[0]
        c1 = _cycles()
        ticks[0] += c1 - c0
        if upto == 1:
            continue
        n_cls = K.add_class_weights(ids, probs, n, classes, class_w, class_list)
        c2 = _cycles()
        ticks[1] += c2 - c1
        if upto >= 3:
            if consistent_only:
                for j in range(kq):
                    qpred[j] = K.query_score(rows[query[e, j]], ids, probs, n)
            else:
                K.wide_query_scores(rows, query[e], ids, probs, n, dense_p, cand, qpred)
            check += qpred[0]
        c3 = _cycles()
        ticks[2] += c3 - c2
        m = 0
        n_pos = count_bits(truths[e])
        if upto >= 4:
            if consistent_only:  # as test_bank_ap: the scenes heavy classes cover, a word at a time
                for q in range(n_cls):
                    cls_weight[q] = class_w[class_list[q]]
                m = max(K.narrow_scores(class_list[:n_cls], cls_weight[:n_cls], class_rep, test_sig, truths[e],
                                        K.every_scene(), scores, touched), 0)
            else:
                for t in range(n_test):
                    scores[t] = K.scene_score(lane_ptr, lane_cls, t, class_w)
                pairs = lane_ptr[lane_ptr.shape[0] - 1]
                work[3, 0] += 2 * pairs + 8 * n_test  # class ids streamed (2 B), lane pointers (8 B a scene)
                work[3, 1] += pairs
                work[3, 2] += pairs
                work[4, 0] += 24 * n_test
                work[4, 1] += 5 * n_test
            check += scores[0]
        c4 = _cycles()
        ticks[3] += c4 - c3
        if upto >= 5:
            if consistent_only:
                out_ap[e] = average_precision_sparse(touched[:m], scores, truths[e], n_test, n_pos)
            else:
                out_ap[e] = K.average_precision_every_score(scores, truths[e])
        ticks[4] += _cycles() - c4
        if upto >= 4 and consistent_only:  # counted after the clock stopped
            nbytes, ops = _narrow_work(class_list[:n_cls], cls_weight[:n_cls], class_rep, test_sig, truths[e],
                                       touched[:m])
            work[3, 0] += nbytes
            work[3, 1] += ops
            work[4, 0] += 24 * m
            work[4, 1] += 5 * m
        for q in range(n_cls):
            class_w[class_list[q]] = 0.0
        if consistent_only:
            for i in range(m):
                scores[touched[i]] = 0.0
        else:
            scores[:] = 0.0
    return check


@numba.njit(cache=False)
def _narrow_work(cls_list, cls_weight, class_rep, test_sig, truth, touched):
    """(bytes, operations) of :func:`~bayes_concepts.oracles.kernels.narrow_scores` on one
    episode: the positives' floor reads the class rows it says it read (8 B and ~2 ops a word);
    the heavy classes' rows are ORed (8 B, 1 op a word); each touched word reads every class's
    word (8 B, 1 op) and adds a weight for each of its scenes where that word is non-zero (1 op
    each)."""
    n_cls = cls_list.shape[0]
    tw = truth.shape[0]
    floor, rows_read = K._positive_score_floor(cls_weight, cls_list, class_rep, test_sig, truth)
    light = np.zeros(n_cls, np.bool_)
    K.mark_light_classes(cls_weight, floor, light)
    heavy = n_cls - light.sum()
    nbytes = 8 * tw * (rows_read + heavy)
    ops = 2 * tw * rows_read + tw * heavy
    last = -1
    for i in range(touched.shape[0]):
        w = touched[i] >> 6
        if w == last:
            continue
        last = w
        k = 0
        for j in range(i, touched.shape[0]):
            if touched[j] >> 6 != w:
                break
            k += 1
        for q in range(n_cls):
            r = test_sig[class_rep[cls_list[q]], w]
            nbytes += 8
            ops += 1 + (k if r else 0)
    return nbytes, ops


@numba.njit(cache=False)
def _work(support, labels, query, rows, omega, log_prior, first, second, consistent_only, classes, cls_ptr,
          lane_ptr, n_test, out):
    """The work of each stage, counted: out[stage] += (bytes, operations, gathers) per episode.

    Stage 0 posterior: words of the support's rows read (8 B, one op each; the noisy path adds
    its bit-sliced counter updates, ~2 ops a word a scene, and the unpacking, 2·64·digits ops a
    word), and per concept scored 24 B (log prior, log weight, id) and ~40 ops (two exps);
    1 class weights: per candidate 32 B, 2 ops, 1 gather (its class); 2 query: per query scene
    and candidate 8 B and 1 op (size), or per query scene and word 16 B and 2 ops (noisy);
    3 scoring and 4 AP are counted by :func:`_staged` as it runs them.
    """
    n_concepts = log_prior.shape[0]
    ids = np.empty(n_concepts, np.int64)
    logw = np.empty(n_concepts)
    probs = np.empty(n_concepts)
    hw = omega.shape[0]
    n_classes = cls_ptr.shape[0] - 1
    class_w = np.zeros(n_classes)
    class_list = np.empty(n_classes, np.int64)
    for e in range(support.shape[0]):
        k = support.shape[1]
        words = 0
        nz = 0
        if consistent_only:
            for w in range(hw):
                word = omega[w]
                for i in range(k):
                    words += 1
                    row = rows[support[e, i]]
                    if labels[e, i]:
                        word &= row[w]
                    else:
                        word &= ~row[w]
                    if word == 0:
                        break
        else:
            for w in range(hw):
                if omega[w]:
                    nz += 1
            words = nz * k
        n = K.episode_candidates(support[e], labels[e], rows, omega, log_prior, first, second, consistent_only,
                                 ids, logw, np.zeros((0, 1), np.uint64))
        scored = n
        if not consistent_only:
            scored = 0
            for w in range(hw):
                x = omega[w]
                while x:
                    x &= x - np.uint64(1)
                    scored += 1
        nb = 1
        while (1 << nb) <= k:
            nb += 1
        ops = words + (0 if consistent_only else 2 * words + nz * 2 * 64 * nb)
        out[0, 0] += words * 8 + scored * 24
        out[0, 1] += ops + 40 * scored
        if n == 0:
            continue
        K.normalise(logw, n, probs)
        n_cls = K.add_class_weights(ids, probs, n, classes, class_w, class_list)
        out[1, 0] += 32 * n
        out[1, 1] += 2 * n
        out[1, 2] += n
        kq = query.shape[1]
        if consistent_only:
            out[2, 0] += 8 * kq * n
            out[2, 1] += kq * n
        else:
            out[2, 0] += 16 * kq * hw
            out[2, 1] += 2 * kq * hw
        for q in range(n_cls):
            class_w[class_list[q]] = 0.0


# ------------------------------------------------------------------------------------ measuring
def _oracle_inputs(oracle, episodes):
    """What Oracle.evaluate gives its kernel, for the staged kernel (rows read into memory)."""
    space = oracle.space
    n_drawn = int(episodes.meta.get("n_positive", 5))
    k = episodes.support_scenes.shape[1]
    hard = episodes.meta.get("negatives", "hard") == "hard"
    first, second, consistent_only = oracle._tables(oracle.settings.likelihood, n_drawn, k, bool(hard))
    scenes = np.unique(np.concatenate([episodes.support_scenes.ravel(), episodes.query_scenes.ravel()]))
    sc = space.scene_concepts()
    t = time.perf_counter()
    rows = np.ascontiguousarray(sc[scenes])
    read_s = time.perf_counter() - t
    sup = np.searchsorted(scenes, episodes.support_scenes)
    qry = np.searchsorted(scenes, episodes.query_scenes)
    truths = np.ascontiguousarray(space.test_bank.signatures[np.asarray(episodes.concept, np.int64)])
    cls_ptr, cls_idx = space.test_bank_index()
    lane_ptr, lane_cls = space.test_bank_scene_classes()
    args = (sup, np.ascontiguousarray(episodes.support_labels), qry, truths, rows, oracle.omega, oracle.log_prior,
            first, second, consistent_only, np.asarray(space.synonym_classes, np.int64), cls_ptr, cls_idx, lane_ptr,
            lane_cls, space.test_bank.n_scenes, np.ascontiguousarray(space.test_bank.signatures),
            space.class_representatives())
    return args, read_s, rows.nbytes


def _bound(work, limits, table_bytes):
    """The stage's least time at this machine's limits (seconds): see the module docstring."""
    # a table up to L2's size: the best in-cache rate measured (under load a 16 KiB table has
    # measured below an 84 KB one on this machine)
    in_cache = max(limits["gather_l1_ggather_s"], limits["gather_l2_ggather_s"], limits["gather_scenes_ggather_s"])
    gather = in_cache if table_bytes <= 4 << 20 else limits["gather_beyond_l2_ggather_s"]
    return max(work[0] / (limits["stream_read_gb_s"] * 1e9), work[1] / (limits["vector_add_gadd_s"] * 1e9),
               work[2] / (gather * 1e9))


def stage_table(oracle, episodes, limits, repeat, tick_rate):
    """Per stage: seconds, bytes, operations, gathers, per episode, and the fraction of the bound."""
    args, read_s, read_bytes = _oracle_inputs(oracle, episodes)
    out_ap = np.empty(len(episodes))
    numba.set_num_threads(1)
    try:
        scratch = np.zeros((len(STAGES), 3))
        every = len(STAGES)
        _staged(every, *args, out_ap, scratch, np.zeros(every, np.uint64))  # compiled and warm
        runs = []
        for _ in range(repeat):
            ticks = np.zeros(every, np.uint64)
            _staged(every, *args, out_ap, scratch, ticks)
            runs.append(ticks / tick_rate)
        stage_s = np.min(runs, axis=0)  # each stage's best of the runs
    finally:
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    (sup, lab, qry, truths, rows, omega, log_prior, first, second, consistent_only, classes, cls_ptr, cls_idx, lane_ptr,
     lane_cls, n_test, _, _) = args
    work = np.zeros((len(STAGES), 3))
    _work(sup, lab, qry, rows, omega, log_prior, first, second, consistent_only, classes, cls_ptr, lane_ptr, n_test,
          work)
    _staged(len(STAGES), *args, out_ap, work, np.zeros(len(STAGES), np.uint64))
    n = len(episodes)
    n_classes = len(cls_ptr) - 1
    tables = [rows.nbytes, 8 * n_classes, rows.nbytes, (8 if consistent_only else 8) * (n_test if consistent_only
                                                                                       else n_classes), 8 * n_test]
    table = {}
    for i, name in enumerate(STAGES):
        dt = max(stage_s[i], 1e-9)
        b = _bound(work[i], limits, tables[i])
        table[name] = {"ms_per_episode": 1000 * dt / n, "bytes_per_episode": work[i, 0] / n,
                       "ops_per_episode": work[i, 1] / n, "gathers_per_episode": work[i, 2] / n,
                       "fraction_of_limit": b / dt}
    table["rows_read_by_oracle"] = {"ms_per_episode": 1000 * read_s / n, "bytes_per_episode": read_bytes / n}
    table["stages_total_ms_per_episode"] = 1000 * float(stage_s.sum()) / n
    return table


def _rss() -> dict:
    """This process's resident set now (MiB): anonymous and file-backed (mapped files)."""
    with open("/proc/self/status") as f:
        return {line.split(":")[0]: int(line.split()[1]) / 1024 for line in f
                if line.startswith(("RssAnon", "RssFile"))}


def _proc_io():
    with open("/proc/self/io") as f:
        d = dict(line.split(": ") for line in f.read().splitlines())
    return int(d["rchar"]), int(d["syscr"])


def _sample_timed(sampler, split, n, negatives):
    r0, c0 = _proc_io()
    u0 = resource.getrusage(resource.RUSAGE_SELF)
    t = time.perf_counter()
    eps = sampler.sample(split.test, n, negatives, seed=0)
    dt = time.perf_counter() - t
    u1 = resource.getrusage(resource.RUSAGE_SELF)
    r1, c1 = _proc_io()
    return eps, {"ms_per_episode": 1000 * dt / n, "bytes_read_per_episode": (r1 - r0) / n,
                 "read_calls_per_episode": (c1 - c0) / n,
                 "user_cpu_ms_per_episode": 1000 * (u1.ru_utime - u0.ru_utime) / n,
                 "system_cpu_ms_per_episode": 1000 * (u1.ru_stime - u0.ru_stime) / n,
                 "minor_faults_per_episode": (u1.ru_minflt - u0.ru_minflt) / n}


def sampling_stage(space, split, n, negatives, limits):
    """The sampler (both threads) reading its rows through their mappings (what runs) and with
    one pread per row (the slow twin; its ``/proc/self/io`` counts are the bytes of rows the
    sampler reads either way).  The mapped run's fraction: those bytes at the streaming rate
    against its time."""
    from bayes_concepts.engine import rows as rows_module
    sampler = bc.EpisodeSampler(space)
    before = rows_module.READ_ROWS
    try:
        rows_module.READ_ROWS = "pread"
        sampler.sample(split.test, 8, negatives, seed=99)  # compiled
        _, pread = _sample_timed(sampler, split, n, negatives)
        rows_module.READ_ROWS = "map"
        _, first_touch = _sample_timed(sampler, split, n, negatives)
        eps, mapped = _sample_timed(sampler, split, n, negatives)
    finally:
        rows_module.READ_ROWS = before
    mapped["bytes_per_episode"] = pread["bytes_read_per_episode"]
    mapped["fraction_of_limit"] = (pread["bytes_read_per_episode"] / (limits["stream_read_gb_s"] * 1e9)
                                   / (mapped["ms_per_episode"] / 1000))
    mapped["pread_twin"] = pread
    mapped["first_touch"] = first_touch
    mapped["note"] = ("2 threads, rows read through the files' mappings, the pages mapped by a first run of the "
                      "same draw (first_touch: that run, page faults included); bytes: the rows read (counted on "
                      "the pread twin)")
    return eps, mapped


def whole_episode(oracles, episodes, repeat):
    """ms per episode of Oracle.evaluate (both threads), strong + weak, best of ``repeat``."""
    for o in oracles:
        o.evaluate(episodes)
    return 1000 * _best(lambda: [o.evaluate(episodes) for o in oracles], repeat) / len(episodes)


# --------------------------------------------------------- flat noisy scoring and AP alternatives
def flat_scoring(space, repeat, batches=(16, 64)):
    """ms per episode of scoring every test scene of a flat posterior (every class weighted):
    the deferred kernel (16 episodes per pass, both threads, AP included), its row pass for 8
    and for 16 episodes (one thread), and torch / scipy CSR x dense (float32, float64)."""
    import scipy.sparse as sps
    import torch
    lane_ptr, lane_cls = space.test_bank_scene_classes()
    n_test = space.test_bank.n_scenes
    cls_ptr = space.test_bank_index()[0]
    n_classes = len(cls_ptr) - 1
    rng = np.random.default_rng(1)
    n_ep = max(batches)
    w = rng.random((n_ep, n_classes))
    w /= w.sum(1, keepdims=True)
    concept = np.zeros(n_ep, np.int64)
    sig = np.ascontiguousarray(space.test_bank.signatures[:1])
    out = {}
    ap = np.empty(n_ep)

    def deferred():
        K.score_deferred(w, np.arange(n_ep), lane_ptr, lane_cls, n_test, sig, concept, ap)
    deferred()
    out["deferred_kernel_incl_ap"] = 1000 * _best(deferred, repeat) / n_ep
    # the two row passes alone, one thread, side by side (compiled as score_deferred is: SLP on)
    from numba.core import config
    old_slp, config.SLP_VECTORIZE = config.SLP_VECTORIZE, 1
    try:
        @numba.njit(cache=False)
        def rows8(weights, o):
            K.score_rows8(lane_ptr, lane_cls, n_test, weights, o)

        @numba.njit(cache=False)
        def rows16(weights, o):
            K.score_rows16(lane_ptr, lane_cls, n_test, weights, o)
        w8, w16 = np.ascontiguousarray(w[:8].T).ravel(), np.ascontiguousarray(w[:16].T).ravel()
        o8, o16 = np.empty((8, n_test)), np.empty((16, n_test))
        rows8(w8, o8)
        rows16(w16, o16)
    finally:
        config.SLP_VECTORIZE = old_slp
    numba.set_num_threads(1)
    try:
        t8 = t16 = np.inf
        for _ in range(repeat):
            t = time.perf_counter()
            rows8(w8, o8)
            t8 = min(t8, time.perf_counter() - t)
            t = time.perf_counter()
            rows16(w16, o16)
            t16 = min(t16, time.perf_counter() - t)
    finally:
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    out["rows8_one_thread"] = 1000 * t8 / 8
    out["rows16_one_thread"] = 1000 * t16 / 16
    # the test bank as a CSR matrix scenes x classes (each scene's classes, from its four lanes)
    indptr = lane_ptr[::4].astype(np.int64)
    indices = lane_cls.astype(np.int64)
    for dtype, tag in ((np.float32, "f32"), (np.float64, "f64")):
        m = sps.csr_matrix((np.ones(len(indices), dtype), indices, indptr), shape=(n_test, n_classes))
        tm = torch.sparse_csr_tensor(torch.from_numpy(indptr), torch.from_numpy(indices),
                                     torch.ones(len(indices), dtype=torch.float32 if tag == "f32" else torch.float64),
                                     size=(n_test, n_classes))
        for b in batches:
            wb = np.ascontiguousarray(w[:b].T.astype(dtype))
            tw = torch.from_numpy(wb)
            out[f"scipy_csr_{tag}_B{b}"] = 1000 * _best(lambda: m @ wb, repeat) / b
            torch.set_num_threads(2)
            out[f"torch_csr_{tag}_B{b}"] = 1000 * _best(lambda: torch.sparse.mm(tm, tw), repeat) / b
    return out


def ap_alternatives(space, repeat):
    """ms per dense AP over the test bank: sorting the scores (np.argsort) against by level."""
    from bayes_concepts import metrics
    n_test = space.test_bank.n_scenes
    rng = np.random.default_rng(2)
    scores = rng.random(n_test) ** 6  # a skewed spread of scores like a posterior's
    truth_row = space.test_bank.signatures[int(np.argmax(space.test_bank.signatures.sum(1) > 0))]
    labels = np.unpackbits(truth_row.view(np.uint8), bitorder="little")[:n_test].astype(bool)
    out = {"argsort_f64": 1000 * _best(lambda: np.argsort(-scores, kind="stable"), repeat),
           "argsort_f32": 1000 * _best(lambda: np.argsort(-scores.astype(np.float32)), repeat)}
    K.average_precision_every_score(scores, np.ascontiguousarray(truth_row))
    out["every_score_levels"] = 1000 * _best(lambda: K.average_precision_every_score(
        scores, np.ascontiguousarray(truth_row)), repeat)
    metrics.average_precision_dense(scores, labels)
    out["metrics_average_precision_dense"] = 1000 * _best(lambda: metrics.average_precision_dense(scores, labels),
                                                          repeat)
    return out


# -------------------------------------------------------------------------------------- the run
def run(space_dir, splits, episodes, negatives, repeat, json_out):
    space = bc.HypothesisSpace.load(space_dir, verify=False)
    sc = space.scene_concepts()
    limits = machine_limits(sc if isinstance(sc, RowFile) else None)
    tick_rate = ticks_per_second()
    limits["tsc_ticks_per_s"] = tick_rate
    print("limits (one thread):", json.dumps({k: round(v, 3) for k, v in limits.items()}), flush=True)
    every = bc.load_splits(space, list(splits))
    cells = {}
    totals = {"sampling": 0.0, "size": 0.0, "noisy": 0.0}
    for name, split in every.items():
        for neg in negatives:
            t0 = time.perf_counter()
            eps, sampling = sampling_stage(space, split, episodes, neg, limits)
            cell = {"sampling": sampling}
            for lik, st in (("size", bc.OracleSettings(likelihood="size")),
                            ("noisy", bc.OracleSettings(likelihood="noisy", ap_tolerance=0))):
                strong, weak = bc.strong_and_weak(space, split, st)
                cell[lik] = {"note": "size: the kernels' own path; noisy: every test scene scored (a flat "
                                     "posterior's path, whose scoring the deferred kernel batches); evaluate: "
                                     "what runs (noisy prunes, exact AP)" if lik == "noisy" else
                                     "the kernels' own path, stage by stage",
                             "weak_stages": stage_table(weak, eps, limits, repeat, tick_rate),
                             "strong_stages": stage_table(strong, eps, limits, repeat, tick_rate),
                             "evaluate_ms_per_episode_strong_plus_weak": whole_episode((strong, weak), eps, repeat)}
                totals[lik] += cell[lik]["evaluate_ms_per_episode_strong_plus_weak"]
            totals["sampling"] += sampling["ms_per_episode"]
            cells[f"{name} {neg}"] = cell
            print(f"{name} {neg}: sampling {sampling['ms_per_episode']:.3f} ms/ep, size {cell['size']['evaluate_ms_per_episode_strong_plus_weak']:.3f}, "
                  f"noisy {cell['noisy']['evaluate_ms_per_episode_strong_plus_weak']:.3f} ms/ep "
                  f"({time.perf_counter() - t0:.0f} s)", flush=True)
    n_cells = len(cells)
    table_episodes = 9 * 2 * 20_000
    per_ep = {k: v / n_cells for k, v in totals.items()}
    table = {"episodes": table_episodes,
             "size_table_s_estimate": table_episodes * (per_ep["sampling"] + per_ep["size"]) / 1000,
             "noisy_table_s_estimate": table_episodes * (per_ep["sampling"] + per_ep["noisy"]) / 1000,
             "note": "the mean over the cells measured of sampling + strong + weak per episode, times 9 splits x "
                     "hard/easy x 20,000 episodes; the measured full table is `python benchmarks/scale.py gap "
                     "spaces/paper`"}
    flat = flat_scoring(space, repeat)
    aps = ap_alternatives(space, repeat)
    print("flat noisy scoring, ms per episode:", json.dumps({k: round(v, 2) for k, v in flat.items()}))
    print("dense AP over the test bank, ms:", json.dumps({k: round(v, 2) for k, v in aps.items()}))
    print("table:", json.dumps(table))
    figures = {"limits_one_thread": limits, "cells": cells, "table": table, "flat_noisy_scoring_ms_per_episode": flat,
               "dense_ap_ms": aps, "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
               "rss_at_end_mb": _rss()}
    path = write_summary(json_out, "roofline", figures, space=str(space_dir), episodes_per_cell=episodes,
                         method="stages one thread, timed by the time-stamp counter between stages, best of "
                                f"{repeat}; evaluate and sampling: both threads")
    print(f"written to {path}")


# ------------------------------------------------------------------------------------ hashes
def _digest(a) -> str:
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()[:16]


def hashes(space_dir, out, n=400, splits=("concept_iid", "binding_color")):
    """sha256 prefixes of every oracle result on a fixed run (see the module docstring)."""
    space = bc.HypothesisSpace.load(space_dir, verify=False)
    settings = {"size": bc.OracleSettings(likelihood="size"),
                "noisy0": bc.OracleSettings(likelihood="noisy", weak_empty="noisy", ap_tolerance=0),
                "noisyT": bc.OracleSettings(likelihood="noisy")}
    res = {}
    for name, split in bc.load_splits(space, list(splits)).items():
        for neg in ("hard", "easy"):
            eps = bc.EpisodeSampler(space).sample(split.test, n, neg, seed=3)
            res[f"{name} {neg} episodes"] = _digest(np.concatenate([eps.support_scenes.ravel(),
                                                                    eps.query_scenes.ravel()]))
            for tag, st in settings.items():
                for o in bc.strong_and_weak(space, split, st):
                    r = o.evaluate(eps)
                    for k in ("ap", "cba", "query_pred", "ap_bound", "n_candidates"):
                        res[f"{name} {neg} {tag} {o.name} {k}"] = _digest(r[k])
    write_summary(out, "roofline_hashes", res, space=str(space_dir), episodes_per_cell=n, splits=list(splits),
                  method="sha256 prefixes of each oracle result array (its bytes)")
    return res


def _module_at(commit, path, name):
    """``path`` (a module of the package) as it was at ``commit``, imported as ``name`` beside it
    (relative imports resolve against today's package)."""
    import importlib.util
    import subprocess
    import tempfile
    text = subprocess.run(["git", "show", f"{commit}:{path}"], capture_output=True, text=True, check=True,
                          cwd=Path(__file__).resolve().parent).stdout
    where = Path(tempfile.mkdtemp(prefix="roofline_")) / Path(path).name
    where.write_text(text)
    spec = importlib.util.spec_from_file_location(name, where)
    module = importlib.util.module_from_spec(spec)
    module.__package__ = name.rpartition(".")[0]
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def records(space_dir, before, episodes, rounds):
    """The kernels taking typed records against the same kernels taking positional arguments
    (``before``: a commit before the records), side by side: ms per episode of
    ``evaluate_episodes`` (size and noisy, the weak oracle) and of the sampling kernel, rounds
    interleaved, the first rotating; and whether they give the same arrays."""
    from bayes_concepts import episodes as E
    from bayes_concepts.engine.rows import row_source
    from bayes_concepts.oracles import oracle as O
    old_k = _module_at(before, "bayes_concepts/oracles/kernels.py", "bayes_concepts.oracles._kernels_before")
    old_e = _module_at(before, "bayes_concepts/episodes.py", "bayes_concepts._episodes_before")
    space = bc.HypothesisSpace.load(space_dir, verify=False)
    split = bc.load_splits(space, ["concept_iid"])["concept_iid"]
    sampler = bc.EpisodeSampler(space)
    eps = sampler.sample(split.test, episodes, "hard", seed=0)
    n = len(eps)
    runs = {}
    # the sampler: the same draw through both signatures
    concepts = np.asarray(eps.concept, np.int32)
    seeds = E.block_seeds(0, n)
    k, kq = eps.support_scenes.shape[1], eps.query_scenes.shape[1]

    def sets():
        return [E.EpisodeSets(np.full((n, m), -1, np.int64), np.zeros((n, m), np.int8), np.full((n, m), -1, np.int32),
                              np.zeros((n, m), bool), np.zeros((n, m), bool)) for m in (k, kq)]
    tables = E.SamplerTables(row_source(sampler.signatures), sampler.cum, row_source(sampler.scene_concepts),
                             space.counts, space.synonym_classes, int(space.n_scenes))
    rules = E.DrawRules(5, 5, True, True, True, float(E.UNION_SCAN), float(E.UNION_EXPLICIT))
    out_new, out_old = sets(), sets()

    def sample_new():
        E._sample_episodes(concepts, seeds, tables, rules, *out_new)

    def sample_old():
        old_e._sample_episodes(concepts, seeds, *tables, *rules, *out_old[0], *out_old[1])
    jobs = {"sample": (sample_old, sample_new)}
    # evaluate_episodes, the weak oracle, size and noisy (exact AP, nothing deferred)
    for lik in ("size", "noisy"):
        weak = bc.strong_and_weak(space, split, bc.OracleSettings(likelihood=lik, ap_tolerance=0))[1]
        like = K.LikelihoodTables(*weak._tables(lik, 5, k, True))
        bank = O.test_bank_tables(space, True)
        sc = space.scene_concepts()
        rows = sc.mapped() if isinstance(sc, RowFile) else sc
        tables_o = K.OracleTables(rows, weak.omega, weak.log_prior, like, False, like, np.zeros(1), np.zeros(1), 0.0)
        batch = K.EpisodeArrays(np.ascontiguousarray(eps.support_scenes), np.ascontiguousarray(eps.support_labels),
                                np.ascontiguousarray(eps.query_scenes), np.ascontiguousarray(eps.query_labels),
                                np.asarray(eps.concept, np.int64))
        options = K.EvaluateOptions(True, 0.0, False, K.SPECULATIVE_SHARE)
        res_new = K.EpisodeResults(*(np.zeros((n, kq)) if f == "query_pred" else
                                     np.zeros(n, bool if f == "empty" else np.int64 if f == "n_candidates" else float)
                                     for f in K.EpisodeResults._fields))
        res_old = K.EpisodeResults(*(a.copy() for a in res_new))
        defer_w = np.zeros((1, 1))

        def new(batch=batch, t=tables_o, bank=bank, options=options, res=res_new):
            K.evaluate_episodes(batch, t, bank, options, res, defer_w)

        def old(batch=batch, t=tables_o, bank=bank, options=options, res=res_old):
            old_k.evaluate_episodes(*batch, t.scene_concepts, t.omega, t.log_prior, *t.likelihood, *bank,
                                    options.allow_wide, t.refit, *t.refit_likelihood, t.fixed_scene_scores,
                                    t.fixed_test_scores, t.fixed_entropy, options.ap_tolerance, *res, options.defer,
                                    defer_w, options.speculative_share)
        jobs[f"evaluate_{lik}"] = (old, new, res_old, res_new)
    for tag, job in jobs.items():
        old, new = job[0], job[1]
        old()
        new()  # compiled, warm
        t = {"positional": 0.0, "records": 0.0}
        for r in range(rounds):
            pair = (("positional", old), ("records", new))
            for name, fn in (pair if r % 2 == 0 else pair[::-1]):
                t0 = time.perf_counter()
                fn()
                t[name] += time.perf_counter() - t0
        same = (all(np.array_equal(a, b) for a, b in zip(out_old[0] + out_old[1], out_new[0] + out_new[1]))
                if tag == "sample" else all(np.array_equal(a, b, equal_nan=True) for a, b in zip(job[2], job[3])))
        runs[tag] = {"positional_ms_per_episode": 1000 * t["positional"] / rounds / n,
                     "records_ms_per_episode": 1000 * t["records"] / rounds / n,
                     "ratio_records_over_positional": t["records"] / t["positional"], "same_arrays": bool(same)}
        print(tag, json.dumps({k: (round(v, 4) if isinstance(v, float) else v) for k, v in runs[tag].items()}),
              flush=True)
    return runs


def main():
    argv = sys.argv[1:]
    if argv[:1] == ["records"]:
        ap = argparse.ArgumentParser(description="typed records against positional arguments, side by side")
        ap.add_argument("space", nargs="?", default="spaces/paper")
        ap.add_argument("--before", required=True, help="a commit whose kernels take positional arguments")
        ap.add_argument("--episodes", type=int, default=2000)
        ap.add_argument("--rounds", type=int, default=6)
        ap.add_argument("--json-out", default=str(RESULTS / "roofline_records.json"))
        args = ap.parse_args(argv[1:])
        runs = records(args.space, args.before, args.episodes, args.rounds)
        path = write_summary(args.json_out, "roofline_records", runs, space=str(args.space),
                             episodes=args.episodes, rounds=args.rounds, before=args.before,
                             method="one process, rounds interleaved (the first rotating), the same inputs")
        print(f"written to {path}")
        return
    if argv[:1] == ["hashes"]:
        ap = argparse.ArgumentParser(description="hashes of the oracles' results on a fixed run")
        ap.add_argument("space")
        ap.add_argument("out")
        ap.add_argument("--compare", help="an earlier run's hashes: exit 1 if any differs")
        args = ap.parse_args(argv[1:])
        now = hashes(args.space, args.out)
        if args.compare:
            before = json.loads(Path(args.compare).read_text())
            before = before.get("figures", before)
            diff = [k for k in before if before[k] != now.get(k)]
            print("\n".join(f"differs: {k}" for k in diff) or f"all {len(before)} hashes equal")
            sys.exit(1 if diff else 0)
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("space", nargs="?", default="spaces/paper", help="a saved space (default spaces/paper)")
    ap.add_argument("--episodes", type=int, help="episodes per cell (default 300; --full: 20,000)")
    ap.add_argument("--splits", nargs="+", help="splits (default concept_iid counting; --full: all nine)")
    ap.add_argument("--full", action="store_true", help="every split, hard and easy, 20,000 episodes each")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs; the best counts (default 3)")
    ap.add_argument("--json-out", help="default benchmarks/results/roofline.json (--full: roofline_full.json)")
    args = ap.parse_args(argv)
    episodes = args.episodes or (20_000 if args.full else 300)
    splits = args.splits or (ALL_SPLITS if args.full else ("concept_iid", "counting"))
    negatives = ("hard", "easy") if args.full else ("hard",)
    if episodes < 8:
        ap.error("--episodes must be >= 8")
    out = args.json_out or RESULTS / ("roofline_full.json" if args.full else "roofline.json")
    run(args.space, splits, episodes, negatives, args.repeat, out)


if __name__ == "__main__":
    main()
