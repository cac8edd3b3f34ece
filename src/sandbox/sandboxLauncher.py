"""Starts one untrusted Python program confined, and reports how it ended.

Started only by runUntrustedPython.ts, as root (or as root of a fresh user namespace), usually as
PID 1 of a PID namespace that unshare(1) made: when this process exits, the kernel kills every
process the program left behind. It sets up the file system view, forks the program with its
privileges dropped and its rlimits set, waits for it, and writes one JSON report to fd 3.
A setup step that fails stops the run with a report saying so: the program never starts less
confined than asked.
"""

import ctypes
import ctypes.util
import fcntl
import json
import os
import re
import resource
import signal
import socket
import struct
import sys

REPORT_FD = 3
PROGRAM_NAME = "program.py"
SANDBOX_TMP = "/tmp"
WORK_DIR = "/tmp/work"
PROGRAM_PATH = "/usr/local/bin:/usr/bin:/bin"

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 0x1, 0x2, 0x4, 0x8
MS_REMOUNT, MS_NOATIME, MS_NODIRATIME, MS_BIND = 0x20, 0x400, 0x800, 0x1000
MS_REC, MS_RELATIME, MS_STRICTATIME = 0x4000, 0x200000, 0x1000000
# Per-mount flags a bind remount must repeat, or the kernel refuses (locked) or clears them.
KEPT_MOUNT_FLAGS = {
    "nosuid": MS_NOSUID,
    "nodev": MS_NODEV,
    "noexec": MS_NOEXEC,
    "noatime": MS_NOATIME,
    "nodiratime": MS_NODIRATIME,
    "relatime": MS_RELATIME,
    "strictatime": MS_STRICTATIME,
}
PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS, PR_CAP_AMBIENT = 24, 38, 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
SIOCGIFFLAGS, IFF_UP = 0x8913, 0x1

libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)


class SetupError(Exception):
    """A confinement step failed: the program must not start."""


def check(result, what):
    if result != 0:
        code = ctypes.get_errno()
        raise SetupError(f"{what}: {os.strerror(code)}")


def report(payload):
    os.write(REPORT_FD, json.dumps(payload).encode())


def verify_no_network(applied):
    """The only interface must be a loopback that is down: unshare --net gave us a new namespace."""
    names = [name for _, name in socket.if_nameindex()]
    if names != ["lo"]:
        raise SetupError(f"network namespace has interfaces {names}, expected only a down loopback")
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        request = struct.pack("16sh22x", b"lo", 0)
        flags = struct.unpack("16sh22x", fcntl.ioctl(probe.fileno(), SIOCGIFFLAGS, request))[1]
    if flags & IFF_UP:
        raise SetupError("loopback is up in the network namespace")
    applied.append("network:none(own namespace, loopback down)")


def mount_points():
    """(mount point, per-mount options) of every mount that holds files, each point once."""
    points = {}
    with open("/proc/self/mountinfo") as mountinfo:
        for line in mountinfo:
            fields = line.split()
            # A namespace file bound somewhere (ip netns) holds no data, and a user namespace may not remount it.
            if fields[fields.index("-") + 1] == "nsfs":
                continue
            # mountinfo escapes space, tab, newline and backslash in octal.
            point = re.sub(r"\\([0-7]{3})", lambda escape: chr(int(escape.group(1), 8)), fields[4])
            points.setdefault(point, fields[5].split(","))
    return points.items()


def make_filesystem_read_only(applied):
    """Every mount of this (private) mount namespace becomes read-only and nosuid; the host's stay."""
    failed = []
    for point, options in mount_points():
        flags = MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID
        for option in options:
            flags |= KEPT_MOUNT_FLAGS.get(option, 0)
        if libc.mount(None, point.encode(), None, flags, None) != 0:
            failed.append(f"{point}({os.strerror(ctypes.get_errno())})")
    if failed:
        raise SetupError("could not make these mounts read-only: " + ", ".join(failed))
    applied.append("filesystem:read-only,nosuid")


def mount_private_tmp(limits, owner, applied):
    """A fresh, size-capped tmpfs on /tmp; /var/tmp and /dev/shm point into it, so one cap holds."""
    size = f"size={limits['scratchMiB']}m,nr_inodes=4096,mode=1777".encode()
    check(libc.mount(b"sandbox", SANDBOX_TMP.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, size), "mount tmpfs on /tmp")
    for shared in ("/var/tmp", "/dev/shm"):
        if os.path.isdir(shared) and not os.path.islink(shared):
            inside = os.path.join(SANDBOX_TMP, "." + shared.strip("/").replace("/", "-"))
            os.mkdir(inside)
            os.chmod(inside, 0o1777)
            check(libc.mount(inside.encode(), shared.encode(), None, MS_BIND | MS_REC, None), f"bind {shared}")
    os.mkdir(WORK_DIR, 0o700)
    if owner is not None:
        os.chown(WORK_DIR, owner["uid"], owner["gid"])
    applied.append(f"private-tmp:tmpfs({limits['scratchMiB']}MiB; also /var/tmp, /dev/shm)")


