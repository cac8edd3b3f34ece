"""Durable steps by a log (issue 43), measured on CPU: full fine-tuning (GRPO) with a snapshot every
1, 5 and 10 steps, against what a step's checkpoint wrote before (the snapshot's files plus the
tokenizer, which snapshots now hard-link from the run's own copy, and no log entry).

For each setting: seconds per step with and without a snapshot, bytes written per step (log entry,
snapshot, export), disk left after the run, and the time to recover a run killed three steps past a
snapshot (a new engine on the same state directory: load the snapshot, replay the logged steps).

    .venv/bin/python bench/trainer/step_log.py                       # smollm2-135m, 30 steps
    .venv/bin/python bench/trainer/step_log.py --model tiny-random --steps 12

Writes bench/results/trainer-step-log.json (tiny-random: trainer-step-log-tiny.json; `--out` names another).
The sharded-snapshot figures of docs/measured.md are in bench/results/trainer-step-log-sharded-*.json.

`--src DIR` measures another trainer source tree, e.g. the one before sharded asynchronous snapshots
(issue 43: rank 0 gathered the full state and wrote it within the step):

    mkdir -p before && git archive <commit> trainer/src | tar -x -C before
    .venv/bin/python bench/trainer/step_log.py --src before/trainer/src --out trainer-step-log-before.json

Full-weight snapshots are now written in the background: a step's `snapshot_seconds` is what it
waited (staging the state to CPU), `write_seconds` the background write (from the snapshot's marker),
and `snapshot_disk_bytes` what the snapshot holds on disk.
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_SRC = sys.argv[sys.argv.index("--src") + 1] if "--src" in sys.argv else str(ROOT / "trainer" / "src")
sys.path.insert(0, _SRC)  # before anything imports attune_trainer
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench import synthetic_batch


def disk_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and p.stat().st_nlink >= 1)


def _snapshot_writes(run_dir: Path) -> list[dict]:
    """Each snapshot left past step 0: its bytes on disk (hard links not counted) and, when it was
    written in the background, the write's seconds from its marker."""
    out = []
    for d in sorted((run_dir / "checkpoints").glob("step-*")):
        marker = json.loads((d / "state.json").read_text())
        if marker["step"] > 0:
            own = sum(p.stat().st_size for p in d.rglob("*") if p.is_file() and p.stat().st_nlink == 1)
            out.append({"step": marker["step"], "disk_bytes": own, "write_seconds": marker.get("write_seconds"),
                        "format": marker.get("format", "rank0")})
    return out


