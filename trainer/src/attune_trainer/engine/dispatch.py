"""Runs engine operations on every rank: rank 0 (the HTTP server) broadcasts each operation over a
gloo control group (long timeout, so an idle server never trips the NCCL watchdog); the other
ranks loop in `worker_loop` and execute the same operation, so FSDP collectives line up."""

from __future__ import annotations

import threading
from datetime import timedelta

from attune_trainer.contract.errors import TrainerError
from attune_trainer.engine.engine import Engine
from attune_trainer.log import log

OPS = ("create_run", "apply_step", "chat", "ensure_loaded", "export_current")


class Dispatcher:
    def __init__(self, engine: Engine):
        self.engine = engine
        self.lock = threading.Lock()
        self.group = None
        if engine.world > 1:
            import torch.distributed as dist

            self.group = dist.new_group(backend="gloo", timeout=timedelta(days=365))

    def _bcast(self, obj):
        import torch.distributed as dist

        box = [obj]
        dist.broadcast_object_list(box, src=0, group=self.group)
        return box[0]

    def call(self, op: str, *args):
        assert op in OPS
        fn = getattr(self.engine, op)
        if self.engine.world == 1:
            return fn(*args)
        with self.lock:
            self._bcast((op, args))
            return fn(*args)

    def shutdown(self) -> None:
        if self.engine.world > 1:
            with self.lock:
                self._bcast(("shutdown", ()))

    def worker_loop(self) -> None:
        log("info", "worker rank waiting for operations", rank=self.engine.rank)
        while True:
            op, args = self._bcast(None)
            if op == "shutdown":
                log("info", "worker rank shutting down")
                return
            try:
                getattr(self.engine, op)(*args)
            except TrainerError:
                pass  # rank 0 reports it; every rank raised the same error at the same point
            except Exception as e:  # noqa: BLE001
                log("error", "operation failed on a worker rank", op=op, error=repr(e))
