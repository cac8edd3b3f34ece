from pathlib import Path

import pytest
from pydantic import ValidationError

from attune_trainer.contract.schemas import Hyperparameters, StepOverrides
from attune_trainer.service.settings_schema import main, settings_schema, settings_schema_text

CHECKED_IN = Path(__file__).resolve().parents[1] / "settings.schema.json"


def test_checked_in_schema_is_what_the_models_produce():
    assert CHECKED_IN.read_text(encoding="utf-8") == settings_schema_text(), (
        "trainer/settings.schema.json is stale: run `npm run generate:settings`"
    )


def test_main_writes_the_schema(tmp_path):
    out = tmp_path / "s.json"
    assert main([str(out)]) == 0
    assert out.read_text(encoding="utf-8") == settings_schema_text()


def test_schema_names_the_algorithms_run_create_accepts():
    assert settings_schema()["algorithms"] == ["grpo", "ppo"]


def test_step_overrides_are_the_live_marked_hyperparameters_with_their_bounds():
    live = [name for name, prop in Hyperparameters.model_json_schema()["properties"].items() if prop.get("x-live")]
    assert list(StepOverrides.model_fields) == live
    assert "adam_beta1" not in live and "learning_rate" in live
    assert StepOverrides(clip_ratio=0.3).clip_ratio == 0.3
    assert StepOverrides().learning_rate is None
    with pytest.raises(ValidationError):
        StepOverrides(clip_ratio=1.0)
    with pytest.raises(ValidationError):
        StepOverrides(warmup_steps=3)
