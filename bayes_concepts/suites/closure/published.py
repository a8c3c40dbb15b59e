"""CLOSURE's published results: its models' accuracy drops per test family, registered as ``closure``."""
from __future__ import annotations

import pandas as pd

from .families import default_families_path
from .reported import load_reported
from ...published import COLUMNS, MEASURES, PublishedResults, published_results, short_table


def _closure_results() -> PublishedResults:
    """CLOSURE's accuracy drop (baseline - zero-shot, percentage points) per test family and
    model, its drop against chance (``normalised_drop``: percent of the baseline's margin above
    the family's chance level; :func:`~bayes_concepts.suites.closure.reported.family_drops`), beside the baseline and
    zero-shot accuracies (``hypotheses/closure/families.toml``)."""
    reported = load_reported()
    source = str(default_families_path())
    zero_table = short_table(reported.sources.get("zero_shot", "zero-shot table"))
    base_table = short_table(reported.sources.get("baseline", "baseline table"))
    rows = []

    def row(model, family, measure, value, sd, table):
        rows.append({"model": model, "condition": family, "negatives": "", "measure": measure, "value": float(value),
                     "table": table, "experiment": "", "sd": float("nan") if sd is None else float(sd),
                     "ci95": float("nan"), "source": source})

    for model in reported.models:
        zero, base = reported.zero_shot.get(model, {}), reported.baseline.get(model, {})
        for family in zero:
            if family not in base:
                continue
            row(model, family, "accuracy_drop", reported.drop(model, family), None, f"{base_table} - {zero_table}")
            row(model, family, "baseline_accuracy", base[family].mean, base[family].std, base_table)
            row(model, family, "zero_shot_accuracy", zero[family].mean, zero[family].std, zero_table)
            norm = reported.normalised_drop(model, family)
            if norm == norm:  # NaN where the baseline is at chance
                row(model, family, "normalised_drop", 100 * norm, None,
                    f"{base_table} - {zero_table}, against chance ({reported.answer_kinds[family]})")
    names = ("accuracy_drop", "normalised_drop", "baseline_accuracy", "zero_shot_accuracy")
    return PublishedResults(pd.DataFrame(rows, columns=list(COLUMNS)), benchmark="closure", measure="accuracy_drop",
                            measures={n: MEASURES[n] for n in names}, paper=reported.paper, sources=[source])


published_results.register("closure", _closure_results)
