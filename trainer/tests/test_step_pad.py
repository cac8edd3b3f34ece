"""The benchmark knob `--min-step-seconds`: a step takes at least that long, waiting with the engine
lock held (as a step on a busy device would); off by default, where it waits for nothing."""

import time

import pytest
from conftest import fixed_samples, tiny_run

from attune_trainer.cli import build_parser
from attune_trainer.update import step_pad

MIN_SECONDS = 0.3


def _apply_first_step(engine) -> float:
    engine.create_run(tiny_run("pad"))
    started = time.monotonic()
    engine.apply_step("pad", {"step": 1, "samples": fixed_samples(1)})
    return time.monotonic() - started


def _record_waits(monkeypatch, engine) -> list[tuple[float, bool]]:
    """Each wait of the pad: its length and whether the engine lock was held (the real sleep still runs)."""
    waits: list[tuple[float, bool]] = []
    real_sleep = time.sleep

    def sleep(seconds: float) -> None:
        waits.append((seconds, engine.runs.lock._lock._is_owned()))
        real_sleep(seconds)

    monkeypatch.setattr(step_pad.time, "sleep", sleep)
    return waits


def test_a_padded_step_takes_at_least_the_minimum_holding_the_lock(tmp_path, monkeypatch):
    from attune_trainer.engine.engine import Engine

    engine = Engine(tmp_path / "state", device="cpu", min_step_seconds=MIN_SECONDS)
    waits = _record_waits(monkeypatch, engine)
    assert _apply_first_step(engine) >= MIN_SECONDS
    assert len(waits) == 1 and waits[0][1], "the pad waits once per step, with the engine lock held"


def test_the_default_pads_nothing(engine, monkeypatch):
    waits = _record_waits(monkeypatch, engine)
    _apply_first_step(engine)
    assert engine.steps.pad.min_seconds == 0
    assert waits == []


def test_the_flag_and_its_environment_variable(monkeypatch):
    monkeypatch.delenv(step_pad.ENV, raising=False)
    assert build_parser().parse_args(["serve"]).min_step_seconds == 0
    assert build_parser().parse_args(["serve", "--min-step-seconds", "1.5"]).min_step_seconds == 1.5
    monkeypatch.setenv(step_pad.ENV, "2")
    assert build_parser().parse_args(["serve"]).min_step_seconds == 2


@pytest.mark.parametrize("bad", ["-1", "soon", "nan"])
def test_bad_values_are_refused_naming_the_flag(bad, capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["serve", "--min-step-seconds", bad])
    assert "--min-step-seconds" in capsys.readouterr().err
