"""`python -m attune_trainer serve ...` (also under `accelerate launch` for multi-GPU FSDP) and `export ...`."""

from __future__ import annotations

import argparse
import ipaddress
import json
import os
import socket
import ssl
import sys
from pathlib import Path

from attune_trainer.update.step_pad import ENV as STEP_PAD_ENV


def default_state_dir() -> Path:
    return Path(os.environ.get("ATTUNE_HOME", ".attune")) / "trainer"


def min_step_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value >= 0:  # also refuses NaN
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds >= 0 (flag or {STEP_PAD_ENV})")
    return value


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m attune_trainer",
        description="Attune trainer service: PPO/GRPO optimizer steps over HTTP, checkpoints, OpenAI-compatible "
        "sampling. Multi-GPU: run the same command under `accelerate launch --config_file "
        "trainer/configs/fsdp.yaml -m attune_trainer serve ...`.",
    )
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser(
        "serve",
        help="start the HTTP service",
        description="Start the HTTP service. When TRAINER_TOKEN is set, every request but GET /health needs "
        "'Authorization: Bearer <token>'. On an address other than loopback the service refuses to start "
        "without TRAINER_TOKEN. See SECURITY.md.",
    )
    s.add_argument(
        "--host",
        default="127.0.0.1",
        help="bind address (default 127.0.0.1); any other than loopback needs TRAINER_TOKEN",
    )
    s.add_argument("--port", type=int, default=8400, help="port (0 = pick a free one; default 8400)")
    s.add_argument(
        "--state-dir",
        type=Path,
        default=None,
        help="runs and checkpoints (default $ATTUNE_HOME/trainer, ATTUNE_HOME defaults to .attune)",
    )
    s.add_argument(
        "--models-dir",
        type=Path,
        default=None,
        help="the only directory local base models (HF directories, .gguf files) are loaded from; "
        "default: none, only the built-in 'tiny-random' and 'smollm2-135m'",
    )
    s.add_argument("--tls-cert", type=Path, default=None, help="serve HTTPS with this certificate (PEM)")
    s.add_argument("--tls-key", type=Path, default=None, help="the private key of --tls-cert (PEM)")
    s.add_argument(
        "--device", choices=["auto", "cpu", "cuda"], default="auto", help="auto: cuda when available (default)"
    )
    s.add_argument(
        "--dtype",
        choices=["auto", "fp32", "bf16"],
        default="auto",
        help="compute precision: auto = fp32 on CPU, bf16 autocast (fp32 master weights) on GPU",
    )
    s.add_argument("--max-loaded-runs", type=int, default=4, help="runs kept in memory (LRU; others reload)")
    s.add_argument("--threads", type=int, default=0, help="torch CPU threads (0 = torch's default)")
    s.add_argument(
        "--min-step-seconds",
        type=min_step_seconds,
        default=os.environ.get(STEP_PAD_ENV, "0"),
        help=f"benchmarks only: every optimizer step takes at least this long, holding the device as a bigger "
        f"model would (default ${STEP_PAD_ENV} or 0 = off)",
    )
    s.add_argument(
        "--log-level",
        default=os.environ.get("ATTUNE_TRAINER_LOG_LEVEL", "info"),
        choices=["debug", "info", "warning", "error"],
    )
    e = sub.add_parser(
        "export",
        help="write a checkpoint as a Hugging Face model directory",
        description="Write the committed checkpoint STEP of run RUN as a Hugging Face directory (safetensors, "
        "config, tokenizer with its chat template) that transformers loads. A LoRA run gives its adapter "
        "(loadable by peft and vLLM) unless --merge-lora merges it into full weights. Reads the state "
        "directory only; a running trainer may keep serving it.",
    )
    e.add_argument("--run", required=True, help="the run id (the training run's name)")
    e.add_argument("--step", type=int, required=True, help="a committed step (0 = the base model)")
    e.add_argument("--out", type=Path, required=True, help="the directory to write; must not exist or be empty")
    e.add_argument("--merge-lora", action="store_true", help="LoRA runs: merge the adapter into the base weights")
    e.add_argument(
        "--state-dir",
        type=Path,
        default=None,
        help="the trainer's state directory (default $ATTUNE_HOME/trainer, ATTUNE_HOME defaults to .attune)",
    )
    return p


def export_main(args) -> int:
    from attune_trainer.contract.errors import InvalidRunId
    from attune_trainer.state.export import ExportError, export_checkpoint

    state_dir = (args.state_dir or default_state_dir()).resolve()
    try:
        summary = export_checkpoint(state_dir, args.run, args.step, args.out, merge_lora=args.merge_lora)
    except (ExportError, InvalidRunId) as e:
        print(f"attune-trainer export: {e}", file=sys.stderr, flush=True)
        return 2
    print(json.dumps(summary), flush=True)
    return 0


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name other than localhost may resolve to anything


