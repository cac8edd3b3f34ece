"""Loading a run into memory from its newest complete snapshot: policy, critic, reference, AdamW.

Two snapshot formats load: sharded (full weights; `sharded_snapshots.py`), read by every rank into
its own shards once the models are wrapped; and rank 0's (`policy/`, `critic.safetensors`,
`optimizer.pt`: LoRA runs, step 0, and full-weight runs written before snapshots were sharded).
"""

from __future__ import annotations

import pickle
import time
from pathlib import Path

import torch

from attune_trainer.compute import Compute, inner_optimizer, seed_for
from attune_trainer.contract.algorithms import ALGORITHMS
from attune_trainer.contract.errors import InvalidRequest
from attune_trainer.contract.schemas import Hyperparameters, RunCreate
from attune_trainer.log import log
from attune_trainer.models import build_critic, load_causal_lm, load_tokenizer, peft_lora_config, resolve_base
from attune_trainer.state.checkpoints import CheckpointWriter
from attune_trainer.state.loaded_run import LoadedRun
from attune_trainer.state.reference import ensure_reference
from attune_trainer.state.sharded_snapshots import is_sharded, load_shards
from attune_trainer.state.snapshots import newest_snapshot
from attune_trainer.state.store import RunStore


def _adamw(params: list, lr: float, hp: Hyperparameters) -> torch.optim.AdamW:
    return torch.optim.AdamW(
        params,
        lr=lr,
        betas=(hp.adam_beta1, hp.adam_beta2),
        eps=hp.adam_eps,
        weight_decay=hp.weight_decay,
        foreach=False,
    )


def _build_policy(compute: Compute, spec: RunCreate, base_path: Path, latest_dir: Path | None):
    lora = spec.lora
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed_for(spec.seed, "policy-init"))
        if lora is None:
            source = base_path
            if latest_dir is not None and (latest_dir / "policy" / "config.json").exists():
                source = latest_dir / "policy"
            policy = load_causal_lm(source, torch.float32)
        else:
            from peft import LoraConfig as PeftLoraConfig
            from peft import get_peft_model, set_peft_model_state_dict

            base = load_causal_lm(base_path, compute.frozen_dtype)
            check_target_modules(base, lora.target_modules)
            for p in base.parameters():
                p.requires_grad_(False)
            policy = get_peft_model(
                base, PeftLoraConfig(task_type="CAUSAL_LM", **peft_lora_config(lora)), autocast_adapter_dtype=True
            )
            for p in policy.parameters():
                if p.requires_grad:
                    p.data = p.data.float()
            if latest_dir is not None:
                from safetensors.torch import load_file

                adapter = load_file(str(latest_dir / "policy" / "adapter_model.safetensors"))
                result = set_peft_model_state_dict(policy, adapter)
                if getattr(result, "unexpected_keys", None):
                    raise RuntimeError(f"adapter keys do not match: {result.unexpected_keys[:5]}")
    if spec.hyperparameters.gradient_checkpointing:
        policy.gradient_checkpointing_enable()
        if lora is not None:
            policy.enable_input_require_grads()
    return policy


def check_target_modules(model: torch.nn.Module, targets: list[str] | str) -> None:
    """LoRA targets name modules by their last name parts (peft's rule): refuse a list of which none is in
    the model, naming them, rather than fail deep inside peft."""
    if isinstance(targets, str):
        return
    names = [n for n, _ in model.named_modules()]
    missing = [t for t in targets if not any(n == t or n.endswith(f".{t}") for n in names)]
    if missing and len(missing) == len(targets):
        raise InvalidRequest("lora.target_modules", f"the base model has no modules named {', '.join(missing)}")
    if missing:
        log("warning", "LoRA target modules not in the base model", missing=missing)


def _build_critic(compute: Compute, spec: RunCreate, base_path: Path, latest_dir: Path | None):
    """PPO's critic: a separate model (README "Critic")."""
    lora = spec.lora
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed_for(spec.seed, "critic-init"))
        critic = build_critic(
            base_path,
            compute.frozen_dtype if lora is not None else torch.float32,
            peft_lora_config(lora) if lora is not None else None,
        )
    if latest_dir is not None and (latest_dir / "critic.safetensors").exists():
        from safetensors.torch import load_file

        load_trainable(critic, load_file(str(latest_dir / "critic.safetensors")))
    return critic


def _load_full_optimizer_states(compute: Compute, ckpt_dir: Path, policy, policy_opt, critic, critic_opt) -> None:
    """AdamW states of a snapshot written by rank 0 (`optimizer.pt`, full state dicts), given to every rank."""
    from torch.distributed.checkpoint.state_dict import StateDictOptions, set_optimizer_state_dict

    states = load_optimizer_states(ckpt_dir / "optimizer.pt")
    options = StateDictOptions(full_state_dict=True, broadcast_from_rank0=compute.world > 1)
    set_optimizer_state_dict(policy, inner_optimizer(policy_opt), states["policy"], options=options)
    if critic is not None and states.get("critic") is not None:
        set_optimizer_state_dict(critic, inner_optimizer(critic_opt), states["critic"], options=options)


