"""The job file (semantics §10): loading, normalising and rejecting configurations."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from jobfiles import BASE_JOB, CONFIG_ERRORS, DELETE, SPEC_JOB_TOML, mutate, write_job
from sparktide.errors import ConfigError, SparktideError
from sparktide.expr import references
from sparktide.job import (
    AGGREGATE_FUNCTIONS,
    Aggregate,
    Job,
    Join,
    Ordering,
    Output,
    Punctuation,
    Reference,
    Source,
    Window,
    load_job,
)
from sparktide.query import job_to_toml
from sparktide.time import MINUTE, SECOND, parse_instant

# ---------------------------------------------------------------------------- a full job


def test_spec_job_loads(tmp_path):
    job = load_job(write_job(tmp_path, SPEC_JOB_TOML))
    assert isinstance(job, Job)
    folder = tmp_path.resolve()

    source = job.source
    assert source.format == "jsonl"
    assert Path(source.path) == folder / "events"
    assert source.timestamp_by == "event_time"
    assert source.arrival_time == "arrival_time"
    assert source.processing_time == "seen_at"
    assert source.partition == "partition"
    assert source.partitions == 4
    assert source.over == "device"
    assert job.event_time_mode

    ordering = job.ordering
    assert ordering.early_arrival == 5 * MINUTE
    assert ordering.late_arrival == 5 * SECOND
    assert ordering.out_of_order == 0
    assert ordering.action == "adjust"
    assert ordering.on_out_of_order == "adjust"
    assert ordering.out_of_order_action == "adjust"
    assert ordering.partitioned is False

    window = job.window
    assert window is not None
    assert window.type == "tumbling"
    assert window.size == 5 * MINUTE
    assert window.offset == 0
    assert window.boundary == "start"
    assert window.allowed_lateness == 0
    assert window.idle_timeout == MINUTE
    assert window.late == "dead_letter"
    assert window.group_by == ("device",)
    assert [(a.name, a.function, a.column) for a in window.aggregates] == [
        ("n", "count", None),
        ("total", "sum", "value"),
        ("peak", "max", "value"),
    ]
    assert window.period == 5 * MINUTE

    output = job.output
    assert output.format == "jsonl"
    assert Path(output.path) == folder / "out"
    assert Path(output.dead_letter) == folder / "dead_letter"
    assert Path(output.metrics) == folder / "metrics"
    assert Path(output.checkpoint) == folder / "checkpoint"


def test_durations_are_int_microseconds(tmp_path):
    job = load_job(write_job(tmp_path, SPEC_JOB_TOML))
    for value in (
        job.ordering.early_arrival,
        job.ordering.late_arrival,
        job.ordering.out_of_order,
        job.window.size,
        job.window.offset,
        job.window.allowed_lateness,
        job.window.idle_timeout,
    ):
        assert type(value) is int


def test_relative_paths_resolve_against_the_job_files_folder(tmp_path, monkeypatch):
    jobs = tmp_path / "jobs" / "nightly"
    jobs.mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    data = mutate(BASE_JOB, {"source.path": "../data/events", "output.path": "out"})
    path = write_job(jobs, data)
    job = load_job(Path("..") / "jobs" / "nightly" / "job.toml")
    assert Path(job.source.path).resolve() == (tmp_path / "jobs" / "data" / "events").resolve()
    assert Path(job.source.path).is_absolute()
    assert Path(job.output.path) == jobs.resolve() / "out"
    assert load_job(path) == job


def test_absolute_paths_are_kept(tmp_path):
    absolute = tmp_path / "abs" / "events.jsonl"
    job = load_job(write_job(tmp_path, mutate(BASE_JOB, {"source.path": str(absolute)})))
    assert Path(job.source.path) == absolute


def test_minimal_job_gets_defaults(tmp_path):
    job = load_job(write_job(tmp_path, '[source]\npath = "events.jsonl"\n'))
    assert job.source.format == "jsonl"
    assert job.source.timestamp_by is None
    assert not job.event_time_mode
    assert job.ordering.early_arrival == 5 * MINUTE
    assert job.ordering.late_arrival == 5 * SECOND
    assert job.ordering.out_of_order == 0
    assert job.ordering.action == "adjust"
    assert job.ordering.out_of_order_action == "adjust"
    assert job.ordering.partitioned is False
    assert job.window is None
    assert job.output == Output()


def test_on_out_of_order_defaults_to_action(tmp_path):
    data = mutate(BASE_JOB, {"ordering.action": "drop", "ordering.on_out_of_order": DELETE})
    job = load_job(write_job(tmp_path, data))
    assert job.ordering.on_out_of_order is None
    assert job.ordering.out_of_order_action == "drop"


@pytest.mark.parametrize("action", ["adjust", "drop", "dead_letter", "accept"])
def test_every_on_out_of_order_value_loads(tmp_path, action):
    job = load_job(write_job(tmp_path, mutate(BASE_JOB, {"ordering.on_out_of_order": action})))
    assert job.ordering.out_of_order_action == action


def test_none_disables_checks(tmp_path):
    data = mutate(
        BASE_JOB,
        {
            "ordering.early_arrival": "none",
            "ordering.late_arrival": "none",
            "ordering.out_of_order": "none",
        },
    )
    ordering = load_job(write_job(tmp_path, data)).ordering
    assert ordering.early_arrival is None
    assert ordering.late_arrival is None
    assert ordering.out_of_order is None


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"window.type": "hopping", "window.hop": "1m"}, {"size": 5 * MINUTE, "hop": MINUTE}),
        (
            {
                "window.type": "session",
                "window.size": DELETE,
                "window.gap": "30s",
                "window.max_duration": "10m",
            },
            {"gap": 30 * SECOND, "max_duration": 10 * MINUTE},
        ),
        (
            {"window.type": "sliding", "window.boundary": DELETE},
            {"size": 5 * MINUTE, "boundary": "end"},
        ),
        ({"window.type": "snapshot", "window.size": DELETE}, {"size": None}),
        ({"window.boundary": "end"}, {"boundary": "end"}),
        ({"window.boundary": DELETE}, {"boundary": "start"}),
        ({"window.idle_timeout": DELETE}, {"idle_timeout": None}),
        ({"window.late": "drop", "window.offset": "30s"}, {"late": "drop", "offset": 30 * SECOND}),
    ],
)
def test_window_variants_load(tmp_path, changes, expected):
    window = load_job(write_job(tmp_path, mutate(BASE_JOB, changes))).window
    for name, value in expected.items():
        assert getattr(window, name) == value


def test_every_aggregate_function_parses(tmp_path):
    aggregates = {f"a_{f}": f"{f}(value)" for f in AGGREGATE_FUNCTIONS}
    aggregates["rows"] = "count(*)"
    aggregates["spaced"] = "  SUM ( value )  "
    job = load_job(write_job(tmp_path, mutate(BASE_JOB, {"window.aggregates": aggregates})))
    parsed = {a.name: (a.function, a.column or a.expression) for a in job.window.aggregates}
    for function in AGGREGATE_FUNCTIONS:
        assert parsed[f"a_{function}"] == (function, "value")
    assert parsed["rows"] == ("count", None)
    assert parsed["spaced"] == ("sum", "value")
    assert [a.name for a in job.window.aggregates] == list(aggregates)


def test_substreams_with_key_in_group_by_load(tmp_path):
    data = mutate(BASE_JOB, {"source.over": "device"})
    job = load_job(write_job(tmp_path, data))
    assert job.source.over == "device"


def test_computed_grouping_columns_load_and_write_back(tmp_path):
    keys = ["device", {"hour": "DATEPART(hour, t)"}, {"fast": "value > 3"}]
    job = load_job(write_job(tmp_path, mutate(BASE_JOB, {"window.group_by": keys})))
    window = job.window
    assert window.group_by == ("device", "hour", "fast")
    assert window.group_expressions == (("hour", "DATEPART(hour, t)"), ("fast", "value > 3"))
    assert window.record_group_columns == ("device",)
    assert [name for name, e in window.group_keys if e is not None] == ["hour", "fast"]
    assert "hour" in window.result_columns  # (having and [select] read it)
    again = load_job(write_job(tmp_path, job_to_toml(job), name="again.toml"))
    assert again.window == window


def test_partitioned_job_loads(tmp_path):
    data = mutate(BASE_JOB, {"ordering.partitioned": True, "window.group_by": ["partition"]})
    assert load_job(write_job(tmp_path, data)).ordering.partitioned is True


# ---------------------------------------------------------------------------- frozen


def test_job_is_frozen(tmp_path):
    job = load_job(write_job(tmp_path, SPEC_JOB_TOML))
    with pytest.raises(dataclasses.FrozenInstanceError):
        job.ordering = Ordering()
    with pytest.raises(dataclasses.FrozenInstanceError):
        job.ordering.late_arrival = 0
    with pytest.raises(dataclasses.FrozenInstanceError):
        job.source.path = "elsewhere"
    with pytest.raises(dataclasses.FrozenInstanceError):
        job.window.size = 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        job.output.path = "elsewhere"
    with pytest.raises(dataclasses.FrozenInstanceError):
        job.window.aggregates[0].function = "sum"
    assert isinstance(job.window.group_by, tuple)
    assert isinstance(job.window.aggregates, tuple)


def test_jobs_are_values(tmp_path):
    first = load_job(write_job(tmp_path, SPEC_JOB_TOML))
    second = load_job(write_job(tmp_path, SPEC_JOB_TOML, name="again.toml"))
    assert first == second
    assert hash(first.ordering) == hash(second.ordering)


# ---------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("changes", "key"),
    [pytest.param(changes, key, id=name) for name, changes, key in CONFIG_ERRORS],
)
def test_config_error_names_the_key(tmp_path, changes, key):
    path = write_job(tmp_path, mutate(BASE_JOB, changes))
    with pytest.raises(ConfigError) as info:
        load_job(path)
    assert info.value.key == key
    assert key in str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("changes", "key"),
    [pytest.param(changes, key, id=name) for name, changes, key in CONFIG_ERRORS],
)
def test_config_errors_from_dict_too(changes, key):
    with pytest.raises(ConfigError) as info:
        Job.from_dict(mutate(BASE_JOB, changes))
    assert key in str(info.value)


def test_a_job_given_a_dataframe_needs_no_source_path():
    """start(spark, job, frame) reads no file: the job may name none; reading its files
    (simulate, run) says the path is required."""
    from sparktide.reader import read_records

    job = Job.from_dict(mutate(BASE_JOB, {"source.path": DELETE}))
    assert job.source.path is None
    with pytest.raises(ConfigError, match=r"source\.path: is required"):
        read_records(job.source)


def test_a_stream_spark_reads_is_named_with_its_options_and_refused_by_simulate():
    """``format = "rate"`` / ``"rate-micro-batch"`` / ``"table"``: Spark's own sources,
    their reader options normalised to text; only ``run`` reads them."""
    from sparktide.reader import read_records

    job = Job.from_dict(
        mutate(
            BASE_JOB,
            {
                "source.path": DELETE,
                "source.format": "rate-micro-batch",
                "source.options": {"rowsPerBatch": 50, "numPartitions": 1, "x": True},
            },
        )
    )
    assert job.source.spark_stream
    assert job.source.options == (("numPartitions", "1"), ("rowsPerBatch", "50"), ("x", "true"))
    with pytest.raises(ConfigError, match=r"source\.format: 'rate-micro-batch' is a stream"):
        read_records(job.source)
    table = mutate(BASE_JOB, {"source.path": DELETE, "source.format": "table"})
    assert Job.from_dict(mutate(table, {"source.table": "sales.events"})).source.table == (
        "sales.events"
    )
    with pytest.raises(ConfigError, match=r"source\.table: .*got 'a b'"):
        Job.from_dict(mutate(table, {"source.table": "a b"}))
    main = {"path": "events", "timestamp_by": "event_time"}
    union = mutate(
        BASE_JOB, {"source": DELETE, "inputs": {"main": main, "ticks": {"format": "rate"}}}
    )
    with pytest.raises(ConfigError, match=r"inputs\.ticks\.format: a union's inputs are files"):
        Job.from_dict(union)


def test_config_error_is_a_value_error_and_a_sparktide_error():
    assert issubclass(ConfigError, ValueError)
    assert issubclass(ConfigError, SparktideError)
    error = ConfigError("ordering.late_arrival", "bad")
    assert error.key == "ordering.late_arrival"
    assert error.message == "bad"
    assert str(error) == "ordering.late_arrival: bad"


@pytest.mark.parametrize(
    ("changes", "hint"),
    [
        ({"ordering.late_arival": "5s"}, "late_arrival"),
        ({"ordering.out_of_ordr": "5s"}, "out_of_order"),
        ({"window.agregates": {}}, "aggregates"),
        ({"source.timestamp": "t"}, "timestamp_by"),
        ({"sources": {"path": "x"}}, "source"),
        ({"windows": {"type": "tumbling"}}, "window"),
    ],
)
def test_unknown_key_suggests_the_closest(tmp_path, changes, hint):
    with pytest.raises(ConfigError) as info:
        load_job(write_job(tmp_path, mutate(BASE_JOB, changes)))
    assert "did you mean" in str(info.value)
    assert repr(hint) in str(info.value)


def test_unknown_key_without_a_near_match_has_no_hint(tmp_path):
    with pytest.raises(ConfigError) as info:
        load_job(write_job(tmp_path, mutate(BASE_JOB, {"ordering.xyzzy": 1})))
    assert "ordering.xyzzy" in str(info.value)
    assert "did you mean" not in str(info.value)


@pytest.mark.parametrize(
    ("value", "bad"),
    [
        ("sum(value); drop table", "drop table"),
        ("sum(a,b)", "sum(a,b)"),
        ("__import__('os')", "__import__"),
        ("count(*) + 1", "+ 1"),
        ("sum(value)) --", "--"),
    ],
)
def test_aggregate_text_is_never_executed(tmp_path, value, bad):
    path = write_job(tmp_path, mutate(BASE_JOB, {"window.aggregates": {"total": value}}))
    with pytest.raises(ConfigError) as info:
        load_job(path)
    assert "window.aggregates.total" in str(info.value)
    assert bad in str(info.value)


def test_file_not_toml(tmp_path):
    path = tmp_path / "job.toml"
    path.write_text("[source\npath = events\n", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_job(path)
    assert "TOML" in str(info.value)
    assert "job.toml" in str(info.value)


def test_file_not_utf8(tmp_path):
    path = tmp_path / "job.toml"
    path.write_bytes(b'[source]\npath = "\xff\xfe"\n')
    with pytest.raises(ConfigError):
        load_job(path)


def test_file_missing(tmp_path):
    with pytest.raises(ConfigError) as info:
        load_job(tmp_path / "nope.toml")
    assert "nope.toml" in str(info.value)


def test_file_is_a_directory(tmp_path):
    with pytest.raises(ConfigError):
        load_job(tmp_path)


def test_empty_file_lacks_source(tmp_path):
    with pytest.raises(ConfigError) as info:
        load_job(write_job(tmp_path, ""))
    assert "source" in str(info.value)


# ---------------------------------------------------------------------------- Python API


def test_python_api_parses_durations():
    assert Ordering(late_arrival="20s").late_arrival == 20_000_000
    assert Ordering(late_arrival="none").late_arrival is None
    assert Ordering(out_of_order="1m30s").out_of_order == 90 * SECOND
    assert Ordering(early_arrival=7).early_arrival == 7
    assert Ordering() == Ordering(early_arrival="5m", late_arrival="5s", out_of_order="0")
    assert type(Ordering(late_arrival="20s").late_arrival) is int


def test_python_api_validates():
    with pytest.raises(ConfigError, match=re.escape("ordering.late_arrival")):
        Ordering(late_arrival="soon")
    with pytest.raises(ConfigError, match=re.escape("ordering.late_arrival")):
        Ordering(late_arrival="-1s")
    with pytest.raises(ConfigError, match=re.escape("ordering.action")):
        Ordering(action="ignore")
    with pytest.raises(ConfigError, match=re.escape("source.path")):
        Source(path="")
    with pytest.raises(ConfigError, match=re.escape("window.hop")):
        Window(type="hopping", size="5m")
    with pytest.raises(ConfigError, match=re.escape("window.aggregates.x")):
        Aggregate.parse("x", "median(v)")
    with pytest.raises(ConfigError, match=re.escape("ordering.partitioned")):
        Job(Source(path="p"), Ordering(partitioned=True))
    with pytest.raises(ConfigError, match=re.escape("window.group_by")):
        Job(Source(path="p", over="device"), window=Window(type="tumbling", size="1m"))


def test_python_api_builds_the_same_job_as_the_file(tmp_path):
    (tmp_path / "events.jsonl").touch()
    data = mutate(
        BASE_JOB,
        {"source.path": str(tmp_path / "events.jsonl"), "output": {"path": str(tmp_path / "o")}},
    )
    from_file = load_job(write_job(tmp_path, data))
    built = Job(
        source=Source(
            path=str(tmp_path / "events.jsonl"),
            timestamp_by="event_time",
            arrival_time="arrival_time",
            partition="partition",
            partitions=4,
        ),
        ordering=Ordering(early_arrival="5m", late_arrival="5s", on_out_of_order="adjust"),
        window=Window(
            type="tumbling",
            size="5m",
            idle_timeout="1m",
            group_by=["device"],
            aggregates=(
                Aggregate.parse("n", "count(*)"),
                Aggregate.parse("total", "sum(value)"),
                Aggregate.parse("peak", "max(value)"),
            ),
        ),
        output=Output(path=str(tmp_path / "o")),
    )
    assert built == from_file


def test_aggregate_str():
    assert str(Aggregate.parse("n", "count(*)")) == "count(*)"
    assert str(Aggregate.parse("t", "SUM(value)")) == "sum(value)"


def test_punctuation_table_loads(tmp_path):
    data = mutate(
        BASE_JOB,
        {
            "source.end_time": "end_time",
            "punctuation.column": "kind",
            "punctuation.value": "cti",
            "punctuation.every_events": 100,
            "punctuation.delay": "-1us",
        },
    )
    job = Job.from_dict(data, base_dir=tmp_path)
    assert job.punctuation == Punctuation(
        column="kind", value="cti", every_events=100, delay=-1, watermark="cti"
    )
    assert job.source.end_time == "end_time"
    assert job.punctuation.explicit and job.punctuation.generated
    assert job.punctuation.is_cti({"kind": "cti"})
    assert not job.punctuation.is_cti({"kind": "CTI"})


def test_punctuation_values_compare_with_their_json_type():
    ones = Punctuation(column="kind", value=1)
    assert ones.is_cti({"kind": 1})
    assert not ones.is_cti({"kind": True})  # 1 == True in Python, not in JSON
    assert not ones.is_cti({"kind": 1.0})
    assert not ones.is_cti({"kind": "1"})
    assert Punctuation(column="kind", value=True).is_cti({"kind": True})


def test_edge_events_load(tmp_path):
    data = mutate(
        BASE_JOB,
        {
            "source.edge": "kind",
            "source.edge_id": "id",
            "punctuation.column": "kind",  # CTI rows may share the edges' column
            "punctuation.value": "cti",
        },
    )
    job = Job.from_dict(data, base_dir=tmp_path)
    assert (job.source.edge, job.source.edge_id, job.edges) == ("kind", "id", True)
    assert not Job.from_dict(BASE_JOB, base_dir=tmp_path).edges


def test_generated_punctuation_defaults_to_no_delay():
    assert Punctuation(every="1m").delay == 0
    assert Punctuation(every="1m").every == MINUTE
    assert Punctuation(column="kind", value="cti").delay is None


def _union(**inputs: dict) -> dict:
    return {"inputs": inputs, "output": {"path": "out/"}}


def test_a_union_of_inputs_loads(tmp_path):
    job = Job.from_dict(
        _union(
            north={"path": "n/", "timestamp_by": "t", "partition": "p", "partitions": 2},
            south={"path": "s/", "timestamp_by": "time", "format": "csv"},
        ),
        base_dir=tmp_path,
    )
    assert [name for name, _ in job.inputs] == ["north", "south"]
    assert job.source == job.inputs[0][1]
    assert job.source.path == str(tmp_path / "n/")
    assert job.inputs[1][1].timestamp_by == "time"
    assert job.declared_partitions == ["north/0", "north/1"]
    assert [name for name, _ in job.input_sources] == ["north", "south"]


@pytest.mark.parametrize(
    ("data", "key"),
    [
        (_union(a={"path": "a/", "timestamp_by": "t", "colour": 1}), "inputs.a.colour"),
        (_union(a={"timestamp_by": "t"}), "inputs.a.path"),
        (_union(a={"path": "a/", "timestamp_by": "t; x"}), "inputs.a.timestamp_by"),
        (
            _union(a={"path": "a/", "timestamp_by": "t"}, b={"path": "b/"}),
            "inputs.b.timestamp_by",
        ),
        (
            _union(a={"path": "a/", "over": "d"}, b={"path": "b/", "over": "device"}),
            "inputs.b.over",
        ),
        (
            _union(a={"path": "a/", "timestamp_by": "t", "end_time": "e"}, b={"path": "b/"}),
            "inputs.b.end_time",
        ),
        (
            _union(
                a={"path": "a/", "timestamp_by": "t", "edge": "k", "edge_id": "i"},
                b={"path": "b/", "timestamp_by": "t"},
            ),
            "inputs.b.edge",
        ),
        ({"inputs": {}, "output": {}}, "inputs"),
        (_union(a={"path": "a/", "import_ctis": "b"}), "inputs.a.import_ctis"),
        (_union(a={"path": "a/", "import_ctis": "a"}), "inputs.a.import_ctis"),
        (
            _union(a={"path": "a/", "import_ctis": "b"}, b={"path": "b/", "import_ctis": "a"}),
            "inputs.a.import_ctis",
        ),
        (
            _union(
                a={"path": "a/", "over": "d", "import_ctis": "b"}, b={"path": "b/", "over": "d"}
            ),
            "inputs.a.import_ctis",
        ),
        ({"inputs": {"a": "a/"}}, "inputs.a"),
        ({"inputs": {"a b": {"path": "a/"}}}, "inputs"),
        ({"source": {"path": "x"}, "inputs": {"a": {"path": "a/"}}}, "inputs"),
        (
            {
                "inputs": {
                    "a": {"path": "a/", "partition": "p"},
                    "b": {"path": "b/", "partition": "q"},
                },
                "ordering": {"partitioned": True},
                "window": {"type": "tumbling", "size": "1m", "group_by": ["p"]},
            },
            "inputs.b.partition",
        ),
    ],
)
def test_union_errors_name_the_key(tmp_path, data, key):
    with pytest.raises(ConfigError) as info:
        Job.from_dict(data, base_dir=tmp_path)
    assert info.value.key == key, info.value


def _join(**join: object) -> dict:
    return {
        "inputs": {
            "entry": {"path": "e/", "timestamp_by": "t"},
            "exit": {"path": "x/", "timestamp_by": "t"},
        },
        "join": {"left": "entry", "right": "exit", "on": ["plate"], **join},
    }


def test_a_join_loads(tmp_path):
    job = Job.from_dict(_join(between=["-1m", "15m"]), base_dir=tmp_path)
    assert job.join == Join("entry", "exit", ("plate",), (-MINUTE, 15 * MINUTE))


@pytest.mark.parametrize(
    ("changes", "key"),
    [
        ({"between": [0, 15]}, "join.between"),
        ({"between": ["15m", "0s"]}, "join.between"),
        ({"between": ["0s"]}, "join.between"),
        ({"between": ["0s", "soon"]}, "join.between"),
        ({"on": []}, "join.on"),
        ({"on": "plate"}, "join.on"),
        ({"right": "entry"}, "join.right"),
        ({"right": "other"}, "join"),
        ({"colour": 1}, "join.colour"),
    ],
)
def test_join_errors_name_the_key(tmp_path, changes, key):
    with pytest.raises(ConfigError) as info:
        Job.from_dict(_join(**{"between": ["0s", "1m"], **changes}), base_dir=tmp_path)
    assert info.value.key == key, info.value


@pytest.mark.parametrize(
    ("extra", "key"),
    [
        (  # (a window over the matches closes by the job watermark alone: §7.11)
            {"window": {"type": "tumbling", "size": "1m", "idle_timeout": "1m"}},
            "window.idle_timeout",
        ),
        ({"ordering": {"on_out_of_order": "accept"}}, "ordering.on_out_of_order"),
        ({"ordering": {"partitioned": True}}, "join"),
    ],
)
def test_join_refuses_what_it_cannot_do_yet(tmp_path, extra, key):
    with pytest.raises(ConfigError) as info:
        Job.from_dict({**_join(between=["0s", "1m"]), **extra}, base_dir=tmp_path)
    assert info.value.key == key, info.value


def test_window_over_a_join_reads_each_match(tmp_path):
    """A window over a join of two streams (semantics §7.11) reads the matches' fields
    as input.field, and an input's record whole by its name."""
    window = {
        "type": "tumbling",
        "size": "1m",
        "group_by": [{"plate": "entry.plate"}],
        "aggregates": {
            "n": "count(*)",
            "s": "sum(exit.toll)",
            "last": "last(exit)",
            "latest": "max(System.Timestamp())",  # (each match's time, §6.12)
        },
    }
    job = Job.from_dict({**_join(between=["0s", "1m"]), "window": window}, base_dir=tmp_path)
    assert job.windows_matches and not job.looks_up_in_window


