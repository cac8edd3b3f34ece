"""A benchmark knob: every optimizer step takes at least `min_seconds`, as it would with a bigger model
on a slower device, so a benchmark can set the ratio of optimizer time to rollout time with the tiny
model. Off (0) unless `serve --min-step-seconds` or `ATTUNE_TRAINER_MIN_STEP_SECONDS` sets it.

The step waits out the rest of its time inside the step, with the engine lock held: a real step
occupies the device for that long, so sampling from the trainer waits for it as it would then.
"""

from __future__ import annotations

import time
from collections.abc import Callable

ENV = "ATTUNE_TRAINER_MIN_STEP_SECONDS"


class StepPad:
    def __init__(
        self,
        min_seconds: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ):
        if not min_seconds >= 0:  # also refuses NaN
            raise ValueError(f"min_step_seconds must be >= 0, got {min_seconds}")
        self.min_seconds = float(min_seconds)
        # The clock and the wait are the pad's own, so a test can time a step without the machine's load.
        self.clock = clock
        self.sleep = sleep

    def hold(self, started: float) -> float:
        """Waits until `min_seconds` after `started` (a reading of `clock`); returns the seconds waited."""
        if self.min_seconds <= 0:
            return 0.0
        left = self.min_seconds - (self.clock() - started)
        if left <= 0:
            return 0.0
        self.sleep(left)
        return left
