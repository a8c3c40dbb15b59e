"""Rendered banks cached in a space directory (engine/rendered.py): round trip with checksums,
damage detected, nothing foreign replaced or deleted, learners read the cache, the cache
format of the built-in modalities unchanged, a new modality cached by one registration."""
from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil
from pathlib import Path
from types import MappingProxyType

import numpy as np
import pytest

from bayes_concepts.cli import main
from bayes_concepts.engine import rendered
from bayes_concepts.engine.store import SpaceError
from bayes_concepts.learners.modalities import ImageEncoder, SoundEncoder
from bayes_concepts.modalities import Modality, ModalityError, modalities, settings_key
from bayes_concepts.scenes import camera as camera_mod
from bayes_concepts.scenes import render as render_mod
from bayes_concepts.scenes import sound as sound_mod
from bayes_concepts.scenes.render import render_scenes
from bayes_concepts.scenes.sound import SoundSettings, synthesize_scenes
from bayes_concepts.spaces.hypothesis_space import HypothesisSpace
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
    monkeypatch.setattr(modalities.get("image"), "fingerprint", lambda: "0" * 64)
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


def test_the_cache_format_of_images_and_sounds_is_unchanged(space):
    """File names, fingerprints and owned files as the toolkit has always written them, so
    banks rendered before the modalities became a registry still load."""
    image, sound = modalities.get("image"), modalities.get("sound")
    assert image.file_name(rendered.bank_settings("image")) == "image_80x120_ss2.npy"
    assert image.file_name(rendered.bank_settings("image", **IMG)) == "image_16x24_ss1.npy"
    assert sound.file_name(rendered.bank_settings("sound")) == "sound_8000hz_b79c097a74.npy"
    assert sound.file_name(rendered.bank_settings("sound", settings=SOUND)) == "sound_1000hz_760bbaf91a.npy"
    assert rendered.bank_settings("sound", settings=SOUND) == dataclasses.asdict(SOUND)
    assert image.fingerprint() == hashlib.sha256(Path(render_mod.__file__).read_bytes()
                                                 + Path(camera_mod.__file__).read_bytes()).hexdigest()
    assert sound.fingerprint() == hashlib.sha256(Path(sound_mod.__file__).read_bytes()).hexdigest()
    space.rendered_bank("image", **IMG)
    folder = space.path / "rendered"
    (folder / "image_1x1_ss1.npy.bayes_concepts_partial").write_bytes(b"")
    (folder / "notes.txt.bayes_concepts_partial").write_bytes(b"")
    assert rendered.own_files(space.path) == {
        f"rendered/{n}" for n in ("manifest.json", ".lock", "manifest.json.bayes_concepts_partial",
                                  "image_16x24_ss1.npy", "image_16x24_ss1.npy.bayes_concepts_partial",
                                  "image_1x1_ss1.npy.bayes_concepts_partial")}


def test_options_a_modality_does_not_take_are_refused(space):
    with pytest.raises(SpaceError, match=r"settings= is not an option of image banks \(they take height, width"):
        space.rendered_bank("image", settings=SOUND)
    with pytest.raises(SpaceError, match="height= is not an option of sound banks"):
        space.rendered_bank("sound", height=8)
    with pytest.raises(SpaceError, match="unknown sound settings"):
        rendered.bank_settings("sound", settings={"tempo": 3})
    with pytest.raises(SpaceError, match="unknown modality 'video' .expected one of image, sound"):
        space.rendered_bank("video")
    assert rendered.bank_settings("image", height=None) == {"height": 80, "width": 120, "supersample": 2}
    assert not (space.path / "rendered").exists()


class Census(Modality):
    """A toy modality: the number of objects of a scene times ``scale``, int16 (1,)."""

    name = "census"
    defaults = MappingProxyType({"scale": 1})
    dtype = np.dtype(np.int16)

    def make_settings(self, options):
        scale = options["scale"]
        if isinstance(scale, bool) or not isinstance(scale, int) or scale < 1:
            raise ModalityError(f"census: scale must be a positive integer, got {scale!r}")
        return {"scale": scale}

    def item_shape(self, settings):
        return (1,)

    def render(self, codes, schema, settings):
        counts = (np.asarray(codes)[:, :, 0] >= 0).sum(axis=1) * settings["scale"]
        return counts.astype(np.int16)[:, None]


@pytest.fixture
def census():
    kind = modalities.register("census", Census())
    yield kind
    modalities.unregister("census")


def test_a_new_modality_is_one_registration_and_is_cached_like_the_others(space, census):
    expected = ((np.asarray(space.scene_codes)[:, :, 0] >= 0).sum(axis=1) * 3).astype(np.int16)[:, None]
    bank = space.rendered_bank("census", scale=3, chunk=999)
    assert bank.dtype == np.int16 and bank.shape == (space.n_scenes, 1) and np.array_equal(bank, expected)
    name = f"census_{settings_key({'scale': 3})}.npy"
    entry = rendered.rendered_banks(space)[name]
    f = space.path / "rendered" / name
    assert entry["modality"] == "census" and entry["settings"] == {"scale": 3} and entry["dtype"] == "int16"
    assert entry["sha256"] == _sha(f) and entry["renderer"] == hashlib.sha256(Path(__file__).read_bytes()).hexdigest()
    # read back, memory-mapped, in a new view of the space; the image banks beside it are unaffected
    again = HypothesisSpace.load(space.path)
    loaded = again.rendered_bank("census", scale=3)
    assert isinstance(loaded, np.memmap) and np.array_equal(loaded, expected)
    assert rendered.find_rendered_bank(again, "census") is None
    assert np.array_equal(again.rendered_bank("image", **IMG), render_scenes(space.scene_codes, space.schema, **IMG))
    assert f"rendered/{name}" in rendered.own_files(space.path)
    # its options are its own; damage is detected as for any bank
    with pytest.raises(SpaceError, match="census: scale must be a positive integer"):
        space.rendered_bank("census", scale=0)
    with pytest.raises(SpaceError, match="height= is not an option of census banks .they take scale"):
        space.rendered_bank("census", height=3)
    data = bytearray(f.read_bytes())
    data[-1] ^= 1
    f.write_bytes(bytes(data))
    with pytest.raises(SpaceError, match="checksum mismatch"):
        space.rendered_bank("census", scale=3)
    assert np.array_equal(space.rendered_bank("census", scale=3, rebuild=True), expected)
    # an unsaved space renders it in memory
    mem = rendered.rendered_bank(dataclasses.replace(space, path=None), "census", scale=3)
    assert not isinstance(mem, np.memmap) and np.array_equal(mem, expected)
    # the toolkit's own banks go with the space a save replaces
    dataclasses.replace(space).save(space.path, overwrite=True)
    assert not (space.path / "rendered").exists()


def test_a_renderer_that_breaks_its_contract_is_refused(space, census, monkeypatch):
    monkeypatch.setattr(census, "render", lambda codes, schema, settings: np.zeros((len(codes), 2), np.int16))
    with pytest.raises(SpaceError, match=r"census renderer gave int16 \(\d+, 2\).*expected int16 \(\d+, 1\)"):
        space.rendered_bank("census")
    assert "census_" not in " ".join(p.name for p in (space.path / "rendered").iterdir() if p.suffix == ".npy")
