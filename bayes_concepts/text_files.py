"""Reading the toolkit's text files (specs, definitions, pair lists, grammars, results) with
one error: a file that cannot be read, is not UTF-8 or is not valid TOML is a one-line error of
the caller's kind, naming the file and what it was read as.

>>> read_text("nope.toml", what="split spec")  # doctest: +SKIP
BayesConceptsError: nope.toml: cannot read split spec (No such file or directory)
"""
from __future__ import annotations

import tomllib
from pathlib import Path

from .errors import BayesConceptsError


def read_text(path, error: type = BayesConceptsError, what: str = "") -> str:
    """The UTF-8 text of ``path``; an ``error`` (a :class:`BayesConceptsError` subclass) naming
    the file, and ``what`` it is (``"split spec"``), when it cannot be read or is not UTF-8."""
    path = Path(path)
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"{path}: {what + ' is ' if what else ''}not UTF-8 text ({exc.reason} at byte {exc.start})") \
            from None
    except OSError as exc:
        raise error(f"{path}: cannot read {what or 'the file'} ({exc.strerror or exc})") from None


def read_toml(path, error: type = BayesConceptsError, what: str = "") -> dict:
    """The TOML file ``path`` as a dict (:func:`read_text`, then ``tomllib``); an ``error``
    naming the file when it is not valid TOML."""
    text = read_text(path, error, what)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{path}: {what + ' is ' if what else ''}invalid TOML: {exc}") from None


__all__ = ["read_text", "read_toml"]


def zip_file_kind(path, what: str, error=BayesConceptsError) -> str:
    """``"zip"`` when ``path`` is a zip archive (an ``.npz``), else what the file is instead
    ("an empty file", "a NumPy .npy array", "JSON text", "not a zip archive"); a missing file or
    a directory is one ``error`` line naming ``what`` was expected."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(8)
    except FileNotFoundError:
        raise error(f"{path}: no such {what}") from None
    except IsADirectoryError:
        raise error(f"{path}: is a directory, not {'an' if what[0] in 'aeiou' else 'a'} {what}") from None
    if head.startswith(b"PK\x03\x04"):
        return "zip"
    return ("an empty file" if not head else "a NumPy .npy array" if head.startswith(b"\x93NUMPY")
            else "JSON text" if head.lstrip()[:1] in (b"{", b"[") else "not a zip archive")
