"""``[inputs.<name>.ordering]`` and ``[inputs.<name>.punctuation]`` (semantics §7.8): what
an input may set for itself, what stays job-wide, and errors naming the key; an input's
own ``where`` (§11.20) and a ``[select]`` column per input (§11.21)."""

from __future__ import annotations

import pytest

from sparktide.errors import ConfigError
from sparktide.expr import EVENT_INPUT, parse_expression, ref_nodes, to_text
from sparktide.job import (
    Job,
    Ordering,
    Projection,
    Punctuation,
    Source,
    expression_fields,
    record_casts,
)
from sparktide.time import SECOND


def _union(north: dict | None = None, south: dict | None = None, **tables: object) -> dict:
    return {
        "inputs": {
            "north": {"path": "n/", "timestamp_by": "t", **(north or {})},
            "south": {"path": "s/", "timestamp_by": "t", **(south or {})},
        },
        **tables,
    }


def test_each_input_starts_from_the_job_wide_tables(tmp_path):
    job = Job.from_dict(
        _union(
            north={
                "ordering": {"late_arrival": "10s", "action": "drop"},
                "punctuation": {"every_events": 2, "delay": "-1us"},
            },
            ordering={"late_arrival": "2s", "out_of_order": "1s"},
            punctuation={"every": "5s", "delay": "1s"},
        ),
        base_dir=tmp_path,
    )
    north, south = job.policy_of("north"), job.policy_of("south")
    assert north.ordering == Ordering(late_arrival=10 * SECOND, out_of_order=SECOND, action="drop")
    assert south.ordering == job.ordering
    # every_events replaces the job's every (the two are alternatives); delay is the input's
    assert north.punctuation == Punctuation(every_events=2, delay=-1)
    assert south.punctuation == job.punctuation
    assert job.per_input


def test_an_input_keeps_the_job_wide_delay_and_mode(tmp_path):
    job = Job.from_dict(
        _union(
            south={"punctuation": {"every_events": 7}},
            punctuation={"every_events": 3, "delay": "-1us", "watermark": "both"},
        ),
        base_dir=tmp_path,
    )
    assert job.policy_of("south").punctuation == Punctuation(
        every_events=7, delay=-1, watermark="both"
    )


def test_restating_the_job_wide_values_is_no_per_input_setting(tmp_path):
    job = Job.from_dict(
        _union(north={"ordering": {"late_arrival": "5s"}}, ordering={"late_arrival": "5s"}),
        base_dir=tmp_path,
    )
    assert not job.per_input


def test_a_join_may_judge_each_side_by_its_own_policy(tmp_path):
    data = _union(
        north={"ordering": {"late_arrival": "1m"}},
        join={"left": "north", "right": "south", "on": ["plate"], "between": ["0s", "1m"]},
    )
    job = Job.from_dict(data, base_dir=tmp_path)
    assert job.policy_of("north").ordering.late_arrival == 60 * SECOND


@pytest.mark.parametrize(
    ("data", "key"),
    [
        (_union(north={"ordering": {"partitioned": True}}), "inputs.north.ordering.partitioned"),
        (_union(north={"ordering": {"lateness": "1s"}}), "inputs.north.ordering.lateness"),
        (_union(north={"ordering": {"late_arrival": 10}}), "inputs.north.ordering.late_arrival"),
        (_union(north={"ordering": {"late_arrival": "-1s"}}), "inputs.north.ordering.late_arrival"),
        (_union(south={"ordering": {"action": "keep"}}), "inputs.south.ordering.action"),
        (_union(north={"ordering": "drop"}), "inputs.north.ordering"),
        (
            _union(north={"ordering": {"on_out_of_order": "accept"}}),
            "inputs.north.ordering.on_out_of_order",
        ),
        (
            _union(
                north={"ordering": {"on_out_of_order": "drop"}},
                ordering={"on_out_of_order": "accept"},
            ),
            "inputs.north.ordering.on_out_of_order",
        ),
        (_union(north={"punctuation": {"every_events": 2}}), "inputs.north.punctuation"),
        (
            _union(north={"punctuation": {"watermark": "both"}}, punctuation={"every_events": 1}),
            "inputs.north.punctuation.watermark",
        ),
        (
            _union(north={"punctuation": {"column": "k"}}, punctuation={"every_events": 1}),
            "inputs.north.punctuation.column",
        ),
        (
            _union(north={"punctuation": {"every_events": 0}}, punctuation={"every_events": 1}),
            "inputs.north.punctuation.every_events",
        ),
        (
            _union(north={"punctuation": {"every": 5}}, punctuation={"every_events": 1}),
            "inputs.north.punctuation.every",
        ),
        (
            _union(
                north={"punctuation": {"delay": "1s"}},
                punctuation={"column": "kind", "value": "cti"},
            ),
            "inputs.north.punctuation.delay",
        ),
        (
            _union(
                north={"over": "device", "ordering": {"late_arrival": "1s"}},
                south={"over": "device"},
            ),
            "inputs.north.ordering",
        ),
        ({"source": {"path": "x", "ordering": {"late_arrival": "1s"}}}, "source.ordering"),
    ],
)
def test_per_input_errors_name_the_key(tmp_path, data, key):
    with pytest.raises(ConfigError) as info:
        Job.from_dict(data, base_dir=tmp_path)
    assert info.value.key == key, info.value


