"""The bayes-concepts command: explain, eval, and one-line errors with exit status 2."""
import json
import subprocess
import sys

import pytest

from bayes_concepts.cli import main


def write_scenes(path, lines):
    path.write_text("\n".join(lines) + "\n")
    return path


RED = '{"color": "red", "shape": "cube", "material": "metal", "size": "large", "x": 3, "y": 5}'
BLUE = '{"color": "blue", "shape": "sphere", "material": "rubber", "size": "small", "x": 1, "y": 8}'


def test_explain(capsys):
    assert main(["explain", "x locationY? 6 > exists="]) == 0
    out = capsys.readouterr().out
    assert "∃x∈S: locationY(x) > 6" in out
    assert r"\exists x \in S:\ \operatorname{locationY}(x) > 6" in out
    assert "length      5" in out and "uses x      yes" in out
    assert main(["explain", "--json", "S", "color?", "brown", "count=", "3", "="]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["readable"] == "count(color(S) = brown) = 3" and info["uses_x"] is False
    assert info["length"] == 6 and info["log_pcfg"] < 0


def test_eval_plain_and_json(tmp_path, capsys):
    f = write_scenes(tmp_path / "s.jsonl", [f'{{"objects": [{RED}]}}', f'{{"objects": [{BLUE}, {RED}]}}',
                                             f'{{"objects": [{BLUE}], "label": 0}}'])
    assert main(["eval", "x color? red = exists=", "S shape? cube count= 1 =", "--scenes", str(f)]) == 0
    assert capsys.readouterr().out.splitlines() == ["1 1", "1 1", "0 0"]
    assert main(["eval", "x color? red = exists=", "lambda S. x shape? sphere = for-all=", "--scenes", str(f),
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"x color? red = exists=": [1, 1, 0],
                                                    "lambda S. x shape? sphere = for-all=": [0, 0, 1]}


@pytest.mark.parametrize("argv_tail, message", [
    (["explain", "x color? 3 ="], "token 3: '=': integer 3 is not a COLOR value"),
    (["explain", "x color? exists="], "quantifier over a non-boolean"),
    (["eval", "x color? red", "--scenes", "SCENES"], "leftover values"),
])
def test_program_errors_exit_2_with_one_line(argv_tail, message, tmp_path, capsys):
    f = write_scenes(tmp_path / "s.jsonl", [f'{{"objects": [{RED}]}}'])
    argv = [str(f) if a == "SCENES" else a for a in argv_tail]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and err.startswith("bayes-concepts: error: ")


def test_scene_file_errors_exit_2(tmp_path, capsys):
    f = write_scenes(tmp_path / "bad.jsonl", [f'{{"objects": [{RED}]}}', RED.replace("red", "pink").join(
        ['{"objects": [', ']}'])])
    assert main(["eval", "x color? red = exists=", "--scenes", str(f)]) == 2
    err = capsys.readouterr().err
    assert "bad.jsonl line 2: objects[0].color: unknown value 'pink'" in err and err.count("\n") == 1
    assert main(["eval", "x color? red = exists=", "--scenes", str(tmp_path / "missing.jsonl")]) == 2
    assert "missing.jsonl" in capsys.readouterr().err


def test_console_script_runs():
    proc = subprocess.run([sys.executable, "-m", "bayes_concepts.cli", "explain", "x color? pink ="],
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.strip().startswith("bayes-concepts: error: in program 'x color? pink ='")
    assert "Traceback" not in proc.stderr
