"""The :class:`Modality` contract and the :data:`modalities` registry (see the package docstring)."""
from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from types import MappingProxyType
from typing import Mapping

import numpy as np

from ..errors import BayesConceptsError
from ..registry import Registry

__all__ = ["Modality", "ModalityError", "modalities", "settings_key"]


class ModalityError(BayesConceptsError):
    """Options a modality does not take, or values it refuses (one line naming them)."""


#: The modalities scenes can be rendered in, by name: :class:`Modality` objects.  The
#: built-in ones (``image``, ``sound``) are registered by their modules, imported on the
#: registry's first use.
modalities = Registry("modality", builtins=("bayes_concepts.modalities.image", "bayes_concepts.modalities.sound"))


def settings_key(settings: dict) -> str:
    """A short, stable key of a settings dict: the first 10 hex digits of the sha256 of its
    sorted JSON (what the default bank file name carries)."""
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:10]


class Modality:
    """How a bank of scenes becomes an array in one modality (pictures, sounds, ...).

    A modality is an object registered in :data:`modalities` under its :attr:`name`.  A
    subclass sets the class attributes below and implements :meth:`item_shape` and
    :meth:`render`; it overrides :meth:`make_settings` to check and complete the options
    and :meth:`file_name` to name its cached banks otherwise than
    ``<name>_<settings key>.npy``.

    What a rendered bank of ``n`` scenes with settings ``s`` is: an array of dtype
    :attr:`dtype` and shape ``(n,) + item_shape(s)``, row ``j`` the rendering of scene ``j``;
    the same codes and settings always give the same values.
    """

    #: The registry name; also the prefix (``<name>_``) of its banks' file names.
    name: str = ""
    #: One line for help texts.
    summary: str = ""
    #: The options a bank takes (``space.rendered_bank(name, **options)``) and their
    #: defaults; an option given as ``None`` takes its default.
    defaults: Mapping = MappingProxyType({})
    #: Data type of a rendered bank.
    dtype: np.dtype = np.dtype(np.float32)
    #: Modules whose source decides what a bank holds (a change to them makes cached banks
    #: stale); default: the module that defines the modality.
    sources: tuple = ()
    #: The options the learners' encoder of this modality renders with by default.
    encoder_defaults: Mapping = MappingProxyType({})

    # ------------------------------------------------------------ options -> settings
    def settings(self, **options) -> dict:
        """The complete settings of a bank (defaults filled in, values checked), as a
        JSON-able dict: what the cache's table records and what :meth:`render` takes.
        Options given as ``None`` take their defaults; an option the modality does not take
        is a :class:`ModalityError`."""
        given = {k: v for k, v in options.items() if v is not None}
        unknown = [k for k in given if k not in self.defaults]
        if unknown:
            takes = ", ".join(self.defaults) or "no options"
            raise ModalityError(f"{', '.join(k + '=' for k in unknown)} {'is' if len(unknown) == 1 else 'are'} not "
                                f"an option of {self.name} banks (they take {takes})")
        settings = self.make_settings({**self.defaults, **given})
        try:
            json.dumps(settings, sort_keys=True)
        except (TypeError, ValueError):
            raise ModalityError(f"{self.name} settings {settings!r} are not JSON-able") from None
        return settings

    def make_settings(self, options: dict) -> dict:
        """Every option (defaults filled in) -> the checked settings; default: the options."""
        return dict(options)

    # ------------------------------------------------------------ what a bank is
    def item_shape(self, settings: dict) -> tuple:
        """Shape of the rendering of one scene with these settings."""
        raise NotImplementedError

    def shape(self, n_scenes: int, settings: dict) -> tuple:
        """Shape of a bank of ``n_scenes`` scenes."""
        return (int(n_scenes),) + tuple(int(v) for v in self.item_shape(settings))

    def render(self, codes: np.ndarray, schema, settings: dict) -> np.ndarray:
        """Scene codes int (n, S, A) of ``schema`` -> the array (n,) + :meth:`item_shape`
        of dtype :attr:`dtype`."""
        raise NotImplementedError

    # ------------------------------------------------------------ its cache files
    def file_name(self, settings: dict) -> str:
        """Name of the cached bank of these settings in a space's ``rendered/`` folder."""
        return f"{self.name}_{settings_key(settings)}.npy"

    def owns(self, file_name: str) -> bool:
        """Whether ``file_name`` may be one of this modality's banks (by its prefix)."""
        return file_name.startswith(self.name + "_")

    def fingerprint(self) -> str:
        """sha256 of the source files of :attr:`sources` (in order): a bank rendered under
        another fingerprint is stale."""
        modules = self.sources or (sys.modules[type(self).__module__],)
        h = hashlib.sha256()
        for m in modules:
            h.update(Path(m.__file__).read_bytes())
        return h.hexdigest()

    # ------------------------------------------------------------ how figures draw it
    #: Whether the episode view may draw an item of this modality in its scene's place.
    in_episode_view: bool = False
    #: What one drawn item is called in a figure's title (``"picture"``).
    item_noun: str = "rendering"

    @property
    def draws(self) -> bool:
        """Whether this modality draws its items (its class defines :meth:`draw_items`); the
        figures show only the modalities that do."""
        return type(self).draw_items is not Modality.draw_items

    def draw_items(self, axes, items, settings: dict, *, fill: bool = False) -> list:
        """Draw ``items[k]`` into ``axes[k]`` (matplotlib Axes), all on one scale.

        ``items``: renderings of this modality with ``settings``, ``(n,) + item_shape``;
        ``fill``: stretch each item to its Axes' box instead of keeping its proportions.
        Returns one dict per item: the numbers drawn that a figure reports in its data
        (column -> value).  A modality that draws nothing raises :class:`ModalityError`."""
        raise ModalityError(f"the {self.name} modality does not draw its items (it defines no draw_items)")

    def drawn_size(self, settings: dict) -> tuple:
        """``(height, width)`` of one drawn item, in any unit: the episode view shapes its cells
        by it.  Default: the first two axes of :meth:`item_shape` (square when it has fewer)."""
        shape = self.item_shape(settings)
        return (int(shape[0]), int(shape[1])) if len(shape) >= 2 else (1, 1)

    def row_label(self, settings: dict) -> str:
        """The label of a figure's row of this modality's items (default: its name)."""
        return self.name

    def legend_note(self, settings: dict) -> str:
        """A few lines on how the drawn items were made, for a figure's legend."""
        return f"{self.name}: {self.summary}"

    def __repr__(self):
        return f"{type(self).__name__}({self.name!r})"
