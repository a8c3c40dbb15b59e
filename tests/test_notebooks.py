"""The notebooks run end to end on a small space (nbclient), show their figures, and are
stored without outputs."""
import os
import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).parents[1] / "notebooks").glob("*.ipynb"))
#: a cell that draws: a ``plot_*`` function, pyplot's subplots, or the observer fit's check
DRAWS = re.compile(r"\bplot_\w+\(|\bplt\.subplots\(")


def test_the_notebooks_are_listed():
    assert [p.stem for p in NOTEBOOKS] == ["01_gap_of_a_new_split", "02_audit_a_benchmark", "03_ideal_observer_fit",
                                           "04_audit_your_benchmark", "05_place_a_model",
                                           "06_three_modalities", "07_closure", "08_conceptworld", "09_people_shj",
                                           "10_ladder"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_stored_without_outputs(path):
    book = nbformat.read(path, as_version=4)
    for cell in book.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None


def _writes_files(path) -> bool:
    """Whether the notebook writes files (into its scratch folder, BAYES_CONCEPTS_WORK)."""
    return "BAYES_CONCEPTS_WORK" in path.read_text()


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs(path, small_space_dir, tmp_path_factory, monkeypatch):
    monkeypatch.setenv("BAYES_CONCEPTS_SPACE", str(small_space_dir))
    monkeypatch.setenv("BAYES_CONCEPTS_EPISODES", "100")
    monkeypatch.setenv("BAYES_CONCEPTS_FAST", "1")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    # A notebook that writes files runs twice into one kept scratch folder: the second run
    # finds the first one's files (as a user who set BAYES_CONCEPTS_WORK does) and must pass.
    work = tmp_path_factory.mktemp("work")
    monkeypatch.setenv("BAYES_CONCEPTS_WORK", str(work))
    for run in range(2 if _writes_files(path) else 1):
        tmp_path = tmp_path_factory.mktemp(f"run{run}")
        _run_and_check(path, tmp_path)
    if _writes_files(path):
        assert any(work.iterdir()), "the notebook says it writes files, and wrote none into BAYES_CONCEPTS_WORK"


def _run_and_check(path, tmp_path):
    book = nbformat.read(path, as_version=4)
    # the kernel is stopped once the last cell has run, not asked to exit: its Python's shutdown
    # (tearing down every object the notebook built: ~3 s after a clevr build) is nothing the
    # notebook does, and every cell's output, and every file it writes, is complete by then
    NotebookClient(book, timeout=300, kernel_name="python3", shutdown_kernel="immediate",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    errors = [o for c in book.cells if c.cell_type == "code" for o in c.outputs if o.get("output_type") == "error"]
    assert not errors
    # the notebook ran in tmp_path: what it writes goes to its scratch folder, never next to it (a
    # notebook run in place leaves the repository as it was, and a second run starts afresh)
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    # every cell that draws shows its figure (figures are built without pyplot: the cell
    # ends with the figure, or displays it; ``%matplotlib inline`` lets the kernel show it)
    drawing = [c for c in book.cells if c.cell_type == "code" and DRAWS.search(c.source)]
    assert drawing
    for cell in drawing:
        assert any("image/png" in o.get("data", {}) for o in cell.outputs), cell.source
