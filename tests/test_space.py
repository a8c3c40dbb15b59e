"""The hypothesis space: build pipeline, signatures against the slow
interpreter, synonym classes, test bank, priors, the on-disk format (round trip,
determinism, damage detection, atomic saves) and the ``space`` subcommands.

Everything is built small (20,000 samples x 20,000 scenes) and shared per module.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.special import logsumexp

from bayes_concepts.cli import main
from bayes_concepts.engine import store
from bayes_concepts.engine.interpreter import evaluate
from bayes_concepts.spaces.hypothesis_space import FORMAT_VERSION, HypothesisSpace
from bayes_concepts.engine.store import SpaceError
from bayes_concepts.errors import BayesConceptsError
from bayes_concepts.lot import Program, rejection_reason
from bayes_concepts.scenes import CURI_SCHEMA, codes_to_scene, sample_scenes, write_scenes_jsonl

SAMPLES = 20_000
SCENES = 20_000          # not a multiple of 64: the last signature word has padding bits
SEED = 11
OTHER_SEED = 12
BUILD = dict(samples=SAMPLES, scenes=SCENES, progress=False)
FILES = ["concepts.jsonl", "grammar.pcfg", "signatures.npy", "scenes.npy", "test_scene_ids.npy",
         "test_drawn_for.npy", "test_signatures.npy"]
SLOW = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ---------------------------------------------------------------------------- fixtures

def _log_prior(space, kind="length", beta=0.2, concepts=None):
    """The oracles' normalised log prior over ``concepts`` (default all): float64 (len,)."""
    from types import SimpleNamespace
    from bayes_concepts.oracles.priors import log_prior
    ids = np.arange(space.n_concepts) if concepts is None else np.asarray(concepts)
    return log_prior(space, ids, SimpleNamespace(prior=kind, beta=beta))

@pytest.fixture(scope="module")
def space():
    # not the shared small space: this module tests the build, with its own sizes (SCENES not a multiple of 64)
    return HypothesisSpace.build(seed=SEED, **BUILD)


@pytest.fixture(scope="module")
def space_again():
    """A second build with the same arguments and seed."""
    return HypothesisSpace.build(seed=SEED, **BUILD)


@pytest.fixture(scope="module")
def space_other():
    return HypothesisSpace.build(seed=OTHER_SEED, **BUILD)


@pytest.fixture(scope="module")
def saved(space, tmp_path_factory):
    return space.save(tmp_path_factory.mktemp("saved") / "space")


@pytest.fixture(scope="module")
def loaded(saved):
    return HypothesisSpace.load(saved)


