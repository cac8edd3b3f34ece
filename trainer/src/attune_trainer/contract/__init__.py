"""The trainer's contract, the bottom layer: what a request may say and what can go wrong.

The request schemas (`Hyperparameters`, `Sample`, `RunCreate`, `StepRequest`, chat requests) and their
size limits, the algorithm names, and the domain errors. It imports no other part of the trainer.
"""
