#!/usr/bin/env python3
"""The a2a-sdk anchor of the benchmark (scripts/bench.sh): a minimal agent
built with the official A2A Python SDK (a2a-sdk 0.3.x, the v0.3 protocol
this project speaks) that answers every `message/send` with a message
carrying the text it was sent. No model, no durability: the SDK's own
JSON-RPC, validation and HTTP stack (Starlette on uvicorn, one process).

Usage: echo_server.py PORT
"""

import sys

import uvicorn
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.apps import A2AStarletteApplication
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import AgentCapabilities, AgentCard, AgentSkill
from a2a.utils import new_agent_text_message


class EchoExecutor(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        await event_queue.enqueue_event(new_agent_text_message(context.get_user_input()))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise RuntimeError("cancel is not supported")


def main() -> None:
    port = int(sys.argv[1])
    card = AgentCard(
        name="sdk-echo",
        description="Answers every message with its text (benchmark anchor).",
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
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
