"""Read a spec (YAML file or dict), validate it and resolve it into a :class:`Spec`.

Every problem becomes exactly one :class:`~planner.errors.SpecError` naming the file,
the line and the spec path (``hardware.devices[1].memory[0].capacity``). The YAML is read
within the input limits by :mod:`planner.reader`; pydantic's error locations and
the resolver's paths are mapped back to lines of the same text when an error is raised.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from pydantic import ValidationError

from planner.errors import SpecError
from planner.reader import format_path, read_text_file
from planner.spec.limits import MAX_OPS, MAX_TENSORS
from planner.spec.locator import Locator, did_you_mean, validation_error
from planner.spec.models import SpecDocument
from planner.spec.resolve import resolve
from planner.spec.types import Spec

# Locator, format_path and did_you_mean are re-exported: callers of the loader report through them.
__all__ = ["load_spec", "Locator", "format_path", "did_you_mean"]

def _check_inline_sizes(locator: Locator) -> None:
    """Inline ops and tensors of all models within the limits, counted in the raw data before
    the typed models are built for them (which costs as much memory again)."""
    models = locator.data.get("models")
    totals = {"ops": 0, "tensors": 0}
    for i, model in enumerate(models if isinstance(models, list) else []):
        graph = model.get("graph") if isinstance(model, Mapping) else None
        for key, limit in (("ops", MAX_OPS), ("tensors", MAX_TENSORS)):
            entries = graph.get(key) if isinstance(graph, Mapping) else None
            totals[key] += len(entries) if isinstance(entries, list) else 0
            if totals[key] > limit:
                raise locator.error(f"the models declare {totals[key]:,} inline {key} up to here; all models "
                                    f"together may have at most {limit:,}", ("models", i, "graph", key))


def load_spec(source: str | Path | Mapping[str, Any], *, base_dir: str | Path | None = None) -> Spec:
    """Load, validate and resolve a spec.

    Parameters
    ----------
    source : str, Path or mapping
        A YAML file, or the spec as a dict (from the Python API or an importer).
    base_dir : str or Path, optional
        Where relative paths (``graph: {onnx: ...}``) are resolved: default the spec
        file's directory, or the current directory for a dict.

    Returns
    -------
    Spec
        The resolved spec (hardware in base units, the merged graph, constraints).

    Raises
    ------
    planner.errors.SpecError
        Exactly one error, naming the file, line and spec path where known.

    Examples
    --------
    >>> spec = load_spec({
    ...     "version": 1,
    ...     "hardware": {"devices": [{"name": "npu", "profile": "edge-npu", "count": 2}],
    ...                  "topology": {"kind": "all-to-all", "bandwidth": "10 GB/s", "latency": "1 us"}},
    ...     "models": [{"name": "m", "generator": {"kind": "mlp", "layers": 2, "width": 64}}],
    ... })
    >>> [(l.name, l.devices, l.latency_cycles) for l in spec.hardware.links]
    [('link_npu0_npu1', ('npu0', 'npu1'), 1000)]
    >>> load_spec({"version": 1, "hardware": {"devices": [{"name": "npu", "profile": "edge-npu",
    ...            "memory": [{"name": "m", "capacity": "16 GX", "bandwidth": "1 GB/s"}]}]}, "models": []})
    Traceback (most recent call last):
    ...
    planner.errors.SpecError: hardware.devices[0].memory[0].capacity: expected a size such as "16 GiB", got "16 GX" (unknown unit "GX"); did you mean "GB"?
    """
    if isinstance(source, Mapping):
        locator = Locator(dict(source), None, None)
        path = None
        root = Path(base_dir) if base_dir is not None else Path.cwd()
    elif isinstance(source, (str, Path)):
        path = Path(source)
        locator = Locator.from_yaml(read_text_file(path), str(path))
        root = Path(base_dir) if base_dir is not None else path.parent
    else:
        raise SpecError(f"expected a spec file path or a mapping, got {type(source).__name__}")
    if locator.data is None:
        raise locator.error("the spec is empty")
    if not isinstance(locator.data, Mapping):
        raise locator.error(f"the spec must be a mapping of keys (version, hardware, models...), "
                            f"got a {type(locator.data).__name__}")
    _check_inline_sizes(locator)
    try:
        document = SpecDocument.model_validate(locator.data)
    except ValidationError as exc:
        raise validation_error(exc, locator) from None
    # The resolver reports errors by path and finds lines in the text: the raw data (as large
    # as the document) is not needed any more; let it go before the graph is built.
    locator.data = None
    return resolve(document, locator, source=path, base_dir=root)
