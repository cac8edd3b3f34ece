"""The frozen KL reference, built when a step first needs it.

A run created with `kl_coef: 0` may get a KL term later from a step's overrides, and a restarted trainer
loads runs from their stored settings; so the reference is built on demand, not only at load time.
"""

from __future__ import annotations

from attune_trainer.compute import Compute
from attune_trainer.log import log
from attune_trainer.models import load_causal_lm
from attune_trainer.state.loaded_run import LoadedRun


def ensure_reference(compute: Compute, run: LoadedRun) -> None:
    """Full fine-tuning: the base model loaded again, frozen, in eval mode. LoRA needs nothing: the
    policy with its adapter disabled is the reference. Collective under FSDP: every rank calls it."""
    if run.lora is not None or run.ref is not None:
        return
    ref = load_causal_lm(run.base_path, compute.frozen_dtype)
    for p in ref.parameters():
        p.requires_grad_(False)
    ref.eval()
    run.ref = compute.acc.prepare_model(ref, evaluation_mode=True)
    log("info", "KL reference built", run_id=run.run_id, step=run.step)
