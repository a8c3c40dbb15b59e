"""The ``clevr`` preset: CLEVR's relational language with CLOSURE's families and CLEVR's templates.

``hypotheses/clevr.pcfg``: 3-10 objects with 3-D positions and CLEVR's four spatial
relations; the programs sampled from the grammar plus, through the program source
``closure`` (build options ``closure_per_family`` and ``clevr_per_template``, seed 0), the
concepts of CLOSURE's seven families and their CLEVR baselines and of CLEVR's 90 question
templates, which protocols ``closure`` and ``closure-baselines`` split on.
"""
from __future__ import annotations

from functools import lru_cache

from ...presets import PRESETS, Preset, ProgramSource, program_sources

#: Concepts of each of CLEVR's question templates in the ``clevr`` preset (one question each,
#: or one per answer of a query or count question).
CLEVR_PER_TEMPLATE = 50


@lru_cache(maxsize=8)
def _closure_family_programs(grammar, per_family: int, per_template: int | None = None) -> dict:
    """``{"closure_families_added": ((program, log-prob), ...), "clevr_templates_added": ...}``:
    CLOSURE's families, then CLEVR's question templates (``per_template`` of each; none for
    None), under ``grammar``, each program once (a template's program that is also a family's
    is counted with the families; parsed and scored once per process: the inside algorithm on
    ~13,000 long programs takes seconds, shared spans scored once)."""
    from ...lot.program import Program
    from .clevr_templates import preset_clevr_concepts
    from .families import preset_family_concepts
    groups = {"closure_families_added": [t for ts in preset_family_concepts(per_family).values() for t in ts]}
    if per_template:
        groups["clevr_templates_added"] = [t for ts in preset_clevr_concepts(per_template).values() for t in ts]
    out, seen = {}, set()
    for stage, texts in groups.items():
        progs = []
        for text in dict.fromkeys(texts):
            if text in seen:
                continue
            seen.add(text)
            progs.append(Program.parse(text, grammar))
        out[stage] = tuple(zip(progs, Program.log_probs(progs, grammar)))
    return out


def _programs(grammar, p) -> dict | tuple:
    """The families' (and templates') programs a build with parameters ``p`` adds, a group per
    stage; () when off."""
    if not p.get("closure_per_family"):
        return ()
    per_template = int(p["clevr_per_template"]) if p.get("clevr_per_template") else None
    return _closure_family_programs(grammar, int(p["closure_per_family"]), per_template)


def _describe(p, added: int) -> str:
    per_template = p.get("clevr_per_template")
    return ("CLOSURE's families" + (" and CLEVR's templates" if per_template else "")
            + f": {added:,} concepts added ({p['closure_per_family']} per family"
            + (f", {per_template} per template" if per_template else "") + ")")


program_sources.register("closure", ProgramSource(
    params=dict(closure_per_family=None, clevr_per_template=None), programs=_programs,
    stage="closure_families_added", describe=_describe))

PRESETS.register("clevr", Preset(
    "CLEVR's relational language with CLOSURE's families and CLEVR's templates (20,000 samples, 20,000 scenes)",
    dict(samples=20_000, scenes=20_000, scene_sampler="clevr", grammar_file="clevr.pcfg",
         closure_per_family=100, clevr_per_template=CLEVR_PER_TEMPLATE)))
