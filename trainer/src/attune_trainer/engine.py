"""The optimizer engine: loads runs, applies exactly-once PPO/GRPO steps, checkpoints (sampling: serving.py).

One code path for CPU (fp32), one GPU (bf16 autocast, fp32 master weights) and many GPUs under
`accelerate launch` (FSDP/DDP): every rank executes the same engine operations in the same
order (rank 0 broadcasts them, see `dispatch.py`); each rank trains on its share of a step's
samples, gradients are averaged by the wrapper, and rank 0 writes the checkpoints.
"""

from __future__ import annotations

import gc
import hashlib
import json
import math
import os
import shutil
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from . import losses as L
from .errors import ApiError
from .log import log
from .models import (
    ModelError,
    build_critic,
    build_tiny_random,
    check_base,
    load_causal_lm,
    load_tokenizer,
    peft_lora_config,
    resolve_base,
)
from .schemas import Hyperparameters, LoraSpec, RunCreate
from .serving import Serving
from .store import RunStore, now, write_json_atomic


def _seed_for(*parts: int) -> int:
    h = hashlib.sha256(":".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(h[:8], "little") % (2**63 - 1)


def samples_digest(samples: list[dict]) -> str:
    return hashlib.sha256(json.dumps(samples, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def config_diff(a: Any, b: Any, prefix: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            out += config_diff(a.get(k), b.get(k), f"{prefix}.{k}" if prefix else k)
        return out
    return [] if a == b else [prefix]


@dataclass
class Encoded:
    ids: list[int]
    n_prompt: int

    @property
    def n_completion(self) -> int:
        return len(self.ids) - self.n_prompt


@dataclass
class LoadedRun:
    run_id: str
    cfg: dict
    hp: Hyperparameters
    lora: LoraSpec | None
    store: RunStore
    base_path: Path
    tokenizer: Any
    policy: Any
    policy_opt: Any
    critic: Any = None
    critic_opt: Any = None
    ref: Any = None
    step: int = 0
    in_progress: int | None = None
    eos_ids: list[int] = field(default_factory=list)


class Engine(Serving):
    def __init__(self, state_dir: Path, device: str = "auto", dtype: str = "auto", max_loaded_runs: int = 4):
        from accelerate import Accelerator

        self.state_dir = Path(state_dir)
        self.state_dir.mkdir(parents=True, exist_ok=True)
        (self.state_dir / "runs").mkdir(exist_ok=True)
        want_cpu = device == "cpu" or (device == "auto" and not torch.cuda.is_available())
        if dtype == "auto":
            dtype = "fp32" if want_cpu else "bf16"
        if dtype not in ("fp32", "bf16"):
            raise ValueError("dtype must be auto, fp32 or bf16")
        self.dtype_name = dtype
        self.acc = Accelerator(cpu=want_cpu, mixed_precision="bf16" if dtype == "bf16" else "no")
        self.device = self.acc.device
        self.world = self.acc.num_processes
        self.rank = self.acc.process_index
        self.is_main = self.acc.is_main_process
        # frozen weights (LoRA base, reference) may live in bf16; trainable weights stay fp32
        self.frozen_dtype = torch.bfloat16 if dtype == "bf16" else torch.float32
        self.max_loaded_runs = max_loaded_runs
        self.loaded: OrderedDict[str, LoadedRun] = OrderedDict()
        self.infer_cache: OrderedDict[str, tuple] = OrderedDict()
        self.lock = threading.RLock()  # serialises heavy work (load, step, sample) in this process
        self.fault_delay = float(os.environ.get("ATTUNE_TRAINER_FAULT_DELAY_S", "0") or 0)
        if self.is_main:
            for d in (self.state_dir / "runs").iterdir():
                if d.name.startswith(".tmp-"):
                    shutil.rmtree(d, ignore_errors=True)
                elif d.is_dir():
                    st = RunStore(self.state_dir, d.name)
                    n = st.cleanup_tmp()
                    if n:
                        log("warning", "removed unfinished checkpoint(s) left by a crash", run_id=d.name, count=n)
                    if st.exists():
                        st.reconcile_results()
        log(
            "info",
            "engine ready",
            device=str(self.device),
            dtype=dtype,
            world_size=self.world,
            state_dir=str(self.state_dir),
            torch=torch.__version__,
        )

    # ------------------------------------------------------------------ helpers (distributed)
    def _all_reduce(self, t: torch.Tensor) -> torch.Tensor:
        if self.world > 1:
            import torch.distributed as dist

            t = t.to(self.device)
            dist.all_reduce(t)
        return t

    def _barrier(self) -> None:
        if self.world > 1:
            self.acc.wait_for_everyone()

    # ------------------------------------------------------------------ runs
    def run_store(self, run_id: str) -> RunStore:
        return RunStore(self.state_dir, run_id)

    def create_run(self, req: dict) -> tuple[bool, dict]:
        """POST /v1/runs. Returns (created, state). Raises ApiError(409) on a config mismatch."""
        rc = RunCreate.model_validate(req)
        cfg = rc.model_dump(mode="json")
        store = self.run_store(rc.run_id)
        with self.lock:
            if store.exists():
                old = store.read_meta()["config"]
                diff = config_diff(old, cfg)
                if diff:
                    raise ApiError(
                        409,
                        f"run {rc.run_id!r} exists with a different config; differing keys: {', '.join(diff)}",
                        "conflict_error",
                        field=diff[0],
                        differing_keys=diff,
                    )
                self.ensure_loaded(rc.run_id)  # completes an interrupted creation
                return False, self.run_state(rc.run_id)
            try:
                check_base(rc.base_model)
            except ModelError as e:
                raise ApiError(422, str(e), field="base_model") from e
            if self.is_main:
                tmp = self.state_dir / "runs" / f".tmp-{rc.run_id}-{os.getpid()}"
                shutil.rmtree(tmp, ignore_errors=True)
                tmp.mkdir(parents=True)
                if rc.base_model == "tiny-random":
                    build_tiny_random(tmp / "base", rc.seed)
                    base_path = tmp / "base"
                else:
                    base_path = resolve_base(rc.base_model, self.state_dir)
                tok = load_tokenizer(base_path)
                tok.save_pretrained(tmp / "tokenizer")
                write_json_atomic(tmp / "run.json", {"config": cfg, "created": now(), "format": 1})
                os.replace(tmp, store.dir)
                log(
                    "info",
                    "run created",
                    run_id=rc.run_id,
                    base_model=rc.base_model,
                    algorithm=rc.algorithm,
                    lora=rc.lora is not None,
                )
            self._barrier()
            self.ensure_loaded(rc.run_id)
            return True, self.run_state(rc.run_id)

    def run_state(self, run_id: str) -> dict:
        store = self.run_store(run_id)
        if not store.exists():
            raise ApiError(404, f"run {run_id!r} not found", "not_found_error", field="run_id")
        meta = store.read_meta()
        cfg = meta["config"]
        steps = store.committed_steps()
        ckpts = []
        for s in steps:
            exp = store.export_info(s) or {}
            ckpts.append(
                {
                    "step": s,
                    "path": str(store.ckpt(s).resolve()),
                    "export_path": exp.get("path"),
                    "export_format": exp.get("format"),
                    "model": f"{run_id}@{s}",
                }
            )
        lr = self.loaded.get(run_id)
        return {
            "run_id": run_id,
            "step": steps[-1] if steps else 0,
            "algorithm": cfg["algorithm"],
            "base_model": cfg["base_model"],
            "lora": cfg["lora"],
            "seed": cfg["seed"],
            "hyperparameters": cfg["hyperparameters"],
            "checkpoints": ckpts,
            "created": meta.get("created"),
            "loaded": lr is not None,
            "in_progress_step": lr.in_progress if lr else None,
            "model": run_id,
        }

    def list_runs(self) -> list[str]:
        d = self.state_dir / "runs"
        return sorted(p.name for p in d.iterdir() if not p.name.startswith(".") and (p / "run.json").exists())

    def ensure_loaded(self, run_id: str) -> LoadedRun:
        with self.lock:
            if run_id in self.loaded:
                self.loaded.move_to_end(run_id)
                return self.loaded[run_id]
            store = self.run_store(run_id)
            if not store.exists():
                raise ApiError(404, f"run {run_id!r} not found", "not_found_error", field="run_id")
            while len(self.loaded) >= self.max_loaded_runs:
                old_id, old = self.loaded.popitem(last=False)
                self._release(old)
                log("info", "run unloaded (LRU)", run_id=old_id)
            lr = self._load(store)
            self.loaded[run_id] = lr
            return lr

    def _release(self, lr: LoadedRun) -> None:
        for obj in (lr.policy, lr.critic, lr.ref, lr.policy_opt, lr.critic_opt):
            for lst in (getattr(self.acc, "_models", []), getattr(self.acc, "_optimizers", [])):
                for i in reversed(range(len(lst))):
                    if lst[i] is obj:
                        del lst[i]
        lr.policy = lr.critic = lr.ref = lr.policy_opt = lr.critic_opt = None
        gc.collect()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()

    def _load(self, store: RunStore) -> LoadedRun:
        t0 = time.time()
        meta = store.read_meta()
        cfg = meta["config"]
        rc = RunCreate.model_validate(cfg)
        hp, lora = rc.hyperparameters, rc.lora
        base_path = resolve_base(rc.base_model, self.state_dir, store.dir)
        tok = load_tokenizer(store.tokenizer_dir)
        latest = store.latest_step()
        latest_dir = store.ckpt(latest) if latest is not None else None

        # ---- policy
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(_seed_for(rc.seed, "policy-init"))
            if lora is None:
                src = base_path
                if latest_dir is not None and (latest_dir / "policy" / "config.json").exists():
                    src = latest_dir / "policy"
                policy = load_causal_lm(src, torch.float32)
            else:
                from peft import LoraConfig as PeftLoraConfig
                from peft import get_peft_model, set_peft_model_state_dict

                base = load_causal_lm(base_path, self.frozen_dtype)
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

                    sd = load_file(str(latest_dir / "policy" / "adapter_model.safetensors"))
                    res = set_peft_model_state_dict(policy, sd)
                    if getattr(res, "unexpected_keys", None):
                        raise RuntimeError(f"adapter keys do not match: {res.unexpected_keys[:5]}")
        if hp.gradient_checkpointing:
            policy.gradient_checkpointing_enable()
            if lora is not None:
                policy.enable_input_require_grads()
        policy_params = [p for p in policy.parameters() if p.requires_grad]
        policy_opt = torch.optim.AdamW(
            policy_params,
            lr=hp.learning_rate,
            betas=(hp.adam_beta1, hp.adam_beta2),
            eps=hp.adam_eps,
            weight_decay=hp.weight_decay,
            foreach=False,
        )
        # ---- critic (PPO): a separate model, see README "Critic"
        critic = critic_opt = None
        if rc.algorithm == "ppo":
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(_seed_for(rc.seed, "critic-init"))
                critic = build_critic(
                    base_path,
                    self.frozen_dtype if lora is not None else torch.float32,
                    peft_lora_config(lora) if lora is not None else None,
                )
            if latest_dir is not None and (latest_dir / "critic.safetensors").exists():
                from safetensors.torch import load_file

                sd = load_file(str(latest_dir / "critic.safetensors"))
                self._load_trainable(critic, sd)
            critic_params = [p for p in critic.parameters() if p.requires_grad]
            critic_opt = torch.optim.AdamW(
                critic_params,
                lr=hp.value_learning_rate,
                betas=(hp.adam_beta1, hp.adam_beta2),
                eps=hp.adam_eps,
                weight_decay=hp.weight_decay,
                foreach=False,
            )
        # ---- reference (KL): LoRA uses the base with the adapter disabled; full FT a frozen copy
        ref = None
        if hp.kl_coef > 0 and lora is None:
            ref = load_causal_lm(base_path, self.frozen_dtype)
            for p in ref.parameters():
                p.requires_grad_(False)
            ref.eval()

        # ---- wrap for the device / DDP / FSDP
        if critic is not None:
            policy, policy_opt, critic, critic_opt = self.acc.prepare(policy, policy_opt, critic, critic_opt)
        else:
            policy, policy_opt = self.acc.prepare(policy, policy_opt)
        if ref is not None:
            ref = self.acc.prepare_model(ref, evaluation_mode=True)

        if latest_dir is not None and (latest_dir / "optimizer.pt").exists():
            from torch.distributed.checkpoint.state_dict import StateDictOptions, set_optimizer_state_dict

            states = torch.load(latest_dir / "optimizer.pt", map_location="cpu", weights_only=False)
            opts = StateDictOptions(full_state_dict=True, broadcast_from_rank0=self.world > 1)
            set_optimizer_state_dict(policy, _inner(policy_opt), states["policy"], options=opts)
            if critic is not None and states.get("critic") is not None:
                set_optimizer_state_dict(critic, _inner(critic_opt), states["critic"], options=opts)
        elif latest_dir is not None and latest > 0:
            log(
                "warning",
                "no optimizer state in the latest checkpoint; AdamW restarts",
                run_id=store.run_id,
                step=latest,
            )

        eos_ids = {tok.eos_token_id}
        gen_eos = getattr(getattr(_unwrap(self.acc, policy), "generation_config", None), "eos_token_id", None)
        for e in gen_eos if isinstance(gen_eos, (list, tuple)) else [gen_eos]:
            if e is not None:
                eos_ids.add(int(e))
        lr = LoadedRun(
            run_id=store.run_id,
            cfg=cfg,
            hp=hp,
            lora=lora,
            store=store,
            base_path=base_path,
            tokenizer=tok,
            policy=policy,
            policy_opt=policy_opt,
            critic=critic,
            critic_opt=critic_opt,
            ref=ref,
            step=latest or 0,
            eos_ids=sorted(e for e in eos_ids if e is not None),
        )
        if latest is None:
            self._commit(lr, 0, stored=None, digest=None)
        log(
            "info",
            "run loaded",
            run_id=store.run_id,
            step=lr.step,
            seconds=round(time.time() - t0, 3),
            trainable_params=sum(p.numel() for p in policy_params),
            distributed=str(self.acc.distributed_type),
            wrapper=type(policy).__name__,
        )
        return lr

    @staticmethod
    def _load_trainable(module: torch.nn.Module, sd: dict) -> None:
        names = {n for n, p in module.named_parameters() if p.requires_grad}
        missing = names - set(sd)
        if missing:
            raise RuntimeError(f"checkpoint lacks trainable tensors: {sorted(missing)[:5]}")
        with torch.no_grad():
            for n, p in module.named_parameters():
                if n in sd:
                    p.copy_(sd[n].to(p.dtype))

    # ------------------------------------------------------------------ checkpoints
    def _commit(self, lr: LoadedRun, step: int, stored: dict | None, digest: str | None) -> dict:
        """Save policy (export), critic and optimizer for `step`, atomically. Collective."""
        store = lr.store
        need_policy = lr.lora is not None or step > 0
        # full state dicts on rank 0 (FSDP gathers the shards); collective, same on all ranks
        policy_sd = self.acc.get_state_dict(lr.policy) if need_policy else None
        critic_sd = self.acc.get_state_dict(lr.critic) if lr.critic is not None else None
        opt_states = None
        if step > 0:
            from torch.distributed.checkpoint.state_dict import StateDictOptions, get_optimizer_state_dict

            o = StateDictOptions(full_state_dict=True, cpu_offload=True)
            opt_states = {"policy": get_optimizer_state_dict(lr.policy, _inner(lr.policy_opt), options=o)}
            if lr.critic is not None:
                opt_states["critic"] = get_optimizer_state_dict(lr.critic, _inner(lr.critic_opt), options=o)
        export: dict
        if self.is_main:
            tmp = store.new_tmp_ckpt(step)
            unwrapped = _unwrap(self.acc, lr.policy)
            if lr.lora is not None:
                unwrapped.save_pretrained(str(tmp / "policy"), state_dict=policy_sd, safe_serialization=True)
                _patch_adapter_config(tmp / "policy", lr)
                export = {"path": f"checkpoints/step-{step:06d}/policy", "format": "peft_lora"}
            elif step == 0:
                # step 0 of full fine-tuning is the base model itself: no copy
                export = {"path": str(lr.base_path), "format": "hf_full"}
            else:
                unwrapped.save_pretrained(str(tmp / "policy"), state_dict=policy_sd, safe_serialization=True)
                lr.tokenizer.save_pretrained(str(tmp / "policy"))
                export = {"path": f"checkpoints/step-{step:06d}/policy", "format": "hf_full"}
            if critic_sd is not None:
                from safetensors.torch import save_file

                cu = _unwrap(self.acc, lr.critic)
                trainable = {n for n, p in cu.named_parameters() if p.requires_grad}
                save_file(
                    {k: v.detach().to("cpu").contiguous() for k, v in critic_sd.items() if k in trainable},
                    str(tmp / "critic.safetensors"),
                )
            if opt_states is not None:
                torch.save(opt_states, tmp / "optimizer.pt")
            if self.fault_delay > 0 and step > 0:
                # test hook: widens the window in which a SIGKILL lands mid-commit
                log("warning", "fault delay before commit", step=step, seconds=self.fault_delay)
                time.sleep(self.fault_delay)
            state = {
                "step": step,
                "samples_sha256": digest,
                "stored": stored,
                "export": export,
                "created": now(),
                "run_id": lr.run_id,
            }
            store.commit_ckpt(tmp, step, state)
            if stored is not None:
                store.write_result(step, stored)
            store.prune(lr.hp.keep_checkpoints)
        self._barrier()
        lr.step = step
        return {"step": step, "path": str(store.ckpt(step).resolve())}

    # ------------------------------------------------------------------ steps
    def apply_step(self, run_id: str, req: dict) -> dict:
        from .schemas import StepRequest

        sr = StepRequest.model_validate(req)
        samples = [s.model_dump(mode="json") for s in sr.samples]
        digest = samples_digest(samples)
        with self.lock:
            lr = self.ensure_loaded(run_id)
            if sr.step <= lr.step:
                stored = lr.store.read_result(sr.step) if self.is_main else {}
                if self.is_main and stored is None:
                    raise ApiError(
                        409,
                        f"step {sr.step} of run {run_id!r} was applied but its result is gone",
                        "conflict_error",
                        field="step",
                    )
                st_digest = None
                try:
                    st_digest = lr.store.read_state(sr.step).get("samples_sha256")
                except FileNotFoundError:
                    st_digest = (stored or {}).get("samples_sha256")
                if self.is_main and st_digest and st_digest != digest:
                    raise ApiError(
                        409,
                        f"step {sr.step} of run {run_id!r} was already applied with different samples "
                        f"(expected step {lr.step + 1})",
                        "conflict_error",
                        field="samples",
                        expected_step=lr.step + 1,
                    )
                out = dict(stored or {})
                out.pop("samples_sha256", None)
                out["replayed"] = True
                log("info", "step already applied; returning the stored result", run_id=run_id, step=sr.step)
                return out
            if sr.step != lr.step + 1:
                raise ApiError(
                    409,
                    f"run {run_id!r} is at step {lr.step}: expected step {lr.step + 1}, got {sr.step}",
                    "conflict_error",
                    field="step",
                    expected_step=lr.step + 1,
                )
            lr.in_progress = sr.step
            t0 = time.time()
            try:
                log("info", "applying step", run_id=run_id, step=sr.step, samples=len(samples))
                metrics = self._update(lr, sr, sr.step)
                metrics["seconds"] = round(time.time() - t0, 4)
                ck = {"step": sr.step}
                exp_path = f"checkpoints/step-{sr.step:06d}/policy"
                stored = {
                    "run_id": run_id,
                    "step": sr.step,
                    "metrics": metrics,
                    "samples_sha256": digest,
                    "model": f"{run_id}@{sr.step}",
                    "checkpoint": {
                        "step": sr.step,
                        "path": str(lr.store.ckpt(sr.step).resolve()),
                        "export_path": str((lr.store.dir / exp_path).resolve()),
                        "export_format": "peft_lora" if lr.lora is not None else "hf_full",
                    },
                }
                self._commit(lr, sr.step, stored=stored, digest=digest)
                del ck
            finally:
                lr.in_progress = None
            log(
                "info",
                "step applied",
                run_id=run_id,
                step=sr.step,
                **{k: metrics[k] for k in ("loss", "reward_mean", "kl", "grad_norm", "tokens", "seconds")},
            )
            out = dict(stored)
            out.pop("samples_sha256", None)
            out["replayed"] = False
            return out

    def encode(self, tok, prompt: list[dict], completion: str, hp: Hyperparameters, eos_id: int) -> Encoded:
        msgs = [{"role": m["role"], "content": _content_text(m.get("content"))} for m in prompt]
        text = tok.apply_chat_template(msgs, add_generation_prompt=True, tokenize=False)
        p = tok(text, add_special_tokens=False)["input_ids"]
        c = tok(completion, add_special_tokens=False)["input_ids"] if completion else []
        if hp.append_eos:
            c = c + [eos_id]
        if len(c) >= hp.max_length:
            c = c[: hp.max_length - 1]
        if len(p) + len(c) > hp.max_length:
            p = p[-(hp.max_length - len(c)) :]
        if not p:
            p = [eos_id]
        return Encoded(ids=list(p) + list(c), n_prompt=len(p))

    def _batch(self, encs: list[Encoded], pad_id: int):
        T = max(len(e.ids) for e in encs)
        ids = torch.full((len(encs), T), pad_id, dtype=torch.long)
        attn = torch.zeros((len(encs), T), dtype=torch.long)
        mask = torch.zeros((len(encs), T - 1), dtype=torch.float32)
        for i, e in enumerate(encs):
            ids[i, : len(e.ids)] = torch.tensor(e.ids)
            attn[i, : len(e.ids)] = 1
            mask[i, e.n_prompt - 1 : len(e.ids) - 1] = 1.0
        return ids.to(self.device), attn.to(self.device), mask.to(self.device)

    def _logprobs(self, model, ids, attn, temperature):
        with self.acc.autocast():
            logits = model(input_ids=ids, attention_mask=attn, use_cache=False).logits
        logits = logits[:, :-1]
        return L.token_logprobs(logits, ids[:, 1:], temperature)

    def _values(self, critic, ids, attn):
        with self.acc.autocast():
            v = critic(ids, attn)
        return v[:, :-1].float()

    def _update(self, lr: LoadedRun, sr, step: int) -> dict:
        hp = lr.hp
        if getattr(sr, "hyperparameters", None) is not None:
            overrides = {k: v for k, v in sr.hyperparameters.model_dump().items() if v is not None}
            if overrides:
                hp = hp.model_copy(update=overrides)
        torch.manual_seed(_seed_for(lr.cfg["seed"], "step", step))  # dropout, if any, is reproducible
        tok = lr.tokenizer
        eos_id = tok.eos_token_id
        pad_id = tok.pad_token_id if tok.pad_token_id is not None else eos_id
        samples = sr.samples
        N = len(samples)
        encs = [self.encode(tok, [m.model_dump() for m in s.prompt], s.completion, hp, eos_id) for s in samples]
        rewards = torch.tensor([s.reward for s in samples], dtype=torch.float32)
        algo = lr.cfg["algorithm"]
        use_ref = hp.kl_coef > 0
        mine = [i for i in range(N) if i % self.world == self.rank]  # this rank's samples
        mb = hp.micro_batch_size
        per_rank_max = math.ceil(N / self.world)

        def chunks(idx: list[int]) -> list[list[int]]:
            return [idx[i : i + mb] for i in range(0, len(idx), mb)]

        # ---------------- old log-probs, reference log-probs, old values (no grad)
        old_logp: dict[int, torch.Tensor] = {}
        ref_logp: dict[int, torch.Tensor] = {}
        old_val: dict[int, torch.Tensor] = {}
        lr.policy.eval()
        n_chunks = math.ceil(per_rank_max / mb)
        my_chunks = chunks(mine)
        with torch.no_grad():
            for c in range(n_chunks):
                real = c < len(my_chunks)
                idx = my_chunks[c] if real else (my_chunks[0] if my_chunks else [0])
                ids, attn, mask = self._batch([encs[i] for i in idx], pad_id)
                lp, _ = self._logprobs(lr.policy, ids, attn, hp.temperature)
                if use_ref:
                    if lr.ref is not None:
                        rlp, _ = self._logprobs(lr.ref, ids, attn, hp.temperature)
                    else:
                        with _unwrap(self.acc, lr.policy).disable_adapter():
                            rlp, _ = self._logprobs(lr.policy, ids, attn, hp.temperature)
                if lr.critic is not None:
                    lr.critic.eval()
                    v = self._values(lr.critic, ids, attn)
                if not real:
                    continue
                for j, i in enumerate(idx):
                    m = mask[j] > 0
                    old_logp[i] = lp[j][m].detach()
                    if use_ref:
                        ref_logp[i] = rlp[j][m].detach()
                    if lr.critic is not None:
                        old_val[i] = v[j][m].detach()

        # ---------------- advantages
        adv: dict[int, torch.Tensor] = {}
        ret: dict[int, torch.Tensor] = {}
        if algo == "grpo":
            seq_adv = L.grpo_advantages(
                rewards,
                [s.group for s in samples],
                hp.advantage_eps,
                hp.normalize_advantage_std,
                trajectories=[getattr(s, "trajectory", "") for s in samples],
            )
            for i in mine:
                adv[i] = torch.full((encs[i].n_completion,), float(seq_adv[i]), device=self.device)
        else:
            for i in mine:
                n = encs[i].n_completion
                m = torch.ones(1, n, device=self.device)
                tr = L.last_token_rewards(rewards[i : i + 1].to(self.device), m)
                a, r = L.gae(tr, old_val[i].unsqueeze(0), m, hp.gamma, hp.lam)
                adv[i], ret[i] = a[0], r[0]
            if hp.whiten_advantages:
                s = torch.zeros(3, dtype=torch.float64, device=self.device)
                for i in mine:
                    s[0] += adv[i].double().sum()
                    s[1] += (adv[i].double() ** 2).sum()
                    s[2] += adv[i].numel()
                s = self._all_reduce(s)
                n = s[2].clamp_min(1.0)
                mean = s[0] / n
                var = (s[1] - n * mean**2) / (n - 1).clamp_min(1.0)
                for i in mine:
                    adv[i] = ((adv[i].double() - mean) * torch.rsqrt(var + 1e-8)).float()

        # ---------------- updates
        sums = torch.zeros(12, dtype=torch.float64, device=self.device)
        # 0 tokens, 1 pg_loss, 2 entropy, 3 kl, 4 clipped, 5 vf_loss, 6 vf_clipped, 7 adv, 8 ratio,
        # 9 ppo_kl, 10 grad_norm sum, 11 value grad_norm sum
        n_updates = 0
        mini = hp.mini_batch_size or N
        cur_lr = L.warmup_lr(hp.learning_rate, step, hp.warmup_steps)
        cur_vlr = L.warmup_lr(hp.value_learning_rate, step, hp.warmup_steps)
        for g in _inner(lr.policy_opt).param_groups:
            g["lr"] = cur_lr
        if lr.critic_opt is not None:
            for g in _inner(lr.critic_opt).param_groups:
                g["lr"] = cur_vlr
        gen = torch.Generator().manual_seed(_seed_for(lr.cfg["seed"], "shuffle", step))
        for epoch in range(hp.ppo_epochs):
            order = list(range(N))
            if epoch > 0 or mini < N:
                order = torch.randperm(N, generator=gen).tolist()
            for start in range(0, N, mini):
                batch = order[start : start + mini]
                mine_b = [i for i in batch if i % self.world == self.rank]
                total_tok = torch.tensor([float(sum(encs[i].n_completion for i in mine_b))], device=self.device)
                total_tok = float(self._all_reduce(total_tok).item())
                rank_max = max(sum(1 for i in batch if i % self.world == r) for r in range(self.world))
                steps_needed = math.ceil(rank_max / mb) if rank_max else 0
                if total_tok == 0 or steps_needed == 0:
                    continue
                bchunks = chunks(mine_b)
                lr.policy.train()
                if lr.critic is not None:
                    lr.critic.train()
                for c in range(steps_needed):
                    real = c < len(bchunks)
                    idx = bchunks[c] if real else (bchunks[0] if bchunks else [mine[0] if mine else 0])
                    weight = 1.0 if real else 0.0
                    ids, attn, mask = self._batch([encs[i] for i in idx], pad_id)
                    scale = weight * self.world / total_tok
                    logp, ent = self._logprobs(lr.policy, ids, attn, hp.temperature)
                    if real or idx[0] in old_logp:
                        o = _pad_like(mask, [old_logp[i] for i in idx])
                        a = _pad_like(mask, [adv[i] for i in idx])
                    else:  # a dummy chunk on a rank without samples: zero loss, same collectives
                        o, a = logp.detach(), torch.zeros_like(logp)
                    pg, ratio, clipped = L.clipped_surrogate(logp, o, a, hp.clip_ratio)
                    loss_tok = pg - hp.entropy_coef * ent
                    if use_ref:
                        r = (
                            _pad_like(mask, [ref_logp[i] for i in idx])
                            if (real or idx[0] in ref_logp)
                            else logp.detach()
                        )
                        kl = L.kl_k3(logp, r)
                        loss_tok = loss_tok + hp.kl_coef * kl
                    else:
                        kl = torch.zeros_like(logp)
                    loss = (loss_tok * mask).sum() * scale
                    self.acc.backward(loss)
                    if lr.critic is not None:
                        v = self._values(lr.critic, ids, attn)
                        if real or idx[0] in old_val:
                            ov = _pad_like(mask, [old_val[i] for i in idx])
                            rt = _pad_like(mask, [ret[i] for i in idx])
                        else:
                            ov, rt = v.detach(), v.detach()
                        vf, vclip = L.clipped_value_loss(v, ov, rt, hp.value_clip)
                        self.acc.backward((vf * mask).sum() * scale)
                    if real:
                        with torch.no_grad():
                            sums[0] += mask.sum()
                            sums[1] += (pg * mask).sum()
                            sums[2] += (ent * mask).sum()
                            sums[3] += (kl * mask).sum()
                            sums[4] += (clipped * mask).sum()
                            sums[7] += (a * mask).sum()
                            sums[8] += (ratio * mask).sum()
                            sums[9] += ((o - logp) * mask).sum()
                            if lr.critic is not None:
                                sums[5] += (vf * mask).sum()
                                sums[6] += (vclip * mask).sum()
                # pass model.parameters() itself: accelerate then uses FSDP's own (global) clip
                gn = self.acc.clip_grad_norm_(lr.policy.parameters(), hp.max_grad_norm)
                sums[10] += float(gn)
                lr.policy_opt.step()
                lr.policy_opt.zero_grad(set_to_none=True)
                if lr.critic is not None:
                    vgn = self.acc.clip_grad_norm_(lr.critic.parameters(), hp.max_grad_norm)
                    sums[11] += float(vgn)
                    lr.critic_opt.step()
                    lr.critic_opt.zero_grad(set_to_none=True)
                n_updates += 1
        lr.policy.eval()
        if lr.critic is not None:
            lr.critic.eval()
        s = sums.clone()
        s[10:] = 0
        s = self._all_reduce(s)
        tok_n = max(float(s[0]), 1.0)
        policy_loss = float(s[1]) / tok_n
        entropy = float(s[2]) / tok_n
        kl = float(s[3]) / tok_n
        value_loss = float(s[5]) / tok_n
        completion_tokens = sum(e.n_completion for e in encs)
        return {
            "loss": policy_loss - hp.entropy_coef * entropy + hp.kl_coef * kl + value_loss,
            "policy_loss": policy_loss,
            "value_loss": value_loss,
            "kl": kl,
            "entropy": entropy,
            "clip_fraction": float(s[4]) / tok_n,
            "value_clip_fraction": float(s[6]) / tok_n,
            "grad_norm": float(sums[10]) / max(n_updates, 1),
            "value_grad_norm": float(sums[11]) / max(n_updates, 1),
            "reward_mean": float(rewards.mean()),
            "reward_std": float(rewards.std()) if N > 1 else 0.0,
            "advantage_mean": float(s[7]) / tok_n,
            "ratio_mean": float(s[8]) / tok_n,
            "ppo_kl": float(s[9]) / tok_n,
            "tokens": int(completion_tokens),
            "prompt_tokens": int(sum(e.n_prompt for e in encs)),
            "samples": N,
            "groups": len({s.group for s in samples}),
            "updates": n_updates,
            "learning_rate": cur_lr,
            "value_learning_rate": cur_vlr if lr.critic is not None else 0.0,
            "seconds": 0.0,
        }


def _inner(opt):
    return getattr(opt, "optimizer", opt)


def _unwrap(acc, model):
    return acc.unwrap_model(model) if model is not None else None


def _pad_like(mask: torch.Tensor, parts: list[torch.Tensor]) -> torch.Tensor:
    out = torch.zeros_like(mask)
    out[mask > 0] = torch.cat(parts).to(out.dtype)
    return out


def _content_text(c) -> str:
    if c is None:
        return ""
    if isinstance(c, str):
        return c
    return "".join(str(p.get("text", "")) for p in c if p.get("type", "text") == "text")


def _patch_adapter_config(adapter_dir: Path, lr: LoadedRun) -> None:
    """Make the adapter self-describing for vLLM: base model path, no modules_to_save."""
    p = adapter_dir / "adapter_config.json"
    if not p.exists():
        return
    cfg = json.loads(p.read_text())
    cfg["base_model_name_or_path"] = str(lr.base_path)
    cfg["inference_mode"] = True
    p.write_text(json.dumps(cfg, indent=2, sort_keys=True))
