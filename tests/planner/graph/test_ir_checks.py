"""The graph IR's own checks, for graphs that do not come from an inline spec (generators, importers,
graph.json)."""

import pytest

from planner.graph.ir import Graph, GraphError, Op, Tensor


def test_an_output_no_op_produces_is_refused():
    # The numeric replay expects every graph output held whole in main memory; one that no op
    # writes reached it and ended in an internal error (exit 3), found by the spec fuzzer.
    tensors = [Tensor("x", (4,), kind="input"), Tensor("y", (4,), kind="output"), Tensor("z", (4,), kind="output")]
    with pytest.raises(GraphError, match="tensor 'z' is an output of the graph, but no op produces it"):
        Graph(tensors, [Op("r", "relu", ("x",), ("y",))])
    assert Graph(tensors[:2], [Op("r", "relu", ("x",), ("y",))]).producer("y") == "r"