def refusal(args, token: str | None) -> str | None:
    """Why `serve` must not start with these options, or None. Checked before anything heavy loads."""
    if not token and not is_loopback(args.host):
        return (
            f"refusing to serve on {args.host} without a token: anyone who can reach that address could "
            "train, read or sample every run. Set TRAINER_TOKEN (a long random secret; the orchestrator "
            "sends it from its trainer.tokenEnv variable), add --tls-cert/--tls-key, or bind to 127.0.0.1"
        )
    if (args.tls_cert is None) != (args.tls_key is None):
        return "--tls-cert and --tls-key go together: give both or neither"
    if args.tls_cert is not None:
        try:
            ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(args.tls_cert, args.tls_key)
        except (OSError, ssl.SSLError) as e:
            return f"--tls-cert {args.tls_cert} / --tls-key {args.tls_key}: cannot be used ({e})"
    if args.models_dir is not None and not args.models_dir.is_dir():
        return f"--models-dir {args.models_dir}: no such directory"
    return None


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "export":
        return export_main(args)
    if args.command != "serve":
        return 2
    token = os.environ.get("TRAINER_TOKEN") or None
    refused = refusal(args, token)
    if refused:
        print(f"attune-trainer: {refused}", file=sys.stderr, flush=True)
        return 2
    return serve_main(args, token)


def serve_main(args, token: str | None) -> int:
    """`serve`: the engine on every rank; rank 0 also serves HTTP until stopped."""
    from attune_trainer.log import capture_warnings, log, set_level

    set_level(args.log_level)
    capture_warnings()
    if not is_loopback(args.host) and not args.tls_cert:
        log(
            "warning",
            "no TLS on an address other than loopback: the token and every request travel in clear text; "
            "add --tls-cert/--tls-key or put a TLS proxy in front",
            host=args.host,
        )
    import torch

    if args.threads > 0:
        torch.set_num_threads(args.threads)
    state_dir = (args.state_dir or default_state_dir()).resolve()
    engine = _start_engine(args, state_dir)
    if engine is None:
        return 1
    from attune_trainer.engine.dispatch import Dispatcher

    dispatcher = Dispatcher(engine)
    if not engine.is_main:
        dispatcher.worker_loop()
        engine.close()  # its shards of any background snapshot write, before the process exits
        return 0
    return _serve_http(args, token, state_dir, engine, dispatcher)


def _start_engine(args, state_dir: Path):
    """The engine over `state_dir`, or None (logged and printed) when another trainer holds it."""
    from attune_trainer.engine.engine import Engine
    from attune_trainer.log import log
    from attune_trainer.state.state_lock import StateDirInUse

    try:
        return Engine(
            state_dir,
            device=args.device,
            dtype=args.dtype,
            max_loaded_runs=args.max_loaded_runs,
            models_dir=args.models_dir.resolve() if args.models_dir else None,
            min_step_seconds=args.min_step_seconds,
        )
    except StateDirInUse as e:
        log("error", "state directory in use", state_dir=str(e.state_dir), holder_pid=e.holder_pid, error=str(e))
        print(f"attune-trainer: {e}", file=sys.stderr, flush=True)
        return None


def _serve_http(args, token: str | None, state_dir: Path, engine, dispatcher) -> int:
    import uvicorn

    from attune_trainer.log import log
    from attune_trainer.service.server import create_app

    app = create_app(engine, dispatcher, token=token or "")
    family = socket.AF_INET6 if ":" in args.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((args.host, args.port))
    except OSError as e:
        log("error", "cannot bind", host=args.host, port=args.port, error=str(e))
        return 1
    sock.listen(128)
    port = sock.getsockname()[1]
    scheme = "https" if args.tls_cert else "http"
    url = f"{scheme}://{args.host if family == socket.AF_INET else '[' + args.host + ']'}:{port}"
    tls = {"ssl_certfile": str(args.tls_cert), "ssl_keyfile": str(args.tls_key)} if args.tls_cert else {}
    config = uvicorn.Config(app, log_config=None, access_log=False, timeout_keep_alive=75, lifespan="off", **tls)
    log(
        "info",
        "listening",
        url=url,
        host=args.host,
        port=port,
        state_dir=str(state_dir),
        auth=bool(token),
        tls=bool(args.tls_cert),
        models_dir=str(args.models_dir) if args.models_dir else None,
        pid=os.getpid(),
    )
    print(f"attune-trainer listening on {url}", flush=True)
    stop = _Stop(engine, dispatcher)
    try:
        _server_that_stops(uvicorn, config, stop).run(sockets=[sock])
    finally:
        stop()
        log("info", "stopped")
    return 0


class _Stop:
    """Once: the worker ranks are told to stop, and every background snapshot write finishes and commits."""

    def __init__(self, engine, dispatcher):
        self.engine, self.dispatcher, self.done = engine, dispatcher, False

    def __call__(self) -> None:
        if not self.done:
            self.done = True
            self.dispatcher.shutdown()
            self.engine.close()


def _server_that_stops(uvicorn, config, stop: _Stop):
    """uvicorn's server, which stops the engine as it shuts down: on SIGTERM uvicorn re-raises the
    signal once it has shut down, which ends the process before any `finally` of ours runs."""

    class Server(uvicorn.Server):
        async def shutdown(self, sockets=None) -> None:
            await super().shutdown(sockets)
            stop()

    return Server(config)


if __name__ == "__main__":
    sys.exit(main())
