"""Merge the gpu.json reports of several device calls (each ran some cases with --only) into one:
the first report's header, every report's rows, a later row replacing an earlier one of the same case.

    python3 bench/gpu/merge.py call1/gpu.json call2/gpu.json call3/gpu.json > bench/results/gpu.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def merge(reports: list[dict]) -> dict:
    rows: dict[str, dict] = {}
    for report in reports:
        for row in report["results"]:
            rows[row["case"]] = row
    return {**reports[0], "results": list(rows.values()), "merged_from": len(reports)}


if __name__ == "__main__":
    print(
        json.dumps(
            merge([json.loads(Path(p).read_text()) for p in sys.argv[1:]]), indent=2
        )
    )
