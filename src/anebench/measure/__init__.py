"""Timing loop, warmup policy, statistics and output checks, shared by every engine."""
