#!/usr/bin/env python3
"""Interop check of this agent's A2A server with the official A2A Python SDK.

Usage: a2a_sdk_client.py BASE_URL

BASE_URL is a running agent with `testdata/agent-resources.yaml` (the
resource manager on the offline scripted model). The SDK (a2a-sdk 1.3.0,
pinned in scripts/test.sh) resolves the card with its A2ACardResolver,
keeps only the card's v0.3.0 interface (the card also lists v1.0 ones,
which tests/interop/a2a_sdk_v1_client.py drives) and talks to `/a2a`
through its v0.3 JSON-RPC transport, which validates every answer against
its v0.3 models.

Checked: the card on both paths; message/send completed with an artifact;
tasks/get with historyLength; a destructive request as input-required with
the approval data part; text while waiting leaves it waiting; continuation
with "approved" (the tool ran) and with a data part {"approved": false}
(it did not); tasks/cancel of a waiting task and -32002 for a canceled one;
-32001 for an unknown task; message/stream and tasks/resubscribe events.

Exits 0 when everything matches, else 1 with a message naming the mismatch.
"""

import asyncio
import sys
import uuid

import httpx
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.helpers.proto_helpers import (
    get_data_parts,
    get_text_parts,
    new_data_part,
    new_text_part,
)
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Role,
    SendMessageRequest,
    SubscribeToTaskRequest,
    TaskNotCancelableError,
    TaskNotFoundError,
    TaskState,
)


class Mismatch(Exception):
    """The agent answered something the test did not expect."""


def check(condition, what):
    if not condition:
        raise Mismatch(what)


def state_name(state):
    return TaskState.Name(state)


def user_message(parts, task=None):
    return Message(
        role=Role.ROLE_USER,
        parts=parts,
        message_id=str(uuid.uuid4()),
        task_id=task.id if task else None,
        context_id=task.context_id if task else None,
    )


async def send(client, parts, task=None):
    """message/send through the SDK client; returns the task it answered."""
    request = SendMessageRequest(message=user_message(parts, task))
    answers = [event async for event in client.send_message(request)]
    check(len(answers) == 1, f"one answer expected, got {len(answers)}")
    check(answers[0].HasField("task"), f"a task expected, got {answers[0]}")
    return answers[0].task


def expect_state(task, state, what):
    got = task.status.state
    check(
        got == state,
        f"{what}: state {state_name(got)} expected {state_name(state)}; "
        f"status message: {get_text_parts(task.status.message.parts)}",
    )


def artifact_text(task):
    return "\n".join(t for a in task.artifacts for t in get_text_parts(a.parts))


def approval_data(task):
    expect_state(task, TaskState.TASK_STATE_INPUT_REQUIRED, "destructive request")
    data = get_data_parts(task.status.message.parts)
    check(data, f"no approval data part in {task.status.message}")
    for key in ("approval_uuid", "tool_name", "tool_args", "description"):
        check(key in data[0], f"approval data part lacks {key}: {data[0]}")
    return data[0]


async def check_card(http, base):
    resolver = A2ACardResolver(http, base)
    card = await resolver.get_agent_card()
    legacy = await resolver.get_agent_card(relative_card_path="/.well-known/agent.json")
    check(card == legacy, "the two card paths serve different cards")
    check(card.name == "resource-manager", f"card name {card.name!r}")
    check(card.capabilities.streaming, "card does not announce streaming")
    check(card.capabilities.push_notifications, "card does not announce push notifications")
    v03 = [i for i in card.supported_interfaces if i.protocol_version == "0.3.0"]
    check(len(v03) == 1, f"one v0.3.0 interface expected: {card.supported_interfaces}")
    interface = v03[0]
    check(interface.url == f"{base}/a2a", f"card url {interface.url!r}")
    check(interface.protocol_binding == "JSONRPC", f"binding {interface.protocol_binding!r}")
    # Speak v0.3 only: the client picks the v1.0 interface when listed.
    del card.supported_interfaces[:]
    card.supported_interfaces.append(interface)
    skills = {skill.id: skill for skill in card.skills}
    check("resources_list" in skills, f"no resources_list skill: {sorted(skills)}")
    check("destructive" in skills["resources_add"].tags, "resources_add not tagged destructive")
    return card