def run_setting(model: str, every: int, steps: int, samples: list, keep: int) -> dict:
    from attune_trainer.engine.engine import Engine

    state = Path(tempfile.mkdtemp(prefix=f"steplog-{every}-"))
    try:
        engine = Engine(state / "state", device="cpu")
        run = {
            "run_id": "bench",
            "base_model": model,
            "algorithm": "grpo",
            "lora": None,
            "seed": 1,
            "hyperparameters": {"learning_rate": 1e-6, "micro_batch_size": 4, "snapshot_every": every,
                                "keep_checkpoints": keep},
        }
        engine.create_run(run)
        rows = []
        for step in range(1, steps + 1):
            t0 = time.perf_counter()
            out = engine.apply_step("bench", {"step": step, "samples": samples})
            rows.append({"step": step, "wall_s": time.perf_counter() - t0, **out["storage"]})
        if hasattr(engine, "close"):
            engine.close()  # background snapshot writes finish and commit
        run_dir = state / "state" / "runs" / "bench"
        snapshots = _snapshot_writes(run_dir)
        disk = disk_bytes(run_dir / "checkpoints") + disk_bytes(run_dir / "steplog") + disk_bytes(run_dir / "results")
        recover_s = None
        if every > 3:
            # a kill three steps past the snapshot `every` (a fresh run stopped there, its engine gone):
            # a new engine on the same directory recovers by replay
            engine.state_lock.release()
            shutil.rmtree(state / "state")
            engine = Engine(state / "state", device="cpu")
            engine.create_run(run)
            for step in range(1, every + 4):
                engine.apply_step("bench", {"step": step, "samples": samples})
            if hasattr(engine, "close"):
                engine.close()
            engine.state_lock.release()
            recovered = Engine(state / "state", device="cpu")
            t0 = time.perf_counter()
            loaded = recovered.runs.ensure_loaded("bench")
            recover_s = time.perf_counter() - t0
            assert loaded.step == every + 3, loaded.step
        tokenizer_bytes = disk_bytes(run_dir / "tokenizer") if (run_dir / "tokenizer").exists() else 0
        with_snap = [r["wall_s"] for r in rows if r["snapshot"]]
        without = [r["wall_s"] for r in rows if not r["snapshot"]]
        return {
            "snapshot_every": every,
            "steps": steps,
            "seconds_per_step_with_snapshot": statistics.median(with_snap) if with_snap else None,
            "seconds_per_step_without_snapshot": statistics.median(without) if without else None,
            "bytes_written_per_step": sum(r["bytes_written"] for r in rows) / len(rows),
            "snapshot_bytes": max(r["snapshot_bytes"] for r in rows),
            "log_bytes_per_step": statistics.median(r["bytes_written"] - r["snapshot_bytes"] for r in rows),
            # what a checkpoint per step wrote before the step log: the snapshot's files plus the tokenizer
            # (now hard-linked from the run's own copy), and no log entry
            "checkpoint_bytes_before": max(r["snapshot_bytes"] for r in rows) + tokenizer_bytes,
            "disk_after_run_bytes": disk,
            "recover_three_past_snapshot_s": recover_s,
            # the snapshots kept at the end: bytes on disk, and (sharded) their background write's seconds
            "snapshots_kept": snapshots,
            "snapshot_seconds_waited": statistics.median(r["snapshot_seconds"] for r in rows if r["snapshot"])
            if with_snap
            else None,
            "per_step": rows,
        }
    finally:
        shutil.rmtree(state, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--every", default="1,5,10")
    ap.add_argument("--keep", type=int, default=0, help="keep_checkpoints (0 = all, as before)")
    ap.add_argument("--src", default=_SRC, help="the trainer source tree measured (read before the imports)")
    ap.add_argument("--out", default=None, help="results file: a name under bench/results, or a path from the repo root")
    args = ap.parse_args()
    samples = synthetic_batch(8, 24, 16, 4)
    results = [run_setting(args.model, int(e), args.steps, samples, args.keep) for e in args.every.split(",")]
    today = next((r for r in results if r["snapshot_every"] == 1), None)
    before = today["checkpoint_bytes_before"] if today else None
    print(f"before issue 43 (a checkpoint every step): {before / 1e6:.2f} MB/step" if before else "")
    print(f"{'every':>5} {'s/step snap':>11} {'s/step no':>9} {'MB/step':>9} {'x fewer':>7} {'disk MB':>8} {'recover s':>9}")
    for r in results:
        ratio = before / r["bytes_written_per_step"] if before else None
        r["bytes_per_step_vs_before"] = ratio
        fmt = lambda v, f: "-" if v is None else format(v, f)
        print(f"{r['snapshot_every']:>5} {fmt(r['seconds_per_step_with_snapshot'], '11.2f')} "
              f"{fmt(r['seconds_per_step_without_snapshot'], '9.2f')} {r['bytes_written_per_step'] / 1e6:9.1f} "
              f"{fmt(ratio, '7.2f')} {r['disk_after_run_bytes'] / 1e6:8.0f} {fmt(r['recover_three_past_snapshot_s'], '9.2f')}")
    name = args.out or ("trainer-step-log.json" if args.model != "tiny-random" else "trainer-step-log-tiny.json")
    out = ROOT / name if "/" in name else ROOT / "bench" / "results" / name
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"model": args.model, "device": "cpu", "host": platform.node(),
                               "python": platform.python_version(), "keep_checkpoints": args.keep,
                               "command": "python bench/trainer/step_log.py " + " ".join(sys.argv[1:]),
                               "results": results}, indent=2))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
