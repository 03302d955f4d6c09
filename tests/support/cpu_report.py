"""Each test file's CPU time: the test process's own and its children's (the Snakemake jobs, servers and browsers
a test started and waited for), summed over pytest-xdist's workers; ``make test`` prints the costliest files
(``--cpu-files N``, tests/conftest.py).

On two cores the suite is CPU-bound (docs/benchmarks.md, "sixth look"): a test's wall time also holds what the
other worker took from it, its CPU time does not, so a file that grew shows here first. A server or browser a
module's fixture started is counted at the test during which it was reaped, inside its file's total.
"""

from __future__ import annotations

import json
import os


def cpu_seconds() -> float:
    """User and system CPU seconds of this process, of the children it has waited for and of the script jobs'
    servers (:mod:`support.forked_jobs`: a server reaps its jobs; its start-up and their CPU count here until the
    server itself is reaped)."""
    from support.forked_jobs import forked_cpu_seconds

    t = os.times()
    return t.user + t.system + t.children_user + t.children_system + forked_cpu_seconds()


class Ledger:
    """CPU seconds and tests per test file; a worker's ledger travels to the controller as JSON."""

    def __init__(self):
        self.by_file: dict[str, list] = {}

    def add(self, path: str, seconds: float, tests: int = 1) -> None:
        entry = self.by_file.setdefault(path, [0.0, 0])
        entry[0] += seconds
        entry[1] += tests

    def dumps(self) -> str:
        return json.dumps(self.by_file)

    def merge(self, text: str) -> None:
        for path, (seconds, tests) in json.loads(text).items():
            self.add(path, seconds, tests)

    def lines(self, top: int) -> list[str]:
        """The ``top`` costliest files, most first, after a line with the total."""
        total = sum(seconds for seconds, _ in self.by_file.values())
        rows = sorted(self.by_file.items(), key=lambda kv: (-kv[1][0], kv[0]))[:top]
        share = (lambda s: f"{100 * s / total:5.1f} %") if total else (lambda s: "    - ")
        return [f"{total:.0f} CPU-s in {len(self.by_file)} test files (the tests' processes and their children)",
                *(f"{seconds:8.1f} s {share(seconds)} {tests:5d} tests  {path}" for path, (seconds, tests) in rows)]
