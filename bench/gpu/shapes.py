"""Model configurations (published, written here: nothing is downloaded), the paper's step shapes read
from configs/paper-*.yaml, and how FLOPs are counted."""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]

# Published configurations (config.json of Qwen/Qwen2.5-7B-Instruct and HuggingFaceTB/SmolLM2-135M-Instruct).
MODELS = {
    "qwen2.5-7b": {
        "family": "qwen2",
        "hidden_size": 3584,
        "intermediate_size": 18944,
        "num_hidden_layers": 28,
        "num_attention_heads": 28,
        "num_key_value_heads": 4,
        "vocab_size": 152064,
        "max_position_embeddings": 32768,
        "rope_theta": 1e6,
        "rms_norm_eps": 1e-6,
        "tie_word_embeddings": False,
    },
    "smollm2-135m": {
        "family": "llama",
        "hidden_size": 576,
        "intermediate_size": 1536,
        "num_hidden_layers": 30,
        "num_attention_heads": 9,
        "num_key_value_heads": 3,
        "vocab_size": 49152,
        "max_position_embeddings": 8192,
        "rope_theta": 1e5,
        "rms_norm_eps": 1e-5,
        "tie_word_embeddings": True,
    },
}

# --tiny: a few layers of the same family (same head ratios, tying and rope), vocabulary = the tiny tokenizer's
TINY = {
    "qwen2.5-7b": {
        "hidden_size": 112,
        "intermediate_size": 224,
        "num_hidden_layers": 2,
        "num_attention_heads": 7,
        "num_key_value_heads": 1,
        "max_position_embeddings": 2048,
    },
    "smollm2-135m": {
        "hidden_size": 96,
        "intermediate_size": 256,
        "num_hidden_layers": 2,
        "num_attention_heads": 3,
        "num_key_value_heads": 1,
        "max_position_embeddings": 2048,
    },
}

# bf16 dense peak (TFLOP/s) by device name; an unknown device gets no MFU
BF16_PEAK_TFLOPS = {"H100": 989.0, "H200": 989.0}

FLOPS_NOTE = (
    "FLOPs per step = k * N * T + attention, k = 6 (forward + backward) or 8 with gradient checkpointing "
    "(the recomputed forward counted), N = trainable-or-frozen parameters of every model the step runs "
    "(policy, plus the critic for PPO), T = prompt + completion tokens; attention adds k/6 * 12 * layers * "
    "hidden * S per token (S = the sequence length, PaLM's count). With LoRA the frozen weights get no weight "
    "gradient, so this standard count overstates the work by up to a third. MFU = FLOPs / seconds / bf16 dense peak."
)


def _merge(base: dict, over: dict) -> dict:
    """`over` on top of `base` as the config loader merges: mappings key by key, anything else replaces."""
    merged = dict(base)
    for key, value in over.items():
        below = merged.get(key)
        merged[key] = (
            _merge(below, value)
            if isinstance(value, dict) and isinstance(below, dict)
            else value
        )
    return merged


def _read(path: Path) -> dict:
    """A config file with the files it `extends` (one, or a list merged in order) under it."""
    data = yaml.safe_load(path.read_text())
    bases = data.pop("extends", None)
    merged: dict = {}
    for base in [bases] if isinstance(bases, str) else bases or []:
        merged = _merge(merged, _read(path.parent / base))
    return _merge(merged, data)


def paper_shape(name: str) -> dict:
    """The step of configs/paper-<name>.yaml: dialogues per step, micro-batch, checkpointing, token lengths.

    The prompt of an 8-turn dialogue's last turn is estimated: a 300-token system prompt with the scenario,
    then 7 earlier exchanges of a ~80-token user message and a ~150-token reply (the reply only: the
    simulator and later turns never see the thinking), so ~1900 tokens; we use 2048."""
    cfg = _read(ROOT / "configs" / f"paper-{name}.yaml")
    training = cfg["training"]
    hp = training["hyperparameters"]
    return {
        "config": f"configs/paper-{name}.yaml",
        "algorithm": training["algorithm"],
        "samples": training["scenariosPerStep"] * training["samplesPerScenario"],
        "group_size": training["samplesPerScenario"],
        "micro_batch_size": hp["micro_batch_size"],
        "gradient_checkpointing": bool(hp.get("gradient_checkpointing", False)),
        "completion_tokens": cfg["policy"]["maxTokens"],
        "prompt_tokens": 2048,
        "turns": training["dialogue"]["maxTurns"],
    }


def step_flops(
    n_params: int, n_layers: int, hidden: int, seq_lens: list[int], checkpointing: bool
) -> float:
    k = 8 if checkpointing else 6
    tokens = sum(seq_lens)
    attention = sum(12 * n_layers * hidden * s * s for s in seq_lens)
    return k * n_params * tokens + k / 6 * attention


def bf16_peak(device_name: str) -> float | None:
    for key, tflops in BF16_PEAK_TFLOPS.items():
        if key in device_name:
            return tflops * 1e12
    return None
