"""``render SPACE SCENE_ID``: one scene as a picture (PNG) or a sound (WAV); ``render SPACE --bank``:
every scene in a modality, cached in the space's folder."""
from __future__ import annotations

from pathlib import Path

from ..errors import BayesConceptsError
from ..command_registry import command
from ..options import LazyChoices, LazyHelp, describe_choices, lazy_registry, whole
from ..preflight import check_output_file
from ..run_args import open_space


def _render_arguments(p):
    p.add_argument("space", metavar="SPACE", help="a saved hypothesis space")
    p.add_argument("scene_id", metavar="SCENE_ID", type=int, nargs="?", help="index in the space's scene bank")
    p.add_argument("--sound", action="store_true", help="write the scene's sound (WAV) instead of its picture")
    modalities = lazy_registry("modalities", "modalities")
    p.add_argument("--modality", choices=LazyChoices(modalities), metavar="NAME", default=None,
                   help=LazyHelp(lambda: f"the modality to render in ({describe_choices(modalities())}; default "
                                         "image, sound with --sound); one scene is written as a picture or a sound, "
                                         "--bank renders in any"))
    p.add_argument("--out", metavar="FILE.png|FILE.wav",
                   help="where to write the picture (.png) or, with --sound, the clip (.wav)")
    p.add_argument("--bank", action="store_true",
                   help="render every scene of the bank into SPACE/rendered/ (uint8 pictures or float32 clips, .npy, "
                        "checksummed; read back by later runs and by image/sound learners); an existing bank is "
                        "checked instead")
    p.add_argument("--rebuild", action="store_true", help="with --bank: render again, replacing a damaged or stale bank")
    p.add_argument("--height", type=whole(1), default=None,
                   help="picture height in pixels (default 160 for one scene, 80 with --bank; a ConceptWorld "
                        "space: its 32 x 32 grid picture, or a whole multiple of 32 equal to --width)")
    p.add_argument("--width", type=whole(1), default=None,
                   help="picture width in pixels (default 240 for one scene, 120 with --bank)")


#: What one rendering of each modality that ``render SCENE_ID`` writes as a file is called.
_ONE_SCENE_WORDS = {"image": "picture", "sound": "sound"}


def _modality(args) -> str:
    """The modality ``render`` draws in: ``--modality NAME`` (a registered modality), else
    ``sound`` with ``--sound``, else the first registered one (``image``); ``--sound`` with
    another ``--modality`` is an error."""
    from ..modalities import modalities
    if args.modality is not None:
        if args.sound and args.modality != "sound":
            raise BayesConceptsError(f"--sound and --modality {args.modality} disagree: give one of them")
        return args.modality
    return "sound" if args.sound else modalities.names()[0]


@command("render", order=120, arguments=_render_arguments,
         help="draw one scene of a space as a PNG picture, or a WAV sound with --sound; --bank: every scene, "
              "cached in the space directory")
def cmd_render(args) -> int:
    import numpy as np

    from ..scenes.render import render_scene_png
    from ..scenes.sound import SoundSettings, synthesize_scene, write_wav
    args.modality = _modality(args)
    args.sound = args.modality == "sound"
    _check_picture_memory(args)
    if args.bank:
        return _render_bank(args)
    if args.scene_id is None or args.out is None or args.rebuild:
        raise BayesConceptsError("render: give SCENE_ID and --out FILE for one scene, or --bank (without them) "
                                 "for the whole scene bank" + (" (--rebuild goes with --bank)" if args.rebuild else ""))
    if args.modality not in _ONE_SCENE_WORDS:
        raise BayesConceptsError(f"render --modality {args.modality}: one scene is written as a picture (image) or a "
                                 f"sound (sound); render --bank --modality {args.modality} renders every scene")
    suffix = ".wav" if args.sound else ".png"
    if Path(args.out).suffix.lower() != suffix:
        raise BayesConceptsError(f"--out {args.out}: expected a {suffix} file"
                                 + (" (a sound with --sound)" if args.sound else " (or --sound for a .wav)"))
    check_output_file(args.out, "--out")
    space = open_space(args.space)
    if not 0 <= args.scene_id < space.n_scenes:
        raise BayesConceptsError(f"scene id {args.scene_id} out of range (the space has {space.n_scenes:,} "
                                 f"scenes, 0..{space.n_scenes - 1})")
    j = int(args.scene_id)  # checked above; (importing the learners would load torch: seconds)
    if space.has_grids:
        return _render_grid(args, space, j)
    codes = np.asarray(space.scene_codes[j])
    if args.sound:
        settings = SoundSettings()
        write_wav(synthesize_scene(codes, space.schema, settings), settings.rate, args.out)
    else:
        positions = space.positions([j])  # objects placed in 3-D (spaces whose scenes carry relations)
        render_scene_png(codes, space.schema, args.out, None if positions is None else positions[0],
                         height=args.height or 160, width=args.width or 240)
    print(f"scene {args.scene_id} written to {args.out}")
    return 0


