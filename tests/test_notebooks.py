"""The notebooks run end to end on a small space (nbclient), show their figures, and are
stored without outputs."""
import os
import re
import time
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
                                           "06_three_modalities", "07_closure", "09_people_shj"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_stored_without_outputs(path):
    book = nbformat.read(path, as_version=4)
    for cell in book.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs(path, small_space_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("BAYES_CONCEPTS_SPACE", str(small_space_dir))
    monkeypatch.setenv("BAYES_CONCEPTS_EPISODES", "100")
    monkeypatch.setenv("BAYES_CONCEPTS_FAST", "1")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    book = nbformat.read(path, as_version=4)
    t = time.perf_counter()
    NotebookClient(book, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
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
    assert time.perf_counter() - t < 120
