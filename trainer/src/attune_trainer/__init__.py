"""Attune trainer: the GPU optimizer service (PPO/GRPO) for RLVER training."""

__version__ = "0.1.0"
