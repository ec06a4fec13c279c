"""sweep/variants.py: which grid axes name a variant, and the labels (written out by hand)."""

from __future__ import annotations

import pandas as pd

from twinsweep.sweep.variants import add_variant, variant_columns, variant_labels

AXES = ["policy", "backfill", "kill", "sample_period", "options.accounts_in"]
RUNS = pd.DataFrame({
    "key": ["k1", "k2", "k3", "k4"],
    "policy": ["replay", "sjf", "sjf", "sjf"],
    "backfill": ["easy", "easy", "none", "easy"],
    "kill": [True, False, True, False],
    "sample_period": [60, 60, 60, 60],
    "options.accounts_in": ["collect:replay:prev"] * 4,
})


def test_variant_columns_keep_policy_backfill_and_the_axes_that_vary():
    # sample_period and options.accounts_in hold one value each; an axis not in the table is skipped
    assert variant_columns(RUNS, AXES + ["cooling"]) == ["policy", "backfill", "kill"]
    assert variant_columns(RUNS.drop(columns="kill"), AXES) == ["policy", "backfill"]
    assert variant_columns(RUNS, []) == []


def test_variant_labels_by_hand():
    cols = ["policy", "backfill", "kill", "options.accounts_in"]
    assert variant_labels(RUNS, cols).tolist() == [
        "replay+easy+kill=True+options.accounts_in=collect:replay:prev",
        "sjf+easy+kill=False+options.accounts_in=collect:replay:prev",
        "sjf+none+kill=True+options.accounts_in=collect:replay:prev",
        "sjf+easy+kill=False+options.accounts_in=collect:replay:prev"]
    # the recorded schedule ignores the backfill: left out of its label on request
    assert variant_labels(RUNS, ["policy", "backfill", "kill"], replay_alone=True).tolist() == [
        "replay+kill=True", "sjf+easy+kill=False", "sjf+none+kill=True", "sjf+easy+kill=False"]
    assert variant_labels(RUNS, []).tolist() == ["", "", "", ""]
    assert variant_labels(RUNS.iloc[:0], ["policy", "backfill"]).tolist() == []


def test_add_variant_labels_a_copy_and_lists_variants_in_first_appearance_order():
    df, order = add_variant(RUNS, AXES)
    assert "variant" not in RUNS.columns
    assert df["variant"].tolist() == ["replay+easy+kill=True", "sjf+easy+kill=False", "sjf+none+kill=True",
                                      "sjf+easy+kill=False"]
    assert order == ["replay+easy+kill=True", "sjf+easy+kill=False", "sjf+none+kill=True"]
