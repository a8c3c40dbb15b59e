"""The space as a contract: one ConceptSpace, its SpaceIndex, declared capabilities.

Spaces saved before the contract existed (tests/fixtures/saved_spaces/, written by the
toolkit at an earlier commit) load and give the same episodes and comp-gap numbers bit for
bit; a save of what was loaded writes the same manifest; no module outside
``bayes_concepts.spaces`` probes a space with hasattr/getattr, sets an attribute on one, or
borrows methods through ``__getattr__``."""
from __future__ import annotations

import ast
import hashlib
import json
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest

import bayes_concepts as bc
from bayes_concepts.cli import main
from bayes_concepts.protocols import get_protocol
from bayes_concepts.spaces import (ConceptSpace, ExtensionSpace, HypothesisSpace, SpaceCapabilityError, SpaceIndex,
                                   load_space, space_kinds)

ROOT = Path(__file__).resolve().parents[1]
SAVED = ROOT / "tests" / "fixtures" / "saved_spaces"
EXPECTED = json.loads((SAVED / "expected.json").read_text())
PACKAGE = ROOT / "bayes_concepts"


def _sha(*arrays) -> str:
    """The hash the fixture script wrote: dtype, shape and bytes of each array in turn."""
    m = hashlib.sha256()
    for a in arrays:
        a = np.ascontiguousarray(np.asarray(a))
        m.update(str(a.dtype).encode())
        m.update(str(a.shape).encode())
        m.update(a.tobytes())
    return m.hexdigest()


def _split_and_gap(name, space):
    if name == "pairs":
        splits = {"unseen_pairs": bc.make_split(space, tomllib.loads(space.spec_files["unseen_pairs.toml"]))}
        return splits, bc.compute_gap(space, splits, n_episodes=40, seed=1)
    if name == "curi_release":
        proto = get_protocol("curi-release")
        return proto.splits(space, ["concept_iid"]), proto.compute_gap(space, ["concept_iid"], n_episodes=40, seed=1)
    splits = bc.load_splits(space, ["concept_iid"])
    return splits, bc.compute_gap(space, splits, n_episodes=40, seed=1)


# ============================================================ spaces saved before the contract
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_spaces_saved_before_load_and_give_the_same_numbers(name, tmp_path):
    exp = EXPECTED[name]
    space = load_space(SAVED / name)
    assert isinstance(space, ConceptSpace)
    assert space.manifest_sha256() == exp["manifest_sha256"]
    assert space.n_concepts == exp["n_concepts"]
    splits, ds = _split_and_gap(name, space)
    (split_name, split), = splits.items()
    assert split_name == exp["split"]
    eps = bc.sample_episodes(space, split, side="test", negatives="hard", n=30, seed=2)
    assert _sha(*[getattr(eps, f) for f in bc.episodes.ARRAY_FIELDS]) == exp["episodes"]
    assert _sha(*[ds[v].values for v in ("ap", "cba", "query_pred")]) == exp["gap"]
    # what was loaded saves to the same files and the same manifest
    space.save(tmp_path / name)
    assert (tmp_path / name / "manifest.json").read_bytes() == (SAVED / name / "manifest.json").read_bytes()
    assert load_space(tmp_path / name) == space


def test_a_saved_space_round_trips_through_every_kind(tmp_path):
    for name in EXPECTED:
        space = load_space(SAVED / name)
        assert type(space) is space_kinds.get(space.kind)
        again = type(space).load(SAVED / name)
        assert again == space and again is not space


# ============================================================ declared capabilities
def test_capabilities_are_declared_by_each_kind():
    assert (HypothesisSpace.has_programs, HypothesisSpace.has_grammar, HypothesisSpace.has_pictures) == (True,) * 3
    assert (ExtensionSpace.has_programs, ExtensionSpace.has_grammar, ExtensionSpace.has_pictures) == (False,) * 3
    assert set(space_kinds.names()) >= {"program", "extension"}


def test_a_space_of_items_refuses_pictures_with_a_reason():
    space = load_space(SAVED / "pairs")
    with pytest.raises(SpaceCapabilityError, match="no pictures"):
        space.rendered_bank("image")


