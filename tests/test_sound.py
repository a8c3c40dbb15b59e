"""Tests of bayes_concepts.scenes.sound: scenes as sounds (CURI's mapping) and the log-mel front end."""
from __future__ import annotations

import wave

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bayes_concepts.errors import SceneError
from bayes_concepts.scenes import CURI_SCHEMA, SceneSchema, sample_scenes, scenes_to_codes
from bayes_concepts.scenes.sound import (
    INSTRUMENTS,
    SoundError,
    SoundSettings,
    log_mel_spectrogram,
    log_mel_spectrogram_reference,
    mel_filterbank,
    n_frames_for,
    note_tables,
    synthesize_scene,
    synthesize_scenes,
    synthesize_scenes_reference,
    write_wav,
)

COLORS = CURI_SCHEMA.attribute("color").values
RATE = SoundSettings().rate
TABLES = note_tables()
STEP = int(TABLES["onsets"][1] - TABLES["onsets"][0])
L = SoundSettings().note_samples


def obj(color="red", shape="cube", material="rubber", size="large", x=4, y=5):
    return {"color": color, "shape": shape, "material": material, "size": size, "x": x, "y": y}


def clips_of(*objects):
    """One single-object scene per object."""
    codes = scenes_to_codes([{"objects": [o]} for o in objects], CURI_SCHEMA)[0]
    return synthesize_scenes(codes)


def spectrum(clip, n=1 << 16):
    """Magnitude spectrum (zero-padded) and its frequencies in Hz."""
    return np.abs(np.fft.rfft(clip.astype(np.float64), n)), np.fft.rfftfreq(n, 1.0 / RATE)


def test_shape_dtype_range_and_silence():
    codes = sample_scenes(20, "clevr", seed=0)
    clips = synthesize_scenes(codes)
    assert clips.shape == (20, SoundSettings().n_samples) == (20, 16000) and clips.dtype == np.float32
    assert np.abs(clips).max() <= 1.0
    start = int(TABLES["onsets"][codes[:, :, 4][codes[:, :, 4] >= 0]].min())
    assert not clips[:, :start].any()                      # nothing before the first onset
    one = synthesize_scene(codes[3])
    np.testing.assert_array_equal(one, clips[3])
    short = synthesize_scenes(codes[:2], settings=SoundSettings(rate=4000, duration=3.0))
    assert short.shape == (2, 12000)


def test_deterministic_and_independent_of_batch():
    codes = sample_scenes(30, "uniform", seed=1)
    a = synthesize_scenes(codes)
    np.testing.assert_array_equal(a, synthesize_scenes(codes))
    np.testing.assert_array_equal(synthesize_scenes(codes[::-1]), a[::-1])
    out = np.full((5, 16000), 7.0, np.float32)
    assert synthesize_scenes(codes[:5], out=out) is out
    np.testing.assert_array_equal(out, a[:5])


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), sampler=st.sampled_from(["clevr", "uniform"]), n=st.integers(1, 12))
def test_kernel_matches_reference(seed, sampler, n):
    codes = sample_scenes(n, sampler, seed=seed)
    np.testing.assert_allclose(synthesize_scenes(codes), synthesize_scenes_reference(codes), rtol=0, atol=1e-7)


@pytest.mark.parametrize("color", COLORS)
@pytest.mark.parametrize("shape", ["cube", "sphere", "cylinder"])
def test_x_bin_shifts_the_onset_exactly(color, shape):
    clips = clips_of(*[obj(color, shape, x=x) for x in range(1, 9)])
    for k in range(7):
        np.testing.assert_array_equal(clips[k + 1], np.roll(clips[k], STEP))
    first = [int(np.flatnonzero(c)[0]) for c in clips]
    onsets = TABLES["onsets"]
    assert all(onsets[k] < first[k] <= onsets[k] + 2 for k in range(8))   # the note starts from 0 at its onset
    assert STEP > 0 and first[0] + 7 * STEP + L <= 16000


