"""Rendered banks cached in a space directory (engine/rendered.py): round trip with checksums,
damage detected, nothing foreign replaced or deleted, learners read the cache."""
from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil

import numpy as np
import pytest

from bayes_concepts.cli import main
from bayes_concepts.engine import rendered
from bayes_concepts.spaces.hypothesis_space import HypothesisSpace
from bayes_concepts.engine.store import SpaceError
from bayes_concepts.learners.modalities import ImageEncoder, SoundEncoder
from bayes_concepts.scenes.render import render_scenes
from bayes_concepts.scenes.sound import SoundSettings, synthesize_scenes
from conftest import saved_copy

IMG = dict(height=16, width=24, supersample=1)
SOUND = SoundSettings(rate=1000, duration=0.6, note_duration=0.05, first_onset=0.01)


@pytest.fixture(scope="module")
def saved(small_space, tmp_path_factory):
    return saved_copy(small_space, tmp_path_factory, "rendered")


@pytest.fixture
def space(saved, tmp_path):
    """A fresh copy of the saved space (tests damage it)."""
    path = tmp_path / "space"
    shutil.copytree(saved, path)
    return HypothesisSpace.load(path)


def _sha(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_an_image_bank_round_trips_through_the_space_store(space):
    identity = space.manifest_sha256()
    manifest = (space.path / "manifest.json").read_bytes()
    bank = space.rendered_bank("image", **IMG)
    expected = render_scenes(space.scene_codes, space.schema, **IMG)
    assert bank.dtype == np.uint8 and bank.shape == (space.n_scenes, 16, 24, 3)
    assert np.array_equal(bank, expected)
    # listed, with its checksum, in the rendered folder's own table; the space's manifest is untouched
    f = space.path / "rendered" / "image_16x24_ss1.npy"
    entry = rendered.rendered_banks(space)[f.name]
    assert entry["sha256"] == _sha(f) and entry["bytes"] == f.stat().st_size
    assert entry["dtype"] == "uint8" and entry["shape"] == [space.n_scenes, 16, 24, 3]
    assert (space.path / "manifest.json").read_bytes() == manifest and space.manifest_sha256() == identity
    # a new process's view: the space still loads with every checksum, the bank is read back, memory-mapped
    again = HypothesisSpace.load(space.path, verify=True)
    loaded = again.rendered_bank("image", **IMG)
    assert isinstance(loaded, np.memmap) and not loaded.flags.writeable
    assert np.array_equal(loaded, expected)
    assert rendered.find_rendered_bank(again, "image", **IMG) is not None
    assert rendered.find_rendered_bank(again, "image", height=8, width=12) is None


def test_a_sound_bank_round_trips_in_float32(space):
    bank = space.rendered_bank("sound", settings=SOUND)
    assert bank.dtype == np.float32 and bank.shape == (space.n_scenes, SOUND.n_samples)
    assert np.array_equal(HypothesisSpace.load(space.path).rendered_bank("sound", settings=dataclasses.asdict(SOUND)),
                          synthesize_scenes(space.scene_codes, space.schema, SOUND))


def test_an_unsaved_space_renders_in_memory(small_space):
    bank = small_space.rendered_bank("image", **IMG)
    assert not isinstance(bank, np.memmap)
    assert np.array_equal(bank[:5], render_scenes(small_space.scene_codes[:5], small_space.schema, **IMG))


def test_a_tampered_bank_is_detected_and_rebuilt_only_when_asked(space):
    space.rendered_bank("image", **IMG)
    f = space.path / "rendered" / "image_16x24_ss1.npy"
    data = bytearray(f.read_bytes())
    data[-100] ^= 1
    f.write_bytes(bytes(data))
    with pytest.raises(SpaceError, match="checksum mismatch.*rebuild"):
        space.rendered_bank("image", **IMG)
    assert f.read_bytes() == bytes(data)                      # nothing replaced behind the user's back
    fixed = space.rendered_bank("image", rebuild=True, **IMG)
    assert np.array_equal(fixed, render_scenes(space.scene_codes, space.schema, **IMG))
    f.write_bytes(f.read_bytes()[:-10])
    with pytest.raises(SpaceError, match="truncated or changed"):
        space.rendered_bank("image", **IMG)


def test_a_damaged_or_foreign_table_is_detected(space, small_space, tmp_path):
    space.rendered_bank("image", **IMG)
    table = space.path / "rendered" / "manifest.json"
    good = table.read_text()
    table.write_text(good.replace('"uint8"', '"int8"'))
    with pytest.raises(SpaceError, match="self_sha256"):
        space.rendered_bank("image", **IMG)
    table.write_text("{not json")
    with pytest.raises(SpaceError, match="cannot be read"):
        rendered.find_rendered_bank(space, "image", **IMG)
    # a rendered folder copied from another space
    other = tmp_path / "other"
    shutil.copytree(space.path, other)
    table.write_text(good)
    shutil.rmtree(other / "rendered")
    shutil.copytree(space.path / "rendered", other / "rendered")
    data = json.loads((other / "manifest.json").read_text())
    data["params"]["note"] = "another build"
    from bayes_concepts.engine.store import _manifest_digest
    data["self_sha256"] = _manifest_digest(data)
    (other / "manifest.json").write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    with pytest.raises(SpaceError, match="rendered from another space"):
        HypothesisSpace.load(other).rendered_bank("image", **IMG)


def test_a_stale_bank_is_refused(space, monkeypatch):
    space.rendered_bank("image", **IMG)
    monkeypatch.setattr(rendered, "_renderer_fingerprint", lambda modality: "0" * 64)
    with pytest.raises(SpaceError, match="stale"):
        space.rendered_bank("image", **IMG)


def test_files_the_toolkit_did_not_write_are_never_replaced_or_deleted(space, small_space):
    folder = space.path / "rendered"
    folder.mkdir()
    mine = folder / "image_16x24_ss1.npy"
    mine.write_bytes(b"user data")
    with pytest.raises(SpaceError, match="not written by bayes-concepts"):
        space.rendered_bank("image", **IMG)
    assert mine.read_bytes() == b"user data"
    with pytest.raises(SpaceError, match="not part of its hypothesis space"):
        dataclasses.replace(small_space).save(space.path, overwrite=True)
    assert mine.read_bytes() == b"user data"
    mine.unlink()
    space.rendered_bank("image", **IMG)
    # the toolkit's own banks go with the space it replaces
    dataclasses.replace(small_space).save(space.path, overwrite=True)
    assert not (space.path / "rendered").exists()


def test_cli_render_bank_and_a_damaged_bank_exits_2(space, capsys):
    assert main(["render", str(space.path), "--bank", "--height", "16", "--width", "24"]) == 0
    assert "checksum verified" in capsys.readouterr().out
    f = space.path / "rendered" / "image_16x24_ss2.npy"
    data = bytearray(f.read_bytes())
    data[200] ^= 0xFF
    f.write_bytes(bytes(data))
    assert main(["render", str(space.path), "--bank", "--height", "16", "--width", "24"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "checksum mismatch" in err and "--rebuild" in err
    assert main(["render", str(space.path), "--bank", "--height", "16", "--width", "24", "--rebuild"]) == 0
    assert main(["render", str(space.path), "3", "--bank"]) == 2


def test_encoders_read_the_cached_bank(space, monkeypatch):
    images = space.rendered_bank("image", **IMG)
    clips = space.rendered_bank("sound", settings=SOUND)
    img_enc = ImageEncoder.from_space(space, channels=(4,), object_dim=8, **IMG)
    snd_enc = SoundEncoder.from_space(space, settings=dataclasses.asdict(SOUND), n_fft=64, hop=32, n_mels=16,
                                      channels=(4,), object_dim=8)
    ids = np.array([7, 3, 3, 4000])
    codes = np.asarray(space.scene_codes[ids])
    fresh_img = render_scenes(codes, space.schema, **IMG)
    import bayes_concepts.scenes.render as render_mod
    import bayes_concepts.scenes.sound as sound_mod

    def refuse(*args, **kwargs):
        raise AssertionError("rendered although the bank is cached")
    with monkeypatch.context() as m:
        m.setattr(render_mod, "render_scenes", refuse)
        m.setattr(sound_mod, "synthesize_scenes", refuse)
        x = img_enc.from_codes(codes)
        s = snd_enc.from_codes(codes)
    assert np.array_equal(x.numpy().transpose(0, 2, 3, 1), fresh_img)
    assert np.array_equal(x.numpy().transpose(0, 2, 3, 1), images[ids])
    uncached = SoundEncoder(snd_enc.config()["schema"], **{k: v for k, v in snd_enc.config().items() if k != "schema"})
    assert np.array_equal(s.numpy(), uncached.from_codes(codes).numpy())
    assert np.array_equal(clips[ids], synthesize_scenes(codes, space.schema, SOUND))
    # a scene that is not in the bank is rendered as before
    new = codes[:1].copy()
    new[0, 0, 0] = (new[0, 0, 0] + 1) % 3
    assert np.array_equal(img_enc.from_codes(new).numpy().transpose(0, 2, 3, 1),
                          render_scenes(new, space.schema, **IMG))
