"""LEFT OUTER JOIN of two streams translated (semantics §7.9): ``[join] type = "left"``,
the ``WHERE``'s terms on the left input alone its own ``where``, every other term
``[join] where`` over what the join writes."""

from __future__ import annotations

from pathlib import Path

from sparktide.expr import to_text
from tests.query.test_reference_join import bindings, round_trips, translate


def test_left_outer_join_of_two_streams(tmp_path: Path) -> None:
    t = translate(
        "SELECT s.k, o.v AS ov, System.Timestamp() AS at INTO out "
        "FROM Telemetry s TIMESTAMP BY t LEFT OUTER JOIN Other o TIMESTAMP BY t "
        "ON s.k = o.k AND DATEDIFF(second, s, o) BETWEEN 0 AND 30 AND o.v > s.v "
        "WHERE s.v > 1 AND o.k IS NULL AND (o.v IS NULL OR o.v < s.v * 3)",
        bindings(tmp_path),
    )
    j = t.job
    assert j.join is not None and j.join.type == "left"
    assert j.join.between == (0, 30_000_000)
    assert j.join.condition == "Other.v > Telemetry.v"  # (the rest of ON: what matches)
    assert j.join.where == "Other.k IS NULL AND (Other.v IS NULL OR Other.v < Telemetry.v * 3)"
    assert {k: to_text(v) for k, v in j.input_conditions.items()} == {"Telemetry": "v > 1"}
    assert any("written once, Other null, at its timestamp plus 30s" in n for n in t.notes)
    assert any(n.startswith("the WHERE over the LEFT OUTER JOIN") for n in t.notes)
    assert round_trips(j, tmp_path)
