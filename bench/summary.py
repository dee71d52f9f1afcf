"""One summary table of the benchmarks' JSON results in ``bench/results/``.

It measures nothing itself: it reads what ``make bench`` wrote —
``reference_engine.json`` (events/s), ``spark_vs_plain.json`` and
``spark_vs_plain_partition.json`` (events/s and the ratio to plain Spark; with
``--repeat``, each configuration's median ratio),
``latency.json`` (window latency, median / p95) and ``memory.json`` (heap after GC and
state size after 1, 10 and 50 micro-batches) — and prints one table; a missing or
unreadable file is reported as such.

Usage::

    .venv/bin/python bench/summary.py [--results DIR]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
MB = 1 << 20


def _load(directory: Path, name: str) -> dict[str, Any] | None:
    try:
        return json.loads((directory / name).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def rows(directory: Path) -> list[tuple[str, str, str]]:
    """(benchmark, measure, figure) rows."""
    out: list[tuple[str, str, str]] = []
    reference = _load(directory, "reference_engine.json")
    if reference is None:
        out.append(("reference engine", "-", "no reference_engine.json"))
    else:
        for r in reference.get("results", []):
            out.append(
                (
                    "reference engine",
                    f"{r['measure']}, {r['timelines']}",
                    f"{r['events_per_s']:,.0f} events/s",
                )
            )
    for name, label in (
        ("spark_vs_plain.json", "spark vs plain"),
        ("spark_vs_plain_partition.json", "spark vs plain, a partition per file"),
    ):
        spark = _load(directory, name)
        if spark is None:
            out.append((label, "-", f"no {name}"))
            continue
        for r in spark.get("results", []):
            ratio = f", {r['ratio_vs_plain']:.2f}x plain" if r.get("ratio_vs_plain") else ""
            batches = f", {r['batches']} batch(es)" if r.get("batches") else ""
            out.append(
                (
                    label,
                    f"{r['keys']:,} keys{batches}, {r['query']}",
                    f"{r['events_per_s']:,.0f} events/s{ratio}",
                )
            )
        for r in spark.get("ratios", []):  # (with --repeat: each configuration's runs)
            if r["runs"] > 1:
                out.append(
                    (
                        label,
                        f"{r['keys']:,} keys, {r['batches']} batch(es), {r['query']}",
                        f"median {r['median']:.2f}x plain ({r['low']:.2f}-{r['high']:.2f}, "
                        f"{r['runs']} runs)",
                    )
                )
    latency = _load(directory, "latency.json")
    if latency is None:
        out.append(("latency", "-", "no latency.json"))
    else:
        ratios = latency.get("ratios", {})
        for run in latency.get("runs", []):
            for key, label in (
                ("seen_after_end_plus_5s_s", "seen - (window end + 5 s)"),
                ("seen_after_watermark_s", "seen - own watermark passes end"),
                ("seen_after_end_s", "seen - window end"),
            ):
                s = run["summary"][key]
                figure = (
                    f"median {s['median']:.2f} s, p95 {s['p95']:.2f} s (n={s['n']})"
                    if s.get("n")
                    else "not measured"
                )
                if run["engine"] == "sparktide" and ratios.get(key):
                    figure += f", {ratios[key]:.2f}x plain"
                out.append(("latency (1 s trigger)", f"{run['engine']}: {label}", figure))
    memory = _load(directory, "memory.json")
    if memory is None:
        out.append(("memory", "-", "no memory.json"))
    else:
        at = memory.get("settings", {}).get("at", [])
        for run in memory.get("runs", []):
            for r in run["per_batch"]:
                if r["batches"] in at and "heap_used" in r:
                    out.append(
                        (
                            "memory",
                            f"{run['config']}, after {r['batches']} batches",
                            f"heap {r['heap_used'] / MB:.0f} MB, JVM peak RSS "
                            f"{r['jvm_peak_rss'] / MB:.0f} MB, state "
                            f"{r['state_bytes'] / 1e3:.0f} kB ({r['state_rows']:,} rows)",
                        )
                    )
    return out


def print_summary(directory: Path, out: Any = sys.stdout) -> None:
    table = rows(directory)
    widths = [max(len(r[i]) for r in table) for i in range(3)]
    print("\nbenchmark summary (bench/results/*.json)", file=out)
    print("  ".join("-" * w for w in widths), file=out)
    for r in table:
        print("  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)), file=out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", type=Path, default=ROOT / "results")
    args = parser.parse_args(argv)
    print_summary(args.results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
