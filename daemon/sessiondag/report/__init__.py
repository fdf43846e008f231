"""Reports of a session for people (docs/report.md): one self-contained HTML file
(`sessions export --format html`, `run --report`) and the same viewer live (`sessiondag view`).

    document.py  the data document built from a session (layout.py: rows, edges, lanes;
                 bodies.py: what each row shows; diffs.py: workspace changes; redact.py: masking)
    page_types.py  the document's types (TypedDicts: rows, bodies, branches, patches)
    html.py      the HTML assembly (assets/: the viewer's CSS, JS and page body)
    bridge.py    the live bridge: a loopback HTTP server with a one-time token (follow.py: the
                 daemon subscription that keeps it current)
"""

from __future__ import annotations

from ..store.session import Session
from .bodies import Limits
from .document import build
from .html import render_html
from .redact import BadPatternError, Redactor

__all__ = ["BadPatternError", "Limits", "Redactor", "build", "export_html", "render_html"]


def export_html(session: Session, limits: Limits | None = None) -> str:
    """The report of `session` (a store Session) as one HTML page."""
    return render_html(build(session, limits))
