"""Scenes that carry CLEVR's spatial relations: the rule, files, banks and sampling.

Orientation throughout: ``rel[i, r, a, b]`` = in scene i object a is ``names[r]`` of
object b = ``a in relationships[names[r]][b]`` (CLEVR's scene files).
"""
from __future__ import annotations

import dataclasses
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bayes_concepts.errors import SceneError
from bayes_concepts.scenes import (
    CLEVR_DIRECTIONS,
    CLEVR_RELATION_EPS,
    CLEVR_RELATIONS,
    CLEVR_SCHEMA,
    CURI_SCHEMA,
    SceneBank,
    SceneSchema,
    check_relational_scene,
    load_clevr_scenes,
    read_scenes_jsonl,
    relations_from_lists,
    relations_from_positions,
    relationships_lists,
    sample_clevr_scenes,
    sample_scenes,
    scenes_to_arrays,
    unpack_bits,
    validate_scene,
    write_scenes_jsonl,
)
from bayes_concepts.scenes.relations import relation_dot
from bayes_concepts.scenes.samplers import CLEVR_MARGIN, CLEVR_MIN_DIST, CLEVR_RADII
from bayes_concepts.scenes.schema import CURI_ATTRIBUTES

FIXTURES = Path(__file__).parent / "fixtures" / "clevr_relations"
REL_SCHEMA = CLEVR_SCHEMA.with_relations(CLEVR_RELATIONS)        # up to 10 objects
SMALL_REL_SCHEMA = CURI_SCHEMA.with_relations(CLEVR_RELATIONS)   # up to 5 objects


def slow_relations(positions, n_objects, directions, names, eps=CLEVR_RELATION_EPS):
    """The obvious twin of ``relations_from_positions``: CLEVR's double loop, in Python floats.

    For every object b and every other object a: a is ``name`` of b iff
    ``sum((pos_a[k] - pos_b[k]) * d[k] for k in 0, 1, 2) > eps``.
    """
    n, S = len(positions), len(positions[0])
    rel = np.zeros((n, len(names), S, S), dtype=bool)
    for i in range(n):
        for r, name in enumerate(names):
            d = [float(v) for v in directions[name]]
            for b in range(int(n_objects[i])):
                for a in range(int(n_objects[i])):
                    if a == b:
                        continue
                    diff = [float(positions[i][a][k]) - float(positions[i][b][k]) for k in range(3)]
                    rel[i, r, a, b] = sum(diff[k] * d[k] for k in range(3)) > eps
    return rel


# -- constants and schema ------------------------------------------------------------

def test_clevr_directions_are_unit_vectors_on_the_ground_plane_in_opposite_pairs():
    assert CLEVR_RELATIONS == ("left", "right", "front", "behind")
    assert set(CLEVR_DIRECTIONS) == set(CLEVR_RELATIONS)
    assert CLEVR_RELATION_EPS == 0.2
    for name, opposite in (("left", "right"), ("front", "behind")):
        assert np.array_equal(np.array(CLEVR_DIRECTIONS[name]), -np.array(CLEVR_DIRECTIONS[opposite]))
    for d in CLEVR_DIRECTIONS.values():
        assert d[2] == 0 and math.isclose(math.hypot(*d), 1.0, abs_tol=1e-6)
    left, behind = np.array(CLEVR_DIRECTIONS["left"]), np.array(CLEVR_DIRECTIONS["behind"])
    assert abs(left @ behind) < 1e-6
    # behind points away from the camera (Blender's default camera sits at x > 0, y < 0)
    assert behind @ np.array([7.36, -6.93, 0.0]) < 0
    with pytest.raises(TypeError):
        CLEVR_DIRECTIONS["left"] = (1.0, 0.0, 0.0)


def test_existing_schemas_are_unchanged_and_relations_make_a_different_schema():
    assert CURI_SCHEMA.relations == () and CLEVR_SCHEMA.relations == ()
    assert SceneSchema(CURI_ATTRIBUTES, max_objects=5) == CURI_SCHEMA
    assert hash(SceneSchema(CURI_ATTRIBUTES, max_objects=5)) == hash(CURI_SCHEMA)
    assert SceneSchema(CURI_ATTRIBUTES, max_objects=10) == CLEVR_SCHEMA
    assert REL_SCHEMA != CLEVR_SCHEMA and REL_SCHEMA.relations == CLEVR_RELATIONS
    assert REL_SCHEMA == CLEVR_SCHEMA.with_relations(list(CLEVR_RELATIONS))
    assert hash(REL_SCHEMA) == hash(CLEVR_SCHEMA.with_relations(CLEVR_RELATIONS))
    assert REL_SCHEMA.with_max_objects(5) == SMALL_REL_SCHEMA
    assert REL_SCHEMA.with_relations(()) == CLEVR_SCHEMA
    assert REL_SCHEMA.n_relations == 4 and CURI_SCHEMA.n_relations == 0
    assert dataclasses.replace(REL_SCHEMA).relations == CLEVR_RELATIONS
    for bad in ("left", ("left", "left"), ("left", ""), (3,)):
        with pytest.raises(ValueError):
            CURI_SCHEMA.with_relations(bad)


