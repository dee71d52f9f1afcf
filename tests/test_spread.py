"""How tests/conftest.py deals the suite to pytest-xdist's workers."""

from __future__ import annotations

from typing import Any

from tests.conftest import spread


class _Item:
    """What :func:`spread` reads of a test: its ``jvm`` marker and its fixtures."""

    def __init__(self, name: str, spark: bool = False, jvm: int | None = None) -> None:
        self.name = name
        self.fixturenames = ("spark",) if spark else ()
        self._jvm = jvm

    def get_closest_marker(self, name: str) -> Any:
        if name != "jvm" or self._jvm is None:
            return None
        return type("Mark", (), {"args": (self._jvm,)})()

    def __repr__(self) -> str:
        return self.name


def test_each_slice_runs_spark_tests_then_child_jvms_then_plain_tests():
    items = [
        _Item("child-a", jvm=4),
        _Item("spark-a", spark=True),
        _Item("plain-a"),
        _Item("spark-b", spark=True),
        _Item("child-b", jvm=4),
        _Item("plain-b"),
        _Item("spark-c", spark=True),
        _Item("plain-c"),
    ]
    ordered = [item.name for item in spread(items, 2)]  # type: ignore[arg-type]
    assert sorted(ordered) == sorted(item.name for item in items)
    first, second = ordered[:4], ordered[4:]
    for share in (first, second):
        kinds = [name.split("-")[0] for name in share]
        assert kinds == sorted(kinds, key=["spark", "child", "plain"].index)
    assert {"child-a", "child-b"} <= set(ordered)


def test_the_heaviest_child_jvm_tests_start_first():
    items = [
        _Item("spark-a", spark=True),
        _Item("child-light", jvm=3),
        _Item("child-heavy", jvm=16),
        _Item("child-middle", jvm=8),
    ]
    ordered = [item.name for item in spread(items, 1)]  # type: ignore[arg-type]
    assert ordered == ["spark-a", "child-heavy", "child-middle", "child-light"]
