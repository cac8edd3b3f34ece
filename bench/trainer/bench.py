"""Trainer benchmark: seconds per optimizer step, tokens/s and peak memory for a fixed synthetic
batch, per model and mode. Each configuration runs in its own process (clean peak-memory figure).

    .venv/bin/python bench/trainer/bench.py                      # CPU: tiny-random + smollm2-135m
    .venv/bin/python bench/trainer/bench.py --device cuda --models /path/to/Qwen2.5-0.5B-Instruct
    .venv/bin/python bench/trainer/bench.py --quick              # tiny-random only

Prints a table and writes bench/results/trainer.json (--quick: trainer-quick.json; --device cuda: trainer-cuda.json).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WORDS = ("I hear how hard this has been for you and it makes sense that you feel tired and alone right now "
         "maybe we can look at one small thing that would help you feel a little safer today").split()


def synthetic_batch(n_samples: int, prompt_words: int, completion_words: int, group_size: int):
    samples = []
    for i in range(n_samples):
        prompt = " ".join(WORDS[(i + k) % len(WORDS)] for k in range(prompt_words))
        completion = " ".join(WORDS[(3 * i + k) % len(WORDS)] for k in range(completion_words))
        samples.append({"prompt": [{"role": "system", "content": "You are a supportive listener."},
                                   {"role": "user", "content": prompt}],
                        "completion": completion, "reward": ((i * 37) % 100) / 100.0,
                        "group": f"g{i // group_size}"})
    return samples


def one(cfg: dict) -> dict:
    import torch

    if cfg.get("threads"):
        torch.set_num_threads(cfg["threads"])
    os.environ["ATTUNE_TRAINER_LOG_LEVEL"] = "warning"
    from attune_trainer import log as tlog

    tlog.set_level("warning")
    from attune_trainer.engine.engine import Engine

    state = Path(cfg.get("state_dir") or tempfile.mkdtemp(prefix="attune-bench-"))
    # a local model is loaded only from the trainer's models directory: its parent here
    local = cfg["model"] not in ("tiny-random", "smollm2-135m")
    models_dir = Path(cfg["model"]).resolve().parent if local else None
    eng = Engine(state, device=cfg["device"], dtype=cfg["dtype"], models_dir=models_dir)
    if eng.device.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    t0 = time.time()
    eng.create_run({"run_id": "bench", "base_model": cfg["model"], "algorithm": cfg["algorithm"], "lora": cfg["lora"],
                    "hyperparameters": {"learning_rate": 1e-6, "micro_batch_size": cfg["micro_batch_size"]},
                    "seed": 0})
    load_s = time.time() - t0
    batch = synthetic_batch(cfg["samples"], cfg["prompt_words"], cfg["completion_words"], 4)
    times, metrics = [], None
    for step in range(1, cfg["steps"] + 2):
        t = time.time()
        metrics = eng.apply_step("bench", {"step": step, "samples": batch})["metrics"]
        if step > 1:  # step 1 is warm-up
            times.append(time.time() - t)
    sec = sum(times) / len(times)
    t = time.time()
    r = eng.chat({"model": "bench", "messages": batch[0]["prompt"], "max_tokens": 32, "temperature": 0.0})
    gen_s = time.time() - t
    peak_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # MiB (Linux: KiB)
    out = {
        **{k: cfg[k] for k in ("model", "algorithm", "device", "dtype", "samples", "micro_batch_size")},
        "lora": cfg["lora"] is not None,
        "threads": torch.get_num_threads(),
        "load_seconds": round(load_s, 2),
        "seconds_per_step": round(sec, 3),
        "completion_tokens": metrics["tokens"],
        "prompt_tokens": metrics["prompt_tokens"],
        "train_tokens_per_s": round((metrics["tokens"] + metrics["prompt_tokens"]) / sec, 1),
        "completion_tokens_per_s": round(metrics["tokens"] / sec, 1),
        "sample_tokens_per_s": round(r["usage"]["completion_tokens"] / gen_s, 1),
        "checkpoint_included": True,
        "peak_rss_mib": round(peak_rss, 1),
    }
    if eng.device.type == "cuda":
        out["peak_gpu_mib"] = round(torch.cuda.max_memory_allocated() / 2**20, 1)
        out["gpu"] = torch.cuda.get_device_name()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--models", nargs="*", default=None, help="default: tiny-random smollm2-135m")
    ap.add_argument("--steps", type=int, default=3, help="timed steps (after one warm-up step)")
    ap.add_argument("--samples", type=int, default=8)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--quick", action="store_true", help="tiny-random only")
    ap.add_argument("--out", default="", help="default bench/results/trainer[-cuda][-quick].json: one file per mode")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if not a.out:
        mode = ("-cuda" if a.device == "cuda" else "") + ("-quick" if a.quick else "")
        a.out = str(ROOT / "bench" / "results" / f"trainer{mode}.json")
    if a.one:
        print(json.dumps(one(json.loads(a.one))))
        return 0
    models = a.models or (["tiny-random"] if a.quick else ["tiny-random", "smollm2-135m"])
    dtype = "bf16" if a.device == "cuda" else "fp32"
    configs = []
    for m in models:
        for algo, lora in (("grpo", None), ("grpo", {"r": 16}), ("ppo", None)):
            if m != "tiny-random" and algo == "ppo" and a.device == "cpu" and a.quick:
                continue
            configs.append({"model": m, "algorithm": algo, "lora": lora, "device": a.device, "dtype": dtype,
                            "samples": a.samples, "prompt_words": 48, "completion_words": 48,
                            "micro_batch_size": 4, "steps": a.steps, "threads": a.threads})
    results = []
    print(f"{'model':<16}{'algo':<6}{'lora':<6}{'s/step':>9}{'train tok/s':>13}{'compl tok/s':>13}"
          f"{'sample tok/s':>14}{'peak RSS MiB':>14}{'peak GPU MiB':>14}", flush=True)
    for cfg in configs:
        p = subprocess.run([sys.executable, __file__, "--one", json.dumps(cfg)], capture_output=True, text=True)
        if p.returncode != 0:
            print(f"{cfg['model']} {cfg['algorithm']} failed:\n{p.stderr[-2000:]}", file=sys.stderr)
            continue
        r = json.loads(p.stdout.strip().splitlines()[-1])
        results.append(r)
        print(f"{r['model'][-16:]:<16}{r['algorithm']:<6}{str(r['lora']):<6}{r['seconds_per_step']:>9.3f}"
              f"{r['train_tokens_per_s']:>13.1f}{r['completion_tokens_per_s']:>13.1f}{r['sample_tokens_per_s']:>14.1f}"
              f"{r['peak_rss_mib']:>14.1f}{r.get('peak_gpu_mib', float('nan')):>14.1f}", flush=True)
    import torch

    report = {"benchmark": "trainer", "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "host": {"python": platform.python_version(), "torch": torch.__version__, "cpus": os.cpu_count(),
                       "machine": platform.machine()},
              "batch": {"samples": a.samples, "prompt_words": 48, "completion_words": 48, "group_size": 4,
                        "timed_steps": a.steps, "note": "seconds_per_step includes the atomic checkpoint"},
              "results": results}
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2))
    print(f"wrote {out}")
    return 0 if results else 1


if __name__ == "__main__":
    sys.exit(main())
