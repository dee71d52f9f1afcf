"""sparktide: the event-time model of Stream Analytics and StreamInsight on Spark.

Throughout the code, "semantics §N" cites section N of ``docs/semantics.md``, the
specification both engines follow; ``sparktide.rules`` lists where each of its rules
is written in each representation.
"""

from importlib import metadata as _metadata

__all__ = ["__version__"]

try:
    #: The installed distribution's version (``sparktide --version``).
    __version__: str = _metadata.version("sparktide")
except _metadata.PackageNotFoundError:  # (run from a source tree without installing)
    __version__ = "0+unknown"
