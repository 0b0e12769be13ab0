#!/usr/bin/env python3
"""An "asking" sub-agent built on the official A2A Python SDK's server side
(a2a-sdk 1.3.x, native A2A v1.0), for the interop tests of our A2A
*client*: an agent that wants approval before a destructive action.

Usage: a2a_sdk_v1_asking_server.py --port PORT --log FILE [--binding jsonrpc|http_json|both]

Prints `READY` on stdout once it listens on 127.0.0.1:PORT. Serves its
v1.0 card at /.well-known/agent-card.json (`supportedInterfaces`: JSON-RPC
at /a2a/jsonrpc and/or HTTP+JSON at /a2a/rest, protocolVersion "1.0").
The contract (tests/src/a2a.rs, `AskingAgent`):
- a new message with text T: the task goes to TASK_STATE_INPUT_REQUIRED; its
  status message has the text `Approve delete_file for T?` and a data part
  {approval_uuid (fresh), tool_name: "delete_file", tool_args: {path: T},
  description: "delete T"};
- a continuation with a data part {approved: true, approval_uuid} naming
  that uuid: completed with the artifact text `deleted T`, and the line
  `executed delete_file T` in the log; {approved: false}: completed with
  `kept T`, logged `rejected delete_file T`; a wrong or missing uuid: the
  task stays input-required (asking again) and nothing is logged;
- every HTTP request appends `auth <Authorization header or ->` to the log.
Tasks live in the SDK's InMemoryTaskStore, so GetTask answers their state.
"""

import argparse
import asyncio
import uuid

import uvicorn
from a2a.helpers.proto_helpers import (
    get_data_parts,
    get_text_parts,
    new_data_part,
    new_task,
    new_text_part,
)
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import (
    create_agent_card_routes,
    create_jsonrpc_routes,
    create_rest_routes,
)
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    TaskState,
)
from starlette.applications import Starlette

PATHS = {"jsonrpc": "/a2a/jsonrpc", "http_json": "/a2a/rest"}
NAMES = {"jsonrpc": "JSONRPC", "http_json": "HTTP+JSON"}


def append(log, line):
    with open(log, "a", encoding="utf-8") as file:
        file.write(line + "\n")


class LogAuth:
    """ASGI middleware: `auth <Authorization or ->` for every HTTP request."""

    def __init__(self, app, log):
        self.app = app
        self.log = log

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            auth = headers.get(b"authorization", b"-").decode("latin-1")
            append(self.log, f"auth {auth}")
        await self.app(scope, receive, send)


class AskingExecutor(AgentExecutor):
    """Asks for approval on a new task; decides on a continuation."""

    def __init__(self, log):
        self.log = log
        self.pending = {}  # task id -> (target, approval uuid)

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        # A continuation may omit the contextId; the task keeps its own.
        task = context.current_task
        context_id = task.context_id if task else context.context_id
        updater = TaskUpdater(event_queue, context.task_id, context_id)
        parts = list(context.message.parts) if context.message else []
        if task is None:
            target = "\n".join(get_text_parts(parts))
            self.pending[context.task_id] = (target, str(uuid.uuid4()))
            submitted = TaskState.TASK_STATE_SUBMITTED
            history = [context.message]
            await event_queue.enqueue_event(
                new_task(context.task_id, context_id, submitted, history=history)
            )
            await self.ask(updater)
            return
        pending = self.pending.get(context.task_id)
        decisions = [d for d in get_data_parts(parts) if isinstance(d, dict)]
        decision = decisions[0] if decisions else {}
        approved = decision.get("approved")
        if pending is None:
            return
        if decision.get("approval_uuid") != pending[1] or not isinstance(approved, bool):
            await self.ask(updater)
            return
        del self.pending[context.task_id]
        target = pending[0]
        append(self.log, f"{'executed' if approved else 'rejected'} delete_file {target}")
        answer = f"deleted {target}" if approved else f"kept {target}"
        await updater.add_artifact([new_text_part(answer)], name="answer")
        await updater.complete(updater.new_agent_message([new_text_part(answer)]))

    async def ask(self, updater: TaskUpdater) -> None:
        """The task goes (again) to input-required with the approval request."""
        target, approval = self.pending[updater.task_id]
        data = {
            "approval_uuid": approval,
            "tool_name": "delete_file",
            "tool_args": {"path": target},
            "description": f"delete {target}",
        }
        parts = [new_text_part(f"Approve delete_file for {target}?"), new_data_part(data)]
        await updater.requires_input(updater.new_agent_message(parts))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        self.pending.pop(context.task_id, None)
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


def card(port, bindings):
    base = f"http://127.0.0.1:{port}"
    return AgentCard(
        name="sdk-asking-python",
        description="Asks for approval before deleting a file (built on a2a-sdk).",
        supported_interfaces=[
            AgentInterface(url=base + PATHS[b], protocol_binding=NAMES[b], protocol_version="1.0")
            for b in bindings
        ],
        version="1.0.0",
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        default_input_modes=["text/plain", "application/json"],
        default_output_modes=["text/plain"],
        skills=[
            AgentSkill(
                id="delete_file",
                name="delete_file",
                description="Deletes a file after a human approved it.",
                tags=["approval"],
            )
        ],
    )


def app_for(port, log, bindings):
    agent_card = card(port, bindings)
    handler = DefaultRequestHandler(
        agent_executor=AskingExecutor(log),
        task_store=InMemoryTaskStore(),
        agent_card=agent_card,
    )
    routes = create_agent_card_routes(agent_card)
    if "jsonrpc" in bindings:
        routes += create_jsonrpc_routes(handler, PATHS["jsonrpc"])
    if "http_json" in bindings:
        routes += create_rest_routes(handler, path_prefix=PATHS["http_json"])
    return LogAuth(Starlette(routes=routes), log)


async def serve(port, log, bindings):
    config = uvicorn.Config(app_for(port, log, bindings), host="127.0.0.1", port=port, log_level="warning")
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            await task
            raise SystemExit("the server did not start")
        await asyncio.sleep(0.05)
    print("READY", flush=True)
    await task


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--log", required=True)
    parser.add_argument("--binding", choices=["jsonrpc", "http_json", "both"], default="both")
    args = parser.parse_args()
    bindings = ["jsonrpc", "http_json"] if args.binding == "both" else [args.binding]
    open(args.log, "a", encoding="utf-8").close()
    asyncio.run(serve(args.port, args.log, bindings))


if __name__ == "__main__":
    main()
