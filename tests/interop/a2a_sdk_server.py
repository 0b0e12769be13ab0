#!/usr/bin/env python3
"""A sub-agent built with the official A2A Python SDK (a2a-sdk 0.3.x, the
v0.3 protocol this project speaks), for the interop test of our A2A
*client* (tests/tests/a2a_interop.rs).

Usage: a2a_sdk_server.py PORT

It answers every message with a task that completes with an artifact
"sdk-echo: <text> | auth=<Authorization header> | sid=<X-Session-ID>", so
the test can check that the text, the bearer token and the session id
reached an SDK server through our client.
"""

import sys

import uvicorn
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.apps import A2AStarletteApplication
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentSkill, Part, TextPart
from starlette.middleware.base import BaseHTTPMiddleware

SEEN = {"auth": "", "sid": ""}


class RecordHeaders(BaseHTTPMiddleware):
    async def dispatch(self, request, call_next):
        if request.method == "POST":
            SEEN["auth"] = request.headers.get("authorization", "")
            SEEN["sid"] = request.headers.get("x-session-id", "")
        return await call_next(request)


class EchoExecutor(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        if not context.current_task:
            await updater.submit()
        await updater.start_work()
        text = f"sdk-echo: {context.get_user_input()} | auth={SEEN['auth']} | sid={SEEN['sid']}"
        await updater.add_artifact([Part(root=TextPart(text=text))], name="answer")
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise RuntimeError("cancel is not supported")


def main() -> None:
    port = int(sys.argv[1])
    card = AgentCard(
        name="sdk-echo",
        description="An echo agent built with the official A2A SDK.",
        url=f"http://127.0.0.1:{port}/",
        version="1.0.0",
        protocol_version="0.3.0",
        capabilities=AgentCapabilities(streaming=False),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="echo", name="echo", description="Echoes the message.", tags=["echo"])],
    )
    handler = DefaultRequestHandler(agent_executor=EchoExecutor(), task_store=InMemoryTaskStore())
    app = A2AStarletteApplication(agent_card=card, http_handler=handler).build()
    app.add_middleware(RecordHeaders)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main()
