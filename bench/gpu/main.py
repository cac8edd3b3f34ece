"""The trainer on a GPU, measured: the paper's step shapes, each case in its own process with a time limit.

    python3 bench/gpu/main.py                # on a lent GPU (bash bench/gpu/run-on-device.sh sets it up)
    python3 bench/gpu/main.py --only smollm2,sampler   # the cases whose name contains one of these
    BENCH_GPU_STATE_DIR=/big/disk python3 bench/gpu/main.py --only qwen2.5-7b-full  # run states on a big disk
    python3 bench/gpu/merge.py a.json b.json > gpu.json  # the rows of several calls in one report
    npm run bench:gpu -- --tiny              # CPU, few-layer models and short sequences (in the test suite)

Writes bench/results/gpu.json (--tiny: gpu-tiny.json; and $OUT/gpu.json when OUT is set) with one row per case. A case that fails,
runs out of memory or out of time is a row with ok=false and the reason; the others still run.

Cases, in this order (a call's --budget runs them until it is spent; later ones become rows saying so): SmolLM2-135M
full and LoRA, GRPO and PPO; Qwen2.5-7B LoRA r 16 GRPO and PPO, and the GRPO step under FSDP; the sampler of both
models; last, qwen2.5-7b-full-grpo: all the 7B weights trained (fp32 masters + AdamW, ~122 GB of GPU memory before
activations, gradient checkpointing on) with a snapshot every 2 steps, so its row adds seconds_per_step_with_snapshot
and seconds_per_step_without_snapshot, snapshot_wait_seconds (what the snapshot step waited: its state's copy to CPU),
snapshot_write_seconds (the sharded write in the background, which the next step does not wait for) and
snapshot_bytes (~91 GB). The run keeps two snapshots (~183 GB), so on a smaller disk the trainer's disk budget
refuses it before its first step and its row says so: $BENCH_GPU_STATE_DIR puts the cases' run states on a bigger
disk (default: the work directory). On one GPU, alone (at most 9 minutes: its time limit is 480 s):

    bash bench/gpu/run-on-device.sh --only qwen2.5-7b-full
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from shapes import FLOPS_NOTE, ROOT, paper_shape

# An FSDP case runs on this many ranks on CPU (gloo); on GPUs, on every GPU
FSDP_CPU_RANKS = 2
# the FSDP row's step against the plain row's, relative to max(1, |plain|): bf16 on GPUs, fp32 on CPU
FSDP_TOLERANCE = {"bf16": 0.02, "fp32": 1e-4}
FSDP_COMPARED = ("loss", "grad_norm", "update_logit_shift")
# where the cases' run states go (default: the work directory); the 7B full case needs ~200 GB free there
STATE_DIR_ENV = "BENCH_GPU_STATE_DIR"


def tiny_shape(shape: dict) -> dict:
    return {
        **shape,
        "samples": 8,
        "group_size": 4,
        "micro_batch_size": 4,
        "prompt_tokens": 24,
        "completion_tokens": 16,
    }


def cases(tiny: bool, device: str) -> list[dict]:
    grpo, ppo = paper_shape("grpo-think"), paper_shape("ppo-think")
    smol_shape = {**grpo, "gradient_checkpointing": False}
    out = []
    for algo, shape in (
        ("grpo", smol_shape),
        ("ppo", {**ppo, "gradient_checkpointing": False}),
    ):
        for lora in (False, True):
            out.append(
                {
                    "case": f"smollm2-135m-{'lora' if lora else 'full'}-{algo}",
                    "kind": "step",
                    "model": "smollm2-135m",
                    "algorithm": algo,
                    "lora": lora,
                    "shape": shape,
                    "timeout": 240,
                }
            )
    for algo, shape in (("grpo", grpo), ("ppo", ppo)):
        out.append(
            {
                "case": f"qwen2.5-7b-lora16-{algo}",
                "kind": "step",
                "model": "qwen2.5-7b",
                "algorithm": algo,
                "lora": True,
                "shape": shape,
                "timeout": 420,
            }
        )
    out.append(
        {
            "case": "qwen2.5-7b-lora16-grpo-fsdp",
            "kind": "step",
            "model": "qwen2.5-7b",
            "algorithm": "grpo",
            "lora": True,
            "shape": grpo,
            "timeout": 480,
            "fsdp": True,
            "compare_with": "qwen2.5-7b-lora16-grpo",
        }
    )
    for model in ("smollm2-135m", "qwen2.5-7b"):
        out.append(
            {
                "case": f"{model}-sampler-32",
                "kind": "sampler",
                "model": model,
                "concurrent": 32,
                "max_tokens": 256,
                "timeout": 240,
            }
        )
    # Last, so that it never pushes the cases above out of a call's budget: all the weights of the 7B model
    # trained, as the paper does. fp32 master weights, their gradients and AdamW's two moments are ~122 GB
    # before activations (gradient checkpointing on, micro-batch 4); a snapshot every 2 steps, so the timed
    # steps after the warm-up are one with a sharded snapshot (the step waits for its state's copy to CPU,
    # ~91 GB, then a thread writes it) and one without. The run keeps 2 snapshots (~183 GB): a state
    # directory on a smaller disk refuses it before its first step (the disk budget), and that is its row.
    out.append(
        {
            "case": "qwen2.5-7b-full-grpo",
            "kind": "step",
            "model": "qwen2.5-7b",
            "algorithm": "grpo",
            "lora": False,
            "shape": {**grpo, "gradient_checkpointing": True},
            "snapshot_every": 2,
            "timeout": 480,
        }
    )
    for case in out:
        # the timed steps (after one warm-up step) span a snapshot period: one with a snapshot, the rest without
        every = case.get("snapshot_every", 1)
        case.update(
            tiny=tiny,
            device=device,
            dtype="fp32" if device == "cpu" else "bf16",
            steps=max(2, every),
        )
        if tiny:
            # seconds on a quiet machine (the FSDP case ~90: two ranks); the limit only turns a hang into a row,
            # and a CPU shared by several jobs makes each case several times slower
            case.update(timeout=600, steps=every)
            if "shape" in case:
                case["shape"] = tiny_shape(case["shape"])
            if case["kind"] == "sampler":
                case["max_tokens"] = 8
    return out


def command(case: dict) -> list[str]:
    script = [str(HERE / "case.py"), json.dumps(case)]
    if not case.get("fsdp"):
        return [sys.executable, *script]
    # the same interpreter (and PYTHONPATH) as this process, whether or not an `accelerate` script is on PATH
    launch = [
        sys.executable,
        "-m",
        "accelerate.commands.launch",
        "--config_file",
        str(ROOT / "trainer" / "configs" / "fsdp.yaml"),
        "--num_processes",
        str(FSDP_CPU_RANKS if case["device"] == "cpu" else max(1, case["gpus"])),
    ]
    if case["device"] == "cpu":
        launch += ["--mixed_precision", "no"]
    return [*launch, *script]


def run_case(case: dict) -> dict:
    base = {
        "case": case["case"],
        "device": case["device"],
        "dtype": case["dtype"],
        "model": case["model"],
        "algorithm": case.get("algorithm"),
        "lora": case.get("lora"),
        "seconds_per_step": None,
        "tokens_per_second": None,
        "peak_memory_bytes": None,
    }
    if case["kind"] == "step":
        base["shape"] = case["shape"]
    start = time.perf_counter()
    try:
        p = subprocess.run(
            command(case),
            check=False,
            capture_output=True,
            text=True,
            timeout=case["timeout"],
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    except subprocess.TimeoutExpired:
        return {**base, "ok": False, "error": f"timed out after {case['timeout']} s"}
    base["wall_seconds"] = round(time.perf_counter() - start, 1)
    lines = [line for line in p.stdout.splitlines() if line.startswith("{")]
    if not lines:
        tail = (p.stderr or p.stdout)[-800:]
        oom = "out of memory" in tail.lower() or p.returncode in (-9, 137)
        return {
            **base,
            "ok": False,
            "oom": oom,
            "error": f"exit {p.returncode}: {tail}",
        }
    return {**base, **json.loads(lines[-1])}


def check_fsdp(row: dict, rows: list[dict], case: dict) -> None:
    """The FSDP row must have run under FSDP on more than one rank where it can, and its step must equal the
    plain run's: loss, gradient norm and how far the update moved the logits. Anything else fails the row."""
    if not row.get("ok"):
        return
    ranks = FSDP_CPU_RANKS if case["device"] == "cpu" else max(1, case["gpus"])
    if row.get("distributed_type") != "FSDP" or row.get("world_size") != ranks:
        row.update(
            ok=False,
            error=f"accelerate ran the step as {row.get('distributed_type')} on {row.get('world_size')} ranks, "
            f"not FSDP on {ranks}",
        )
        return
    plain = next((r for r in rows if r["case"] == case["compare_with"]), None)
    if plain is None or not plain.get("ok"):
        row.update(
            ok=False,
            error=f"no plain run to compare with: {case['compare_with']} did not pass",
        )
        return
    tolerance = FSDP_TOLERANCE[case["dtype"]]
    diffs = {key: abs(row[key] - plain[key]) for key in FSDP_COMPARED}
    row.update(diffs_vs_plain=diffs, matches_plain=True)
    for key, diff in diffs.items():
        if not diff <= tolerance * max(1.0, abs(plain[key])):  # a NaN fails too
            row.update(
                ok=False,
                matches_plain=False,
                error=f"{key} {row[key]} differs from the plain run's {plain[key]}",
            )
            return


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--tiny",
        action="store_true",
        help="CPU: few-layer models, short sequences, fp32",
    )
    ap.add_argument(
        "--only",
        default="",
        help="comma-separated texts: run only the cases whose name contains one of them",
    )
    ap.add_argument(
        "--out",
        default="",
        help="results file (default bench/results/gpu.json; --tiny: bench/results/gpu-tiny.json, "
        "so a CPU run never replaces a device run's figures)",
    )
    ap.add_argument(
        "--budget",
        type=float,
        default=None,
        help="seconds for all cases (default 560: a device call is killed at 600 s, so later cases become rows; "
        "--tiny: 3600)",
    )
    ap.add_argument(
        "--workdir",
        default="",
        help="where the random models and run states go (default: a temp dir)",
    )
    a = ap.parse_args()
    if a.budget is None:
        a.budget = 3600.0 if a.tiny else 560.0
    a.out = a.out or str(
        ROOT / "bench" / "results" / ("gpu-tiny.json" if a.tiny else "gpu.json")
    )
    import torch

    device = "cuda" if torch.cuda.is_available() and not a.tiny else "cpu"
    if not a.tiny and device == "cpu":
        print("no CUDA device: run with --tiny on CPU", file=sys.stderr)
        return 2
    gpus = torch.cuda.device_count() if device == "cuda" else 1
    workdir = Path(a.workdir or tempfile.mkdtemp(prefix="attune-gpu-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    state_root = Path(os.environ.get(STATE_DIR_ENV) or workdir)
    state_root.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []
    started = time.perf_counter()
    print(
        f"{'case':<34}{'ok':<6}{'s/step':>10}{'tok/s':>12}{'peak MiB':>12}{'mfu':>8}  note",
        flush=True,
    )
    for case in cases(a.tiny, device):
        if a.only and not any(
            part in case["case"] for part in a.only.split(",") if part
        ):
            continue
        left = a.budget - (time.perf_counter() - started)
        if left < 20:
            rows.append(
                {
                    "case": case["case"],
                    "device": device,
                    "ok": False,
                    "seconds_per_step": None,
                    "tokens_per_second": None,
                    "peak_memory_bytes": None,
                    "error": f"not run: the --budget of {a.budget:.0f} s was spent (run it with --only)",
                }
            )
            continue
        case.update(
            workdir=str(workdir),
            state_dir=tempfile.mkdtemp(prefix="state-", dir=state_root),
            gpus=gpus,
            timeout=min(case["timeout"], int(left)),
        )
        row = run_case(case)
        # the models stay for the next call; a case's run state is not read again (a 7B full run's: ~106 GB)
        shutil.rmtree(case["state_dir"], ignore_errors=True)
        if case.get("fsdp"):
            check_fsdp(row, rows, case)
        rows.append(row)
        peak = (
            row["peak_memory_bytes"] / 2**20
            if row.get("peak_memory_bytes")
            else float("nan")
        )
        sps = (
            row["seconds_per_step"]
            if row.get("seconds_per_step") is not None
            else float("nan")
        )
        tps = (
            row["tokens_per_second"]
            if row.get("tokens_per_second") is not None
            else float("nan")
        )
        mfu = f"{row['mfu']:.1%}" if row.get("mfu") else "-"
        print(
            f"{case['case']:<34}{row['ok']!s:<6}{sps:>10.3f}{tps:>12.1f}{peak:>12.1f}{mfu:>8}  "
            f"{row.get('error', '')[:160]}",
            flush=True,
        )
    if not a.workdir:
        shutil.rmtree(workdir, ignore_errors=True)
    import torch

    report = {
        "benchmark": "gpu",
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "tiny": a.tiny,
        "host": {
            "python": platform.python_version(),
            "torch": torch.__version__,
            "cpus": os.cpu_count(),
            "gpu": torch.cuda.get_device_name() if device == "cuda" else None,
            "gpus": gpus,
        },
        "flops": FLOPS_NOTE,
        "notes": "seconds_per_step: mean of the timed steps after one warm-up step, the trainer's whole step "
        "(update + checkpoint); tokens_per_second: completion tokens (sampler: generated tokens of 32 concurrent "
        "choices of one request, one batch); a case with snapshot_every > 1 (qwen2.5-7b-full-grpo) also times "
        "its steps with and without a snapshot apart, and the snapshot's wait, background write and bytes",
        "results": rows,
    }
    text = json.dumps(report, indent=2)
    for path in [Path(a.out)] + (
        [Path(os.environ["OUT"]) / "gpu.json"] if os.environ.get("OUT") else []
    ):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n")
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
