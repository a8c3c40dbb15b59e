"""Scenes as sounds: CURI's mapping, synthesised procedurally.

Every object of a scene plays one note; a scene is the sum of its objects' notes, one
mono ``float32`` clip.  The mapping follows CURI (seed paper, appendix B.5), with
synthesised instruments instead of CURI's recorded orchestral samples:

============ ====================================================================
attribute    what it changes
============ ====================================================================
``color``    the instrument (timbre): gray trumpet, red clarinet, blue violin,
             green flute, brown oboe, purple saxophone, cyan French horn, yellow
             guitar — each a different harmonic spectrum, attack, vibrato or decay
``x``        the onset: bin ``b`` starts at ``first_onset + (b-1)·onset_step``
             seconds (rounded to whole samples; one bin to the right = exactly
             ``round(onset_step·rate)`` samples later)
``y``        the pitch: the notes of a major scale, highest for y bin 1 (top of
             the picture) down to ``lowest_pitch_hz`` (C4, 261.63 Hz) for the last
             bin; every instrument plays the same pitches
``material`` ``metal``: a zero-phase low-pass filter (unit gain up to
             ``cutoff_hz`` = 700 Hz, then −48 dB per octave); ``rubber``: none
``shape``    the amplitude envelope: cube flat, sphere decaying
             (``exp(-t/0.12 s)``), cylinder rising (from 0.1 to 1, ``∝ t^1.5``)
``size``     the volume: ``large`` 1, ``small`` 0.5 (−6 dB)
============ ====================================================================

A note is ``size gain × envelope(shape)(t) × tone(colour, y, material)(t)`` for
``t`` in ``[0, note_duration)``; the tone is a sum of harmonics ``k·f0`` (those below
0.45 × the sample rate), each with the instrument's amplitude, attack and decay, and,
for metal, the low-pass gain at its frequency (so the filter is exact: below the
cut-off a metal note equals the rubber one).  Every note has a 5 ms fade-in and a
30 ms fade-out.  The clip is the sum of the notes times ``1 / schema.max_objects``,
so it stays within [-1, 1].

What a schema lacks: ``x`` and ``y`` are required (:class:`SceneError`); without
``color`` every object is a trumpet, without ``shape`` every envelope is flat,
without ``material`` nothing is filtered, without ``size`` every note is loud.
Colour names other than CURI's take instrument ``code mod 8``; an unknown shape or
material value is a :class:`SceneError`; sizes other than small/large of an ordered
size attribute get gains evenly spaced from 0.5 to 1.

Front end for learners: :func:`log_mel_spectrogram` turns clips ``(n, T)`` into
``float32`` ``(n, n_mels, n_frames)`` (scipy's FFT and a numba kernel for the
sparse mel filters; :func:`log_mel_spectrogram_reference` is its explicit-DFT twin).

Everything is deterministic: a clip depends only on the scene's codes and the
settings.  The tones and envelopes are tabulated once per (settings, schema); a
numba kernel mixes the notes of a batch in parallel over scenes, and
:func:`synthesize_scenes_reference` is its slow obvious twin.
"""
from __future__ import annotations

import math
import wave
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numba
import numpy as np
import scipy.fft

from ..errors import BayesConceptsError, SceneError
from .codes import check_codes
from .schema import CURI_SCHEMA, SceneSchema

__all__ = [
    "SoundError",
    "SoundSettings",
    "INSTRUMENTS",
    "COLOR_INSTRUMENTS",
    "synthesize_scenes",
    "synthesize_scene",
    "synthesize_scenes_reference",
    "note_tables",
    "mel_filterbank",
    "log_mel_spectrogram",
    "log_mel_spectrogram_reference",
    "n_frames_for",
    "write_wav",
]


class SoundError(BayesConceptsError):
    """Bad settings, clips or paths given to the sound synthesiser or its front end."""


# ================================================================================
# instruments
# ================================================================================

@dataclass(frozen=True)
class Instrument:
    """A synthetic instrument: harmonic amplitudes and how they start and fade.

    amplitudes : relative amplitude of harmonics 1, 2, ... (normalised to sum 1)
    attack : seconds for the fundamental to rise to full amplitude (raised cosine)
    attack_spread : harmonic k rises in ``attack·(1 + attack_spread·(k-1))``
    vibrato_depth, vibrato_rate : relative frequency deviation and its rate (Hz)
    decay, decay_per_harmonic : harmonic k decays as ``exp(-(decay + decay_per_harmonic·k)·t)``
    """

    name: str
    amplitudes: tuple
    attack: float
    attack_spread: float = 0.0
    vibrato_depth: float = 0.0
    vibrato_rate: float = 5.0
    decay: float = 0.0
    decay_per_harmonic: float = 0.0


