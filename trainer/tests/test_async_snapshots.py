"""A background snapshot write on a rank that does not commit: rank 0 may rename the folder as soon as
every shard is written, so that rank's write must not look at the folder after its own shard."""

import torch

from attune_trainer.state.async_snapshots import PendingSnapshot, SnapshotWrite


def _write(tmp_path, commit, hold) -> PendingSnapshot:
    folder = tmp_path / ".tmp-step-000001-sharded"
    folder.mkdir()
    state = {"policy": {"w": torch.ones(4)}}
    pending = PendingSnapshot(SnapshotWrite("r", 1, state, folder, None, commit, hold))
    pending.wait()
    return pending


def test_a_rank_without_the_commit_is_not_failed_by_rank_0_renaming_the_folder(tmp_path):
    committed = tmp_path / "step-000001"

    def rank_0_commits_first(step: int) -> None:
        # what rank 0's commit does while this rank's thread is descheduled after its shard
        (tmp_path / ".tmp-step-000001-sharded").rename(committed)

    pending = _write(tmp_path, None, rank_0_commits_first)
    assert pending.error is None, repr(pending.error)
    assert pending.take_error() is None
    assert committed.is_dir()


def test_the_committing_rank_reports_the_bytes_it_committed(tmp_path):
    seen = []
    pending = _write(tmp_path, lambda seconds, size: seen.append(size), lambda step: None)
    assert pending.error is None
    assert seen and seen[0] > 0
    report = pending.report()
    assert report is not None and report["committed"] and report["bytes"] == seen[0]
