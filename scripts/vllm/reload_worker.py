"""vLLM's CPU worker, with in-place reloads that also refresh tied output embeddings.

Loaded into the vLLM (CPU build) that `scripts/vllm/start.sh --full-weights` starts, through vLLM's
`--worker-cls`. On CPU, vLLM keeps a packed copy of each linear weight for its GEMM kernels, made
when a layer's weights are processed after loading. A model with tied word embeddings (SmolLM2,
small Qwen2.5 models) shares one tensor between `embed_tokens` and `lm_head`; an in-place reload
loads that tensor under its embedding name only, so the output head is never processed again and
keeps computing logits with its launch weights. After each reload, every embedding layer that
shares its weight with another one is processed again, so its packed copy is made from the new
weights. GPU workers keep no such copy and need none of this.
"""

from __future__ import annotations

from vllm.model_executor.layers.vocab_parallel_embedding import VocabParallelEmbedding
from vllm.v1.worker.cpu_worker import CPUWorker


class ReloadingCPUWorker(CPUWorker):
    def reload_weights(self, *args, **kwargs) -> None:
        super().reload_weights(*args, **kwargs)
        sharing: dict[int, dict[int, VocabParallelEmbedding]] = {}
        for module in self.model_runner.get_model().modules():
            if isinstance(module, VocabParallelEmbedding):
                sharing.setdefault(id(module.weight), {})[id(module)] = module
        for modules in sharing.values():
            if len(modules) > 1:
                for module in modules.values():
                    module.quant_method.process_weights_after_loading(module)
