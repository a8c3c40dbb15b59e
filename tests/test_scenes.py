"""Tests of bayes_concepts.scenes: codes, samplers, file formats, scene banks."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bayes_concepts.errors import SceneError
from bayes_concepts.scenes import (
    CLEVR_SCHEMA,
    CURI_SCHEMA,
    SceneBank,
    check_codes,
    codes_to_scene,
    load_clevr_scenes,
    n_objects_of,
    pack_bits,
    pixels_to_bins,
    project_points,
    read_scenes_jsonl,
    sample_clevr_positions,
    sample_scenes,
    scenes_to_codes,
    unpack_bits,
    validate_scene,
    write_scenes_jsonl,
)

COLORS = "gray, red, blue, green, brown, purple, cyan, yellow"


def obj(color="red", shape="cube", material="metal", size="large", x=3, y=5):
    return {"color": color, "shape": shape, "material": material, "size": size,
            "x": x, "y": y}


def objects_strategy(schema):
    return st.fixed_dictionaries({a.name: st.sampled_from(a.values)
                                  for a in schema.attributes})


def scene_strategy(schema, max_objects=None):
    return st.lists(objects_strategy(schema), min_size=schema.min_objects,
                    max_size=max_objects or schema.max_objects).map(lambda o: {"objects": o})


def random_codes(n, schema, seed):
    """Random valid codes built independently of the samplers."""
    rng = np.random.default_rng(seed)
    S, A = schema.max_objects, schema.n_attributes
    codes = np.full((n, S, A), -1, dtype=np.int8)
    k = rng.integers(schema.min_objects, S + 1, size=n)
    for a, attr in enumerate(schema.attributes):
        vals = rng.integers(0, attr.n_values, size=(n, S))
        codes[:, :, a] = np.where(np.arange(S)[None] < k[:, None], vals, -1)
    return codes


def bit(words, j):
    """Bit of scene j in packed words (..., n_words), read naively."""
    return (words[..., j // 64] >> np.uint64(j % 64)) & np.uint64(1)


# --------------------------------------------------------------------------
# pack_bits / unpack_bits
# --------------------------------------------------------------------------

def test_pack_bits_layout():
    mask = np.zeros((2, 130), dtype=bool)
    mask[0, 0] = True
    mask[0, 65] = True
    mask[1, 129] = True
    mask[1, 63] = True
    words = pack_bits(mask)
    assert words.dtype == np.uint64 and words.shape == (2, 3)
    assert words[0].tolist() == [1, 2, 0]
    assert words[1].tolist() == [1 << 63, 0, 2]


@settings(max_examples=60, deadline=None)
@given(n=st.integers(0, 300), rows=st.integers(1, 4), seed=st.integers(0, 2**32 - 1))
def test_pack_unpack_roundtrip(n, rows, seed):
    mask = np.random.default_rng(seed).random((rows, n)) < 0.3
    words = pack_bits(mask)
    assert words.shape == (rows, (n + 63) // 64)
    # naive reference: sum of 2**j for set bits
    for r in range(rows):
        for w in range(words.shape[1]):
            expect = sum(1 << j for j in range(64) if 64 * w + j < n and mask[r, 64 * w + j])
            assert int(words[r, w]) == expect
    assert np.array_equal(unpack_bits(words, n), mask)
    # 1-d input works too
    assert np.array_equal(unpack_bits(pack_bits(mask[0]), n), mask[0])


def test_unpack_bits_rejects_wrong_word_count():
    with pytest.raises(ValueError, match="words"):
        unpack_bits(np.zeros((1, 2), dtype=np.uint64), 10)
    with pytest.raises(ValueError, match="uint64"):
        unpack_bits(np.zeros((1, 1), dtype=np.int64), 10)


# --------------------------------------------------------------------------
# codes and round-trips
# --------------------------------------------------------------------------

@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(scene_strategy(CURI_SCHEMA), min_size=0, max_size=70))
def test_roundtrip_scenes_codes_bank(scenes):
    codes, n_objects = scenes_to_codes(scenes, CURI_SCHEMA)
    assert codes.dtype == np.int8 and codes.shape == (len(scenes), 5, 6)
    assert n_objects.dtype == np.int8
    assert n_objects.tolist() == [len(s["objects"]) for s in scenes]
    assert np.array_equal(n_objects_of(codes), n_objects)
    bank = SceneBank.from_codes(codes, CURI_SCHEMA)
    assert len(bank) == len(scenes)
    for j, scene in enumerate(scenes):
        assert codes_to_scene(codes[j], CURI_SCHEMA) == scene
        assert bank.scene(j) == scene
    bank2 = SceneBank.from_scenes(scenes, CURI_SCHEMA)
    assert np.array_equal(bank2.bits, bank.bits)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(scene_strategy(CLEVR_SCHEMA), min_size=1, max_size=150))
def test_bank_bits_equal_naive_check(scenes):
    schema = CLEVR_SCHEMA
    bank = SceneBank.from_scenes(scenes, schema)
    n = len(scenes)
    assert bank.n_slots == 10 and bank.n_words == (n + 63) // 64
    assert bank.bits.shape == (31, 10, bank.n_words) and bank.bits.dtype == np.uint64
    assert bank.present.shape == (10, bank.n_words)
    for j, scene in enumerate(scenes):
        expect = np.zeros((bank.n_value_rows, bank.n_slots), dtype=np.uint64)
        for s, o in enumerate(scene["objects"]):
            for a, attr in enumerate(schema.attributes):
                expect[bank.value_offset[a] + attr.values.index(o[attr.name]), s] = 1
        assert np.array_equal(bit(bank.bits, j), expect), j
        present = [1] * len(scene["objects"]) + [0] * (10 - len(scene["objects"]))
        assert bit(bank.present, j).tolist() == present
    # padding bits beyond n_scenes are zero
    for j in range(n, 64 * bank.n_words):
        assert not bit(bank.bits, j).any() and not bit(bank.present, j).any()


def test_value_offset_and_row():
    bank = SceneBank.sample(100, "uniform", CURI_SCHEMA, seed=3)
    assert bank.value_offset.tolist() == [0, 8, 11, 13, 15, 23]
    assert bank.n_value_rows == 31
    assert bank.row("color", "red") == 1
    assert bank.row("y", 1) == 23
    assert bank.row("size", "large") == 14
    with pytest.raises(SceneError, match="unknown value 'pink'"):
        bank.row("color", "pink")
    # row semantics on real data: a scene has a red object in slot 0 iff the bit is set
    red0 = unpack_bits(bank.bits[bank.row("color", "red"), 0], 100)
    assert np.array_equal(red0, bank.codes[:, 0, 0] == 1)
    with pytest.raises(ValueError):
        bank.codes[0, 0, 0] = 2  # read-only


def test_padding_bits_zero_on_sampled_bank():
    bank = SceneBank.sample(1000, "clevr", CURI_SCHEMA, seed=1)  # 1000 = 15*64 + 40
    last = bank.bits[..., -1]
    assert not (last >> np.uint64(40)).any()
    assert not (bank.present[:, -1] >> np.uint64(40)).any()
    # every scene has exactly one value per attribute in each occupied slot
    counts = unpack_bits(bank.bits, 1000).sum(axis=0)  # (n_slots, n_scenes)
    occupied = unpack_bits(bank.present, 1000)
    assert np.array_equal(counts, occupied * CURI_SCHEMA.n_attributes)


def test_subset():
    bank = SceneBank.sample(300, "clevr", CURI_SCHEMA, seed=5)
    idx = [299, 0, 64, 64, 130]
    sub = bank.subset(idx)
    assert len(sub) == 5
    assert [sub.scene(i) for i in range(5)] == [bank.scene(i) for i in idx]
    full = unpack_bits(bank.bits, 300)
    assert np.array_equal(unpack_bits(sub.bits, 5), full[:, :, idx])
    mask = np.zeros(300, dtype=bool)
    mask[[3, 200]] = True
    assert np.array_equal(bank.subset(mask).codes, bank.codes[[3, 200]])
    assert len(bank.subset([])) == 0 and bank.subset([]).bits.shape == (31, 5, 0)
    with pytest.raises(IndexError):
        bank.scene(300)


def test_check_codes_errors():
    good = random_codes(4, CURI_SCHEMA, 0)
    good[1, 2:] = -1
    codes, n = check_codes(good[:, :4], CURI_SCHEMA)  # fewer slots are padded
    assert codes.shape == (4, 5, 6) and (codes[:, 4] == -1).all()
    bad = good.copy()
    bad[1, 3] = good[0, 0]  # object after an empty slot
    with pytest.raises(SceneError, match=r"codes\[1, 3\]: object after an empty slot"):
        SceneBank.from_codes(bad, CURI_SCHEMA)
    bad = good.copy()
    bad[2, 0, 1] = -1
    with pytest.raises(SceneError, match=r"codes\[2, 0\]: slot partly empty"):
        SceneBank.from_codes(bad, CURI_SCHEMA)
    bad = good.copy()
    bad[0, 0, 2] = 2  # material has 2 values
    with pytest.raises(SceneError, match=r"codes\[0, 0, 2\]: material code 2 out of range"):
        SceneBank.from_codes(bad, CURI_SCHEMA)
    with pytest.raises(SceneError, match="at most 5"):
        SceneBank.from_codes(random_codes(3, CLEVR_SCHEMA, 0), CURI_SCHEMA)
    empty = good.copy()
    empty[3] = -1
    with pytest.raises(SceneError, match=r"codes\[3\]: has 0 objects"):
        SceneBank.from_codes(empty, CURI_SCHEMA)


# --------------------------------------------------------------------------
# samplers
# --------------------------------------------------------------------------

@pytest.mark.parametrize("sampler", ["clevr", "uniform"])
@pytest.mark.parametrize("schema", [CURI_SCHEMA, CLEVR_SCHEMA])
def test_sampler_ranges_and_determinism(sampler, schema):
    n = 3000 if schema is CURI_SCHEMA else 300
    codes = sample_scenes(n, sampler, schema, seed=7)
    assert codes.dtype == np.int8 and codes.shape == (n, schema.max_objects, 6)
    k = n_objects_of(codes)
    assert k.min() == schema.sample_min_objects and k.max() == schema.max_objects
    occupied = np.arange(schema.max_objects)[None] < k[:, None]
    assert ((codes >= 0) == occupied[:, :, None]).all()  # slots 0..k-1, -1 elsewhere
    for a, attr in enumerate(schema.attributes):
        vals = codes[:, :, a][occupied]
        assert vals.min() >= 0 and vals.max() < attr.n_values
        if attr.name not in ("x", "y") or sampler == "uniform":
            assert len(np.unique(vals)) == attr.n_values  # every value occurs
    check_codes(codes, schema)
    assert np.array_equal(codes, sample_scenes(n, sampler, schema, seed=7))
    assert not np.array_equal(codes, sample_scenes(n, sampler, schema, seed=8))
    ss = np.random.SeedSequence(7)
    assert np.array_equal(sample_scenes(50, sampler, schema, seed=ss),
                          sample_scenes(50, sampler, schema, seed=np.random.SeedSequence(7)))


def test_sampler_counts_uniform_and_args():
    k = n_objects_of(sample_scenes(20000, "uniform", CURI_SCHEMA, seed=0))
    freq = np.bincount(k, minlength=6)[2:] / k.size
    assert np.allclose(freq, 0.25, atol=0.02)
    assert sample_scenes(0, "clevr").shape == (0, 5, 6)
    with pytest.raises(ValueError, match="unknown sampler"):
        sample_scenes(3, "gauss")
    with pytest.raises(ValueError):
        sample_scenes(-1)


def test_clevr_y_histogram_is_centre_biased():
    def hist(codes, a):
        v = codes[:, :, a]
        v = v[v >= 0]
        return np.bincount(v, minlength=8) / v.size

    clevr = sample_scenes(20000, "clevr", CURI_SCHEMA, seed=11)
    uniform = sample_scenes(20000, "uniform", CURI_SCHEMA, seed=11)
    hy = hist(clevr, 5)
    # the ground plane is seen obliquely: objects are in the middle rows of the image
    assert hy[2:5].sum() > 0.8          # y bins 3..5
    assert hy[0] < 0.01 and hy[7] < 0.01  # top and bottom rows (almost) never
    assert np.argmax(hy) in (2, 3, 4)
    assert hist(uniform, 5)[2:5].sum() < 0.45
    hx = hist(clevr, 4)
    assert hx[3] + hx[4] > 0.4 and hx[0] < 0.03 and hx[7] < 0.03


def test_clevr_positions_respect_min_distance():
    rng = np.random.default_rng(0)
    radii = np.where(rng.random((2000, 5)) < 0.5, 0.35, 0.7)
    k = rng.integers(2, 6, size=2000)
    xy = sample_clevr_positions(radii, k, seed=1)
    gaps = []
    for i in range(2000):
        p = xy[i, :k[i]]
        assert (np.abs(p) <= 3).all()
        assert np.isnan(xy[i, k[i]:]).all()
        d = (np.sqrt(((p[:, None] - p[None]) ** 2).sum(-1))
             - radii[i, :k[i], None] - radii[i, None, :k[i]])
        gaps.append(d[np.triu_indices(k[i], 1)])
    gaps = np.concatenate(gaps)
    assert gaps.min() >= 0.25
    assert gaps.min() < 0.27  # the rule is active: some pairs come close to the limit
    assert np.array_equal(xy, sample_clevr_positions(radii, k, seed=1), equal_nan=True)
    with pytest.raises(SceneError, match="could not place"):
        sample_clevr_positions(np.full((1, 40), 0.7), np.array([40]))


def test_camera_and_binning():
    px, py, depth = project_points(np.array([[0.0, 0.0, 0.0], [3.0, -3.0, 0.35],
                                             [-3.0, 3.0, 0.35]]))
    assert np.allclose([px[0], py[0]], [240, 160])  # camera looks at the origin
    assert py[1] > 160 > py[2]  # the near corner is low in the image, the far one high
    assert depth[1] < depth[0] < depth[2]
    bx, by = pixels_to_bins([0, 59.9, 60, 479.9, 480, -5], [0, 39.9, 40, 319.9, 320, 1000])
    assert bx.tolist() == [1, 1, 2, 8, 8, 1]
    assert by.tolist() == [1, 1, 2, 8, 8, 8]


# --------------------------------------------------------------------------
# JSON Lines io
# --------------------------------------------------------------------------

def write_lines(path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


GOOD = json.dumps({"objects": [obj(), obj("blue", "sphere", "rubber", "small", 1, 8)]})


@pytest.mark.parametrize("bad_line, expected", [
    (json.dumps({"objects": [obj(), obj(color="pink")]}),
     f"scenes.jsonl line 3: objects[1].color: unknown value 'pink' (expected one of {COLORS})"),
    (json.dumps({"objects": [obj(x=0)]}),
     "scenes.jsonl line 3: objects[0].x: value 0 out of range (expected an integer in 1..8)"),
    (json.dumps({"objects": [obj(), obj(y=9)]}),
     "scenes.jsonl line 3: objects[1].y: value 9 out of range (expected an integer in 1..8)"),
    (json.dumps({"objects": [obj(x=True)]}),
     "scenes.jsonl line 3: objects[0].x: expected an integer in 1..8, got true"),
    (json.dumps({"objects": [obj(y=2.0)]}),
     "scenes.jsonl line 3: objects[0].y: expected an integer in 1..8, got 2.0"),
    (json.dumps({"objects": [obj(shape="cone")]}),
     "scenes.jsonl line 3: objects[0].shape: unknown value 'cone' "
     "(expected one of cube, sphere, cylinder)"),
    (json.dumps({"objects": [obj(size=1)]}),
     "scenes.jsonl line 3: objects[0].size: expected a string (one of small, large), got 1"),
    (json.dumps({"objects": []}),
     "scenes.jsonl line 3: objects: has 0 objects (expected 1 to 5)"),
    (json.dumps({"objects": [obj()] * 6}),
     "scenes.jsonl line 3: objects: has 6 objects (expected 1 to 5)"),
    ('{"objects": [{"color": "red",}]}',
     "scenes.jsonl line 3: invalid JSON: Expecting property name enclosed in double quotes "
     "(column 30)"),
    ('[1, 2]', "scenes.jsonl line 3: expected a JSON object (a scene), got array"),
    ('{"label": 1}', "scenes.jsonl line 3: missing key 'objects'"),
    (json.dumps({"objects": [dict(obj(), colour="red")]}),
     "scenes.jsonl line 3: objects[0]: unknown key 'colour' "
     "(expected color, shape, material, size, x, y)"),
    (json.dumps({"objects": [{k: v for k, v in obj().items() if k != "size"}]}),
     "scenes.jsonl line 3: objects[0]: missing key 'size'"),
    (json.dumps({"objects": ["red cube"]}),
     "scenes.jsonl line 3: objects[0]: expected a JSON object, got string"),
])
def test_malformed_scene_files(tmp_path, monkeypatch, bad_line, expected):
    monkeypatch.chdir(tmp_path)
    write_lines(tmp_path / "scenes.jsonl", [GOOD, "", bad_line, GOOD])
    with pytest.raises(SceneError) as info:
        read_scenes_jsonl("scenes.jsonl")
    assert str(info.value) == expected
    assert "\n" not in str(info.value)


def test_missing_and_non_utf8_files(tmp_path):
    with pytest.raises(SceneError, match="nope.jsonl: cannot read file"):
        read_scenes_jsonl(tmp_path / "nope.jsonl")
    p = tmp_path / "latin.jsonl"
    p.write_bytes(GOOD.encode() + b"\n" + b'{"objects": "\xe9"}\n')
    with pytest.raises(SceneError, match=r"latin.jsonl line 2: not UTF-8 text"):
        read_scenes_jsonl(p)


def test_read_valid_file_keeps_extra_keys(tmp_path):
    p = tmp_path / "ok.jsonl"
    write_lines(p, [GOOD, "   ", json.dumps({"objects": [obj()], "label": 1, "id": "a"})])
    scenes = read_scenes_jsonl(p)
    assert len(scenes) == 2
    assert scenes[1]["label"] == 1 and scenes[1]["id"] == "a"
    assert scenes[0]["objects"][1] == obj("blue", "sphere", "rubber", "small", 1, 8)
    (tmp_path / "empty.jsonl").write_text("")
    assert read_scenes_jsonl(tmp_path / "empty.jsonl") == []
    # the same scene with 6 objects is valid for CLEVR-sized scenes only
    write_lines(p, [json.dumps({"objects": [obj()] * 6})])
    assert len(read_scenes_jsonl(p, CLEVR_SCHEMA)) == 1


def test_validate_scene_where_prefix():
    validate_scene({"objects": [obj()]}, CURI_SCHEMA)
    with pytest.raises(SceneError) as info:
        validate_scene({"objects": [obj(color="pink")]}, CURI_SCHEMA)
    assert str(info.value).startswith("objects[0].color: unknown value 'pink'")
    with pytest.raises(SceneError, match=r"^scene 1: objects\[0\].x: value 9"):
        scenes_to_codes([{"objects": [obj()]}, {"objects": [obj(x=9)]}], CURI_SCHEMA)


def test_write_read_roundtrip_and_numpy_values(tmp_path):
    bank = SceneBank.sample(200, "clevr", CURI_SCHEMA, seed=2)
    scenes = bank.scenes()
    scenes[0]["label"] = np.int64(1)  # numpy scalars are written as numbers
    p = tmp_path / "bank.jsonl"
    write_scenes_jsonl(p, scenes, schema=CURI_SCHEMA)
    back = read_scenes_jsonl(p)
    assert back[0]["label"] == 1
    del back[0]["label"]
    assert SceneBank.from_scenes(back).codes.tobytes() == bank.codes.tobytes()
    umask = os.umask(0)
    os.umask(umask)
    assert os.stat(p).st_mode & 0o777 == 0o666 & ~umask  # not mkstemp's 0o600


def test_write_is_atomic(tmp_path):
    p = tmp_path / "scenes.jsonl"
    write_scenes_jsonl(p, [{"objects": [obj()]}])
    before = p.read_bytes()
    # the failure happens after some lines were written to the temporary file
    bad = [{"objects": [obj()]}] * 50 + [{"objects": [obj()], "label": object()}]
    with pytest.raises(SceneError, match=r"scenes.jsonl: scene 50: cannot write as JSON"):
        write_scenes_jsonl(p, bad)
    assert p.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["scenes.jsonl"]  # no temporary file left
    # validation against a schema happens before anything is written
    with pytest.raises(SceneError, match=r"^scene 0: objects\[0\].x: value 9"):
        write_scenes_jsonl(p, [{"objects": [obj(x=9)]}], schema=CURI_SCHEMA)
    assert p.read_bytes() == before
    write_scenes_jsonl(p, [{"objects": [obj(x=2)]}])
    assert read_scenes_jsonl(p)[0]["objects"][0]["x"] == 2
    assert sorted(os.listdir(tmp_path)) == ["scenes.jsonl"]


# --------------------------------------------------------------------------
# CLEVR scene json
# --------------------------------------------------------------------------

def clevr_obj(px, py, color="red", **extra):
    return dict({"color": color, "shape": "cylinder", "material": "rubber", "size": "small",
                 "pixel_coords": [px, py, 11.2], "3d_coords": [0, 0, 0.35],
                 "rotation": 12.0}, **extra)


def test_load_clevr_scenes(tmp_path):
    p = tmp_path / "CLEVR_val_scenes.json"
    data = {"info": {"split": "val"}, "scenes": [
        {"image_index": 0, "image_filename": "CLEVR_val_000000.png", "split": "val",
         "objects": [clevr_obj(0, 0), clevr_obj(479, 319, "cyan"), clevr_obj(240, 160)],
         "relationships": {"left": [[1], [], [0]]}},
        {"image_index": 1, "objects": [clevr_obj(61, 41)] * 10},
    ]}
    p.write_text(json.dumps(data))
    scenes = load_clevr_scenes(p)
    assert len(scenes) == 2
    s0 = scenes[0]
    assert s0["image_filename"] == "CLEVR_val_000000.png" and "relationships" not in s0
    assert [(o["x"], o["y"]) for o in s0["objects"]] == [(1, 1), (8, 8), (5, 5)]
    assert s0["objects"][1] == {"color": "cyan", "shape": "cylinder", "material": "rubber",
                                "size": "small", "x": 8, "y": 8}
    assert scenes[1]["objects"][0]["x"] == 2 and scenes[1]["objects"][0]["y"] == 2
    bank = SceneBank.from_scenes(scenes, CLEVR_SCHEMA)
    assert bank.n_objects.tolist() == [3, 10]
    # 10 objects do not fit CURI's schema
    with pytest.raises(SceneError) as info:
        load_clevr_scenes(p, CURI_SCHEMA)
    assert str(info.value) == f"{p} scenes[1]: objects: has 10 objects (expected 1 to 5)"


def test_load_clevr_scenes_errors(tmp_path):
    p = tmp_path / "c.json"
    p.write_text(json.dumps({"scenes": [{"objects": [clevr_obj(1, 1, color="pink")]}]}))
    with pytest.raises(SceneError) as info:
        load_clevr_scenes(p)
    assert str(info.value) == (f"{p} scenes[0]: objects[0].color: unknown value 'pink' "
                               f"(expected one of {COLORS})")
    o = clevr_obj(1, 1)
    del o["pixel_coords"]
    p.write_text(json.dumps({"scenes": [{"objects": [clevr_obj(1, 1)]}, {"objects": [o]}]}))
    with pytest.raises(SceneError, match=r"scenes\[1\]: objects\[0\]: missing key 'pixel_coords'"):
        load_clevr_scenes(p)
    p.write_text(json.dumps({"scenes": [{"objects": [clevr_obj("a", 1)]}]}))
    with pytest.raises(SceneError, match=r"objects\[0\].pixel_coords: expected \[px, py, depth\]"):
        load_clevr_scenes(p)
    p.write_text('{"scenes": [')
    with pytest.raises(SceneError, match=r"c.json: invalid JSON: .* \(line 1, column 13\)"):
        load_clevr_scenes(p)
