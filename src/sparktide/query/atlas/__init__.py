"""Atlas Stream Processing pipelines → sparktide :class:`~sparktide.job.Job` (docs/query.md).

A pipeline is a JSON (or YAML) list of stages, or an object ``{"name": ...,
"pipeline": [...], "options": {"dlq": {...}}}`` holding the list and the processor's
dead-letter queue. Translated: ``$source`` (with ``timeField``), one
``$tumblingWindow`` or ``$hoppingWindow`` (``interval``, ``hopSize``, ``offset``,
``allowedLateness``, ``idleTimeout``, an inner ``$group`` with ``$sum``, ``$avg``,
``$min``, ``$max``, ``$count``, ``$push``, ``$first``, ``$last``, ``$top`` ...),
``$match``, ``$project``, ``$addFields``/``$set``, ``$unset`` (semantics §14),
``$lookup`` with its ``$unwind``, ``$emit``/``$merge`` and the dead-letter queue.
Atlas windows are ``[start, end)`` and keep events behind the watermark for their
windows to decide (``on_out_of_order = "accept"``; the window's ``allowedLateness``, 3
seconds unless given, keeps it open). Every other stage or key is refused with its line
and column.

The package: :mod:`.pipeline` reads the stages in order and assembles the job;
:mod:`.endpoints` binds ``$source``, the sink and the dead-letter queue;
:mod:`.match` and :mod:`.window` read ``$match`` and the window stage, :mod:`.shape`
the document stages, :mod:`.operators` their expressions, :mod:`.lookup` ``$lookup``,
all on :mod:`.documents`, which reads the pipeline's documents.
"""

from __future__ import annotations

from sparktide.query.atlas.documents import TIME_UNITS
from sparktide.query.atlas.pipeline import ATLAS_ORDERING, Pipeline
from sparktide.query.bind import Bindings
from sparktide.query.jobs import Translation
from sparktide.query.located import Node

__all__ = ["ATLAS_ORDERING", "TIME_UNITS", "translate_pipeline"]


def translate_pipeline(root: Node, bindings: Bindings, source: str) -> Translation:
    """Translate an Atlas Stream Processing pipeline into a job.

    Parameters
    ----------
    root
        The parsed pipeline (:func:`sparktide.query.located.parse_json` or
        :func:`~sparktide.query.located.parse_yaml`).
    bindings
        The job file's bindings of input and output names.
    source
        The pipeline's name in messages (its file name).

    Raises
    ------
    QueryError
        For a stage or key the engines cannot run yet, naming it and its place.
    ConfigError
        When the job file contradicts the pipeline (naming the key).
    """
    return Pipeline(root, bindings, source).run()
