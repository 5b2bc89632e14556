"""Suites beyond one number: size sweep, roofline, latency, compute and concurrency.

Each suite measures through ``session.measure_workload`` (so every record is made the same way, device
time included) and returns its records plus an analysis; the CLI only prints and plots.
"""
