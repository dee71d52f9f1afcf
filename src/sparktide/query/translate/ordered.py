"""Stream Analytics' ordered aggregates → the job's: ``TopOne([expr]) OVER (ORDER BY c
[ASC|DESC], ...)``, ``CollectTop(n [, expr]) OVER (ORDER BY ...)``,
``Percentile_Cont(p) OVER (ORDER BY c [ASC|DESC])`` and ``Percentile_Disc`` (semantics
§6.12)."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal

from sparktide.query.ast import Call, Column, Expr, Literal
from sparktide.query.refusal import Refuse

__all__ = ["ordered_aggregate"]


def ordered_aggregate(
    call: Call,
    value: Callable[[Expr], str],
    column: Callable[[Column], str],
    refuse: Refuse,
) -> str:
    """The job's text of the ordered aggregate ``call`` (``value``: an argument's column
    or expression text; ``column``: an ORDER BY column's name).

    Raises
    ------
    QueryError
        For a call Stream Analytics would not accept (no ``OVER (ORDER BY ...)``, a count
        that is not a positive integer literal, a fraction outside 0 to 1) or that
        sparktide does not translate (``PARTITION BY``, ``LIMIT DURATION`` or ``WHEN``:
        the analytic form; an ORDER BY expression that is not a column).
    """
    name = call.text[:-2].upper()
    function = call.function
    over = call.over
    if over is None or not over.order_by:
        raise refuse(call.pos, f"{name}(...) needs OVER (ORDER BY column [ASC|DESC])")
    if over.partition_by or over.limit is not None or over.when is not None:
        raise refuse(
            over.pos,
            f"{name}(...) OVER (PARTITION BY / LIMIT DURATION / WHEN): the analytic form is "
            "not supported yet; aggregate over a window in GROUP BY",
        )
    if call.star or call.distinct:
        raise refuse(call.pos, f"{name}(*) and {name}(DISTINCT ...) are not Stream Analytics'")
    keys = []
    for expr, descending in over.order_by:
        if not isinstance(expr, Column):
            raise refuse(getattr(expr, "pos", over.pos), f"{name}: ORDER BY takes column names")
        keys.append(f"{column(expr)} {'desc' if descending else 'asc'}")
    order = f" over (order by {', '.join(keys)})"
    args = list(call.args)
    if function in ("percentile_cont", "percentile_disc"):
        if len(keys) != 1:
            raise refuse(over.pos, f"{name}: ORDER BY takes one column")
        if len(args) != 1:
            raise refuse(call.pos, f"{name}(fraction) takes one number from 0 to 1")
        fraction = _literal(args[0], refuse, name, call)
        if not 0 <= fraction <= 1:
            raise refuse(call.pos, f"{name}: the fraction must be from 0 to 1")
        return f"{function}({fraction!r}){order}"
    count = ""
    if function == "collecttop":
        if not args:
            raise refuse(call.pos, f"{name}(n [, expression]) needs a number of events")
        n = _literal(args.pop(0), refuse, name, call)
        if not isinstance(n, int) or n < 1:
            raise refuse(call.pos, f"{name}: the number of events is an integer of 1 or more")
        count = f"{n}, " if args else str(n)
    if len(args) > 1:
        raise refuse(call.pos, f"{name}: too many arguments")
    inner = value(args[0]) if args else ""
    return f"{function}({count}{inner}){order}"


def _literal(expr: Expr, refuse: Refuse, name: str, call: Call) -> int | float:
    """A number literal (``3``, ``0.95``): an integer, or a float."""
    value = expr.value if isinstance(expr, Literal) else None
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise refuse(getattr(expr, "pos", call.pos), f"{name}: expected a number literal")
    return value