def test_window_over_a_join_groups_by_no_system_timestamp(tmp_path):
    window = {
        "type": "tumbling",
        "size": "1m",
        "group_by": [{"m": "DATEPART(minute, System.Timestamp())"}],
        "aggregates": {"n": "count(*)"},
    }
    with pytest.raises(ConfigError) as info:
        Job.from_dict({**_join(between=["0s", "1m"]), "window": window}, base_dir=tmp_path)
    assert info.value.key == "window.group_by.m"
    assert "System.Timestamp() is an event's timestamp" in str(info.value)


@pytest.mark.parametrize(
    ("aggregate", "message"),
    [
        ("sum(toll)", "'toll' over a join: a window reads each match"),
        ("sum(other.toll)", "'other' is not an input of the join"),
        ("max(toll)", "'toll' over a join: a window reads each match"),
        ("collect()", "collect() of whole records over a join's matches"),
    ],
)
def test_window_over_a_join_refuses_what_no_match_has(tmp_path, aggregate, message):
    window = {"type": "tumbling", "size": "1m", "aggregates": {"a": aggregate}}
    with pytest.raises(ConfigError) as info:
        Job.from_dict({**_join(between=["0s", "1m"]), "window": window}, base_dir=tmp_path)
    assert info.value.key == "window.aggregates.a" and message in str(info.value)


