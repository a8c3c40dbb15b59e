"""Concept spaces: the object every stage after the build reads.

:class:`ConceptSpace` is the contract (:mod:`.concept_space`): concepts and their
extensions over a scene or item bank, synonym classes, the test bank, lengths, counts,
descriptions, the manifest identity and one store; its :class:`SpaceIndex` holds every
derived structure (:mod:`.space_index`).  Kinds of space subclass it and register in
:data:`space_kinds`:

* :class:`HypothesisSpace` (``"program"``): programs of a grammar over a scene bank,
  built by the stages of :mod:`.build`;
* :class:`ExtensionSpace` (``"extension"``): concepts given as sets of items (attribute-
  object benchmarks).

:func:`load_space` reads a saved space of any kind.
"""
from ..engine.store import SpaceError
from .concept_space import ConceptSpace, SpaceCapabilityError, load_space, space_kinds
from .extension_space import Description, ExtensionSpace, ExtensionSpaceError, Vocabulary
from .hypothesis_space import PRESETS, HypothesisSpace
from .space_index import SpaceIndex


def build_space(preset: str, **options):
    """The space of preset ``preset`` (a name of :data:`PRESETS`, the one registry of presets,
    the suites' and installed ones alike): its own ``make(**options)`` where it has one (SHJ's,
    ConceptWorld's, a plugin's), else :meth:`HypothesisSpace.build` with its parameters and
    ``options`` (``samples=...``, ``seed=...``)."""
    entry = PRESETS.get(preset)
    if entry.make is not None:
        return entry.make(**options)
    return HypothesisSpace.build(preset, **options)


__all__ = ["build_space", "ConceptSpace", "SpaceIndex", "SpaceCapabilityError", "SpaceError", "space_kinds", "load_space",
           "HypothesisSpace", "ExtensionSpace", "Description", "Vocabulary", "ExtensionSpaceError", "PRESETS"]
