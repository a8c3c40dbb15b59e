"""Checks the command line makes before any work: that an output file or folder can be
written (and, for a results file, that nothing the toolkit did not write is there), and that a
run's results fit in the memory available; each refusal is one line naming the option."""
from __future__ import annotations

import os
from pathlib import Path

from .errors import BayesConceptsError


def check_output_file(path, option: str, create_parents: bool = False):
    """Raise unless a file can be written at ``path`` (checked before any computation); with
    ``create_parents``, missing parent folders are fine when they can be created (the writer
    creates them, as ``space build`` does)."""
    p = Path(path)
    if p.is_dir():
        raise BayesConceptsError(f"{option} {path}: is a directory; give a file name")
    parent = p.parent
    if parent.exists() and not parent.is_dir():
        raise BayesConceptsError(f"{option} {path}: {parent} is not a directory")
    if create_parents and not parent.exists():
        from .engine.store import nearest_existing_folder
        first, problem = nearest_existing_folder(parent)
        if problem == "not a directory":
            raise BayesConceptsError(f"{option} {path}: {first} is not a directory")
        if problem:
            raise BayesConceptsError(f"{option} {path}: cannot create folders in {first} (permission denied)")
        return
    if not parent.is_dir():
        raise BayesConceptsError(f"{option} {path}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise BayesConceptsError(f"{option} {path}: cannot write into {parent} (permission denied)")
    if p.exists() and not os.access(p, os.W_OK):
        raise BayesConceptsError(f"{option} {path}: the file exists and is not writable")


def check_results_out(args, option: str = "--out"):
    """Before any work: the ``--out`` results file of ``args`` may be written (its folder, and
    nothing there but, with ``--force``, a results file the toolkit wrote earlier); the checked
    target for :func:`~bayes_concepts.results.save_results`, None without ``--out``.
    ``--force`` without ``--out`` is refused (it would be ignored)."""
    if getattr(args, "out", None) is None:
        if getattr(args, "force", False):
            raise BayesConceptsError(f"--force: only with {option} (it lets {option} replace a results file "
                                     "bayes-concepts wrote earlier)")
        return None
    check_output_file(args.out, option, create_parents=True)  # save_results creates missing folders
    from .results import check_results_file
    return check_results_file(args.out, getattr(args, "force", False), option)


def check_output_dir(path, option: str):
    """Raise unless directory ``path`` exists or can be created, and files can be written in it."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise BayesConceptsError(f"{option} {path}: exists and is not a directory")
    from .engine.store import nearest_existing_folder
    first, problem = nearest_existing_folder(p)
    if problem == "not a directory":
        raise BayesConceptsError(f"{option} {path}: {first} is not a directory")
    if problem:
        raise BayesConceptsError(f"{option} {path}: cannot write into {first} (permission denied)")


def check_before_work(args, n_cells: int | None = None, n_learners: int = 2, folders=None):
    """What a comp-gap or ladder command checks before any import or work: that its ``--out``
    results file may be written (:func:`check_results_out`), that each output folder of
    ``folders`` (``{option: path or None}``) can be, then (given ``n_cells``) that
    ``args.episodes`` episodes of ``n_cells`` cells and ``n_learners`` learners fit in memory;
    the checked ``--out`` target."""
    target = check_results_out(args)
    for option, path in (folders or {}).items():
        if path:
            check_output_dir(path, option)
    if n_cells is not None:
        check_gap_memory(args.episodes, n_cells, n_learners)
    return target


def check_gap_memory(n_episodes: int, n_cells: int, n_learners: int = 2, option: str = "--episodes"):
    """Refuse, before any allocation, a comp-gap run whose results (``n_cells`` cells of
    ``n_episodes`` episodes, ``n_learners`` learners) cannot fit in the memory available:
    one line naming the option, the estimate and what is available."""
    from .scale import check_memory, gap_bytes
    check_memory(gap_bytes(n_episodes, n_cells, n_learners, keep_episodes=n_learners > 2),
                 f"{option} {n_episodes}", "give fewer episodes (or fewer splits)",
                 f"results of {n_cells} cell(s) x {n_learners} learner(s)")
