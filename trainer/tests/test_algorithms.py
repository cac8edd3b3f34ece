"""The algorithm registry: what each name uses, and that the run schema accepts exactly its names."""

import pytest
import torch
from pydantic import ValidationError

from attune_trainer.contract.algorithms import ALGORITHM_NAMES, ALGORITHMS
from attune_trainer.contract.schemas import Hyperparameters, RunCreate
from attune_trainer.update import losses
from attune_trainer.update.advantages import ADVANTAGE_ESTIMATORS, estimator_for
from attune_trainer.update.algorithms import POLICY_LOSSES, policy_loss_for, register_policy_loss


def test_every_algorithm_names_a_registered_estimator_and_loss():
    assert ALGORITHM_NAMES == ("grpo", "ppo")
    for name, algorithm in ALGORITHMS.items():
        assert algorithm.advantage_estimator in ADVANTAGE_ESTIMATORS, name
        assert algorithm.policy_loss in POLICY_LOSSES, name
        assert estimator_for(name) is ADVANTAGE_ESTIMATORS[algorithm.advantage_estimator]
        assert policy_loss_for(name) is POLICY_LOSSES[algorithm.policy_loss]


def test_grpo_has_no_critic_and_ppo_uses_gae_with_one():
    assert ALGORITHMS["grpo"].advantage_estimator == "grpo" and not ALGORITHMS["grpo"].critic
    assert ALGORITHMS["ppo"].advantage_estimator == "gae" and ALGORITHMS["ppo"].critic


def test_the_registered_surrogate_reads_clip_ratio_from_the_hyperparameters():
    logp, old, adv = torch.tensor([[0.5, -0.5]]), torch.zeros(1, 2), torch.tensor([[1.0, -1.0]])
    got = policy_loss_for("grpo")(logp, old, adv, Hyperparameters(clip_ratio=0.1))
    want = losses.clipped_surrogate(logp, old, adv, 0.1)
    for g, w in zip(got, want, strict=True):
        assert torch.equal(g, w)


def test_a_loss_name_registers_once():
    with pytest.raises(ValueError, match="registered twice"):
        register_policy_loss("clipped_surrogate")(lambda *a: a)


def test_run_create_accepts_exactly_the_registry_names():
    body = {"run_id": "a", "base_model": "tiny-random"}
    for name in ALGORITHM_NAMES:
        assert RunCreate.model_validate({**body, "algorithm": name}).algorithm == name
    for other in ("dpo", "GRPO", "", "gae"):
        with pytest.raises(ValidationError):
            RunCreate.model_validate({**body, "algorithm": other})


def test_json_schema_renders_the_names_as_an_enum():
    prop = RunCreate.model_json_schema()["properties"]["algorithm"]
    assert prop["type"] == "string" and prop["enum"] == list(ALGORITHM_NAMES)
