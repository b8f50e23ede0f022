"""The measurement farm: TVM's own RPC tracker and servers.

Start one tracker and N servers (each server registers under a device key)::

    python -m tvm.exec.rpc_tracker --host 0.0.0.0 --port 9190
    python -m tvm.exec.rpc_server --tracker TRACKER_HOST:9190 --key h200   # on each GPU box

and point a config at it: ``runner: {kind: rpc, tracker: TRACKER_HOST:9190, key: h200}``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field

from costlab.errors import CostlabError
from costlab.targets import sm_arch


def parse_tracker(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise CostlabError(f"tracker {text!r} is not HOST:PORT")
    if not 1 <= int(port) <= 65535:
        raise CostlabError(f"tracker {text!r}: the port must be 1..65535")
    return host, int(port)


def tracker_summary(tracker: str, timeout_s: float = 5.0) -> dict:
    """The tracker's queue and servers, as TVM reports them (``queue_info``, ``server_info``).

    A tracker that does not accept a connection, or answer, within ``timeout_s`` is an error at
    once (TVM's own client retries for about a minute, and waits forever on a port that accepts
    but does not answer): the handshake and the request are TVM's, on a socket with a timeout."""
    import struct

    from tvm.rpc import base

    host, port = parse_tracker(tracker)
    try:
        sock = socket.create_connection((host, port), timeout=timeout_s)
    except OSError as err:
        raise CostlabError(f"RPC tracker {tracker} is unreachable: {err}") from None
    with sock:
        try:
            sock.sendall(struct.pack("<i", base.RPC_TRACKER_MAGIC))
            magic = struct.unpack("<i", base.recvall(sock, 4))[0]
            if magic == base.RPC_TRACKER_MAGIC:
                base.sendjson(sock, [base.TrackerCode.SUMMARY])
                code, summary = base.recvjson(sock)
                if code == base.TrackerCode.SUCCESS:
                    return summary
        except TimeoutError:
            raise CostlabError(f"{tracker} accepts connections but gave no answer as a TVM RPC tracker within "
                               f"{timeout_s:g} s: is it a tracker's port?") from None
        except (OSError, ValueError, RuntimeError) as err:
            raise CostlabError(f"{tracker} is not a TVM RPC tracker, or failed: {err}") from None
    raise CostlabError(f"{tracker} answered, but not as a TVM RPC tracker: is it a tracker's port?")


def free_servers(summary: dict, key: str) -> int:
    """Servers of ``key`` that are idle now."""
    return int(summary.get("queue_info", {}).get(key, {}).get("free", 0))


def registered_servers(summary: dict, key: str) -> int:
    """Servers registered under ``key``, idle or busy."""
    return sum(1 for server in summary.get("server_info", []) if server.get("key") == f"server:{key}")


def server_addresses(summary: dict, key: str) -> set[tuple[str, int]]:
    """The (host, port) of each server registered under ``key``, idle or busy."""
    return {(str(server["addr"][0]), int(server["addr"][1])) for server in summary.get("server_info", [])
            if server.get("key") == f"server:{key}" and len(server.get("addr") or ()) == 2}


@dataclass(frozen=True)
class ServerDevice:
    """What a server under a key measures on: its CPU (LLVM's name; None when its TVM is a
    runtime without LLVM), whether it has a GPU, and the GPU's arch (``sm_90``; None without one)."""

    cpu: str | None
    has_gpu: bool
    gpu_arch: str | None = None


