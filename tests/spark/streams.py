"""Generated input streams and the two engines run side by side on them."""

from __future__ import annotations

import datetime
import glob
import json
import random
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from sparktide.core.engine import simulate
from sparktide.job import Job
from sparktide.reader import job_records
from sparktide.time import SECOND, format_instant, parse_instant

BASE = parse_instant("2026-03-01T09:00:00Z")
#: Batch processing times: batch b is observed at BATCH0 + b * BATCH_STEP.
BATCH0 = parse_instant("2026-03-01T09:30:00Z")
BATCH_STEP = 7 * SECOND


def metrics_of_once_run(spark: Any, job: Job) -> list[dict[str, Any]]:
    """Run ``job`` once on Spark, a file per micro-batch, on :func:`clock`; its metrics
    records in batch order (nothing published)."""
    from sparktide.spark import run_job

    records: list[dict[str, Any]] = []
    run_job(
        job,
        once=True,
        spark=spark,
        max_files_per_trigger=1,
        clock=clock,
        on_metrics=records.append,
        publish=False,
    )
    return records


def clock(batch_id: int) -> int:
    """The processing-time schedule both engines are given."""
    return BATCH0 + batch_id * BATCH_STEP


def write_stream(
    directory: Path,
    *,
    seed: int,
    events: int = 120,
    files: int = 4,
    partitions: int = 2,
    devices: int = 4,
    malformed: int = 3,
    fmt: str = "jsonl",
    ctis: float = 0.0,
    intervals: bool = False,
    mixed: bool = False,
    edges: bool = False,
    readings: bool = False,
    duplicates: bool = False,
    epoch_ms: bool = False,
    nested_time: bool = False,
    nested_key: bool = False,
    device_as: str | None = None,
) -> None:
    """Write a telemetry stream with disorder, late and early bursts and bad lines.

    Arrival times increase through the files (files are read in name order); each
    device lives in one partition, as with keyed brokers. With ``ctis``, that share of
    the rows are CTIs (``"kind": "cti"``, a little behind their arrival; a third of them
    without a device); with ``intervals``, events carry an end time ``e``. With ``mixed``
    (JSON lines only), records also carry ``speed`` and ``lane`` of every JSON type (for
    filters and computed columns), drawn from a generator of their own: the rest of the
    stream is the same. With ``edges``, every event is a start edge (``"kind": "start"``,
    id ``eid``) and most get an end edge a few rows later (some before their start, some
    never); a few ends have no start and a few starts reuse an id still open. With
    ``readings`` (JSON lines only), records also carry ``readings`` (:func:`_readings`),
    from a third generator: the rest of the stream is the same. With ``duplicates``, a
    fourth generator repeats one event in four (same time, device and value, a new id)
    1 to 40 rows later, often in a later file. With ``epoch_ms``, a fifth generator
    writes most events' times ``t`` as epoch milliseconds (integers, some as integral
    floats such as ``1772355600000.0``), leaves some as ISO text, and spoils a few (a
    fraction of a millisecond, a number beyond year 9999). With ``nested_time``, a sixth
    generator moves most events' time into ``header.time`` (:func:`_nested_time`); with
    ``nested_key``, a seventh their device into ``meta.device`` (:func:`_nested_key`).
    With ``device_as`` (JSON lines), events name their device so instead of ``device``.
    """
    rng = random.Random(seed)
    other = random.Random(seed + 1)
    third = random.Random(seed + 2)
    fourth = random.Random(seed + 3)
    fifth = random.Random(seed + 4)
    sixth = random.Random(seed + 5)
    seventh = random.Random(seed + 6)
    directory.mkdir(parents=True, exist_ok=True)
    arrival = BASE
    lines: list[str] = []
    pending: list[tuple[int, dict[str, Any]]] = []  # end edges: (row to emit at, record)
    last_id: dict[int, Any] = {}
    for i in range(events):
        arrival += rng.choice([0, 0, 200_000, 1 * SECOND, 3 * SECOND, 9 * SECOND])
        for end in [p for p in pending if p[0] <= i]:
            end[1]["a"] = format_instant(arrival)
            lines.append(json.dumps(end[1]))
        pending = [p for p in pending if p[0] > i]
        device = rng.randrange(devices)
        if ctis and rng.random() < ctis:
            cti: dict[str, Any] = {
                "kind": "cti",
                "partition": device % partitions,
                "t": format_instant(arrival - rng.randrange(0, 20) * SECOND),
                "a": format_instant(arrival),
            }
            if rng.random() < 0.66:
                cti["device"] = f"d{device}"
            lines.append(json.dumps(cti))
            continue
        roll = rng.random()
        if roll < 0.08:
            lag = rng.randrange(30, 150) * SECOND  # late
        elif roll < 0.12:
            lag = -rng.randrange(6, 12) * 60 * SECOND  # early (clock skew)
        else:
            lag = rng.randrange(0, 12) * SECOND  # ordinary disorder
        record: dict[str, Any] = {
            "id": i,
            "device": f"d{device}",
            "partition": device % partitions,
            "t": format_instant(arrival - lag),
            "a": format_instant(arrival),
            # integers, floats (some integral: 3.0 must stay a float), nulls
            "value": rng.choice(
                [rng.randrange(0, 50), round(rng.uniform(0, 10), 2), float(i % 7), None]
            ),
        }
        if epoch_ms:
            record["t"] = _epoch_ms(fifth, arrival - lag, record["t"])
        if nested_time:
            record.update(_nested_time(sixth, record.pop("t")))
        if nested_key:
            record.update(_nested_key(seventh, record.pop("device")))
        if device_as is not None:
            record[device_as] = record.pop("device")
        if intervals:
            length = rng.choice([1, SECOND, 5 * SECOND, 20 * SECOND, 70 * SECOND])
            record["e"] = format_instant(arrival - lag + length)
        if mixed:
            record.update(_mixed(other))
        if readings:
            record.update(_readings(third))
        if edges:
            eid: Any = f"e{i}" if i % 3 else i
            if device in last_id and rng.random() < 0.06:
                eid = last_id[device]  # open still (a duplicate) or ended (reused)
            last_id[device] = eid
            record = {"kind": "start", "eid": eid, **record}
            fate = rng.random()
            if fate < 0.8:
                length = rng.choice([-5 * SECOND, 1, 4 * SECOND, 25 * SECOND, 80 * SECOND])
                end = {k: record[k] for k in ("device", "partition")}
                end.update(kind="end", eid=eid, t=format_instant(arrival - lag + length))
                pending.append((i + rng.randrange(1, 12), end))
            elif fate < 0.83:  # a malformed edge: no such kind, no id, an id of no type
                flaw = rng.choice([{"kind": "middle"}, {"eid": None}, {"eid": 2.5}, {"kind": 1}])
                lines.append(json.dumps({**record, **flaw}))
                continue
            elif fate < 0.88:  # an end edge with no start
                stray = {"kind": "end", "eid": f"x{i}", "device": record["device"]}
                stray.update(partition=record["partition"], t=record["t"], a=record["a"])
                lines.append(json.dumps(stray))
        lines.append(json.dumps(record))
        if duplicates and fourth.random() < 0.25:
            again = {**record, "id": f"dup{i}"}
            pending.append((i + fourth.randrange(1, 41), again))
    for _ in range(malformed):
        bad = rng.choice(
            [
                '{"id": 1, "t": "nope"',
                "[1, 2]",
                '{"device": "d0"}',
                '{"t": "2026-03-01T09:00:00", "a": "2026-03-01T09:00:00Z"}',
            ]
        )
        lines.insert(rng.randrange(len(lines)), bad)
    size = -(-len(lines) // files)
    for f in range(files):
        chunk = lines[f * size : (f + 1) * size]
        if fmt == "jsonl":
            (directory / f"part-{f:03d}.jsonl").write_text("\n".join(chunk) + "\n")
        elif fmt == "csv":
            (directory / f"part-{f:03d}.csv").write_text(_csv(chunk))
        else:
            # times as zone-aware timestamps in even files, as text in odd ones: both
            # Parquet routes (typed and JSON) and several schema groups in a batch
            _parquet(chunk, directory / f"part-{f:03d}.parquet", typed_times=f % 2 == 0)


def _epoch_ms(rng: random.Random, instant: int, text: str) -> Any:
    """A time as ``epoch_ms`` writes it (see :func:`write_stream`)."""
    roll, ms = rng.random(), instant // 1000
    if roll < 0.75:
        return ms
    if roll < 0.85:
        return text
    if roll < 0.93:
        return float(ms)
    if roll < 0.97:
        return ms + 0.5
    return 10**19


def _nested_time(rng: random.Random, text: str) -> dict[str, Any]:
    """A time as ``nested_time`` writes it (see :func:`write_stream`): mostly
    ``{"header": {"time": text}}``; some without the zone, some not a time, some with no
    header or a header that is no object, and some with the time left at the top."""
    roll = rng.random()
    if roll < 0.8:
        return {"header": {"time": text, "source": "gps"}}
    if roll < 0.86:
        return {"t": text}
    if roll < 0.9:
        return {"header": {"time": text.rstrip("Z")}}
    if roll < 0.94:
        return {"header": {"time": rng.choice(["soon", 17, None])}}
    return rng.choice([{}, {"header": "none"}, {"header": [text]}])


def _nested_key(rng: random.Random, device: str) -> dict[str, Any]:
    """A device as ``nested_key`` writes it (see :func:`write_stream`): mostly
    ``{"meta": {"device": device}}``, some as a number, some missing, an array or in a
    ``meta`` that is no object."""
    roll = rng.random()
    if roll < 0.85:
        return {"meta": {"device": device, "fw": rng.choice(["1.0", "1.1"])}}
    if roll < 0.9:
        return {"meta": {"device": int(device[1:])}}
    return rng.choice([{}, {"meta": {}}, {"meta": {"device": [device]}}, {"meta": device}])


_COLUMNS = ("id", "device", "partition", "t", "a", "value")


def _zoned(text: Any) -> datetime.datetime | None:
    """A zoned ISO time as a datetime; None for anything else."""
    try:
        value = datetime.datetime.fromisoformat(text)
    except (TypeError, ValueError):
        return None
    return value if value.tzinfo is not None else None


def _readings(rng: random.Random) -> dict[str, Any]:
    """``readings`` for ``[apply]``: an array or a record (of integers, floats, integral
    ones too, text, booleans, null, nested values), empty ones, null, text, or missing."""

    def value() -> Any:
        return rng.choice(
            [rng.randrange(0, 60), round(rng.uniform(0, 60), 2), 7.0, "x", True, None, [1]]
        )

    kind = rng.choice(["array", "array", "array", "record", "record", "empty", "other"])
    if kind == "array":
        return {"readings": [value() for _ in range(rng.randrange(1, 5))]}
    if kind == "record":
        names = rng.sample(
            ["temp", "hum", "co2", "Zeta", "a b", "\u00e9t\u00e9"], rng.randrange(1, 4)
        )
        return {"readings": {name: value() for name in names}}
    if kind == "empty":
        return {"readings": rng.choice([[], {}])}
    return rng.choice([{}, {"readings": None}, {"readings": "12"}, {"readings": 4}])


def _mixed(rng: random.Random) -> dict[str, Any]:
    """``speed`` and ``lane`` of mixed JSON types: integers, floats (integral ones too),
    an integer beyond 64 bits, text, booleans, null, arrays, or missing."""
    out: dict[str, Any] = {}
    speed = rng.choice(
        [
            rng.randrange(-20, 120),
            rng.randrange(0, 120),
            round(rng.uniform(0, 120), 2),
            float(rng.randrange(0, 120)),
            "fast",
            True,
            None,
            12345678901234567890123,
            "missing",
        ]
    )
    if speed != "missing":
        out["speed"] = speed
    lane = rng.choice(["A", "B", "a1", "A", "B", 1, 2.5, False, None, [1, 2], "missing"])
    if lane != "missing":
        out["lane"] = lane
    return out


def _csv(chunk: list[str]) -> str:
    """Records as CSV; a malformed JSON line becomes a row with too few cells."""
    rows = [",".join(_COLUMNS)]
    for line in chunk:
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            record = None
        if not isinstance(record, dict):
            rows.append('"broken, row",1')
            continue
        rows.append(",".join("" if record.get(c) is None else str(record.get(c)) for c in _COLUMNS))
    return "\n".join(rows) + "\n"


def _parquet(chunk: list[str], path: Path, *, typed_times: bool = False) -> None:
    """Parquet rows of the JSON objects in ``chunk``; with ``typed_times``, ``t`` and ``a``
    as UTC timestamps (a text that is not a zoned time becomes null)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    records = []
    for line in chunk:
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(record, dict):
            records.append({c: record.get(c) for c in _COLUMNS})
    for record in records:
        if isinstance(record["value"], int):
            record["value"] = float(record["value"])
        if typed_times:
            for column in ("t", "a"):
                record[column] = _zoned(record[column])
    time_type = pa.timestamp("us", tz="UTC") if typed_times else pa.string()
    schema = pa.schema(
        [
            ("id", pa.int64()),
            ("device", pa.string()),
            ("partition", pa.int64()),
            ("t", time_type),
            ("a", time_type),
            ("value", pa.float64()),
        ]
    )
    pq.write_table(pa.Table.from_pylist(records, schema=schema), path)


def job_for(directory: Path, tables: dict[str, Any]) -> Job:
    """A job reading ``directory/in`` and writing under ``directory/out``."""
    data = json.loads(json.dumps(tables))
    if "inputs" in data:  # a union: input <name> reads in/<name>
        for name, table in data["inputs"].items():
            table.setdefault("path", f"in/{name}")
            if table.get("reference"):  # reference data: a table without time
                continue
            table.setdefault("timestamp_by", "t")
            table.setdefault("arrival_time", "a")
    else:
        data.setdefault("source", {})
        data["source"].setdefault("path", "in")
        data["source"].setdefault("timestamp_by", "t")
        data["source"].setdefault("arrival_time", "a")
    data["output"] = {
        "path": "out/results",
        "dead_letter": "out/dead_letter",
        "metrics": "out/metrics",
        "checkpoint": "out/checkpoint",
    }
    return Job.from_dict(data, base_dir=directory)


def file_batches(checkpoint: str) -> dict[str, int]:
    """Which micro-batch read each file, from Spark's file-source logs and offsets.

    A file source numbers its own log entries (``batchId``: one per listing that found
    files); the query's offsets log says which query batch reached which of them (they
    differ once batches without data run, as a continuous run's do)."""
    out: dict[str, int] = {}
    reached = _source_offsets(checkpoint)
    for path in glob.glob(f"{checkpoint}/spark/sources/*/*"):  # (a union: one per input)
        if not Path(path).name.isdigit():
            continue
        source = int(Path(path).parent.name)
        for line in Path(path).read_text().splitlines()[1:]:
            entry = json.loads(line)
            if not isinstance(entry, dict) or "path" not in entry:  # (not a file log)
                continue
            logged = int(entry["batchId"])
            batch = min(b for b, offsets in reached.items() if offsets.get(source, -1) >= logged)
            # the log holds URIs: "a b.jsonl" is "a%20b.jsonl" there
            *_, folder, name = (unquote(part) for part in entry["path"].rsplit("/", 2))
            out[name] = batch
            out[f"{folder}/{name}"] = batch  # a union's <input>/<file>
    return out


def _source_offsets(checkpoint: str) -> dict[int, dict[int, int]]:
    """Each query batch's file-source offsets (``logOffset``), by source index."""
    out: dict[int, dict[int, int]] = {}
    for path in glob.glob(f"{checkpoint}/spark/offsets/*"):
        if not Path(path).name.isdigit():
            continue
        lines = Path(path).read_text().splitlines()[2:]  # (after the version, metadata)
        offsets = {}
        for source, line in enumerate(lines):
            if line.strip().startswith("{") and "logOffset" in line:
                offsets[source] = int(json.loads(line)["logOffset"])
        out[int(Path(path).name)] = offsets
    return out


def read_output(directory: str) -> list[dict[str, Any]]:
    """Records written by the Spark engine (``batch=<id>/flush=<0|1>/*.jsonl``): the
    batches' in batch order, then the flushes', each in file order."""
    records = []
    for path in sorted(glob.glob(f"{directory}/batch=*/flush=*/*.jsonl")):
        flush, batch = Path(path).parent.name, Path(path).parent.parent.name
        for line in Path(path).read_text().split("\n"):  # not splitlines: U+2028 is text
            if line.strip():
                records.append((flush, batch, json.loads(line)))
    records.sort(key=lambda r: (r[0], r[1]))
    return [r[2] for r in records]


def reference(job: Job, batches: dict[str, int], *, flush: bool = True):
    """The reference engine on the same input, observed at the Spark batches' times."""
    records = job_records(job)
    for record in records:
        if not record.malformed:
            record.processing_time = clock(batches[record.file])
    return simulate(job, records, flush=flush, timers_at_due=False)


def strip(record: dict[str, Any], *names: str) -> dict[str, Any]:
    """``record`` without the named keys."""
    return {k: v for k, v in record.items() if k not in names}


#: The ``bands`` table (:func:`write_reference`): by the events' ``partition`` (``part``),
#: two rows for 0, one for 1 and 2, a text ``"2"`` (no match) and a row without
#: ``part``. (No integral float: a row written whole nests it, which Spark writes ``2``,
#: docs/design.md *Known limits*.)
BANDS = [
    {"part": 0, "band": "low"},
    {"part": 1, "band": "mid"},
    {"band": "none"},
    {"part": 0, "band": "low-b"},
    {"part": "2", "band": "text"},
    {"part": 2, "band": "high"},
]


def write_reference(directory: Path, fmt: str = "csv", table: str = "devices") -> None:
    """Reference data for the devices of :func:`write_stream` (``d0`` … ``d3``): ``d1``
    has two rows, ``d3`` none, one row names a device no event has, and ``rank`` mixes
    integers and floats (CSV: as the reader types them). JSON lines name the device
    ``unit`` (joined by ``on = [["device", "unit"]]``), CSV ``device``. ``table =
    "bands"``: :data:`BANDS` as JSON lines."""
    directory.mkdir(parents=True, exist_ok=True)
    if table == "bands":
        (directory / "bands.jsonl").write_text("".join(json.dumps(r) + "\n" for r in BANDS))
        return
    rows = [
        {"device": "d0", "model": "TX-100", "rank": 1},
        {"device": "d1", "model": "TX-200", "rank": 2.5},
        {"device": "d7", "model": "spare", "rank": 0},
        {"device": "d1", "model": "TX-200b", "rank": 3},
        {"device": "d2", "model": 'TX, "quoted"', "rank": -1},
    ]
    if fmt == "csv":
        lines = ["device,model,rank"]
        for row in rows:
            model = '"' + str(row["model"]).replace('"', '""') + '"'
            lines.append(f"{row['device']},{model},{row['rank']}")
        (directory / "devices.csv").write_text("\n".join(lines) + "\n")
    else:
        units = [
            {"unit": r["device"], **{k: v for k, v in r.items() if k != "device"}} for r in rows
        ]
        (directory / "devices.jsonl").write_text("".join(json.dumps(r) + "\n" for r in units))
