"""Sending a step's full weights to vLLM's workers over NCCL (vLLM's native weight transfer)."""
