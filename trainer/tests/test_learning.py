"""The optimizer optimizes: on a toy reward the mean sampled reward rises clearly (tiny model).

Toy reward: share of the completion's words that are in a chosen set of supportive words
("sorry", "feel", "hear", ...). The sampled completions come from the run's own
/v1/chat/completions path (engine.chat), so sampling and training are exercised together.
"""

import statistics

import pytest

PROMPTS = [
    "I feel sad today",
    "My boss yelled at me",
    "I can't sleep",
    "Nobody listens to me",
    "I failed my exam",
    "My friend moved away",
    "I am so tired",
    "Work is too much",
]
TARGET = set(
    "feel feeling felt sad happy angry upset tired lonely alone worried anxious afraid scared hurt "
    "sorry hear listen understand care support calm safe kind gentle hope glad proud".split()
)


def reward(text: str) -> float:
    w = text.split()
    return sum(x in TARGET for x in w) / len(w) if w else 0.0


def run_loop(engine, algorithm: str, n_prompts: int, per_prompt: int, steps: int):
    engine.create_run(
        {
            "run_id": algorithm,
            "base_model": "tiny-random",
            "algorithm": algorithm,
            "hyperparameters": {"learning_rate": 1e-2, "value_learning_rate": 1e-2, "micro_batch_size": 64},
            "seed": 7,
        }
    )
    history = []
    for step in range(1, steps + 1):
        samples = []
        for gi, p in enumerate(PROMPTS[:n_prompts]):
            msgs = [{"role": "user", "content": p}]
            r = engine.chat(
                {
                    "model": algorithm,
                    "messages": msgs,
                    "max_tokens": 8,
                    "n": per_prompt,
                    "temperature": 1.0,
                    "seed": step * 1000 + gi,
                }
            )
            for ch in r["choices"]:
                c = ch["message"]["content"]
                samples.append({"prompt": msgs, "completion": c, "reward": reward(c), "group": f"{step}-{gi}"})
        res = engine.apply_step(algorithm, {"step": step, "samples": samples})
        history.append(res["metrics"]["reward_mean"])
    return history


@pytest.mark.parametrize("algorithm,n_prompts,per_prompt", [("grpo", 4, 4), ("ppo", 8, 2)])
def test_mean_reward_rises(engine, algorithm, n_prompts, per_prompt):
    h = run_loop(engine, algorithm, n_prompts, per_prompt, steps=30)
    first, last = statistics.mean(h[:5]), statistics.mean(h[-5:])
    assert last > first + 0.3, f"{algorithm}: reward did not rise clearly: first5={first:.3f} last5={last:.3f} {h}"
