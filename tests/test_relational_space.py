"""Spaces whose scenes carry relations (the ``clevr`` preset) keep their scenes' 3-D positions
and relations on disk, rebuild the scene bank from them, and draw their scenes where the
objects stand.

The small clevr space the test session shares (``clevr_space``, conftest.py: 3,000 scenes,
seed 0) is used: the assertions compare it with the bank its build stage makes, so they hold
for any such build.
"""
from __future__ import annotations

import dataclasses
import json
import shutil

import matplotlib.image
import numpy as np
import pytest

from bayes_concepts.engine import store
from bayes_concepts.engine.executor import evaluate_programs
from bayes_concepts.errors import SceneError
from bayes_concepts.lot.grammar import load_grammar
from bayes_concepts.resources import data_file
from bayes_concepts.scenes.camera import project_points
from bayes_concepts.scenes.render import object_masks, render_scene, render_scenes
from bayes_concepts.spaces import build, load_space
from bayes_concepts.spaces.hypothesis_space import POSITIONS_FILE, RELATIONS_FILE
from conftest import CLEVR_BUILD, assert_one_line_error, run

N_SCENES = CLEVR_BUILD["scenes"]


@pytest.fixture(scope="module")
def built(clevr_space):
    return clevr_space


@pytest.fixture(scope="module")
def bank(built):
    """The scene bank the build made (its scene stage run again with the build's seed)."""
    p = build.resolve_params("clevr", **CLEVR_BUILD)
    seed = np.random.SeedSequence(int(p["seed"])).generate_state(3, np.uint32)[1]
    bank, _ = build.scene_bank_stage(p, None, built.grammar, seed)
    assert np.array_equal(bank.codes, built.scene_codes)
    return bank


@pytest.fixture(scope="module")
def saved(clevr_space_dir):
    """The shared saved copy of ``built``: a test that changes files works on a copy (_copy)."""
    return clevr_space_dir


@pytest.fixture(scope="module")
def loaded(saved):
    return load_space(saved)


def _copy(saved, tmp_path):
    dst = tmp_path / "space"
    shutil.copytree(saved, dst)
    return dst


