"""Orchestration: running measurements end to end (the concurrency runner and its plan, the keep-awake
helper process); it uses the timing core and analyses of ``measure`` and never the reverse."""