# -- the rule on hand-made files near eps ----------------------------------------------

def test_relations_computed_from_3d_coords_equal_the_hand_written_relationships():
    path = FIXTURES / "near_eps.json"
    raw = json.loads(path.read_text())["scenes"]
    scenes = load_clevr_scenes(path, REL_SCHEMA)
    codes, positions, relations = scenes_to_arrays(scenes, REL_SCHEMA)
    for i, scene in enumerate(raw):
        k = len(scene["objects"])
        coords = np.array([o["3d_coords"] for o in scene["objects"]])
        computed = relations_from_positions(coords[None], [k], CLEVR_DIRECTIONS, CLEVR_RELATIONS)[0]
        written = relations_from_lists(scene["relationships"], CLEVR_RELATIONS, k)
        assert np.array_equal(computed, written)
        assert relationships_lists(computed, CLEVR_RELATIONS, k) == scene["relationships"]
        assert np.array_equal(relations[i, :, :k, :k], written)
        assert np.array_equal(positions[i, :k], coords.astype(np.float32))
    # the files do test the threshold: pairs 0.19 and 0.21 apart, on both sides
    dots = {round(abs(relation_dot(positions[i], CLEVR_DIRECTIONS[r], a, b)), 5)
            for i in range(2) for r in CLEVR_RELATIONS for a in range(4) for b in range(4) if a != b}
    assert {0.19, 0.21} <= dots
    left, right, front, behind = (CLEVR_RELATIONS.index(r) for r in CLEVR_RELATIONS)
    assert relations[0, left, 1, 0] and not relations[0, right, 2, 0]      # 0.21 / 0.19
    assert not relations[0, behind, 3, 0] and relations[1, behind, 1, 0]   # 0.19 / 0.21
    assert relations[1, front, 2, 0] and not relations[1, front, 3, 2]     # 0.21 / 0.19


def test_loading_keeps_coords_directions_and_relationships_only_for_a_schema_with_relations():
    path = FIXTURES / "near_eps.json"
    raw = json.loads(path.read_text())["scenes"]
    kept = load_clevr_scenes(path, REL_SCHEMA)
    assert kept[0]["relationships"] == raw[0]["relationships"]
    assert kept[0]["directions"] == raw[0]["directions"]
    assert [o["3d_coords"] for o in kept[1]["objects"]] == [o["3d_coords"] for o in raw[1]["objects"]]
    plain = load_clevr_scenes(path)
    assert "relationships" not in plain[0] and "directions" not in plain[0]
    assert all(set(o) == set(CLEVR_SCHEMA.names) for o in plain[0]["objects"])
    bank = SceneBank.from_scenes(kept, REL_SCHEMA)
    assert bank.scene(1)["relationships"] == raw[1]["relationships"]


@pytest.mark.parametrize("name, expected", [
    ("wrong_extra.json", "scenes[1]: relationships.right[0]: lists object 2 as right of object 0, "
                         "but by their 3d_coords it is not (dot = 0.19, eps 0.2)"),
    ("wrong_missing.json", "scenes[0]: relationships.left[0]: does not list object 1 as left of "
                           "object 0, but by their 3d_coords it is (dot = 0.21, eps 0.2)"),
])
def test_a_file_whose_relationships_disagree_with_its_coords_is_refused_in_one_line(name, expected):
    path = FIXTURES / name
    with pytest.raises(SceneError) as info:
        load_clevr_scenes(path, REL_SCHEMA)
    assert str(info.value) == f"{path} {expected}"
    assert "\n" not in str(info.value)


# -- fast vs slow -----------------------------------------------------------------------

GRID = st.integers(-60, 60).map(lambda k: k * 0.05)  # differences land on and near 0.2


