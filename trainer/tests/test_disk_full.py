"""A checkpoint write that runs out of space is a full disk (HTTP 507, the orchestrator waits for the
operator), also when torch reports it as a short write without an errno."""

import errno
import subprocess
from collections import namedtuple

import pytest
import torch
from safetensors import SafetensorError
from safetensors.torch import save_file

from attune_trainer.state import disk_full
from attune_trainer.state.disk_full import out_of_space

SHORT_WRITE = RuntimeError("[enforce fail at inline_container.cc:671] . unexpected pos 463782912 vs 463782800")
Usage = namedtuple("Usage", "total used free")


def _free(monkeypatch, free: int) -> None:
    monkeypatch.setattr(disk_full.shutil, "disk_usage", lambda _path: Usage(10**12, 10**12 - free, free))


def test_enospc_and_edquot_are_a_full_disk(tmp_path):
    assert out_of_space(OSError(errno.ENOSPC, "No space left on device"), tmp_path, None)
    assert out_of_space(OSError(errno.EDQUOT, "Disk quota exceeded"), tmp_path, None)
    assert not out_of_space(OSError(errno.EACCES, "Permission denied"), tmp_path, None)


def test_torchs_short_write_with_little_space_left_is_a_full_disk(tmp_path, monkeypatch):
    last = tmp_path / "ckpt-1"
    last.mkdir()
    (last / "model.safetensors").write_bytes(b"\0" * 1000)
    _free(monkeypatch, disk_full.MIN_FREE_BYTES - 1)
    assert out_of_space(SHORT_WRITE, tmp_path, last)
    # room for more than the last checkpoint: the short write was something else
    _free(monkeypatch, disk_full.MIN_FREE_BYTES + 10**9)
    assert not out_of_space(SHORT_WRITE, tmp_path, last)


def test_other_errors_are_not_a_full_disk_however_full_the_disk(tmp_path, monkeypatch):
    _free(monkeypatch, 0)
    assert not out_of_space(RuntimeError("CUDA out of memory"), tmp_path, None)
    assert not out_of_space(ValueError("unexpected pos"), tmp_path, None)


def test_safetensors_error_naming_the_os_error_is_a_full_disk(tmp_path):
    text = "Error while serializing: I/O error: No space left on device (os error 28)"
    assert out_of_space(SafetensorError(text), tmp_path, None)
    assert out_of_space(SafetensorError("I/O error: Disk quota exceeded (os error 122)"), tmp_path, None)
    # the tokenizers library saving tokenizer.json: a plain Exception with the Rust io::Error's text
    assert out_of_space(Exception("No space left on device (os error 28)"), tmp_path, None)


def test_any_failed_write_with_less_room_than_the_last_checkpoint_is_a_full_disk(tmp_path, monkeypatch):
    _free(monkeypatch, disk_full.MIN_FREE_BYTES - 1)
    assert out_of_space(OSError(errno.EIO, "Input/output error"), tmp_path, None)
    assert out_of_space(SafetensorError("Error while serializing: I/O error"), tmp_path, None)
    _free(monkeypatch, disk_full.MIN_FREE_BYTES + 10**9)
    assert not out_of_space(OSError(errno.EIO, "Input/output error"), tmp_path, None)


def test_a_real_safetensors_write_on_a_full_tmpfs_is_a_full_disk(tmp_path):
    mnt = tmp_path / "state"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)]).returncode != 0:
        pytest.fail("mounting a tmpfs needs root")
    try:
        with pytest.raises(Exception) as raised:
            save_file({"w": torch.zeros(256 * 1024)}, str(mnt / "model.safetensors"))
        assert out_of_space(raised.value, mnt, None)
    finally:
        subprocess.run(["umount", str(mnt)], check=True)
