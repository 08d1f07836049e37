"""A small benchmark harness: cases timed per call, median and p99, ratio to an in-run baseline.

Machines (and this shared 2-core box especially) are noisy, so absolute microseconds are
only half the story: every benchmark module measures a *baseline* case in the same run
(a copy of the same state, an echo RPC, ...) and the table shows each case as a multiple
of it. A module exposes ``run(report: Report) -> None`` and calls :meth:`Report.time_calls`
once per case, baseline first.

Timing: each sample is ``inner`` calls timed together with ``perf_counter_ns`` and divided
by ``inner``; with ``inner=1`` (the default) the p99 is the p99 of single calls. The
garbage collector stays on (a server runs with it) but is emptied before each case.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TextIO


@dataclass(frozen=True, slots=True)
class CaseResult:
    suite: str
    name: str
    samples: int
    median_us: float
    p99_us: float
    mean_us: float
    baseline: str | None  # the case this one is compared with (None for a baseline)
    ratio: float | None  # median / baseline median


def percentile(sorted_values: Sequence[float], pct: float) -> float:
    """Nearest-rank percentile of already sorted values."""
    if not sorted_values:
        raise ValueError("no samples")
    rank = max(1, min(len(sorted_values), -int(-pct * len(sorted_values) // 100)))
    return sorted_values[rank - 1]


@dataclass(slots=True)
class Report:
    """Collects the cases of one or more suites and prints one table per suite."""

    out: TextIO
    scale: float = 1.0  # multiplies every sample count (``--quick`` runs use less than 1)
    results: list[CaseResult] = field(default_factory=list)
    _suite: str = ""
    _baseline: CaseResult | None = None
    _header_printed: bool = False

    def begin_suite(self, suite: str, description: str) -> None:
        self._suite = suite
        self._baseline = None
        self._header_printed = False
        self.out.write(f"\n== {suite}: {description} ==\n")
        self.out.flush()

    def note(self, text: str) -> None:
        self.out.write(f"   {text}\n")

    def add_figure(
        self, name: str, us: float, samples: int, base: CaseResult | None, suite: str | None = None
    ) -> CaseResult:
        """Record a figure measured otherwise than by :meth:`time_calls` (CPU time per call, say):
        ``us`` is its median, p99 and mean alike; ``base`` the case it is a multiple of; ``suite``
        the current one unless given."""
        result = CaseResult(
            suite=self._suite if suite is None else suite,
            name=name,
            samples=samples,
            median_us=us,
            p99_us=us,
            mean_us=us,
            baseline=None if base is None else base.name,
            ratio=None if base is None else us / base.median_us,
        )
        self.results.append(result)
        return result

    def samples(self, wanted: int) -> int:
        return max(20, int(wanted * self.scale))

    def time_calls(
        self,
        name: str,
        make_call: Callable[[int], Callable[[], object]],
        *,
        samples: int,
        inner: int = 1,
        warmup: int = 50,
        baseline: bool = False,
    ) -> CaseResult:
        """Time ``samples`` samples of ``inner`` calls each and record the case.

        ``make_call(i)`` returns the i-th call to make (prepared outside the timing), so a
        case can cycle through many different inputs; building it is not timed.
        ``baseline=True`` makes this the case the following ones are compared with.
        """
        count = self.samples(samples)
        for i in range(min(warmup, count)):
            make_call(i)()
        gc.collect()
        per_call_ns: list[float] = []
        clock = time.perf_counter_ns
        for i in range(count):
            calls = [make_call(i * inner + k) for k in range(inner)]
            if inner == 1:
                call = calls[0]
                start = clock()
                call()
                per_call_ns.append(clock() - start)
            else:
                start = clock()
                for call in calls:
                    call()
                per_call_ns.append((clock() - start) / inner)
        per_call_ns.sort()
        median = percentile(per_call_ns, 50) / 1000
        reference = self._baseline
        result = CaseResult(
            suite=self._suite,
            name=name,
            samples=count,
            median_us=median,
            p99_us=percentile(per_call_ns, 99) / 1000,
            mean_us=sum(per_call_ns) / len(per_call_ns) / 1000,
            baseline=None if baseline or reference is None else reference.name,
            ratio=None if baseline or reference is None else median / reference.median_us,
        )
        if baseline:
            self._baseline = result
        self.results.append(result)
        self._print_row(result)
        return result

    def _print_header(self) -> None:
        self._header_printed = True
        self.out.write(f"   {'case':<44} {'samples':>8} {'median µs':>10} {'p99 µs':>9} {'vs base':>8}\n")

    def _print_row(self, r: CaseResult) -> None:
        if not self._header_printed:
            self._print_header()
        if r.ratio is not None:
            ratio = f"{r.ratio:7.1f}×"
        elif r.baseline is None and self._baseline is r:
            ratio = "   base"
        else:
            ratio = "       -"
        self.out.write(f"   {r.name:<44} {r.samples:>8} {r.median_us:>10.2f} {r.p99_us:>9.2f} {ratio:>8}\n")
        self.out.flush()
