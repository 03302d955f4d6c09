"""The suite's CPU report (tests/support/cpu_report.py; ``make test`` prints it with ``--cpu-files 15``)."""

import subprocess
import sys

from support import cpu_report


def test_a_waited_for_childs_cpu_is_counted():
    start = cpu_report.cpu_seconds()
    subprocess.run([sys.executable, "-c", "import time\nend = time.process_time() + 0.3\n"
                    "while time.process_time() < end: pass"], check=True)
    assert cpu_report.cpu_seconds() - start >= 0.25


def test_the_workers_ledgers_add_up_and_the_costliest_file_comes_first():
    controller, worker_a, worker_b = cpu_report.Ledger(), cpu_report.Ledger(), cpu_report.Ledger()
    worker_a.add("tests/a.py", 2.0)
    worker_a.add("tests/a.py", 1.0)
    worker_b.add("tests/b.py", 5.0)
    worker_b.add("tests/c.py", 2.0)
    for worker in (worker_a, worker_b):
        controller.merge(worker.dumps())
    lines = controller.lines(2)
    assert lines[0] == "10 CPU-s in 3 test files (the tests' processes and their children)"
    assert lines[1].split() == ["5.0", "s", "50.0", "%", "1", "tests", "tests/b.py"]
    assert lines[2].split() == ["3.0", "s", "30.0", "%", "2", "tests", "tests/a.py"]
    assert len(lines) == 3
    assert cpu_report.Ledger().lines(5) == ["0 CPU-s in 0 test files (the tests' processes and their children)"]


def test_the_script_jobs_line_says_how_many_were_forked_and_why_others_were_not():
    from collections import Counter

    from support.forked_jobs import summary

    line = summary(Counter({"forked": 470, "servers started": 2, "a matplotlibrc in the working directory": 1}))
    assert line.startswith("script jobs: 470 forked from 2 servers")
    assert line.endswith("started as processes of their own: 1 (1 a matplotlibrc in the working directory)")
    assert summary(Counter()).endswith("started as processes of their own: 0 (none)")
    line = summary(Counter({"forked": 3, "servers started": 1, "servers that failed to start": 1,
                            "their server failed to start (it warned)": 2, "a start-up environment past the 4 "
                            "servers'": 1}))
    assert "(tests/support/forked_jobs.py; 1 failed to start)" in line
    assert line.endswith("started as processes of their own: 3 (1 a start-up environment past the 4 servers'; "
                         "2 their server failed to start (it warned))")
