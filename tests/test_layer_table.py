"""The guide's layer table (docs/overview.md, *The pipeline*) is the import-linter layers contract, row for row."""
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _contract_layers() -> list:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    top = next(c for c in config["tool"]["importlinter"]["contracts"]
               if c["type"] == "layers" and c["containers"] == ["bayes_concepts"])
    return [sorted(m.strip() for m in layer.split("|")) for layer in top["layers"]]


def _readme_layers() -> list:
    text = (ROOT / "docs" / "overview.md").read_text(encoding="utf-8")
    table = text[text.index("| layer (top to bottom) |"):]
    rows = []
    for line in table.splitlines()[2:]:
        if not line.startswith("|"):
            break
        number, modules = line.split("|")[1:3]
        names = re.findall(r"`\.?(?:bayes_concepts\.)?([a-z_]+)`", modules)
        rows.append((int(number), sorted(names)))
    return rows


def test_the_guide_s_layer_table_is_the_layers_contract_row_for_row():
    rows = _readme_layers()
    assert [names for _, names in rows] == _contract_layers()
    assert [number for number, _ in rows] == list(range(len(rows) - 1, -1, -1))

