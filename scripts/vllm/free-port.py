"""Prints a free loopback port for vLLM, below the kernel's ephemeral range when there is room.

vLLM binds its port only after loading the model, seconds to minutes after the port was picked. A port
from the ephemeral range (what binding port 0 gives) can be taken meanwhile by any outbound connection
or by another suite's server asking for port 0; one below that range is taken only by name.
"""

import random
import socket


def bindable(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def main() -> None:
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        low = 0
    if low > 11000:
        for _ in range(500):
            port = random.randint(10000, low - 1)
            if bindable(port):
                print(port)
                return
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        print(s.getsockname()[1])


if __name__ == "__main__":
    main()
