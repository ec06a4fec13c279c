"""The mutation check's list stays true to the source (fast): every mutant's snippet occurs exactly
once in its file, its replacement changes the code and still compiles, and its test files exist.
A refactor that moves a snippet fails here until tests/mutation_check.py is updated."""

import ast
from pathlib import Path

import pytest

from mutation_check import MUTANTS, ROOT, apply, mutant_by_name


@pytest.mark.parametrize("m", MUTANTS, ids=[m.name for m in MUTANTS])
def test_mutant_snippet_found_exactly_once_and_mutation_compiles(m):
    path = ROOT / m.file
    text = path.read_text()
    assert text.count(m.original) == 1, f"{m.name}: snippet occurs {text.count(m.original)} times in {m.file}"
    mutated = apply(m, text)
    assert mutated != text and m.original != m.replacement
    ast.parse(mutated, filename=str(path))  # a mutant that does not compile tests nothing
    for t in m.tests:
        assert (ROOT / t).is_file(), f"{m.name}: no test file {t}"
    assert m.min_kills >= 1 and m.why


def test_names_unique_and_issue_16_mutants_need_two_tests():
    names = mutant_by_name()
    for name in ("easy-shadow-first-end", "extra-not-decremented", "expected-end-is-real-end"):
        assert names[name].min_kills >= 2
    assert {m.file for m in MUTANTS} >= {"core/scheduler.py", "core/kernel.py", "core/power.py", "sweep/store.py"}


def test_apply_refuses_a_missing_or_repeated_snippet():
    m = MUTANTS[0]
    with pytest.raises(ValueError, match="occurs 0 times"):
        apply(m, "nothing here")
    with pytest.raises(ValueError, match="occurs 2 times"):
        apply(m, m.original + m.original)