def load_optimizer_states(path: Path) -> dict:
    """AdamW states as plain tensors and containers: a tampered file is refused, never executed."""
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as e:
        raise RuntimeError(f"{path}: not a plain tensor checkpoint, refused to load it ({e})") from None


def load_trainable(module: torch.nn.Module, tensors: dict) -> None:
    names = {n for n, p in module.named_parameters() if p.requires_grad}
    missing = names - set(tensors)
    if missing:
        raise RuntimeError(f"checkpoint lacks trainable tensors: {sorted(missing)[:5]}")
    with torch.no_grad():
        for n, p in module.named_parameters():
            if n in tensors:
                p.copy_(tensors[n].to(p.dtype))


def load_run(
    compute: Compute, store: RunStore, state_dir: Path, checkpoints: CheckpointWriter, models_dir: Path | None = None
) -> LoadedRun:
    """Load the run at its newest complete snapshot; a new run gets its step-0 checkpoint written here."""
    t0 = time.time()
    config = store.read_meta()["config"]
    spec = RunCreate.model_validate(config)
    hp = spec.hyperparameters
    base_path = resolve_base(spec.base_model, state_dir, store.dir, models_dir)
    tokenizer = load_tokenizer(store.tokenizer_dir)
    latest = _agreed_newest_snapshot(compute, store)  # the steps after it are replayed from the log (recovery.py)
    latest_dir = store.ckpt(latest) if latest is not None else None
    sharded = latest_dir is not None and is_sharded(latest_dir)  # built from the base, then filled from the shards

    policy = _build_policy(compute, spec, base_path, latest_dir)
    policy_params = [p for p in policy.parameters() if p.requires_grad]
    policy_opt = _adamw(policy_params, hp.learning_rate, hp)
    critic = critic_opt = None
    if ALGORITHMS[spec.algorithm].critic:
        critic = _build_critic(compute, spec, base_path, latest_dir)
        critic_opt = _adamw([p for p in critic.parameters() if p.requires_grad], hp.value_learning_rate, hp)

    # wrap for the device / DDP / FSDP
    acc = compute.acc
    if critic is not None:
        policy, policy_opt, critic, critic_opt = acc.prepare(policy, policy_opt, critic, critic_opt)
    else:
        policy, policy_opt = acc.prepare(policy, policy_opt)

    if latest_dir is not None and not sharded and (latest_dir / "optimizer.pt").exists():
        _load_full_optimizer_states(compute, latest_dir, policy, policy_opt, critic, critic_opt)
    elif latest_dir is not None and latest > 0 and not sharded:
        log("warning", "no optimizer state in the latest checkpoint; AdamW restarts", run_id=store.run_id, step=latest)

    run = LoadedRun(
        run_id=store.run_id,
        config=config,
        hp=hp,
        lora=spec.lora,
        store=store,
        base_path=base_path,
        tokenizer=tokenizer,
        policy=policy,
        policy_opt=policy_opt,
        critic=critic,
        critic_opt=critic_opt,
        step=latest or 0,
        eos_ids=_end_of_turn_ids(compute, policy, tokenizer),
    )
    if sharded:
        load_shards(run, latest_dir)  # weights and AdamW states, each rank its own shards
    if hp.kl_coef > 0:
        ensure_reference(compute, run)
    if latest is None:
        checkpoints.save(run, 0, stored=None, digest=None)
    log(
        "info",
        "run loaded",
        run_id=store.run_id,
        step=run.step,
        seconds=round(time.time() - t0, 3),
        trainable_params=sum(p.numel() for p in policy_params),
        distributed=str(acc.distributed_type),
        wrapper=type(policy).__name__,
    )
    return run


def _agreed_newest_snapshot(compute: Compute, store: RunStore) -> int | None:
    """Rank 0's newest complete snapshot, on every rank. A rank that looked on its own could see another
    one: a snapshot committed meanwhile in the background, or step 0 of a new run that rank 0 (ahead:
    FSDP2 wraps without a collective) already wrote, and skip the collective write of it."""
    latest = newest_snapshot(store) if compute.is_main else None
    if compute.world == 1:
        return latest
    agreed = int(compute.broadcast_from_main(torch.tensor([-1 if latest is None else latest])).item())
    return None if agreed < 0 else agreed


def _end_of_turn_ids(compute: Compute, policy, tokenizer) -> list[int]:
    """Tokens that end a sampled reply: the tokenizer's EOS and the generation config's."""
    ids = {tokenizer.eos_token_id}
    configured = getattr(getattr(compute.unwrap(policy), "generation_config", None), "eos_token_id", None)
    for e in configured if isinstance(configured, (list, tuple)) else [configured]:
        if e is not None:
            ids.add(int(e))
    return sorted(e for e in ids if e is not None)
