"""A step that fails part-way is never applied twice: the run stays at its last committed checkpoint,
and the retried step ends bit-identical to an undisturbed run (faults from `faults.py`)."""

import json

import pytest
import torch
from conftest import fixed_samples, optimizer_tensors, policy_tensors, tiny_run
from fastapi.testclient import TestClient

from attune_trainer import log as trainer_log

# PPO with two optimizer updates per step: policy, critic and both AdamW states must all come back
# every step a snapshot: the commit faults fire inside the snapshot write
RUN = tiny_run("f", algorithm="ppo", mini_batch_size=3, kl_coef=0.05, seed=9, snapshot_every=1)
STEPS = 3
FAILING_STEP = 2


def _client(state_dir):
    from attune_trainer.engine.engine import Engine
    from attune_trainer.service.server import create_app

    engine = Engine(state_dir, device="cpu")
    return engine, TestClient(create_app(engine, token=""), raise_server_exceptions=False)


def _post(client, step):
    return client.post(f"/v1/runs/{RUN['run_id']}/steps", json={"step": step, "samples": fixed_samples(step)})


def _metrics(body):
    return {k: v for k, v in body["metrics"].items() if k != "seconds"}


def _optimizer_tensors(state_dir, step):
    return optimizer_tensors(state_dir, RUN["run_id"], step, models=("policy", "critic"))


def _committed(log_text, step):
    events = [json.loads(line) for line in log_text.splitlines() if line.startswith("{")]
    return [e for e in events if e.get("msg") == "checkpoint committed" and e.get("step") == step]


@pytest.fixture
def undisturbed(tmp_path_factory):
    state_dir = tmp_path_factory.mktemp("undisturbed") / "state"
    _, client = _client(state_dir)
    assert client.post("/v1/runs", json=RUN).status_code == 201
    results = [_post(client, s).json() for s in range(1, STEPS + 1)]
    return state_dir, results


@pytest.mark.parametrize("point", ["during_update", "after_update", "during_commit", "after_commit"])
def test_a_failed_step_is_applied_once(point, undisturbed, tmp_path, monkeypatch, capsys):
    ref_dir, ref_results = undisturbed
    monkeypatch.setenv("ATTUNE_TRAINER_FAULT_INJECTION", f"{point}@{FAILING_STEP}:1")
    monkeypatch.setattr(trainer_log, "_min_level", 20)  # info: the commit events
    capsys.readouterr()
    state_dir = tmp_path / "state"
    engine, client = _client(state_dir)
    assert client.post("/v1/runs", json=RUN).status_code == 201
    assert _post(client, 1).status_code == 200

    failed = _post(client, FAILING_STEP)
    error = failed.json()["error"]
    if point == "during_commit":
        assert failed.status_code == 507, failed.text
        assert str(state_dir) in error["message"] and "disk full" in error["message"]
    else:
        assert failed.status_code == 500 and "injected fault" in error["message"]
    ckpts = state_dir / "runs" / RUN["run_id"] / "checkpoints"
    assert not [p.name for p in ckpts.iterdir() if p.name.startswith(".tmp-")]
    # committed or not, the run's state is what is on disk
    committed = point == "after_commit"
    assert client.get(f"/v1/runs/{RUN['run_id']}").json()["step"] == (FAILING_STEP if committed else 1)

    retried = _post(client, FAILING_STEP)
    assert retried.status_code == 200, retried.text
    assert retried.json()["replayed"] is committed
    assert _metrics(retried.json()) == _metrics(ref_results[FAILING_STEP - 1])
    last = _post(client, STEPS)
    assert last.status_code == 200 and _metrics(last.json()) == _metrics(ref_results[STEPS - 1])

    for want, got in (
        (policy_tensors(ref_dir, RUN["run_id"], STEPS), policy_tensors(state_dir, RUN["run_id"], STEPS)),
        (_optimizer_tensors(ref_dir, STEPS), _optimizer_tensors(state_dir, STEPS)),
    ):
        assert want.keys() == got.keys() and want
        for k in want:
            assert torch.equal(want[k], got[k]), f"tensor {k} differs"
    assert len(_committed(capsys.readouterr().err, FAILING_STEP)) == 1


