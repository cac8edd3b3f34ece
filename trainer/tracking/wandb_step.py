"""Logs one training step to Weights & Biases; run by Attune's tracking activity, one process per step.

Reads a JSON request on stdin: {"dir", "project", "run_id", "run_name", "mode", "step",
"scalars", "config"}. Each step gets its own directory, emptied first, so a retried step replaces
its offline run instead of adding a second copy of it; `wandb sync DIR/*/wandb/offline-run-*`
uploads them in step order into the one run (same id, resumed).
"""

from __future__ import annotations

import json
import os
import shutil
import sys


def main() -> int:
    request = json.load(sys.stdin)
    step_dir = request["dir"]
    shutil.rmtree(step_dir, ignore_errors=True)
    os.makedirs(step_dir, exist_ok=True)
    os.environ.setdefault("WANDB_SILENT", "true")
    try:
        import wandb
    except ImportError:
        print(
            f"the wandb package is not installed for {sys.executable}: "
            "install it there (pip install wandb) or set tracking.wandb.python",
            file=sys.stderr,
        )
        return 3

    run = wandb.init(
        project=request["project"],
        id=request["run_id"],
        name=request["run_name"],
        mode=request["mode"],
        dir=step_dir,
        resume="allow",
        config=request.get("config") or {},
        settings=wandb.Settings(console="off", x_disable_stats=True),
    )
    run.log(request["scalars"], step=int(request["step"]))
    run.finish()
    json.dump({"runDir": run.dir}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
