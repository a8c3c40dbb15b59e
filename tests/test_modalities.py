"""The modalities registry (bayes_concepts.modalities), the image and sound encoders
(learners/modalities.py), `train --modality` and `render`."""
from __future__ import annotations

import dataclasses
import subprocess
import sys
import types
import wave

import numpy as np
import pytest
import torch

from bayes_concepts.cli import main
from bayes_concepts.commands.train import learner_with_modality
from bayes_concepts.episodes import EpisodeSampler
from bayes_concepts.errors import BayesConceptsError
from bayes_concepts.learners import ProtoNetLearner, encoders, load_model
from bayes_concepts.learners.modalities import ImageEncoder, SoundEncoder, resnet18_to_layer3
from bayes_concepts.learners.protocol import LearnerError
from bayes_concepts.modalities import Modality, modalities
from bayes_concepts.scenes.render import render_scenes
from bayes_concepts.scenes.sound import SoundSettings, synthesize_scenes
from bayes_concepts.splits import curi_splits

TINY_IMAGE = dict(height=32, width=48, supersample=1, channels=(8, 8), object_dim=16)
TINY_SOUND = dict(channels=(4, 8), object_dim=16)
TINY_POOL = {"average": dict(hidden=(16,)), "relnet": dict(g_hidden=(16,), g_out=16, f_hidden=(16,))}


@pytest.fixture(scope="module")
def codes(small_space):
    return np.asarray(small_space.scene_codes[:6])


@pytest.fixture(scope="module")
def episodes(small_space):
    split = curi_splits(small_space)["concept_iid"]
    return EpisodeSampler(small_space).sample(split.train, 6, "hard", seed=1)


def test_encoders_are_registered():
    assert encoders.get("image") is ImageEncoder and encoders.get("sound") is SoundEncoder
    assert encoders.names()[:3] == ("schema", "image", "sound")


@pytest.mark.parametrize("code,expected", [
    ("from bayes_concepts.modalities import modalities; print(modalities.names())", "('image', 'sound')"),
    ("from bayes_concepts.learners.encoders import encoders; print(encoders.names())", "('schema', 'image', 'sound')"),
])
def test_built_in_entries_resolve_in_a_fresh_process(code, expected):
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == expected


def test_the_modalities_render_as_the_scene_renderers(small_space, codes):
    image, sound = modalities.get("image"), modalities.get("sound")
    assert isinstance(image, Modality) and image.name == "image" and sound.name == "sound"
    settings = image.settings(height=24, width=36)
    assert settings == {"height": 24, "width": 36, "supersample": 2} and image.item_shape(settings) == (24, 36, 3)
    np.testing.assert_array_equal(image.render(codes, small_space.schema, settings),
                                  render_scenes(codes, small_space.schema, height=24, width=36))
    snd = SoundSettings(rate=1000, duration=0.6, note_duration=0.05, first_onset=0.01)
    settings = sound.settings(settings=snd)
    assert settings == dataclasses.asdict(snd) and sound.item_shape(settings) == (600,)
    np.testing.assert_array_equal(sound.render(codes, small_space.schema, settings),
                                  synthesize_scenes(codes, small_space.schema, snd))


def test_encoders_render_with_their_modality_defaults(small_space):
    image, sound = modalities.get("image"), modalities.get("sound")
    enc = ImageEncoder.from_space(small_space, channels=(4,), object_dim=8)
    assert enc.bank_options() == dict(image.encoder_defaults) == {"height": 80, "width": 120, "supersample": 2}
    assert enc.renderer is image
    snd = SoundEncoder.from_space(small_space, channels=(4,), object_dim=8)
    assert dataclasses.asdict(snd.settings) == sound.encoder_defaults["settings"] == dataclasses.asdict(SoundSettings())
    assert snd.renderer is sound and snd.config()["settings"] == dataclasses.asdict(SoundSettings())


def test_image_encoder_gives_one_present_slot_per_feature_map_cell(small_space, codes):
    enc = ImageEncoder.from_space(small_space, **TINY_IMAGE).eval()
    x = enc.from_codes(codes)
    assert x.dtype == torch.uint8 and tuple(x.shape) == (6, 3, 32, 48)
    np.testing.assert_array_equal(x.numpy().transpose(0, 2, 3, 1),
                                  render_scenes(codes, small_space.schema, height=32, width=48, supersample=1))
    with torch.no_grad():
        out = enc(x)
    assert enc.grid == (8, 12) and enc.n_objects == 96 and enc.out_dim == 16
    assert tuple(out.features.shape) == (6, 96, 16) and out.mask.dtype == torch.bool and bool(out.mask.all())
    # different scenes, different features
    assert not torch.allclose(out.features[0], out.features[1])


def test_default_image_encoder_sizes(small_space, codes):
    enc = ImageEncoder.from_space(small_space).eval()
    assert (enc.height, enc.width, enc.grid, enc.n_objects) == (80, 120, (5, 8), 40)
    with torch.no_grad():
        out = enc(enc.from_codes(codes[:2]))
    assert tuple(out.features.shape) == (2, 40, enc.out_dim)