def test_stale_gradients_do_not_leak_into_a_step(undisturbed, tmp_path):
    ref_dir, ref_results = undisturbed
    state_dir = tmp_path / "state"
    engine, client = _client(state_dir)
    assert client.post("/v1/runs", json=RUN).status_code == 201
    run = engine.loaded[RUN["run_id"]]
    for model in (run.policy, run.critic):
        for p in model.parameters():
            if p.requires_grad:
                p.grad = torch.full_like(p, 0.5)  # as left by a failed attempt
    results = [_post(client, s).json() for s in range(1, STEPS + 1)]
    assert [_metrics(r) for r in results] == [_metrics(r) for r in ref_results]
    want, got = policy_tensors(ref_dir, RUN["run_id"], STEPS), policy_tensors(state_dir, RUN["run_id"], STEPS)
    assert all(torch.equal(want[k], got[k]) for k in want)


def test_torchs_short_write_on_a_full_disk_answers_507_and_the_step_applies_once_space_is_back(tmp_path, monkeypatch):
    """A LoRA snapshot is written within its step (a full-weight one in the background: the test below)."""
    from attune_trainer.state import disk_full
    from attune_trainer.state.checkpoints import CheckpointWriter

    state_dir = tmp_path / "state"
    _, client = _client(state_dir)
    assert client.post("/v1/runs", json=dict(RUN, lora={"r": 4})).status_code == 201
    assert _post(client, 1).status_code == 200
    save = CheckpointWriter.save

    def short_write(*_args, **_kwargs):
        raise RuntimeError("[enforce fail at inline_container.cc:671] . unexpected pos 463782912 vs 463782800")

    monkeypatch.setattr(CheckpointWriter, "save", short_write)
    real_usage = disk_full.shutil.disk_usage
    monkeypatch.setattr(disk_full.shutil, "disk_usage", lambda p: real_usage(p)._replace(free=1024))
    failed = _post(client, 2)
    assert failed.status_code == 507, failed.text
    assert "disk full" in failed.json()["error"]["message"]
    assert client.get(f"/v1/runs/{RUN['run_id']}").json()["step"] == 1

    monkeypatch.setattr(CheckpointWriter, "save", save)
    monkeypatch.setattr(disk_full.shutil, "disk_usage", real_usage)
    assert _post(client, 2).status_code == 200
    assert client.get(f"/v1/runs/{RUN['run_id']}").json()["step"] == 2


PAGE = 4096
# Every file a step's commit writes, in the order it writes them: the step's log entry (before the
# update), then for LoRA the adapter, the critic, the optimizer states, the checkpoint's metadata,
# then (after the rename that commits the step) the step's stored result. A full-weight step commits
# by its log entry and its result; its snapshot, if any, is written in the background (a failure
# there loses only the snapshot: test_a_background_snapshot_write_that_fails_loses_only_the_snapshot).
COMMIT_FILES = {
    "full": ["log", "result"],
    "lora": [
        "log",
        "policy/README.md",
        "policy/adapter_model.safetensors",
        "policy/adapter_config.json",
        "critic.safetensors",
        "optimizer.pt",
        "state.json",
        "result",
    ],
}


def _pages(path):
    return path.stat().st_blocks * 512 // PAGE


def _files_written(state_dir, run_id, step):
    """The files of `step`'s commit in the order they were written: a tmpfs numbers the inodes of a
    mount in creation order, and each of these files is written whole before the next is created
    (state.json and the result through a temporary file renamed into place, which keeps its inode)."""
    run_dir = state_dir / "runs" / run_id
    ckpt = run_dir / "checkpoints" / f"step-{step:06d}"
    # the tokenizer files are hard links to the run's own copy, written at its creation, not by the commit
    files = sorted(
        (p for p in ckpt.rglob("*") if p.is_file() and p.stat().st_nlink == 1), key=lambda p: p.stat().st_ino
    )
    named = {"log": run_dir / "steplog" / f"step-{step:06d}.json"}
    named.update({p.relative_to(ckpt).as_posix(): p for p in files})
    named["result"] = run_dir / "results" / f"step-{step:06d}.json"
    return named


def _left_behind(store):
    """What a failed commit left in its temporary files when the trainer cleans them up: name to size."""
    out = {}
    for tmp in store.ckpt_dir.glob(".tmp-*"):
        for p in (p for p in tmp.rglob("*") if p.is_file() and p.stat().st_nlink == 1):  # not the linked tokenizer
            name = p.relative_to(tmp).as_posix()
            out["state.json" if name.startswith(".tmp-state.json") else name] = p.stat().st_size
    for p in store.results_dir.glob(".tmp-*"):
        out["result"] = p.stat().st_size
    for p in (store.dir / "steplog").glob(".tmp-*"):
        out["log"] = p.stat().st_size
    return out


