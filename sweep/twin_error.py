"""The twin's stated error on a trace (a ``validation.json`` of ``twinsweep validate``, named by the
study's ``[report] validation``), set beside the differences between the study's variants.

A sweep window starts from the trace's recorded state at the window start (DESIGN.md §3.9) and is
then scheduled by the twin alone, on the machine of the system file. Of the validation modes
(docs/validation.md) the one that matches it is ``restart`` (re-seeded from the recorded state, then
rescheduled); without a restart mode, ``blind`` (nothing recorded in the window reaches the twin) is
taken. ``informed`` is never taken: it uses a node calendar inferred from the judged window's
recorded busy nodes, which a sweep run does not have (:data:`MODE_PREFERENCE`).

The stated error of a metric is the signed relative error of the matching mode (``(twin − log) /
log``) for the site's policy of the validation; its **noise floor** the largest relative change of
the same figure between the twin and itself under 1 % run-time noise (``noise_floor.<figure>_worst``).
A difference between two variants (relative to the recommended variant's mean) smaller in size than
the stated error is labelled "smaller than the twin's error"; one smaller than the noise floor
"within the twin's noise floor". Errors of the absolute level can cancel between policies (the
validation's ``ranking_stability`` figures say how far rankings move); the label says the difference
is not established by the twin, not that it is absent.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

from twinsweep.core.errors import ConfigError

__all__ = ["TwinError", "load_twin_errors", "difference_table", "METRIC_FIGURES", "MODE_PREFERENCE",
           "SMALLER_THAN_ERROR", "WITHIN_NOISE"]

#: Sweep metric -> the validation figure that states the twin's relative error on it (core/fidelity.py).
METRIC_FIGURES = {"wait_mean_s": "wait_mean_rel_error", "wait_p95_s": "wait_p95_rel_error",
                  "bsld_mean": "bsld_mean_rel_error"}
#: Validation modes in the order they are taken (the first present); see the module docstring.
MODE_PREFERENCE = ("restart", "blind")
SMALLER_THAN_ERROR = "smaller than the twin's error"
WITHIN_NOISE = "within the twin's noise floor"


@dataclasses.dataclass(frozen=True)
class TwinError:
    """The stated error of the twin on one dataset's trace.

    ``errors`` / ``noise``: sweep metric (:data:`METRIC_FIGURES`) -> signed relative error of the
    matching ``mode`` / size of its noise floor (fractions; None when the validation has none);
    ``policy``: the validated ``"policy+backfill"``; ``reported``: the validation's reported window
    ``(t0, t1)`` (s from the trace epoch); ``jobs_compared`` in it; ``tau_min``: the validation's
    ``ranking_stability.kendall_tau_min_blind_vs_informed`` (None without it)."""

    dataset: str
    path: str
    mode: str
    policy: str
    errors: dict[str, float | None]
    noise: dict[str, float | None]
    reported: tuple[int, int] | None
    jobs_compared: int | None
    tau_min: float | None


def _num(x) -> float | None:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(v) else v


def _load(ds: str, path: str, checksum: str | None) -> TwinError:
    where = f"report.validation.{ds}: {path}"
    try:
        doc = json.loads(Path(path).read_text())
    except OSError as exc:
        raise ConfigError(f"{where}: cannot read it ({exc.strerror or exc})") from exc
    except ValueError as exc:
        raise ConfigError(f"{where}: not valid JSON ({exc})") from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("modes"), dict):
        raise ConfigError(f"{where}: not a validation.json written by twinsweep validate (no 'modes' object)")
    if checksum and doc.get("checksum") and doc["checksum"] != checksum:
        raise ConfigError(f"{where}: validates trace {doc.get('trace')!r} with checksum {doc['checksum']}, but "
                          f"dataset {ds!r} has checksum {checksum}: not the same trace")
    mode = next((m for m in MODE_PREFERENCE if isinstance(doc["modes"].get(m), dict)), None)
    if mode is None:
        raise ConfigError(f"{where}: has none of the modes {', '.join(MODE_PREFERENCE)} (it has "
                          f"{', '.join(doc['modes']) or 'none'})")
    fig = doc["modes"][mode]
    nf = fig.get("noise_floor") or {}
    errors = {m: _num(fig.get(f)) for m, f in METRIC_FIGURES.items()}
    noise = {m: (None if _num(nf.get(f + "_worst")) is None else abs(_num(nf.get(f + "_worst"))))
             for m, f in METRIC_FIGURES.items()}
    rep = (doc.get("windows") or {}).get("reported")
    stab = doc.get("ranking_stability") or {}
    return TwinError(ds, str(path), mode, f"{doc.get('policy')}+{doc.get('backfill')}", errors, noise,
                     (int(rep[0]), int(rep[1])) if isinstance(rep, list) and len(rep) == 2 else None,
                     fig.get("jobs_compared"), _num(stab.get("kendall_tau_min_blind_vs_informed")))


def load_twin_errors(study: dict, datasets: dict) -> dict[str, TwinError]:
    """The stated error of every dataset the study's ``[report] validation`` names (``study.json``
    document: ``report.validation`` = ``[[dataset, path], ...]``; ``datasets``: datasets.json, for
    the traces' checksums). Raises ConfigError naming the key and the file when a file cannot be
    read, is not a validation.json, has no usable mode, or validates another trace."""
    out = {}
    for ds, path in (study.get("report") or {}).get("validation") or ():
        out[ds] = _load(ds, path, (datasets.get(ds) or {}).get("checksum"))
    return out


def difference_table(runs: pd.DataFrame, variants: list[str], reference: dict[str, str],
                     errors: dict[str, TwinError]) -> pd.DataFrame:
    """Differences between variants beside the twin's stated error, per dataset with one.

    ``runs``: ranked runs (one row per run with ``dataset``, ``variant`` and metric columns);
    ``reference``: dataset -> the variant others are compared with (the recommended one);
    ``errors``: :func:`load_twin_errors`. One row per (dataset, variant other than the reference,
    metric of :data:`METRIC_FIGURES` in ``runs``): ``difference`` = (variant's mean − reference's
    mean) / reference's mean over the dataset's runs (fraction; None when undefined), ``twin_error``
    = the stated signed error, ``noise_floor``, and ``label``: :data:`WITHIN_NOISE` when
    |difference| < noise floor, else :data:`SMALLER_THAN_ERROR` when |difference| < |twin_error|,
    else ``""``."""
    rows = []
    for ds, te in errors.items():
        g = runs[runs["dataset"].astype(str) == ds]
        ref = reference.get(ds)
        if g.empty or ref is None:
            continue
        for m in METRIC_FIGURES:
            if m not in g.columns:
                continue
            means = g.groupby("variant", sort=False)[m].mean()
            base = means.get(ref)
            for v in variants:
                if v == ref or v not in means.index:
                    continue
                d = None if base is None or not np.isfinite(base) or base == 0 or not np.isfinite(means[v]) \
                    else float((means[v] - base) / abs(base))
                e, nf = te.errors.get(m), te.noise.get(m)
                label = ""
                if d is not None and nf is not None and abs(d) < nf:
                    label = WITHIN_NOISE
                elif d is not None and e is not None and abs(d) < abs(e):
                    label = SMALLER_THAN_ERROR
                rows.append({"dataset": ds, "reference": ref, "variant": v, "metric": m, "difference": d,
                             "twin_error": e, "noise_floor": nf, "mode": te.mode, "label": label})
    return pd.DataFrame(rows, columns=["dataset", "reference", "variant", "metric", "difference", "twin_error",
                                       "noise_floor", "mode", "label"])
