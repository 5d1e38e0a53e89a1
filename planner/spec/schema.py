"""The JSON Schema of the spec, generated from the typed models (``plan schema``)."""

from __future__ import annotations

from typing import Any

from planner.spec.models import SpecDocument

__all__ = ["SCHEMA_ID", "spec_json_schema"]

SCHEMA_ID = "https://plan.example/schema/spec-v1.json"


def spec_json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of spec version 1.

    Point an editor's YAML plugin at it (e.g. ``# yaml-language-server: $schema=spec.json``)
    for completion, enums, descriptions and examples. The schema checks form (keys, types,
    unit strings); references between names are checked by :func:`planner.spec.load_spec`.

    Examples
    --------
    >>> schema = spec_json_schema()
    >>> schema["$schema"], sorted(schema["required"])
    ('https://json-schema.org/draft/2020-12/schema', ['hardware', 'models'])
    >>> schema["properties"]["objective"]["anyOf"][0]["enum"]
    ['latency', 'throughput', 'max-load', 'max_load']
    >>> sorted(schema["properties"]["objective"]["anyOf"][1]["properties"])
    ['contiguous', 'cpu', 'kind']
    """
    schema = SpecDocument.model_json_schema(mode="validation")
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID, **schema}