def test_input_fields_in_a_window_need_a_join_of_two_streams(tmp_path):
    job = {
        "source": {"path": str(tmp_path), "timestamp_by": "t"},
        "window": {"type": "tumbling", "size": "1m", "aggregates": {"a": "sum(value.x)"}},
        "output": {"path": str(tmp_path / "out")},
    }
    with pytest.raises(ConfigError) as info:
        Job.from_dict(job, base_dir=tmp_path)
    assert info.value.key == "window.aggregates.a"
    assert "'value.x' names a field of a join's input" in str(info.value)


def test_select_over_a_join_reads_qualified_fields_and_the_timestamp(tmp_path):
    select = {
        "plate": "entry.plate",
        "minutes": "DATEDIFF(minute, entry.t, exit.t)",
        "at": "timestamp",
        "late": "datediff(s, [entry].[t], timestamp) > 60",
    }
    job = Job.from_dict({**_join(between=["0s", "1m"]), "select": select}, base_dir=tmp_path)
    assert [p.name for p in job.select] == ["plate", "minutes", "at", "late"]
    assert references(job.select[3].parsed) == ["entry.t", "timestamp"]


@pytest.mark.parametrize(
    ("select", "key", "message"),
    [
        # unqualified fields are refused: no field is known to be unambiguous
        (
            {"p": "plate"},
            "select.p",
            "'plate' over a join: qualify it with its input (entry.plate or exit.plate)",
        ),
        ({"d": "DATEDIFF(minute, t, exit.t)"}, "select.d", "'t' over a join: qualify"),
        (
            {"p": "Entry.plate"},
            "select.p",
            "'Entry' is not an input of the join (entry or exit; names are case-sensitive)",
        ),
        ({"p": "other.plate + 1"}, "select.p", "'other' is not an input of the join"),
        ({"type": "entry.t"}, "select.type", "'type' is a name sparktide"),
        (
            {"d": "DATEDIFF(fortnight, entry.t, exit.t)"},
            "select.d",
            "DATEDIFF(fortnight, ...): the date part is year (yy, yyyy), quarter (qq, q), month "
            "(mm, m), dayofyear (dy, y), week (wk, ww), weekday (dw, w), day (dd, d), hour (hh), "
            "minute (mi, n), second (ss, s), millisecond (ms) or microsecond (mcs)",
        ),
        ({"d": "uppr(entry.plate)"}, "select.d", "unknown function uppr(...)"),
        (
            {"d": "entry.plate.x"},
            "select.d",
            "column 12: unexpected '.': a name is a column or input.column",
        ),
    ],
)
def test_select_over_a_join_errors_name_the_key(tmp_path, select, key, message):
    with pytest.raises(ConfigError) as info:
        Job.from_dict({**_join(between=["0s", "1m"]), "select": select}, base_dir=tmp_path)
    assert info.value.key == key, info.value
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("changes", "key"),
    [
        ({"filter.where": "x.speed > 1"}, "filter.where"),
        ({"window.having": "x.n > 1"}, "window.having"),
        ({"select": {"m": "x.total / n"}}, "select.m"),
        ({"window": DELETE, "select": {"v": "x.value"}}, "select.v"),
    ],
)
def test_qualified_names_outside_a_join_are_refused(changes, key):
    with pytest.raises(ConfigError) as info:
        Job.from_dict(mutate(BASE_JOB, changes))
    assert info.value.key == key, info.value
    assert "'x." in str(info.value)


