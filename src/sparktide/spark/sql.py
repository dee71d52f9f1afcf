"""Small SQL-expression builders shared by the Spark engine's steps.

Column names reach SQL only after :mod:`sparktide.job` has checked them against the
identifier grammar (letters, digits, ``_``, ``-``), and only inside quoted literals
(``variant_get(m, "$['name']")``) or back-quoted identifiers, never as free SQL text.
"""

from __future__ import annotations

from sparktide.core.instants import NEG_INF

__all__ = ["NEG", "field", "iso", "lit_us", "quote"]

#: Minus infinity as a SQL literal (microseconds).
NEG = f"CAST({NEG_INF} AS BIGINT)"


def quote(name: str) -> str:
    """A back-quoted identifier for a validated column name."""
    if "`" in name:  # pragma: no cover - the job grammar forbids it
        raise ValueError(f"bad column name {name!r}")
    return f"`{name}`"


def field(name: str) -> str:
    """The variant value of top-level field ``name`` of the record ``m`` (a variant
    object); SQL ``NULL`` when the field is missing, a ``VOID`` variant for JSON null."""
    if "'" in name or "\\" in name:  # pragma: no cover - the job grammar forbids it
        raise ValueError(f"bad column name {name!r}")
    return f"variant_get(m, \"$['{name}']\")"


def lit_us(value: int | None) -> str:
    """An integer microsecond literal (``NULL`` for none)."""
    return "CAST(NULL AS BIGINT)" if value is None else f"CAST({int(value)} AS BIGINT)"


def iso(expr: str) -> str:
    """ISO-8601 UTC text of a microsecond expression, as ``format_instant`` writes it."""
    seconds = f"floor(({expr}) / 1000000)"
    micros = f"pmod(({expr}), 1000000)"
    base = f"date_format(timestamp_seconds({seconds}), \"yyyy-MM-dd'T'HH:mm:ss\")"
    frac = f"rtrim('0', lpad(CAST({micros} AS STRING), 6, '0'))"
    return (
        f"CASE WHEN ({expr}) IS NULL THEN NULL "
        f"WHEN {micros} = 0 THEN concat({base}, 'Z') "
        f"ELSE concat({base}, '.', {frac}, 'Z') END"
    )
