"""Seconds to recover a full-weight tiny-random run killed three steps past a snapshot (every 5, 8
steps): a new engine on its state directory loads snapshot 5 and replays steps 6-8; three times.

    .venv/bin/python bench/trainer/recovery_time.py [TRAINER_SRC]   # default: this tree's trainer/src

With the source tree of another commit (`git archive <commit> trainer/src | tar -x -C /tmp/x`), the
same run as that trainer wrote and loaded it: a back-to-back comparison on the same load.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SRC = sys.argv[1] if len(sys.argv) > 1 else str(ROOT / "trainer" / "src")
sys.path.insert(0, SRC)
sys.path.insert(1, str(Path(__file__).resolve().parent))


def main() -> None:
    import torch
    from attune_trainer.engine.engine import Engine

    from bench import synthetic_batch

    torch.set_num_threads(1)
    samples = synthetic_batch(8, 24, 16, 4)
    state = Path(tempfile.mkdtemp(prefix="recovery-")) / "state"
    engine = Engine(state, device="cpu")
    hp = {"learning_rate": 1e-6, "micro_batch_size": 4, "snapshot_every": 5}
    engine.create_run({"run_id": "b", "base_model": "tiny-random", "algorithm": "grpo", "lora": None, "seed": 1,
                       "hyperparameters": hp})
    for step in range(1, 9):
        engine.apply_step("b", {"step": step, "samples": samples})
    if hasattr(engine, "close"):
        engine.close()  # a background snapshot write finishes
    engine.state_lock.release()
    seconds = []
    for _ in range(3):
        recovered = Engine(state, device="cpu")
        t0 = time.perf_counter()
        assert recovered.runs.ensure_loaded("b").step == 8
        seconds.append(round(time.perf_counter() - t0, 3))
        recovered.state_lock.release()
    print(f"{SRC}: recovery seconds {seconds}")


if __name__ == "__main__":
    main()
