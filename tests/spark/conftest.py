"""One local SparkSession for the whole test session (each worker of ``-n N`` has its own)."""

from __future__ import annotations

import os

import pytest

from tests.conftest import CHILD_JVM_OPTIONS


@pytest.fixture(scope="session")
def spark():
    from sparktide.spark import local_session

    # the session's JVM runs for the whole suite: the JVM's own JIT and collector
    ours = os.environ.get("JDK_JAVA_OPTIONS") == CHILD_JVM_OPTIONS
    if ours:
        del os.environ["JDK_JAVA_OPTIONS"]
    try:
        session = local_session()
    finally:
        if ours:
            os.environ["JDK_JAVA_OPTIONS"] = CHILD_JVM_OPTIONS
    yield session
    session.stop()
