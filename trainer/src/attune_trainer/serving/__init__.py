"""The OpenAI-compatible sampler: token sampling with stop strings and the chat-completion sampler over
a run's current policy (or a base model). It reads runs from `state/` and never imports `update/`.
"""
