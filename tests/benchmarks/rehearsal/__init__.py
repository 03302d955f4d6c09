"""The parts of tests/benchmarks/bench_rehearsal.py: common, monitor, runner, phases, compare, report."""
