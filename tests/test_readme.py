"""Every example in the README runs as written.

Fenced ``python`` blocks run in order in one namespace, and fenced ``bash`` blocks run with
``bash -euo pipefail``, both in a scratch directory (they write spaces and results files).
``sh`` blocks (``make`` set-up commands) and ``text`` blocks (usage synopses) are not
examples to run."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
FENCE = re.compile(r"^```(\w+)\n(.*?)^```", re.S | re.M)


def blocks(kind):
    return [code for lang, code in FENCE.findall(README.read_text(encoding="utf-8")) if lang == kind]


def test_readme_has_examples():
    assert len(blocks("python")) >= 4 and blocks("bash")


def test_python_examples_run(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "readme"}
    import bayes_concepts as bc
    try:
        for i, code in enumerate(blocks("python")):
            exec(compile(code, f"README.md python block {i + 1}", "exec"), namespace)
    finally:  # the README registers extensions; leave the registries as they were
        for registry, name in ((bc.priors, "short_only"), (bc.split_rules, "max_count")):
            if name in registry:
                registry.unregister(name)
    out = capsys.readouterr().out
    assert "HypothesisSpace(" in out and "mAP gap" in out
    assert (tmp_path / "results.nc").exists() and (tmp_path / "spaces" / "demo" / "manifest.json").exists()
    assert namespace["given"].n_concepts == 2
    # the split spec of "Writing a new split" makes a split of the demo space built above
    import tomllib
    for spec in blocks("toml"):
        split = bc.make_split(namespace["space"], tomllib.loads(spec))
        assert len(split.train) and len(split.test)


@pytest.mark.parametrize("index", range(len(blocks("bash"))))
def test_shell_examples_run(index, tmp_path):
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    r = subprocess.run(["bash", "-euo", "pipefail", "-c", blocks("bash")[index]], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
