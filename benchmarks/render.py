"""Modalities benchmark: images and sounds of 100,000 scenes, beside their slow twins.

Measured in one run, on ``--scenes`` clevr scenes (``sample_scenes(n, "clevr", seed=0)``):

1. images: :func:`render_scenes` at ``--height`` x ``--width`` (default 80 x 120,
   2 x 2 rays per pixel), chunk by chunk into one reused buffer; the numpy twin
   :func:`render_scenes_reference` on the first ``--slow-images`` scenes; scenes per
   second of both and their ratio (and that the two agree there);
2. sounds: :func:`synthesize_scenes` (8 kHz, 2 s clips) likewise, against
   :func:`synthesize_scenes_reference` on ``--slow-sounds`` scenes; then the log-mel
   front end on all clips (timed separately).

Target: 100,000 images in <= 60 s on the 2-core development machine.  The JIT
compilation is timed apart (first call on 2 scenes).  Peak memory is the process's
peak RSS after each phase; with ``--chunk`` scenes per chunk the buffers are
``chunk x 28.8 kB`` (images) and ``chunk x 64 kB`` (clips).  The machine's load
average is recorded because the development machine is shared.

Usage: ``python benchmarks/render.py [--scenes 100000] [--chunk 10000]``.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import time
from pathlib import Path

import numba
import numpy as np

from bayes_concepts.scenes import sample_scenes
from bayes_concepts.scenes.render import render_scenes, render_scenes_reference
from bayes_concepts.scenes.sound import (SoundSettings, log_mel_spectrogram, synthesize_scenes,
                                         synthesize_scenes_reference)


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def chunked(n, chunk):
    for lo in range(0, n, chunk):
        yield lo, min(n, lo + chunk)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenes", type=int, default=100_000)
    ap.add_argument("--chunk", type=int, default=10_000)
    ap.add_argument("--height", type=int, default=80)
    ap.add_argument("--width", type=int, default=120)
    ap.add_argument("--supersample", type=int, default=2)
    ap.add_argument("--slow-images", type=int, default=200)
    ap.add_argument("--slow-sounds", type=int, default=2000)
    ap.add_argument("--no-mel", action="store_true", help="skip the log-mel front end")
    ap.add_argument("--out", default="benchmarks/out/render.json")
    args = ap.parse_args()
    t_start = time.perf_counter()
    load_before = os.getloadavg()

    codes = sample_scenes(args.scenes, "clevr", seed=0)
    n = len(codes)
    chunk = min(args.chunk, n)
    kw = dict(height=args.height, width=args.width, supersample=args.supersample)
    rss_start = peak_rss_mb()

    # ---- images ------------------------------------------------------------------
    t = time.perf_counter()
    render_scenes(codes[:2], **kw)
    t_img_compile = time.perf_counter() - t
    buf = np.empty((chunk, args.height, args.width, 3), dtype=np.uint8)
    checksum = 0
    t = time.perf_counter()
    for lo, hi in chunked(n, chunk):
        out = render_scenes(codes[lo:hi], out=buf[:hi - lo], **kw)
        checksum += int(out[:, ::7, ::7].sum(dtype=np.int64))
    t_img = time.perf_counter() - t
    rss_images = peak_rss_mb()
    k = min(args.slow_images, n)
    t = time.perf_counter()
    slow_images, _ = render_scenes_reference(codes[:k], **kw)
    t_img_slow = time.perf_counter() - t
    fast_images = render_scenes(codes[:k], **kw)
    img_max_diff = int(np.abs(fast_images.astype(np.int16) - slow_images).max())

    # ---- sounds ------------------------------------------------------------------
    sound = SoundSettings()
    t = time.perf_counter()
    synthesize_scenes(codes[:2], settings=sound)
    t_snd_compile = time.perf_counter() - t
    clips = np.empty((chunk, sound.n_samples), dtype=np.float32)
    t_snd = t_mel = 0.0
    energy = 0.0
    mel_shape = None
    for lo, hi in chunked(n, chunk):
        t = time.perf_counter()
        out = synthesize_scenes(codes[lo:hi], settings=sound, out=clips[:hi - lo])
        t_snd += time.perf_counter() - t
        energy += float(np.square(out[:, ::97], dtype=np.float64).sum())
        if not args.no_mel:
            t = time.perf_counter()
            mel = log_mel_spectrogram(out, sound.rate)
            t_mel += time.perf_counter() - t
            mel_shape = mel.shape[1:]
            del mel
    rss_sounds = peak_rss_mb()
    k2 = min(args.slow_sounds, n)
    t = time.perf_counter()
    slow_clips = synthesize_scenes_reference(codes[:k2], settings=sound)
    t_snd_slow = time.perf_counter() - t
    snd_max_diff = float(np.abs(synthesize_scenes(codes[:k2], settings=sound) - slow_clips).max())

    img_rate, img_slow_rate = n / t_img, k / t_img_slow
    snd_rate, snd_slow_rate = n / t_snd, k2 / t_snd_slow
    result = {
        "scenes": n, "chunk": chunk, "threads": numba.get_num_threads(), "cpus": os.cpu_count(),
        "loadavg_before": load_before, "loadavg_after": os.getloadavg(),
        "image_size": [args.height, args.width], "supersample": args.supersample,
        "images_compile_s": t_img_compile, "images_s": t_img, "images_per_s": img_rate,
        "images_slow_scenes": k, "images_slow_s": t_img_slow, "images_slow_per_s": img_slow_rate,
        "images_ratio_fast_over_slow": img_rate / img_slow_rate, "images_max_abs_diff_vs_slow": img_max_diff,
        "images_checksum": checksum,
        "sound_rate_hz": sound.rate, "sound_samples": sound.n_samples,
        "sounds_compile_s": t_snd_compile, "sounds_s": t_snd, "sounds_per_s": snd_rate,
        "sounds_slow_scenes": k2, "sounds_slow_s": t_snd_slow, "sounds_slow_per_s": snd_slow_rate,
        "sounds_ratio_fast_over_slow": snd_rate / snd_slow_rate, "sounds_max_abs_diff_vs_slow": snd_max_diff,
        "sounds_energy_checksum": energy,
        "log_mel_s": None if args.no_mel else t_mel, "log_mel_shape": None if mel_shape is None else list(mel_shape),
        "peak_rss_mb_start": rss_start, "peak_rss_mb_after_images": rss_images,
        "peak_rss_mb_after_sounds": rss_sounds,
        "wall_s": time.perf_counter() - t_start,
    }
    print(f"machine    {result['cpus']} cpus, {result['threads']} numba threads, load average "
          f"{load_before[0]:.1f} before / {result['loadavg_after'][0]:.1f} after")
    print(f"images     {n:,} scenes at {args.height}x{args.width} (ss {args.supersample}): {t_img:.1f} s "
          f"-> {img_rate:,.0f} scenes/s (compile {t_img_compile:.1f} s; target 100,000 in <= 60 s)")
    print(f"  slow     {k:,} scenes in {t_img_slow:.2f} s -> {img_slow_rate:,.1f} scenes/s; "
          f"ratio {img_rate / img_slow_rate:,.0f}x; max |fast - slow| = {img_max_diff}")
    print(f"sounds     {n:,} clips of {sound.n_samples:,} samples: {t_snd:.1f} s -> {snd_rate:,.0f} scenes/s "
          f"(compile {t_snd_compile:.1f} s)")
    print(f"  slow     {k2:,} clips in {t_snd_slow:.2f} s -> {snd_slow_rate:,.0f} scenes/s; "
          f"ratio {snd_rate / snd_slow_rate:,.1f}x; max |fast - slow| = {snd_max_diff:.2g}")
    if not args.no_mel:
        print(f"log-mel    {n:,} clips -> {tuple(mel_shape)} each: {t_mel:.1f} s")
    print(f"memory     peak RSS {rss_start:.0f} MB after sampling, {rss_images:.0f} MB after images, "
          f"{rss_sounds:.0f} MB after sounds")
    print(f"wall       {result['wall_s']:.1f} s")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
