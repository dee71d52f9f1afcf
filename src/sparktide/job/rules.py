"""The rules that tie a job's tables together, checked when a :class:`~sparktide.job.Job`
is built: unions, joins, punctuation, ``[select]`` and the timelines windows follow.

Each check raises a :class:`~sparktide.errors.ConfigError` naming the key to change.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sparktide.errors import ConfigError
from sparktide.expr import EVENT_INPUT, SYSTEM_TIMESTAMP, Ref, ref_nodes
from sparktide.job.expressions import (
    Filter,
    Projection,
    check_join_references,
    check_match_references,
    check_references,
    input_field_refused,
    no_input_fields,
)
from sparktide.job.join import Join
from sparktide.job.lookups import check_lookup, check_stream_tables, check_window_table
from sparktide.job.tuplekey import groups_by_key, key_label
from sparktide.job.values import (
    COLUMN_NAME,
    RESERVED_EVENT_COLUMNS,
    RESERVED_WINDOW_COLUMNS,
    claim_name,
    set_field,
)
from sparktide.job.window import GRID_WINDOWS

if TYPE_CHECKING:
    from sparktide.job.model import Job

__all__ = [
    "check_event_input",
    "check_inputs",
    "check_join",
    "check_punctuation",
    "check_select",
    "check_timelines",
]


def check_inputs(job: Job) -> None:
    """A union of named inputs (semantics §7): ``source`` is the first; the columns that
    make timelines, and whether events carry their own times and ends, agree."""
    if not job.inputs:
        return
    set_field(job, "inputs", tuple((name, source) for name, source in job.inputs))
    names = [name for name, _ in job.inputs]
    for name in names:
        if not isinstance(name, str) or not COLUMN_NAME.match(name):
            raise ConfigError(
                "inputs", f"an input name must be letters, digits, '_' or '-'; got {name!r}"
            )
    if len(set(names)) != len(names):
        raise ConfigError("inputs", "names an input twice")
    for name, source in job.inputs:
        if source.spark_stream:
            raise ConfigError(
                f"inputs.{name}.format", "a union's inputs are files (jsonl, csv or parquet)"
            )
        if source.path is None:  # (a union reads its inputs' files)
            raise ConfigError(f"inputs.{name}.path", "is required")
        exporter = source.import_ctis
        if exporter is None:
            continue
        key = f"inputs.{name}.import_ctis"
        if exporter not in names or exporter == name:
            raise ConfigError(key, f"must name another input of the union, got {exporter!r}")
        if dict(job.inputs)[exporter].import_ctis is not None:
            raise ConfigError(key, f"{exporter!r} imports its CTIs itself: import from its source")
        if source.over is not None:
            raise ConfigError(
                key, "substreams follow their own keys' watermarks: nothing to import into"
            )
    first_name, first = job.inputs[0]
    if job.source != first:
        raise ConfigError("inputs", "source must be the first input of a union")
    for name, source in job.inputs[1:]:
        for key in ("over", "end_time", "duration"):
            if getattr(source, key) != getattr(first, key):
                raise ConfigError(
                    f"inputs.{name}.{key}",
                    f"must be the same in every input of a union ({key} = "
                    f"{getattr(first, key)!r} in inputs.{first_name})",
                )
        if (source.edge is None) != (first.edge is None):
            raise ConfigError(
                f"inputs.{name}.edge",
                "every input of a union has edge events (source.edge), or none has",
            )
        if (source.timestamp_by is None) != (first.timestamp_by is None):
            raise ConfigError(
                f"inputs.{name}.timestamp_by",
                "every input of a union has a timestamp_by, or none has (arrival-time mode)",
            )
        if job.ordering.partitioned and source.partition != first.partition:
            raise ConfigError(
                f"inputs.{name}.partition",
                "must be the same column in every input when ordering.partitioned = true "
                "(the windows group by it)",
            )


def check_join(job: Job) -> None:
    """``[join]`` and reference data: two streams within ``between``, or a stream and a
    table (:func:`_check_lookup`); reference data is always joined."""
    join = job.join
    set_field(job, "references", tuple((name, ref) for name, ref in job.references))
    _check_window_fields(job)
    if job.window_meets_table:  # (a window's records meet reference data, §13.5)
        return check_window_table(job)
    named = job.window.name if job.window is not None else None
    if named is not None and (join is None or join.right != named or job.references_joined):
        raise ConfigError(
            "window.name",
            f"names the window's records as the right input of a [join] of two streams "
            f'(join.right = "{named}"): the job has '
            + ("no [join]" if join is None else f"join.right = {join.right!r}"),
        )
    if join is None:
        if job.references:
            name = job.references[0][0]
            raise ConfigError(
                f"inputs.{name}.reference",
                "reference data is joined to the stream: the job needs a [join] with "
                f'right = "{name}"',
            )
        return
    if job.references and (join.right in dict(job.references) or join.left in dict(job.references)):
        check_lookup(job, join)
        return
    if job.references or join.then:  # (a join of two streams meets tables: §11.26)
        check_stream_tables(job, join)
    if join.where is not None and join.type != "left" and not join.then:
        raise ConfigError(
            "join.where",
            "filters what a left join writes; over an inner join of two streams write the "
            "condition in join.condition (a pair that fails it is no match)",
        )
    if join.between is None:
        raise ConfigError(
            "join.between",
            'is required for a join of two streams, e.g. ["0s", "15m"] (only a join with '
            "reference data has no time bounds)",
        )
    if join.type == "left" and int(join.between[1]) < 0:
        raise ConfigError(
            "join.between",
            "a left join writes a left event no match reached at its timestamp plus the "
            "high end of between, which must be 0 or more (the low end may be negative: "
            "a right event before the left one matches too)",
        )
    if job.joins_windows:
        _check_window_join(job, join)
    else:
        _check_two_inputs(job, join)
    if job.window is not None and job.window.idle_timeout is not None:
        raise ConfigError(
            "window.idle_timeout",
            "a window over a join's matches closes as the join releases them, by the job "
            "watermark (semantics §7.11): a forced close could leave a later match without "
            "its window; remove idle_timeout (a silent input still advances by its idle "
            "estimate, §4.3)",
        )
    if job.source.over is not None or job.ordering.partitioned:
        raise ConfigError(
            "join", "a join follows the merged watermark of both inputs: no over or partitioned"
        )
    if job.ordering.out_of_order_action == "accept":
        raise ConfigError(
            "ordering.on_out_of_order",
            "'accept' would let an event come below a watermark, so a join could never "
            "forget an event; use adjust, drop or dead_letter",
        )
    if job.source.intervals:
        raise ConfigError(
            "join", "joins point events (no source.end_time or source.duration) for now"
        )


def _check_two_inputs(job: Job, join: Join) -> None:
    """A join of two streams: exactly its two inputs, and columns to join on."""
    names = [name for name, _ in job.inputs]
    if len(names) != 2 or set(names) != {join.left, join.right}:
        raise ConfigError(
            "join",
            f"joins two inputs: the job must have exactly [inputs.{join.left}] and "
            f"[inputs.{join.right}], got {names or 'a [source]'}",
        )
    if not join.on:
        raise ConfigError(
            "join.on", "must name at least one column both inputs hold (or a [left, right] pair)"
        )


def _check_window_join(job: Job, join: Join) -> None:
    """A join of an input with the window's records (semantics §7.12): ``left`` an
    input, the window over the others' events; ``on`` may be empty (the rest of the
    ``ON`` is ``condition``)."""
    names = [name for name, _ in job.inputs]
    window = job.window
    assert window is not None
    if join.right in names:
        raise ConfigError("window.name", f"{join.right!r} names an input: name the window apart")
    if join.left not in names or len(names) < 2:
        raise ConfigError(
            "join.left",
            f"a join with the window's records reads one input ({join.left!r}) and the "
            f"window reads the others' events: the job must have [inputs.{join.left}] and "
            f"at least one more input, got {names or 'a [source]'}",
        )
    if window.idle_timeout is not None:
        raise ConfigError(
            "window.idle_timeout",
            "the window's records are joined as the job watermark closes them (semantics "
            "§7.12): remove idle_timeout",
        )


def _check_window_fields(job: Job) -> None:
    """A window's expressions read ``input.field`` over a join of two streams only (each
    match, semantics §7.11), and there only those of its two inputs."""
    if job.window is None:
        return
    join = job.join if job.windows_matches else None
    if join is not None:  # (plain columns: a match has none but its inputs' records)
        plain = [("window.group_by", name) for name in job.window.record_group_columns]
        plain += [
            (f"window.aggregates.{a.name}", c) for a in job.window.aggregates for c in a.columns
        ]
        tables = join.stream_tables  # (those each match meets, §11.26)
        for key, column in plain:
            check_match_references(Ref(column), join, key, tables=tables)
        whole = next((a for a in job.window.aggregates if a.whole_record), None)
        if whole is not None:
            raise ConfigError(
                f"window.aggregates.{whole.name}",
                f"{whole.function}() of whole records over a join's matches: name the "
                f"input whose records it takes ({whole.function}({join.left}) or "
                f"{whole.function}({join.right}))",
            )
    for key, expr in job.window.keyed_expressions():
        if join is not None:
            timed = key.startswith("window.aggregates.")
            check_match_references(expr, join, key, timed, join.stream_tables)
            continue
        qualified = next(
            (
                ref
                for ref in ref_nodes(expr)
                if ref.input is not None and ref not in (EVENT_INPUT, SYSTEM_TIMESTAMP)
            ),
            None,
        )
        if qualified is not None:
            raise input_field_refused(qualified, key)


def check_input_filters(job: Job) -> None:
    """An input's ``where`` (semantics §11.20): ``[source] where`` of a one-input job runs
    before its analytic columns or ``[match]`` (``[filter]`` after), so it needs one."""
    if job.source.where is not None and not job.inputs and not job.analytics and not job.match:
        raise ConfigError(
            "source.where",
            "filters the events before [analytic.*] columns or [match] see them; without "
            "those, filter a job's events with [filter]",
        )


def check_event_input(job: Job) -> None:
    """``System.Input()`` (semantics §11.22): the event's input, read in a union of
    inputs without a join, by a window's grouping columns and aggregates, ``[filter]``,
    the analytic columns' expressions, ``[apply] value`` and, when the union releases
    its events (no window), ``[select]`` (with ``[apply]``, each expanded row's input is
    its event's)."""
    keyed = [] if job.window is None else job.window.keyed_expressions()
    keyed += [item for a in job.analytics for item in a.keyed_expressions()]
    if job.apply is not None:
        keyed.append(("apply.value", job.apply.expression))
    if job.filter is not None:
        keyed.append(("filter.where", job.filter.expression))
    if job.window is None and job.join is None:
        keyed += [(f"select.{p.name}", p.parsed) for p in job.select if not p.by_input]
    for key, expr in keyed:
        if EVENT_INPUT not in ref_nodes(expr):
            continue
        if not job.inputs or job.join is not None:
            raise ConfigError(
                key,
                "System.Input() is the union input an event comes from: the job has "
                f"{'a join' if job.join is not None else 'one input'}, not a union",
            )


def check_punctuation(job: Job) -> None:
    """``[punctuation]``, ``import_ctis``, and the event kinds (intervals, edges) each
    kind of window takes."""
    punctuation, source, window = job.punctuation, job.source, job.window
    if source.import_ctis is not None and not job.inputs:
        raise ConfigError("source.import_ctis", "imports from another input of a union")
    if punctuation is not None:
        if source.timestamp_by is None:
            raise ConfigError(
                "punctuation",
                "needs source.timestamp_by: CTIs are promises about event times",
            )
        if punctuation.column is not None and punctuation.column in (
            source.timestamp_by,
            source.arrival_time,
            source.partition,
            source.over,
            source.end_time,
            source.edge_id,
        ):
            raise ConfigError(
                "punctuation.column",
                f"{punctuation.column!r} is a column the source already reads for time, "
                "partition or key; name the column that marks CTI rows",
            )
    if source.edge is not None and (window is None or window.type not in GRID_WINDOWS):
        raise ConfigError(
            "window.type" if window is not None else "source.edge",
            "edge events go into tumbling or hopping windows (every window they overlap, "
            "counted while they are open); "
            + (
                f"{window.type} windows are for point events"
                if window is not None
                else "without a [window] there is nothing to release an open event into"
            ),
        )
    if source.intervals and window is not None:
        if window.type not in ("tumbling", "hopping"):
            raise ConfigError(
                "window.type",
                f"interval events (source.end_time, source.duration) go into tumbling or "
                f"hopping windows "
                f"(every window they overlap); {window.type} windows are for point events",
            )


def check_select(job: Job) -> None:
    """``[filter]`` and ``[select]``: each output column named once, none that sparktide
    writes itself, reading the window's result, a join's match or the record's fields."""
    if job.filter is not None and not isinstance(job.filter, Filter):
        raise ConfigError("filter", f"expected a Filter, got {job.filter!r}")
    if isinstance(job.select, (str, dict)) or not isinstance(job.select, (list, tuple)):
        raise ConfigError("select", f"must be a list of Projection objects, got {job.select!r}")
    set_field(job, "select", tuple(job.select))
    seen: set[str] = set()
    windowed = job.window is not None and not job.joins_windows  # (those write matches)
    reserved = RESERVED_WINDOW_COLUMNS if windowed else RESERVED_EVENT_COLUMNS
    for projection in job.select:
        if not isinstance(projection, Projection):
            raise ConfigError("select", f"expected Projection objects, got {projection!r}")
        key = f"select.{projection.name}"
        claim_name(projection.name, key, seen, reserved, twice="is named twice")
        if projection.by_input:
            _check_by_input(job, projection, key)
        if job.window_meets_table:  # (check_window_table reads it)
            continue
        if job.join is not None and (job.window is None or job.joins_windows):
            tables = job.join.stream_tables if not job.references_joined else ()
            check_join_references(projection.parsed, job.join, key, tables)
            continue
        if job.match is not None:  # (it reads the measures: job.match.check_match)
            continue
        for name, expr in projection.expressions():  # (each input's own, §11.21)
            own = key if name is None else f"{key}.{name}"
            events = job.window is None  # (System.Input(): check_event_input)
            no_input_fields(expr, own, system_time=events, event_input=events and name is None)
        if job.window is not None:
            check_references(projection.parsed, job.window.result_columns, key)
    _check_star(job)


def _check_by_input(job: Job, projection: Projection, key: str) -> None:
    """A column with one expression per input (semantics §11.21): in a union that
    releases its events (no window or join; with ``[apply]``, its expanded rows), one
    for each of its inputs."""
    if not job.inputs or job.join is not None or job.window is not None:
        raise ConfigError(
            key,
            "one expression per input is for a union of inputs ([inputs.<name>]) without "
            "a window or a join: give one expression",
        )
    names = [name for name, _ in job.inputs]
    for name, _ in projection.by_input:
        if name not in names:
            raise ConfigError(
                f"{key}.{name}", f"names no input of the union (its inputs: {', '.join(names)})"
            )
    missing = [name for name in names if name not in dict(projection.by_input)]
    if missing:
        raise ConfigError(key, f"has no expression for the input {', '.join(missing)}")


def _check_star(job: Job) -> None:
    """``"*" = "*"`` in ``[select]``: the record's fields beside computed columns, in a
    job whose records are events (no window, no join); in a join ``"*" = "<input>"``:
    that input's fields beside the columns over the matches."""
    star = job.select_star
    if star is None:
        return
    key = 'select."*"'
    if isinstance(star, bool) or not isinstance(star, int) or not 0 <= star <= len(job.select):
        raise ConfigError(key, f"must be a position in [select], got {star!r}")
    if job.window is not None:
        raise ConfigError(
            key,
            "the record's fields are written beside [select]'s columns in a job without "
            "[window] (a window writes its own records)",
        )
    own = job.select_star_input
    if job.join is not None:
        sides = (job.join.left, job.join.right)
        if own not in sides:
            raise ConfigError(
                key,
                f"in a join names the input whose fields it writes ({' or '.join(sides)}), "
                f"got {own or '*'!r}",
            )
    elif own is not None:
        raise ConfigError(key, f'stands for the record\'s fields: write "*" = "*" (got {own!r})')
    if not job.select and job.join is None:  # (a join's "*" alone: one input's fields)
        raise ConfigError(key, "with no other column is no [select]: leave [select] out")


def check_timelines(job: Job) -> None:
    """``ordering.partitioned`` and substreams (``source.over``): the column that makes
    the timelines, and windows that group by it."""
    if job.ordering.partitioned and job.source.partition is None:
        raise ConfigError(
            "ordering.partitioned",
            "needs source.partition (the column that names each event's partition)",
        )
    if job.ordering.partitioned and job.source.over is not None:
        raise ConfigError(
            "ordering.partitioned",
            "cannot be combined with source.over: substreams already follow their own watermarks",
        )
    if (
        job.window is not None
        and job.ordering.partitioned
        and job.source.partition not in job.window.record_group_columns
    ):
        raise ConfigError(
            "window.group_by",
            f"must include the partition column {job.source.partition!r} when "
            "ordering.partitioned = true: each partition's windows follow its own watermark",
        )
    if job.window is not None and job.source.over is not None:
        if not groups_by_key(job.window, job.source):
            raise ConfigError(
                "window.group_by",
                f"must include the substream key {key_label(job.source.over)!r} (source.over): "
                "each substream's windows follow its own watermark (a computed key as a "
                "computed column of the same expression)",
            )
