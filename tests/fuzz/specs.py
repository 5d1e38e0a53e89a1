"""A structure-aware fuzzer of spine specs and their ``memory:`` section.

Cases are built in three layers, all drawn with hypothesis:

1. a *valid* spec: hardware (every profile, counts, streams, clock and memory overrides,
   topologies and explicit links), models (inline graphs of every op type with consistent
   shapes, or the built-in generators), constraints (pins, colocation, memory limits),
   the solver section, the objective and the memory section;
2. *mutations* of its data, each at a path drawn from the whole tree: a value generated
   from the schema's own type for that path (:func:`schema_value`, read from the pydantic
   models of ``planner/spec/models.py``), a hostile value (wrong types, huge, negative,
   NaN, infinite, 1e999-style numbers, long or odd names), a deleted or misspelt key, a
   duplicated entry (duplicate names), a reference to another name, a shape or an input
   list changed (wrong shapes and arity), deep nesting;
3. *text* mutations of its YAML: billion-laughs and recursive aliases, deep nesting,
   duplicate keys, tags, several documents, bad UTF-8, truncation, a file over the size
   limit.

Each case runs through the real ``plan validate`` and, for a drawn sample of the valid
ones, ``plan solve --time-limit 2 --workers 1`` and ``plan simulate --numeric`` on what
solve wrote (:mod:`tests.fuzz.harness` judges every run).

Run longer than the test suite does::

    python -m tests.fuzz.specs --examples 10000 --jobs 2

It prints the counts by outcome and keeps every failing case (spec and output) under
``--keep`` (default ``fuzz-failures/``).
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import re
import shutil
import sys
import tempfile
import time
import typing
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import yaml
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from tests.fuzz.harness import Run, Verdict, judge, run_many, written_files

__all__ = ["Case", "CaseResult", "KNOWN_BUGS", "valid_spec", "schema_value", "spec_case", "run_case", "main"]

PROFILES = ("tpu-v1", "tpu-v4", "edge-npu", "generic")

#: Open bugs owned elsewhere: an exit-3 run whose message matches is counted as
#: ``known:<name>`` rather than failing the fuzz test, and listed apart in the long run's
#: summary; anything else that exits 3 still fails. Empty: the three lowering bugs listed
#: here while issue 9 was under way (a consumer reading before its producer wrote, an op
#: reading one tensor twice, operand buffers across devices) are fixed on main.
KNOWN_BUGS: dict[str, re.Pattern] = {}
FLOAT_DTYPES = ("fp32", "fp32", "fp32", "fp16")
DTYPES = ("fp32", "fp16", "bf16", "int8", "fp64")


# ------------------------------------------------------------------ valid specs

@st.composite
def hardware(draw: st.DrawFn) -> tuple[dict, list[str], list[str]]:
    """A hardware section, its device kinds and its instance names."""
    devices, kinds, instances = [], [], []
    for k in range(draw(st.integers(1, 3))):
        name = f"k{k}"
        d: dict[str, Any] = {"name": name, "profile": draw(st.sampled_from(PROFILES))}
        count = draw(st.integers(1, 3))
        if count != 1 or draw(st.booleans()):
            d["count"] = count
        if draw(st.integers(0, 4)) == 0:
            d["streams"] = draw(st.integers(1, 3))
        if draw(st.integers(0, 5)) == 0:
            d["clock"] = f"{draw(st.integers(100, 2000))} MHz"
        if draw(st.integers(0, 5)) == 0:
            d["memory"] = [{"name": "fast", "capacity": f"{draw(st.integers(1, 64))} MiB",
                            "bandwidth": f"{draw(st.integers(50, 2000))} GB/s"},
                           {"name": "main", "capacity": f"{draw(st.integers(1, 16))} GiB",
                            "bandwidth": f"{draw(st.integers(5, 500))} GB/s"}][draw(st.integers(0, 1)):]
        devices.append(d)
        kinds.append(name)
        instances += [f"{name}{i}" for i in range(count)]
    hw: dict[str, Any] = {"devices": devices}
    if draw(st.integers(0, 4)) == 0:
        hw["clock"] = draw(st.sampled_from(["1 GHz", "500 MHz", "2 GHz"]))
    if len(instances) > 1:
        bandwidth = f"{draw(st.integers(1, 400))} GB/s"
        latency = draw(st.sampled_from([0, 5, "1 us", "200 ns", "3 cycles"]))
        if draw(st.booleans()):
            hw["topology"] = {"kind": draw(st.sampled_from(["all-to-all", "ring", "bus"])),
                              "bandwidth": bandwidth, "latency": latency}
        else:
            hw["links"] = [{"name": f"l{i}", "between": [a, b], "bandwidth": bandwidth, "latency": latency}
                           for i, (a, b) in enumerate(zip(instances, instances[1:]))]
    return hw, kinds, instances


class _GraphBuilder:
    """Collects tensors and ops with shapes that satisfy every op type's contract."""

    def __init__(self, draw: st.DrawFn, dtype: str) -> None:
        self.draw, self.dtype = draw, dtype
        self.tensors: list[dict] = []
        self.ops: list[dict] = []
        self.shapes: dict[str, tuple[int, ...]] = {}
        self.consumed: set[str] = set()

    def tensor(self, shape: Sequence[int], kind: str = "activation") -> str:
        name = f"t{len(self.tensors)}"
        self.tensors.append({"name": name, "shape": list(shape), "dtype": self.dtype, "kind": kind})
        self.shapes[name] = tuple(shape)
        return name

    def op(self, type_: str, inputs: list[str], outputs: list[str], **attrs: Any) -> None:
        entry: dict[str, Any] = {"name": f"o{len(self.ops)}", "type": type_, "inputs": inputs, "outputs": outputs}
        if attrs:
            entry["attrs"] = attrs
        self.ops.append(entry)
        self.consumed.update(inputs)

    def pick(self, rank: int | None = None) -> str | None:
        names = [n for n, s in self.shapes.items() if rank is None or len(s) == rank]
        return self.draw(st.sampled_from(names)) if names else None


