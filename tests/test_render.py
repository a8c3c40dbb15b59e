"""Tests of bayes_concepts.scenes.render: the procedural CLEVR-like renderer."""
from __future__ import annotations

import matplotlib.image
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bayes_concepts.errors import SceneError
from bayes_concepts.scenes import CURI_SCHEMA, Attribute, SceneSchema, sample_scenes, scenes_to_codes
from bayes_concepts.scenes.render import (
    RenderError,
    object_masks,
    render_scene,
    render_scene_png,
    render_scenes,
    render_scenes_reference,
)

A = {name: i for i, name in enumerate(CURI_SCHEMA.names)}
COLORS = CURI_SCHEMA.attribute("color").values


def obj(color="red", shape="cube", material="rubber", size="large", x=4, y=5):
    return {"color": color, "shape": shape, "material": material, "size": size, "x": x, "y": y}


def codes_of(*scenes, schema=CURI_SCHEMA):
    return scenes_to_codes([{"objects": list(s)} for s in scenes], schema)[0]


@pytest.fixture(scope="module")
def bank():
    return np.concatenate([sample_scenes(12, "clevr", seed=5), sample_scenes(12, "uniform", seed=6)])


def test_shape_dtype_and_resolution(bank):
    images = render_scenes(bank[:3])
    assert images.shape == (3, 80, 120, 3) and images.dtype == np.uint8
    big = render_scenes(bank[:1], height=160, width=240, supersample=1)
    assert big.shape == (1, 160, 240, 3)
    one = render_scene(bank[0])
    assert one.shape == (80, 120, 3)
    np.testing.assert_array_equal(one, images[0])


def test_deterministic_and_independent_of_batch(bank):
    a = render_scenes(bank)
    b = render_scenes(bank)
    np.testing.assert_array_equal(a, b)
    order = np.arange(len(bank))[::-1]
    np.testing.assert_array_equal(render_scenes(bank[order]), a[order])
    out = np.zeros_like(a[:5])
    assert render_scenes(bank[:5], out=out) is out
    np.testing.assert_array_equal(out, a[:5])


def test_slot_order_does_not_matter(bank):
    images, masks = object_masks(bank)
    n_obj = (bank[:, :, 0] >= 0).sum(1)
    flipped = bank.copy()
    for i, k in enumerate(n_obj):
        flipped[i, :k] = bank[i, :k][::-1]
    images2, masks2 = object_masks(flipped)
    np.testing.assert_array_equal(images2, images)
    for i, k in enumerate(n_obj):
        np.testing.assert_array_equal(masks2[i, :k], masks[i, :k][::-1])
        assert not masks[i, k:].any()                # empty slots draw nothing


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), sampler=st.sampled_from(["clevr", "uniform"]),
       height=st.integers(12, 40), supersample=st.integers(1, 3), n=st.integers(1, 4))
def test_kernel_matches_reference(seed, sampler, height, supersample, n):
    codes = sample_scenes(n, sampler, seed=seed)
    width = height * 3 // 2
    images, masks = object_masks(codes, height=height, width=width, supersample=supersample)
    ref_images, ref_masks = render_scenes_reference(codes, height=height, width=width, supersample=supersample)
    np.testing.assert_array_equal(masks, ref_masks)
    assert np.abs(images.astype(int) - ref_images).max() <= 1


def test_kernel_matches_reference_at_default_resolution(bank):
    images, masks = object_masks(bank[:6])
    ref_images, ref_masks = render_scenes_reference(bank[:6])
    np.testing.assert_array_equal(masks, ref_masks)
    assert np.abs(images.astype(int) - ref_images).max() <= 1


def _changed(a, b):
    return (a != b).any(axis=-1)


@pytest.mark.parametrize("attribute", ["color", "material"])
def test_colour_and_material_change_only_the_footprint(bank, attribute):
    images, masks = object_masks(bank)
    n_values = CURI_SCHEMA.attribute(attribute).n_values
    rng = np.random.default_rng(0)
    for i in range(len(bank)):
        k = int((bank[i, :, 0] >= 0).sum())
        s = int(rng.integers(k))
        other = bank[i:i + 1].copy()
        other[0, s, A[attribute]] = (other[0, s, A[attribute]] + 1 + rng.integers(n_values - 1)) % n_values
        images2, masks2 = object_masks(other)
        np.testing.assert_array_equal(masks2[0], masks[i])     # geometry unchanged
        changed = _changed(images2[0], images[i])
        assert not (changed & ~masks[i, s]).any(), f"scene {i}: pixels outside object {s} changed"
        if masks[i, s].sum() >= 6:
            assert changed.any(), f"scene {i}: recolouring a visible object changed nothing"


def test_metal_is_shinier_than_rubber():
    for shape in ("sphere", "cylinder", "cube"):
        codes = codes_of([obj("blue", shape, "rubber", "large", 4, 5)], [obj("blue", shape, "metal", "large", 4, 5)])
        images, masks = object_masks(codes, height=160, width=240)
        rubber = images[0][masks[0, 0]].astype(float).sum(-1)
        metal = images[1][masks[1, 0]].astype(float).sum(-1)
        assert metal.std() > 1.2 * rubber.std(), shape            # reflections: more contrast
    codes = codes_of([obj("blue", "sphere", "rubber")], [obj("blue", "sphere", "metal")])
    images, masks = object_masks(codes)
    assert images[1][masks[1, 0]].min(-1).max() > 230              # a white highlight
    assert images[0][masks[0, 0]].min(-1).max() < 150


