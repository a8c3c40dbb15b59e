"""Every example of the README and of the guide (``docs/``) runs as written.

The README's fenced ``python`` blocks run in order in one namespace; each guide page's code
cells (``{code-cell} ipython3``, which ``make docs`` executes with myst-nb) run in order in a
namespace of their own, as myst-nb runs each page in its own kernel; fenced ``bash`` blocks of
both run with ``bash -euo pipefail``.  Everything runs in a scratch directory (the examples
write spaces and results files).  ``sh`` blocks (``make`` set-up commands) and ``text`` blocks
(usage synopses) are not examples to run; a guide page may not hold a plain ``python`` block
(it would be shown, never run by the docs build)."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
FENCE = re.compile(r"^```(\{code-cell\} ipython3|\w+)\n(.*?)^```", re.S | re.M)
CELL = "{code-cell} ipython3"
TOCTREE = re.compile(r"^```\{toctree\}\n(.*?)^```", re.S | re.M)


def guide_pages() -> list:
    """The guide's Markdown pages in the order of its table of contents."""
    pages = []
    for tree in TOCTREE.findall((DOCS / "index.md").read_text(encoding="utf-8")):
        for entry in tree.splitlines():
            entry = entry.strip()
            if entry and not entry.startswith(":") and (DOCS / f"{entry}.md").is_file():
                pages.append(DOCS / f"{entry}.md")
    return pages


def blocks(path: Path, kind: str) -> list:
    return [code for lang, code in FENCE.findall(path.read_text(encoding="utf-8")) if lang == kind]


def _run(path, kind, namespace):
    for i, code in enumerate(blocks(path, kind)):
        exec(compile(code, f"{path.relative_to(ROOT)} {kind} block {i + 1}", "exec"), namespace)


def test_every_page_of_the_tree_is_a_page_and_the_examples_are_there():
    pages = guide_pages()
    on_disk = {p for p in DOCS.rglob("*.md") if not {"_build", "notebooks"} & set(p.relative_to(DOCS).parts)}
    assert set(pages) | {DOCS / "index.md", DOCS / "notebooks.md"} == on_disk
    assert len(blocks(README, "python")) >= 4 and len(blocks(README, "bash")) >= 3
    assert not [p for p in pages if blocks(p, "python")]  # the docs build runs code cells only
    with_cells = {p.relative_to(DOCS).as_posix() for p in pages if blocks(p, CELL)}
    assert {"python.md", "jobs/gap.md", "jobs/audit.md", "jobs/data.md", "jobs/model.md", "jobs/people.md",
            "jobs/figures.md"} <= with_cells, with_cells
    for page in with_cells:  # myst-nb executes a page only when it says it is a notebook
        text = (DOCS / page).read_text(encoding="utf-8")
        assert text.startswith("---\nfile_format: mystnb\n") and "\n  language: python\n---\n" in text, page


def test_the_readme_s_python_examples_run(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "readme"}
    _run(README, "python", namespace)
    out = capsys.readouterr().out
    assert "HypothesisSpace(" in out and "mAP gap" in out and "prototype" in out
    assert (tmp_path / "comp_gap.png").exists()
    assert namespace["concepts"].n_concepts == 256


CELL_PAGES = [p for p in guide_pages() if blocks(p, CELL)]


@pytest.mark.parametrize("page", CELL_PAGES, ids=[p.relative_to(DOCS).as_posix() for p in CELL_PAGES])
def test_the_guide_s_code_cells_run(page, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "guide"}
    import bayes_concepts as bc
    before = {name: set(registry) for name, registry in (("priors", bc.priors), ("split_rules", bc.split_rules))}
    try:
        _run(page, CELL, namespace)
    finally:  # a page registers extensions; leave the registries as they were
        for name, registry in (("priors", bc.priors), ("split_rules", bc.split_rules)):
            for added in set(registry) - before[name]:
                registry.unregister(added)
    out = capsys.readouterr().out
    name = page.relative_to(DOCS).as_posix()
    if name == "python.md":
        assert "HypothesisSpace(" in out and "mAP gap" in out
        assert (tmp_path / "results.nc").exists() and (tmp_path / "spaces" / "demo" / "manifest.json").exists()
        assert namespace["given"].n_concepts == 2
    if name in ("jobs/gap.md", "jobs/model.md"):
        assert "mAP gap" in out
    if name == "jobs/gap.md":  # the split spec shown on the page makes a split of the demo space
        import tomllib
        demo = bc.HypothesisSpace.build("demo", seed=0)
        for spec in blocks(page, "toml"):
            split = bc.make_split(demo, tomllib.loads(spec))
            assert len(split.train) and len(split.test)
    if name == "jobs/people.md":
        assert namespace["concepts"].n_concepts == 256 and "I < II" in out


SHELL = [(path, i) for path in [README] + guide_pages() for i in range(len(blocks(path, "bash")))]


@pytest.mark.parametrize("path, index", SHELL, ids=[f"{p.relative_to(ROOT)}:{i + 1}" for p, i in SHELL])
def test_shell_examples_run(path, index, tmp_path):
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    r = subprocess.run(["bash", "-euo", "pipefail", "-c", blocks(path, "bash")[index]], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
