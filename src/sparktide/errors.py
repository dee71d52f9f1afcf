"""The error hierarchy: everything sparktide raises derives from :class:`SparktideError`."""

from __future__ import annotations

__all__ = [
    "ConfigError",
    "InputError",
    "QueryError",
    "RunError",
    "SparktideError",
    "TimeFormatError",
]


class SparktideError(Exception):
    """Base of every error sparktide raises on purpose."""


class TimeFormatError(SparktideError, ValueError):
    """A time or duration string could not be parsed."""


class ConfigError(SparktideError, ValueError):
    """The job configuration is invalid.

    Parameters
    ----------
    key
        The dotted job-file key at fault, such as ``"ordering.late_arrival"``.
    message
        What is wrong with it.
    """

    def __init__(self, key: str, message: str) -> None:
        self.key = key
        self.message = message
        super().__init__(f"{key}: {message}" if key else message)


class InputError(SparktideError):
    """The job's input cannot be read at all (missing path, unreadable file)."""


class RunError(SparktideError):
    """A running job stopped on a fault outside sparktide (an output or the checkpoint
    cannot be written); running it again once the fault is fixed resumes it."""


class QueryError(SparktideError, ValueError):
    """A query or pipeline (``sparktide --query``) cannot be read or translated.

    The message starts with the place in the text, as compilers write it:
    ``query.asaql:3:7: WHERE is not supported yet: ...``.

    Parameters
    ----------
    source
        The name of the text (its file name).
    line, column
        1-based position of the construct at fault.
    message
        What is wrong.
    """

    def __init__(self, source: str, line: int, column: int, message: str) -> None:
        self.source = source
        self.line = line
        self.column = column
        self.message = message
        super().__init__(f"{source}:{line}:{column}: {message}")