def prepare_work_dir(config, source, applied):
    if not config["namespaces"]:
        # The weaker mode the caller asked for by name: the program runs in the host's temp dir.
        work_dir = os.path.dirname(config["programFile"])
        if config["runAs"] is not None:
            os.chown(work_dir, config["runAs"]["uid"], config["runAs"]["gid"])
        return work_dir
    verify_no_network(applied)
    make_filesystem_read_only(applied)
    mount_private_tmp(config["limits"], config["runAs"], applied)
    with open(os.path.join(WORK_DIR, PROGRAM_NAME), "w") as program:
        program.write(source)
    return WORK_DIR


def set_limits(limits):
    mib = 1024 * 1024
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_CPU, (limits["cpuSeconds"], limits["cpuSeconds"] + 1))
    resource.setrlimit(resource.RLIMIT_AS, (limits["memoryMiB"] * mib,) * 2)
    resource.setrlimit(resource.RLIMIT_NPROC, (limits["processes"],) * 2)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits["fileSizeMiB"] * mib,) * 2)
    resource.setrlimit(resource.RLIMIT_NOFILE, (limits["openFiles"],) * 2)


def limit_labels(limits):
    return [
        f"rlimit:cpu={limits['cpuSeconds']}s",
        f"rlimit:address-space={limits['memoryMiB']}MiB",
        f"rlimit:processes={limits['processes']}",
        f"rlimit:file-size={limits['fileSizeMiB']}MiB",
        f"rlimit:open-files={limits['openFiles']}",
        "rlimit:core=0",
    ]


def drop_all_capabilities():
    """For root of a user namespace, which keeps its uid: no capability survives, not even on exec."""
    with open("/proc/sys/kernel/cap_last_cap") as cap_last_cap:
        last = int(cap_last_cap.read())
    for capability in range(last + 1):
        check(libc.prctl(PR_CAPBSET_DROP, capability, 0, 0, 0), "drop bounding capability")
    check(libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0), "clear ambient capabilities")
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)
    data = (ctypes.c_uint32 * 6)()
    check(libc.capset(header, data), "capset")


def drop_privileges(config):
    check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    owner = config["runAs"]
    if owner is not None:
        os.setgroups([])
        os.setgid(owner["gid"])
        os.setuid(owner["uid"])
    if config["dropCapabilities"]:
        drop_all_capabilities()


def privilege_labels(config):
    owner = config["runAs"]
    labels = ["no-new-privileges", f"nice:+{config['niceness']}"]
    if owner is not None:
        labels.append(f"user:{owner['uid']}:{owner['gid']}(no supplementary groups)")
    if config["dropCapabilities"]:
        labels.append("capabilities:none")
    return labels


def exec_program(config, work_dir, failure_pipe):
    """In the forked child: confine this process, then become the program (never returns)."""
    try:
        os.nice(config["niceness"])
        set_limits(config["limits"])
        drop_privileges(config)
        os.chdir(work_dir)
        os.close(REPORT_FD)
        env = {"PATH": PROGRAM_PATH, "HOME": work_dir, "TMPDIR": SANDBOX_TMP, "LANG": "C.UTF-8"}
        # -I: ignore PYTHON* variables and the user's site-packages; -B: write no bytecode.
        os.execve(sys.executable, [sys.executable, "-I", "-B", PROGRAM_NAME], env)
    except BaseException as error:  # noqa: BLE001 - any failure here must reach the parent
        os.write(failure_pipe, f"{type(error).__name__}: {error}".encode())
    os._exit(127)


def start_program(config, work_dir):
    """Forks the program; returns its pid once exec succeeded (the close-on-exec pipe stays empty)."""
    read_end, write_end = os.pipe()  # both close on exec
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        exec_program(config, work_dir, write_end)
    os.close(write_end)
    failure = b""
    while chunk := os.read(read_end, 4096):
        failure += chunk
    os.close(read_end)
    if failure:
        os.waitpid(pid, 0)
        raise SetupError("the program could not start confined: " + failure.decode(errors="replace"))
    return pid


def wait_for(pid, backstop_seconds):
    """Reaps every child (as PID 1, orphans come to us) until the program itself ends."""
    fired = []

    def on_backstop(_signum, _frame):
        # Runs only if the supervisor could not kill us at the deadline (it died, say).
        fired.append(True)
        os.kill(pid, signal.SIGKILL)

    signal.signal(signal.SIGALRM, on_backstop)
    signal.alarm(backstop_seconds)
    while True:
        waited, status, usage = os.wait4(-1, 0)
        if waited == pid:
            signal.alarm(0)
            return status, usage, bool(fired)


def main():
    config = json.loads(sys.argv[1])
    applied = []
    try:
        with open(config["programFile"]) as program:
            source = program.read()
        work_dir = prepare_work_dir(config, source, applied)
        pid = start_program(config, work_dir)
    except (SetupError, OSError) as error:
        report({"kind": "setup-failed", "error": str(error), "applied": applied})
        return 70
    applied += limit_labels(config["limits"]) + privilege_labels(config)
    status, usage, backstop_fired = wait_for(pid, config["backstopSeconds"])
    report(
        {
            "kind": "finished",
            "applied": applied,
            "exitCode": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
            "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
            "backstopFired": backstop_fired,
            "cpuMs": round((usage.ru_utime + usage.ru_stime) * 1000),
            "maxRssKiB": usage.ru_maxrss,
        }
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
