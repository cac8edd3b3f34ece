"""The GPU benchmark's FSDP row passes only when it ran sharded and took the plain run's step: a crash, a
time-out, a run that was not FSDP, a missing plain run or a different step each fail the row."""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("bench_gpu_main", ROOT / "bench" / "gpu" / "main.py")
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)

CASE = {"device": "cpu", "dtype": "fp32", "gpus": 1, "compare_with": "plain"}
PLAIN = {"case": "plain", "ok": True, "loss": 1e-8, "grad_norm": 0.75, "update_logit_shift": 3.5}


def fsdp_row(**fields) -> dict:
    return {
        "case": "fsdp",
        "ok": True,
        "distributed_type": "FSDP",
        "world_size": bench.FSDP_CPU_RANKS,
        **{k: PLAIN[k] for k in bench.FSDP_COMPARED},
        **fields,
    }


def checked(row: dict, rows: list[dict] | None = None) -> dict:
    bench.check_fsdp(row, [PLAIN] if rows is None else rows, CASE)
    return row


def test_a_sharded_run_with_the_plain_step_passes():
    row = checked(fsdp_row(grad_norm=0.75 + 1e-6))
    assert row["ok"] is True and row["matches_plain"] is True, row


@pytest.mark.parametrize(
    "row",
    [
        {"case": "fsdp", "ok": False, "error": "RuntimeError: planted crash"},
        {"case": "fsdp", "ok": False, "error": "timed out after 240 s"},
        {"case": "fsdp", "ok": False, "oom": False, "error": "exit -11: "},
    ],
    ids=["crash", "timeout", "killed"],
)
def test_a_failed_fsdp_process_fails_the_row(row):
    assert checked(row)["ok"] is False


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({"distributed_type": "MULTI_CPU"}, "ran the step as MULTI_CPU on 2 ranks, not FSDP on 2"),
        ({"world_size": 1}, "ran the step as FSDP on 1 ranks, not FSDP on 2"),
        ({"grad_norm": 0.8}, "grad_norm 0.8 differs from the plain run's 0.75"),
        ({"update_logit_shift": float("nan")}, "update_logit_shift nan differs"),
        ({"loss": 0.01}, "loss 0.01 differs"),
    ],
)
def test_a_run_that_is_not_fsdp_or_takes_another_step_fails_the_row(fields, error):
    row = checked(fsdp_row(**fields))
    assert row["ok"] is False and error in row["error"], row


@pytest.mark.parametrize("rows", [[], [{**PLAIN, "ok": False}]], ids=["missing", "failed"])
def test_without_a_passing_plain_run_the_row_fails(rows):
    row = checked(fsdp_row(), rows)
    assert row["ok"] is False and "no plain run to compare with" in row["error"], row
