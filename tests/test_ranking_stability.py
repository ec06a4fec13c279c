"""sweep/ranking_stability.py: practical ties and windows that rank nothing (hand-computed values)."""

from __future__ import annotations

import math

import pytest

from twinsweep.sweep.ranking_stability import TIE_REL_TOL, _tau, _top, tie_groups


def test_values_within_the_tolerance_tie_and_others_do_not():
    g = tie_groups({"a": 100.0, "b": 100.05, "c": 101.0, "d": float("inf"), "e": float("inf")})
    assert g == {"a": 100.0, "b": 100.0, "c": 101.0, "d": math.inf, "e": math.inf}
    # single linkage: each value joins the one before it when within TIE_REL_TOL of its magnitude
    step = 1 + TIE_REL_TOL / 2
    assert set(tie_groups({"x": 1000.0, "y": 1000.0 * step, "z": 1000.0 * step * step}).values()) == {1000.0}
    # values near 0 tie within 1e-9 of their unit
    assert tie_groups({"a": 0.0, "b": 1e-12}) == {"a": 0.0, "b": 0.0}


def test_tau_on_tie_groups_by_hand():
    # x = (1, 1, 2) after grouping, y = (1, 2, 3): pairs (a,b) tied in x, (a,c) and (b,c) concordant;
    # tau-b = (2 - 0) / sqrt((3 - 1) * (3 - 0)) = 2 / sqrt(6)
    assert _tau({"a": 100.0, "b": 100.05, "c": 101.0}, {"a": 1.0, "b": 2.0, "c": 3.0}) == pytest.approx(2 / math.sqrt(6))
    assert _tau({"a": 1.0, "b": 2.0, "c": 3.0}, {"a": 3.0, "b": 2.0, "c": 1.0}) == pytest.approx(-1.0)


def test_no_ranking_when_every_variant_ties_under_both_machines():
    # OSC-Clust, one week: the blind machine's twelve mean waits 5863.66 s, the informed ones
    # 5863.72 s and 5863.75 s — no order under either, so nothing to compare (not tau 0)
    blind = {f"v{i}": 5863.658536585366 for i in range(12)}
    informed = {f"v{i}": 5863.715447154472 if i % 2 else 5863.747967479675 for i in range(12)}
    assert _tau(blind, informed) is None
    # one machine ranks, the other sees no difference: no association
    assert _tau(blind, {f"v{i}": float(i) for i in range(12)}) == 0.0


def test_top_set_breaks_practical_ties_by_name():
    assert _top({"c": 10.0, "b": 10.001, "a": 10.002, "d": 50.0}, 2) == {"a", "b"}
    assert _top({"c": 1.0, "b": 2.0, "a": 3.0}, 2) == {"b", "c"}
