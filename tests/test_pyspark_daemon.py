"""The daemon module that starts Spark's Python workers without pyspark's archives
(``sparktide.pyspark_daemon``): which entries of the path it takes off."""

from __future__ import annotations

from pathlib import Path

from sparktide.pyspark_daemon import bundled_archives


def _install(root: Path, py4j_version: str = "0.10.9.9") -> tuple[str, str]:
    """A pip-style install under ``root``: pyspark with its archives, and py4j."""
    (root / "pyspark" / "python" / "lib").mkdir(parents=True)
    (root / "pyspark" / "__init__.py").write_text("")
    (root / "py4j").mkdir()
    (root / "py4j" / "__init__.py").write_text("")
    (root / "py4j" / "version.py").write_text(f"__version__ = '{py4j_version}'\n")
    lib = root / "pyspark" / "python" / "lib"
    archives = (str(lib / "pyspark.zip"), str(lib / "py4j-0.10.9.9-src.zip"))
    for archive in archives:
        Path(archive).write_bytes(b"")
    return archives


def test_the_archives_inside_the_installed_package_come_off_the_path(tmp_path):
    pyspark_zip, py4j_zip = _install(tmp_path)
    path = [pyspark_zip, py4j_zip, str(tmp_path)]
    assert bundled_archives(path) == [pyspark_zip, py4j_zip]


def test_a_py4j_archive_of_another_version_stays(tmp_path):
    pyspark_zip, py4j_zip = _install(tmp_path, py4j_version="0.10.9.7")
    assert bundled_archives([pyspark_zip, py4j_zip, str(tmp_path)]) == [pyspark_zip]


def test_archives_of_another_installation_stay(tmp_path):
    _install(tmp_path / "site")
    other_pyspark, other_py4j = _install(tmp_path / "spark_home")
    path = [other_pyspark, other_py4j, str(tmp_path / "site")]
    assert bundled_archives(path) == []


def test_archives_stay_when_pyspark_is_found_only_in_them(tmp_path):
    pyspark_zip, py4j_zip = _install(tmp_path)
    assert bundled_archives([pyspark_zip, py4j_zip]) == []
