"""One local SparkSession for the whole test session (starting one costs ~7 s)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def spark():
    from sparktide.spark import local_session

    session = local_session()
    yield session
    session.stop()
