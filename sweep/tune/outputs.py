"""What a tuning writes in its output folder: ``trials.csv``, ``best.json`` (best trial or Pareto
set with train and test values, parameter importances), the figures (:mod:`.plots`) and
``winners.toml`` (:mod:`.winners`). Every file is written atomically (:mod:`core.atomic`)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

from twinsweep.core.atomic import atomic_write_text

from .plots import plot_history, plot_importances, plot_pareto
from .spec import TuneSpec
from .study import interrupted_numbers
from .winners import write_winners

__all__ = ["write_outputs"]


def _importance_evaluator():
    """PED-ANOVA (Optuna's own, no extra dependency), else Optuna's default evaluator."""
    try:
        from optuna.importance import PedAnovaImportanceEvaluator

        return PedAnovaImportanceEvaluator(), "PED-ANOVA"
    except ImportError:  # older Optuna
        return None, "Optuna default evaluator"


def write_outputs(study, spec: TuneSpec, out: Path, best: list[dict]) -> dict[str, Path]:
    """best.json, trials.csv, pareto.png / history.png, importances.csv/png, winners.toml."""
    import optuna

    files: dict[str, Path] = {}
    names = [m for m, _ in spec.objectives]
    df = study.trials_dataframe(attrs=("number", "state", "values", "params", "user_attrs", "datetime_start",
                                       "datetime_complete"))
    if len(names) == 1 and "value" in df.columns:
        df = df.rename(columns={"value": f"values_{names[0]}"})
    else:
        df = df.rename(columns={f"values_{i}": f"values_{m}" for i, m in enumerate(names)})
    cut = interrupted_numbers(study)
    if cut and len(df):  # the cut trials' mark lives on the study (study.py): one column as for a user attribute
        mark = df["number"].map(lambda n: True if n in cut else None)
        if "user_attrs_interrupted" in df.columns:  # marked on the trial by an earlier version
            mark = mark.where(mark.notna(), df["user_attrs_interrupted"])
        df["user_attrs_interrupted"] = mark
        ua = sorted(c for c in df.columns if c.startswith("user_attrs_"))
        first = next(i for i, c in enumerate(df.columns) if c.startswith("user_attrs_"))
        rest = [c for c in df.columns if not c.startswith("user_attrs_")]
        df = df[rest[:first] + ua + rest[first:]]
    for c in df.columns:
        if df[c].dtype == object:
            df[c] = df[c].map(lambda v: json.dumps(v) if isinstance(v, (list, dict)) else v)
    files["trials.csv"] = out / "trials.csv"
    atomic_write_text(files["trials.csv"], df.to_csv(index=False))

    complete = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
    if complete and len(names) >= 2:
        files["pareto.png"] = plot_pareto(complete, best, spec, out / "pareto.png")
    elif complete:
        files["history.png"] = plot_history(complete, spec, out / "history.png")

    imp_rows, imp_error = [], None
    if len(complete) >= 2 and spec.params:
        evaluator, method = _importance_evaluator()
        for i, (m, d) in enumerate(spec.objectives):
            sgn = 1.0 if d == "min" else -1.0  # the evaluator rates parameters for low target values
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    imp = optuna.importance.get_param_importances(study, evaluator=evaluator,
                                                                  target=lambda t, i=i, s=sgn: s * t.values[i])
            except (RuntimeError, ValueError, ZeroDivisionError, ImportError) as exc:
                imp_error = f"{type(exc).__name__}: {exc}"
                continue
            for p, v in imp.items():
                imp_rows.append({"objective": m, "param": p, "importance": float(v), "method": method})
    if imp_rows:
        import pandas as pd

        imp_df = pd.DataFrame(imp_rows)
        files["importances.csv"] = out / "importances.csv"
        atomic_write_text(files["importances.csv"], imp_df.to_csv(index=False))
        files["importances.png"] = plot_importances(imp_df, spec, method, out / "importances.png")

    doc = {"study_name": spec.study_name, "objectives": [{"metric": m, "direction": d} for m, d in spec.objectives],
           "sampler": spec.sampler_name(), "sampler_seed": spec.sampler_seed, "seeds": list(spec.study.seeds),
           "train_windows": ["/".join(w) for w in spec.train], "test_windows": ["/".join(w) for w in spec.test],
           "complete_trials": len(complete), "best": best,
           "importances": imp_rows, "importances_error": imp_error}
    files["best.json"] = out / "best.json"
    atomic_write_text(files["best.json"], json.dumps(doc, indent=1, sort_keys=True, default=str) + "\n")
    if best:
        files.update(write_winners(spec, out, best))
    return files
