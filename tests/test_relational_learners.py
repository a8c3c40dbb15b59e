"""The learners on relational (CLEVR) scenes: each scene's own relations in the schema
encoder, pictures drawn at the objects' 3-D positions in the image encoder's training batches
(rendered, or read from a cached bank by scene id), the sound encoder refused with its reason,
and training on a protocol's split named by the protocol.

The small clevr space the test session shares (``clevr_space``, conftest.py) is used; the
assertions compare the learners' inputs with the space's own arrays and with
:func:`~bayes_concepts.scenes.render.render_scenes`, so they hold for any such build.
"""
from __future__ import annotations

import dataclasses
import shutil

import numpy as np
import pytest
import torch

from bayes_concepts.engine.store import SpaceError
from bayes_concepts.learners import ProtoNetLearner
from bayes_concepts.learners.encoders import SchemaEncoder
from bayes_concepts.learners.features import SchemaLayout, scene_arrays
from bayes_concepts.learners.modalities import ImageEncoder, SoundEncoder, schema_from_dict, schema_to_dict
from bayes_concepts.learners.protocol import LearnerError
from bayes_concepts.protocols import get_protocol
from bayes_concepts.scenes.render import render_scenes
from bayes_concepts.spaces.hypothesis_space import HypothesisSpace

PICTURE = {"height": 24, "width": 36, "supersample": 1}
TINY_IMAGE = {**PICTURE, "channels": (4, 4), "object_dim": 8, "embed_batch": 512}
TINY_SCHEMA = {"object_dim": 8, "hidden_ratio": 1}
TINY_RELNET = {"g_hidden": (8,), "g_out": 8, "f_hidden": (8,)}
TINY_TRAINING = dict(max_steps=2, batch_episodes=2, chunk_episodes=4, val_every=2, val_episodes=4, patience=0,
                     progress=False, threads=1)


@pytest.fixture(scope="module")
def space(clevr_space):
    return clevr_space


@pytest.fixture(scope="module")
def moved_twin(space):
    """A copy of ``space`` whose scene j holds scene 0's objects (same codes) with its own
    positions and relations, which differ from scene 0's; returns (twin, j)."""
    rel = space.relations()
    codes = np.array(space.scene_codes)
    j = next(j for j in range(1, space.n_scenes) if not np.array_equal(rel[0], rel[j])
             and (codes[j, :, 0] >= 0).sum() == (codes[0, :, 0] >= 0).sum())
    codes[j] = codes[0]
    return dataclasses.replace(space, scene_codes=codes), j


def tiny_learner(space, kind, pooling="relnet", seed=0):
    return ProtoNetLearner(space, kind, pooling, seed=seed, device="cpu", precision="fp32", embedding_dim=8,
                           encoder_options=TINY_IMAGE if kind == "image" else TINY_SCHEMA,
                           pooling_options=TINY_RELNET if pooling == "relnet" else {})


# --------------------------------------------------------------------------- schema encoder
def test_scenes_with_the_same_objects_in_other_places_get_other_schema_features(moved_twin):
    twin, j = moved_twin
    enc = SchemaEncoder.from_space(twin, **TINY_SCHEMA)
    x = enc.inputs(twin, [0, j])
    with torch.no_grad():
        features = enc.features(x).numpy()
    assert np.array_equal(twin.scene_codes[0], twin.scene_codes[j])
    assert not np.array_equal(features[0], features[1])
    layout = SchemaLayout.from_schema(twin.schema)
    np.testing.assert_array_equal(features, layout.features(twin.scene_codes[[0, j]], twin.relations([0, j])))
    with torch.no_grad():
        embedded = enc(x).features
    assert not torch.equal(embedded[0], embedded[1])


def test_scene_dicts_carry_their_own_relations_into_the_learner(moved_twin):
    twin, j = moved_twin
    learner = tiny_learner(twin, "schema")
    dicts = [twin.scene(0), twin.scene(j)]
    from_ids, from_dicts = learner.embed([0, j]), learner.embed(dicts)
    np.testing.assert_array_equal(from_dicts, from_ids)
    assert not np.array_equal(from_ids[0], from_ids[1])


def test_relations_of_fewer_slots_are_padded_with_no_relation(space):
    wide = SchemaEncoder(SchemaLayout.from_schema(space.schema).names[:15] +
                         tuple(SchemaLayout.from_schema(space.schema.with_max_objects(12)).names[15:]),
                         [t.shape for t in SchemaLayout.from_schema(space.schema).tables], 12, 8, 1,
                         relations=space.schema.relations)
    scenes = scene_arrays(space, np.arange(5))
    x = wide.from_scenes(scenes).numpy()
    S, R = space.schema.max_objects, len(space.schema.relations)
    assert x.shape == (5, 12, 4 + R * 12)
    rows = x[:, :, 4:].reshape(5, 12, R, 12)
    np.testing.assert_array_equal(rows[:, :S, :, :S], space.relations(np.arange(5)).transpose(0, 2, 1, 3))
    assert (rows[:, S:] == 0).all() and (rows[:, :, :, S:] == 0).all()


