"""The engine layer: one state directory's runs, the exactly-once step protocol that applies updates,
sampling, the metrics they record, and the dispatcher that runs each operation on every rank.

It composes `update/`, `state/` and `serving/`; only the HTTP service and the CLI sit above it.
"""
