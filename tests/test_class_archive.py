"""The archive of Spark's classes the suite's JVMs map (tests/class_archive.py)."""

from __future__ import annotations

import os

from tests import class_archive


def test_options_name_the_archive_only_once_it_is_there(tmp_path, monkeypatch):
    archive = tmp_path / "classes.jsa"
    monkeypatch.setattr(class_archive, "ARCHIVE", archive)
    assert class_archive.with_archive("-XX:+UseSerialGC") == "-XX:+UseSerialGC"
    archive.write_bytes(b"archive")
    options = class_archive.with_archive("-XX:+UseSerialGC")
    assert options == f"-XX:+UseSerialGC -XX:SharedArchiveFile={archive}"
    assert class_archive.with_archive(options) == options  # (never twice)


def test_a_fresh_archive_is_kept_and_a_stale_one_made_again(tmp_path, monkeypatch):
    archive, jars = tmp_path / "classes.jsa", tmp_path / "jars"
    jars.mkdir()
    monkeypatch.setattr(class_archive, "ARCHIVE", archive)
    monkeypatch.setattr(class_archive, "_jars", lambda: jars)
    made: list[str] = []
    monkeypatch.setattr(class_archive, "_make", lambda *options: made.append(options[0]))
    archive.write_bytes(b"archive")
    os.utime(jars, (1, 1))
    assert class_archive.make_in_background("-Xs", "args") is None
    os.utime(jars, None)  # (the jars changed after the archive was made)
    os.utime(archive, (1, 1))
    thread = class_archive.make_in_background("-Xs", "args")
    assert thread is not None
    thread.join()
    assert made == ["-Xs"] and not archive.exists()


def test_a_failed_workload_leaves_no_archive(tmp_path, monkeypatch):
    archive = tmp_path / "classes.jsa"
    monkeypatch.setattr(class_archive, "ARCHIVE", archive)
    monkeypatch.setattr(class_archive, "_WORKLOAD", "raise SystemExit(3)")
    class_archive._make("-XX:+UseSerialGC", "pyspark-shell")
    assert list(tmp_path.iterdir()) == []
