"""The OpenAI-compatible sampler and the engine that owns the loaded runs.

Chat-message encoding, token sampling with stop strings, the chat-completion sampler over a run's current
policy (or a base model), the engine that ties runs, steps and sampling together, and the lock that keeps one
GPU job at a time.
"""
