"""Peer reference for the quick learning benchmark: the same task trained with TRL's GRPOTrainer on CPU.

The same tiny random model (built by the trainer's own builder, same seed), the same two fixture
scenarios' opening messages under the same policy system prompt and chat template, 4 generations
per prompt, 2 prompts a step, 16 new tokens at temperature 1, lr 0.02, 16 steps, one optimizer
update a step, clip 0.2, no KL, token-mean loss, group-normalised advantages. The reward is the
rule-based user's rule on a single turn: (50 + change) / 100, so the ceiling is 0.6 (Attune's
two-turn dialogues reach 0.7). An empty reply scores 0, as a malformed turn does in Attune.

    npm run bench:learning:peer [-- --steps N --out FILE --seed S]

Prints the mean reward per step and the first-three/last-three means, and writes
bench/results/learning-peer.json ({"rows": [{"step", "reward_mean"}], ...}).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "trainer" / "src"))

os.environ.setdefault("TQDM_DISABLE", "1")

# The policy's system prompt (src/core/prompts/policy.ts, English, no think mode), the rule-based
# user's opening for scenarios without a first message and its rule (src/core/ruleBasedUser.ts).
# Checked against those files at start, so a change there stops this script instead of skewing it.
POLICY_SYSTEM_PROMPT = (
    "You are a warm, perceptive conversation partner. Listen closely, respond to what the person actually "
    "needs, and keep replies natural and concise."
)
RULE_BASED_OPENING = "I had a rough day and I do not want a lecture."
TARGET_CHARS = 64
CHARS_PER_POINT = 3
INITIAL_EMOTION = 50
SCENARIOS_DIR = ROOT / "test" / "fixtures" / "scenarios"
ATTUNE_RESULTS = ROOT / "bench" / "results" / "learning-quick.json"
THINK_BLOCK = re.compile(r"<think>[\s\S]*?</think>")


def check_constants() -> None:
    """Stops with the file's name when the TypeScript side no longer says what this script assumes."""
    expected = {
        ROOT / "src/core/prompts/policy.ts": [POLICY_SYSTEM_PROMPT],
        ROOT / "src/core/ruleBasedUser.ts": [
            RULE_BASED_OPENING,
            f"targetChars: {TARGET_CHARS}, charsPerPoint: {CHARS_PER_POINT}",
        ],
    }
    for path, needles in expected.items():
        text = path.read_text(encoding="utf-8")
        for needle in needles:
            if needle not in text:
                raise SystemExit(f"peer_grpo.py: {path} no longer contains {needle!r}; update this script to match")


def emotion_change(reply: str) -> int:
    """ruleBasedEmotionChange: JavaScript's Math.round (halves up), clamped to [-10, 10]."""
    points = math.floor((TARGET_CHARS - len(reply)) / CHARS_PER_POINT + 0.5)
    return max(-10, min(10, points))


def visible_reply(raw: str) -> str:
    """parsePlainReply: think blocks removed until none is left, then trimmed."""
    before = None
    while before != raw:
        before = raw
        raw = THINK_BLOCK.sub("", raw)
    return raw.strip()


def single_turn_reward(raw: str) -> float:
    reply = visible_reply(raw)
    if not reply:
        return 0.0
    return (INITIAL_EMOTION + emotion_change(reply)) / 100


def scenario_prompts(directory: Path) -> list[list[dict[str, str]]]:
    """One chat prompt per fixture scenario: the system prompt and the user's first message."""
    import yaml

    prompts = []
    for path in sorted(directory.glob("*.yaml")):
        scenario = yaml.safe_load(path.read_text(encoding="utf-8"))
        if not isinstance(scenario, dict):
            raise SystemExit(f"peer_grpo.py: {path}: not a scenario mapping")
        opening = scenario.get("firstMessage") or RULE_BASED_OPENING
        prompts.append([{"role": "system", "content": POLICY_SYSTEM_PROMPT}, {"role": "user", "content": opening}])
    if not prompts:
        raise SystemExit(f"peer_grpo.py: no scenarios (*.yaml) in {directory}")
    return prompts


def completion_text(completion: Any) -> str:
    """TRL passes conversational completions as [{"role": "assistant", "content": ...}]."""
    if isinstance(completion, list):
        return "".join(str(m.get("content", "")) for m in completion)
    return str(completion)


def mean(xs: list[float]) -> float:
    return sum(xs) / len(xs) if xs else float("nan")


def attune_grpo_rows() -> list[dict[str, float]]:
    """Attune's GRPO curve from bench/results/learning-quick.json (npm run bench:learning -- --quick), when that file has one."""
    if not ATTUNE_RESULTS.exists():
        return []
    data = json.loads(ATTUNE_RESULTS.read_text(encoding="utf-8"))
    for run in data.get("runs", []):
        if run.get("algorithm") == "grpo" and run.get("model") == "tiny-random":
            return list(run.get("rows", []))
    return []


