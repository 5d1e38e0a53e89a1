"""The command line's own input: flags, exit codes 2, 3 and 4, messages that quote user text."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from planner.cli import app
from planner.errors import EXIT_BAD_INPUT, EXIT_INTERNAL, EXIT_NO_SOLUTION

ROOT = Path(__file__).resolve().parent.parent
runner = CliRunner()
MLP = str(ROOT / "specs" / "mlp.yaml")


@pytest.mark.parametrize("flags, fragment", [
    (["--time-limit", "0"], "--time-limit: expected seconds, more than 0 and at most 1,000,000, got 0.0"),
    (["--time-limit", "-1"], "got -1.0"),
    (["--time-limit", "nan"], "got nan"),
    (["--time-limit", "inf"], "got inf"),
    (["--time-limit", "1e300"], "got 1e+300"),
    (["--workers", "0"], "--workers: expected an integer from 1 to 128, got 0"),
    (["--workers", "100000"], "got 100000"),
    (["--seed", "-1"], "--seed: expected an integer from 0 to 2,147,483,647, got -1"),
    (["--seed", str(2**40)], f"got {2**40}"),
])
def test_bad_flags_exit_2_with_a_message_and_write_nothing(tmp_path, flags, fragment):
    out = tmp_path / "out"
    res = runner.invoke(app, ["solve", MLP, "-o", str(out), *flags])
    assert res.exit_code == EXIT_BAD_INPUT, res.output
    assert fragment in res.output and "Traceback" not in res.output
    assert not out.exists()


def test_simulate_seed_is_checked(tmp_path):
    res = runner.invoke(app, ["simulate", str(tmp_path), "--seed", "-3"])
    assert res.exit_code == EXIT_BAD_INPUT and "--seed: expected an integer from 0" in res.output


def test_no_plan_within_the_time_limit_exits_4(tmp_path, monkeypatch):
    """Neither solver finds a schedule (as when the limit is too short): exit 4, not 3."""
    import planner.scheduling as scheduling
    from solvers.core import Accepting, Status, failure_result
    from solvers.scheduling import SchedulingProblem

    class NoSchedule(Accepting):
        name, problem_type = "none", SchedulingProblem

        def solve(self, problem, options):
            return failure_result(Status.UNKNOWN, self.name, 0.0)

    monkeypatch.setattr(scheduling, "solver_choice", lambda spec: (NoSchedule(), NoSchedule()))
    out = tmp_path / "out"
    res = runner.invoke(app, ["solve", MLP, "-o", str(out), "--time-limit", "1"])
    assert res.exit_code == EXIT_NO_SOLUTION == 4, res.output
    assert "no plan found within 1 s" in res.output and "Traceback" not in res.output
    assert not out.exists()


def test_an_unexpected_exception_is_a_bug_exit_3_with_its_traceback(tmp_path, monkeypatch):
    import planner.spec

    def broken(*args, **kwargs):
        raise KeyError("boom")

    monkeypatch.setattr(planner.spec, "load_spec", broken)
    res = runner.invoke(app, ["validate", MLP])
    assert res.exit_code == EXIT_INTERNAL == 3
    assert "Traceback" in res.output and "internal error (a bug in plan, please report it): KeyError: 'boom'" \
        in res.output


def test_messages_quoting_user_text_are_not_markup(tmp_path):
    # "[/]" would close a rich markup tag that was never opened (a MarkupError inside the
    # error handler, i.e. a traceback); "[bold]" would vanish from the message.
    spec = tmp_path / "s.yaml"
    spec.write_text("version: 1\nhardware: {devices: [{name: c, profile: generic}]}\n"
                    "models: [{name: m, generator: {kind: mlp}}]\n"
                    "constraints: {pins: [{ops: 'm/[/][bold]x', device: c}]}\n")
    res = runner.invoke(app, ["validate", str(spec)])
    assert res.exit_code == EXIT_BAD_INPUT, res.output
    assert "pattern 'm/[/][bold]x' matches no op" in res.output