def _harmonics(fn, n=16):
    return tuple(float(fn(k)) for k in range(1, n + 1))


#: CURI's instruments, in CURI's colour order (seed paper, appendix B.5).
INSTRUMENTS = (
    Instrument("trumpet", _harmonics(lambda k: math.exp(-((k - 4) / 2.2) ** 2)), attack=0.03,
               attack_spread=0.25),
    Instrument("clarinet", _harmonics(lambda k: k ** -0.6 if k % 2 else 0.0), attack=0.04),
    Instrument("violin", _harmonics(lambda k: k ** -0.5), attack=0.08, vibrato_depth=0.006, vibrato_rate=5.5),
    Instrument("flute", (1.0, 0.12, 0.3, 0.05, 0.1, 0.03) + (0.0,) * 10, attack=0.06, vibrato_depth=0.004,
               vibrato_rate=5.0),
    Instrument("oboe", (0.3, 1.0, 0.45, 0.2, 0.7, 0.35, 0.1, 0.05) + (0.0,) * 8, attack=0.03),
    Instrument("saxophone", (0.45, 1.0, 0.25, 0.8, 0.15, 0.5, 0.1, 0.3, 0.05, 0.15) + (0.0,) * 6,
               attack=0.04, vibrato_depth=0.003, vibrato_rate=4.5),
    Instrument("french horn", (1.0, 0.75, 0.45, 0.2, 0.08) + (0.0,) * 11, attack=0.09),
    Instrument("guitar", _harmonics(lambda k: abs(math.sin(math.pi * k * 0.2)) * k ** -0.8),
               attack=0.004, decay=1.5, decay_per_harmonic=1.2),
)
#: CURI's colour -> instrument (index into INSTRUMENTS).
COLOR_INSTRUMENTS = {"gray": 0, "red": 1, "blue": 2, "green": 3, "brown": 4, "purple": 5,
                     "cyan": 6, "yellow": 7}
_SHAPES = ("cube", "sphere", "cylinder")
_SIZE_GAINS = {"small": 0.5, "large": 1.0}
_MAJOR = (0, 2, 4, 5, 7, 9, 11)
_FADE_IN, _FADE_OUT = 0.005, 0.030
_SPHERE_DECAY = 0.12
_CYLINDER_START, _CYLINDER_POWER = 0.1, 1.5
_FILTER_POWER = 8          # metal: gain (cutoff / f)^8 above the cut-off, i.e. -48 dB/octave
_MAX_HARMONIC_FRACTION = 0.45


@dataclass(frozen=True)
class SoundSettings:
    """How scenes become clips.

    Attributes
    ----------
    rate : int
        Samples per second (Hz).
    duration : float
        Clip length (s).
    note_duration : float
        Length of every note (s).
    first_onset : float
        Onset of x bin 1 (s).
    onset_step : float or None
        Seconds between the onsets of neighbouring x bins; ``None`` spreads the bins so
        that the last note ends ``first_onset`` before the clip ends.
    lowest_pitch_hz : float
        Pitch of the last y bin (the bottom of the picture).
    cutoff_hz : float
        Metal's low-pass cut-off (Hz).
    """

    rate: int = 8000
    duration: float = 2.0
    note_duration: float = 0.5
    first_onset: float = 0.05
    onset_step: float | None = None
    lowest_pitch_hz: float = 261.6256
    cutoff_hz: float = 700.0

    @property
    def n_samples(self) -> int:
        return int(round(self.duration * self.rate))

    @property
    def note_samples(self) -> int:
        return int(round(self.note_duration * self.rate))


