"""The trainer's HTTP-facing error: a status, a message, and the field it is about."""

from __future__ import annotations


class ApiError(Exception):
    def __init__(
        self, status: int, message: str, type_: str = "invalid_request_error", field: str | None = None, **extra
    ):
        super().__init__(message)
        self.status = status
        self.message = message
        self.type = type_
        self.field = field
        self.extra = extra