def test_the_python_api_takes_a_dict_per_input():
    north = Source(path="n/", timestamp_by="t", ordering={"action": "drop"})
    south = Source(path="s/", timestamp_by="t")
    job = Job(source=north, inputs=(("north", north), ("south", south)))
    assert north.ordering == (("action", "drop"),)
    assert job.policy_of("north").ordering.action == "drop"
    assert job.policy_of("south").ordering.action == "adjust"


# ------------------------------------------------- an input's own where (semantics §11.20)


def test_an_input_s_where_is_parsed_and_read_by_name(tmp_path):
    job = Job.from_dict(_union(north={"where": "speed > 50"}), base_dir=tmp_path)
    assert [(n, s.where) for n, s in job.inputs] == [("north", "speed > 50"), ("south", None)]
    assert list(job.input_conditions) == ["north"]
    # a one-input job's [source] where runs before its analytic columns
    lag = {"p": {"function": "lag", "value": "x", "limit_duration": "1m"}}
    one = Job.from_dict({"source": {"path": "in/", "where": "x > 1"}, "analytic": lag})
    assert list(one.input_conditions) == [""] and one.where_key("") == "source.where"
    union = Job.from_dict(_union(north={"where": "x > 1"}, analytic=lag), base_dir=tmp_path)
    assert list(union.input_conditions) == ["north"]
    # the event's System.Timestamp(), after its input's policy (semantics §11.20)
    timed = _union(north={"where": "System.Timestamp() > '2026-01-01T00:00:00Z'"})
    assert list(Job.from_dict(timed, base_dir=tmp_path).input_conditions) == ["north"]


@pytest.mark.parametrize(
    ("data", "key", "message"),
    [
        (
            {"source": {"path": "in/", "where": "x > 1"}},
            "source.where",
            "filters the events before [analytic.*] columns or [match] see them; without "
            "those, filter a job's events with [filter]",
        ),
        (_union(north={"where": 3}), "inputs.north.where", "expected a condition as text"),
        (_union(north={"where": "x >"}), "inputs.north.where", ""),
        (_union(south={"where": "north.x > 1"}), "inputs.south.where", "write 'x'"),
    ],
)
def test_an_input_s_where_errors_name_the_key(tmp_path, data, key, message):
    with pytest.raises(ConfigError) as caught:
        Job.from_dict(data, base_dir=tmp_path)
    assert caught.value.key == key and message in caught.value.message, str(caught.value)


# ----------------------------------------- a [select] column per input (semantics §11.21)


def test_a_select_column_may_give_one_expression_per_input(tmp_path):
    per_input = {"north": "speed", "south": "velocity * 2"}
    job = Job.from_dict(_union(select={"id": "id", "v": per_input}), base_dir=tmp_path)
    id_column, v_column = job.select
    assert (id_column.expression, id_column.by_input) == ("id", ())
    assert v_column.by_input == (("north", "speed"), ("south", "velocity * 2"))
    assert str(v_column.parsed_for("south")) == str(parse_expression("velocity * 2"))
    # the Python API takes the table as a dict too
    assert Projection("v", by_input=per_input) == v_column
    # the fields it reads are the job's fields, per input; the event's input is none
    assert expression_fields(job) == ["id", "speed", "velocity"]


_PER_INPUT = {"north": "speed", "south": "velocity"}
_LAG = {"p": {"function": "lag", "value": "x", "limit_duration": "1m"}}


@pytest.mark.parametrize(
    ("data", "key", "message"),
    [
        (_union(select={"v": {"north": "speed"}}), "select.v", "no expression for the input south"),
        (
            _union(select={"v": {**_PER_INPUT, "west": "w"}}),
            "select.v.west",
            "names no input of the union (its inputs: north, south)",
        ),
        (_union(select={"v": {"north": 3, "south": "s"}}), "select.v.north", "as text"),
        (_union(select={"v": {"north": "x >", "south": "s"}}), "select.v.north", ""),
        (
            {"source": {"path": "in/"}, "select": {"v": _PER_INPUT}},
            "select.v",
            "one expression per input is for a union of inputs",
        ),
        (
            _union(
                select={"v": _PER_INPUT},
                window={"type": "tumbling", "size": "1m", "aggregates": {"n": "count(*)"}},
            ),
            "select.v",
            "without a window or a join",
        ),
    ],
)
def test_a_select_column_per_input_errors_name_the_key(tmp_path, data, key, message):
    with pytest.raises(ConfigError) as caught:
        Job.from_dict(data, base_dir=tmp_path)
    assert caught.value.key == key and message in caught.value.message, str(caught.value)


# ------------------------------------------------------------ System.Input() (§11.22)


def _union_window(**window: object) -> dict:
    return {
        "inputs": {"north": {"path": "n"}, "south": {"path": "s"}},
        "window": {"type": "tumbling", "size": "1m", **window},
        "output": {"path": "out"},
    }


