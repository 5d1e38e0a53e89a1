"""The live progress of ``planner.run``: the heuristic's point comes first, then the search's."""

from __future__ import annotations

from planner.pipeline import run


def test_the_first_progress_point_of_a_run_is_the_heuristics():
    points = []
    outcome = run("specs/taskgraph.yaml", time_limit_s=5, workers=1, progress=points.append)
    first = points[0]
    assert first.source == "heuristic"
    assert (first.objective, first.bound) == (outcome.heuristic.objective, outcome.heuristic.bound)
    assert [p.source for p in points[1:]] and all(p.source == "search" for p in points[1:])
    assert min(p.objective for p in points) == outcome.plan.objective


def test_the_live_line_says_whose_point_it_shows():
    import io

    from rich.console import Console

    from planner.cli import _LiveLine
    from solvers.core import ProgressPoint

    line = _LiveLine(Console(file=io.StringIO()))
    line(ProgressPoint(0.1, 1234, None, "heuristic"))
    text = str(line.__rich__())  # "<phase> <elapsed> s  heuristic ..." (eco-sweep: the phase leads the line)
    assert text.startswith("placement") and text.endswith("heuristic 1,234  bound -  gap -")
    line(ProgressPoint(0.2, 1200, 1100))
    assert str(line.__rich__()).endswith("incumbent 1,200  bound 1,100  gap 8.33%")
