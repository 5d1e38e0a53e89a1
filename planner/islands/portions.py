"""Spec → island split problem: portions of each model, their work on each island, and the edges between them.

A portion is a run of one model's ops in the graph's topological order, cut where the
running work reaches an equal share (``per_island`` portions per island and model, at
most one per op). Runs of a topological order make the portions acyclic: every edge
between portions goes forward, so no island ever waits on a portion that waits on it.
Pins restrict a portion to the islands holding an allowed device of each of its ops;
colocation groups and gangs keep their portions together (a gang only on an island with a
device for each of its shards). An island's ``host_memory`` holds the weights and graph
inputs its portions read (each tensor once per island): the split respects it. The devices'
memory is pooled per island the same way: a weight or input several portions read counts once
per island in the split (its devices hold it at least once; the island's schedule checks each).

Examples
--------
>>> from planner.spec import load_spec
>>> spec = load_spec("specs/islands.yaml")
>>> problem, portions = to_split_problem(spec)
>>> problem.num_portions, problem.num_islands, problem.island_lanes
(16, 2, (2, 2))
>>> len(portions.ops_of[0]) > 0 and sum(map(len, portions.ops_of)) == len(spec.graph.ops)
True
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.reductions.scheduling import op_device_cycles
from planner.spec import Spec
from solvers.islands import SplitProblem

__all__ = ["Portions", "to_split_problem", "host_items", "PORTIONS_PER_ISLAND"]

#: Portions per island and model: enough for the split to balance, few enough to solve at once.
PORTIONS_PER_ISLAND = 8


@dataclass(frozen=True)
class Portions:
    """The inverse of the split reduction: each portion's ops (topological order), each island's name and devices."""

    ops_of: tuple[tuple[str, ...], ...]
    island_names: tuple[str, ...]
    island_devices: tuple[tuple[str, ...], ...]

    def island_of_op(self, island_of: tuple[int, ...]) -> dict[str, int]:
        """Each op's island under a split (``island_of[p]`` for portion ``p``)."""
        return {op: island_of[p] for p, ops in enumerate(self.ops_of) for op in ops}


def to_split_problem(spec: Spec, per_island: int = PORTIONS_PER_ISLAND) -> tuple[SplitProblem, Portions]:
    """The split problem of a spec with islands, and the portions that map its solution back."""
    hw, graph = spec.hardware, spec.graph
    cycles = spec.device_cycles or op_device_cycles(graph, hw)
    islands = hw.islands
    order = graph.topological_order()
    ops_of = _portions(spec, order, cycles, per_island * len(islands))
    portion_of = {op: p for p, ops in enumerate(ops_of) for op in ops}
    devices = {d.name: d for d in hw.devices}
    gang_size = {op: len(gang) for gang in spec.gangs for op in gang}
    work = tuple(tuple(None if max((gang_size.get(op, 0) for op in ops), default=0) > len(island.devices)
                       else _work_on(spec, ops, [devices[n] for n in island.devices], cycles) for island in islands)
                 for ops in ops_of)
    items = host_items(spec, portion_of)
    memory = tuple(sum(size for size, readers in items if p in readers) for p in range(len(ops_of)))  # each tensor once
    network = hw.links[-1] if islands[0].network else None
    # Every op edge that crosses is its own transfer on the network (its own latency).
    edge_bytes: dict[tuple[int, int], int] = {}
    edge_cycles: dict[tuple[int, int], int] = {}
    for src, dst, _ in graph.op_edges():
        p, q = portion_of[src], portion_of[dst]
        if p != q:
            size = graph.edge_bytes(src, dst)
            edge_bytes[p, q] = edge_bytes.get((p, q), 0) + size
            edge_cycles[p, q] = edge_cycles.get((p, q), 0) + (network.transfer_cycles(size, hw.clock_hz)
                                                              if network else 0)
    edges = tuple((p, q, size) for (p, q), size in sorted(edge_bytes.items()))
    network_cycles = tuple(edge_cycles[p, q] for p, q, _ in edges)
    # A colocation group shares a device, a gang an island (its shards on distinct devices of it).
    together = tuple(tuple(sorted({portion_of[op] for op in group}))
                     for group in (*spec.colocation_groups, *spec.gangs))
    limits = tuple(island.host_memory_bytes for island in islands)
    problem = SplitProblem(
        portion_work=work, portion_memory=memory,
        island_lanes=tuple(sum(devices[n].streams for n in island.devices) for island in islands),
        island_memory=tuple(sum(devices[n].memory_capacity_bytes for n in island.devices) for island in islands),
        edges=edges, network_cycles=network_cycles, together=tuple(g for g in together if len(g) > 1),
        host_items=items if any(c is not None for c in limits) else (),
        island_host_memory=limits if any(c is not None for c in limits) else (),
        shared_memory=tuple((size, readers) for size, readers in items if len(readers) > 1))
    return problem, Portions(ops_of, tuple(i.name for i in islands), tuple(i.devices for i in islands))


def host_items(spec: Spec, portion_of: dict[str, int]) -> tuple[tuple[int, tuple[int, ...]], ...]:
    """What an island's host memory holds: each weight and graph input (graph order) with the
    portions whose ops read it (an island running any of them holds it once)."""
    readers: dict[str, set[int]] = {}
    for name, op in spec.graph.ops.items():
        for t in op.inputs:
            if spec.graph.tensors[t].kind in ("weight", "input"):
                readers.setdefault(t, set()).add(portion_of[name])
    return tuple((spec.graph.tensors[t].size_bytes, tuple(sorted(ps))) for t, ps in readers.items())


def _fastest(spec: Spec, op: str, devices, cycles) -> int | None:
    allowed = spec.allowed_devices.get(op)
    options = [cycles[op, d.kind] for d in devices
               if cycles[op, d.kind] is not None and (allowed is None or d.name in allowed)]
    return min(options) if options else None


def _work_on(spec: Spec, ops: tuple[str, ...], devices, cycles) -> int | None:
    """The portion's cycles on the island's fastest allowed device per op (None: some op cannot run there)."""
    total = 0
    for op in ops:
        c = _fastest(spec, op, devices, cycles)
        if c is None:
            return None
        total += c
    return total


def _portions(spec: Spec, order: tuple[str, ...], cycles, count: int) -> tuple[tuple[str, ...], ...]:
    """Each model's ops in topological order, cut into ``count`` runs of about equal work."""
    devices = spec.hardware.devices
    runs: list[tuple[str, ...]] = []
    for model in spec.models or (None,):
        ops = [op for op in order if model is None or spec.graph.ops[op].model == model]
        if not ops:
            continue
        work = [_fastest(spec, op, devices, cycles) or 0 for op in ops]
        pieces = min(count, len(ops))
        share = max(1, -(-sum(work) // pieces))
        run: list[str] = []
        done = cut = 0
        for op, w in zip(ops, work):
            run.append(op)
            done += w
            if done >= share * (cut + 1) and cut < pieces - 1:
                runs.append(tuple(run))
                run, cut = [], cut + 1
        if run:
            runs.append(tuple(run))
    return tuple(runs)
