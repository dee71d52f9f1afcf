"""A substream key of several columns (Stream Analytics' ``TIMESTAMP BY t OVER a, b``;
semantics §1.4, *Several columns*): one expression whose value names each combination
of the columns' values once, so that both engines take it as any computed key.

:func:`tuple_key` writes the expression from the columns (or expressions); :func:`key_parts`
reads them back from it, for the rules that need the columns themselves (a window of
substreams groups by every one of them) and for the job file's display.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sparktide.expr import Case, Func, IsNull, Lit, parse_expression, to_text
from sparktide.expr.nodes import Binary, Expr
from sparktide.job.values import COLUMN_NAME

if TYPE_CHECKING:
    from sparktide.job.source import Source
    from sparktide.job.window import Window

__all__ = ["groups_by_key", "key_label", "key_parts", "tuple_key"]


def tuple_key(parts: list[str]) -> str:
    """The substream key of ``parts`` (each a column name or an expression's text): the
    one part itself; for several, an expression over them all. Each value is its type
    (``GETTYPE``: ``1``, ``1.0`` and ``"1"`` differ, as single keys do), a colon and its
    text (``CAST(... AS nvarchar(max))``), its backslashes and then its commas escaped
    with a backslash, the values joined by commas; a null or missing value makes the key
    null (the event's error, as a single key column's null is), and a record or an
    array fails the ``CAST`` (likewise)."""
    if len(parts) == 1:
        return parts[0]
    missing = " OR ".join(f"({part}) IS NULL" for part in parts)
    texts = ", ',', ".join(
        f"GETTYPE({part}), ':', "
        f"REPLACE(REPLACE(CAST(({part}) AS nvarchar(max)), '\\', '\\\\'), ',', '\\,')"
        for part in parts
    )
    return f"CASE WHEN {missing} THEN NULL ELSE CONCAT({texts}) END"


def key_parts(over: str | None) -> tuple[str, ...] | None:
    """The columns (or expressions' texts) whose :func:`tuple_key` ``over`` is, when it
    is one of several; else ``None``."""
    if over is None or not over.startswith("CASE WHEN ("):
        return None
    try:
        expr = parse_expression(over)
    except Exception:  # (the source's own check names the key)
        return None
    if not (isinstance(expr, Case) and len(expr.whens) == 1 and isinstance(expr.default, Func)):
        return None
    condition, result = expr.whens[0]
    if result != Lit(None):
        return None
    operands = _null_tests(condition)
    if operands is None or len(operands) < 2:
        return None
    parts = tuple(to_text(operand) for operand in operands)
    return parts if parse_expression(tuple_key(list(parts))) == expr else None


def _null_tests(condition: Expr) -> list[Expr] | None:
    """The operands of ``a IS NULL OR b IS NULL OR ...``, else ``None``."""
    if isinstance(condition, IsNull) and not condition.negated and not condition.missing:
        return [condition.operand]
    if isinstance(condition, Binary) and condition.op == "OR":
        left, right = _null_tests(condition.left), _null_tests(condition.right)
        if left is not None and right is not None:
            return left + right
    return None


def key_label(over: str) -> str:
    """How messages name the substream key ``over``: ``(a, b)`` for one of several."""
    parts = key_parts(over)
    return over if parts is None else f"({', '.join(parts)})"


def groups_by_key(window: Window, source: Source) -> bool:
    """Whether ``window`` groups by ``source``'s substream key: its column, or a computed
    column of the same expression as a computed key (semantics §1.4); for a key of
    several, by every one of them."""
    assert source.over is not None
    parts = key_parts(source.over) or (source.over,)
    return all(_groups_by(window, part) for part in parts)


def _groups_by(window: Window, column: str) -> bool:
    """Whether ``window`` groups by ``column``, or by a computed column of the same
    expression when ``column`` is one."""
    if COLUMN_NAME.match(column):
        return column in window.record_group_columns
    key = to_text(parse_expression(column))
    return any(to_text(e) == key for _, e in window.group_keys if e is not None)
