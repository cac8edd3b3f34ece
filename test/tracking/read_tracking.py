"""Reads what Attune's trackers wrote, with the trackers' own readers where they have one; prints JSON.

python read_tracking.py tensorboard DIR  -> {"tag": [[step, value], ...]} via TensorBoard's EventAccumulator
python read_tracking.py wandb DIR        -> [{"file", "run_id", "project", "history": [[step, {key: value}]]}]
"""

import glob
import json
import os
import struct
import sys


def tensorboard(directory):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(directory, size_guidance={"scalars": 0})
    acc.Reload()
    return {tag: [[e.step, e.value] for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}


def wandb_records(path):
    """The records of a .wandb file: a 7-byte header, then LevelDB-log chunks in 32 KiB blocks."""
    block = 32 * 1024
    data = open(path, "rb").read()
    assert data[:4] == b":W&B", f"{path}: not a W&B run file"
    pos, pending = 7, b""
    while pos + 7 <= len(data):
        room = block - pos % block
        if room < 7:
            pos += room
            continue
        _crc, length, kind = struct.unpack("<IHB", data[pos : pos + 7])
        if kind == 0 and length == 0:
            pos += room
            continue
        chunk = data[pos + 7 : pos + 7 + length]
        pos += 7 + length
        if kind == 1:
            yield chunk
        elif kind == 2:
            pending = chunk
        elif kind == 3:
            pending += chunk
        elif kind == 4:
            yield pending + chunk
            pending = b""


def wandb(directory):
    from wandb.proto import wandb_internal_pb2 as pb

    out = []
    for path in sorted(glob.glob(os.path.join(directory, "*", "wandb", "offline-run-*", "run-*.wandb"))):
        run = {"file": path, "run_id": None, "project": None, "history": []}
        for raw in wandb_records(path):
            record = pb.Record()
            record.ParseFromString(raw)
            kind = record.WhichOneof("record_type")
            if kind == "run":
                run["run_id"], run["project"] = record.run.run_id, record.run.project
            elif kind == "history":
                values = {
                    item.key or "/".join(item.nested_key): json.loads(item.value_json)
                    for item in record.history.item
                    if not (item.key or "/".join(item.nested_key)).startswith("_")
                }
                run["history"].append([record.history.step.num, values])
        out.append(run)
    return out


if __name__ == "__main__":
    what, directory = sys.argv[1], sys.argv[2]
    print(json.dumps(tensorboard(directory) if what == "tensorboard" else wandb(directory)))