def test_a_join_filters_each_inputs_events_by_plain_names(tmp_path):
    data = {**_join(between=["0s", "1m"]), "filter": {"where": "plate <> 'X'"}}
    assert Job.from_dict(data, base_dir=tmp_path).filter is not None
    data["filter"] = {"where": "entry.plate <> 'X'"}
    with pytest.raises(ConfigError, match=r"^filter\.where: 'entry\.plate': the filter reads "):
        Job.from_dict(data, base_dir=tmp_path)


def test_filter_having_and_select_load_and_build_the_same_job(tmp_path):
    from sparktide.job import Filter, Projection

    data = mutate(
        BASE_JOB,
        {
            "filter.where": "speed > 50 AND [lane] = 'A'",
            "window.having": "n > 1",
            "select": {"device": "device", "mean": "total / n", "end": "window_end"},
        },
    )
    job = Job.from_dict(data)
    assert job.filter == Filter("speed > 50 AND [lane] = 'A'")
    assert job.window.having == "n > 1"
    assert job.select == (
        Projection("device", "device"),
        Projection("mean", "total / n"),
        Projection("end", "window_end"),
    )
    assert dataclasses.replace(job) == job
    # without a window, [select] reads the record's fields; 'timestamp' is sparktide's
    data = mutate(BASE_JOB, {"window": DELETE, "select": {"v2": "value * 2", "id": "id"}})
    assert [p.name for p in Job.from_dict(data).select] == ["v2", "id"]
    with pytest.raises(ConfigError, match=r"^select\.type: 'type' is a name"):
        Job.from_dict(mutate(data, {"select.type": "t"}))