def test_render_bank_on_a_pair_space_is_one_line_and_exit_2(capsys):
    assert main(["render", str(SAVED / "pairs"), "--bank"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "no pictures" in err and "Traceback" not in err


# ============================================================ the index owns derived structures
def test_the_index_builds_each_structure_once_and_matches_a_direct_computation():
    space = load_space(SAVED / "program")
    assert isinstance(space.index, SpaceIndex) and space.index is space.index
    rows = space.scene_concepts()
    assert rows is space.scene_concepts()
    direct = np.zeros((space.n_scenes, space.n_concepts), bool)
    for i in range(space.n_concepts):
        direct[:, i] = space.signature(i)
    assert np.array_equal(bc.bits.unpack_bits(np.asarray(rows), space.n_concepts), direct)
    reps = space.class_representatives()
    assert all(space.synonyms(r)[0] == r for r in reps)
    ptr, idx = space.test_bank_index()
    for k, r in enumerate(reps):
        assert np.array_equal(idx[ptr[k]:ptr[k + 1]], np.flatnonzero(space.test_bank.labels(r)))
    pos = space.index.positives_in_test_bank()
    assert np.array_equal(pos, [space.test_bank.labels(i).sum() for i in range(space.n_concepts)])
    built = []
    first = space.index.derived("thing", lambda: built.append(1) or object())
    assert space.index.derived("thing", lambda: built.append(1) or object()) is first and built == [1]


def test_a_copy_with_more_split_specs_leaves_the_original_alone():
    space = load_space(SAVED / "pairs")
    more = space.with_spec_files({"extra.toml": "name = 'extra'\n"})
    assert "extra.toml" in more.spec_files and "extra.toml" not in space.spec_files
    assert more.path is None and space.path is not None


# ============================================================ no probing, no borrowing, no outside state
def _package_files():
    return sorted(p for p in PACKAGE.rglob("*.py"))


def _spacey(node) -> bool:
    """An expression that names a space: ``space``, ``self.space``, ``a_space``, ``space_b``..."""
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    return name == "space" or name.endswith("_space") or name.startswith("space_")


def test_no_module_outside_spaces_probes_a_space_or_sets_state_on_it():
    found = []
    for path in _package_files():
        if "spaces" in path.relative_to(PACKAGE).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            where = f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', '?')}"
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id in ("hasattr", "getattr", "setattr", "delattr")
                    and node.args and _spacey(node.args[0])):
                found.append(f"{where}: {node.func.id}({ast.unparse(node.args[0])}, ...)")
            targets = (node.targets if isinstance(node, ast.Assign)
                       else [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else [])
            for t in targets:
                if isinstance(t, ast.Attribute) and _spacey(t.value):
                    found.append(f"{where}: assigns {ast.unparse(t)}")
                if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Attribute) and _spacey(t.value.value):
                    found.append(f"{where}: assigns into {ast.unparse(t.value)}")
    assert not found, "\n".join(found)


def test_the_checker_above_would_catch_a_probe():
    bad = "def f(space):\n    if hasattr(space, 'rendered_bank'):\n        space._cache = 1\n"
    tree = ast.parse(bad)
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and _spacey(n.args[0])]
    sets = [n for n in ast.walk(tree) if isinstance(n, ast.Assign) and _spacey(n.targets[0].value)]
    assert calls and sets


def test_no_space_class_borrows_through_getattr():
    for cls in (ConceptSpace, HypothesisSpace, ExtensionSpace):
        assert "__getattr__" not in vars(cls), cls
    for path in (PACKAGE / "spaces").glob("*.py"):
        assert "__getattr__" not in path.read_text(), path


def test_curi_release_figures_resolve_in_a_fresh_process(tmp_path):
    """Results of CURI's release protocol record its prior and likelihood by name; a fresh
    process that never imported the protocols module rebuilds their oracles."""
    space = load_space(SAVED / "curi_release")
    proto = get_protocol("curi-release")
    ds = proto.compute_gap(space, ["concept_iid"], n_episodes=20, seed=0)
    bc.save_results(ds, tmp_path / "release.nc")
    code = ("import sys, tomllib\n"
            "import bayes_concepts as bc\n"
            "space = bc.load_space(sys.argv[1]); ds = bc.load_results(sys.argv[2])\n"
            "assert 'bayes_concepts.protocols' not in sys.modules\n"
            "split = bc.make_split(space, tomllib.loads(open(sys.argv[3]).read()))\n"
            "strong, weak = bc.plots.oracles_for(space, split, ds)\n"
            "print(weak.settings.prior, weak.settings.likelihood)\n")
    spec = bc.data_file(proto.splits_dir) / "concept_iid.toml"
    out = subprocess.run([sys.executable, "-c", code, str(SAVED / "curi_release"), str(tmp_path / "release.nc"),
                          str(spec)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["pcfg_release", "size_release"]


def test_a_manifest_laid_out_otherwise_is_refused(tmp_path):
    """The identity of a space is the sha256 of its manifest's bytes: the same content with a
    trailing carriage return would be a second identity for one space."""
    import shutil
    copy = tmp_path / "program"
    shutil.copytree(SAVED / "program", copy)
    mf = copy / "manifest.json"
    mf.write_bytes(mf.read_bytes() + b"\r")
    with pytest.raises(bc.spaces.SpaceError, match="not laid out"):
        load_space(copy, verify=False)
