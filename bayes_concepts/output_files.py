"""Files the toolkit writes in one piece (results, episodes): never over a file it did not
write, over an earlier file of its own only when asked, and by one writer at a time.

A saved space is a directory, checked and replaced by :mod:`bayes_concepts.engine.store`
(``check_save_target``: "refusing to delete what bayes-concepts did not write").  A single
output file follows the same rules here:

* :func:`check_target`, before any work: a path that does not exist is fine; an existing
  file the toolkit did not write (``ours(path)`` is False: notes, a figure, a symbolic link)
  is refused even with ``overwrite`` -- the toolkit deletes only what it wrote; a file it
  wrote earlier is refused unless ``overwrite`` (``--force``).  The returned
  :class:`Target` remembers which file was there.
* :func:`write_file`, after the work: the content is written to a temporary file of this
  write's own in the same folder (``.<name>.<random>.partial``), then, holding a lock on
  the folder, put in place only if the path still holds what :func:`check_target` saw --
  created exclusively where nothing was, renamed over the same earlier file otherwise.  Of
  two runs writing one path at once, exactly one succeeds; the other is told, and leaves
  nothing behind.  A reader sees the old file or the new one, never part of one.

This module sits among the package's pure helpers, so that :mod:`bayes_concepts.results`
(and every layer above) can use it; the space store shares its folder helpers
(:func:`nearest_existing_folder`, :func:`fsync_dir`).
"""
from __future__ import annotations

import contextlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .errors import BayesConceptsError


class OutputFileError(BayesConceptsError):
    """An output file that may not be written or replaced; names the path."""


class ConcurrentWriteError(OutputFileError):
    """Another writer put a file at the path between this write's check and its commit."""


@dataclass(frozen=True)
class Target:
    """A path checked by :func:`check_target`: ``seen`` identifies the file that was there
    (device, inode, size, modification time), None when there was none."""

    path: Path
    seen: tuple | None
    overwrite: bool


def nearest_existing_folder(path) -> tuple:
    """``(folder, problem)``: ``path`` or its nearest existing ancestor, where a missing
    ``path`` would be created, and why nothing can be written there (``"not a directory"``,
    ``"permission denied"``), or None when it can."""
    first = Path(path)
    while not first.exists():
        first = first.parent
    if not first.is_dir():
        return first, "not a directory"
    if not os.access(first, os.W_OK | os.X_OK):
        return first, "permission denied"
    return first, None


def fsync_dir(d: Path):
    """Flush directory ``d``'s entries to disk (where the platform has directory handles)."""
    try:
        fd = os.open(d, os.O_RDONLY)
    except OSError:  # platforms without directory handles
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _identity(path: Path):
    """What identifies the file at ``path`` (not following a link), None when nothing is there."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _a(what: str) -> str:
    return ("an " if what[:1] in "aeiou" else "a ") + what


def _where(path, option) -> str:
    return f"{option} {path}" if option else str(path)


def check_target(path, *, ours: Callable, what: str, overwrite: bool = False, option: str | None = None) -> Target:
    """Check, before any work, that a ``what`` (``"results file"``) may be written at ``path``;
    writes and deletes nothing.  ``ours(path)``: whether the existing file there is one the
    toolkit wrote (a ``what`` of its own).  ``option`` (``"--out"``) prefixes the messages.

    Refused, as an :class:`OutputFileError` of one line: a directory or any other
    non-file; a symbolic link; a file the toolkit did not write (even with ``overwrite``);
    an earlier ``what`` without ``overwrite``."""
    path = Path(path)
    where = _where(path, option)
    if path.is_symlink():
        raise OutputFileError(f"{where}: is a symbolic link; refusing to replace what bayes-concepts did not write "
                              "(even with --force): give another file name")
    if path.is_dir():
        raise OutputFileError(f"{where}: is a directory; give a file name")
    if path.exists() and not path.is_file():
        raise OutputFileError(f"{where}: exists and is not a regular file; give another file name")
    seen = _identity(path)
    if seen is not None:
        if not ours(path):
            raise OutputFileError(f"{where}: exists and is not {_a(what)} bayes-concepts wrote; refusing to replace "
                                  "what bayes-concepts did not write (even with --force): give another file name, "
                                  "or move that file away")
        if not overwrite:
            raise OutputFileError(f"{where}: an earlier {what} is there (written by bayes-concepts); pass --force "
                                  "(overwrite=True) to replace it, or give another file name")
    return Target(path, seen, overwrite)


@contextlib.contextmanager
def _folder_lock(folder: Path):
    """Hold an exclusive lock on ``folder`` (``flock`` on its handle; nothing where the
    platform has neither): the commits of writers into one folder take turns."""
    try:
        import fcntl
    except ImportError:  # not POSIX: the exclusive create below still lets one new file win
        yield
        return
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def _concurrent(target: Target, what: str, option) -> ConcurrentWriteError:
    was = "nothing was there" if target.seen is None else "this run was to replace the earlier one"
    return ConcurrentWriteError(f"{_where(target.path, option)}: another bayes-concepts run wrote {_a(what)} there "
                                f"while this one ran ({was} when it started): this run's {what} was not written; "
                                "run it again with another file name")


def write_file(target: Target, write: Callable, *, what: str, option: str | None = None,
               mode: int = 0o666) -> Path:
    """Write a ``what`` at ``target.path`` (checked by :func:`check_target`): ``write(tmp)``
    writes the whole content into the temporary file ``tmp`` (same folder; it exists, empty),
    then it takes the path's place if the path still holds what the check saw (see the
    module's notes).  The file gets ``mode`` less the umask.  Any failure leaves no
    temporary file; a :class:`ConcurrentWriteError` when another writer got there first.
    Returns the path."""
    path = target.path
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".partial")
    os.close(fd)
    tmp = Path(name)
    try:
        write(tmp)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, mode & ~umask)  # mkstemp's files are 0600; results are meant to be shared
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        with _folder_lock(path.parent):
            now = _identity(path)
            if now is None:
                try:
                    os.link(tmp, path)  # created only if still absent: one new file wins
                except FileExistsError:
                    raise _concurrent(target, what, option) from None
                except OSError:  # a file system without hard links: the lock keeps the turns
                    os.replace(tmp, path)
            elif target.seen is not None and now == target.seen and target.overwrite:
                os.replace(tmp, path)
            else:
                raise _concurrent(target, what, option)
        fsync_dir(path.parent)
    finally:
        tmp.unlink(missing_ok=True)  # linked in place, or the write failed
    return path
