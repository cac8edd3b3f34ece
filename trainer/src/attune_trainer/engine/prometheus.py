"""The trainer's Prometheus metrics (`GET /metrics`, text format 0.0.4, written by hand: the
trainer depends on no metrics package): steps and their time, tokens trained and per second,
process memory (RSS) and, on CUDA, the device memory torch holds."""

from __future__ import annotations

import os
import resource
import threading

import torch

# seconds per step: a tiny CPU model takes well under a second, a 7B model on one GPU minutes
STEP_SECONDS_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0)

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class TrainerMetrics:
    """Counters and the step-time histogram; the step applier records, /metrics renders."""

    def __init__(self):
        self._lock = threading.Lock()
        self.steps = {"applied": 0, "failed": 0}
        self.completion_tokens = 0
        self.prompt_tokens = 0
        self.bucket_counts = [0] * len(STEP_SECONDS_BUCKETS)
        self.seconds_sum = 0.0
        self.last_step_seconds = 0.0
        self.last_tokens_per_second = 0.0

    def step_applied(self, metrics: dict) -> None:
        seconds = float(metrics.get("seconds") or 0.0)
        tokens = int(metrics.get("tokens") or 0)
        with self._lock:
            self.steps["applied"] += 1
            self.completion_tokens += tokens
            self.prompt_tokens += int(metrics.get("prompt_tokens") or 0)
            self.seconds_sum += seconds
            for i, bound in enumerate(STEP_SECONDS_BUCKETS):
                if seconds <= bound:
                    self.bucket_counts[i] += 1
            self.last_step_seconds = seconds
            self.last_tokens_per_second = tokens / seconds if seconds > 0 else 0.0

    def step_failed(self) -> None:
        with self._lock:
            self.steps["failed"] += 1

    def render(self) -> str:
        with self._lock:
            lines = _counter("attune_trainer_steps_total", "optimizer steps by outcome", self.steps, "outcome")
            lines += [
                *_histogram_lines(self.bucket_counts, self.steps["applied"], self.seconds_sum),
                *_single(
                    "attune_trainer_step_seconds_last",
                    "gauge",
                    "seconds of the last applied step",
                    self.last_step_seconds,
                ),
                *_single(
                    "attune_trainer_completion_tokens_total",
                    "counter",
                    "completion tokens trained on",
                    self.completion_tokens,
                ),
                *_single(
                    "attune_trainer_prompt_tokens_total",
                    "counter",
                    "prompt tokens of the samples trained on",
                    self.prompt_tokens,
                ),
                *_single(
                    "attune_trainer_tokens_per_second",
                    "gauge",
                    "completion tokens per second of the last applied step",
                    self.last_tokens_per_second,
                ),
            ]
        lines += _single(
            "attune_trainer_resident_memory_bytes",
            "gauge",
            "resident set size of this process",
            resident_memory_bytes(),
        )
        lines += _cuda_memory()
        return "\n".join(lines) + "\n"


def _single(name: str, kind: str, help_: str, value: float) -> list[str]:
    return [f"# HELP {name} {help_}", f"# TYPE {name} {kind}", f"{name} {_number(value)}"]


def _counter(name: str, help_: str, values: dict, label: str) -> list[str]:
    lines = [f"# HELP {name} {help_}", f"# TYPE {name} counter"]
    lines += [f'{name}{{{label}="{key}"}} {_number(value)}' for key, value in values.items()]
    return lines


def _histogram_lines(bucket_counts: list[int], count: int, total: float) -> list[str]:
    name = "attune_trainer_step_seconds"
    lines = [f"# HELP {name} seconds per applied step (update and checkpoint)", f"# TYPE {name} histogram"]
    lines += [
        f'{name}_bucket{{le="{_number(b)}"}} {n}' for b, n in zip(STEP_SECONDS_BUCKETS, bucket_counts, strict=True)
    ]
    return [*lines, f'{name}_bucket{{le="+Inf"}} {count}', f"{name}_sum {_number(total)}", f"{name}_count {count}"]


def _cuda_memory() -> list[str]:
    if not torch.cuda.is_available() or not torch.cuda.is_initialized():
        return []
    series = {
        "attune_trainer_cuda_memory_allocated_bytes": ("memory held by tensors", torch.cuda.memory_allocated),
        "attune_trainer_cuda_memory_reserved_bytes": (
            "memory held by the caching allocator",
            torch.cuda.memory_reserved,
        ),
        "attune_trainer_cuda_memory_max_allocated_bytes": (
            "peak memory held by tensors",
            torch.cuda.max_memory_allocated,
        ),
    }
    lines = []
    for name, (help_, read) in series.items():
        lines += [f"# HELP {name} CUDA {help_}", f"# TYPE {name} gauge"]
        lines += [f'{name}{{device="{d}"}} {read(d)}' for d in range(torch.cuda.device_count())]
    return lines


def resident_memory_bytes() -> int:
    """Current RSS from /proc (Linux); elsewhere the peak RSS, which is what getrusage offers."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak if os.uname().sysname == "Darwin" else peak * 1024


def _number(value: float) -> str:
    return repr(float(value)) if isinstance(value, float) else str(value)
