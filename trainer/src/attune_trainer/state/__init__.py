"""Run state on disk: creating, loading, checkpointing and exporting runs.

The run store's directory layout and atomic writes, the state-directory lock, the engine lock that keeps
one GPU job at a time, loading a run's model, optimizer and critic from its stored settings and
checkpoint, writing checkpoints, exporting a checkpoint as a plain model, and recognising disk-full faults.
"""
