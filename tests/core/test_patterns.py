"""The row patterns of ``[match]`` (semantics §11.25): the grammar and its refusals, and
the matcher's answers — held to Python's own backtracking ``re`` (greedy quantifiers,
alternatives left to right) on random patterns and rows."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparktide.core.patterns import MATCHED, NO_MATCH, PENDING, match_at
from sparktide.errors import ConfigError
from sparktide.job.pattern import compile_pattern

LETTERS = "abc"


def run(pattern: str, rows: str, start: int = 0, *, closed: bool = True) -> tuple[int, int, list]:
    """``match_at`` over rows each meeting the one variable its letter names."""
    program = compile_pattern(pattern)
    masks = [1 << program.variables.index(r) if r in program.variables else 0 for r in rows]
    assigned = [0] * len(rows)
    stack = [0] * (2 * (len(program.ops) * (len(rows) + 1) + 1))
    visited = [0] * (len(program.ops) * (len(rows) + 1))
    outcome, end = match_at(
        program.ops,
        program.first,
        program.second,
        masks,
        start,
        len(rows),
        closed,
        assigned,
        stack,
        visited,
        1,
    )
    names = [program.variables[v] if v >= 0 else "." for v in assigned[: end - start]]
    return outcome, end, names


def test_quantifiers_are_greedy_and_alternatives_left_first() -> None:
    assert run("a+ b*", "aabbc") == (MATCHED, 4, ["a", "a", "b", "b"])
    assert run("(a | a b) c?", "abc") == (MATCHED, 1, ["a"])  # (the left alternative wins)
    assert run("a{2,3}", "aaaa") == (MATCHED, 3, ["a", "a", "a"])
    assert run("a . c", "abc") == (MATCHED, 3, ["a", ".", "c"])
    assert run("a b", "ac")[0] == NO_MATCH


def test_a_path_wanting_more_rows_leaves_the_start_undecided_until_the_window_closes() -> None:
    assert run("a b+", "abb", closed=False)[0] == PENDING  # (another b may come)
    assert run("a b+", "abb") == (MATCHED, 3, ["a", "b", "b"])
    assert run("a b+", "abbc", closed=False) == (MATCHED, 3, ["a", "b", "b"])  # (c ends it)
    assert run("a b", "a", closed=False)[0] == PENDING
    assert run("a b", "a")[0] == NO_MATCH
    assert run("a b", "c", closed=False)[0] == NO_MATCH  # (no path reached the end)


def test_nested_quantifiers_take_one_step_per_state() -> None:
    """``(a+)+ b`` over many a's and no b: plain backtracking tries 2**n ways; the
    matcher searches each (instruction, row) once, so it answers at once."""
    rows = "a" * 60 + "c"
    assert run("(a+)+ b", rows)[0] == NO_MATCH
    assert run("(a | a)* b", rows)[0] == NO_MATCH
    assert run("(a+)+ c", rows) == (MATCHED, 61, ["a"] * 60 + ["c"])


def test_an_empty_match_is_no_match() -> None:
    assert run("a*", "bbb")[0] == NO_MATCH
    assert run("a* | b", "b") == (MATCHED, 1, ["b"])  # (the next path after the empty one)


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        ("", "is empty"),
        ("a (b", "the '(' at character 3 is not closed"),
        ("a |", "at the end"),
        ("a*?", "reluctant"),
        ("a+*", "reluctant or repeated"),
        ("(a?)*", "can match no event"),
        ("a{3,2}", "low <= high"),
        ("a{101}", "counts from 0 to 100"),
        ("a{,}", "expected {n}"),
        ("a ) b", "unexpected ')'"),
        ("a # b", "unexpected '#'"),
    ],
)
def test_refusals_name_the_place(pattern: str, message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        compile_pattern(pattern)


# ------------------------------------------------------------------ against Python's re


def _patterns() -> st.SearchStrategy[str]:
    atoms = st.sampled_from([*LETTERS, "."])

    def grow(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        sequence = st.lists(inner, min_size=1, max_size=3).map(" ".join)
        group = st.lists(sequence, min_size=1, max_size=3).map(lambda o: "(" + " | ".join(o) + ")")
        quantified = st.tuples(
            group | inner, st.sampled_from(["", "*", "+", "?", "{2}", "{1,2}", "{2,}"])
        ).map("".join)
        return quantified | sequence

    return st.recursive(atoms, grow, max_leaves=6)


def _regex(pattern: str) -> str:
    return pattern.replace(" ", "")


@settings(max_examples=300, deadline=None)
@given(_patterns(), st.text(LETTERS, max_size=8))
def test_the_matcher_agrees_with_pythons_re(pattern: str, rows: str) -> None:
    """For every start, a non-empty match of Python's ``re`` (same preferences) is the
    matcher's match; when ``re`` finds none, or only an empty one the matcher rejects,
    the matcher finds no match from a path ``re`` would prefer."""
    try:
        compile_pattern(pattern)
    except ConfigError:  # (an unbounded repeat of a part that can match nothing)
        return
    regex = re.compile(_regex(pattern))
    for start in range(len(rows)):
        outcome, end, _ = run(pattern, rows, start)
        found = regex.match(rows, start)
        if found is not None and found.end() > start:
            assert (outcome, end) == (MATCHED, found.end()), (pattern, rows, start)
        elif found is None:
            assert outcome == NO_MATCH, (pattern, rows, start)
        assert outcome != PENDING
