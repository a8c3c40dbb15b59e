"""Every number in the README's tables comes from a committed result.

The measured tables are generated from ``benchmarks/results/*.json`` by
``benchmarks/readme_tables.py``; any other table with numbers must be declared as
definitions (fixed facts: layer numbers, thresholds, published values)."""
import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("readme_tables", ROOT / "benchmarks" / "readme_tables.py")
readme_tables = importlib.util.module_from_spec(spec)
spec.loader.exec_module(readme_tables)


def test_readme_tables_match_the_committed_results(capsys):
    status = readme_tables.main(["--check"])
    assert status == 0, capsys.readouterr().err
    text = (ROOT / "README.md").read_text()
    assert {m.group("name") for m in readme_tables.BLOCK.finditer(text)} == set(readme_tables.GENERATORS)


def test_a_changed_number_or_an_unsourced_table_is_caught(tmp_path, capsys):
    text = (ROOT / "README.md").read_text()
    m = max(readme_tables.BLOCK.finditer(text), key=lambda b: len(b.group("body")))
    body = m.group("body")
    digit = next(i for i, c in enumerate(body) if c.isdigit() and i > body.index("\n", body.index("\n") + 1))
    bumped = body[:digit] + str((int(body[digit]) + 1) % 10) + body[digit + 1:]
    readme = tmp_path / "README.md"
    readme.write_text(text.replace(body, bumped))
    assert readme_tables.main(["--check", "--readme", str(readme)]) == 1
    assert f"stale generated table(s): {m.group('name')}" in capsys.readouterr().err
    readme.write_text(text + "\n| job | time |\n|---|---|\n| a run | 12.5 s |\n")
    assert readme_tables.main(["--check", "--readme", str(readme)]) == 1
    assert "neither generated" in capsys.readouterr().err
    readme.write_text(text + "\n<!-- numbers: definitions (a threshold) -->\n| rule | value |\n|---|---|\n| eps | 0.2 |\n")
    assert readme_tables.main(["--check", "--readme", str(readme)]) == 0
