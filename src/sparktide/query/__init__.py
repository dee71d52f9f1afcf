"""Bring your query: Stream Analytics queries and Atlas Stream Processing pipelines as
sparktide jobs (docs/query.md).

Pure Python (no Spark). :func:`translate_file` reads a query (``.asaql``) or a pipeline
(``.json``, ``.yaml``) and the job file that binds its input and output names, and
returns its :class:`Translation`: the :class:`~sparktide.job.Job` of each statement
(:class:`StatementJob`; ``translation.job`` when there is one); :func:`job_to_toml`
writes a job as a job file.

The package: :mod:`.asaql` parses a query into its :mod:`.ast`, :mod:`.translate` makes
its jobs (expressions by :mod:`.exprs`); :mod:`.located` reads a pipeline's JSON or YAML
with positions, :mod:`.atlas` makes its job; both bind names through :mod:`.bind` (the
job file), refuse through :mod:`.refusal` and return a :mod:`.jobs` translation, which
:mod:`.tomlout` writes.
"""

from __future__ import annotations

from pathlib import Path

from sparktide.errors import ConfigError, QueryError
from sparktide.query.asaql import parse_query
from sparktide.query.atlas import translate_pipeline
from sparktide.query.bind import Bindings, load_bindings
from sparktide.query.graph import step_graph
from sparktide.query.jobs import StatementJob, Translation
from sparktide.query.located import parse_json, parse_yaml
from sparktide.query.tomlout import job_to_toml
from sparktide.query.translate import translate_query

__all__ = [
    "QUERY_SUFFIXES",
    "Bindings",
    "QueryError",
    "StatementJob",
    "Translation",
    "job_to_toml",
    "load_bindings",
    "parse_query",
    "query_graph_text",
    "query_kind",
    "translate_file",
    "translate_text",
]

#: File suffixes and the language they hold.
QUERY_SUFFIXES = {
    ".asaql": "asaql",
    ".saql": "asaql",
    ".sql": "asaql",
    ".json": "json",
    ".yaml": "yaml",
    ".yml": "yaml",
}


def query_kind(path: str | Path, text: str) -> str:
    """``asaql``, ``json`` or ``yaml``: by suffix, else JSON if the text starts with
    ``[`` or ``{`` (a Stream Analytics query starts with a keyword)."""
    kind = QUERY_SUFFIXES.get(Path(path).suffix.lower())
    if kind is not None:
        return kind
    return "json" if text.lstrip()[:1] in ("[", "{") else "asaql"


def translate_text(
    text: str, kind: str, bindings: Bindings | None = None, source: str = "query"
) -> Translation:
    """Translate a query or pipeline held in ``text``.

    Parameters
    ----------
    text
        The query or pipeline.
    kind
        ``asaql``, ``json`` or ``yaml``.
    bindings
        The job file's bindings (default: none, every name is a placeholder path).
    source
        The name used in messages.

    Raises
    ------
    QueryError
        For text outside the grammar or a construct the engines cannot run yet.
    ConfigError
        When the job file is wrong or contradicts the query.
    """
    bindings = bindings if bindings is not None else Bindings()
    if kind == "asaql":
        return translate_query(parse_query(text, source), bindings)
    root = parse_json(text, source) if kind == "json" else parse_yaml(text, source)
    return translate_pipeline(root, bindings, source)


def translate_file(query: str | Path, job: str | Path | None = None) -> Translation:
    """Translate the query or pipeline file ``query`` with the job file ``job``.

    Raises
    ------
    ConfigError
        If a file cannot be read, or the job file is wrong.
    QueryError
        If the query is outside the subset (naming the line and column).
    """
    path = Path(query)
    try:
        text = path.read_bytes().decode("utf-8")
    except OSError as exc:
        raise ConfigError("--query", f"cannot read {str(path)!r}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise ConfigError("--query", f"{str(path)!r} is not UTF-8 text") from None
    return translate_text(text, query_kind(path, text), load_bindings(job), path.name)


def query_graph_text(query: str | Path) -> str:
    """The step graph of the Stream Analytics query file ``query``, one line per node
    (:class:`~sparktide.query.graph.StepGraph`); a pipeline's is not drawn (``""``).

    Raises
    ------
    ConfigError
        If the file cannot be read.
    QueryError
        For text outside the grammar.
    """
    path = Path(query)
    try:
        text = path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError("--query", f"cannot read {str(path)!r}: {exc}") from None
    if query_kind(path, text) != "asaql":
        return ""
    return "# step graph\n" + "".join(
        f"# {line}\n" for line in step_graph(parse_query(text, path.name)).text().splitlines()
    )
