"""Exported checkpoints load with transformers (and peft) and give the trainer's own logits."""

import json
import subprocess
import sys

import pytest
import torch
from conftest import P, fixed_samples, tiny_run

from attune_trainer.state.export import PROVENANCE, ExportError, export_checkpoint

PROMPT = P + [{"role": "assistant", "content": "I hear you"}, {"role": "user", "content": "thanks, it helps"}]


def trained(engine, run_id, **run):
    # step 1's weights on disk: a LoRA snapshot's adapter; full weights, an export (their snapshot is sharded)
    engine.create_run(tiny_run(run_id, **{"snapshot_every": 1, "export_keep": 0 if run.get("lora") else 1, **run}))
    engine.apply_step(run_id, {"step": 1, "samples": fixed_samples(1)})
    return engine.loaded[run_id]


def trainer_logits(engine, loaded) -> torch.Tensor:
    policy = engine.compute.unwrap(loaded.policy)
    ids = loaded.tokenizer.apply_chat_template(
        PROMPT, add_generation_prompt=True, return_tensors="pt", return_dict=True
    )
    was_training = policy.training
    policy.eval()
    with torch.no_grad():
        out = policy(input_ids=ids["input_ids"]).logits
    policy.train(was_training)
    return out


def exported_logits(model, tokenizer) -> torch.Tensor:
    ids = tokenizer.apply_chat_template(PROMPT, add_generation_prompt=True, return_tensors="pt", return_dict=True)
    model.eval()
    with torch.no_grad():
        return model(input_ids=ids["input_ids"]).logits


def load_hf(path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    return AutoModelForCausalLM.from_pretrained(str(path)), AutoTokenizer.from_pretrained(str(path))


def test_full_export_loads_and_matches_the_trainer(engine, tmp_path):
    loaded = trained(engine, "full")
    summary = export_checkpoint(engine.state_dir, "full", 1, tmp_path / "out")
    assert summary["format"] == "full" and json.loads((tmp_path / "out" / PROVENANCE).read_text())["step"] == 1
    assert list((tmp_path / "out").glob("*.safetensors"))
    model, tok = load_hf(tmp_path / "out")
    assert tok.chat_template and "<|im_start|>" in tok.chat_template
    torch.testing.assert_close(exported_logits(model, tok), trainer_logits(engine, loaded), rtol=1e-5, atol=1e-5)
    # it generates, and stops at the end-of-turn token like the trainer's sampler
    ids = tok.apply_chat_template(PROMPT, add_generation_prompt=True, return_tensors="pt", return_dict=True)
    out = model.generate(**ids, max_new_tokens=4, do_sample=False)
    assert out.shape[1] > ids["input_ids"].shape[1]


def test_step_zero_of_a_full_run_is_the_base_model(engine, tmp_path):
    engine.create_run(tiny_run("base"))
    export_checkpoint(engine.state_dir, "base", 0, tmp_path / "out")
    model, tok = load_hf(tmp_path / "out")
    assert model.config.use_cache is True
    torch.testing.assert_close(exported_logits(model, tok), trainer_logits(engine, engine.loaded["base"]))


def test_lora_merged_and_adapter_alone_match_the_trainer(engine, tmp_path):
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    loaded = trained(engine, "lora", lora={"r": 4})
    want = trainer_logits(engine, loaded)

    assert export_checkpoint(engine.state_dir, "lora", 1, tmp_path / "merged", merge_lora=True)["format"] == "merged"
    assert not (tmp_path / "merged" / "adapter_config.json").exists()
    model, tok = load_hf(tmp_path / "merged")
    # W + BA applied once differs from Wx + B(Ax) by fp32 rounding only
    torch.testing.assert_close(exported_logits(model, tok), want, rtol=1e-4, atol=1e-4)

    assert export_checkpoint(engine.state_dir, "lora", 1, tmp_path / "adapter")["format"] == "lora_adapter"
    config = json.loads((tmp_path / "adapter" / "adapter_config.json").read_text())
    base = AutoModelForCausalLM.from_pretrained(config["base_model_name_or_path"])
    with_adapter = PeftModel.from_pretrained(base, str(tmp_path / "adapter"))
    torch.testing.assert_close(exported_logits(with_adapter, tok), want, rtol=1e-5, atol=1e-5)


def test_refusals_name_the_run_step_or_path(engine, tmp_path):
    trained(engine, "r")
    with pytest.raises(ExportError, match=r"no checkpoint of step 7: .*nearest steps with weights: 1"):
        export_checkpoint(engine.state_dir, "r", 7, tmp_path / "a")
    with pytest.raises(ExportError, match="no such run"):
        export_checkpoint(engine.state_dir, "nope", 1, tmp_path / "a")
    with pytest.raises(ExportError, match="--merge-lora: run 'r' is full fine-tuning"):
        export_checkpoint(engine.state_dir, "r", 1, tmp_path / "a", merge_lora=True)
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("keep me")
    with pytest.raises(ExportError, match="not an empty directory"):
        export_checkpoint(engine.state_dir, "r", 1, tmp_path / "full")
    assert (tmp_path / "full" / "x").read_text() == "keep me"
    assert not list(tmp_path.glob(".tmp-*"))


def test_cli_export_and_a_run_id_that_escapes(engine, tmp_path):
    trained(engine, "cli")
    cmd = [sys.executable, "-m", "attune_trainer", "export", "--state-dir", str(engine.state_dir)]
    ok = subprocess.run([*cmd, "--run", "cli", "--step", "1", "--out", str(tmp_path / "o")], capture_output=True)
    assert ok.returncode == 0, ok.stderr.decode()
    assert json.loads(ok.stdout)["path"] == str((tmp_path / "o").resolve())
    bad = subprocess.run([*cmd, "--run", "../cli", "--step", "1", "--out", str(tmp_path / "p")], capture_output=True)
    assert bad.returncode == 2 and "not a valid run id" in bad.stderr.decode()
    assert not (tmp_path / "p").exists()
