"""``ai-agent ui``: a local console where people see runs and answer gates in a browser.

Server-rendered pages (Jinja2, autoescaped; a little plain JavaScript, shipped in the package)
over the run archive, served by uvicorn on loopback with a random token in the printed URL. The
parts, one job each:

- `auth`: the token, the session cookie, the CSRF token, the hosts answered to;
- `guard`: the middleware every request passes (token, Host, Origin; security headers);
- `views`: what the pages show, read through `ai_agent.graph.RunArchive`;
- `answers`: an inbox answer made into a plan and queued (``Agent.submit_plan``);
- `render` and ``templates/``: the pages, with every stored text shown inert;
- `live`: server-sent events naming the runs that changed;
- `app`: the routes; `serve`: uvicorn and the console's worker.

It needs the ``console`` extra (``pip install 'ai-agent[console]'``): Starlette, uvicorn,
Jinja2 and python-multipart. Nothing else in ai_agent imports this package; the command line
loads it only for ``ai-agent ui``.
"""

from __future__ import annotations

from ai_agent.console.app import create_app
from ai_agent.console.auth import MIN_TOKEN_CHARS, Access, is_loopback, new_token
from ai_agent.console.serve import ConsoleServer

__all__ = ["MIN_TOKEN_CHARS", "Access", "ConsoleServer", "create_app", "is_loopback", "new_token"]
