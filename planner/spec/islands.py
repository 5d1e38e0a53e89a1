"""Resolve ``hardware.islands`` and ``hardware.network``: islands of devices and the network between them.

An island is a set of device instances (named by instance or by kind) joined by their own
fast links: its ``topology`` (generated over its devices, link names prefixed with the
island's name) and any ``hardware.links`` inside it. The ``network`` is one link joining the
devices of every island it names (default: all); it is added last, so a pair of devices with
a direct fast link uses that link and every other pair uses the network, which carries one
transfer at a time, shared by all cross-island traffic. Each check fails with a
:class:`~planner.errors.SpecError` at the offending value: a device in two islands, a device
in none, an island whose devices are not joined by its own links, an island with no route to
the others, a link between islands, a global ``topology`` beside islands.

Examples
--------
>>> from planner.spec.locator import Locator
>>> from planner.spec.models import SpecDocument
>>> data = {"hardware": {"devices": [{"name": "a", "profile": "generic", "count": 2},
...                                  {"name": "b", "profile": "generic"}],
...         "islands": [{"name": "x", "devices": ["a"], "topology": {"kind": "bus", "bandwidth": "10 GB/s"}},
...                     {"name": "y", "devices": ["b0"]}],
...         "network": {"bandwidth": "1 GB/s", "latency": "2 us"}},
...         "models": [{"name": "m", "generator": {"kind": "mlp"}}]}
>>> doc = SpecDocument.model_validate(data)
>>> links, islands = resolve_islands(doc, ["a0", "a1", "b0"], {"a": ("a0", "a1"), "b": ("b0",)}, [], Locator(data))
>>> [(l.name, l.devices, l.latency_cycles) for l in links]
[('x_bus', ('a0', 'a1'), 0), ('network', ('a0', 'a1', 'b0'), 2000)]
>>> [(i.name, i.devices, i.network) for i in islands]
[('x', ('a0', 'a1'), 'network'), ('y', ('b0',), 'network')]
"""

from __future__ import annotations

from typing import Any, Sequence

from planner.hardware import Island, Link
from planner.spec.limits import MAX_LINKS
from planner.spec.locator import Locator, did_you_mean
from planner.spec.units import parse_duration_cycles

__all__ = ["resolve_islands", "first_unjoined"]

_ISLANDS = ("hardware", "islands")


def resolve_islands(document: Any, names: Sequence[str], kinds: dict[str, tuple[str, ...]],
                    explicit: Sequence[Link], locator: Locator) -> tuple[list[Link], tuple[Island, ...]]:
    """The islands' generated links and the network link (last), and the resolved islands.

    ``names`` are the device instances in hardware order, ``kinds`` each kind's instances,
    ``explicit`` the spec's ``hardware.links`` (already resolved).

    Raises
    ------
    planner.errors.SpecError
        At the offending island, device, link or network entry.
    """
    hw = document.hardware
    if hw.topology is not None:
        raise locator.error("with hardware.islands, give each island its own topology "
                            "(hardware.topology would join devices across islands)", ("hardware", "topology"))
    members = _island_members(document, names, kinds, locator)
    island_of = {d: i for i, devs in enumerate(members) for d in devs}
    for j, link in enumerate(explicit):
        homes = {island_of[d] for d in link.devices}
        if len(homes) > 1:
            a, b = sorted(homes)[:2]
            raise locator.error(f"link {link.name!r} joins islands {hw.islands[a].name!r} and "
                                f"{hw.islands[b].name!r}; traffic between islands goes over hardware.network",
                                ("hardware", "links", j, "between"))
    links = _island_links(document, members, {l.name for l in explicit}, locator)
    for i, devs in enumerate(members):
        _check_island_connected(hw.islands[i].name, devs, [*explicit, *links], i, locator)
    joined = _network_islands(document, locator)
    network = None
    if hw.network is not None:
        if hw.network.name in {l.name for l in (*explicit, *links)}:
            raise locator.error(f"the network's name {hw.network.name!r} is the name of a link",
                                ("hardware", "network", "name"))
        devices = tuple(d for d in names if island_of[d] in joined)
        network = Link(hw.network.name, devices, hw.network.bandwidth,
                       parse_duration_cycles(hw.network.latency, hw.clock))
        links.append(network)
    islands = tuple(Island(spec.name, tuple(members[i]), network.name if network and i in joined else None,
                           spec.host_memory) for i, spec in enumerate(hw.islands))
    return links, islands