@pytest.mark.parametrize("color", COLORS)
def test_y_bin_sets_the_pitch(color):
    pitches = TABLES["pitches"]
    assert np.all(np.diff(pitches) < 0)                          # y bin 1 (top) is the highest
    clips = clips_of(*[obj(color, "cube", "rubber", y=y) for y in range(1, 9)])
    ratios = []
    for y, clip in enumerate(clips):
        mag, freq = spectrum(clip)
        ratios.append(freq[mag.argmax()] / pitches[y])
    harmonic = round(ratios[0])
    assert harmonic >= 1
    np.testing.assert_allclose(ratios, harmonic, rtol=0.01)      # same partial, scaled with the pitch


@pytest.mark.parametrize("color", COLORS)
@pytest.mark.parametrize("shape", ["cube", "sphere"])
def test_metal_filters_only_above_the_cutoff(color, shape):
    cutoff = SoundSettings().cutoff_hz
    rubber, metal = clips_of(obj(color, shape, "rubber", y=8), obj(color, shape, "metal", y=8))
    mag_r, freq = spectrum(rubber)
    mag_m, _ = spectrum(metal)
    diff, _ = spectrum(metal - rubber)
    below = freq < 0.9 * cutoff
    assert (diff[below] ** 2).sum() < 1e-3 * (diff ** 2).sum()   # the filter leaves the passband alone
    well_below = freq < 0.7 * cutoff
    np.testing.assert_allclose(mag_m[well_below], mag_r[well_below], atol=1e-3 * mag_r.max())
    above = freq > cutoff
    assert (mag_m[above] ** 2).sum() < 0.5 * (mag_r[above] ** 2).sum()


def test_size_sets_the_volume():
    small, large = clips_of(obj("blue", size="small"), obj("blue", size="large"))
    np.testing.assert_allclose(large, 2 * small, atol=1e-7)
    rms = np.sqrt((large ** 2).mean() / (small ** 2).mean())
    assert abs(rms - 2.0) < 1e-4


def _energy_centroid(clip):
    start = int(np.flatnonzero(clip)[0])
    e = clip[start:start + L].astype(np.float64) ** 2
    return (np.arange(L) * e).sum() / e.sum() / L


@pytest.mark.parametrize("color", COLORS)
def test_shape_sets_the_envelope(color):
    cube, sphere, cylinder = clips_of(*[obj(color, s) for s in ("cube", "sphere", "cylinder")])
    c = [_energy_centroid(x) for x in (sphere, cube, cylinder)]
    assert c[0] < c[1] - 0.1 and c[1] < c[2] - 0.05             # decaying < flat < rising
    if color == "gray":                                          # the trumpet holds its note: cube flat
        start = int(TABLES["onsets"][3])
        thirds = cube[start:start + L].reshape(3, -1) if L % 3 == 0 else cube[start:start + L - L % 3].reshape(3, -1)
        rms = np.sqrt((thirds.astype(np.float64) ** 2).mean(1))
        assert rms[1] == pytest.approx(rms[0], rel=0.2)


def test_colour_sets_the_timbre_only_during_the_note():
    clips = clips_of(*[obj(c, "cube", y=6) for c in COLORS])
    start = int(TABLES["onsets"][3])
    outside = np.ones(16000, bool)
    outside[start:start + L] = False
    assert not clips[:, outside].any()
    specs = []
    for clip in clips:
        mag, _ = spectrum(clip)
        specs.append(mag / np.linalg.norm(mag))
    sim = np.array(specs) @ np.array(specs).T
    off_diag = sim[~np.eye(8, dtype=bool)]
    assert off_diag.max() < 0.95                                # eight different spectra
    # attacks differ too: time to reach half of the peak level in the first 0.2 s
    half = [int(np.argmax(np.abs(c[start:]) >= 0.5 * np.abs(c[start:start + L]).max())) for c in clips]
    assert len(set(half)) >= 5
    assert [i.name for i in INSTRUMENTS] == ["trumpet", "clarinet", "violin", "flute", "oboe", "saxophone",
                                             "french horn", "guitar"]


def test_changing_one_object_changes_only_its_note():
    codes = sample_scenes(40, "uniform", seed=3)
    clips = synthesize_scenes(codes)
    rng = np.random.default_rng(0)
    for attr, a in (("color", 0), ("shape", 1), ("material", 2), ("size", 3)):
        n_values = CURI_SCHEMA.attributes[a].n_values
        for i in range(len(codes)):
            s = int(rng.integers((codes[i, :, 0] >= 0).sum()))
            other = codes[i:i + 1].copy()
            other[0, s, a] = (other[0, s, a] + 1) % n_values
            changed = np.flatnonzero(synthesize_scenes(other)[0] != clips[i])
            start = int(TABLES["onsets"][codes[i, s, 4]])
            assert changed.size > 0, attr
            assert changed.min() >= start and changed.max() < start + L, attr


