"""The HTTP service, the top layer: the FastAPI app, its response models, the auth and body-size guard,
the mapping of the contract's errors to HTTP status codes, and the settings-schema generator.
"""