def test_location_bins_move_the_footprint():
    xs = [codes_of([obj(x=x, y=5)]) for x in range(1, 9)]
    cols = [np.argwhere(object_masks(c)[1][0, 0])[:, 1].mean() for c in xs]
    assert np.all(np.diff(cols) > 5)                                 # left to right
    ys = [codes_of([obj(x=4, y=y, size="small")]) for y in range(1, 9)]
    found = [object_masks(c)[1][0, 0] for c in ys]
    rows = [np.argwhere(m)[:, 0].mean() for m in found]
    areas = [m.sum() for m in found]
    assert np.all(np.diff(rows) > 0)                                 # top to bottom
    assert np.all(np.diff(areas) > 0)                                # nearer is bigger
    # the centre of the object projects into its bin (centre of the CLEVR frame's bin)
    for y, m in zip(range(1, 9), found):
        top, bottom = np.argwhere(m)[:, 0].min(), np.argwhere(m)[:, 0].max()
        centre = (y - 0.5) * 80 / 8
        assert top - 1 <= centre <= bottom + 1


def test_size_and_shape_change_the_footprint():
    codes = codes_of([obj(size="small")], [obj(size="large")])
    _, masks = object_masks(codes)
    assert masks[1, 0].sum() > 2.5 * masks[0, 0].sum()
    codes = codes_of(*[[obj(shape=s, x=4, y=6)] for s in ("cube", "sphere", "cylinder")])
    _, masks = object_masks(codes, height=160, width=240)
    m = masks[:, 0]
    for a in range(3):
        for b in range(a + 1, 3):
            iou = (m[a] & m[b]).sum() / (m[a] | m[b]).sum()
            assert iou < 0.9, (a, b, iou)


def test_nearer_object_occludes():
    far, near = obj("red", "cube", y=5), obj("blue", "cube", y=6)
    images, masks = object_masks(codes_of([far, near]), height=160, width=240)
    only_far = object_masks(codes_of([far]), height=160, width=240)[1][0, 0]
    hidden = only_far & ~masks[0, 0]
    assert hidden.sum() > 20                       # part of the far cube is hidden ...
    assert masks[0, 1][hidden].all()               # ... behind the near one


def test_shadow_is_colour_independent_and_darkens_the_ground():
    codes = codes_of([obj("red", "cylinder")], [obj("yellow", "cylinder")])
    images, masks = object_masks(codes)
    outside = ~masks[:, 0].any(0)
    np.testing.assert_array_equal(images[0][outside], images[1][outside])
    empty_ground = render_scenes(codes_of([obj(x=1, y=1, size="small")]))[0]
    shadow = outside & (images[0].astype(int).sum(-1) < empty_ground.astype(int).sum(-1) - 30)
    assert shadow.sum() > 10


def test_schema_without_shape_draws_spheres():
    attrs = tuple(a for a in CURI_SCHEMA.attributes if a.name != "shape")
    schema = SceneSchema(attrs, max_objects=5)
    row = {"color": "green", "material": "metal", "size": "large", "x": 3, "y": 6}
    codes = scenes_to_codes([{"objects": [row]}], schema)[0]
    sphere = codes_of([obj("green", "sphere", "metal", "large", 3, 6)])
    np.testing.assert_array_equal(render_scenes(codes, schema), render_scenes(sphere))


def test_schema_variants_and_errors():
    colour = Attribute("color", ("pink", "teal", "red"))
    schema = SceneSchema((colour,) + CURI_SCHEMA.attributes[1:], max_objects=3)
    codes = scenes_to_codes([{"objects": [obj("pink"), obj("teal", x=6)]}], schema)[0]
    images = render_scenes(codes, schema)
    assert images.shape == (1, 80, 120, 3)
    no_x = SceneSchema(tuple(a for a in CURI_SCHEMA.attributes if a.name != "x"))
    with pytest.raises(SceneError, match="no 'x' attribute"):
        render_scenes(np.zeros((1, 5, 5), np.int8), no_x)
    cone = SceneSchema((CURI_SCHEMA.attributes[0], Attribute("shape", ("cube", "cone")))
                       + CURI_SCHEMA.attributes[2:])
    with pytest.raises(SceneError, match="shape 'cone'"):
        render_scenes(np.zeros((1, 5, 6), np.int8), cone)
    with pytest.raises(RenderError, match="height"):
        render_scenes(np.zeros((1, 5, 6), np.int8), height=0)
    with pytest.raises(RenderError, match="out must be"):
        render_scenes(np.zeros((1, 5, 6), np.int8), out=np.zeros((1, 80, 120, 3), np.float32))
    bad = np.zeros((1, 5, 6), np.int8)
    bad[0, 0, A["color"]] = 9
    with pytest.raises(SceneError, match="out of range"):
        render_scenes(bad)


def test_png_round_trip(tmp_path, bank):
    path = render_scene_png(bank[0], CURI_SCHEMA, tmp_path / "scene.png")
    back = matplotlib.image.imread(path)
    np.testing.assert_array_equal(np.round(back[..., :3] * 255).astype(np.uint8), render_scene(bank[0]))
    assert [p.name for p in tmp_path.iterdir()] == ["scene.png"]
