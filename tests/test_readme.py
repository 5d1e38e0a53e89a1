"""The README's examples must stay true."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from planner.spec import load_spec

README = (Path(__file__).resolve().parent.parent / "README.md").read_text()


def blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", README, flags=re.S)


def test_spec_reference_example_loads():
    (example,) = [b for b in blocks("yaml") if "hardware:" in b]
    spec = load_spec(yaml.safe_load(example))
    assert [d.name for d in spec.hardware.devices] == ["big0", "big1", "small0", "small1"]
    assert spec.allowed_devices and all(devs == ("big0",) for devs in spec.allowed_devices.values())
    assert spec.colocation_groups == (("gpt/layer1/attn_qkv", "gpt/layer1/attn_out"),)


def test_solver_only_example_runs(capsys):
    (snippet,) = [b for b in blocks("python") if "from solvers" in b]
    exec(compile(snippet, "README.md", "exec"), {})
    lines = capsys.readouterr().out.splitlines()
    # Two ops in a chain: 4 + 3 = 7 on one device; splitting adds a 5-cycle transfer.
    assert lines == ["heft FEASIBLE 7 None None", "cpsat OPTIMAL 7 7 0.0"]


def test_commands_named_in_readme_exist():
    from typer.main import get_command

    from planner.cli import app

    names = set(get_command(app).commands)
    for cmd in re.findall(r"^\| `plan (\w+)", README, flags=re.M):
        assert cmd in names, cmd