async def check_send_and_approvals(client):
    listed = await send(client, [new_text_part("list all resources")])
    expect_state(listed, TaskState.TASK_STATE_COMPLETED, "list request")
    check("resources" in artifact_text(listed), f"artifact: {artifact_text(listed)!r}")
    got = await client.get_task(GetTaskRequest(id=listed.id, history_length=1))
    check(got.id == listed.id, "tasks/get answered another task")
    expect_state(got, TaskState.TASK_STATE_COMPLETED, "tasks/get")
    check(len(got.history) == 1, f"historyLength 1 gave {len(got.history)} messages")
    check(got.history[0].role == Role.ROLE_AGENT, "the last history message is not the answer")

    task = await send(client, [new_text_part("add resource sdk-item with value 7")])
    data = approval_data(task)
    check(data["tool_name"] == "resources_add", f"tool {data['tool_name']!r}")
    check(data["tool_args"].get("name") == "sdk-item", f"args {data['tool_args']}")
    still = await send(client, [new_text_part("what happens now?")], task)
    approval_data(still)
    check(still.id == task.id, "the continuation answered another task")
    done = await send(client, [new_text_part("approved")], task)
    expect_state(done, TaskState.TASK_STATE_COMPLETED, "approved continuation")
    check("Created the resource" in artifact_text(done), f"answer {artifact_text(done)!r}")
    check(done.context_id == task.context_id, "the context id changed")

    task = await send(client, [new_text_part("add resource sdk-refused with value 8")])
    approval_data(task)
    refusal = new_data_part({"approved": False, "reason": "interop test"})
    done = await send(client, [refusal], task)
    expect_state(done, TaskState.TASK_STATE_COMPLETED, "rejected continuation")
    check("not run" in artifact_text(done), f"answer {artifact_text(done)!r}")

    listed = artifact_text(await send(client, [new_text_part("list all resources")]))
    check("sdk-item" in listed, f"approved resource missing: {listed}")
    check("sdk-refused" not in listed, f"rejected resource exists: {listed}")


async def check_cancel_and_errors(client):
    task = await send(client, [new_text_part("add resource sdk-canceled with value 9")])
    approval_data(task)
    canceled = await client.cancel_task(CancelTaskRequest(id=task.id))
    expect_state(canceled, TaskState.TASK_STATE_CANCELED, "tasks/cancel")
    try:
        await client.cancel_task(CancelTaskRequest(id=task.id))
        raise Mismatch("canceling a canceled task did not fail")
    except TaskNotCancelableError:
        pass
    try:
        await client.get_task(GetTaskRequest(id=str(uuid.uuid4())))
        raise Mismatch("tasks/get of an unknown task did not fail")
    except TaskNotFoundError:
        pass


async def check_streaming(client):
    request = SendMessageRequest(message=user_message([new_text_part("list all resources")]))
    events = [event async for event in client.send_message(request)]
    kinds = [event.WhichOneof("payload") for event in events]
    check(kinds[0] == "task", f"the stream does not start with the task: {kinds}")
    check("status_update" in kinds and "artifact_update" in kinds, f"stream events: {kinds}")
    last = events[-1]
    check(kinds[-1] == "status_update", f"the stream does not end with a status: {kinds}")
    expect_state(last.status_update, TaskState.TASK_STATE_COMPLETED, "stream end")
    task_id = events[0].task.id
    resubscribed = [e async for e in client.subscribe(SubscribeToTaskRequest(id=task_id))]
    kinds = [event.WhichOneof("payload") for event in resubscribed]
    check(kinds == ["task", "status_update"], f"resubscribe events: {kinds}")


async def main(base):
    base = base.rstrip("/")
    async with httpx.AsyncClient(timeout=60) as http:
        card = await check_card(http, base)
        blocking = ClientFactory(ClientConfig(streaming=False, httpx_client=http)).create(card)
        await check_send_and_approvals(blocking)
        await check_cancel_and_errors(blocking)
        streaming = ClientFactory(ClientConfig(streaming=True, httpx_client=http)).create(card)
        await check_streaming(streaming)
    print("interop OK: card, message/send, tasks/get, continuations, tasks/cancel, errors, streaming")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: a2a_sdk_client.py BASE_URL")
    try:
        asyncio.run(main(sys.argv[1]))
    except Mismatch as mismatch:
        sys.exit(f"interop MISMATCH: {mismatch}")
    except Exception as error:  # an SDK error is a mismatch too
        sys.exit(f"interop FAILED: {type(error).__name__}: {error}")
