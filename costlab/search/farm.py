"""The measurement farm: TVM's own RPC tracker and servers.

Start one tracker and N servers (each server registers under a device key)::

    python -m tvm.exec.rpc_tracker --host 0.0.0.0 --port 9190
    python -m tvm.exec.rpc_server --tracker TRACKER_HOST:9190 --key h200   # on each GPU box

and point a config at it: ``runner: {kind: rpc, tracker: TRACKER_HOST:9190, key: h200}``.
"""

from __future__ import annotations

from costlab.errors import CostlabError


def parse_tracker(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise CostlabError(f"tracker {text!r} is not HOST:PORT")
    return host, int(port)


def tracker_summary(tracker: str) -> dict:
    """The tracker's queue and servers, as TVM reports them (``queue_info``, ``server_info``)."""
    from tvm import rpc

    host, port = parse_tracker(tracker)
    try:
        return rpc.connect_tracker(host, port).summary()
    except Exception as err:
        raise CostlabError(f"RPC tracker {tracker} is unreachable: {err}") from None


def free_servers(summary: dict, key: str) -> int:
    """Servers of ``key`` that are idle now."""
    return int(summary.get("queue_info", {}).get(key, {}).get("free", 0))


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