def probe_server(tracker: str, key: str, timeout_s: float = 10.0) -> ServerDevice | None:
    """Ask one server under ``key`` what it runs on (ask when one is idle: a busy one makes the
    request wait in the tracker's queue). None when no server took the request within
    ``timeout_s`` (they all turned busy since): the request is left in the queue, and a server
    that frees up answers it within its own session of ``timeout_s``."""
    from tvm import rpc

    host, port = parse_tracker(tracker)
    answer: dict = {}

    def ask() -> None:
        try:
            remote = rpc.connect_tracker(host, port).request(key, priority=1, session_timeout=int(timeout_s),
                                                             max_retry=1)
        except Exception as err:  # noqa: BLE001  (raised below, in the caller's thread)
            answer["error"] = err
            return
        try:
            cpu = str(remote.get_function("target.llvm_get_system_cpu")())
        except Exception:  # noqa: BLE001  (a runtime-only TVM, as on many devices: no LLVM to ask)
            cpu = None
        gpu = remote.cuda(0)
        answer["device"] = ServerDevice(cpu=cpu, has_gpu=bool(gpu.exist),
                                        gpu_arch=sm_arch(gpu.compute_version) if gpu.exist else None)

    asking = threading.Thread(target=ask, daemon=True)  # TVM's request has no timeout of its own
    asking.start()
    asking.join(timeout_s)
    if "error" in answer:  # the runner would reach the servers the same way
        raise CostlabError(f"RPC tracker {tracker} lists servers under key {key!r}, but none could be "
                           f"reached: {answer['error']}") from None
    return answer.get("device")


def format_summary(summary: dict) -> str:
    lines = ["key                      free  pending"]
    for key, info in sorted(summary.get("queue_info", {}).items()):
        lines.append(f"{key:<24} {info.get('free', 0):>4}  {info.get('pending', 0):>7}")
    lines.append("")
    lines.append("servers (address, key):")
    for server in summary.get("server_info", []):
        addr = server.get("addr", ["?", "?"])
        lines.append(f"  {addr[0]}:{addr[1]}  {server.get('key', '?')}")
    return "\n".join(lines)


# -- a farm on this machine (tests and benchmarks) ---------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_in_own_group(module_args: list[str]) -> subprocess.Popen:
    """``python -m ...`` in its own process group: TVM's tracker and servers fork children."""
    return subprocess.Popen([sys.executable, "-m", *module_args], start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def stop_group(proc: subprocess.Popen) -> None:
    """Kill a process started by :func:`start_in_own_group` and all its children."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


@dataclass
class LocalFarm:
    address: str  # the tracker, HOST:PORT
    key: str
    tracker: subprocess.Popen
    servers: list[subprocess.Popen] = field(default_factory=list)

    def start_server(self) -> subprocess.Popen:
        """One more RPC server under the farm's key (ended with the farm)."""
        port = free_port()
        self.servers.append(start_in_own_group(
            ["tvm.exec.rpc_server", "--host", "127.0.0.1", "--port", str(port), "--port-end", str(port + 1),
             "--tracker", self.address, "--key", self.key]))
        return self.servers[-1]


@contextlib.contextmanager
def local_farm(n_servers: int, key: str, start_timeout_s: float = 180):
    """A tracker and ``n_servers`` RPC servers on 127.0.0.1, ended (with their children) on exit."""
    port = free_port()
    tracker = start_in_own_group(["tvm.exec.rpc_tracker", "--host", "127.0.0.1", "--port", str(port),
                                  "--port-end", str(port + 1)])
    farm = LocalFarm(f"127.0.0.1:{port}", key, tracker)
    try:
        for _ in range(n_servers):
            farm.start_server()
        deadline = time.time() + start_timeout_s
        while True:
            try:
                if free_servers(tracker_summary(farm.address), key) == n_servers:
                    break
            except CostlabError:  # the tracker is still starting
                pass
            for proc in [tracker, *farm.servers]:
                if proc.poll() is not None:  # e.g. its port was taken between free_port and its start
                    raise CostlabError(f"the local RPC farm did not come up: `python {' '.join(proc.args[1:])}` exited "
                                       f"with status {proc.returncode}")
            if time.time() > deadline:
                raise CostlabError(f"the local RPC farm ({n_servers} servers) did not come up in {start_timeout_s} s")
            time.sleep(1)
        yield farm
    finally:
        for proc in [*farm.servers, tracker]:
            stop_group(proc)
