"""Every number in the guide's tables (and the README's) comes from a committed result.

The measured tables are generated from ``benchmarks/results/*.json`` by
``benchmarks/readme_tables.py`` into the pages of ``docs/`` (the results pages, the benchmark
chapters, the performance page); any other table with numbers must be declared as
definitions (fixed facts: layer numbers, thresholds, published values)."""
import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("readme_tables", ROOT / "benchmarks" / "readme_tables.py")
readme_tables = importlib.util.module_from_spec(spec)
spec.loader.exec_module(readme_tables)


def _blocks():
    """(page, block match) for every generated block of every page."""
    return [(page, m) for page in readme_tables.pages()
            for m in readme_tables.BLOCK.finditer(page.read_text(encoding="utf-8"))]


def test_the_docs_tables_match_the_committed_results(capsys):
    status = readme_tables.main(["--check"])
    assert status == 0, capsys.readouterr().err
    names = [m.group("name") for _, m in _blocks()]
    assert sorted(names) == sorted(readme_tables.GENERATORS)  # each table once, in some page
    pages = {page.relative_to(ROOT).parts[0] for page, _ in _blocks()}
    assert pages == {"docs"}, pages  # the measured tables live in the guide, not in the README


def test_a_changed_number_an_unsourced_table_or_a_lost_table_is_caught(tmp_path, capsys):
    page, m = max(_blocks(), key=lambda b: len(b[1].group("body")))
    text = page.read_text(encoding="utf-8")
    body = m.group("body")
    digit = next(i for i, c in enumerate(body) if c.isdigit() and i > body.index("\n", body.index("\n") + 1))
    bumped = body[:digit] + str((int(body[digit]) + 1) % 10) + body[digit + 1:]
    copy = tmp_path / page.name
    copy.write_text(text.replace(body, bumped))
    assert readme_tables.main(["--check", "--page", str(copy)]) == 1
    assert f"stale generated table(s): {m.group('name')}" in capsys.readouterr().err
    copy.write_text(text + "\n| job | time |\n|---|---|\n| a run | 12.5 s |\n")
    assert readme_tables.main(["--check", "--page", str(copy)]) == 1
    assert "neither generated" in capsys.readouterr().err
    copy.write_text(text + "\n<!-- numbers: definitions (a threshold) -->\n| rule | value |\n|---|---|\n| eps | 0.2 |\n")
    assert readme_tables.main(["--check", "--page", str(copy)]) == 0
    # the same table in two pages is refused; a rewrite fixes the stale copy in place
    twin = tmp_path / "twin.md"
    twin.write_text(m.group(0))
    assert readme_tables.main(["--check", "--page", str(copy), "--page", str(twin)]) == 1
    assert "more than one place" in capsys.readouterr().err
    copy.write_text(text.replace(body, bumped))
    assert readme_tables.main(["--page", str(copy)]) == 0
    assert copy.read_text() == text
