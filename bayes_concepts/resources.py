"""The toolkit's data files: CURI's grammar and the split specs of ``hypotheses/``.

The files live in the top-level folder ``hypotheses/`` of the source tree (users edit
them there).  A built wheel carries a copy as the folder ``bayes_concepts/hypotheses/``
(``pyproject.toml`` maps it onto ``hypotheses/``).  Lookups try, in this order,

1. the packaged copy, through :func:`importlib.resources.files` (a regular or a
   zipped install);
2. ``hypotheses/`` next to the package in a source tree (an editable install, or
   the repository on ``PYTHONPATH``), recognised by its ``pyproject.toml``.

Every function returns a real :class:`pathlib.Path`.  A file inside a zip archive is
copied once per process into a temporary folder that is removed at exit.

>>> default_grammar_path().name
'curi.pcfg'
>>> sorted(p.stem for p in curi_splits_dir().glob("*.toml"))[:2]
['binding_color', 'binding_shape']
"""
from __future__ import annotations

import atexit
import shutil
import tempfile
from functools import lru_cache
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

from .errors import BayesConceptsError

#: Name of the data folder, both inside the package and in the source tree.
DATA_FOLDER = "hypotheses"


class DataFileError(BayesConceptsError):
    """A data file of the toolkit (grammar, split spec) that cannot be found."""


def _source_data_root() -> Path | None:
    """``hypotheses/`` beside the package in a source tree, or ``None`` when not in one."""
    root = Path(__file__).resolve().parents[1]
    if (root / "pyproject.toml").is_file() and (root / DATA_FOLDER).is_dir():
        return root / DATA_FOLDER
    return None


def _candidates(parts: tuple) -> list:
    found = []
    try:
        found.append(resources.files(__package__).joinpath(DATA_FOLDER, *parts))
    except (ModuleNotFoundError, OSError):
        pass
    source = _source_data_root()
    if source is not None:
        found.append(source.joinpath(*parts))
    return found


@lru_cache(maxsize=1)
def _extraction_dir() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="bayes_concepts_data_"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


def _copy_out(node: Traversable, dest: Path) -> Path:
    """Copy a file or folder ``node`` of a non-filesystem resource tree to ``dest``."""
    if node.is_dir():
        dest.mkdir(parents=True, exist_ok=True)
        for child in node.iterdir():
            _copy_out(child, dest / child.name)
    else:
        dest.write_bytes(node.read_bytes())
    return dest


@lru_cache(maxsize=None)
def _data_file(parts: tuple) -> Path:
    for node in _candidates(parts):
        if not (node.is_file() or node.is_dir()):
            continue
        if isinstance(node, Path):
            return node
        return _copy_out(node, _extraction_dir().joinpath(*parts))
    where = [f"the package's {DATA_FOLDER}/"] + ([str(_source_data_root())] if _source_data_root() else [])
    raise DataFileError(f"cannot find the data file {DATA_FOLDER}/{'/'.join(parts)} "
                        f"(looked in {' and '.join(where)}); is bayes_concepts installed completely?")


def data_file(*parts: str) -> Path:
    """The path of a data file or folder of ``hypotheses/``.

    Parameters
    ----------
    *parts : str
        Path components below ``hypotheses/``, e.g. ``("splits", "counting.toml")``;
        none (the data folder itself) is allowed.

    Returns
    -------
    pathlib.Path
        An existing file or folder on the file system.

    Raises
    ------
    DataFileError
        When neither the packaged copy nor a source tree holds it.
    """
    for part in parts:
        if not isinstance(part, str) or not part or "/" in part or "\\" in part or part in (".", ".."):
            raise DataFileError(f"data file path components must be plain names, got {part!r}")
    return _data_file(tuple(parts))


def default_grammar_path() -> Path:
    """CURI's grammar file ``hypotheses/curi.pcfg`` (see :func:`data_file`)."""
    return data_file("curi.pcfg")


def curi_splits_dir() -> Path:
    """The folder ``hypotheses/splits/`` of CURI's nine split specs (see :func:`data_file`)."""
    return data_file("splits")


__all__ = ["DATA_FOLDER", "DataFileError", "curi_splits_dir", "data_file", "default_grammar_path"]
