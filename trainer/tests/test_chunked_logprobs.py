"""Log-probs computed a slice of positions at a time: the same values and gradients as on the whole
(B, T, V) logits, bit for bit (each position's row goes through the same kernels either way), and
nothing of size B x T x V kept for backward."""

import pytest
import torch
from conftest import tiny_run
from test_old_logprobs import _samples, _update
from transformers import LlamaConfig, LlamaForCausalLM

from attune_trainer.update import chunked_logprobs
from attune_trainer.update import update as update_module
from attune_trainer.update.chunked_logprobs import positions_per_chunk, token_logprobs
from attune_trainer.update.losses import token_logprobs as dense_token_logprobs

B, T, V = 3, 23, 512  # 22 predicting positions: a chunk of 5 leaves a slice of 2


def _model() -> LlamaForCausalLM:
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=V,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
    )
    return LlamaForCausalLM(config).eval()


def _ids() -> torch.Tensor:
    return torch.randint(0, V, (B, T), generator=torch.Generator().manual_seed(1))


def _outputs(model, ids, dtype, fn, last_position: bool = False):
    """(logp, entropy, each parameter's gradient) after a loss that weighs both per token. The logits of the
    last position (past the input) are passed on when `last_position`, sliced off otherwise."""
    model.zero_grad(set_to_none=True)
    logits = model(input_ids=ids, use_cache=False).logits.to(dtype)
    logits = logits if last_position else logits[:, :-1]
    logp, entropy = fn(logits, ids[:, 1:])
    weights = torch.randn(2, *logp.shape, generator=torch.Generator().manual_seed(2))
    ((logp * weights[0]).sum() + (entropy * weights[1]).sum()).backward()
    grads = {name: p.grad.clone() for name, p in model.named_parameters()}
    return logp.detach(), entropy.detach(), grads


