"""Peak memory of one GRPO step of a model whose vocabulary dominates it: a 2-layer random Llama with
SmolLM2's 49,152-token vocabulary, micro-batches of 4 samples of ~`--prompt` + `--completion` tokens,
on CPU. The step's figure is the process's peak RSS after the step minus the peak before it (model
load and run creation), in a fresh process.

    PYTHONPATH=trainer/src .venv/bin/python bench/trainer/logit_memory.py
    PYTHONPATH=<another checkout>/trainer/src .venv/bin/python bench/trainer/logit_memory.py   # compare

Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def _write_model(models: Path, vocab: int) -> Path:
    import torch
    from attune_trainer.tiny_tokenizer import build_tiny_tokenizer
    from transformers import LlamaConfig, LlamaForCausalLM

    tok = build_tiny_tokenizer()
    config = LlamaConfig(
        vocab_size=vocab,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        tie_word_embeddings=True,
        pad_token_id=tok.pad_token_id,
        eos_token_id=tok.eos_token_id,
        bos_token_id=None,
    )
    torch.manual_seed(0)
    out = models / "wide-vocab-random"
    LlamaForCausalLM(config).save_pretrained(out)
    tok.save_pretrained(out)
    return out


def one(a: argparse.Namespace) -> dict:
    import torch

    torch.set_num_threads(a.threads)
    from attune_trainer import log as trainer_log
    from attune_trainer.engine.engine import Engine

    trainer_log.set_level("warning")
    work = Path(tempfile.mkdtemp(prefix="attune-logit-memory-"))
    model = _write_model(work / "models", a.vocab)
    engine = Engine(work / "state", device="cpu", dtype="fp32", models_dir=model.parent)
    engine.create_run(
        {
            "run_id": "bench",
            "base_model": model.name,
            "algorithm": "grpo",
            "hyperparameters": {"learning_rate": 1e-6, "micro_batch_size": 4},
            "seed": 0,
        }
    )
    gen = torch.Generator().manual_seed(1)
    samples = [
        {
            "prompt": [
                {
                    "role": "user",
                    "content": " ".join(["you feel tired"] * (a.prompt // 3)),
                }
            ],
            "completion": "",
            "completion_ids": torch.randint(
                3, a.vocab, (a.completion,), generator=gen
            ).tolist(),
            "reward": float(i % 3),
            "group": f"g{i // 4}",
        }
        for i in range(a.samples)
    ]
    before = _peak_rss_mib()
    start = time.perf_counter()
    metrics = engine.apply_step("bench", {"step": 1, "samples": samples})["metrics"]
    seconds = time.perf_counter() - start
    after = _peak_rss_mib()
    positions = (metrics["prompt_tokens"] + metrics["tokens"]) // a.samples
    return {
        "vocab": a.vocab,
        "micro_batch": 4,
        "positions_per_sample": positions,
        "one_fp32_logits_copy_mib": round(4 * positions * a.vocab * 4 / 2**20, 1),
        "peak_rss_before_step_mib": round(before, 1),
        "peak_rss_after_step_mib": round(after, 1),
        "step_peak_increase_mib": round(after - before, 1),
        "seconds": round(seconds, 2),
        "loss": metrics["loss"],
    }


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--vocab", type=int, default=49152)
    ap.add_argument(
        "--prompt",
        type=int,
        default=128,
        help="about this many prompt tokens per sample",
    )
    ap.add_argument(
        "--completion", type=int, default=512, help="completion tokens per sample"
    )
    ap.add_argument("--samples", type=int, default=8)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.one:
        print(json.dumps(one(a)))
        return 0
    # a fresh process: its peak RSS is this step's alone
    p = subprocess.run(
        [sys.executable, __file__, "--one", *sys.argv[1:]],
        check=False,
        capture_output=True,
        text=True,
    )
    if p.returncode != 0:
        print(p.stderr[-3000:], file=sys.stderr)
        return p.returncode
    print(p.stdout.strip().splitlines()[-1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