@pytest.fixture(scope="module")
def bits(space):
    """bool (n_concepts, n_scenes), read straight from the packed words (bit j of
    word w is scene 64*w + j), independently of ``unpack_bits``."""
    j = np.arange(space.n_scenes)
    words = np.asarray(space.signatures)[:, j // 64]
    return ((words >> (j % 64).astype(np.uint64)) & np.uint64(1)).astype(bool)


def _raw_bit(words, j):
    return bool((int(words[j // 64]) >> (j % 64)) & 1)


# ------------------------------------------------------- 1. signatures vs the interpreter
def test_signature_accessor_matches_packed_bits(space, bits):
    assert space.signatures.dtype == np.uint64
    assert space.signatures.shape == (space.n_concepts, -(-space.n_scenes // 64))
    for i in range(space.n_concepts):
        assert np.array_equal(space.signature(i), bits[i]), i
    # padding bits past the last scene are zero, so packed popcounts are counts
    assert np.array_equal(np.bitwise_count(space.signatures).sum(axis=1), bits.sum(axis=1))


def test_signature_bits_match_interpreter_on_random_pairs(space):
    rng = np.random.default_rng(2024)
    programs = {}
    pairs = [(int(i), int(j)) for i, j in zip(rng.integers(0, space.n_concepts, 400),
                                               rng.integers(0, space.n_scenes, 400))]
    # random scenes are mostly negatives (firing rate <= 10 %): also draw positives
    for i in rng.choice(space.n_concepts, 150, replace=False):
        pos = np.flatnonzero(space.signature(int(i)))
        pairs += [(int(i), int(j)) for j in rng.choice(pos, 2, replace=False)]
    n_true = 0
    for i, j in pairs:
        prog = programs.setdefault(i, space.program(i))
        expected = evaluate(prog, space.scene(j))
        assert bool(space.signature(i)[j]) == expected, (space.programs[i], j)
        n_true += expected
    assert len(pairs) >= 600 and 300 <= n_true < len(pairs)


@SLOW
@given(data=st.data())
def test_signature_bits_match_interpreter_hypothesis(space, data):
    i = data.draw(st.integers(0, space.n_concepts - 1), label="concept")
    sig = space.signature(i)
    if data.draw(st.booleans(), label="positive"):
        j = data.draw(st.sampled_from(np.flatnonzero(sig).tolist()), label="scene")
    else:
        j = data.draw(st.integers(0, space.n_scenes - 1), label="scene")
    expected = evaluate(space.program(i), space.scene(j))
    assert bool(sig[j]) == expected
    assert _raw_bit(space.signatures[i], j) == expected


def test_test_bank_structure(space):
    tb = space.test_bank
    k = space.params["test_positives"]
    assert k == 3
    assert tb.scene_ids.dtype == np.int64 and tb.drawn_for.dtype == np.int32
    assert tb.n_scenes == len(tb.drawn_for) == space.stages["test_bank"]
    assert ((0 <= tb.scene_ids) & (tb.scene_ids < space.n_scenes)).all()
    assert tb.signatures.shape == (space.n_concepts, -(-tb.n_scenes // 64))
    assert np.array_equal(np.bincount(tb.drawn_for, minlength=space.n_concepts),
                          np.full(space.n_concepts, k))
    for i in range(space.n_concepts):
        drawn = tb.scene_ids[tb.drawn_for == i]
        assert len(set(drawn.tolist())) == k, i             # distinct within a concept
        assert space.signature(i)[drawn].all(), i           # every drawn scene is a positive
        # labels on the test bank are the signature restricted to the test scenes
        assert np.array_equal(tb.labels(i), space.signature(i)[tb.scene_ids]), i
    assert np.array_equal(tb.label_matrix(), np.stack([tb.labels(i) for i in range(space.n_concepts)]))
    assert np.array_equal(tb.label_matrix([3, 1]), np.stack([tb.labels(3), tb.labels(1)]))
    # padding bits of the test-bank signatures are zero too
    assert np.array_equal(np.bitwise_count(tb.signatures).sum(axis=1), tb.label_matrix().sum(axis=1))


def test_test_bank_labels_match_interpreter(space):
    tb = space.test_bank
    rng = np.random.default_rng(7)
    pairs = list(zip(rng.integers(0, space.n_concepts, 300).tolist(), rng.integers(0, tb.n_scenes, 300).tolist()))
    # the scenes drawn for a concept must be labelled true for it
    pairs += [(int(tb.drawn_for[t]), int(t)) for t in rng.choice(tb.n_scenes, 100, replace=False)]
    n_true = 0
    for i, t in pairs:
        expected = evaluate(space.program(i), space.scene(int(tb.scene_ids[t])))
        assert bool(tb.labels(i)[t]) == expected, (space.programs[i], t)
        assert _raw_bit(tb.signatures[i], t) == expected
        n_true += expected
    assert n_true >= 100


# --------------------------------------------------------------------- 2. synonym classes
def test_synonym_classes_are_groups_of_identical_signatures(space):
    sig = np.asarray(space.signatures)
    uniq, first, inverse = np.unique(sig, axis=0, return_index=True, return_inverse=True)
    inverse = inverse.ravel()
    rank = np.empty(len(uniq), np.int64)
    rank[np.argsort(first)] = np.arange(len(uniq))   # classes numbered by first member
    expected = rank[inverse]
    assert np.array_equal(space.synonym_classes, expected)
    assert space.n_synonym_classes == len(uniq) == space.stages["synonym_classes"]
    assert len(uniq) < space.n_concepts                # the small space does have synonyms
    # numbering in order of first member: each new class id is one more than the largest so far
    seen_max = np.maximum.accumulate(np.concatenate([[-1], space.synonym_classes[:-1]]))
    assert (space.synonym_classes <= seen_max + 1).all()
    for i in np.random.default_rng(0).choice(space.n_concepts, 50, replace=False):
        assert np.array_equal(space.synonyms(i), np.flatnonzero(inverse == inverse[i]))
        assert i in space.synonyms(i)


# ------------------------------------------------------------- 3. concepts and their data
def test_firing_filter_and_counts(space, bits):
    p = space.params
    assert p["min_count"] == 10 and p["max_rate"] == 0.10
    counts = space.counts
    assert counts.dtype == np.int64 and len(counts) == space.n_concepts
    assert (counts >= p["min_count"]).all()
    assert (counts <= p["max_rate"] * space.n_scenes).all()
    assert np.array_equal(counts, bits.sum(axis=1))
    assert all(space.count(i) == int(space.signature(i).sum()) for i in range(space.n_concepts))


def test_programs_are_unique_canonical_collapsed(space):
    assert space.n_concepts > 100
    assert len(set(space.programs)) == space.n_concepts
    keys = [(len(s.split()), s) for s in space.programs]
    assert keys == sorted(keys)                                  # ordered by length, then postfix
    for i, text in enumerate(space.programs):
        prog = space.program(i)
        assert prog.postfix == text                              # canonical
        assert Program.parse(prog.postfix).postfix == text
        assert prog.collapsed().postfix == text                  # x-free forms are collapsed
        if not prog.uses_x:
            assert prog.quantifier is None, text
        assert space.length(i) == len(text.split()) == prog.length
        assert rejection_reason(prog) is None, text
        assert space.find(text) == i
    assert any(space.program(i).quantifier is None for i in range(space.n_concepts))
    assert any(space.program(i).uses_x for i in range(space.n_concepts))


def test_find_collapses_uncollapsed_x_free_forms(space):
    i = next(i for i in range(space.n_concepts) if space.program(i).quantifier is None)
    assert space.find(space.programs[i] + " exists=") == i
    assert space.find(space.programs[i] + " for-all=") == i
    assert space.find(space.program(i)) == i


def test_log_pcfg_matches_program_log_prob(space):
    rng = np.random.default_rng(3)
    ids = rng.choice(space.n_concepts, 120, replace=False).tolist()
    ids += [i for i in range(space.n_concepts) if space.program(i).quantifier is None][:30]
    for i in ids:
        assert space.log_pcfg[i] == pytest.approx(space.program(i).log_prob(), abs=1e-9, rel=0), space.programs[i]
    assert (space.log_pcfg < 0).all() and np.isfinite(space.log_pcfg).all()


def test_stages_are_consistent(space):
    st_ = space.stages
    assert st_["sampled"] == SAMPLES
    assert (st_["sampled"] >= st_["unique"] >= st_["after_rejection"] >= st_["after_firing_filter"]
            >= st_["after_collapse_dedupe"] == space.n_concepts >= st_["synonym_classes"])
    assert space.n_scenes == SCENES == space.params["scenes"]
    assert space.params["seed"] == SEED and space.params["samples"] == SAMPLES


# ------------------------------------------------------------------- 4. save / load, priors
def test_load_equals_built(space, saved, loaded):
    assert saved.is_dir() and sorted(p.name for p in saved.iterdir()) == sorted(FILES + ["manifest.json"])
    assert loaded == space
    assert loaded.path == saved
    assert loaded.n_concepts == space.n_concepts and loaded.n_scenes == space.n_scenes
    assert loaded.n_synonym_classes == space.n_synonym_classes
    assert loaded.params == space.params and loaded.stages == space.stages
    rng = np.random.default_rng(5)
    for i in rng.choice(space.n_concepts, 60, replace=False).tolist():
        assert loaded.program(i) == space.program(i)
        assert loaded.program(i).readable == space.program(i).readable
        assert loaded.length(i) == space.length(i)
        assert loaded.count(i) == space.count(i)
        assert loaded.synonym_class(i) == space.synonym_class(i)
        assert np.array_equal(loaded.signature(i), space.signature(i))
        assert np.array_equal(loaded.synonyms(i), space.synonyms(i))
        assert np.array_equal(loaded.test_bank.labels(i), space.test_bank.labels(i))
        assert loaded.find(space.programs[i]) == i
    for j in rng.choice(space.n_scenes, 30, replace=False).tolist():
        assert loaded.scene(j) == space.scene(j)
    assert np.array_equal(loaded.test_bank.scene_ids, space.test_bank.scene_ids)
    assert np.array_equal(loaded.test_bank.drawn_for, space.test_bank.drawn_for)
    assert np.array_equal(loaded.test_bank.label_matrix(), space.test_bank.label_matrix())
    for kind in ("length", "pcfg", "uniform"):
        assert np.array_equal(_log_prior(loaded, kind), _log_prior(space, kind))
    assert np.array_equal(loaded.log_pcfg, space.log_pcfg)   # floats survive JSON exactly


def test_equality_sees_differences(space, space_other):
    assert space != space_other
    assert (space == "not a space") is False


def test_save_refuses_to_overwrite(space, saved):
    before = (saved / "manifest.json").read_bytes()
    with pytest.raises(FileExistsError):
        space.save(saved)
    assert (saved / "manifest.json").read_bytes() == before


@pytest.mark.parametrize("kind", ["length", "pcfg", "uniform"])
def test_log_prior_is_normalised(space, kind):
    lp = _log_prior(space, kind)
    assert lp.shape == (space.n_concepts,) and lp.dtype == np.float64
    assert logsumexp(lp) == pytest.approx(0.0, abs=1e-9)
    sub = [5, 0, 17, 3]
    lps = _log_prior(space, kind, concepts=sub)
    assert logsumexp(lps) == pytest.approx(0.0, abs=1e-9)
    # restricting renormalises: same ratios as the full prior
    assert np.allclose(lps - lps[0], lp[sub] - lp[sub[0]], atol=1e-12)


@pytest.mark.parametrize("beta", [0.2, 1.0, 0.05])
def test_length_prior_proportional_to_minus_beta_length(space, beta):
    lp = _log_prior(space, "length", beta=beta)
    shift = lp + beta * space.lengths.astype(np.float64)
    assert np.allclose(shift, shift[0], atol=1e-9)
    assert logsumexp(lp) == pytest.approx(0.0, abs=1e-9)


def test_pcfg_and_uniform_priors(space):
    lp = _log_prior(space, "pcfg")
    assert np.allclose(lp - space.log_pcfg, (lp - space.log_pcfg)[0], atol=1e-9)
    assert np.allclose(_log_prior(space, "uniform"), -np.log(space.n_concepts))
    with pytest.raises(ValueError, match="unknown prior"):
        _log_prior(space, "nonsense")


# -------------------------------------------------------------------------- 5. determinism
def test_same_seed_same_manifest_other_seed_different(space, space_again, space_other, tmp_path):
    a = space_again.save(tmp_path / "a")
    b = dataclasses.replace(space).save(tmp_path / "b")  # a copy: saving sets .path, the fixture keeps its own
    c = space_other.save(tmp_path / "c")
    assert space_again == space
    ma, mb, mc = ((d / "manifest.json").read_bytes() for d in (a, b, c))
    assert ma == mb
    for name in FILES:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    assert mc != ma
    files_a, files_c = json.loads(ma)["files"], json.loads(mc)["files"]
    assert files_a["signatures.npy"]["sha256"] != files_c["signatures.npy"]["sha256"]
    assert files_a["scenes.npy"]["sha256"] != files_c["scenes.npy"]["sha256"]


def test_manifest_records_files_and_counts(space, saved):
    m = json.loads((saved / "manifest.json").read_text())
    assert m["format_version"] == FORMAT_VERSION and m["seed"] == SEED
    assert m["params"] == space.params and m["stages"] == space.stages
    assert m["counts"]["concepts"] == space.n_concepts and m["counts"]["scenes"] == space.n_scenes
    assert m["counts"]["test_bank"] == space.test_bank.n_scenes
    assert m["counts"]["synonym_classes"] == space.n_synonym_classes
    assert sorted(m["files"]) == sorted(FILES)
    for name, info in m["files"].items():
        data = (saved / name).read_bytes()
        assert info["bytes"] == len(data) and info["sha256"] == hashlib.sha256(data).hexdigest(), name
    # no pickle anywhere: every array loads with allow_pickle=False
    for name in FILES:
        if name.endswith(".npy"):
            assert np.load(saved / name, allow_pickle=False).dtype != object


# ---------------------------------------------------------------- 6. damaged saved spaces
def _flip(path: Path):
    data = bytearray(path.read_bytes())
    k = len(data) // 2
    data[k] ^= 0xFF
    path.write_bytes(bytes(data))


def _truncate(path: Path):
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _delete(path: Path):
    path.unlink()


DAMAGE = {"flip": _flip, "truncate": _truncate, "delete": _delete}


@pytest.mark.parametrize("how", sorted(DAMAGE))
@pytest.mark.parametrize("name", FILES + ["manifest.json"])
def test_damaged_file_is_a_clear_error_naming_it(saved, tmp_path, name, how):
    copy = Path(shutil.copytree(saved, tmp_path / "copy"))
    assert HypothesisSpace.load(copy) is not None       # the fresh copy is fine
    DAMAGE[how](copy / name)
    with pytest.raises(BayesConceptsError) as info:
        HypothesisSpace.load(copy)
    msg = str(info.value)
    assert isinstance(info.value, SpaceError)
    assert name in msg, msg
    assert "\n" not in msg


@pytest.mark.parametrize("name", FILES)
def test_flipped_byte_at_either_end_is_detected(saved, tmp_path, name):
    for where in (0, -1):
        copy = Path(shutil.copytree(saved, tmp_path / f"copy{where}"))
        data = bytearray((copy / name).read_bytes())
        data[where] ^= 0x01
        (copy / name).write_bytes(bytes(data))
        with pytest.raises(SpaceError, match=name.replace(".", r"\.")):
            HypothesisSpace.load(copy)


def test_flipped_bit_in_manifest_is_detected(saved, tmp_path):
    """A single-bit flip in manifest.json that keeps it valid JSON (the seed 11 -> 10,
    '1' ^ 1 == '0') must not load silently as a space with different parameters."""
    copy = Path(shutil.copytree(saved, tmp_path / "copy"))
    mf = copy / "manifest.json"
    text = mf.read_bytes()
    needle = b'"seed": 11'
    assert text.count(needle) == 2                      # params.seed and the top-level seed
    k = text.index(needle) + len(needle) - 1
    data = bytearray(text)
    data[k] ^= 0x01
    mf.write_bytes(bytes(data))
    with pytest.raises(SpaceError, match="manifest.json"):
        HypothesisSpace.load(copy)


def test_version_mismatch_names_manifest(saved, tmp_path):
    copy = Path(shutil.copytree(saved, tmp_path / "copy"))
    m = json.loads((copy / "manifest.json").read_text())
    m["format_version"] = 99
    (copy / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(SpaceError, match=r"manifest\.json.*version"):
        HypothesisSpace.load(copy)


def test_missing_directory_is_a_clear_error(tmp_path):
    with pytest.raises(SpaceError, match="nowhere"):
        HypothesisSpace.load(tmp_path / "nowhere")


# ------------------------------------------------------------------ 7. interrupted builds
class Crash(RuntimeError):
    pass


def _crash_after(monkeypatch, n_ok: int):
    """Make store._save_npy write ``n_ok`` arrays, then raise (a crash mid-save)."""
    real = store._save_npy
    calls = []

    def crashing(path, array):
        if len(calls) >= n_ok:
            raise Crash(f"simulated crash writing {Path(path).name}")
        calls.append(path)
        real(path, array)
    monkeypatch.setattr(store, "_save_npy", crashing)
    return calls


@pytest.mark.parametrize("n_ok", [0, 1, 3, 4])
def test_crash_during_save_leaves_nothing_that_loads(space, tmp_path, monkeypatch, n_ok):
    out = tmp_path / "out"
    partial = tmp_path / "out.partial"
    calls = _crash_after(monkeypatch, n_ok)
    with pytest.raises(Crash):
        space.save(out)
    assert len(calls) == n_ok
    assert not out.exists()
    with pytest.raises(SpaceError, match="out"):
        HypothesisSpace.load(out)
    assert partial.is_dir() and (partial / "concepts.jsonl").exists()
    with pytest.raises(SpaceError) as info:
        HypothesisSpace.load(partial)
    assert "manifest.json" in str(info.value) and "\n" not in str(info.value)
    monkeypatch.undo()
    assert space.save(out) == out
    assert not partial.exists()
    assert HypothesisSpace.load(out) == space


def test_crash_during_overwrite_keeps_the_old_space(space, space_other, tmp_path, monkeypatch):
    out = space.save(tmp_path / "out")
    _crash_after(monkeypatch, 2)
    with pytest.raises(Crash):
        space_other.save(out, overwrite=True)
    assert HypothesisSpace.load(out) == space
    monkeypatch.undo()
    space_other.save(out, overwrite=True)
    assert HypothesisSpace.load(out) == space_other
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_crash_writing_manifest_leaves_nothing_that_loads(space, tmp_path, monkeypatch):
    real = store._fsync_write

    def crashing(path, data):
        if Path(path).name == "manifest.json":
            real(path, data[: len(data) // 3])        # a torn write, then the crash
            raise Crash("simulated crash writing manifest.json")
        real(path, data)
    monkeypatch.setattr(store, "_fsync_write", crashing)
    out = tmp_path / "out"
    with pytest.raises(Crash):
        space.save(out)
    assert not out.exists()
    with pytest.raises(SpaceError, match="manifest.json"):
        HypothesisSpace.load(tmp_path / "out.partial")
    monkeypatch.undo()
    space.save(out)
    assert HypothesisSpace.load(out) == space


KILLABLE_BUILD = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from bayes_concepts.engine import store
    real = store._save_npy
    calls = []
    def stalling(path, array):
        real(path, array)
        calls.append(path)
        if len(calls) == 2:                      # midway through the save: tell the test, then hang
            Path(sys.argv[1]).write_text("ready")
            time.sleep(600)
    store._save_npy = stalling
    from bayes_concepts.cli import main
    sys.exit(main(sys.argv[2:]))
""")


def test_killed_build_subprocess_leaves_nothing_that_loads(space, tmp_path):
    out = tmp_path / "OUT"
    partial = tmp_path / "OUT.partial"
    ready = tmp_path / "ready"
    args = ["space", "build", str(out), "--samples", str(SAMPLES), "--scenes", str(SCENES), "--seed", str(SEED),
            "--quiet"]
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    proc = subprocess.Popen([sys.executable, "-c", KILLABLE_BUILD, str(ready), *args],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    try:
        deadline = time.monotonic() + 120
        while not ready.exists():
            assert proc.poll() is None, f"build exited early: {proc.stderr.read().decode()}"
            assert time.monotonic() < deadline, "build never reached the save"
            time.sleep(0.02)
        assert partial.is_dir() and not out.exists()
        os.kill(proc.pid, signal.SIGKILL)
        assert proc.wait(timeout=30) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stderr.close()
    assert not out.exists()
    with pytest.raises(SpaceError):
        HypothesisSpace.load(out)
    assert partial.is_dir()
    with pytest.raises(SpaceError, match="manifest.json"):
        HypothesisSpace.load(partial)
    # the next build succeeds (and cleans up the leftover)
    done = subprocess.run([sys.executable, "-m", "bayes_concepts.cli", *args], capture_output=True, env=env,
                          timeout=300)
    assert done.returncode == 0, done.stderr.decode()
    assert not partial.exists()
    assert HypothesisSpace.load(out) == space                 # = the API build with the same arguments


# --------------------------------------------------------------------------------- 8. CLI
@pytest.fixture(scope="module")
def cli_space(tmp_path_factory):
    out = tmp_path_factory.mktemp("cli") / "sp"
    code = main(["space", "build", str(out), "--samples", str(SAMPLES), "--scenes", str(SCENES),
                 "--seed", str(SEED), "--quiet"])
    assert code == 0
    return out


def test_cli_build_equals_api_build(cli_space, space):
    assert HypothesisSpace.load(cli_space) == space


def test_cli_info_json(cli_space, capsys):
    capsys.readouterr()
    assert main(["space", "info", str(cli_space), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    sp = HypothesisSpace.load(cli_space)
    assert info["concepts"] == sp.n_concepts
    assert info["scenes"] == sp.n_scenes
    assert info["test_bank"] == sp.test_bank.n_scenes
    assert info["synonym_classes"] == sp.n_synonym_classes
    assert info["params"] == sp.params and info["stages"] == sp.stages
    assert sum(info["length_histogram"].values()) == sp.n_concepts
    assert sum(info["firing_rate_histogram"].values()) == sp.n_concepts
    assert sum(int(k) * v for k, v in info["synonym_class_size_histogram"].items()) == sp.n_concepts


def test_cli_info_plain(cli_space, capsys):
    capsys.readouterr()
    assert main(["space", "info", str(cli_space)]) == 0
    out = capsys.readouterr().out
    sp = HypothesisSpace.load(cli_space)
    assert f"{sp.n_concepts:,} concepts" in out and f"{sp.n_synonym_classes:,} synonym classes" in out


def _show_fields(out: str) -> dict:
    fields = {}
    for line in out.splitlines():
        if line and not line.startswith(" "):
            key, _, value = line.partition(" ")
            fields[key] = value.strip()
    return fields


def test_cli_show_by_id_and_by_program(cli_space, capsys):
    sp = HypothesisSpace.load(cli_space)
    capsys.readouterr()
    assert main(["space", "show", str(cli_space), "0"]) == 0
    f = _show_fields(capsys.readouterr().out)
    assert f["id"] == "0" and f["program"] == sp.programs[0] and f["readable"] == sp.program(0).readable
    i = max(range(sp.n_concepts), key=lambda k: len(sp.synonyms(k)))   # one with synonyms
    assert main(["space", "show", str(cli_space), sp.programs[i]]) == 0
    out = capsys.readouterr().out
    f = _show_fields(out)
    assert f["id"] == str(i) and f["readable"] == sp.program(i).readable
    assert f["length"] == str(sp.length(i))
    assert f["count"].startswith(f"{sp.count(i):,} of")
    assert f["synonyms"].startswith(f"class {sp.synonym_class(i)}, {len(sp.synonyms(i)) - 1} other")
    for j in sp.synonyms(i)[:3]:
        if j != i:
            assert sp.program(j).readable in out
    # the program may also be given as separate tokens
    assert main(["space", "show", str(cli_space), *sp.programs[i].split()]) == 0
    assert _show_fields(capsys.readouterr().out)["id"] == str(i)


def test_cli_show_unknown_program_and_bad_id(cli_space, capsys):
    capsys.readouterr()
    # a valid program that is not a concept (rejected by rule x_compared_with_itself)
    assert main(["space", "show", str(cli_space), "x color? x color? = exists="]) == 1
    assert "not a concept" in capsys.readouterr().out
    assert main(["space", "show", str(cli_space), "999999"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("bayes-concepts: error:") and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("argv", [["space", "info"], ["space", "info", "--json"], ["space", "show"]])
def test_cli_bad_dir_exits_2_with_one_line(tmp_path, capsys, argv):
    bad = tmp_path / "no_such_space"
    extra = ["0"] if argv[-1] == "show" else []
    capsys.readouterr()
    code = main([*argv[:2], str(bad), *argv[2:], *extra])
    cap = capsys.readouterr()
    assert code == 2
    lines = cap.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("bayes-concepts: error:") and "no_such_space" in lines[0]
    assert cap.out == ""


def test_cli_bad_dir_that_exists_but_is_not_a_space(tmp_path, capsys):
    (tmp_path / "junk").mkdir()
    capsys.readouterr()
    assert main(["space", "info", str(tmp_path / "junk")]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "manifest.json" in lines[0]


def test_cli_build_refuses_existing_out_without_force(cli_space, capsys):
    before = (cli_space / "manifest.json").read_bytes()
    capsys.readouterr()
    assert main(["space", "build", str(cli_space), "--samples", "2000", "--scenes", "2000", "--quiet"]) == 2
    cap = capsys.readouterr()
    err = cap.err.strip().splitlines()
    assert err[-1].startswith("bayes-concepts: error:") and "exists" in err[-1] and str(cli_space) in err[-1]
    assert "built" not in cap.out
    assert (cli_space / "manifest.json").read_bytes() == before
    assert HypothesisSpace.load(cli_space).params["samples"] == SAMPLES


def test_cli_build_checks_out_before_building(cli_space, capsys, monkeypatch):
    """An existing OUT (no --force) is bad input: it should be refused up front with a
    one-line error, not after the whole build (hours at the paper's scale)."""
    def no_build(*args, **kwargs):
        raise AssertionError("HypothesisSpace.build ran although OUT exists and --force was not given")
    monkeypatch.setattr(HypothesisSpace, "build", no_build)
    capsys.readouterr()
    code = main(["space", "build", str(cli_space), "--samples", "2000", "--scenes", "2000", "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert len(err) == 1 and "exists" in err[0]


# ------------------------------------------------------------------ 9. scenes from files
@pytest.fixture(scope="module")
def scene_files(tmp_path_factory):
    d = tmp_path_factory.mktemp("scenes")
    codes = sample_scenes(3_500, "clevr", CURI_SCHEMA, seed=99)
    scenes = [codes_to_scene(row, CURI_SCHEMA) for row in codes]
    a, b = d / "first.jsonl", d / "second.jsonl"
    write_scenes_jsonl(a, scenes[:2_000])
    write_scenes_jsonl(b, scenes[2_000:])
    return [a, b], scenes


@pytest.fixture(scope="module")
def file_space(scene_files):
    files, _ = scene_files
    return HypothesisSpace.build(samples=SAMPLES, scenes_from=files, seed=5, progress=False)


def test_build_from_scene_files_records_sources(scene_files, file_space):
    files, scenes = scene_files
    p = file_space.params
    assert p["scenes_from"] == [
        {"file": f.name, "sha256": hashlib.sha256(f.read_bytes()).hexdigest(), "scenes": n}
        for f, n in zip(files, (2_000, 1_500))]
    assert p["scene_sampler"] is None
    assert p["scenes"] == file_space.n_scenes == len(scenes)
    assert file_space.n_concepts > 50
    rng = np.random.default_rng(1)
    for j in rng.choice(len(scenes), 50, replace=False).tolist():
        assert file_space.scene(j) == scenes[j]                   # scene bank = the files, in order
    for i, j in zip(rng.integers(0, file_space.n_concepts, 150).tolist(),
                    rng.integers(0, len(scenes), 150).tolist()):
        assert bool(file_space.signature(i)[j]) == evaluate(file_space.program(i), scenes[j])
    assert ((file_space.counts >= 10) & (file_space.counts <= 0.10 * len(scenes))).all()


def test_scene_file_space_round_trips(file_space, tmp_path, capsys):
    out = file_space.save(tmp_path / "fs")
    back = HypothesisSpace.load(out)
    assert back == file_space
    assert back.params["scenes_from"] == file_space.params["scenes_from"]
    capsys.readouterr()
    assert main(["space", "info", str(out)]) == 0
    assert "first.jsonl" in capsys.readouterr().out


def test_build_from_scene_file_cli(scene_files, tmp_path, capsys):
    files, scenes = scene_files
    out = tmp_path / "fromfile"
    assert main(["space", "build", str(out), "--samples", "5000", "--scenes-from", str(files[1]),
                 "--seed", "2", "--quiet"]) == 0
    sp = HypothesisSpace.load(out)
    assert sp.n_scenes == 1_500
    assert sp.params["scenes_from"][0]["file"] == "second.jsonl"
    assert sp.params["scenes_from"][0]["sha256"] == hashlib.sha256(files[1].read_bytes()).hexdigest()
    assert sp.scene(0) == scenes[2_000]
