"""The task's vouched rows, gathered chunk by chunk into columns.

Whatever the input (whole JSONL files, Parquet files, lines), each reader hands its
rows to a :class:`RowCollector`; :meth:`RowCollector.result` gives the task's rows as
one :class:`TaskRows`, the shape judging reads.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from sparktide.spark.columns import (
    ARRIVAL_TIME,
    EVENT_TIME,
    PARTITION,
    SUBSTREAM_KEY,
)
from sparktide.spark.inputs.arrowjson import Vouched
from sparktide.spark.inputs.arrowvalues import TOKEN, field_column
from sparktide.spark.onepass.plan import FusedPlan
from sparktide.spark.onepass.values import (
    aggregate_inputs,
    field_text,
    group_text,
    integers,
    typed_inputs,
)

__all__ = ["RowCollector", "TaskRows", "file_codes"]


@dataclass
class TaskRows:
    """The task's rows, column by column (one entry per row, in no particular order)."""

    file: np.ndarray  # rank of the row's file name among the task's files
    files: list[str]  # the names, by rank
    line: np.ndarray
    event_time: np.ndarray
    arrival: np.ndarray
    pid: pa.Array
    key: pa.Array  # substream keys (null without substreams)
    groups: list[pa.Array]
    inputs: list[dict[str, np.ndarray]]  # per aggregate
    texts: list[pa.Array]  # per field a released event reads (``ReleasePlan.fields``)

    def take(self, where: np.ndarray) -> TaskRows:
        """The rows at ``where`` (positions), with the same files."""
        at = pa.array(where)
        return TaskRows(
            file=self.file[where],
            files=self.files,
            line=self.line[where],
            event_time=self.event_time[where],
            arrival=self.arrival[where],
            pid=self.pid.take(at),
            key=self.key.take(at),
            groups=[group.take(at) for group in self.groups],
            inputs=[{name: v[where] for name, v in given.items()} for given in self.inputs],
            texts=[text.take(at) for text in self.texts],
        )


class RowCollector:
    """The columns of the task's vouched lines, chunk by chunk."""

    def __init__(self, plan: FusedPlan) -> None:
        self.names: dict[str, int] = {}
        self.parts: dict[str, list] = {
            k: [] for k in ("file", "line", "event_time", "arrival", PARTITION, "key")
        }
        self.groups: list[list[pa.Array]] = [[] for _ in plan.group_by]
        self.inputs: list[list[dict[str, np.ndarray]]] = [[] for _ in plan.aggregates]
        fields = plan.release.fields if plan.release is not None else ()
        self.texts: list[list[pa.Array]] = [[] for _ in fields]

    def code(self, name: str) -> int:
        """The code of file ``name`` (its order of first appearance)."""
        return self.names.setdefault(name, len(self.names))

    def add(
        self,
        plan: FusedPlan,
        chunk: Vouched,
        file: np.ndarray,
        line: np.ndarray,
        pid: pa.Array | None = None,
    ) -> None:
        """One chunk, its rows' file codes and line numbers (and partition ids, when they
        come from the stream rather than the record)."""
        table, texts = chunk.table, chunk.lines
        if len(chunk.rows) < table.num_rows:
            table, texts = table.filter(chunk.good), texts.filter(chunk.good)
        values = chunk.values
        self.append(
            file,
            line,
            (
                values[EVENT_TIME],
                values[ARRIVAL_TIME],
                values[PARTITION] if pid is None else pid,
                values[SUBSTREAM_KEY],
            ),
            [group_text(field_column(table, column)) for column in plan.group_by],
            [
                aggregate_inputs(
                    function,
                    column,
                    table,
                    texts,
                    values.get(TOKEN + column) if column is not None else None,
                )
                for function, column, _ in plan.aggregates
            ],
            _field_texts(plan, table, texts, values),
        )

    def add_typed(self, plan: FusedPlan, batch: pa.RecordBatch) -> None:
        """Typed Parquet rows whose kernel inputs Spark computed
        (:func:`~sparktide.spark.onepass.plan.typed_columns`)."""
        self.append(
            file_codes(self, batch.column("file")),
            batch.column("line").to_numpy(zero_copy_only=False).astype(np.int64),
            tuple(batch.column(name) for name in ("_kt", "_ka", "_kpid", "_kkey")),
            [batch.column(f"_kg{g}") for g in range(len(plan.group_by))],
            [
                typed_inputs(function, column, batch, k)
                for k, (function, column, _) in enumerate(plan.aggregates)
            ],
        )

    def append(
        self,
        file: np.ndarray,
        line: np.ndarray,
        values: tuple[pa.Array, pa.Array, pa.Array, pa.Array],
        groups: list[pa.Array],
        inputs: list[dict[str, np.ndarray]],
        texts: list[pa.Array] | None = None,
    ) -> None:
        """Rows' file codes, line numbers, (event time, arrival time, partition id, key),
        group-by texts, aggregate inputs and released events' field texts."""
        event_time, arrival, pid, key = values
        self.parts["file"].append(file)
        self.parts["line"].append(line)
        self.parts["event_time"].append(integers(event_time))
        self.parts["arrival"].append(integers(arrival))
        self.parts[PARTITION].append(pid)
        self.parts["key"].append(key)
        for g, text in enumerate(groups):
            self.groups[g].append(text)
        for k, given in enumerate(inputs):
            self.inputs[k].append(given)
        for i, text in enumerate(texts or ()):
            self.texts[i].append(text)

    def result(self, plan: FusedPlan) -> TaskRows | None:
        """The rows collected (event times shifted by the source's ``shift``), files
        ranked by name; ``None`` when there are none."""
        parts = self.parts
        if not parts["event_time"]:
            return None
        names = list(self.names)
        rank = np.argsort(np.argsort(np.array(names, dtype=object)))
        return TaskRows(
            file=rank[np.concatenate(parts["file"])],
            files=sorted(names),
            line=np.concatenate(parts["line"]),
            event_time=np.concatenate(parts["event_time"]) + plan.shift,
            arrival=np.concatenate(parts["arrival"]),
            pid=pa.concat_arrays(parts[PARTITION]),
            key=pa.concat_arrays(parts["key"]),
            groups=[pa.concat_arrays(g) for g in self.groups],
            inputs=[
                {name: np.concatenate([c[name] for c in chunks]) for name in chunks[0]}
                for chunks in self.inputs
            ],
            texts=[pa.concat_arrays(texts) for texts in self.texts],
        )


def _field_texts(
    plan: FusedPlan, table: pa.Table, lines: pa.Array, values: dict[str, pa.Array]
) -> list[pa.Array]:
    """The JSON texts of the fields a windowless job's released events read
    (:attr:`~sparktide.spark.onepass.releaseplan.ReleasePlan.fields`): a partition key's
    as a group-by value's (:func:`group_text`), the others' as :func:`field_text` reads
    them."""
    release = plan.release
    if release is None:
        return []
    texts = []
    for i, name in enumerate(release.fields):
        column = field_column(table, name)
        if i in release.key_fields:
            texts.append(group_text(column))
        else:
            texts.append(field_text(column, values.get(TOKEN + name), lines, name))
    return texts


def file_codes(rows: RowCollector, files: pa.Array) -> np.ndarray:
    """Each row's file as the collector's code of its name."""
    names = files.dictionary_encode()
    codes = np.array([rows.code(name) for name in names.dictionary.to_pylist()], dtype=np.int64)
    return codes[names.indices.to_numpy(zero_copy_only=False)]
