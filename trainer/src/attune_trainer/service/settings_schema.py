"""Writes the JSON Schema of the trainer settings the orchestrator may send.

Run as `python -m attune_trainer.service.settings_schema FILE`. The orchestrator generates its zod
schemas and live-settings table from this file, so the pydantic models here stay the one
declaration of every trainer setting.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from attune_trainer.contract.schemas import Hyperparameters, LoraSpec, RunCreate


def settings_schema() -> dict[str, Any]:
    algorithm = RunCreate.model_json_schema()["properties"]["algorithm"]
    return {
        "algorithms": algorithm["enum"],
        "Hyperparameters": Hyperparameters.model_json_schema(),
        "LoraSpec": LoraSpec.model_json_schema(),
    }


def settings_schema_text() -> str:
    return json.dumps(settings_schema(), indent=2) + "\n"


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m attune_trainer.service.settings_schema FILE", file=sys.stderr)
        return 2
    Path(argv[0]).write_text(settings_schema_text(), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
