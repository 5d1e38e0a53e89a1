"""Reports: report.md, trace.json (Perfetto) and the data behind the terminal tables."""
from planner.report.markdown import device_rows, format_bytes, format_gap, link_rows, render_report
from planner.report.trace import trace_document, trace_events

__all__ = ["device_rows", "format_bytes", "format_gap", "link_rows", "render_report", "trace_document",
           "trace_events"]
