"""`npm run bench:learning:peer -- --steps 2` (TRL's GRPOTrainer on the learning bench's task) keeps
working: the script sets up its venv on the trainer's, trains, and writes a result per step."""

import json
import math
import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_peer_learning_benchmark_smallest_form_writes_its_results(tmp_path):
    out = tmp_path / "learning-peer.json"
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    p = subprocess.run(
        ["bash", str(ROOT / "bench" / "learning" / "peer.sh"), "--steps", "2", "--out", str(out)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=1800,
    )
    assert p.returncode == 0, (p.stdout + p.stderr)[-3000:]
    result = json.loads(out.read_text())
    assert result["peer"].startswith("trl ") and result["steps"] == 2
    assert [row["step"] for row in result["rows"]] == [1, 2]
    for row in result["rows"]:
        # A mean reward of the peer's one-turn task lies between an empty reply's 0 and the ceiling 0.6.
        assert math.isfinite(row["reward_mean"]) and 0 <= row["reward_mean"] <= 0.6, row
    assert "peer rewards:" in p.stdout
