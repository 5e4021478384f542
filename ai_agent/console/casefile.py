"""The run view's "Download as a regression test": what ``ai-agent test-from-run`` writes, zipped.

One GET, which changes nothing: the run is exported as a recorded case
(`ai_agent.graph.cases.export_case`), the pytest file is written for it
(`ai_agent.graph.testfile`), and both go to the browser in one zip, the test and its
recording side by side, as the command line writes them. The test's agent has the tools the
run started with; a person who builds theirs with a factory edits ``make_agent`` (or runs
``ai-agent test-from-run THREAD --app ...``).
"""

from __future__ import annotations

import io
import zipfile
from typing import TYPE_CHECKING, Any

from starlette.responses import Response
from starlette.routing import Route

from ai_agent.errors import ConfigError, InvalidThreadIdError, UnknownThreadError
from ai_agent.graph import AgentRecipe, case_file_names, check_thread_id, regression_test_text
from ai_agent.graph.cases import case_text, export_case

if TYPE_CHECKING:
    from starlette.requests import Request

    from ai_agent.console.base import Console

__all__ = ["routes", "test_zip"]


def routes(bound: Any) -> list[Route]:
    """The download's route, its handler wrapped by the app's ``bound``."""
    return [Route("/runs/{thread}/regression-test.zip", bound(_download))]


def test_zip(case: dict[str, Any]) -> tuple[str, bytes]:
    """The zip's name and bytes: the test file and its recording, side by side."""
    test, recording = case_file_names(str(case["thread_id"]))
    source = regression_test_text(case, recording, AgentRecipe(tools=list(case["tools"])))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(test, source)
        archive.writestr(recording, case_text(case))
    return test.removesuffix(".py") + ".zip", buffer.getvalue()


async def _download(console: Console, request: Request) -> Response:
    thread = request.path_params["thread"]
    try:
        case = await export_case(console.archive.database, check_thread_id(thread))
    except (UnknownThreadError, InvalidThreadIdError) as exc:
        return console.page(request, "message.html", 404, message=str(exc))
    except ConfigError as exc:  # a state a hook filled with what JSON cannot hold
        return console.page(request, "message.html", 409, message=str(exc))
    name, data = test_zip(case)
    # The name is made of the thread id's word characters only (`case_file_names`).
    disposition = f'attachment; filename="{name}"'
    return Response(
        data, media_type="application/zip", headers={"Content-Disposition": disposition}
    )