# ---------------------------------------------------------------------------- image encoder
def _training_pictures(learner):
    """Run two training steps of ``learner`` on a CLOSURE split and return the (scene ids,
    pictures uint8 (n, H, W, 3)) of every training batch its encoder was given."""
    enc = learner.model.encoder
    original, seen = enc.from_scenes, []

    def spy(scenes):
        x = original(scenes)
        if enc.training:
            seen.append((np.array(scenes.ids), x.numpy().transpose(0, 2, 3, 1).copy()))
        return x

    enc.from_scenes = spy
    try:
        learner.train("embed_spa_mat", protocol=get_protocol("closure-baselines"), **TINY_TRAINING)
    finally:
        del enc.from_scenes
    assert seen
    return seen


def _assert_rendered(space, seen):
    for ids, pictures in seen:
        want = render_scenes(np.asarray(space.scene_codes[ids]), space.schema, positions=space.positions(ids),
                             **PICTURE)
        np.testing.assert_array_equal(pictures, want)


def test_a_clevr_picture_in_a_training_batch_equals_renders_picture(space):
    learner = tiny_learner(space, "image", "average")
    # validation would render the whole test bank twice (seconds); the batches are what is tested
    learner.evaluate = lambda episodes: {"ap": np.zeros(len(episodes.concept)), "cba": np.zeros(len(episodes.concept))}
    _assert_rendered(space, _training_pictures(learner))


def test_a_cached_bank_gives_the_training_batches_the_same_pictures(clevr_space_dir, tmp_path):
    shutil.copytree(clevr_space_dir, tmp_path / "clevr")
    saved = HypothesisSpace.load(tmp_path / "clevr")
    bank = saved.rendered_bank("image", **PICTURE)
    learner = tiny_learner(saved, "image", "average")
    assert learner.model.encoder._bank is not None
    seen = _training_pictures(learner)
    _assert_rendered(saved, seen)
    ids = np.concatenate([i for i, _ in seen])
    np.testing.assert_array_equal(np.concatenate([p for _, p in seen]), bank[ids])


def test_the_image_encoder_draws_objects_where_they_stand(moved_twin):
    twin, j = moved_twin
    enc = ImageEncoder.from_space(twin, **TINY_IMAGE)
    pictures = enc.inputs(twin, [0, j]).numpy()
    assert not np.array_equal(pictures[0], pictures[1])
    from_dicts = enc.inputs(twin, [twin.scene(0), twin.scene(j)]).numpy()
    np.testing.assert_array_equal(from_dicts, pictures)
    with pytest.raises(LearnerError, match="at their objects' 3-D positions"):
        enc.from_codes(np.asarray(twin.scene_codes[:2]))


def test_the_image_encoders_schema_keeps_its_relations(space):
    config = ImageEncoder.from_space(space, **TINY_IMAGE).config()
    assert config["schema"]["relations"] == list(space.schema.relations)
    assert schema_from_dict(schema_to_dict(space.schema)) == space.schema


# ---------------------------------------------------------------------------- sound refused
def test_sound_is_refused_on_relations_with_the_reason(space, clevr_space_dir):
    why = r"cannot express this space's relations \(left, right, front, behind\).*x/y location bins"
    with pytest.raises(LearnerError, match="the sound encoder: the sound modality " + why) as info:
        SoundEncoder.from_space(space)
    assert "\n" not in str(info.value)
    with pytest.raises(LearnerError, match=why):
        ProtoNetLearner(space, "sound", "average", device="cpu")
    with pytest.raises(SpaceError, match="rendered bank: the sound modality " + why):
        HypothesisSpace.load(clevr_space_dir).rendered_bank("sound")


# ----------------------------------------------------------------------- a protocol's split
def test_training_on_a_protocol_split_named_by_the_protocol(space):
    protocol = get_protocol("closure-baselines")
    learner = tiny_learner(space, "schema")
    history = learner.train("embed_spa_mat", protocol=protocol, **TINY_TRAINING)
    split = protocol.splits(space, ["embed_spa_mat"])["embed_spa_mat"]
    assert history["split"] == "embed_spa_mat" and history["protocol"] == "closure-baselines"
    assert history["split_sha256"] == split.concepts_sha256() and history["steps"] == 2
    assert history["settings"]["hard_mode"] == protocol.hard_mode
    assert history["settings"]["query_negatives"] == protocol.query_negatives
    assert learner.train(split, **TINY_TRAINING)["protocol"] == "closure-baselines"
    with pytest.raises(LearnerError, match="give the protocol whose split it is"):
        learner.train("embed_spa_mat", **TINY_TRAINING)