def test_system_input_in_a_union_windows_keys_and_aggregates() -> None:
    """``System.Input()`` is the event's input, read by a union's window (semantics
    §11.22); it parses back from its text, and the reader checks each input's own
    expression for CASTs that fail."""
    job = Job.from_dict(
        _union_window(
            group_by=[{"feed": "System.Input()"}],
            aggregates={
                "s": "sum(CASE System.Input() WHEN 'north' THEN v ELSE CAST(w AS bigint) END)"
            },
        )
    )
    assert job.window is not None and job.window.group_keys[0][1] == EVENT_INPUT
    assert to_text(parse_expression("system.input()", "k")) == "System.Input()"
    # (each input's expressions read System.Input() as its name)
    (north,) = record_casts(job, "north")
    (south,) = record_casts(job, "south")
    assert to_text(north) == "CASE WHEN 'north' = 'north' THEN v ELSE CAST(w AS bigint) END"
    assert to_text(south) == "CASE WHEN 'south' = 'north' THEN v ELSE CAST(w AS bigint) END"


@pytest.mark.parametrize(
    ("tables", "key", "message"),
    [
        (
            {
                "select": {"x": "System.Input()"},
                "window": {"type": "tumbling", "size": "1m", "aggregates": {"n": "count(*)"}},
            },
            "select.x",
            "[select] without a window",
        ),
        (
            {
                "window": {
                    "type": "tumbling",
                    "size": "1m",
                    "aggregates": {"n": "count(*)"},
                    "having": "System.Input() = 'a'",
                }
            },
            "window.having",
            "System.Input()",
        ),
    ],
)
def test_system_input_is_refused_outside_a_unions_window(tables, key, message) -> None:
    base = {"inputs": {"north": {"path": "n"}, "south": {"path": "s"}}, "output": {"path": "out"}}
    with pytest.raises(ConfigError) as info:
        Job.from_dict({**base, **tables})
    assert info.value.key == key and message in str(info.value)


def test_system_input_in_a_unions_filter_select_and_analytic_columns() -> None:
    """``[filter]``, ``[select]`` without a window and the analytic columns read it too
    (semantics §11.22), and a column may take one expression per input beside analytic
    columns or ``[apply]``; not outside a union."""
    base = {"inputs": {"north": {"path": "n"}, "south": {"path": "s"}}, "output": {"path": "out"}}
    where = {"where": "CASE System.Input() WHEN 'north' THEN v ELSE w END > 1"}
    job = Job.from_dict({**base, "filter": where})
    assert job.filter is not None and EVENT_INPUT in ref_nodes(job.filter.expression)
    lag = {
        "p": {
            "function": "lag",
            "value": "CASE System.Input() WHEN 'north' THEN v ELSE w END",
            "partition_by": ["System.Input()"],
            "limit_duration": "1m",
        }
    }
    select = {"src": "System.Input()", "p": "p", "v": {"north": "v", "south": "w * 2"}}
    job = Job.from_dict({**base, "filter": where, "analytic": lag, "select": select})
    assert [p.name for p in job.select] == ["src", "p", "v"]
    # over the rows [apply] expands an event into, each row's input is its event's; the
    # value it expands may be each input's own
    value = "CASE System.Input() WHEN 'north' THEN xs ELSE ys END"
    apply = {"function": "elements", "value": value, "name": "x"}
    select = {"x": "x", "src": "System.Input()", "v": {"north": "v", "south": "x"}}
    job = Job.from_dict({**base, "filter": where, "apply": apply, "select": select})
    assert job.apply is not None and [p.name for p in job.select] == ["x", "src", "v"]
    with pytest.raises(ConfigError) as info:
        one = {"source": {"path": "in"}, "output": {"path": "out"}}
        Job.from_dict({**one, "apply": apply, "select": {"x": "x"}})
    assert info.value.key == "apply.value" and "not a union" in str(info.value)
    with pytest.raises(ConfigError) as info:
        Job.from_dict({"source": {"path": "in"}, "filter": where, "output": {"path": "out"}})
    assert info.value.key == "filter.where" and "not a union" in str(info.value)
    with pytest.raises(ConfigError) as info:
        Job.from_dict({"source": {"path": "in"}, "analytic": lag, "output": {"path": "out"}})
    assert info.value.key == "analytic.p.partition_by[0]" and "not a union" in str(info.value)
    per_input = {"v": {"north": "System.Input()", "south": "w"}}
    with pytest.raises(ConfigError) as info:
        Job.from_dict({**base, "select": per_input})
    assert info.value.key == "select.v.north" and "System.Input()" in str(info.value)


def test_system_input_needs_a_union() -> None:
    window = {
        "type": "tumbling",
        "size": "1m",
        "aggregates": {"n": "count(*)"},
        "group_by": [{"feed": "System.Input()"}],
    }
    with pytest.raises(ConfigError) as info:
        Job.from_dict({"source": {"path": "in"}, "window": window, "output": {"path": "out"}})
    assert info.value.key == "window.group_by.feed" and "not a union" in str(info.value)