@st.composite
def position_sets(draw):
    n = draw(st.integers(1, 4))
    S = draw(st.integers(1, 6))
    coord = st.one_of(GRID, st.floats(-3, 3, allow_nan=False))
    positions = np.array(draw(st.lists(st.lists(st.tuples(coord, coord, coord), min_size=S, max_size=S),
                                       min_size=n, max_size=n)), dtype=np.float64)
    n_objects = np.array(draw(st.lists(st.integers(0, S), min_size=n, max_size=n)))
    return positions, n_objects


@st.composite
def direction_sets(draw):
    if draw(st.booleans()):
        return dict(CLEVR_DIRECTIONS)
    out = {}
    for name in CLEVR_RELATIONS:
        angle = draw(st.floats(0, 2 * math.pi))
        out[name] = (math.cos(angle), math.sin(angle), draw(st.sampled_from([0.0, 0.5, -1.0])))
    return out


@settings(max_examples=200, deadline=None)
@given(position_sets(), direction_sets(), st.sampled_from([CLEVR_RELATION_EPS, 0.0, -0.5, 0.35]))
def test_relations_from_positions_equals_its_slow_twin(data, directions, eps):
    positions, n_objects = data
    names = CLEVR_RELATIONS
    fast = relations_from_positions(positions, n_objects, directions, names, eps)
    assert fast.shape == (len(positions), 4) + positions.shape[1:2] * 2 and fast.dtype == bool
    assert np.array_equal(fast, slow_relations(positions, n_objects, directions, names, eps))
    as_rows = np.array([directions[r] for r in names])
    assert np.array_equal(fast, relations_from_positions(positions, n_objects, as_rows, names, eps))
    # empty slots hold anything
    holes = positions.copy()
    holes[np.arange(positions.shape[1])[None, :] >= n_objects[:, None]] = np.nan
    assert np.array_equal(fast, relations_from_positions(holes, n_objects, directions, names, eps))
    for i in range(len(positions)):
        k = int(n_objects[i])
        lists = relationships_lists(fast[i], names, k)
        assert all(lists[r][b] == sorted(lists[r][b]) for r in names for b in range(k))
        back = relations_from_lists(lists, names, k, positions.shape[1])
        assert np.array_equal(back, fast[i])


def test_relations_follow_the_scene_s_own_directions():
    positions = np.array([[[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]]])
    east = {"left": (1.0, 0.0, 0.0), "right": (-1.0, 0.0, 0.0),
            "front": (0.0, -1.0, 0.0), "behind": (0.0, 1.0, 0.0)}
    rel = relations_from_positions(positions, [2], east, CLEVR_RELATIONS)[0]
    assert relationships_lists(rel, CLEVR_RELATIONS, 2) == {
        "left": [[1], []], "right": [[], [0]], "front": [[], []], "behind": [[], []]}
    per_scene = np.array([[east[r] for r in CLEVR_RELATIONS]])
    assert np.array_equal(relations_from_positions(positions, [2], per_scene, CLEVR_RELATIONS)[0], rel)
    scene = {"objects": [dict(_obj(), **{"3d_coords": list(p)}) for p in positions[0]],
             "directions": {r: list(v) for r, v in east.items()}}
    assert np.array_equal(check_relational_scene(scene, SMALL_REL_SCHEMA)[2], rel)


@pytest.mark.parametrize("relationships, message", [
    ({"left": [[], []], "right": [[], []], "front": [[], []]}, "relationships: missing relation 'behind'"),
    ({"left": [[]], "right": [[], []], "front": [[], []], "behind": [[], []]},
     "relationships.left: expected one list per object (2), got 1 lists"),
    ({"left": [[0], []], "right": [[], []], "front": [[], []], "behind": [[], []]},
     "relationships.left[0]: object 0 cannot be related to itself"),
    ({"left": [[2], []], "right": [[], []], "front": [[], []], "behind": [[], []]},
     "relationships.left[0]: expected object indices in 0..1, got 2"),
    ({"left": [[1, 1], []], "right": [[], []], "front": [[], []], "behind": [[], []]},
     "relationships.left[0]: object 1 listed twice"),
    ({"left": [[True], []], "right": [[], []], "front": [[], []], "behind": [[], []]},
     "relationships.left[0]: expected object indices in 0..1, got true"),
    ([], "relationships: expected a JSON object, got array"),
])
def test_bad_relationships_are_named(relationships, message):
    with pytest.raises(SceneError, match="^" + re.escape("scene 3: " + message) + "$"):
        relations_from_lists(relationships, CLEVR_RELATIONS, 2, where="scene 3")