def test_python_api_validates_expressions():
    from sparktide.job import Filter, Projection

    with pytest.raises(ConfigError, match=r"^filter\.where: column 7: unexpected"):
        Filter("speed speed")
    with pytest.raises(ConfigError, match=r"^select\.x: "):
        Projection("x", "a +")
    with pytest.raises(ConfigError, match=r"^window\.having: 'v' is not a column"):
        Window(type="snapshot", aggregates=(Aggregate.parse("n", "count(*)"),), having="v > 1")
    with pytest.raises(ConfigError, match=r"^select: expected Projection objects"):
        Job(Source(path="p"), select=("a",))
    with pytest.raises(ConfigError, match=r"^select\.a: is named twice"):
        Job(Source(path="p"), select=(Projection("a", "x"), Projection("a", "y")))


# ---------------------------------------------------------------- reference data (a lookup)
def _lookup(**changes):
    data = {
        "inputs": {
            "readings": {"path": "r/", "timestamp_by": "t"},
            "devices": {"path": "devices.csv", "format": "csv", "reference": True},
        },
        "join": {"left": "readings", "right": "devices", "on": ["device"]},
    }
    for key, value in changes.items():
        if "__" not in key:  # a whole table
            data[key] = value
            continue
        table, _, name = key.partition("__")  # an input's key, or a key of [join]
        target = data["inputs"][table] if table in data["inputs"] else data[table]
        target[name] = value
    return data