def _add_op(b: _GraphBuilder, kinds: list[str]) -> None:
    """One op of a drawn type on an existing tensor of a fitting shape."""
    draw = b.draw
    kind = draw(st.sampled_from(["unary", "binary", "softmax", "layernorm", "matmul", "conv2d", "pool",
                                 "global_avgpool", "reshape", "transpose", "concat", "split", "task"]))
    x = b.pick(4) if kind in ("conv2d", "pool") else b.pick()
    if x is None:
        x = b.pick()
        kind = "unary"
    s = b.shapes[x]
    if kind == "unary":
        b.op(draw(st.sampled_from(["relu", "gelu", "sigmoid", "tanh"])), [x], [b.tensor(s)])
    elif kind == "binary":
        other = draw(st.sampled_from([x, b.tensor(s, "weight"), b.tensor(s[-1:] or (1,), "weight")]))
        b.op(draw(st.sampled_from(["add", "sub", "mul"])), [x, other], [b.tensor(s)])
    elif kind == "softmax" and s:
        b.op("softmax", [x], [b.tensor(s)], axis=draw(st.integers(-len(s), len(s) - 1)))
    elif kind == "layernorm" and s:
        axis = draw(st.integers(0, len(s) - 1))
        params = [b.tensor(s[axis:], "weight") for _ in range(draw(st.integers(0, 2)))]
        b.op("layernorm", [x, *params], [b.tensor(s)], axis=axis)
    elif kind == "matmul" and len(s) >= 2:
        w = b.tensor((s[-1], draw(st.integers(1, 8))), "weight")
        b.op("matmul", [x, w], [b.tensor((*s[:-1], b.shapes[w][-1]))])
    elif kind == "conv2d":
        n, c, h, wd = s
        groups = draw(st.sampled_from([g for g in (1, 2, c) if c % g == 0]))
        f = groups * draw(st.integers(1, 3))
        k, stride, pad = draw(st.integers(1, 3)), draw(st.integers(1, 2)), draw(st.integers(0, 1))
        oh, ow = (h + 2 * pad - k) // stride + 1, (wd + 2 * pad - k) // stride + 1
        if oh >= 1 and ow >= 1:
            w = b.tensor((f, c // groups, k, k), "weight")
            b.op("conv2d", [x, w], [b.tensor((n, f, oh, ow))], stride=stride, padding=pad, groups=groups)
    elif kind == "pool":
        n, c, h, wd = s
        k, stride = draw(st.integers(1, 3)), draw(st.integers(1, 3))
        pad = draw(st.integers(0, k - 1))
        oh, ow = (h + 2 * pad - k) // stride + 1, (wd + 2 * pad - k) // stride + 1
        if oh >= 1 and ow >= 1:
            b.op(draw(st.sampled_from(["maxpool", "avgpool"])), [x], [b.tensor((n, c, oh, ow))],
                 kernel=k, stride=stride, padding=pad)
    elif kind == "global_avgpool" and len(s) >= 3:
        b.op("global_avgpool", [x], [b.tensor((*s[:2], *(1,) * (len(s) - 2)))])
    elif kind == "reshape":
        b.op("reshape", [x], [b.tensor((math.prod(s),))], shape=[math.prod(s)])
    elif kind == "transpose" and s:
        perm = draw(st.permutations(range(len(s))))
        b.op("transpose", [x], [b.tensor(tuple(s[p] for p in perm))], perm=list(perm))
    elif kind == "concat" and s:
        axis = draw(st.integers(0, len(s) - 1))
        b.op("concat", [x, x], [b.tensor((*s[:axis], 2 * s[axis], *s[axis + 1:]))], axis=axis)
    elif kind == "split" and s and s[0] >= 2:
        first = draw(st.integers(1, s[0] - 1))
        outs = [b.tensor((first, *s[1:])), b.tensor((s[0] - first, *s[1:]))]
        b.op("split", [x], outs, axis=0, sizes=[first, s[0] - first])
    elif kind == "task":
        cycles = {k: draw(st.integers(0, 5000)) for k in kinds if draw(st.booleans())} or {kinds[0]: 100}
        b.ops.append({"name": f"o{len(b.ops)}", "type": "task", "inputs": [x], "outputs": [b.tensor((4,))],
                      "cycles": cycles})
        b.consumed.add(x)


@st.composite
def inline_graph(draw: st.DrawFn, kinds: list[str]) -> dict:
    """An inline graph of a few ops of drawn types (shapes consistent, small)."""
    b = _GraphBuilder(draw, draw(st.sampled_from(FLOAT_DTYPES if draw(st.integers(0, 5)) else DTYPES)))
    if draw(st.booleans()):
        b.tensor((draw(st.integers(1, 4)), draw(st.integers(1, 4)), draw(st.integers(2, 9)),
                  draw(st.integers(2, 9))), "input")
    else:
        b.tensor(tuple(draw(st.lists(st.integers(1, 8), min_size=1, max_size=3))), "input")
    for _ in range(draw(st.integers(1, 8))):
        _add_op(b, kinds)
    if not b.ops:
        x = b.pick()
        b.op("relu", [x], [b.tensor(b.shapes[x])])
    for t in b.tensors:
        if t["kind"] == "activation" and t["name"] not in b.consumed:
            t["kind"] = "output"
    if len(b.ops) > 1 and draw(st.integers(0, 4)) == 0:
        b.ops[-1]["after"] = [b.ops[0]["name"]]
    return {"tensors": b.tensors, "ops": b.ops}


@st.composite
def generator(draw: st.DrawFn) -> dict:
    """A built-in generator with small parameters."""
    kind = draw(st.sampled_from(["mlp", "transformer", "resnet"]))
    if kind == "mlp":
        return {"kind": "mlp", "layers": draw(st.integers(1, 4)), "width": draw(st.integers(1, 64)),
                "batch": draw(st.integers(1, 4)), "dtype": draw(st.sampled_from(FLOAT_DTYPES))}
    if kind == "transformer":
        heads = draw(st.integers(1, 2))
        return {"kind": "transformer", "layers": 1, "heads": heads, "d_model": heads * draw(st.integers(1, 8)),
                "seq": draw(st.integers(1, 8)), "dtype": draw(st.sampled_from(FLOAT_DTYPES))}
    return {"kind": "resnet", "blocks": [1] * draw(st.integers(1, 2)), "width": draw(st.integers(1, 4)),
            "image": draw(st.integers(8, 16)), "in_channels": 1, "classes": draw(st.integers(1, 8)),
            "batch": draw(st.integers(1, 2)), "dtype": draw(st.sampled_from(FLOAT_DTYPES))}


@st.composite
def valid_spec(draw: st.DrawFn) -> dict:
    """A spec that is valid by construction (it may still be infeasible)."""
    hw, kinds, instances = draw(hardware())
    models = []
    for m in range(draw(st.integers(1, 2))):
        if draw(st.integers(0, 3)):
            models.append({"name": f"m{m}", "graph": draw(inline_graph(kinds))})
        else:
            models.append({"name": f"m{m}", "generator": draw(generator())})
    spec: dict[str, Any] = {"version": 1, "name": "fz", "hardware": hw, "models": models}
    spec["objective"] = draw(st.sampled_from(["latency", "latency", "throughput", "max-load"]))
    constraints: dict[str, Any] = {}
    if draw(st.integers(0, 3)) == 0:
        constraints["pins"] = [{"ops": f"{models[0]['name']}/*", "device": draw(st.sampled_from(kinds + instances))}]
    if draw(st.integers(0, 4)) == 0:
        constraints["memory_limits"] = [{"device": draw(st.sampled_from(kinds + instances)),
                                         "max": draw(st.sampled_from(["1 GiB", "64 MiB", "1 KiB"]))}]
    if constraints:
        spec["constraints"] = constraints
    spec["solver"] = {"time_limit": "2 s", "workers": 1, "seed": draw(st.integers(0, 3))}
    if draw(st.integers(0, 2)) == 0:
        memory: dict[str, Any] = {"plan": draw(st.booleans())}
        if draw(st.booleans()):
            memory["split_factors"] = draw(st.lists(st.sampled_from([1, 2, 4]), min_size=1, max_size=3))
        if draw(st.booleans()):
            memory["alignment"] = draw(st.sampled_from(["64 B", "4 KiB", "1 B"]))
        if draw(st.integers(0, 3)) == 0:
            memory["split"] = draw(st.booleans())
        if draw(st.integers(0, 3)) == 0:  # DMAs and ops share each level's bandwidth
            memory["bandwidth"] = draw(st.sampled_from(["shared", "separate"]))
        spec["memory"] = memory
    return spec


# ------------------------------------------------------------------ the schema's own types

def _model_at(path: Sequence[Any]) -> Any:
    """The annotation the pydantic models give the value at ``path`` (None if unknown)."""
    from planner.spec.models import SpecDocument

    cur: Any = SpecDocument
    for part in path:
        cur = _unwrap(cur)
        origin = typing.get_origin(cur)
        if isinstance(cur, type) and issubclass(cur, BaseModel) and isinstance(part, str):
            if part not in cur.model_fields:
                return None
            cur = cur.model_fields[part].annotation
        elif origin is list and isinstance(part, int):
            cur = typing.get_args(cur)[0]
        elif origin is dict and isinstance(part, str):
            cur = typing.get_args(cur)[1]
        elif origin is typing.Union:
            members = [m for m in typing.get_args(cur) if _unwrap(m) is not type(None)]
            cur = members[0] if members else None
        else:
            return None
    return cur


def _unwrap(tp: Any) -> Any:
    while typing.get_origin(tp) is typing.Annotated:
        tp = typing.get_args(tp)[0]
    return tp


def _constraints(tp: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if typing.get_origin(tp) is typing.Annotated:
        for meta in typing.get_args(tp)[1:]:
            for item in getattr(meta, "metadata", [meta]):
                for key in ("ge", "le", "min_length", "max_length"):
                    if getattr(item, key, None) is not None:
                        out[key] = getattr(item, key)
    return out


def schema_value(tp: Any, depth: int = 0) -> st.SearchStrategy:
    """Values of the form the schema gives ``tp`` (random content; bounds respected or crossed).

    Examples
    --------
    >>> from planner.spec.models import DeviceSpec
    >>> sorted(schema_value(DeviceSpec).example())[:2]  # doctest: +SKIP
    ['count', 'name']
    """
    bounds = _constraints(tp)
    base = _unwrap(tp)
    origin = typing.get_origin(base)
    if depth > 4 or base is None or base is typing.Any:
        return st.none() | st.integers(-2, 10) | st.text(max_size=5)
    if origin is typing.Literal:
        return st.sampled_from(typing.get_args(base))
    if origin is typing.Union:
        return st.one_of(*[schema_value(a, depth + 1) for a in typing.get_args(base)])
    if origin is list:
        return st.lists(schema_value(typing.get_args(base)[0], depth + 1), max_size=3)
    if origin is dict:
        return st.dictionaries(st.sampled_from(["k0", "k1", "x", "npu"]), schema_value(typing.get_args(base)[1],
                                                                                       depth + 1), max_size=2)
    if isinstance(base, type) and issubclass(base, BaseModel):
        fields = {name: schema_value(f.annotation, depth + 1) for name, f in base.model_fields.items()}
        required = [n for n, f in base.model_fields.items() if f.is_required()]
        return st.fixed_dictionaries({n: fields[n] for n in required},
                                     optional={n: s for n, s in fields.items() if n not in required})
    if base is bool:
        return st.booleans()
    if base is int:
        low, high = bounds.get("ge", -3), bounds.get("le", 2**40)
        return st.integers(low, min(high, low + 16)) | st.sampled_from([low - 1, high, high + 1])
    if base is float:
        return st.floats(allow_nan=True, allow_infinity=True)
    if base is str:
        return st.sampled_from(["k0", "k00", "m0/o0", "m0/*", "fast", "main", "1 GiB", "2 s", "tpu-v4", "x",
                                "10 GB/s", "1 GHz"]) | st.text(min_size=1, max_size=bounds.get("max_length", 8))
    return st.none()


# ------------------------------------------------------------------ mutations

HOSTILE = (None, True, False, 0, -1, 1.5, 2**31, 2**63, 10**30, -(10**30), float("inf"), float("-inf"),
           float("nan"), "", "x" * 300, "..", ".", "-rf", "a/b", "[/]", "é", "\x01", "1e999", "1e999 GB",
           "-5 GiB", "0 B", "1e-999 s", "nan GB/s", "inf Hz", "0 Hz", "1e30 s", "0.5 B", "1e999 cycles",
           "9" * 50, [], {}, [[[]]], [0], [-1], [2**40, 2**40], list(range(300)), {"kind": "x"}, {"a": {"b": {}}})


# A fresh copy each time: a mutation that later edits a drawn list or mapping in place
# must not change HOSTILE itself (hypothesis would see a strategy whose draws drift).
_hostile = st.sampled_from(HOSTILE).map(copy.deepcopy)


def _paths(data: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(data, dict):
        for k, v in data.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            out += _paths(v, (*prefix, i))
    return out


def _get(data: Any, path: tuple) -> Any:
    for p in path:
        data = data[p]
    return data


def _set(data: Any, path: tuple, value: Any) -> Any:
    if not path:
        return value
    _get(data, path[:-1])[path[-1]] = value
    return data


def _names(data: Any) -> list[str]:
    return sorted({v for p in _paths(data) if p and p[-1] in ("name", "device") and isinstance(
        v := _get(data, p), str)} | {"k0", "k0x", "m0/o0", "m0/t1"})


@st.composite
def mutate(draw: st.DrawFn, spec: dict) -> dict:
    """One mutation of ``spec`` at a drawn path (see the module docstring)."""
    data = copy.deepcopy(spec)
    paths = _paths(data)
    path = draw(st.sampled_from(paths[1:] or paths))
    value = _get(data, path)
    kind = draw(st.sampled_from(["schema", "hostile", "hostile", "delete", "unknown-key", "duplicate",
                                 "reference", "shape", "arity", "nest", "op-type"]))
    parent = _get(data, path[:-1]) if path else None
    if kind == "schema":
        tp = _model_at(path)
        if tp is not None:
            return _set(data, path, draw(schema_value(tp)))
        kind = "hostile"
    if kind == "hostile":
        return _set(data, path, draw(_hostile))
    if kind == "delete" and isinstance(parent, (dict, list)):
        del parent[path[-1]]
        return data
    if kind == "unknown-key" and isinstance(value, dict):
        key = draw(st.sampled_from([*(k[:-1] + k[-1] * 2 for k in value if isinstance(k, str) and k), "bogus", "1"]))
        value[key] = draw(_hostile)
        return data
    if kind == "duplicate" and isinstance(value, list) and value:
        value.append(copy.deepcopy(value[draw(st.integers(0, len(value) - 1))]))
        return data
    if kind == "reference" and isinstance(value, str):
        return _set(data, path, draw(st.sampled_from(_names(data))))
    if kind == "shape" and path and path[-1] == "shape" and isinstance(value, list):
        if value and draw(st.booleans()):
            value[draw(st.integers(0, len(value) - 1))] = draw(st.sampled_from([1, 2, 3, 7, 2**20, 2**31 - 1]))
        else:
            value.append(draw(st.integers(1, 5)))
        return data
    if kind == "arity" and path and path[-1] in ("inputs", "outputs", "after") and isinstance(value, list):
        if value and draw(st.booleans()):
            value.pop(draw(st.integers(0, len(value) - 1)))
        else:
            value.append(draw(st.sampled_from([*value, "t0", "t1", "nope"])) if value else "t0")
        return data
    if kind == "op-type" and path and path[-1] == "type":
        from planner.spec.models import OP_TYPES

        return _set(data, path, draw(st.sampled_from(OP_TYPES)))
    if kind == "nest":
        # Deeper nesting is the text mutations' job: dumping it would recurse near Python's
        # limit, and a RecursionError that depends on the stack's depth makes draws drift.
        depth = draw(st.sampled_from([2, 10, 40]))
        for _ in range(depth):
            value = [value]
        return _set(data, path, value)
    return _set(data, path, draw(_hostile))


# ------------------------------------------------------------------ text

def _bomb(levels: int) -> str:
    lines = ["bomb0: &b0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"bomb{i}: &b{i} [{', '.join([f'*b{i - 1}'] * 10)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


@st.composite
def text_mutation(draw: st.DrawFn, text: str) -> str | bytes:
    """The spec's YAML text, changed below the level of its data."""
    kind = draw(st.sampled_from(["bomb", "bomb-in-models", "recursive", "deep", "duplicate-key", "tag",
                                 "documents", "utf8", "nul", "truncate", "tabs", "huge", "undefined-alias"]))
    if kind == "bomb":
        return _bomb(draw(st.integers(3, 12))) + text
    if kind == "bomb-in-models":
        return text.replace("models:\n", "models: &m\n", 1) + "extra: [" + ", ".join(["*m"] * 50) + "]\n"
    if kind == "recursive":
        return text + "loop: &loop [1, *loop]\n"
    if kind == "deep":
        n = draw(st.sampled_from([65, 1000, 100_000]))
        return text + "deep: " + "[" * n + "]" * n + "\n"
    if kind == "duplicate-key":
        first = text.splitlines()[0] if text else "version: 1"
        return text + first + "\n"
    if kind == "tag":
        return text + draw(st.sampled_from(["t: !!python/object:os.system {}\n", "t: !!binary aGk=\n",
                                            "t: !!set {a, b}\n", "t: !custom 1\n", "t: !!timestamp 2024-13-40\n",
                                            "t: !!int 99999999999999999999999999999999999\n"]))
    if kind == "documents":
        return text + "---\n" + text
    if kind == "utf8":
        return text.encode() + b"\nname: \xff\xfe\n"
    if kind == "nul":
        return text + "name: a\x00b\n"
    if kind == "truncate":
        return text[:draw(st.integers(0, max(0, len(text) - 1)))]
    if kind == "tabs":
        return text.replace("  ", "\t", 1)
    if kind == "huge":
        return text + "#" * (16 * 2**20 + 1) + "\n"
    return text + "x: *nowhere\n"


# ------------------------------------------------------------------ cases

@dataclass
class Case:
    """One fuzzed input: the file's content and whether to solve it when it validates."""

    content: str | bytes
    solve: bool = False
    label: str = ""

    @property
    def data(self) -> bytes:
        return self.content if isinstance(self.content, bytes) else self.content.encode("utf-8", "surrogatepass")


def _dump(spec: Any, as_json: bool) -> str:
    if as_json:
        return json.dumps(spec, indent=1, allow_nan=True, default=str)
    return yaml.safe_dump(spec, sort_keys=False, default_flow_style=None, allow_unicode=True, width=100)


@st.composite
def spec_case(draw: st.DrawFn, *, solve_rate: float = 0.5) -> Case:
    """A valid spec, mutated 0-3 times, sometimes changed as text too; drawn for solving
    (when it validates) with ``solve_rate`` if unmutated, a third of it if mutated."""
    spec: Any = draw(valid_spec())
    mutations = draw(st.sampled_from([0, 0, 1, 1, 1, 2, 3]))
    for _ in range(mutations):
        spec = draw(mutate(spec)) if isinstance(spec, dict) else spec
    as_json = draw(st.integers(0, 9)) == 0
    try:
        text = _dump(spec, as_json)
    except (ValueError, RecursionError, yaml.YAMLError):
        text = _dump(draw(valid_spec()), as_json)
    label = f"{mutations} mutation(s)" + (", json" if as_json else "")
    content: str | bytes = text
    if draw(st.integers(0, 5)) == 0:
        content = draw(text_mutation(text))
        label += ", text"
    rate = solve_rate if mutations == 0 else solve_rate / 3
    return Case(content, solve=draw(st.integers(0, 999)) < 1000 * rate, label=label)


@dataclass
class CaseResult:
    """The runs of one case and their verdicts."""

    case: Case
    runs: list[tuple[Run, Verdict]] = field(default_factory=list)

    @property
    def outcome(self) -> str:
        """``validate:<kind>``, then ``solve:<kind>`` and ``numeric:<kind>`` when they ran."""
        return " ".join(f"{r.argv[0]}:{v.kind}" for r, v in self.runs)

    @property
    def violations(self) -> list[str]:
        return [f"plan {' '.join(r.argv)}: {', '.join(v.violations)} ({v.detail})" for r, v in self.runs
                if v.violations]


_KNOWN_SYMPTOMS = ("exit 3", "traceback", "printed to stdout", "the plan solve wrote")


def _known(run: Run, verdict: Verdict) -> Verdict:
    """A verdict for a run that hit one of :data:`KNOWN_BUGS` (an exit 3 and its symptoms only)."""
    if run.code == 3 and all(v.startswith(_KNOWN_SYMPTOMS) for v in verdict.violations):
        for name, pattern in KNOWN_BUGS.items():
            if pattern.search(run.stderr):
                return Verdict(f"known: {name}", verdict.detail)
    return verdict


def _numeric_verdict(run: Run) -> Verdict:
    """``plan simulate --numeric`` on solve's own output: anything but exit 0 is a finding,
    except a model whose arithmetic numeric mode does not define (task ops, int dtypes)."""
    verdict = judge(run)
    if run.code == 2 and "numeric mode cannot evaluate" in run.stderr:
        return Verdict("not-numeric", verdict.detail)
    if run.code not in (0, None):
        verdict.violations.append("the plan solve wrote and verified fails `plan simulate --numeric`")
    return verdict


def run_case(case: Case, root: Path, timeout_s: float = 60.0) -> CaseResult:
    """Validate the case, and solve and replay it when it is valid and drawn for solving."""
    cwd = Path(tempfile.mkdtemp(prefix="case-", dir=root))
    (cwd / "spec.yaml").write_bytes(case.data)
    result = CaseResult(case)
    run = run_many([(("validate", "spec.yaml"), cwd)], timeout_s=timeout_s)[0]
    result.runs.append((run, judge(run, written=written_files(cwd, ["spec.yaml"]))))
    if run.code == 0 and case.solve:
        run = run_many([(("solve", "spec.yaml", "-o", "out", "--time-limit", "2", "--workers", "1", "--quiet"),
                         cwd)], timeout_s=timeout_s)[0]
        written = [] if run.code == 0 else written_files(cwd, ["spec.yaml"])
        verdict = _known(run, judge(run, written=written))
        if run.code == 2:  # bad input that validate accepted: an invalid spec let through
            verdict.violations.append("`plan validate` accepted a spec `plan solve` refuses as bad input")
        result.runs.append((run, verdict))
        if run.code == 0:
            run = run_many([(("simulate", "out", "--numeric"), cwd)], timeout_s=timeout_s)[0]
            result.runs.append((run, _known(run, _numeric_verdict(run))))
    shutil.rmtree(cwd, ignore_errors=True)
    for suffix in (".stdout", ".stderr"):
        (cwd.parent / f"{cwd.name}{suffix}").unlink(missing_ok=True)
    return result


# ------------------------------------------------------------------ the long run

def collect_cases(count: int, seed: int, solve_rate: float = 0.5) -> list[Case]:
    """``count`` cases drawn by hypothesis from ``seed`` (deterministic)."""
    cases: list[Case] = []

    @settings(max_examples=count, phases=[Phase.generate], database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(spec_case(solve_rate=solve_rate))
    def draw_one(case: Case) -> None:
        cases.append(case)

    from hypothesis import seed as hypothesis_seed

    hypothesis_seed(seed)(draw_one)()
    return cases[:count]


def _run_case_args(args: tuple[Case, Path, float]) -> CaseResult:
    return run_case(*args)


def _run_parallel(cases: list[Case], root: Path, jobs: int, timeout_s: float) -> list[CaseResult]:
    """Each case's runs in sequence; up to ``jobs`` cases at once (one process per worker);
    a progress line every 500 cases.

    The workers come from a fork server, not from this process: every run is forked from a
    worker, and a child forked from this process would count all the drawn cases (about
    1.8 GB for 10,000) in its resident set, so every run would break the RSS limit."""
    import multiprocessing

    start, results = time.perf_counter(), []
    args = [(c, root, timeout_s) for c in cases]
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["planner.cli", "planner.pipeline", "planner.spec", "tests.fuzz.specs"])
    with ctx.Pool(max(1, jobs), maxtasksperchild=200) as pool:
        for result in pool.imap(_run_case_args, args, chunksize=1):
            results.append(result)
            if len(results) % 500 == 0:
                bad = sum(1 for r in results if r.violations)
                print(f"  {len(results):6} cases, {bad} failing, {time.perf_counter() - start:.0f} s", flush=True)
    return results


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m tests.fuzz.specs``: fuzz N specs, print the outcomes, keep the failures."""
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz.specs", description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=1000, help="fuzzed specs (default 1000)")
    parser.add_argument("--seed", type=int, default=0, help="hypothesis seed (same seed, same specs)")
    parser.add_argument("--jobs", type=int, default=2, help="cases run in parallel")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds before a run counts as a hang")
    parser.add_argument("--solve-rate", type=float, default=0.5,
                        help="share of the valid unmutated specs also solved (a third of it for mutated ones)")
    parser.add_argument("--keep", type=Path, default=Path("fuzz-failures"), help="where failing cases go")
    args = parser.parse_args(argv)

    start = time.perf_counter()
    cases = collect_cases(args.examples, args.seed, args.solve_rate)
    print(f"drew {len(cases)} cases in {time.perf_counter() - start:.0f} s", flush=True)
    root = Path(tempfile.mkdtemp(prefix="plan-spec-fuzz-"))
    results = _run_parallel(cases, root, args.jobs, args.timeout)
    shutil.rmtree(root, ignore_errors=True)
    outcomes = Counter(r.outcome for r in results)
    kinds = Counter(f"{run.argv[0]}:{verdict.kind}" for r in results for run, verdict in r.runs)
    failures = [r for r in results if r.violations]
    print(f"\n{len(results)} specs in {time.perf_counter() - start:.0f} s; runs by outcome:")
    for kind, n in sorted(kinds.items()):
        print(f"  {kind:32} {n:6}")
    print("cases by outcome:")
    for outcome, n in outcomes.most_common():
        print(f"  {outcome:60} {n:6}")
    print("messages (up to 3 distinct per kind of run):")
    seen: dict[str, list[str]] = {}
    for r in results:
        for run, verdict in r.runs:
            shown = seen.setdefault(f"{run.argv[0]}:{verdict.kind}", [])
            if verdict.detail and verdict.detail not in shown and len(shown) < 3:
                shown.append(verdict.detail)
    for kind, details in sorted(seen.items()):
        for detail in details:
            print(f"  {kind:24} {detail[:150]}")
    peak = max((run.peak_rss_bytes for r in results for run, _ in r.runs), default=0)
    slowest = max((run.wall_s for r in results for run, _ in r.runs), default=0.0)
    print(f"peak RSS of any run {peak / 2**20:.0f} MiB; slowest run {slowest:.1f} s")
    if failures:
        args.keep.mkdir(parents=True, exist_ok=True)
        for i, r in enumerate(failures):
            (args.keep / f"case{i:05}.yaml").write_bytes(r.case.data)
            (args.keep / f"case{i:05}.txt").write_text("\n".join(r.violations) + "\n")
        print(f"{len(failures)} failing cases kept in {args.keep}/:")
        for r in failures[:20]:
            print("  " + r.violations[0][:200])
    else:
        print("no violations")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