def train(args: argparse.Namespace) -> dict[str, Any]:
    import torch
    from attune_trainer.models import build_tiny_random, load_tokenizer
    from datasets import Dataset
    from transformers import AutoModelForCausalLM
    from trl import GRPOConfig, GRPOTrainer

    torch.set_num_threads(max(1, os.cpu_count() or 1))
    prompts = scenario_prompts(SCENARIOS_DIR)
    step_rewards: list[list[float]] = []

    def reward(completions: list[Any], **_: Any) -> list[float]:
        values = [single_turn_reward(completion_text(c)) for c in completions]
        step_rewards.append(values)
        return values

    with tempfile.TemporaryDirectory(prefix="attune-peer-") as tmp:
        base = Path(tmp) / "base"
        build_tiny_random(base, args.seed)
        tokenizer = load_tokenizer(base)
        model = AutoModelForCausalLM.from_pretrained(str(base), dtype=torch.float32)
        config = GRPOConfig(
            output_dir=str(Path(tmp) / "out"),
            seed=args.seed,
            use_cpu=True,
            bf16=False,
            fp16=False,
            gradient_checkpointing=False,
            max_steps=args.steps,
            per_device_train_batch_size=args.generations * len(prompts),
            gradient_accumulation_steps=1,
            num_generations=args.generations,
            max_completion_length=args.max_tokens,
            temperature=1.0,
            top_p=1.0,
            top_k=0,
            learning_rate=args.lr,
            lr_scheduler_type="constant",
            warmup_steps=0,
            weight_decay=0.0,
            max_grad_norm=1.0,
            beta=0.0,
            epsilon=0.2,
            num_iterations=1,
            loss_type="dapo",
            scale_rewards="group",
            logging_steps=1,
            save_strategy="no",
            report_to="none",
            disable_tqdm=True,
        )
        trainer = GRPOTrainer(
            model=model,
            reward_funcs=reward,
            args=config,
            train_dataset=Dataset.from_list([{"prompt": p} for p in prompts]),
            processing_class=tokenizer,
        )
        started = time.monotonic()
        trainer.train()
        seconds = time.monotonic() - started
    rows = [{"step": i + 1, "reward_mean": mean(r)} for i, r in enumerate(step_rewards)]
    return {
        "peer": f"trl {__import__('trl').__version__} GRPOTrainer (CPU)",
        "task": "single turn: reward = (50 + emotion change) / 100, ceiling 0.6; empty reply 0",
        "steps": args.steps,
        "prompts_per_step": len(prompts),
        "generations_per_prompt": args.generations,
        "max_completion_length": args.max_tokens,
        "learning_rate": args.lr,
        "seed": args.seed,
        "seconds": round(seconds, 1),
        "rows": rows,
        "first3": mean([r["reward_mean"] for r in rows[:3]]),
        "last3": mean([r["reward_mean"] for r in rows[-3:]]),
    }


def curve(rows: list[dict[str, Any]]) -> str:
    return " ".join(f"{r['reward_mean']:.3f}" for r in rows)


def print_summary(result: dict[str, Any]) -> None:
    rows = result["rows"]
    print(f"{result['peer']}: {len(rows)} steps in {result['seconds']} s")
    print(f"peer rewards:   {curve(rows)}")
    print(f"peer first 3: {result['first3']:.3f}  last 3: {result['last3']:.3f}  (ceiling 0.600)")
    attune = attune_grpo_rows()
    if attune:
        # Share of the possible rise above a neutral 0.5: 0.7 is Attune's two-turn ceiling, 0.6 the peer's.
        print(f"attune rewards: {curve(attune)}")
        print("step  attune  (of ceiling)  peer  (of ceiling)")
        for a, p in zip(attune, rows, strict=False):
            print(
                f"{a['step']:>4}  {a['reward_mean']:.3f}  {(a['reward_mean'] - 0.5) / 0.2:>+6.2f}"
                f"        {p['reward_mean']:.3f}  {(p['reward_mean'] - 0.5) / 0.1:>+6.2f}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=16)
    parser.add_argument("--generations", type=int, default=4, help="samples per prompt (GRPO group size)")
    parser.add_argument("--max-tokens", type=int, default=16, help="max_completion_length")
    parser.add_argument("--lr", type=float, default=0.02)
    parser.add_argument("--seed", type=int, default=7, help="the tiny model's seed (Attune's training.seed)")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "learning-peer.json")
    args = parser.parse_args()
    check_constants()
    result = train(args)
    print_summary(result)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"results: {args.out}")


if __name__ == "__main__":
    main()