def test_reference_data_loads_apart_from_the_streams(tmp_path):
    job = Job.from_dict(_lookup(join__type="left"), base_dir=tmp_path)
    assert [name for name, _ in job.inputs] == ["readings"]
    ((name, table),) = job.references
    assert name == "devices" and table == Reference(str(tmp_path / "devices.csv"), "csv")
    assert job.join == Join("readings", "devices", ("device",), None, "left")
    assert job.declared_partitions == []  # the table is no timeline


@pytest.mark.parametrize(
    ("changes", "key"),
    [
        ({"devices__timestamp_by": "t"}, "inputs.devices.timestamp_by"),
        ({"devices__partition": "p"}, "inputs.devices.partition"),
        ({"devices__format": "xml"}, "inputs.devices.format"),
        ({"devices__reference": "yes"}, "inputs.devices.reference"),
        ({"join__between": ["0s", "1m"]}, "join.between"),
        ({"join__type": "outer"}, "join.type"),
        ({"join__right": "readings"}, "join.right"),
        ({"join__left": "devices", "join__right": "readings"}, "join"),
        # (a window over the join reads each match in [filter]: semantics §11.23)
        ({"window": {"type": "tumbling", "size": "1m"}, "join__where": "v > 1"}, "join.where"),
        ({"readings__end_time": "e"}, "join"),
    ],
)
def test_reference_data_errors_name_the_key(tmp_path, changes, key):
    with pytest.raises(ConfigError) as info:
        Job.from_dict(_lookup(**changes), base_dir=tmp_path)
    assert info.value.key == key, info.value


