"""Self-contained HTML and markdown reports of run folders (``jaxaudit report DIR``)."""

from jaxaudit.report.render import render_report

__all__ = ["render_report"]