def test_resnet18_backbone_is_resnet18_to_layer3(small_space, codes):
    enc = ImageEncoder.from_space(small_space, height=64, width=96, supersample=1, backbone="resnet18",
                                  object_dim=8).eval()
    assert enc.grid == (4, 6)  # 1/16 of the picture
    stem_and_layers = resnet18_to_layer3()
    # ResNet-18's parameter count from the stem through layer3 (no fc, no layer4): 2,782,784
    assert sum(p.numel() for p in stem_and_layers.parameters()) == 2_782_784
    with torch.no_grad():
        assert tuple(enc(enc.from_codes(codes[:2])).features.shape) == (2, 24, 8)
    with pytest.raises(LearnerError, match="unknown backbone"):
        ImageEncoder.from_space(small_space, backbone="vgg")


def test_sound_encoder_gives_one_present_slot_per_time_step(small_space, codes):
    enc = SoundEncoder.from_space(small_space, **TINY_SOUND).eval()
    x = enc.from_codes(codes)
    assert x.dtype == torch.float32 and tuple(x.shape) == (6, 1, 64, 124)
    with torch.no_grad():
        out = enc(x)
    assert enc.n_objects == 31  # 124 frames halved twice (rounded up)
    assert tuple(out.features.shape) == (6, 31, 16) and bool(out.mask.all())
    assert not torch.allclose(out.features[0], out.features[1])


@pytest.mark.parametrize("kind,options", [("image", TINY_IMAGE), ("sound", TINY_SOUND)])
def test_config_rebuilds_the_same_encoder(small_space, codes, kind, options):
    enc = encoders.get(kind).from_space(small_space, **options).eval()
    twin = encoders.get(kind).from_config(enc.config()).eval()
    assert twin.config() == enc.config()
    twin.load_state_dict(enc.state_dict())
    x = enc.from_codes(codes)
    with torch.no_grad():
        torch.testing.assert_close(twin(twin.from_codes(codes)).features, enc(x).features, rtol=0, atol=0)


@pytest.mark.parametrize("kind", ["image", "sound"])
def test_a_space_with_other_scenes_is_refused(small_space, kind):
    enc = encoders.get(kind).from_space(small_space, **(TINY_IMAGE if kind == "image" else TINY_SOUND))
    other = types.SimpleNamespace(schema=small_space.schema.with_max_objects(3))
    with pytest.raises(LearnerError, match="up to 3 objects"):
        enc.check_space(other)
    enc.check_space(small_space)


def tiny_learner(space, kind, pooling="average", seed=0):
    return ProtoNetLearner(space, kind, pooling, seed=seed, device="cpu", precision="fp32", embedding_dim=16,
                           encoder_options=TINY_IMAGE if kind == "image" else TINY_SOUND,
                           pooling_options=TINY_POOL[pooling])


def episode_batch(space, episodes):
    """Support/query codes and labels of ``episodes``: int8 (E, K, S, A), int (E, K)."""
    c = space.scene_codes
    return (c[episodes.support_scenes], np.asarray(episodes.support_labels),
            c[episodes.query_scenes], np.asarray(episodes.query_labels))


@pytest.mark.parametrize("kind,pooling", [("image", "average"), ("sound", "relnet")])
def test_protonet_with_each_encoder_fits_a_batch_and_scores(small_space, episodes, kind, pooling):
    learner = tiny_learner(small_space, kind, pooling)
    batch = episode_batch(small_space, episodes)
    opt = torch.optim.Adam(learner.model.parameters(), lr=3e-3)
    learner.model.train()
    losses = []
    for _ in range(8):
        opt.zero_grad()
        total, _, _ = learner.episode_loss(*batch)
        total.backward()
        opt.step()
        losses.append(float(total.detach()))
    learner.model.eval()
    learner.weights_changed()
    assert all(np.isfinite(losses)) and min(losses[-3:]) < losses[0]
    p = learner.fit(episodes.support_scenes[0], episodes.support_labels[0]).predict_proba(episodes.query_scenes[0])
    assert p.shape == (len(episodes.query_scenes[0]),) and np.all((p >= 0) & (p <= 1))


def test_a_saved_image_model_reloads_to_identical_predictions(small_space, episodes, tmp_path):
    learner = tiny_learner(small_space, "image", seed=4)
    batch = episode_batch(small_space, episodes)
    opt = torch.optim.Adam(learner.model.parameters(), lr=3e-3)
    learner.model.train()
    for _ in range(2):  # move the weights and batch-norm statistics away from their initial values
        opt.zero_grad()
        learner.episode_loss(*batch)[0].backward()
        opt.step()
    learner.model.eval()
    learner.weights_changed()
    learner.save(tmp_path / "image-model")
    again = load_model(tmp_path / "image-model", small_space)
    assert again.model.encoder.config() == learner.model.encoder.config()
    for i in range(2):
        want = learner.fit(episodes.support_scenes[i], episodes.support_labels[i]).predict_proba(episodes.query_scenes[i])
        got = again.fit(episodes.support_scenes[i], episodes.support_labels[i]).predict_proba(episodes.query_scenes[i])
        np.testing.assert_array_equal(got, want)
    fresh = tiny_learner(small_space, "image", seed=5)
    other = fresh.fit(episodes.support_scenes[1], episodes.support_labels[1]).predict_proba(episodes.query_scenes[1])
    assert not np.array_equal(other, want)  # the comparison above could fail


