"""Sphinx configuration of the bayes_concepts guide and reference (``make docs``).

The guide is the Markdown pages of ``docs/`` (MyST), the reference is built from the package's
docstrings (autodoc, read by numpydoc), and the notebooks are rendered by myst-nb.  ``api.rst`` is written here from the package's public
names (``bayes_concepts.__all__``), one section per defining module, so the reference lists
every public name and nothing else.  The guide's code cells (``{code-cell} ipython3`` in a page
whose front matter says ``file_format: mystnb``) and the notebooks are shown as stored (no
outputs) unless ``BAYES_CONCEPTS_DOCS_EXECUTE`` is ``cache`` or ``force`` (myst-nb's execution
modes): ``make docs`` executes them (the notebooks on the demo space), each page in its own
kernel, and caches their outputs with jupyter-cache (``docs/_build/.jupyter_cache``, or
``BAYES_CONCEPTS_DOCS_CACHE``), so a page runs again only when its code changes; the quick check
in ``make test`` executes nothing (``tests/test_doc_examples.py`` runs the guide's code cells
there).  Warnings are errors (``-W``), broken links between pages included.
"""
from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

import bayes_concepts  # noqa: E402

project = "bayes_concepts"
author = "the bayes_concepts authors"
copyright = "the bayes_concepts authors"  # noqa: A001  (Sphinx's name)
release = version = bayes_concepts.__version__

extensions = ["sphinx.ext.autodoc", "numpydoc", "myst_nb"]
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store", "**.ipynb_checkpoints"]
source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
html_theme = "alabaster"
html_static_path: list = []

autodoc_member_order = "bysource"
autodoc_typehints = "none"           # signatures show defaults; the docstrings state types and shapes
numpydoc_show_class_members = False  # a class's methods are documented under it by autodoc, not listed twice
numpydoc_validation_checks: set = set()
myst_enable_extensions = ["dollarmath"]
myst_heading_anchors = 3

nb_execution_mode = os.environ.get("BAYES_CONCEPTS_DOCS_EXECUTE", "off")
nb_execution_timeout = 900
nb_execution_in_temp = True          # files a notebook writes land in a temporary folder, not the tree
nb_execution_raise_on_error = True
nb_execution_cache_path = os.environ.get("BAYES_CONCEPTS_DOCS_CACHE") or str(HERE / "_build" / ".jupyter_cache")

# --------------------------------------------------------------- generated pages
NOTEBOOKS = HERE / "notebooks"


def _copy_notebooks():
    """The notebooks of ``notebooks/`` copied under the docs (Sphinx reads only its source folder)."""
    NOTEBOOKS.mkdir(exist_ok=True)
    for old in NOTEBOOKS.glob("*.ipynb"):
        old.unlink()
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        shutil.copyfile(path, NOTEBOOKS / path.name)


def _api_page():
    """``api.rst``: every name of ``bayes_concepts.__all__``, grouped by the module defining it."""
    by_module: dict = {}
    for name, module in bayes_concepts._EXPORTS.items():
        by_module.setdefault("bayes_concepts" + module, []).append(name)
    lines = ["API reference", "=============", "",
             "Every public name of ``bayes_concepts`` (``import bayes_concepts as bc``; ``bc.__all__``),",
             "under the module that defines it.", ""]
    for module in sorted(by_module):
        lines += [module, "-" * len(module), "", f".. automodule:: {module}", "   :no-members:", "",
                  f".. currentmodule:: {module}", ""]
        for name in sorted(by_module[module]):
            obj = getattr(bayes_concepts, name)
            kind = ("autoclass" if isinstance(obj, type) else "autofunction" if callable(obj) and
                    not hasattr(obj, "names") else "autodata")
            lines += [f".. {kind}:: {name}"] + (["   :members:"] if kind == "autoclass" else []) + [""]
    (HERE / "api.rst").write_text("\n".join(lines), encoding="utf-8")


#: ``|x|`` in running text (not a table's border): an absolute value or a size
_BARS = re.compile(r"(?<![\\|`])\|([^|\s`](?:[^|`]*[^|\s`])?)\|(?![|_`])")


def _plain_bars(app, what, name, obj, options, lines):
    """Docstrings write sizes and absolute values as ``|ext h|``, plain text for ``help()``;
    reST would read ``|...|`` as a substitution, so outside tables the bars are escaped."""
    for i, line in enumerate(lines):
        text = line.strip()
        if not (text.startswith("+") or (text.startswith("|") and text.endswith(("|", "+")))):  # a grid table
            lines[i] = _BARS.sub(r"\\|\1\\|", line)


def setup(app):
    app.connect("autodoc-process-docstring", _plain_bars, priority=100)


_copy_notebooks()
_api_page()
