"""The console at `/ui`: Jinja2 templates, static files and the server-rendered plan picture."""

from streamjoin.api.ui.render import CSP, plan_svg, render_page, static_file

__all__ = ["CSP", "plan_svg", "render_page", "static_file"]
