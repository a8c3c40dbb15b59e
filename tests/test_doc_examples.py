"""Every example of the README and of the guide (``docs/``) runs as written.

Fenced ``python`` blocks run in order in one namespace per document -- the README's in one,
the guide's pages' in another, page after page in the order of the guide's table of contents
(``docs/index.md``) -- and fenced ``bash`` blocks run with ``bash -euo pipefail``, each in a
scratch directory (they write spaces and results files).  ``sh`` blocks (``make`` set-up
commands) and ``text`` blocks (usage synopses) are not examples to run."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
FENCE = re.compile(r"^```(\w+)\n(.*?)^```", re.S | re.M)
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


def _run_python(paths, namespace):
    for path in paths:
        for i, code in enumerate(blocks(path, "python")):
            exec(compile(code, f"{path.relative_to(ROOT)} python block {i + 1}", "exec"), namespace)


def test_every_page_of_the_tree_is_a_page_and_the_examples_are_there():
    pages = guide_pages()
    on_disk = {p for p in DOCS.rglob("*.md") if not {"_build", "notebooks"} & set(p.relative_to(DOCS).parts)}
    assert set(pages) | {DOCS / "index.md", DOCS / "notebooks.md"} == on_disk
    assert len(blocks(README, "python")) >= 4 and len(blocks(README, "bash")) >= 3
    assert sum(len(blocks(p, "python")) for p in pages) >= 6


def test_the_readme_s_python_examples_run(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "readme"}
    _run_python([README], namespace)
    out = capsys.readouterr().out
    assert "HypothesisSpace(" in out and "mAP gap" in out and "prototype" in out
    assert (tmp_path / "comp_gap.png").exists()
    assert namespace["concepts"].n_concepts == 256


def test_the_guide_s_python_examples_run(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "guide"}
    import bayes_concepts as bc
    try:
        _run_python(guide_pages(), namespace)
    finally:  # the guide registers extensions; leave the registries as they were
        for registry, name in ((bc.priors, "short_only"), (bc.split_rules, "max_count")):
            if name in registry:
                registry.unregister(name)
    out = capsys.readouterr().out
    assert "HypothesisSpace(" in out and "mAP gap" in out
    assert (tmp_path / "results.nc").exists() and (tmp_path / "spaces" / "demo" / "manifest.json").exists()
    assert namespace["given"].n_concepts == 2
    # the split spec of "The gap of your split" makes a split of the demo space built above
    import tomllib
    for spec in blocks(DOCS / "jobs" / "gap.md", "toml"):
        split = bc.make_split(namespace["space"], tomllib.loads(spec))
        assert len(split.train) and len(split.test)


SHELL = [(path, i) for path in [README] + guide_pages() for i in range(len(blocks(path, "bash")))]


@pytest.mark.parametrize("path, index", SHELL, ids=[f"{p.relative_to(ROOT)}:{i + 1}" for p, i in SHELL])
def test_shell_examples_run(path, index, tmp_path):
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    r = subprocess.run(["bash", "-euo", "pipefail", "-c", blocks(path, "bash")[index]], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