# -- scene dicts and JSON Lines --------------------------------------------------------

def _obj(**kw):
    base = {"color": "red", "shape": "cube", "material": "metal", "size": "small", "x": 3, "y": 5}
    return {**base, **kw}


def test_scene_dicts_with_relations_need_coords_or_relationships():
    lists = {"left": [[1], []], "right": [[], [0]], "front": [[], []], "behind": [[], []]}
    codes, positions, rel = check_relational_scene({"objects": [_obj(), _obj()], "relationships": lists},
                                                   SMALL_REL_SCHEMA, "s")
    assert positions is None and codes.shape == (2, 6)
    assert relationships_lists(rel, CLEVR_RELATIONS, 2) == lists
    cases = [
        ({"objects": [_obj(), _obj()]},
         "s: a scene with relations needs the objects' '3d_coords' or 'relationships'"),
        ({"objects": [_obj(**{"3d_coords": [0, 0, 0]}), _obj()]},
         "s: objects[1]: missing key '3d_coords' (other objects of the scene have one)"),
        ({"objects": [_obj(**{"3d_coords": [0, 0]}), _obj(**{"3d_coords": [1, 1, 1]})]},
         "s: objects[0].3d_coords: expected [x, y, z] with finite numbers, got a JSON array"),
        ({"objects": [_obj(), _obj()], "relationships": lists, "directions": dict(CLEVR_DIRECTIONS)},
         "s: directions: given, but the objects have no '3d_coords'"),
        ({"objects": [_obj(**{"3d_coords": [0, 0, 0]})], "directions": {"left": [1, 0, 0]}},
         "s: directions: missing direction 'right'"),
        ({"objects": [_obj(colour="red")], "relationships": lists},
         "s: objects[0]: unknown key 'colour' (expected color, shape, material, size, x, y)"),
    ]
    for scene, message in cases:
        with pytest.raises(SceneError, match="^" + re.escape(message) + "$"):
            check_relational_scene(scene, SMALL_REL_SCHEMA, "s")
    # without relations in the schema, 3d_coords stays an unknown key (as before)
    with pytest.raises(SceneError, match="unknown key '3d_coords'"):
        validate_scene({"objects": [_obj(**{"3d_coords": [0, 0, 0]})]}, CURI_SCHEMA)


def test_jsonl_round_trip_of_scenes_with_coords_directions_and_relationships(tmp_path):
    scenes = load_clevr_scenes(FIXTURES / "near_eps.json", REL_SCHEMA)
    sampled = SceneBank.sample(30, "clevr", REL_SCHEMA, seed=4).scenes()
    path = tmp_path / "rel.jsonl"
    write_scenes_jsonl(path, scenes + sampled, schema=REL_SCHEMA)
    back = read_scenes_jsonl(path, REL_SCHEMA)
    assert back == scenes + sampled
    assert "3d_coords" in back[0]["objects"][0] and "directions" in back[0]
    bank = SceneBank.from_scenes(back[2:], REL_SCHEMA)
    original = SceneBank.sample(30, "clevr", REL_SCHEMA, seed=4)
    assert np.array_equal(bank.codes, original.codes)
    assert np.array_equal(bank.positions, original.positions, equal_nan=True)
    assert np.array_equal(bank.relation_bits, original.relation_bits)


def test_jsonl_with_a_wrong_relationship_is_refused_naming_the_line(tmp_path):
    scene = load_clevr_scenes(FIXTURES / "near_eps.json", REL_SCHEMA)[0]
    scene["relationships"]["behind"][0] = [1, 3]  # object 3 is only 0.19 behind object 0
    path = tmp_path / "bad.jsonl"
    path.write_text("\n" + json.dumps(scene) + "\n")
    with pytest.raises(SceneError) as info:
        read_scenes_jsonl(path, REL_SCHEMA)
    assert str(info.value) == (f"{path} line 2: relationships.behind[0]: lists object 3 as behind of "
                               "object 0, but by their 3d_coords it is not (dot = 0.19, eps 0.2)")
    with pytest.raises(SceneError, match=r"^scene 0: relationships\.behind\[0\]: lists object 3"):
        write_scenes_jsonl(tmp_path / "out.jsonl", [scene], schema=REL_SCHEMA)
    assert not (tmp_path / "out.jsonl").exists()


# -- banks ------------------------------------------------------------------------------

