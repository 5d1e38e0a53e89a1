"""Reports: report.md, trace.json (Perfetto) and the data behind the terminal tables."""
from planner.report.markdown import (device_rows, format_bytes, format_gap, format_levels, link_rows, op_count,
                                     render_report)
from planner.report.trace import trace_document, trace_events, trace_json

__all__ = ["device_rows", "format_bytes", "format_gap", "format_levels", "link_rows", "op_count", "render_report",
           "trace_document", "trace_events", "trace_json"]
