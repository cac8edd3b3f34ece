"""The trainer benchmarks (bench/trainer/bench.py and efficiency.py) in their smallest form, results
to a temporary file: a benchmark that no longer runs, or whose results lose a field, fails here."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_bench(script: str, *args: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "trainer" / "src")}
    p = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "trainer" / script), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=1500,
    )
    assert p.returncode == 0, (p.stdout[-2000:], p.stderr[-2000:])


def test_trainer_benchmark_quick_times_every_tiny_configuration(tmp_path):
    out = tmp_path / "trainer.json"
    run_bench("bench.py", "--quick", "--steps", "1", "--samples", "4", "--out", str(out))
    report = json.loads(out.read_text())
    assert report["benchmark"] == "trainer"
    rows = {(r["algorithm"], bool(r["lora"])) for r in report["results"]}
    assert rows == {("grpo", False), ("grpo", True), ("ppo", False)}
    for r in report["results"]:
        assert r["model"] == "tiny-random"
        assert r["seconds_per_step"] > 0 and r["completion_tokens_per_s"] > 0, r


def test_trainer_efficiency_benchmark_compares_with_the_bare_loop(tmp_path):
    out = tmp_path / "trainer-efficiency.json"
    run_bench(
        "efficiency.py",
        *("--hidden", "32", "--layers", "1", "--samples", "4", "--repeats", "1"),
        *("--out", str(out)),
    )
    report = json.loads(out.read_text())
    assert report["benchmark"] == "trainer-efficiency"
    rates = report["completion_tokens_per_s"]
    assert set(rates) == {"trainer", "bare", "bare_with_old_logprobs"}
    assert all(v > 0 for v in rates.values())
    assert report["ratio_trainer_to_bare"] > 0
