"""The branchy benchmark generator: stacked inception modules."""

from __future__ import annotations

import pytest

from planner.graph import Graph
from planner.graph.generators import inception_graph


@pytest.mark.parametrize("modules", [1, 3, 714])
def test_op_count_and_a_valid_graph(modules):
    tensors, ops = inception_graph("net", modules=modules, channels=8, image=4)
    assert len(ops) == 5 + 14 * modules
    g = Graph(tensors, ops)  # acyclic, every tensor known, one producer each
    assert len(g.ops) == len(ops)


def test_each_module_has_four_parallel_branches_joined_by_a_concat():
    tensors, ops = inception_graph("net", modules=2, channels=16, image=8)
    g = Graph(tensors, ops)
    cat = g.ops["net/module1/concat"]
    assert len(cat.inputs) == 4
    # the four branches start from the previous module's output and do not feed each other
    heads = [o.name for o in ops if o.inputs and o.inputs[0] == "net/module0/concat/y"]
    assert sorted(heads) == ["net/module1/b1/conv", "net/module1/b3/reduce", "net/module1/b5/reduce",
                             "net/module1/pool/max"]
    shapes = {t.name: t.shape for t in tensors}
    assert shapes["net/module1/b5/conv5/w"] == (4, 4, 5, 5) and shapes["net/fc/y"] == (1, 10)


def test_bad_parameters_say_which():
    with pytest.raises(ValueError, match="channels \\(6\\) must be divisible by 4"):
        inception_graph(channels=6)
    with pytest.raises(ValueError, match="modules must be a positive integer"):
        inception_graph(modules=0)
