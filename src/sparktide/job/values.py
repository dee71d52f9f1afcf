"""Values of a job file: durations, column names, paths and choices, checked and normalised.

Every table of a job validates its fields with these checks, so a mistake is reported
the same way wherever it is made: a :class:`~sparktide.errors.ConfigError` naming the
key (``window.size``) and what was wrong. Durations may be given as strings (``"5s"``)
or integer microseconds; they are stored as ``int`` microseconds (``None`` for a
disabled check).
"""

from __future__ import annotations

import re
from typing import Any

from sparktide.errors import ConfigError, TimeFormatError
from sparktide.time import parse_duration

__all__ = [
    "COLUMN_NAME",
    "MAX_DURATION",
    "OWN_EVENT_FIELDS",
    "OWN_PREFIX",
    "OWN_WINDOW_FIELDS",
    "RESERVED_EVENT_COLUMNS",
    "RESERVED_WINDOW_COLUMNS",
    "WINDOW_BOUNDS",
    "check_choice",
    "check_column",
    "check_path",
    "claim_name",
    "normalise_duration",
    "normalise_signed_duration",
    "own_names",
    "set_field",
]

#: Column names: identifiers (letters, digits, ``_`` and ``-``), never SQL text.
COLUMN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*\Z")
#: The longest duration accepted: 100 years (longer ones would overflow instants in Spark).
MAX_DURATION = 36500 * 86_400_000_000
#: Path characters that Spark (Hadoop) would not take literally, and control characters.
_PATH_CHARACTERS = re.compile(r"[\x00-\x1f\x7f:*?\[\]{}\\]")
#: Names sparktide itself writes into window records.
#: Output names a user's column cannot take: ``type`` is the kind of every record
#: ``simulate`` prints. Sparktide's other fields give way instead (:func:`own_names`).
RESERVED_WINDOW_COLUMNS = ("type",)
#: ... of event records.
RESERVED_EVENT_COLUMNS = ("type",)
#: The fields sparktide writes into window records itself.
OWN_WINDOW_FIELDS = ("window_start", "window_end", "emitted_at")
#: ... into event records (``end_timestamp``: interval events).
OWN_EVENT_FIELDS = ("timestamp", "end_timestamp")
#: What a field of sparktide's own takes in front of its name when a user's column of
#: the same record has that name (``sparktide_window_start``).
OWN_PREFIX = "sparktide_"
#: Columns of a window's result that ``having`` and ``[select]`` may read besides the
#: group-by columns and the aggregates.
WINDOW_BOUNDS = ("window_start", "window_end")


def own_names(own: tuple[str, ...], taken: Any) -> dict[str, str]:
    """The names sparktide's ``own`` fields take in a record whose user columns are
    ``taken``: a user's column keeps its name, and a field of sparktide's own with the
    same name takes :data:`OWN_PREFIX` in front (as many times as needed)."""
    used = set(taken)
    out = {}
    for name in own:
        written = name
        while written in used:
            written = OWN_PREFIX + written
        out[name] = written
        used.add(written)
    return out


def set_field(obj: object, name: str, value: Any) -> None:
    """Set field ``name`` of the frozen dataclass ``obj`` (its normalised value)."""
    object.__setattr__(obj, name, value)


def normalise_duration(
    obj: object, name: str, key: str, *, allow_none: bool = False, positive: bool = False
) -> None:
    """Normalise the duration field ``name`` of ``obj`` to int microseconds in place."""
    value = getattr(obj, name)
    if value is None:
        if not allow_none:
            raise ConfigError(key, "is required" if positive else "cannot be none")
        return
    if isinstance(value, bool):
        raise ConfigError(key, f"expected a duration such as '5s', got {value!r}")
    if isinstance(value, int):
        parsed: int | None = value
    elif isinstance(value, str):
        try:
            parsed = parse_duration(value, allow_none=allow_none)
        except TimeFormatError as exc:
            raise ConfigError(key, str(exc)) from None
    else:
        raise ConfigError(key, f"expected a duration such as '5s', got {value!r}")
    if parsed is not None and parsed < 0:
        raise ConfigError(key, f"must not be negative, got {value!r}")
    if parsed is not None and parsed > MAX_DURATION:
        raise ConfigError(key, f"must be at most 36500d (100 years), got {value!r}")
    if parsed is not None and positive and parsed == 0:
        raise ConfigError(key, f"must be greater than zero, got {value!r}")
    set_field(obj, name, parsed)


def normalise_signed_duration(obj: object, name: str, key: str) -> None:
    """Normalise the duration field ``name`` of ``obj``, which may be negative."""
    value = getattr(obj, name)
    if isinstance(value, str):
        try:
            value = parse_duration(value, allow_negative=True)
        except TimeFormatError as exc:
            raise ConfigError(key, str(exc)) from None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(key, f"expected a duration such as '-1h', got {value!r}")
    if abs(value) > MAX_DURATION:
        raise ConfigError(key, "must be within 36500d (100 years)")
    set_field(obj, name, value)


def check_choice(value: Any, allowed: tuple[str, ...], key: str) -> None:
    """Refuse ``value`` unless it is one of ``allowed``."""
    if value not in allowed:
        raise ConfigError(key, f"must be one of {', '.join(allowed)}; got {value!r}")


def check_column(value: Any, key: str, *, optional: bool = True) -> None:
    """Refuse ``value`` unless it is a column name (or ``None`` when ``optional``)."""
    if value is None and optional:
        return
    if not isinstance(value, str) or not COLUMN_NAME.match(value):
        raise ConfigError(
            key, f"must be a column name (letters, digits, '_' or '-'), got {value!r}"
        )


def check_column_path(value: Any, key: str) -> None:
    """Refuse ``value`` unless it is a column name, or column names joined by dots for a
    value inside a record (``IoTHub.ConnectionDeviceId``)."""
    parts = value.split(".") if isinstance(value, str) else [value]
    if not all(isinstance(p, str) and COLUMN_NAME.match(p) for p in parts):
        raise ConfigError(
            key,
            "must be a column name (letters, digits, '_' or '-'), or names joined by dots "
            f"for a value inside a record (IoTHub.ConnectionDeviceId), got {value!r}",
        )


def claim_name(
    name: str, key: str, seen: set[str], reserved: tuple[str, ...], *, twice: str
) -> None:
    """Add ``name``, the column the job-file entry ``key`` writes, to ``seen``.

    Raises
    ------
    ConfigError
        Naming ``key``: ``twice`` if ``name`` is in ``seen`` already, or if it is one of
        the ``reserved`` names sparktide writes itself.
    """
    if name in seen:
        raise ConfigError(key, twice)
    if name in reserved:
        raise ConfigError(key, f"{name!r} is a name sparktide writes itself")
    seen.add(name)


def check_path(value: Any, key: str, *, optional: bool) -> None:
    """Refuse ``value`` unless it is a path Spark reads literally (or ``None`` when
    ``optional``)."""
    if value is None and optional:
        return
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(key, f"must be a path string, got {value!r}")
    bad = _PATH_CHARACTERS.search(value)
    if bad is not None:
        raise ConfigError(
            key,
            f"{value!r} holds {bad.group()!r}: paths cannot hold control characters, ':' or the "
            "characters Spark's file system layer reads as patterns (* ? [ ] { } \\)",
        )
