"""Virtual hosts on one machine: Linux network namespaces joined by veth pairs to a private bridge.

`VirtualNetwork` makes a bridge in a namespace of its own, a veth from the caller's namespace to it
(so the caller reaches every host), and one namespace per host with a veth to the bridge, all on a
private /24. A process runs "on" a host when started through `Host.launcher` (`ip netns exec NS`),
and listens on `Host.address`. `Host.cut()` takes the host's link down (its packets are lost, its TCP
connections stall, as behind a failed switch port) and `Host.restore()` brings it back.

Names carry a random token, so parallel runs never clash; `stop` removes every namespace (and with
them every veth); it is idempotent and also runs on errors during `start`. Needs root (or
CAP_NET_ADMIN and CAP_SYS_ADMIN) and `ip` from iproute2; `netns_unavailable()` says why not.

>>> network = VirtualNetwork(["broker", "redis"])
>>> network.hosts
{}
"""

from __future__ import annotations

import ipaddress
import random
import shutil
import subprocess
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from types import TracebackType

__all__ = ["Host", "VirtualNetwork", "netns_unavailable"]

_CIDR = 24
_FIRST_HOST = 2  # .1 is the caller's end


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run `ip ARGS`; raise with its stderr when it fails and `check` is set."""
    done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30, check=False)
    if check and done.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)} failed: {done.stderr.strip()}")
    return done


def netns_unavailable() -> str | None:
    """Return why network namespaces cannot be made here, or None when they can."""
    if shutil.which("ip") is None:
        return "`ip` (iproute2) is not installed"
    probe = f"sjprobe{uuid.uuid4().hex[:6]}"
    done = _ip("netns", "add", probe, check=False)
    if done.returncode != 0:
        return f"`ip netns add` is not permitted: {done.stderr.strip()}"
    _ip("netns", "del", probe, check=False)
    return None


@dataclass(frozen=True, slots=True)
class Host:
    """One virtual host: its namespace, its address on the bridge, and its link's bridge-side end."""

    name: str
    netns: str
    address: str
    link: str
    bridge_netns: str

    @property
    def launcher(self) -> tuple[str, ...]:
        """The argv prefix that runs a command on this host (`ip netns exec` execs it: same pid)."""
        return ("ip", "netns", "exec", self.netns)

    def cut(self) -> None:
        """Take the host's link down: nothing reaches it, nothing leaves it, until `restore`."""
        _ip("-n", self.bridge_netns, "link", "set", self.link, "down")

    def restore(self) -> None:
        """Bring the host's link back up."""
        _ip("-n", self.bridge_netns, "link", "set", self.link, "up")


class VirtualNetwork:
    """A bridge and one namespace per named host on a private /24; the caller is `.1` on it."""

    def __init__(self, names: Sequence[str]) -> None:
        """Describe the network; nothing is made until `start`.

        Args:
            names: the hosts, each a short name unique in this network ("broker", "w1").
        """
        if len(set(names)) != len(names) or not names:
            raise ValueError(f"host names must be distinct and at least one: {list(names)}")
        self._names = list(names)
        self._token = uuid.uuid4().hex[:5]
        self._bridge_ns = f"sj{self._token}-br"
        self._made: list[str] = []
        self.hosts: dict[str, Host] = {}
        self.gateway: str | None = None

    def __enter__(self) -> VirtualNetwork:
        """Return the network (make it with `start`)."""
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        """Remove every namespace."""
        self.stop()

    def start(self) -> None:
        """Make the bridge, the caller's link to it and every host; remove all of it on failure."""
        try:
            subnet = _free_subnet()
            addresses = list(subnet.hosts())
            self._netns(self._bridge_ns)
            _ip("-n", self._bridge_ns, "link", "add", "br0", "type", "bridge")
            _ip("-n", self._bridge_ns, "link", "set", "br0", "up")
            self.gateway = str(addresses[0])
            outer, inner = f"sj{self._token}r", f"sj{self._token}R"
            _ip("link", "add", outer, "type", "veth", "peer", "name", inner, "netns", self._bridge_ns)
            self._made.append(f"link:{outer}")
            self._attach(inner)
            _ip("addr", "add", f"{self.gateway}/{_CIDR}", "dev", outer)
            _ip("link", "set", outer, "up")
            for index, name in enumerate(self._names):
                self.hosts[name] = self._add_host(index, name, str(addresses[index + _FIRST_HOST - 1]))
        except BaseException:
            self.stop()
            raise

    def _add_host(self, index: int, name: str, address: str) -> Host:
        netns = f"sj{self._token}-{index}"
        self._netns(netns)
        _ip("-n", netns, "link", "set", "lo", "up")
        inside, outside = f"sj{self._token}{index}n", f"sj{self._token}{index}h"
        _ip("-n", netns, "link", "add", inside, "type", "veth", "peer", "name", outside,
            "netns", self._bridge_ns)  # fmt: skip
        self._attach(outside)
        _ip("-n", netns, "addr", "add", f"{address}/{_CIDR}", "dev", inside)
        _ip("-n", netns, "link", "set", inside, "up")
        return Host(name, netns, address, outside, self._bridge_ns)

    def _netns(self, name: str) -> None:
        _ip("netns", "add", name)
        self._made.append(f"netns:{name}")

    def _attach(self, link: str) -> None:
        _ip("-n", self._bridge_ns, "link", "set", link, "master", "br0")
        _ip("-n", self._bridge_ns, "link", "set", link, "up")

    def stop(self) -> None:
        """Remove every namespace and link made (processes still in a namespace are not touched)."""
        for item in reversed(self._made):
            kind, name = item.split(":", 1)
            if kind == "netns":
                _ip("netns", "del", name, check=False)
            else:
                _ip("link", "del", name, check=False)
        self._made.clear()
        self.hosts.clear()


def _free_subnet() -> ipaddress.IPv4Network:
    """Return a random 10.x.y.0/24 that no address or route of ours overlaps."""
    taken_text = _ip("-4", "route", "show", "table", "all").stdout + _ip("-4", "-o", "addr").stdout
    taken = [
        ipaddress.ip_network(word, strict=False)
        for word in taken_text.split()
        if word[:1].isdigit() and _is_network(word)
    ]
    rng = random.Random()
    for _ in range(100):
        candidate = ipaddress.IPv4Network(f"10.{rng.randrange(64, 250)}.{rng.randrange(0, 256)}.0/{_CIDR}")
        if not any(candidate.overlaps(net) for net in taken if net.version == 4):
            return candidate
    raise RuntimeError("no free 10.x.y.0/24 subnet found")


def _is_network(word: str) -> bool:
    try:
        ipaddress.ip_network(word, strict=False)
    except ValueError:
        return False
    return True
