"""Job files: reading a TOML job file into a :class:`~sparktide.job.model.Job`."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from sparktide.errors import ConfigError
from sparktide.job.model import Job

__all__ = ["load_job", "read_toml"]


def load_job(path: str | Path) -> Job:
    """Read and validate a TOML job file; relative paths are taken from the file's folder.

    Raises
    ------
    ConfigError
        If the file is missing, not TOML, or any key is wrong.
    """
    job_path = Path(path)
    return Job.from_dict(read_toml(job_path), base_dir=job_path.resolve().parent)


def read_toml(job_path: Path) -> dict[str, Any]:
    """The tables of the TOML file ``job_path`` (a :class:`ConfigError` if it cannot be
    read or is not TOML)."""
    try:
        raw = job_path.read_bytes()
    except OSError as exc:
        raise ConfigError("", f"cannot read job file {str(job_path)!r}: {exc.strerror}") from None
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError("", f"job file {str(job_path)!r} is not valid TOML: {exc}") from None
