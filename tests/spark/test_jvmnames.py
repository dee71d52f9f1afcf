"""JVM names remembered once found (sparktide.spark.jvmnames)."""

from __future__ import annotations

import pytest
from py4j import java_gateway
from py4j.protocol import MEMORY_COMMAND_NAME, MEMORY_DEL_SUBCOMMAND_NAME, Py4JError
from pyspark.sql import functions as F

from sparktide.spark.jvmnames import remember_jvm_names

MEMORY_DELETE = MEMORY_COMMAND_NAME + MEMORY_DEL_SUBCOMMAND_NAME


def _commands(client, monkeypatch) -> list[str]:
    """The py4j commands ``client`` sends from now on, but for the ones that release a
    Java object: Python's garbage collector sends those whenever it frees a proxy, here
    or in any other thread (``m\nd\n<id>``), so they are not the lookups counted."""
    sent: list[str] = []
    send = client.send_command

    def counting(command, *args, **kwargs):
        if not command.startswith(MEMORY_DELETE):
            sent.append(command)
        return send(command, *args, **kwargs)

    monkeypatch.setattr(client, "send_command", counting)
    return sent


def test_classes_packages_and_static_methods_are_looked_up_once(spark, monkeypatch):
    remember_jvm_names()
    remember_jvm_names()  # (idempotent: one wrapper)
    for owner in (java_gateway.JVMView, java_gateway.JavaPackage, java_gateway.JavaClass):
        assert not hasattr(owner.__getattr__.__wrapped__, "__wrapped__")
    gateway = spark.sparkContext._gateway
    jvm = gateway.new_jvm_view()  # (a view of its own: nothing found through it yet)
    sent = _commands(gateway._gateway_client, monkeypatch)
    integer = jvm.Integer  # a class by the short name the view imports (java.lang)
    parse = integer.parseInt  # a static method
    utils = jvm.org.apache.spark.api.python.PythonUtils  # packages, then a class
    to_seq = utils.toSeq
    looked_up = len(sent)
    assert looked_up >= 4
    assert jvm.Integer is integer and integer.parseInt is parse
    assert jvm.org.apache.spark.api.python.PythonUtils is utils and utils.toSeq is to_seq
    assert len(sent) == looked_up  # no round trip for what was found
    # what they find still works, and PySpark with them
    assert parse("42") == 42
    sequence = to_seq([1, 2])
    assert sequence.size() == 2 and sequence.apply(1) == 2
    assert [r[0] for r in spark.range(3).select(F.col("id") * 2).collect()] == [0, 2, 4]


def test_static_fields_and_missing_names_are_asked_each_time(spark, monkeypatch):
    remember_jvm_names()
    gateway = spark.sparkContext._gateway
    integer = gateway.new_jvm_view().java.lang.Integer
    sent = _commands(gateway._gateway_client, monkeypatch)
    assert integer.MAX_VALUE == 2**31 - 1
    assert integer.MAX_VALUE == 2**31 - 1
    assert len(sent) == 2 and "MAX_VALUE" not in vars(integer)
    for _ in range(2):
        with pytest.raises(Py4JError):
            integer.noSuchMember  # noqa: B018
    assert len(sent) == 4 and "noSuchMember" not in vars(integer)
