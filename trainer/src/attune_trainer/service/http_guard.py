"""Every request passes here before the app: the bearer token (every route but /health), then the
body size limit of its route; then it is logged. A plain ASGI middleware, so a refused request's
body is never read and an oversized one is never buffered past its limit."""

from __future__ import annotations

import hashlib
import hmac
import json
import time

from attune_trainer.contract.limits import body_limit
from attune_trainer.log import log

UNAUTHENTICATED_PATHS = frozenset({"/health"})  # liveness only: it says nothing but "ok"


def _error_body(message: str, type_: str, field: str | None = None) -> bytes:
    body = {"message": message, "type": type_}
    if field:
        body["field"] = field
    return json.dumps({"error": body}).encode()


async def _respond(send, status: int, body: bytes, extra_headers: list | None = None) -> None:
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers + (extra_headers or [])})
    await send({"type": "http.response.body", "body": body})


def _header(scope, name: bytes) -> bytes | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return value
    return None


class RequestGuard:
    def __init__(self, app, token: str | None):
        self.app = app
        # Compare digests: equal lengths, so the comparison time says nothing about the token.
        self._token_digest = hashlib.sha256(token.encode()).digest() if token else None

    def authorized(self, scope) -> bool:
        if self._token_digest is None or scope["path"] in UNAUTHENTICATED_PATHS:
            return True
        # raw header bytes: a non-ASCII header is just a wrong token, never an error
        scheme, _, credentials = (_header(scope, b"authorization") or b"").strip().partition(b" ")
        given = hashlib.sha256(credentials.strip()).digest()
        return scheme.lower() == b"bearer" and hmac.compare_digest(given, self._token_digest)

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        t0 = time.time()
        method, path = scope["method"], scope["path"]
        if not self.authorized(scope):
            log("warning", "unauthorized request", method=method, path=path)
            message = "missing or invalid bearer token: send 'Authorization: Bearer <TRAINER_TOKEN>'"
            body = _error_body(message, "authentication_error")
            return await _respond(send, 401, body, [(b"www-authenticate", b'Bearer realm="attune-trainer"')])
        limit = body_limit(method, path)
        declared = _header(scope, b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > limit):
            return await self._too_large(send, method, path, limit)
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            if size > limit:
                return await self._too_large(send, method, path, limit)
            if not message.get("more_body", False):
                break
        replayed = False

        async def replay():
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            return await receive()

        status = 500

        async def send_logged(message):
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, replay, send_logged)
        finally:
            if path not in UNAUTHENTICATED_PATHS:
                log("info", "http", method=method, path=path, status=status, seconds=round(time.time() - t0, 4))

    @staticmethod
    async def _too_large(send, method: str, path: str, limit: int) -> None:
        mib = limit / (1 << 20)
        message = f"body: the request body is larger than {mib:g} MiB, the limit of {method} {path}"
        log("warning", "request body too large", method=method, path=path, limit_bytes=limit)
        await _respond(send, 413, _error_body(message, "invalid_request_error", field="body"))