#: Bytes per pixel of one picture while it is rendered (2 x 2 rays a pixel, three float64
#: channels each, and the uint8 picture).
_RENDER_PIXEL_BYTES = 2 * 2 * 3 * 8 + 3


def _check_picture_memory(args):
    """Refuse, before any work, ``render --height H --width W`` whose picture cannot be drawn
    in the memory available (one line naming both options, as ``gap --episodes`` is refused)."""
    if args.sound or not (args.height or args.width):
        return
    from ..scale import check_memory
    h, w = args.height or 160, args.width or 240
    check_memory(h * w * _RENDER_PIXEL_BYTES, f"--height {h:,} --width {w:,}", "give a smaller picture",
                 f"one picture of {h * w:,} pixels")


def _render_grid(args, space, j: int) -> int:
    """``render SPACE J --out FILE.png`` on a ConceptWorld space: scene ``j`` as the seed's
    grid picture, (N, N) pixels (32 x 32), one per point, black background; ``--height H
    --width H`` with H a whole multiple of N enlarges it (blocks of H/N pixels a point)."""
    from ..scenes.grid import write_grid_png
    if args.sound:
        raise BayesConceptsError(f"render --sound: {args.space} is a ConceptWorld space: its grid scenes are "
                                 "pictures and have no sound (leave out --sound, write a .png)")
    grid = space.grid(j)
    n = grid.shape[0]
    h, w = args.height or n, args.width or n
    if h != w or h % n:
        given = " ".join(f"--{k} {v}" for k, v in (("height", args.height), ("width", args.width)) if v)
        raise BayesConceptsError(f"render {given}: {args.space} is a "
                                 f"ConceptWorld space of {n} x {n} grids: the picture is square, a whole multiple "
                                 f"of {n} pixels a side (give both, equal, e.g. --height {8 * n} --width {8 * n}, "
                                 f"or neither for {n} x {n})")
    write_grid_png(args.out, grid, space.grid_colors(), scale=h // n)
    print(f"scene {j} written to {args.out} ({h} x {w} grid picture, {int((grid >= 0).sum())} points)")
    return 0


def _render_bank(args) -> int:
    import time

    from ..engine.rendered import RENDERED_DIR
    if args.scene_id is not None or args.out is not None:
        raise BayesConceptsError("render --bank renders every scene into the space's own folder: give no SCENE_ID "
                                 "and no --out")
    space = open_space(args.space)
    if space.has_grids:
        raise BayesConceptsError(f"render --bank: {args.space} is a ConceptWorld space: its grid scenes are stored in "
                                 "its item names and drawn one at a time (render SPACE SCENE_ID --out FILE.png); "
                                 "there is no cached bank")
    if not space.has_pictures:
        raise BayesConceptsError(f"{args.space}: this {space.kind} space has no pictures: its concepts are given sets "
                                 f"of {space.scene_noun}s, not scenes that can be drawn (render --bank needs a program "
                                 "space)")
    from ..modalities import modalities
    takes = modalities.get(args.modality).defaults
    options = {k: getattr(args, k) for k in ("height", "width") if k in takes}
    t = time.perf_counter()
    bank = space.rendered_bank(args.modality, rebuild=args.rebuild, **options)
    where = Path(getattr(bank, "filename", None) or Path(args.space) / RENDERED_DIR)
    print(f"{_ONE_SCENE_WORDS.get(args.modality, args.modality + ' rendering')}s of {bank.shape[0]:,} scenes: {bank.dtype} {tuple(bank.shape)} "
          f"in {where} ({bank.nbytes / 1e6:,.1f} MB, checksum verified, {time.perf_counter() - t:.1f} s)")
    return 0
