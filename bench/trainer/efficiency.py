"""Trainer efficiency: completion tokens per second of the trainer's optimizer update on a fixed batch
against a bare PyTorch loop on the same model and the same micro-batches (forward, loss on the
completion tokens, backward, AdamW step).

The batch is one optimizer update (one epoch, one mini-batch), so the trainer's update
(`PolicyUpdate.apply`) takes PPO's old log-probs from the training forward and makes no separate
no-grad pass, like the bare loop. A second reference loop adds that pass, so the report also shows
what the pass costs: the trainer still makes it when a step has several mini-batches or epochs.
Checkpoint writing is not timed here (bench.py times whole steps).

    .venv/bin/python bench/trainer/efficiency.py                     # CPU, a random 4-layer Llama
    .venv/bin/python bench/trainer/efficiency.py --device cuda --hidden 768 --layers 12

Prints both rates and the ratios and writes bench/results/trainer-efficiency.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import synthetic_batch


def build_model(out_dir: Path, hidden: int, layers: int, seed: int) -> None:
    from attune_trainer.tiny_tokenizer import build_tiny_tokenizer
    from transformers import LlamaConfig, LlamaForCausalLM

    tok = build_tiny_tokenizer()
    config = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=hidden,
        intermediate_size=4 * hidden,
        num_hidden_layers=layers,
        num_attention_heads=max(1, hidden // 64),
        max_position_embeddings=2048,
        tie_word_embeddings=False,
        pad_token_id=tok.pad_token_id,
        eos_token_id=tok.eos_token_id,
        bos_token_id=None,
    )
    torch.manual_seed(seed)
    LlamaForCausalLM(config).save_pretrained(out_dir)
    tok.save_pretrained(out_dir)


def bare_loop(
    model, opt, batches, n_tokens: float, advantages: list[torch.Tensor], old_pass: bool
) -> None:
    """One optimizer update, written directly: the reference the trainer is compared with."""
    if old_pass:
        with torch.no_grad():
            for ids, attention, _ in batches:
                model(input_ids=ids, attention_mask=attention, use_cache=False)
    for (ids, attention, mask), adv in zip(batches, advantages, strict=True):
        logits = (
            model(input_ids=ids, attention_mask=attention, use_cache=False)
            .logits[:, :-1]
            .float()
        )
        logp = (
            torch.log_softmax(logits, dim=-1)
            .gather(-1, ids[:, 1:].unsqueeze(-1))
            .squeeze(-1)
        )
        (-(adv * logp * mask).sum() / n_tokens).backward()
    opt.step()
    opt.zero_grad(set_to_none=True)


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--samples", type=int, default=16)
    ap.add_argument("--micro-batch-size", type=int, default=4)
    ap.add_argument(
        "--repeats",
        type=int,
        default=5,
        help="timed updates of each kind (after one warm-up)",
    )
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument(
        "--out", default=str(ROOT / "bench" / "results" / "trainer-efficiency.json")
    )
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    os.environ["ATTUNE_TRAINER_LOG_LEVEL"] = "warning"
    from attune_trainer import log as tlog
    from attune_trainer.encoding import pad_batch
    from attune_trainer.engine.engine import Engine
    from attune_trainer.faults import FaultInjection
    from attune_trainer.contract.schemas import StepRequest
    from attune_trainer.update.update import PolicyUpdate

    tlog.set_level("warning")
    tmp = Path(tempfile.mkdtemp(prefix="attune-efficiency-"))
    build_model(tmp / "models" / "bench-llama", a.hidden, a.layers, seed=0)
    dtype = "fp32" if a.device == "cpu" else "bf16"
    eng = Engine(tmp / "state", device=a.device, dtype=dtype, models_dir=tmp / "models")
    hp = {"learning_rate": 1e-6, "micro_batch_size": a.micro_batch_size}
    eng.create_run(
        {
            "run_id": "eff",
            "base_model": "bench-llama",
            "algorithm": "grpo",
            "lora": None,
            "hyperparameters": hp,
            "seed": 0,
        }
    )
    run = eng.runs.ensure_loaded("eff")
    request = StepRequest.model_validate(
        {"step": 1, "samples": synthetic_batch(a.samples, 48, 48, 4)}
    )

    # the bare loop: the same weights, micro-batches and advantages, its own AdamW
    from transformers import LlamaForCausalLM

    device = eng.compute.device
    model = (
        LlamaForCausalLM.from_pretrained(tmp / "models" / "bench-llama")
        .to(device)
        .train()
    )
    opt = torch.optim.AdamW(model.parameters(), lr=1e-6, weight_decay=0.0)
    probe = PolicyUpdate(eng.compute, run, request, FaultInjection())
    chunks = [
        list(range(i, min(i + a.micro_batch_size, a.samples)))
        for i in range(0, a.samples, a.micro_batch_size)
    ]
    batches = [
        pad_batch([probe.encoded[i] for i in c], probe.pad_id, device) for c in chunks
    ]
    n_tokens = float(sum(e.n_completion for e in probe.encoded))
    advantages = [torch.randn_like(mask) * mask for _, _, mask in batches]
    autocast = eng.compute.acc.autocast

    def trainer_update() -> None:
        PolicyUpdate(eng.compute, run, request, FaultInjection()).apply()

    def sync() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize()

    kinds = {
        "trainer": trainer_update,
        "bare": lambda: _with(
            autocast, bare_loop, model, opt, batches, n_tokens, advantages, False
        ),
        "bare_with_old_logprobs": lambda: _with(
            autocast, bare_loop, model, opt, batches, n_tokens, advantages, True
        ),
    }
    seconds: dict[str, list[float]] = {k: [] for k in kinds}
    for repeat in range(a.repeats + 1):
        for (
            name,
            fn,
        ) in kinds.items():  # interleaved, so load from other processes hits all alike
            sync()
            t = time.perf_counter()
            fn()
            sync()
            if repeat > 0:
                seconds[name].append(time.perf_counter() - t)
    rate = {
        k: n_tokens / sorted(v)[len(v) // 2] for k, v in seconds.items()
    }  # median update
    ratio = rate["trainer"] / rate["bare"]
    ratio_old = rate["trainer"] / rate["bare_with_old_logprobs"]
    params = sum(p.numel() for p in model.parameters())
    print(
        f"model: random Llama, {a.layers} layers, hidden {a.hidden}, {params / 1e6:.1f}M parameters, {a.device}"
    )
    print(
        f"batch: {a.samples} samples, micro-batches of {a.micro_batch_size}, {int(n_tokens)} completion tokens"
    )
    for name, r in rate.items():
        print(f"{name:<24}{r:>10.1f} completion tokens/s")
    print(
        f"trainer / bare loop: {ratio:.3f}; trainer / bare loop with the no-grad pass: {ratio_old:.3f}"
    )
    report = {
        "benchmark": "trainer-efficiency",
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "host": {
            "python": platform.python_version(),
            "torch": torch.__version__,
            "cpus": os.cpu_count(),
            "machine": platform.machine(),
            "threads": a.threads,
            "device": a.device,
        },
        "model": {
            "kind": "random Llama",
            "hidden": a.hidden,
            "layers": a.layers,
            "parameters": params,
        },
        "batch": {
            "samples": a.samples,
            "micro_batch_size": a.micro_batch_size,
            "completion_tokens": int(n_tokens),
            "repeats": a.repeats,
        },
        "completion_tokens_per_s": {k: round(v, 1) for k, v in rate.items()},
        "seconds_per_update": {k: [round(s, 4) for s in v] for k, v in seconds.items()},
        "ratio_trainer_to_bare": round(ratio, 3),
        "ratio_trainer_to_bare_with_old_logprobs": round(ratio_old, 3),
    }
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {a.out}")
    return 0


def _with(autocast, fn, *args) -> None:
    with autocast():
        fn(*args)


if __name__ == "__main__":
    raise SystemExit(main())