def test_a_window_over_a_join_with_reference_data_expands_its_events(tmp_path):
    window = {"type": "tumbling", "size": "1m", "group_by": [{"m": "devices.model"}]}
    with pytest.raises(ConfigError, match=r"GetRecordPropertyValue\(devices, 'model'\)"):
        Job.from_dict(_lookup(window=window), base_dir=tmp_path)
    window["group_by"] = [{"m": "GetRecordPropertyValue(devices, 'model')"}]
    job = Job.from_dict(_lookup(window=window), base_dir=tmp_path)
    assert job.looks_up_in_window and job.expands_events
    released = Job.from_dict(_lookup(), base_dir=tmp_path)
    assert not released.looks_up_in_window and not released.expands_events


def test_reference_data_needs_a_join_and_a_stream(tmp_path):
    data = _lookup()
    del data["join"]
    with pytest.raises(ConfigError) as info:
        Job.from_dict(data, base_dir=tmp_path)
    assert info.value.key == "inputs.devices.reference"
    data = _lookup()
    del data["inputs"]["readings"]
    with pytest.raises(ConfigError) as info:
        Job.from_dict(data, base_dir=tmp_path)
    assert info.value.key == "inputs"


def test_a_join_of_two_streams_needs_between_and_may_be_left(tmp_path):
    with pytest.raises(ConfigError) as info:
        Job.from_dict(_join(), base_dir=tmp_path)
    assert info.value.key == "join.between", info.value
    job = Job.from_dict(_join(between=["-1m", "1m"], type="left"), base_dir=tmp_path)
    assert job.join is not None and job.join.type == "left"  # (semantics §7.9)
    with pytest.raises(ConfigError, match=r"^join\.between: a left join .* 0 or more"):
        Job.from_dict(_join(between=["-1m", "-1s"], type="left"), base_dir=tmp_path)


def test_time_unit_names_the_unit_of_epoch_numbers(tmp_path):
    """``source.time_unit``: s, ms, us or ns (a typed stream's epoch-number times)."""
    job = Job.from_dict({"source": {"path": "in", "time_unit": "ms"}}, base_dir=tmp_path)
    assert job.source.time_unit == "ms"
    with pytest.raises(ConfigError) as error:
        Job.from_dict({"source": {"path": "in", "time_unit": "min"}}, base_dir=tmp_path)
    assert error.value.key == "source.time_unit"


def test_time_unit_reads_epoch_integers_in_files(tmp_path):
    """``time_unit`` over files (semantics §1.4): an integer time column is that many
    units since 1970 (nanoseconds floor to the microsecond); ISO text still reads as a
    time; a float, or an integer beyond years 1-9999, is a malformed record naming why."""
    from sparktide.reader import job_records

    (tmp_path / "in").mkdir()
    lines = [
        '{"id": 1, "t": 1772355600000}',
        '{"id": 2, "t": "2026-03-01T09:00:01Z"}',
        '{"id": 3, "t": 1772355602000.5}',
        '{"id": 4, "t": 999999999999999999}',
        '{"id": 5, "t": -62135596800001}',
    ]
    (tmp_path / "in" / "a.jsonl").write_text("\n".join(lines) + "\n")
    job = Job.from_dict(
        {"source": {"path": "in", "timestamp_by": "t", "time_unit": "ms"}}, base_dir=tmp_path
    )
    records = job_records(job)
    assert [r.event_time for r in records[:2]] == [
        parse_instant("2026-03-01T09:00:00Z"),
        parse_instant("2026-03-01T09:00:01Z"),
    ]
    assert records[0].fields == {"id": 1, "t": 1772355600000}  # (the record as written)
    assert [r.error for r in records[2:]] == [
        "column 't': expected an ISO-8601 time string or an integer of ms since 1970",
        "column 't': 999999999999999999 (ms since 1970) is no instant of years 1-9999",
        "column 't': -62135596800001 (ms since 1970) is no instant of years 1-9999",
    ]
    nanos = Job.from_dict(
        {"source": {"path": "in", "timestamp_by": "t", "time_unit": "ns"}}, base_dir=tmp_path
    )
    (tmp_path / "in" / "a.jsonl").write_text('{"t": 1772355600000001999}\n')
    assert job_records(nanos)[0].event_time == parse_instant("2026-03-01T09:00:00.000001Z")


