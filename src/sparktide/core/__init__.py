"""Pure-Python semantics: policies, watermarks, windows, aggregates and the reference engine.

Nothing in this package imports pyspark.
"""

from sparktide.core.engine import ReferenceEngine, Result, simulate
from sparktide.core.records import InputRecord

__all__ = ["InputRecord", "ReferenceEngine", "Result", "simulate"]
