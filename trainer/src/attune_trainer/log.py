"""Structured logging: one JSON object per line on stderr."""

from __future__ import annotations

import json
import os
import sys
import threading
import time

_LEVELS = {"debug": 10, "info": 20, "warning": 30, "error": 40}
_lock = threading.Lock()
_min_level = _LEVELS.get(os.environ.get("ATTUNE_TRAINER_LOG_LEVEL", "info").lower(), 20)
_rank = int(os.environ.get("RANK", "0") or 0)


def set_level(level: str) -> None:
    global _min_level
    _min_level = _LEVELS.get(level.lower(), 20)


def log(level: str, msg: str, **fields) -> None:
    if _LEVELS.get(level, 20) < _min_level:
        return
    rec = {"ts": round(time.time(), 3), "level": level, "msg": msg, "component": "trainer"}
    if _rank:
        rec["rank"] = _rank
    for k, v in fields.items():
        # never log secrets (the bearer token) even if passed by mistake
        if "token" in k.lower() and k not in ("tokens", "prompt_tokens", "completion_tokens"):
            continue
        rec[k] = v
    line = json.dumps(rec, default=str)
    with _lock:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()


def capture_warnings() -> None:
    """Route Python warnings (e.g. library deprecations) into the JSON log instead of raw stderr."""
    import warnings

    def _show(message, category, filename, lineno, file=None, line=None):
        log("warning", str(message), category=category.__name__, where=f"{filename}:{lineno}")

    warnings.showwarning = _show