def test_ordered_aggregates_load_and_name_their_numeric_columns(tmp_path):
    aggregates = {
        "fastest": "topone() over (order by speed desc, lane)",
        "top2": "collecttop(2, plate) over (order by speed desc)",
        "p95": "percentile_cont(0.95) over (order by delay)",
        "sd": "STDEV(weight)",
        "mean": "avg(value)",
    }
    job = load_job(write_job(tmp_path, mutate(BASE_JOB, {"window.aggregates": aggregates})))
    by_name = {a.name: a for a in job.window.aggregates}
    assert by_name["fastest"].whole_record and by_name["fastest"].order_by == (
        ("speed", True),
        ("lane", False),
    )
    assert (by_name["top2"].argument, by_name["top2"].column) == (2, "plate")
    assert by_name["p95"].argument == 0.95 and by_name["p95"].value_column == "delay"
    # stdev's and a percentile's columns hold numbers, as sum's and avg's (semantics §8.2)
    assert job.numeric_columns == frozenset({"delay", "weight", "value"})


def test_select_star_puts_the_records_fields_where_it_stands() -> None:
    """``"*" = "*"`` in ``[select]``: ``SELECT *, expr AS c`` (semantics §11.16)."""
    base = {"source": {"path": "in", "timestamp_by": "t"}, "output": {"path": "out"}}
    job = Job.from_dict({**base, "select": {"a": "v + 1", "*": "*", "b": "v * 2"}})
    assert [p.name for p in job.select] == ["a", "b"] and job.select_star == 1
    with pytest.raises(ConfigError, match=r'select\."\*": stands for the record'):
        Job.from_dict({**base, "select": {"*": "v", "b": "v"}})
    with pytest.raises(ConfigError, match=r'select\."\*": "\*" stands for'):
        Job.from_dict({**base, "select": {"*": 3, "b": "v"}})
    with pytest.raises(ConfigError, match="no other column is no"):
        Job.from_dict({**base, "select": {"*": "*"}})
    window = {"type": "tumbling", "size": "1m", "aggregates": {"n": "count(*)"}}
    with pytest.raises(ConfigError, match="without \\[window\\]"):
        Job.from_dict({**base, "window": window, "select": {"*": "*", "n": "n"}})


def test_select_star_in_a_join_names_the_input_whose_fields_it_writes(tmp_path) -> None:
    """``"*" = "<input>"`` in a join's ``[select]``: ``SELECT s.*, r.Model`` (semantics
    §11.16), also alone; ``"*" = "*"`` or another name is refused, naming the inputs."""
    data = {**_join(between=["0s", "1m"]), "output": {"path": "out"}}
    job = Job.from_dict({**data, "select": {"*": "exit", "at": "entry.t"}}, base_dir=tmp_path)
    assert (job.select_star, job.select_star_input, [p.name for p in job.select]) == (
        0,
        "exit",
        ["at"],
    )
    alone = Job.from_dict({**data, "select": {"*": "entry"}}, base_dir=tmp_path)
    assert (alone.select, alone.select_star, alone.select_star_input) == ((), 0, "entry")
    for star in ("*", "devices"):
        with pytest.raises(ConfigError, match="names the input whose fields it writes") as info:
            Job.from_dict({**data, "select": {"*": star, "at": "entry.t"}}, base_dir=tmp_path)
        assert info.value.key == 'select."*"' and "entry or exit" in str(info.value)


def test_count_if_counts_a_condition_or_a_columns_true_values() -> None:
    """``count_if(condition)`` (semantics §6.12): a column is a condition too."""
    of_column = Aggregate.parse("f", "count_if(flag)")
    assert (of_column.column, of_column.expression, str(of_column)) == (
        None,
        "flag",
        "count_if(flag)",
    )
    assert Aggregate.parse("f", str(of_column)) == of_column
    assert Aggregate.parse("c", "count_if(v > 1)").expression == "v > 1"
    for text in ("count_if(*)", "count_if()"):
        with pytest.raises(ConfigError, match=r"window\.aggregates\.c"):
            Aggregate.parse("c", text)


@pytest.mark.parametrize(
    ("condition", "message"),
    [
        ("v > 1", "'v' over a join: qualify it with its input"),
        ("c.v > 1", "'c' is not an input of the join"),
        ("System.Timestamp() > a.t", "the match's time is timestamp"),
        ("a.v >", "join.condition"),
    ],
)
def test_a_join_condition_reads_both_inputs_fields(condition, message):
    """``[join] condition``: the rest of Stream Analytics' ``ON`` (semantics §11.8)."""
    with pytest.raises(ConfigError) as info:
        Join("a", "b", on=["k"], between=["0s", "1m"], condition=condition)
    assert info.value.key == "join.condition"
    assert message in str(info.value)
    join = Join("a", "b", on=["k"], between=["0s", "1m"], condition="a.v > b.w * 2")
    assert join.condition_expression is not None
    # the match's own time, as [select] over a join reads it (a WHERE over the JOIN)
    join = Join("a", "b", on=["k"], between=["0s", "1m"], condition="DATEPART(hour, timestamp) < 9")
    assert join.condition_expression is not None


def test_join_on_pairs_columns_of_other_names() -> None:
    """``[join] on`` entries: a column both sides hold, or ``[left, right]`` (semantics
    §11.8); a pair of one name is that name; anything else names the key."""
    from sparktide.job import Join

    join = Join(left="a", right="b", on=["k", ["DeviceId", "Id"], ["m", "m"]])
    assert join.on == ("k", ("DeviceId", "Id"), "m")
    assert (join.left_on, join.right_on) == (("k", "DeviceId", "m"), ("k", "Id", "m"))
    assert join.on_of("a") == join.left_on and join.on_of("b") == join.right_on
    for bad in (["k", ["a", "b", "c"]], [["a", "b c"]], [3]):
        with pytest.raises(ConfigError, match=r"^join\.on"):
            Join(left="a", right="b", on=bad)
