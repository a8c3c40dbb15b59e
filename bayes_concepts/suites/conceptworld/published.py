"""ConceptWorld's published results: its models' F1 per experiment and condition, registered as ``conceptworld``."""
from __future__ import annotations

from pathlib import Path
from typing import Mapping

import pandas as pd

from .space import condition_slug
from ...published import (COLUMNS, MEASURES, PublishedResults, check_duplicates, fail_at, is_number,
                          published_results, read_toml, toml_key)
from ...resources import data_file


def _conceptworld_rows(path: Path, conditions_of: Mapping) -> list:
    """Rows of a file in reported.toml's layout: per (experiment, model, condition) the mean F1
    (percent) over the experiment's ``test_concepts``."""
    raw = read_toml(path)
    rows = []
    for experiment, section in raw.items():
        key = f"[{experiment}]"
        if experiment not in conditions_of:
            fail_at(str(path), key, f"not a ConceptWorld experiment (experiments.toml has {', '.join(conditions_of)})")
        if not isinstance(section, dict):
            fail_at(str(path), key, "expected a table with source, test_concepts and models")
        table = section.get("source")
        if not isinstance(table, str) or not table:
            fail_at(str(path), f"{experiment}.source", f"expected the paper table as a string, got {table!r}")
        tests = section.get("test_concepts")
        if not isinstance(tests, list) or not tests or not all(isinstance(t, str) for t in tests):
            fail_at(str(path), f"{experiment}.test_concepts",
                  f"expected a non-empty list of concept names, got {tests!r}")
        models = section.get("models")
        if not isinstance(models, dict) or not models:
            fail_at(str(path), f"{experiment}.models", "expected [experiment.models.<model>] tables")
        conditions = conditions_of[experiment]
        for model, concepts in models.items():
            mkey = f"{experiment}.models.{toml_key(model)}"
            if not isinstance(concepts, dict):
                fail_at(str(path), mkey, "expected {concept = {condition = F1}} entries")
            for concept, by_condition in concepts.items():
                ckey = f"{mkey}.{toml_key(concept)}"
                if not isinstance(by_condition, dict):
                    fail_at(str(path), ckey, f"expected {{condition = F1}}, got {by_condition!r}")
                for condition, f1 in by_condition.items():
                    if condition not in conditions:
                        fail_at(str(path), f"{ckey}.{toml_key(condition)}",
                              f"not a condition of {experiment} (experiments.toml has {', '.join(conditions)})")
                    if not is_number(f1) or not 0 <= f1 <= 1:
                        fail_at(str(path), f"{ckey}.{toml_key(condition)}", f"expected an F1 in 0..1, got {f1!r}")
            for condition in conditions:
                scores = []
                for concept in tests:
                    f1 = concepts.get(concept, {}).get(condition)
                    if f1 is None:
                        fail_at(str(path), f"{mkey}.{toml_key(concept)}",
                              f"no F1 for condition {condition!r} (a test concept of {experiment})")
                    scores.append(float(f1))
                rows.append({"model": model, "condition": condition_slug(condition), "negatives": "", "measure": "f1",
                             "value": round(100.0 * sum(scores) / len(scores), 10), "table": table,
                             "experiment": experiment, "sd": float("nan"), "ci95": float("nan"),
                             "source": str(path)})
    return rows


def _conceptworld_results() -> PublishedResults:
    """ConceptWorld's F1 (percent) per experiment, condition (as split name) and model: the
    unweighted mean over the condition's composed test concepts (reported.toml's
    ``test_concepts``; boxworld's 2x2 square and substitution's type 1 / type 2 primitives are
    not among them).  Tables 4, 6, 8, 10 from ``hypotheses/conceptworld/reported.toml``, Table 11
    (curriculum training) from ``hypotheses/published/conceptworld.toml``."""
    experiments_path = data_file("conceptworld", "experiments.toml")
    experiments = read_toml(experiments_path)
    conditions_of = {}
    for name, spec in experiments.items():
        if not isinstance(spec, dict) or not isinstance(spec.get("conditions"), dict):
            fail_at(str(experiments_path), f"[{name}]", "needs a conditions table")
        conditions_of[name] = list(spec["conditions"])
    paths = [data_file("conceptworld", "reported.toml"), data_file("published", "conceptworld.toml")]
    rows = [row for path in paths for row in _conceptworld_rows(path, conditions_of)]
    frame = pd.DataFrame(rows, columns=list(COLUMNS))
    check_duplicates(frame)
    order = {name: i for i, name in enumerate(conditions_of)}
    frame = frame.iloc[frame.experiment.map(order).argsort(kind="stable")]
    return PublishedResults(frame, benchmark="conceptworld", measure="f1", measures={"f1": MEASURES["f1"]},
                            paper="Klinger et al., A Study of Compositional Generalization in Neural Models "
                                  "(ConceptWorld), appendix Tables 4, 6, 8, 10, 11",
                            sources=[str(p) for p in paths])


published_results.register("conceptworld", _conceptworld_results)