def test_bank_relation_bits_are_the_packed_relations():
    bank = SceneBank.sample(300, "clevr", REL_SCHEMA, seed=11)
    n, S = bank.n_scenes, bank.n_slots
    assert bank.relation_names == CLEVR_RELATIONS
    assert bank.relation_bits.shape == (4, S, S, bank.n_words) and bank.relation_bits.dtype == np.uint64
    assert bank.positions.shape == (n, S, 3) and bank.positions.dtype == np.float32
    empty = bank.codes[:, :, 0] < 0
    assert np.isnan(bank.positions[empty]).all() and np.isfinite(bank.positions[~empty]).all()
    unpacked = np.moveaxis(unpack_bits(bank.relation_bits, n), -1, 0)
    expected = relations_from_positions(bank.positions, bank.n_objects, CLEVR_DIRECTIONS, CLEVR_RELATIONS)
    assert np.array_equal(unpacked, expected)
    assert np.array_equal(bank.relations(), expected)
    assert expected.any()
    tail = n % 64  # padding bits beyond the last scene are 0
    assert not (bank.relation_bits[..., -1] >> np.uint64(tail)).any()
    for j in (0, 57, 64, n - 1, -1):
        scene = bank.scene(j)
        k = int(bank.n_objects[j])
        assert scene["relationships"] == relationships_lists(expected[j], CLEVR_RELATIONS, k)
        assert [o["3d_coords"] for o in scene["objects"]] == bank.positions[j, :k].tolist()
    for flag in (bank.positions.flags.writeable, bank.relation_bits.flags.writeable):
        assert not flag


def test_bank_subset_keeps_positions_and_relations():
    bank = SceneBank.sample(130, "clevr", REL_SCHEMA, seed=2)
    idx = [129, 3, 3, 64, 0]
    sub = bank.subset(idx)
    assert np.array_equal(sub.relations(), bank.relations()[idx])
    assert np.array_equal(sub.positions, bank.positions[idx], equal_nan=True)
    mask = np.arange(130) % 3 == 0
    assert np.array_equal(bank.subset(mask).relations(), bank.relations()[mask])
    empty = bank.subset([])
    assert empty.relation_bits.shape == (4, 10, 10, 0) and empty.positions.shape == (0, 10, 3)


def test_bank_from_explicit_relations_and_its_errors():
    codes, positions = sample_clevr_scenes(20, SMALL_REL_SCHEMA, seed=5)
    computed = SceneBank(codes, SMALL_REL_SCHEMA, positions=positions)
    given = SceneBank(codes, SMALL_REL_SCHEMA, relations=computed.relations())
    assert given.positions is None
    assert np.array_equal(given.relation_bits, computed.relation_bits)
    few = computed.n_objects <= 4  # relations of fewer slots are padded
    assert few.any()
    narrow = SceneBank(codes[few][:, :4], SMALL_REL_SCHEMA, relations=computed.relations()[few][:, :, :4, :4])
    assert np.array_equal(narrow.relation_bits, computed.subset(few).relation_bits)
    with pytest.raises(SceneError, match="^the schema's scenes carry relations .left, right, front, "
                                         "behind.: give the objects' positions or the relations$"):
        SceneBank(codes, SMALL_REL_SCHEMA)
    with pytest.raises(SceneError, match="^relations given, but the schema declares no relations$"):
        SceneBank(codes, CURI_SCHEMA, relations=computed.relations())
    bad = computed.relations().copy()
    bad[0, 1, 0, 0] = True
    with pytest.raises(SceneError, match=r"^relations\[0, 1, 0, 0\]: right of slots 0 and 0 set"):
        SceneBank(codes, SMALL_REL_SCHEMA, relations=bad)
    with pytest.raises(SceneError, match="^relations: expected shape"):
        SceneBank(codes, SMALL_REL_SCHEMA, relations=bad[:, :2])
    with pytest.raises(SceneError, match="^the 'uniform' sampler gives no positions"):
        SceneBank.sample(5, "uniform", SMALL_REL_SCHEMA)
    holes = positions.copy()
    holes[0, 0] = np.nan
    with pytest.raises(SceneError, match=r"^positions\[0, 0\]: the object's position is not finite$"):
        SceneBank(codes, SMALL_REL_SCHEMA, positions=holes)
    other = SMALL_REL_SCHEMA.with_relations(("left", "near"))
    with pytest.raises(SceneError, match="^no direction is known for relation 'near'"):
        SceneBank(codes, other, positions=positions)


