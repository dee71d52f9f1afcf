"""Charts of a reference run's decisions: ``sparktide explain JOB.toml --plot chart.png``.

The chart follows the watermark illustrations of the Azure Stream Analytics
documentation: arrival time across (or processing time, ``x="processing"``), event time
up. Every well-formed input record is a point at (arrival time, event time), coloured by
its verdict; an adjusted event has an arrow from its event time up to its new system
timestamp. Each timeline's watermark (one per partition, or per substream key; the
busiest ones when there are many) is a step line traced from the engine after every
observation instant, so idle estimates and timers show; a merged job with several
partitions also gets its job watermark (the minimum). Windows are light horizontal bands
(they are intervals of system time): the window grid for tumbling and hopping windows,
the emitted windows' bounds for the others.

Above :data:`~sparktide.plot.style.LAG_PANEL_MIN` events a second panel shows the same
points and lines as their distance from the time across (event time − arrival time,
symmetric-log seconds): at 20,000 events the first panel is a diagonal, the second shows
the jitter, the late backlogs and each watermark's lag.

Times stay integer microseconds until the very edge, where instants become matplotlib
dates. matplotlib is imported lazily: importing this package costs nothing.

The package: :mod:`~sparktide.plot.trace` runs the job (:func:`explain_run`) into
:mod:`~sparktide.plot.data`; :mod:`~sparktide.plot.chart` draws it (:func:`draw_chart`)
in steps: :mod:`~sparktide.plot.layout` (figure, ranges, axes),
:mod:`~sparktide.plot.windows` (bands), :mod:`~sparktide.plot.lines` (guides,
watermarks), :mod:`~sparktide.plot.events` (points, arrows, labels),
:mod:`~sparktide.plot.lag` (the second panel), :mod:`~sparktide.plot.texts` (title,
legend), with :mod:`~sparktide.plot.style`; :mod:`~sparktide.plot.output` writes it.
"""

from sparktide.plot.chart import draw_chart
from sparktide.plot.data import VERDICTS, ChartData
from sparktide.plot.output import CHART_SUFFIXES, check_chart_path, save_chart
from sparktide.plot.texts import policy_text
from sparktide.plot.trace import X_AXES, explain_run

__all__ = [
    "CHART_SUFFIXES",
    "VERDICTS",
    "X_AXES",
    "ChartData",
    "check_chart_path",
    "draw_chart",
    "explain_run",
    "policy_text",
    "save_chart",
]
