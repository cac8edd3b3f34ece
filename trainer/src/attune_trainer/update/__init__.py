"""The update math: turning a step's scored samples into one optimizer update.

Advantage estimators (GRPO group baselines, PPO with GAE), the policy and critic losses, the registry of
algorithms that pairs them, off-policy weights and staleness, the sampler-versus-trainer log-prob gap, the
old log-probs a ratio needs, and the benchmark step pad. Nothing here touches HTTP or the disk.
"""