# ------------------------------------------------------------------ on disk
def test_a_relational_space_saves_positions_and_packed_relations(built, bank, saved):
    manifest = json.loads((saved / "manifest.json").read_text())
    for name in (POSITIONS_FILE, RELATIONS_FILE):
        assert manifest["files"][name]["bytes"] == (saved / name).stat().st_size
    positions = np.load(saved / POSITIONS_FILE, allow_pickle=False)
    relations = np.load(saved / RELATIONS_FILE, allow_pickle=False)
    S, R = built.scene_codes.shape[1], len(built.schema.relations)
    assert positions.dtype == np.float32 and positions.shape == (N_SCENES, S, 3)
    assert relations.dtype == np.uint8 and relations.shape == (N_SCENES, -(-R * S * S // 8))
    assert np.array_equal(positions, bank.positions, equal_nan=True)
    expected = np.packbits(bank.relations().reshape(N_SCENES, -1), axis=1, bitorder="little")
    assert np.array_equal(relations, expected)
    assert relations.any()


def test_positions_and_relations_round_trip_exactly(built, bank, loaded):
    assert loaded == built
    assert np.array_equal(loaded.scene_positions, built.scene_positions, equal_nan=True)
    assert np.array_equal(loaded.scene_relations, built.scene_relations)
    assert np.array_equal(loaded.relations(), bank.relations())
    assert np.array_equal(loaded.relations([5, 1, 5]), bank.relations()[[5, 1, 5]])
    assert np.array_equal(loaded.positions(slice(3, 9)), bank.positions[3:9], equal_nan=True)


def test_spaces_differing_only_in_positions_are_not_equal(built):
    moved = built.scene_positions.copy()
    moved[0, 0, 0] += 0.5
    assert dataclasses.replace(built, scene_positions=moved) != built
    assert dataclasses.replace(built) == built


def test_the_scene_bank_is_rebuilt_with_positions_and_relations(bank, loaded):
    rebuilt = loaded.scene_bank()
    assert np.array_equal(rebuilt.relations(), bank.relations())
    assert np.array_equal(rebuilt.relation_bits, bank.relation_bits)
    assert np.array_equal(rebuilt.positions, bank.positions, equal_nan=True)
    for j in (0, 1, 777, N_SCENES - 1):
        scene = loaded.scene(j)
        assert scene == bank.scene(j)
        assert all("3d_coords" in obj for obj in scene["objects"])
        assert set(scene["relationships"]) == set(loaded.schema.relations)


def test_the_executor_on_the_reloaded_bank_gives_the_saved_signatures(loaded):
    relational = [i for i, p in enumerate(loaded.programs)
                  if any(t in p.split() for t in ("left", "right", "front", "behind"))]
    ids = relational[:6] + relational[-3:] + [0, loaded.n_concepts - 1]
    assert len(relational) >= 9
    got = evaluate_programs([loaded.programs[i] for i in ids], loaded.scene_bank(), loaded.grammar)
    assert np.array_equal(got, np.asarray(loaded.signatures[ids]))


def test_a_space_without_relations_keeps_no_positions(small_space, small_space_dir):
    assert small_space.scene_positions is None and small_space.scene_relations is None
    assert small_space.positions() is None and small_space.relations() is None
    assert "3d_coords" not in small_space.scene(0)["objects"][0]
    manifest = json.loads((small_space_dir / "manifest.json").read_text())
    assert POSITIONS_FILE not in manifest["files"] and RELATIONS_FILE not in manifest["files"]
    assert not (small_space_dir / POSITIONS_FILE).exists() and not (small_space_dir / RELATIONS_FILE).exists()
    assert small_space.scene_bank().positions is None and small_space.scene_bank().relation_bits is None


# ------------------------------------------------------------------ damaged files
def _one_line(exc_info, *needles):
    msg = str(exc_info.value)
    assert "\n" not in msg, msg
    for needle in needles:
        assert needle in msg, (needle, msg)


@pytest.mark.parametrize("name", [POSITIONS_FILE, RELATIONS_FILE])
def test_a_corrupt_file_is_a_one_line_error_naming_it(saved, tmp_path, name):
    d = _copy(saved, tmp_path)
    data = bytearray((d / name).read_bytes())
    data[-7] ^= 0x10
    (d / name).write_bytes(bytes(data))
    with pytest.raises(store.SpaceError) as exc:
        load_space(d)
    _one_line(exc, name, "checksum mismatch")


@pytest.mark.parametrize("name", [POSITIONS_FILE, RELATIONS_FILE])
def test_a_missing_file_is_a_one_line_error_naming_it(saved, tmp_path, name):
    d = _copy(saved, tmp_path)
    (d / name).unlink()
    with pytest.raises(store.SpaceError) as exc:
        load_space(d)
    _one_line(exc, name, "missing")


def _rewrite_manifest(d, change):
    manifest = json.loads((d / "manifest.json").read_text())
    change(manifest)
    manifest["self_sha256"] = store._manifest_digest(manifest)
    (d / "manifest.json").write_bytes(store._manifest_bytes(manifest))


def test_a_manifest_without_the_relations_is_a_one_line_error(saved, tmp_path):
    d = _copy(saved, tmp_path)
    _rewrite_manifest(d, lambda m: m["files"].pop(RELATIONS_FILE))
    (d / RELATIONS_FILE).unlink()
    with pytest.raises(store.SpaceError) as exc:
        load_space(d)
    _one_line(exc, RELATIONS_FILE, "missing")


def test_relations_between_empty_slots_are_refused_naming_the_file(saved, tmp_path, loaded):
    d = _copy(saved, tmp_path)
    j = int(np.flatnonzero((loaded.scene_codes[:, :, 0] >= 0).sum(1) < loaded.scene_codes.shape[1])[0])
    rel = np.load(d / RELATIONS_FILE)
    S = loaded.scene_codes.shape[1]
    bits = np.unpackbits(rel[j], count=rel.shape[1] * 8, bitorder="little")
    bits[(S - 1) * S + (S - 2)] = 1  # left: slot S-1 of slot S-2, both empty in scene j
    rel[j] = np.packbits(bits, bitorder="little")
    np.save(d / RELATIONS_FILE, rel)
    with pytest.raises(store.SpaceError) as exc:
        load_space(d, verify=False)
    _one_line(exc, RELATIONS_FILE, f"scene {j}")


def test_an_object_without_a_position_is_refused_naming_the_file(saved, tmp_path):
    d = _copy(saved, tmp_path)
    pos = np.load(d / POSITIONS_FILE)
    pos[3, 0, 1] = np.nan
    np.save(d / POSITIONS_FILE, pos)
    with pytest.raises(store.SpaceError) as exc:
        load_space(d, verify=False)
    _one_line(exc, POSITIONS_FILE, "scene 3, slot 0")


def test_positions_in_a_space_without_relations_are_refused(small_space_dir, tmp_path):
    d = _copy(small_space_dir, tmp_path)
    n = json.loads((d / "manifest.json").read_text())["counts"]["scenes"]
    np.save(d / POSITIONS_FILE, np.zeros((n, 10, 3), np.float32))

    def add(m):
        m["files"][POSITIONS_FILE] = {"sha256": store._sha256_file(d / POSITIONS_FILE),
                                      "bytes": (d / POSITIONS_FILE).stat().st_size}
    _rewrite_manifest(d, add)
    with pytest.raises(store.SpaceError) as exc:
        load_space(d)
    _one_line(exc, POSITIONS_FILE, "no relations")


# ------------------------------------------------------------------ pictures
def test_scenes_are_drawn_where_their_objects_stand(loaded):
    schema = loaded.schema
    with pytest.raises(SceneError, match="positions"):
        render_scene(loaded.scene_codes[0], schema)
    a = render_scene(loaded.scene_codes[0], schema, loaded.positions([0])[0], height=40, width=60)
    b = render_scene(loaded.scene_codes[1], schema, loaded.positions([1])[0], height=40, width=60)
    assert a.shape == b.shape == (40, 60, 3) and a.dtype == np.uint8
    assert not np.array_equal(a, b)


def test_one_object_lands_at_its_projection_and_is_larger_when_nearer():
    schema = load_grammar(data_file("clevr.pcfg")).schema
    codes = np.full((2, schema.max_objects, schema.n_attributes), -1, np.int8)
    codes[:, 0] = 0                                   # a small gray rubber cube
    far_near = np.full((2, schema.max_objects, 3), np.nan, np.float32)
    far_near[0, 0] = (-2.5, 2.5, 0.35)                # away from the camera
    far_near[1, 0] = (2.5, -2.5, 0.35)                # close to it
    H, W = 96, 144
    _, masks = object_masks(codes, schema, positions=far_near, height=H, width=W)
    px, py, _ = project_points(far_near[:, 0].astype(np.float64), width=W, height=H)
    areas = []
    for i in range(2):
        rows, cols = np.nonzero(masks[i, 0])
        areas.append(len(rows))
        assert abs(cols.mean() + 0.5 - px[i]) < 2 and abs(rows.mean() + 0.5 - py[i]) < 3
    assert areas[1] > 2 * areas[0] > 0
    assert py[1] > py[0]                              # nearer: lower in the picture


def test_render_draws_a_scene_of_a_relational_space(saved, tmp_path, capsys, loaded):
    out = tmp_path / "scene.png"
    status, stdout, err = run(["render", saved, "3", "--out", out, "--height", "40", "--width", "60"], capsys)
    assert status == 0, err
    picture = (matplotlib.image.imread(out)[..., :3] * 255).round().astype(np.uint8)
    expected = render_scene(loaded.scene_codes[3], loaded.schema, loaded.positions([3])[0], height=40, width=60)
    assert np.array_equal(picture, expected)
    status, _, err = run(["render", saved, str(N_SCENES), "--out", tmp_path / "x.png"], capsys)
    assert_one_line_error(status, err, "out of range")


def test_the_rendered_bank_of_a_relational_space(saved, tmp_path):
    space = load_space(_copy(saved, tmp_path))
    pictures = space.rendered_bank("image", height=8, width=12, supersample=1)
    ids = [0, 1, N_SCENES - 1]
    expected = render_scenes(space.scene_codes[ids], space.schema, positions=space.positions(ids),
                             height=8, width=12, supersample=1)
    assert np.array_equal(pictures[ids], expected)