def _island_members(document: Any, names: Sequence[str], kinds: dict[str, tuple[str, ...]],
                    locator: Locator) -> list[tuple[str, ...]]:
    """Each island's device instances (hardware order); every device in exactly one island."""
    owner: dict[str, int] = {}
    seen_names: set[str] = set()
    members: list[tuple[str, ...]] = []
    for i, island in enumerate(document.hardware.islands):
        where = (*_ISLANDS, i)
        if island.name in seen_names:
            raise locator.error(f"island {island.name!r} is declared twice", (*where, "name"))
        seen_names.add(island.name)
        mine: set[str] = set()
        for j, entry in enumerate(island.devices):
            if entry in kinds:
                targets = kinds[entry]
            elif entry in names:
                targets = (entry,)
            else:
                raise locator.error(f"unknown device {entry!r}" + did_you_mean(entry, [*names, *kinds])
                                    + f" (instances: {', '.join(names)}; kinds: {', '.join(kinds)})",
                                    (*where, "devices", j))
            for t in targets:
                if t in owner and owner[t] != i:
                    other = document.hardware.islands[owner[t]].name
                    raise locator.error(f"device {t!r} is in two islands: {other!r} and {island.name!r}",
                                        (*where, "devices", j))
                owner[t] = i
                mine.add(t)
        members.append(tuple(n for n in names if n in mine))
    missing = [n for n in names if n not in owner]
    if missing:
        raise locator.error(f"device {missing[0]!r} is in no island" +
                            (f" (nor {', '.join(missing[1:])})" if missing[1:] else "") +
                            "; with hardware.islands every device belongs to exactly one", _ISLANDS)
    return members


def _island_links(document: Any, members: list[tuple[str, ...]], taken: set[str],
                  locator: Locator) -> list[Link]:
    """The links each island's ``topology`` generates, named ``<island>_link_<a>_<b>`` (``<island>_bus``)."""
    count = len(taken)
    for i, island in enumerate(document.hardware.islands):
        n, topo = len(members[i]), island.topology
        if topo is not None and n > 1:
            count += {"all-to-all": n * (n - 1) // 2, "ring": n if n > 2 else 1}.get(topo.kind, 1)
        if count > MAX_LINKS:
            raise locator.error(f"the islands' topologies give more than {MAX_LINKS:,} links; use ring or bus",
                                (*_ISLANDS, i, "topology"))
    links: list[Link] = []
    for i, island in enumerate(document.hardware.islands):
        topo, devs = island.topology, members[i]
        if topo is None or len(devs) <= 1:
            continue
        n = len(devs)
        if topo.kind == "all-to-all":
            pairs = [(devs[a], devs[b]) for a in range(n) for b in range(a + 1, n)]
        else:
            pairs = [(devs[k], devs[(k + 1) % n]) for k in range(n if n > 2 else 1)]
        latency = parse_duration_cycles(topo.latency, document.hardware.clock)
        generated = ([(f"{island.name}_bus", devs)] if topo.kind == "bus"
                     else [(f"{island.name}_link_{a}_{b}", (a, b)) for a, b in pairs])
        for name, joined in generated:
            if name in taken:
                raise locator.error(f"link {name!r} of island {island.name!r}'s topology has the name of "
                                    "another link", (*_ISLANDS, i, "topology"))
            taken.add(name)
            links.append(Link(name, tuple(joined), topo.bandwidth, latency))
    return links


def first_unjoined(devices: Sequence[str], links: Sequence[Link]) -> str | None:
    """The first of ``devices`` no chain of ``links`` joins to ``devices[0]`` (links' other
    devices ignored), or None when all are joined.

    Examples
    --------
    >>> ab = Link("ab", ("a", "b"), 1, 0)
    >>> first_unjoined(("a", "b"), [ab]), first_unjoined(("a", "b", "c"), [ab])
    (None, 'c')
    """
    from networkx.utils import UnionFind  # start-up time: a spec refused at its YAML or schema never loads networkx

    groups = UnionFind(devices)
    for link in links:
        inside = [d for d in link.devices if d in groups.parents]
        if inside:
            groups.union(*inside)
    return next((d for d in devices[1:] if groups[d] != groups[devices[0]]), None)


def _check_island_connected(name: str, devices: tuple[str, ...], links: list[Link], index: int,
                            locator: Locator) -> None:
    """An island's devices must be joined by a chain of its own links (the network is between islands)."""
    d = first_unjoined(devices, links)
    if d is not None:
        raise locator.error(f"island {name!r}: devices {devices[0]} and {d} are not joined by the island's "
                                "links; give the island a topology or add hardware.links inside it",
                                (*_ISLANDS, index))


def _network_islands(document: Any, locator: Locator) -> set[int]:
    """Indices of the islands the network joins; with two islands or more, every island must be joined."""
    hw = document.hardware
    index = {island.name: i for i, island in enumerate(hw.islands)}
    if hw.network is None:
        if len(hw.islands) > 1:
            raise locator.error(f"island {hw.islands[1].name!r} has no route to island {hw.islands[0].name!r}: "
                                "add hardware.network (bandwidth, latency)", (*_ISLANDS, 1))
        return set()
    if hw.network.islands is None:
        return set(index.values())
    joined: set[int] = set()
    for j, name in enumerate(hw.network.islands):
        if name not in index:
            raise locator.error(f"unknown island {name!r}" + did_you_mean(name, list(index)),
                                ("hardware", "network", "islands", j))
        joined.add(index[name])
    for i, island in enumerate(hw.islands):
        if i not in joined and len(hw.islands) > 1:
            raise locator.error(f"island {island.name!r} has no route to the others: hardware.network does "
                                "not join it (add it to hardware.network.islands)", (*_ISLANDS, i))
    return joined
