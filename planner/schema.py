"""One JSON Schema for both kinds of spec ``plan`` reads: model specs and fleet specs (``plan schema``).

Each kind's schema is generated from the models its validator uses
(:func:`planner.spec.spec_json_schema`, :func:`planner.fleet.spec.fleet_json_schema`); this
one accepts a document that matches exactly one of them (a model spec has ``hardware:`` and
``models:``, a fleet spec ``fleet:``, and neither allows the other's keys).
"""

from __future__ import annotations

import json
from typing import Any

from planner.fleet.spec import fleet_json_schema
from planner.spec.schema import SCHEMA_ID, spec_json_schema

__all__ = ["plan_json_schema"]


def _as_definition(schema: dict[str, Any], prefix: str, taken: dict[str, Any]) -> tuple[dict[str, Any], dict]:
    """The schema without its ``$defs``, and those ``$defs`` renamed where another kind uses the name."""
    schema = dict(schema)
    defs = schema.pop("$defs", {})
    renames = {name: f"{prefix}{name}" for name, body in defs.items() if name in taken and taken[name] != body}
    text = json.dumps(schema), json.dumps(defs)
    for old, new in renames.items():
        text = tuple(t.replace(f'"#/$defs/{old}"', f'"#/$defs/{new}"') for t in text)
    body, new_defs = json.loads(text[0]), json.loads(text[1])
    return body, {renames.get(name, name): value for name, value in new_defs.items()}


def plan_json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of every spec: a model spec or a fleet spec.

    Examples
    --------
    >>> schema = plan_json_schema()
    >>> [sorted(form["required"]) for form in schema["oneOf"]]
    [['hardware', 'models'], ['fleet']]
    >>> refs = {r.rsplit("/", 1)[1] for r in json.dumps(schema).split('"$ref": "')[1:] for r in [r.split('"')[0]]}
    >>> sorted(refs - set(schema["$defs"]))  # every reference resolves
    []
    """
    model = spec_json_schema()
    model.pop("$schema", None)
    model.pop("$id", None)
    model_body, defs = _as_definition(model, "Model", {})
    fleet_body, fleet_defs = _as_definition(fleet_json_schema(), "Fleet", defs)
    defs.update(fleet_defs)
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID,
            "title": "plan spec (a model spec or a fleet spec)", "oneOf": [model_body, fleet_body],
            "$defs": dict(sorted(defs.items()))}