@pytest.mark.parametrize("kind", ["full", "lora"])
def test_each_file_of_a_commit_written_on_a_full_tmpfs_answers_507_and_rolls_back(kind, tmp_path, monkeypatch):
    """Each file of a commit in turn is the write that runs out of room: the tmpfs is resized to what
    is used now plus the pages of the files written before it in the previous step's commit, plus
    half of its own (none for a one-page file). The step answers 507 naming the state directory and
    the run stays at its last committed step; once there is room again the same step applies."""
    import os
    import subprocess

    from attune_trainer.state.store import RunStore

    cleaned = []
    cleanup_tmp = RunStore.cleanup_tmp

    def recording_cleanup(store):
        cleaned.append(_left_behind(store))
        return cleanup_tmp(store)

    monkeypatch.setattr(RunStore, "cleanup_tmp", recording_cleanup)
    # full weights: no snapshot in these steps (its write would be in the background)
    between = {"hyperparameters": {**RUN["hyperparameters"], "snapshot_every": 100}}
    lora = {"lora": {"r": 4}} if kind == "lora" else {"lora": None, **between}
    run = {**RUN, "run_id": f"disk-{kind}", **lora}
    state_dir = tmp_path / "state"
    state_dir.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256M", "tmpfs", str(state_dir)]).returncode != 0:
        pytest.fail("mounting a tmpfs needs root")

    def post(step):
        return client.post(f"/v1/runs/{run['run_id']}/steps", json={"step": step, "samples": fixed_samples(step)})

    def run_step():
        return client.get(f"/v1/runs/{run['run_id']}").json()["step"]

    try:
        _, client = _client(state_dir)
        assert client.post("/v1/runs", json=run).status_code == 201
        assert post(1).status_code == 200
        for step, target in enumerate(COMMIT_FILES[kind], start=2):
            previous = _files_written(state_dir, run["run_id"], step - 1)
            assert list(previous) == COMMIT_FILES[kind]
            disk = os.statvfs(state_dir)
            used = (disk.f_blocks - disk.f_bfree) * disk.f_frsize
            before = sum(_pages(p) for p in list(previous.values())[: COMMIT_FILES[kind].index(target)])
            room = used + (before + _pages(previous[target]) // 2) * PAGE
            subprocess.run(["mount", "-o", f"remount,size={room}", str(state_dir)], check=True)

            cleaned.clear()
            failed = post(step)
            assert failed.status_code == 507, (target, failed.text)
            # it was this write that ran out of room: the ones before it are whole, none after it began
            written = cleaned[0]
            order = COMMIT_FILES[kind]
            assert written.get(target, 0) < previous[target].stat().st_size, (target, written)
            # the log entry is renamed into place before the update, so it is never among the temporary files
            before_target = [n for n in order[: order.index(target)] if n != "log"]
            whole = {} if target == "result" else {n: previous[n].stat().st_size for n in before_target}
            assert {n: size for n, size in written.items() if n != target} == whole, (target, written)
            error = failed.json()["error"]
            assert error["type"] == "storage_error" and error["state_dir"] == str(state_dir), (target, error)
            assert error["message"].startswith(f"disk full: no space left in the state directory {state_dir} ")
            ckpts = state_dir / "runs" / run["run_id"] / "checkpoints"
            assert not [p.name for p in ckpts.iterdir() if p.name.startswith(".tmp-")], target
            # LoRA's result is written after the snapshot's rename, its commit: that step stays applied, its
            # retry replays it; a full-weight step between snapshots is committed by its result itself
            committed = target == "result" and kind == "lora"
            assert run_step() == (step if committed else step - 1), target

            subprocess.run(["mount", "-o", "remount,size=256M", str(state_dir)], check=True)
            retried = post(step)
            assert retried.status_code == 200, (target, retried.text)
            assert retried.json()["replayed"] is committed, target
            assert run_step() == step, target
            assert list(_files_written(state_dir, run["run_id"], step)) == COMMIT_FILES[kind]
    finally:
        # lazily: the engine of this test still holds its state lock there
        subprocess.run(["umount", "-l", str(state_dir)], check=True)


# A snapshot every 3 steps: step 2 is committed by its stored result alone (its log entry is durable)
BETWEEN = tiny_run("b", algorithm="ppo", mini_batch_size=3, kl_coef=0.05, seed=9, snapshot_every=3)


@pytest.mark.parametrize("point", ["during_update", "after_update", "during_commit", "after_commit"])
def test_a_step_between_snapshots_that_fails_is_applied_once(point, tmp_path, monkeypatch):
    def post(client, step):
        return client.post(f"/v1/runs/{BETWEEN['run_id']}/steps", json={"step": step, "samples": fixed_samples(step)})

    _, reference = _client(tmp_path / "reference")
    assert reference.post("/v1/runs", json=BETWEEN).status_code == 201
    want = [_metrics(post(reference, s).json()) for s in range(1, STEPS + 1)]
    monkeypatch.setenv("ATTUNE_TRAINER_FAULT_INJECTION", f"{point}@{FAILING_STEP}:1")
    state_dir = tmp_path / "state"
    _, client = _client(state_dir)
    assert client.post("/v1/runs", json=BETWEEN).status_code == 201
    assert post(client, 1).status_code == 200
    failed = post(client, FAILING_STEP)
    assert failed.status_code == (507 if point == "during_commit" else 500), failed.text
    committed = point == "after_commit"
    assert client.get(f"/v1/runs/{BETWEEN['run_id']}").json()["step"] == (FAILING_STEP if committed else 1)
    retried = post(client, FAILING_STEP)
    assert retried.status_code == 200, retried.text
    assert retried.json()["replayed"] is committed
    assert [_metrics(retried.json()), _metrics(post(client, STEPS).json())] == [want[FAILING_STEP - 1], want[-1]]
    mine, theirs = policy_tensors(state_dir, "b", STEPS), policy_tensors(tmp_path / "reference", "b", STEPS)
    assert mine.keys() == theirs.keys() and mine
    assert all(torch.equal(mine[k], theirs[k]) for k in mine), "the snapshot after the failed step differs"


def test_a_background_snapshot_write_that_fails_loses_only_the_snapshot(tmp_path, monkeypatch):
    """Full weights: the disk fills while snapshot 2 is written in the background. Step 2 was already
    committed (its log entry and result), so it is answered as applied; the snapshot's folder is
    removed, its log entries are kept, the next step fails once with the full disk (507) before it
    changes anything, and a restarted trainer recovers from snapshot 0 by replay,
    ending bit-identical to an undisturbed run."""
    import errno

    from attune_trainer.state import async_snapshots

    every2 = tiny_run("bg", algorithm="ppo", mini_batch_size=3, kl_coef=0.05, seed=9, snapshot_every=2)

    def post(client, step):
        r = client.post("/v1/runs/bg/steps", json={"step": step, "samples": fixed_samples(step)})
        assert r.status_code == 200, r.text
        return _metrics(r.json())

    _, reference = _client(tmp_path / "reference")
    assert reference.post("/v1/runs", json=every2).status_code == 201
    want = [post(reference, s) for s in range(1, 5)]

    write_shards = async_snapshots.write_shards
    failing = []

    def full_disk(state, folder, group=None):
        if not failing:
            failing.append(folder)
            raise OSError(errno.ENOSPC, "No space left on device (test)", str(folder))
        write_shards(state, folder, group)

    monkeypatch.setattr(async_snapshots, "write_shards", full_disk)
    state_dir = tmp_path / "state"
    engine, client = _client(state_dir)
    assert client.post("/v1/runs", json=every2).status_code == 201
    got = [post(client, s) for s in range(1, 3)]
    engine.loaded["bg"].pending_snapshot.wait()
    # the next step fails once with the write's full disk (507: the operator frees space), changing nothing
    r = client.post("/v1/runs/bg/steps", json={"step": 3, "samples": fixed_samples(3)})
    assert r.status_code == 507, r.text
    assert client.get("/v1/runs/bg").json()["step"] == 2
    got.append(post(client, 3))
    engine.close()
    run_dir = state_dir / "runs" / "bg"
    assert failing and not failing[0].exists()  # the failed write's folder is gone
    assert sorted(p.name for p in (run_dir / "checkpoints").iterdir()) == ["step-000000"]
    assert sorted(p.name for p in (run_dir / "steplog").iterdir()) == [f"step-{s:06d}.json" for s in (1, 2, 3)]
    engine.state_lock.release()

    _, client = _client(state_dir)
    assert client.get("/v1/runs/bg").json()["step"] == 3
    got.append(post(client, 4))
    assert got == want
    mine, theirs = policy_tensors(state_dir, "bg", 4), policy_tensors(tmp_path / "reference", "bg", 4)
    assert mine.keys() == theirs.keys() and mine
    assert all(torch.equal(mine[k], theirs[k]) for k in mine)