def test_modality_option_combines_with_the_learner_name():
    assert learner_with_modality("relnet", "image") == "image-relnet"
    assert learner_with_modality("sound-average", "sound") == "sound-average"
    assert learner_with_modality("schema-relnet", None) == "schema-relnet"
    with pytest.raises(BayesConceptsError, match="disagree"):
        learner_with_modality("schema-relnet", "image")


def test_train_modality_disagreement_exits_2(small_space_dir, tmp_path, capsys):
    assert main(["train", str(small_space_dir), "--split", "concept_iid", "--learner", "schema-relnet",
                 "--modality", "sound", "--steps", "1", "--out", str(tmp_path / "m")]) == 2
    err = capsys.readouterr().err.strip()
    assert "disagree" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "m").exists()


def test_render_writes_a_png_and_a_wav(small_space_dir, small_space, tmp_path, capsys):
    from PIL import Image
    png, wav = tmp_path / "scene.png", tmp_path / "scene.wav"
    assert main(["render", str(small_space_dir), "7", "--out", str(png), "--height", "40", "--width", "60"]) == 0
    with Image.open(png) as im:
        assert im.format == "PNG" and im.size == (60, 40)
        pixels = np.asarray(im.convert("RGB"))
    np.testing.assert_array_equal(pixels, render_scenes(np.asarray(small_space.scene_codes[7:8]),
                                                        small_space.schema, height=40, width=60)[0])
    assert main(["render", str(small_space_dir), "7", "--sound", "--out", str(wav)]) == 0
    with wave.open(str(wav)) as w:
        assert (w.getnchannels(), w.getsampwidth(), w.getframerate(), w.getnframes()) == (1, 2, 8000, 16000)
        assert np.abs(np.frombuffer(w.readframes(16000), "<i2")).max() > 0


@pytest.mark.parametrize("argv_tail,message", [
    (["5000", "--out", "{tmp}/a.png"], "out of range"),
    (["-1", "--out", "{tmp}/a.png"], "out of range"),
    (["3", "--out", "{tmp}/a.wav"], "expected a .png file"),
    (["3", "--sound", "--out", "{tmp}/a.png"], "expected a .wav file"),
    (["3", "--out", "{tmp}/missing/a.png"], "does not exist"),
])
def test_render_rejects_bad_input(small_space_dir, tmp_path, capsys, argv_tail, message):
    argv = ["render", str(small_space_dir)] + [a.format(tmp=tmp_path) for a in argv_tail]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_plot_modalities_draws_each_support_scene_three_ways(small_space, episodes):
    from bayes_concepts.plots import plot_modalities
    axes, data = plot_modalities(small_space, episodes, 2, n_scenes=3, height=24, width=36)
    assert axes.shape == (3, 3)
    label_of = dict(zip(episodes.support_scenes[2].tolist(), episodes.support_labels[2].tolist()))
    assert len(data) == 3 and all(label_of[s] == lab for s, lab in zip(data["scene"], data["label"]))
    assert list(data["label"]) == [1, 1, 0]  # positives first, then n_scenes // 2 negatives
    assert all(shape == (64, 124) for shape in data["spectrogram_shape"])
    images = [ax.get_images()[0].get_array() for ax in axes[1]]
    np.testing.assert_array_equal(images[0], render_scenes(np.asarray(small_space.scene_codes[data["scene"][:1]]),
                                                           small_space.schema, height=24, width=36)[0])
    with pytest.raises(IndexError, match="out of range"):
        plot_modalities(small_space, episodes, len(episodes))


def test_episode_view_shows_rendered_pictures(small_space, episodes):
    from matplotlib.figure import Figure

    from bayes_concepts.plots import plot_episode
    ax, data = plot_episode(small_space, episodes, 1, modality="image", image_size=(24, 36))
    fig = ax.figure
    support = episodes.support_scenes[1].tolist()
    drawn = {ax.get_gid(): ax for ax in fig.axes if (ax.get_gid() or "").startswith("support:")}
    assert len(drawn) == len(support)
    first = drawn["support:0"].get_images()[0].get_array()
    np.testing.assert_array_equal(first, render_scenes(np.asarray(small_space.scene_codes[support[:1]]),
                                                       small_space.schema, height=24, width=36)[0])
    row = data[(data["set"] == "support") & (data["position"] == 0)].iloc[0]
    assert row["scene"] == support[0] and row["image_mean"] == pytest.approx(float(first.mean()))
    # drawn into a given Axes (as inset axes), the same rows come back
    host = Figure(figsize=data.attrs["size_inches"]).add_axes([0, 0, 1, 1])
    ax2, data2 = plot_episode(small_space, episodes, 1, ax=host)
    assert ax2 is host and len(host.child_axes) >= 2 * len(support)
    assert list(data2["scene"]) == list(data["scene"])
    with pytest.raises(ValueError, match="modality"):
        plot_episode(small_space, episodes, 1, modality="sound")