def _check_settings(settings: SoundSettings, n_x: int):
    if not isinstance(settings, SoundSettings):
        raise SoundError(f"sound: settings must be a SoundSettings, got {type(settings).__name__}")
    if isinstance(settings.rate, bool) or not isinstance(settings.rate, (int, np.integer)) or settings.rate < 1000:
        raise SoundError(f"sound: rate must be an integer >= 1000 Hz, got {settings.rate!r}")
    for name in ("duration", "note_duration", "lowest_pitch_hz", "cutoff_hz"):
        v = getattr(settings, name)
        if not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
            raise SoundError(f"sound: {name} must be a positive number, got {v!r}")
    if not isinstance(settings.first_onset, (int, float)) or not 0 <= settings.first_onset < settings.duration:
        raise SoundError(f"sound: first_onset must be in [0, duration), got {settings.first_onset!r}")
    if settings.note_samples < int(round((_FADE_IN + _FADE_OUT) * settings.rate)) + 1:
        raise SoundError(f"sound: note_duration {settings.note_duration} s is shorter than the fades")
    start = int(round(settings.first_onset * settings.rate))
    if settings.onset_step is None:
        free = settings.n_samples - 2 * start - settings.note_samples
        step = free // max(n_x - 1, 1)
    else:
        if not isinstance(settings.onset_step, (int, float)) or settings.onset_step < 0:
            raise SoundError(f"sound: onset_step must be a non-negative number, got {settings.onset_step!r}")
        step = int(round(settings.onset_step * settings.rate))
    last_end = start + (n_x - 1) * step + settings.note_samples
    if step < 0 or last_end > settings.n_samples:
        raise SoundError(f"sound: {n_x} x bins of notes of {settings.note_duration} s do not fit in "
                         f"{settings.duration} s (onset step {step} samples)")
    return start, step


