"""The HTTP service: the FastAPI app, its request and response schemas, and what sits between them and the engine.

Request schemas and their limits, response models, the auth and body-size guard, the trainer's errors and
their HTTP status codes, the step applier, the job dispatcher, and the Prometheus metrics.
"""