def test_log_mel_shape_and_tone():
    clips = clips_of(obj("green", "cube", y=5), obj("green", "cube", y=1))
    spec = log_mel_spectrogram(clips)
    assert spec.shape == (2, 64, n_frames_for(16000)) == (2, 64, 124) and spec.dtype == np.float32
    fb = mel_filterbank(RATE, 256, 64)
    centres = (fb * np.fft.rfftfreq(256, 1 / RATE)).sum(1) / fb.sum(1)
    frame = (int(TABLES["onsets"][3]) + L // 2) // 128
    for k, y in enumerate((5, 1)):
        band = spec[k, :, frame].argmax()
        assert abs(centres[band] - TABLES["pitches"][y - 1]) < 0.15 * TABLES["pitches"][y - 1]
    assert spec[0, :, 0].max() == pytest.approx(np.log(1e-6))    # silence is the floor


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), n_samples=st.integers(256, 1200), n_mels=st.integers(4, 40),
       hop=st.integers(16, 200))
def test_log_mel_matches_reference(seed, n_samples, n_mels, hop):
    clips = np.random.default_rng(seed).uniform(-1, 1, size=(3, n_samples)).astype(np.float32)
    fast = log_mel_spectrogram(clips, n_mels=n_mels, hop=hop, chunk=2)
    slow = log_mel_spectrogram_reference(clips, n_mels=n_mels, hop=hop)
    assert fast.shape == slow.shape == (3, n_mels, n_frames_for(n_samples, 256, hop))
    np.testing.assert_allclose(fast, slow, atol=2e-3)


def test_wav_round_trip(tmp_path):
    clip = clips_of(obj("yellow"))[0]
    path = write_wav(clip, RATE, tmp_path / "note.wav")
    with wave.open(str(path), "rb") as w:
        assert (w.getnchannels(), w.getsampwidth(), w.getframerate(), w.getnframes()) == (1, 2, RATE, 16000)
        pcm = np.frombuffer(w.readframes(16000), dtype="<i2")
    np.testing.assert_array_equal(pcm, np.round(clip * 32767).astype(np.int16))
    with pytest.raises(SoundError, match="1-D"):
        write_wav(np.zeros((2, 5)), RATE, tmp_path / "bad.wav")
    with pytest.raises(SoundError, match="non-finite"):
        write_wav(np.array([0.0, np.nan]), RATE, tmp_path / "bad.wav")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["note.wav"]


def test_errors():
    codes = sample_scenes(2, "clevr", seed=0)
    with pytest.raises(SoundError, match="do not fit"):
        synthesize_scenes(codes, settings=SoundSettings(duration=1.0, onset_step=0.2))
    with pytest.raises(SoundError, match="rate"):
        synthesize_scenes(codes, settings=SoundSettings(rate=10))
    with pytest.raises(SoundError, match="out must be"):
        synthesize_scenes(codes, out=np.zeros((2, 16000)))
    no_y = SceneSchema(tuple(a for a in CURI_SCHEMA.attributes if a.name != "y"))
    with pytest.raises(SceneError, match="no 'y' attribute"):
        synthesize_scenes(np.zeros((1, 5, 5), np.int8), no_y)
    with pytest.raises(SoundError, match="clips must have shape"):
        log_mel_spectrogram(np.zeros(300))
    with pytest.raises(SoundError, match="shorter than n_fft"):
        log_mel_spectrogram(np.zeros((1, 100)))


def test_schema_without_shape_size_and_material():
    keep = ("color", "x", "y")
    schema = SceneSchema(tuple(a for a in CURI_SCHEMA.attributes if a.name in keep), max_objects=5)
    codes = scenes_to_codes([{"objects": [{"color": "blue", "x": 2, "y": 3}]}], schema)[0]
    plain = clips_of(obj("blue", "cube", "rubber", "large", 2, 3))
    np.testing.assert_allclose(synthesize_scenes(codes, schema), plain, atol=1e-7)