def test_banks_without_relations_are_as_before():
    codes, positions = sample_clevr_scenes(100, CURI_SCHEMA, seed=8)
    assert np.array_equal(codes, sample_scenes(100, "clevr", CURI_SCHEMA, seed=8))
    plain = SceneBank(codes, CURI_SCHEMA)
    assert plain.positions is None and plain.relation_bits is None and plain.relation_names == ()
    with_positions = SceneBank(codes, CURI_SCHEMA, positions=positions)
    for name in ("codes", "n_objects", "value_offset", "bits", "present"):
        assert np.array_equal(getattr(plain, name), getattr(with_positions, name))
    assert set(plain.scene(0)["objects"][0]) == set(CURI_SCHEMA.names)
    assert plain.relations().shape == (100, 0, 5, 5)
    sampled = SceneBank.sample(100, "clevr", CURI_SCHEMA, seed=8)
    assert np.array_equal(sampled.bits, plain.bits) and sampled.positions is None


# -- sampling ---------------------------------------------------------------------------

def test_sampling_a_schema_with_relations_follows_clevr_s_placement_rules():
    codes, positions = sample_clevr_scenes(400, REL_SCHEMA, seed=3)
    again = sample_clevr_scenes(400, REL_SCHEMA, seed=3)
    assert np.array_equal(codes, again[0]) and np.array_equal(positions, again[1], equal_nan=True)
    assert np.array_equal(codes, sample_scenes(400, "clevr", REL_SCHEMA, seed=3))
    assert not np.array_equal(codes, sample_clevr_scenes(400, REL_SCHEMA, seed=4)[0])
    bank = SceneBank.sample(400, "clevr", REL_SCHEMA, seed=3)
    assert np.array_equal(bank.codes, codes) and np.array_equal(bank.positions, positions, equal_nan=True)
    k = bank.n_objects
    assert k.min() == REL_SCHEMA.sample_min_objects and k.max() == 10
    xy = positions[:, :, :2].astype(np.float64)
    present = k[:, None] > np.arange(10)
    pair = present[:, :, None] & present[:, None, :] & ~np.eye(10, dtype=bool)
    diff = xy[:, :, None, :] - xy[:, None, :, :]
    size = REL_SCHEMA.attribute_index("size")
    radius = np.array([CLEVR_RADII[v] for v in REL_SCHEMA.attribute("size").values])[codes[:, :, size]]
    gap = np.hypot(diff[..., 0], diff[..., 1]) - radius[:, :, None] - radius[:, None, :]
    assert (gap[pair] >= CLEVR_MIN_DIST - 1e-5).all()
    assert np.array_equal(positions[:, :, 2][present], radius[present].astype(np.float32))  # z = radius
    for name in ("left", "behind"):  # the margin rule: at least 0.4 apart along each direction
        along = np.abs(diff @ np.array(CLEVR_DIRECTIONS[name][:2]))
        assert (along[pair] >= CLEVR_MARGIN - 1e-5).all()
    # so every pair of objects is ordered both ways: left xor right, front xor behind
    rel = bank.relations()
    left, right, front, behind = (rel[:, CLEVR_RELATIONS.index(r)] for r in CLEVR_RELATIONS)
    assert np.array_equal(left ^ right, pair) and np.array_equal(front ^ behind, pair)
    assert np.array_equal(left, np.swapaxes(right, 1, 2))
    assert np.array_equal(front, np.swapaxes(behind, 1, 2))


def test_a_schema_with_relations_needs_no_location_attributes():
    no_bins = SceneSchema(tuple(a for a in CURI_ATTRIBUTES if a.name not in ("x", "y")),
                          max_objects=10, relations=CLEVR_RELATIONS)
    bank = SceneBank.sample(200, "clevr", no_bins, seed=1)
    with_bins = SceneBank.sample(200, "clevr", REL_SCHEMA, seed=1)
    kept = [REL_SCHEMA.attribute_index(a) for a in no_bins.names]
    assert np.array_equal(bank.codes, with_bins.codes[:, :, kept])   # same draws, minus the bins
    assert np.array_equal(bank.relation_bits, with_bins.relation_bits)
    scenes = load_clevr_scenes(FIXTURES / "near_eps.json", no_bins)
    assert set(scenes[0]["objects"][0]) == set(no_bins.names) | {"3d_coords"}
    assert SceneBank.from_scenes(scenes, no_bins).scene(0)["relationships"] == scenes[0]["relationships"]
    with pytest.raises(SceneError, match="has no attribute 'x' or 'y'"):
        sample_scenes(3, "clevr", no_bins.with_relations(()))
