"""Benchmarks only: when ROCKETMQ_BENCH_STEPS_FILE is set, every ``trio.run`` in this process gets
an instrument that measures the loop thread's CPU time of each task step (time.thread_time:
what the loop itself spent, not time the machine gave to other processes) and writes the
longest ones to that file. bench_metrics puts this directory on the broker's PYTHONPATH to
report the longest hold of the event loop on a shared, loaded machine, where a wall-clock
lateness mostly measures the other processes. Never imported by the product."""

from __future__ import annotations

import json
import os
import time

_PATH = os.environ.get("ROCKETMQ_BENCH_STEPS_FILE")

if _PATH:
    import gc
    import threading

    import trio

    class _Steps(trio.abc.Instrument):
        def __init__(self) -> None:
            self.started = 0.0
            self.top: list[tuple[float, str]] = []
            self.thread = threading.get_ident()  # trio.run's: the loop thread

        def before_task_step(self, task) -> None:  # type: ignore[no-untyped-def]
            self.started = time.thread_time()

        def after_task_step(self, task) -> None:  # type: ignore[no-untyped-def]
            self.record(time.thread_time() - self.started, task.name)

        def record(self, cpu: float, name: str) -> None:
            if cpu <= 0.01:
                return
            if self.top and not os.path.exists(_PATH):  # the bench removed it: start again
                self.top = []
            if len(self.top) < 10 or cpu > self.top[-1][0]:
                self.top = sorted([*self.top, (cpu, name)], reverse=True)[:10]
                with open(_PATH, "w") as f:
                    json.dump(self.top, f)

    _gc_started: dict[int, float] = {}
    _gc_steps: list[_Steps] = []

    def _on_gc(phase: str, info: dict) -> None:
        # a full collection on the loop thread, listed beside the steps (it runs inside one of
        # them, which is then listed with it); collections in worker threads hold no loop
        if info["generation"] != 2 or not _gc_steps:
            return
        steps = _gc_steps[-1]
        if threading.get_ident() != steps.thread:
            return
        if phase == "start":
            _gc_started[steps.thread] = time.thread_time()
        elif steps.thread in _gc_started:
            cpu = time.thread_time() - _gc_started.pop(steps.thread)
            steps.record(cpu, "gc.full_collection.gen2")

    gc.callbacks.append(_on_gc)

    _run = trio.run

    def _instrumented_run(*args, **kwargs):  # type: ignore[no-untyped-def]
        steps = _Steps()
        _gc_steps.append(steps)
        kwargs["instruments"] = [*kwargs.get("instruments", ()), steps]
        return _run(*args, **kwargs)

    trio.run = _instrumented_run
