"""The benchmark knob `--min-step-seconds`: a step takes at least that long, waiting with the engine
lock held (as a step on a busy device would); off by default, where it waits for nothing."""

import pytest
from conftest import fixed_samples, tiny_run

from attune_trainer.cli import build_parser
from attune_trainer.update import step_pad

MIN_SECONDS = 0.3


def _apply_first_step(engine) -> None:
    engine.create_run(tiny_run("pad"))
    engine.apply_step("pad", {"step": 1, "samples": fixed_samples(1)})


def _record_waits(engine) -> list[tuple[float, bool]]:
    """Each wait of the pad: its length and whether the engine lock was held. The pad's clock stands
    still except while it waits, so the step's own time (longer than the pad on a loaded machine)
    never decides whether it waits."""
    waits: list[tuple[float, bool]] = []
    now = [1000.0]

    def sleep(seconds: float) -> None:
        waits.append((seconds, engine.runs.lock._lock._is_owned()))
        now[0] += seconds

    engine.steps.pad.clock = lambda: now[0]
    engine.steps.pad.sleep = sleep
    return waits


def test_a_padded_step_takes_at_least_the_minimum_holding_the_lock(tmp_path):
    from attune_trainer.engine.engine import Engine

    engine = Engine(tmp_path / "state", device="cpu", min_step_seconds=MIN_SECONDS)
    waits = _record_waits(engine)
    _apply_first_step(engine)
    assert waits == [(MIN_SECONDS, True)], (
        "the pad waits the rest of the minimum once per step, with the engine lock held"
    )


def test_the_pad_waits_only_for_what_the_step_left(monkeypatch):
    clock = iter([10.0])
    waited: list[float] = []
    pad = step_pad.StepPad(MIN_SECONDS, clock=lambda: next(clock), sleep=waited.append)
    assert pad.hold(started=9.9) == pytest.approx(MIN_SECONDS - 0.1)
    assert waited == [pytest.approx(MIN_SECONDS - 0.1)]
    late = step_pad.StepPad(MIN_SECONDS, clock=lambda: 10.0, sleep=waited.append)
    assert late.hold(started=9.0) == 0.0 and len(waited) == 1, "a step longer than the minimum waits for nothing"


def test_the_default_pads_nothing(engine):
    waits = _record_waits(engine)
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
