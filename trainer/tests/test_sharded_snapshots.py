"""A sharded snapshot in one process: tied weights are written once and come back tied, every tensor
and AdamW state comes back equal, and a short shard makes the folder incomplete."""

from types import SimpleNamespace

import torch
from transformers import LlamaConfig, LlamaForCausalLM

from attune_trainer.state.sharded_snapshots import load_shards, shards_complete, training_state, write_shards


def _tied_run(seed: int) -> SimpleNamespace:
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=64,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        tie_word_embeddings=True,  # as SmolLM2
    )
    model = LlamaForCausalLM(config)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, foreach=False)
    return SimpleNamespace(policy=model, policy_opt=optimizer, critic=None)


def test_tied_weights_are_written_once_and_load_back_tied(tmp_path):
    run = _tied_run(1)
    run.policy(input_ids=torch.tensor([[1, 2, 3]]), labels=torch.tensor([[1, 2, 3]])).loss.backward()
    run.policy_opt.step()
    state = training_state(run)
    assert "lm_head.weight" not in state["policy"] and "model.embed_tokens.weight" in state["policy"]
    write_shards(state, tmp_path)
    assert shards_complete(tmp_path)

    other = _tied_run(2)
    load_shards(other, tmp_path)
    assert other.policy.lm_head.weight is other.policy.model.embed_tokens.weight
    for (name, want), got in zip(run.policy.state_dict().items(), other.policy.state_dict().values(), strict=True):
        assert torch.equal(want, got), name
    for p, q in zip(run.policy.parameters(), other.policy.parameters(), strict=True):
        for field in ("step", "exp_avg", "exp_avg_sq"):
            assert torch.equal(run.policy_opt.state[p][field], other.policy_opt.state[q][field]), field

    shard = tmp_path / "__0_0.distcp"
    with open(shard, "r+b") as f:
        f.truncate(shard.stat().st_size - 1)
    assert not shards_complete(tmp_path)
