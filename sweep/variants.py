"""Variant labels of a sweep's runs table (one row per run): which grid axes name a variant, and
the label itself (``sjf+easy``, ``sjf+easy+kill=False``, ``acct_edp+firstfit+options.accounts_in=
collect:replay``), for every page that names variants — the report (:mod:`sweep.report`) and the
incentive study (:mod:`sweep.incentives`) — so that both name a variant alike.
"""

from __future__ import annotations

import pandas as pd

from twinsweep.core.scheduler import REPLAY

__all__ = ["variant_columns", "variant_labels", "add_variant"]


def variant_columns(runs: pd.DataFrame, axes: list[str]) -> list[str]:
    """Grid axes that name a variant: policy and backfill always, other axes when they vary.

    Args:
        runs: the runs table (runs.parquet: one row per run, a column per grid axis).
        axes: the study's grid axes in spec order (:func:`sweep.spec.study_axes`).

    Returns:
        The axes of ``axes`` that are columns of ``runs`` and are ``policy``, ``backfill`` or take
        more than one value over the whole table (a missing value counts as a value), in the
        order of ``axes``.
    """
    return [a for a in axes if a in runs.columns and (a in ("policy", "backfill") or runs[a].nunique(dropna=False) > 1)]


def variant_labels(runs: pd.DataFrame, columns: list[str], replay_alone: bool = False) -> pd.Series:
    """The variant label of every row of ``runs``: the values of ``columns`` (usually
    :func:`variant_columns`) joined by ``+``, ``policy`` and ``backfill`` as their value, any
    other axis as ``axis=value`` (values as ``str`` gives them: ``kill=False``).

    Args:
        runs: the runs table; every name of ``columns`` must be one of its columns (KeyError
            otherwise).
        columns: the axes that make the label, in label order.
        replay_alone: leave the backfill out of the label of a ``replay`` run (the recorded
            schedule ignores it): ``replay``, ``replay+kill=True``.

    Returns:
        A str Series (object dtype) aligned with ``runs``' index.
    """
    policy = runs["policy"].to_numpy(dtype=object) if replay_alone and "policy" in runs.columns else None
    parts = []
    for c in columns:
        vals = runs[c].to_numpy(dtype=object)
        if c in ("policy", "backfill"):
            parts.append([str(v) for v in vals])
        else:
            parts.append([f"{c}={v}" for v in vals])
        if c == "backfill" and policy is not None:
            parts[-1] = [None if p == REPLAY else v for p, v in zip(policy, parts[-1])]
    labels = ["+".join(p for p in row if p is not None) for row in zip(*parts)] if parts else [""] * len(runs)
    return pd.Series(labels, index=runs.index, dtype=object)


def add_variant(runs: pd.DataFrame, axes: list[str]) -> tuple[pd.DataFrame, list[str]]:
    """Add a ``variant`` label column (e.g. ``sjf+easy``, ``sjf+easy+kill=False``: the
    :func:`variant_columns` of ``axes`` by :func:`variant_labels`) to a copy of ``runs``; returns
    the copy and the variants in grid order (their order of first appearance in ``runs``)."""
    df = runs.copy()
    df["variant"] = variant_labels(df, variant_columns(runs, axes))
    return df, list(dict.fromkeys(df["variant"]))