@pytest.mark.parametrize("last_position", [False, True], ids=["sliced", "with-last-position"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32-logits", "bf16-logits"])
@pytest.mark.parametrize("chunk", [1, 5, 11, 22, 40])
@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_chunked_logprobs_entropy_and_gradients_equal_the_whole_tensor_ones(chunk, temperature, dtype, last_position):
    model, ids = _model(), _ids()
    dense = _outputs(model, ids, dtype, lambda logits, targets: dense_token_logprobs(logits, targets, temperature))
    chunked = _outputs(
        model, ids, dtype, lambda logits, targets: token_logprobs(logits, targets, temperature, chunk), last_position
    )
    assert torch.equal(chunked[0], dense[0])
    assert torch.equal(chunked[1], dense[1])
    assert chunked[2].keys() == dense[2].keys()
    for name, grad in dense[2].items():
        assert torch.equal(chunked[2][name], grad), name


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_chunked_logprobs_without_grad_equal_the_whole_tensor_ones(temperature):
    model, ids = _model(), _ids()
    with torch.no_grad():
        logits = model(input_ids=ids, use_cache=False).logits[:, :-1]
        dense = dense_token_logprobs(logits, ids[:, 1:], temperature)
        chunked = token_logprobs(logits, ids[:, 1:], temperature, 5)
    assert torch.equal(chunked[0], dense[0]) and torch.equal(chunked[1], dense[1])


def test_only_one_of_the_outputs_may_carry_a_gradient():
    model, ids = _model(), _ids()
    dense = _outputs(model, ids, torch.float32, lambda logits, targets: (dense_token_logprobs(logits, targets)[0],) * 2)
    chunked = _outputs(
        model, ids, torch.float32, lambda logits, targets: (token_logprobs(logits, targets, 1.0, 5)[0],) * 2
    )
    for name, grad in dense[2].items():
        assert torch.equal(chunked[2][name], grad), name


class _Saved:
    """The distinct storages autograd saves for backward while active: deterministic, unlike a CPU process's
    memory figures."""

    def __init__(self):
        self.storages: dict[int, int] = {}
        self.hooks = torch.autograd.graph.saved_tensors_hooks(self._pack, lambda tensor: tensor)

    def _pack(self, tensor):
        storage = tensor.untyped_storage()
        self.storages[storage.data_ptr()] = storage.nbytes()
        return tensor

    def __enter__(self):
        self.hooks.__enter__()
        return self

    def __exit__(self, *exc):
        self.hooks.__exit__(*exc)

    def bytes_besides(self, tensor: torch.Tensor) -> int:
        return sum(n for ptr, n in self.storages.items() if ptr != tensor.untyped_storage().data_ptr())


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32-logits", "bf16-logits"])
def test_chunked_logprobs_keep_only_a_slice_sized_tensor_for_backward(dtype):
    model, ids = _model(), _ids()
    logits = model(input_ids=ids, use_cache=False).logits.to(dtype)
    one_fp32_copy = B * (T - 1) * V * 4
    chunk, slice_fp32 = 5, B * 5 * V * 4
    # forward keeps the logits themselves (backward recomputes each slice from them) and no fp32 copy
    with _Saved() as forward:
        logp, entropy = token_logprobs(logits, ids[:, 1:], 0.7, chunk)
    kept = forward.bytes_besides(logits)
    assert kept < slice_fp32, f"{kept} bytes kept for backward besides the logits"
    # backward differentiates one slice at a time: what its recompute saves is a slice's, not the batch's
    with _Saved() as backward:
        (logp.sum() + entropy.sum()).backward()
    largest = max(backward.storages.values())
    assert largest <= slice_fp32, f"backward saved a tensor of {largest} bytes"
    # what the bounds above catch: the unchunked maths keeps two fp32 copies of the whole batch's logits
    with _Saved() as whole:
        dense_token_logprobs(logits[:, :-1], ids[:, 1:], 0.7)
    assert whole.bytes_besides(logits) >= 2 * one_fp32_copy


def test_a_slice_of_positions_holds_one_fp32_tensor_of_the_budget():
    per_slice = chunked_logprobs.CHUNK_BYTES
    assert positions_per_chunk(4, 49152) == per_slice // (4 * 49152 * 4)
    assert 4 * positions_per_chunk(4, 152064) * 152064 * 4 <= per_slice
    assert positions_per_chunk(64, 10**9) == 1  # never an empty slice


CASES = {
    "grpo-temperature": dict(algorithm="grpo", temperature=0.7, is_truncation=2.0),
    "grpo-lora-kl": dict(algorithm="grpo", lora={"r": 4}, kl_coef=0.1),
    "ppo-kl-entropy": dict(algorithm="ppo", kl_coef=0.1, entropy_coef=0.01),
}


def _unchunked(logits, targets, temperature):
    """The update's log-probs before slicing: the whole (B, T, V) maths under autograd."""
    return dense_token_logprobs(logits[:, : targets.shape[1]], targets, temperature)


@pytest.mark.parametrize("allow_old_from_training", [True, False], ids=["fused-old", "separate-old"])
@pytest.mark.parametrize("case", list(CASES))
def test_a_step_with_small_slices_gives_the_unchunked_step_bit_for_bit(
    engine, monkeypatch, case, allow_old_from_training
):
    samples = _samples(engine, with_sampler_logprobs=True)
    engine.create_run(tiny_run("whole", **CASES[case]))
    engine.create_run(tiny_run("sliced", **CASES[case]))
    with monkeypatch.context() as patch:
        patch.setattr(update_module, "token_logprobs", _unchunked)
        whole, whole_weights, _, _ = _update(engine, "whole", samples, allow_old_from_training)
    vocab = engine.compute.unwrap(engine.ensure_loaded("sliced").policy).config.vocab_size
    # micro-batches of 2 samples: slices of 3 positions, which divide no sequence length here evenly
    monkeypatch.setattr(chunked_logprobs, "CHUNK_BYTES", 2 * 3 * vocab * 4)
    assert positions_per_chunk(2, vocab) == 3
    sliced, sliced_weights, _, _ = _update(engine, "sliced", samples, allow_old_from_training)
    assert sliced == whole
    assert sliced_weights.keys() == whole_weights.keys()
    for name, value in whole_weights.items():
        assert torch.equal(sliced_weights[name], value), name


def test_backward_writes_the_gradient_over_the_logits_and_another_saver_of_them_fails_loudly():
    model, ids = _model(), _ids()
    logits = model(input_ids=ids, use_cache=False).logits
    logp, _ = token_logprobs(logits, ids[:, 1:], 1.0, 5)
    grad = torch.autograd.grad(logp.sum(), logits, retain_graph=True)[0]
    same = grad.untyped_storage().data_ptr() == logits.untyped_storage().data_ptr()
    assert same, "the logits' gradient is a new logits-sized tensor"
    # logits saved by another operation before the log-probs are read by its backward after the overwrite
    logits = model(input_ids=ids, use_cache=False).logits
    squares = (logits**2).sum()
    logp, _ = token_logprobs(logits, ids[:, 1:], 1.0, 5)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        (logp.sum() + squares).backward()