def _pitches(n_y: int, lowest: float) -> np.ndarray:
    """Fundamental (Hz) per y code: a major scale, highest for code 0 (top of the picture)."""
    degree = np.arange(n_y)[::-1]
    semitones = 12 * (degree // 7) + np.array(_MAJOR)[degree % 7]
    return lowest * 2.0 ** (semitones / 12.0)


def _lowpass_gain(freq, cutoff):
    """Metal's filter: 1 up to the cut-off, then (cutoff / f)^8."""
    freq = np.asarray(freq, dtype=np.float64)
    return np.where(freq <= cutoff, 1.0, (cutoff / np.maximum(freq, cutoff)) ** _FILTER_POWER)


def _tone(inst: Instrument, f0: float, metal: bool, settings: SoundSettings) -> np.ndarray:
    """One note's tone (before the shape envelope and fades): float64 (note_samples,)."""
    rate, cutoff = settings.rate, settings.cutoff_hz
    t = np.arange(settings.note_samples) / rate
    amps = np.asarray(inst.amplitudes, dtype=np.float64)
    amps = amps / amps.sum()
    ks = np.arange(1, len(amps) + 1)
    if inst.vibrato_depth:
        w = 2.0 * math.pi * inst.vibrato_rate
        phase_time = t + inst.vibrato_depth * (1.0 - np.cos(w * t)) / w   # ∫ (1 + d·sin(wt)) dt
    else:
        phase_time = t
    out = np.zeros_like(t)
    for k, a in zip(ks, amps):
        f = k * f0
        if a == 0.0 or f >= _MAX_HARMONIC_FRACTION * rate:
            continue
        gain = a * (_lowpass_gain(f, cutoff) if metal else 1.0)
        rise = inst.attack * (1.0 + inst.attack_spread * (k - 1))
        attack = 0.5 - 0.5 * np.cos(math.pi * np.minimum(t / rise, 1.0))
        decay = np.exp(-(inst.decay + inst.decay_per_harmonic * k) * t)
        out += gain * attack * decay * np.sin(2.0 * math.pi * f * phase_time)
    return out


def _envelopes(settings: SoundSettings) -> np.ndarray:
    """Amplitude envelope per shape (cube, sphere, cylinder), fades included: float64 (3, L)."""
    L = settings.note_samples
    t = np.arange(L) / settings.rate
    span = L / settings.rate
    fade_in = 0.5 - 0.5 * np.cos(math.pi * np.minimum(t / _FADE_IN, 1.0))
    fade_out = 0.5 - 0.5 * np.cos(math.pi * np.minimum((span - t) / _FADE_OUT, 1.0))
    flat = np.ones(L)
    decaying = np.exp(-t / _SPHERE_DECAY)
    rising = _CYLINDER_START + (1.0 - _CYLINDER_START) * (t / span) ** _CYLINDER_POWER
    return np.stack([flat, decaying, rising]) * (fade_in * fade_out)


@lru_cache(maxsize=8)
def note_tables(settings: SoundSettings = SoundSettings(), schema: SceneSchema = CURI_SCHEMA):
    """Everything a clip is mixed from, for one (settings, schema).

    Returns a dict of read-only arrays (``L = settings.note_samples``):

    ``tones``  float32 (n_colours, n_y, 2, L): tone of colour code c, y code p, rubber (0)
               or metal (1)
    ``envelopes`` float32 (n_shapes, L): envelope per shape code (fades included)
    ``gains``  float32 (n_sizes,): volume per size code, times ``1 / schema.max_objects``
    ``onsets`` int64 (n_x,): first sample of a note per x code
    ``pitches`` float64 (n_y,): fundamental (Hz) per y code
    ``columns`` int64 (6,): column of color, shape, material, size, x, y in the codes
               (-1 where the schema lacks it)
    """
    names = schema.names
    for req in ("x", "y"):
        if req not in names:
            raise SceneError(f"sound: the schema has no {req!r} attribute (needed for onsets and pitches)")
    n_x, n_y = schema.attribute("x").n_values, schema.attribute("y").n_values
    start, step = _check_settings(settings, n_x)

    if "color" in names:
        colours = schema.attribute("color").values
        instruments = [COLOR_INSTRUMENTS.get(v, i % len(INSTRUMENTS)) for i, v in enumerate(colours)]
    else:
        instruments = [0]
    shape_ids = [0]
    if "shape" in names:
        vals = schema.attribute("shape").values
        bad = [v for v in vals if v not in _SHAPES]
        if bad:
            raise SceneError(f"sound: shape {bad[0]!r} has no envelope (expected one of {', '.join(_SHAPES)})")
        shape_ids = [_SHAPES.index(v) for v in vals]
    if "material" in names:
        vals = schema.attribute("material").values
        bad = [v for v in vals if v not in ("rubber", "metal")]
        if bad:
            raise SceneError(f"sound: material {bad[0]!r} has no filter (expected rubber or metal)")
    gains = np.array([1.0])
    if "size" in names:
        attr = schema.attribute("size")
        if all(v in _SIZE_GAINS for v in attr.values):
            gains = np.array([_SIZE_GAINS[v] for v in attr.values])
        elif attr.ordered:
            gains = np.linspace(_SIZE_GAINS["small"], _SIZE_GAINS["large"], attr.n_values)
        else:
            bad = [v for v in attr.values if v not in _SIZE_GAINS][0]
            raise SceneError(f"sound: size {bad!r} has no volume (expected small or large, or an ordered size)")

    pitches = _pitches(n_y, float(settings.lowest_pitch_hz))
    tone_of_instrument = {}
    for inst in sorted(set(instruments)):
        tone_of_instrument[inst] = np.stack([
            np.stack([_tone(INSTRUMENTS[inst], f0, metal, settings) for metal in (False, True)])
            for f0 in pitches])
    tones = np.stack([tone_of_instrument[i] for i in instruments]).astype(np.float32)
    envelopes = _envelopes(settings)[shape_ids].astype(np.float32)
    gains = (gains / schema.max_objects).astype(np.float32)
    onsets = start + step * np.arange(n_x, dtype=np.int64)

    def col(name):
        return schema.attribute_index(name) if name in names else -1

    tables = {"tones": tones, "envelopes": envelopes, "gains": gains, "onsets": onsets,
              "pitches": pitches,
              "columns": np.array([col(n) for n in ("color", "shape", "material", "size", "x", "y")],
                                  dtype=np.int64)}
    for a in tables.values():
        a.setflags(write=False)
    return tables


# ================================================================================
# mixing
# ================================================================================

@numba.njit(parallel=True, cache=True)
def _mix_kernel(codes, columns, metal_of, tones, envelopes, gains, onsets, out):  # pragma: no cover
    """out (n, T) float32, zeroed here: for every object, gain · envelope · tone added at its onset."""
    n, S, _ = codes.shape
    L = tones.shape[3]
    for i in numba.prange(n):
        for t in range(out.shape[1]):
            out[i, t] = 0.0
        for s in range(S):
            if codes[i, s, 0] < 0:
                continue
            c = codes[i, s, columns[0]] if columns[0] >= 0 else 0
            sh = codes[i, s, columns[1]] if columns[1] >= 0 else 0
            m = metal_of[codes[i, s, columns[2]]] if columns[2] >= 0 else 0
            z = codes[i, s, columns[3]] if columns[3] >= 0 else 0
            x = codes[i, s, columns[4]]
            p = codes[i, s, columns[5]]
            g = gains[z]
            start = onsets[x]
            for t in range(L):
                out[i, start + t] += g * envelopes[sh, t] * tones[c, p, m, t]


def _metal_of(schema: SceneSchema) -> np.ndarray:
    if "material" not in schema.names:
        return np.zeros(1, dtype=np.int64)
    return np.array([v == "metal" for v in schema.attribute("material").values], dtype=np.int64)


def _check_batch(codes, schema):
    arr = np.asarray(codes)
    if arr.ndim != 3:
        raise SceneError(f"sound: codes must have shape (n_scenes, n_slots, n_attributes), got {arr.shape}")
    codes, _ = check_codes(arr, schema)
    return codes


def synthesize_scenes(codes, schema: SceneSchema = CURI_SCHEMA,
                      settings: SoundSettings = SoundSettings(), *, out=None) -> np.ndarray:
    """Synthesise one clip per scene (module docstring: the mapping).

    Parameters
    ----------
    codes : int array (n_scenes, n_slots, schema.n_attributes)
        Scene codes, ``-1`` in empty slots; validated with
        :func:`~bayes_concepts.scenes.check_codes`.
    schema : SceneSchema
    settings : SoundSettings
        Sample rate (default 8 kHz), clip length (default 2 s), note timing, pitch, cut-off.
    out : float32 ndarray (n_scenes, settings.n_samples), optional
        Written in place and returned (to synthesise a large bank chunk by chunk).

    Returns
    -------
    clips : float32 ndarray (n_scenes, settings.n_samples)
        Mono samples in [-1, 1] at ``settings.rate`` Hz.
    """
    codes = _check_batch(codes, schema)
    tab = note_tables(settings, schema)
    n = codes.shape[0]
    shape = (n, settings.n_samples)
    if out is None:
        out = np.empty(shape, dtype=np.float32)
    elif (not isinstance(out, np.ndarray) or out.dtype != np.float32 or out.shape != shape
          or not out.flags.c_contiguous):
        raise SoundError(f"sound: out must be a C-contiguous float32 array of shape {shape}")
    _mix_kernel(codes, tab["columns"], _metal_of(schema), tab["tones"], tab["envelopes"], tab["gains"],
                tab["onsets"], out)
    return out


def synthesize_scene(scene_codes, schema: SceneSchema = CURI_SCHEMA,
                     settings: SoundSettings = SoundSettings()) -> np.ndarray:
    """One scene: ``scene_codes`` int (n_slots, n_attributes) -> float32 (settings.n_samples,)."""
    arr = np.asarray(scene_codes)
    if arr.ndim != 2:
        raise SceneError(f"sound: codes of one scene must have shape (n_slots, n_attributes), got {arr.shape}")
    return synthesize_scenes(arr[None], schema, settings)[0]


def synthesize_scenes_reference(codes, schema: SceneSchema = CURI_SCHEMA,
                                settings: SoundSettings = SoundSettings()) -> np.ndarray:
    """Slow twin of :func:`synthesize_scenes`: a Python loop over scenes and objects that
    adds each note with numpy.  Same arguments and result.  For tests."""
    codes = _check_batch(codes, schema)
    tab = note_tables(settings, schema)
    cols = dict(zip(("color", "shape", "material", "size", "x", "y"), tab["columns"].tolist()))
    metal_of = _metal_of(schema)
    L = settings.note_samples
    clips = np.zeros((codes.shape[0], settings.n_samples), dtype=np.float32)
    for i, scene in enumerate(codes):
        for obj in scene:
            if obj[0] < 0:
                continue

            def code(name):
                return int(obj[cols[name]]) if cols[name] >= 0 else 0

            metal = int(metal_of[code("material")])
            note = tab["gains"][code("size")] * tab["envelopes"][code("shape")] \
                * tab["tones"][code("color"), code("y"), metal]
            start = int(tab["onsets"][code("x")])
            clips[i, start:start + L] += note
    return clips


# ================================================================================
# log-mel front end
# ================================================================================

def _hz_to_mel(f):
    return 2595.0 * np.log10(1.0 + np.asarray(f, dtype=np.float64) / 700.0)


def _mel_to_hz(m):
    return 700.0 * (10.0 ** (np.asarray(m, dtype=np.float64) / 2595.0) - 1.0)


def mel_filterbank(rate: int, n_fft: int, n_mels: int, fmin: float = 0.0, fmax: float | None = None) -> np.ndarray:
    """Triangular mel filters (HTK mel scale), peak 1: float64 (n_mels, n_fft // 2 + 1).

    Filter ``j`` rises from mel point ``j`` to ``j+1`` and falls to ``j+2`` of
    ``n_mels + 2`` points evenly spaced in mel from ``fmin`` to ``fmax`` (default rate/2).
    """
    fmax = rate / 2.0 if fmax is None else fmax
    if not 0 <= fmin < fmax <= rate / 2.0:
        raise SoundError(f"sound: need 0 <= fmin < fmax <= rate/2, got fmin={fmin}, fmax={fmax}, rate={rate}")
    freqs = np.arange(n_fft // 2 + 1) * (rate / n_fft)
    edges = _mel_to_hz(np.linspace(_hz_to_mel(fmin), _hz_to_mel(fmax), n_mels + 2))
    lo, mid, hi = edges[:-2, None], edges[1:-1, None], edges[2:, None]
    up = (freqs[None, :] - lo) / (mid - lo)
    down = (hi - freqs[None, :]) / (hi - mid)
    return np.maximum(0.0, np.minimum(up, down))


def n_frames_for(n_samples: int, n_fft: int = 256, hop: int = 128) -> int:
    """Frames of :func:`log_mel_spectrogram` for a clip of ``n_samples``: ``1 + (n_samples - n_fft) // hop``."""
    return 1 + (n_samples - n_fft) // hop


def _check_spec_args(clips, n_fft, hop, n_mels):
    arr = np.asarray(clips)
    if arr.ndim != 2:
        raise SoundError(f"sound: clips must have shape (n_clips, n_samples), got {arr.shape}")
    if not np.issubdtype(arr.dtype, np.floating):
        raise SoundError(f"sound: clips must be a float array, got dtype {arr.dtype}")
    for name, v in (("n_fft", n_fft), ("hop", hop), ("n_mels", n_mels)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise SoundError(f"sound: {name} must be a positive integer, got {v!r}")
    if arr.shape[1] < n_fft:
        raise SoundError(f"sound: clips of {arr.shape[1]} samples are shorter than n_fft = {n_fft}")
    return arr


def log_mel_spectrogram(clips, rate: int = 8000, *, n_fft: int = 256, hop: int = 128, n_mels: int = 64,
                        fmin: float = 0.0, fmax: float | None = None, floor: float = 1e-6,
                        chunk: int = 256) -> np.ndarray:
    """Log-mel spectrograms of clips, for learners.

    Frames of ``n_fft`` samples every ``hop`` samples (no padding), Hann window, power
    spectrum ``|rfft|²``, :func:`mel_filterbank`, then ``log(mel + floor)``.

    Parameters
    ----------
    clips : float array (n_clips, n_samples)
    rate : sample rate in Hz (default 8000; for the mel scale)
    n_fft, hop, n_mels, fmin, fmax, floor : see above (defaults: 32 ms frames every
        16 ms at 8 kHz, 64 bands from 0 to 4 kHz)
    chunk : clips transformed at a time (bounds the memory of the FFT)

    Returns
    -------
    spec : float32 ndarray (n_clips, n_mels, n_frames)
        ``n_frames = 1 + (n_samples - n_fft) // hop`` (124 for the default 2 s clips);
        natural log of power.
    """
    arr = _check_spec_args(clips, n_fft, hop, n_mels)
    if isinstance(chunk, bool) or not isinstance(chunk, (int, np.integer)) or chunk < 1:
        raise SoundError(f"sound: chunk must be a positive integer, got {chunk!r}")
    fb = mel_filterbank(rate, n_fft, n_mels, fmin, fmax)
    window = (0.5 - 0.5 * np.cos(2.0 * np.pi * np.arange(n_fft) / n_fft)).astype(np.float32)
    n, T = arr.shape
    F = n_frames_for(T, n_fft, hop)
    filters, weights = _sparse_filters(fb)
    out = np.empty((n, n_mels, F), dtype=np.float32)
    for lo in range(0, n, chunk):
        part = np.ascontiguousarray(arr[lo:lo + chunk], dtype=np.float32)
        frames = np.lib.stride_tricks.sliding_window_view(part, n_fft, axis=1)[:, ::hop][:, :F]
        spec = scipy.fft.rfft(frames * window, axis=-1, workers=-1)       # (m, F, n_fft//2+1)
        _log_mel_kernel(spec, filters, weights, np.float32(floor), out[lo:lo + chunk])
    return out


def _sparse_filters(fb):
    """Triangular filters as, per FFT bin, the (at most 2) filters it feeds and its weights:
    int64 (n_bins, 2) (-1 for none) and float32 (n_bins, 2)."""
    n_bins = fb.shape[1]
    filters = np.full((n_bins, 2), -1, dtype=np.int64)
    weights = np.zeros((n_bins, 2), dtype=np.float32)
    for b in range(n_bins):
        nz = np.flatnonzero(fb[:, b])
        if nz.size > 2:
            raise SoundError(f"sound: FFT bin {b} falls in {nz.size} mel filters (expected at most 2)")
        filters[b, :nz.size] = nz
        weights[b, :nz.size] = fb[nz, b]
    return filters, weights


@numba.njit(parallel=True, cache=True)
def _log_mel_kernel(spec, filters, weights, floor, out):  # pragma: no cover - compiled
    """out (m, n_mels, F) = log(sum over bins of weight · |spec|² + floor); spec (m, F, n_bins)."""
    m, F, n_bins = spec.shape
    n_mels = out.shape[1]
    for i in numba.prange(m):
        acc = np.empty(n_mels, dtype=np.float32)
        for f in range(F):
            acc[:] = 0.0
            for b in range(n_bins):
                z = spec[i, f, b]
                pw = z.real * z.real + z.imag * z.imag
                for q in range(2):
                    j = filters[b, q]
                    if j >= 0:
                        acc[j] += weights[b, q] * pw
            for j in range(n_mels):
                out[i, j, f] = math.log(acc[j] + floor)


def log_mel_spectrogram_reference(clips, rate: int = 8000, *, n_fft: int = 256, hop: int = 128,
                                  n_mels: int = 64, fmin: float = 0.0, fmax: float | None = None,
                                  floor: float = 1e-6) -> np.ndarray:
    """Slow twin of :func:`log_mel_spectrogram`: frame by frame, an explicit DFT in float64."""
    arr = _check_spec_args(clips, n_fft, hop, n_mels).astype(np.float64)
    fb = mel_filterbank(rate, n_fft, n_mels, fmin, fmax)
    window = 0.5 - 0.5 * np.cos(2.0 * np.pi * np.arange(n_fft) / n_fft)
    k = np.arange(n_fft // 2 + 1)[:, None]
    dft = np.exp(-2j * np.pi * k * np.arange(n_fft)[None, :] / n_fft)
    n, T = arr.shape
    F = n_frames_for(T, n_fft, hop)
    out = np.empty((n, n_mels, F), dtype=np.float32)
    for i in range(n):
        for j in range(F):
            frame = arr[i, j * hop:j * hop + n_fft] * window
            power = np.abs(dft @ frame) ** 2
            out[i, :, j] = np.log(fb @ power + floor)
    return out


# ================================================================================
# files
# ================================================================================

def write_wav(clip, rate: int, path) -> Path:
    """Write a mono clip (float array (n_samples,), values in [-1, 1]) as a 16-bit PCM WAV.

    Values outside [-1, 1] are clipped.  Written to a temporary name next to ``path``
    and renamed, so a failure never leaves a half-written file.  Returns the path.
    """
    arr = np.asarray(clip)
    if arr.ndim != 1 or not np.issubdtype(arr.dtype, np.floating):
        raise SoundError(f"write_wav: expected a 1-D float array, got shape {arr.shape} dtype {arr.dtype}")
    if not np.isfinite(arr).all():
        raise SoundError("write_wav: the clip has non-finite samples")
    if isinstance(rate, bool) or not isinstance(rate, (int, np.integer)) or rate < 1:
        raise SoundError(f"write_wav: rate must be a positive integer, got {rate!r}")
    pcm = np.round(np.clip(arr, -1.0, 1.0) * 32767.0).astype("<i2")
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    try:
        with wave.open(str(tmp), "wb") as w:
            w.setnchannels(1)
            w.setsampwidth(2)
            w.setframerate(int(rate))
            w.writeframes(pcm.tobytes())
        tmp.replace(path)
    finally:
        if tmp.exists():
            tmp.unlink()
    return path
