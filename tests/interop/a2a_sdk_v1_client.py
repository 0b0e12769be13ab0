#!/usr/bin/env python3
"""Interop check of this agent's A2A v1.0 server with the official A2A
Python SDK in its native v1.0 mode.

Usage: a2a_sdk_v1_client.py BASE_URL API_KEY HOOK_URL

BASE_URL is a running agent with `testdata/agent-resources.yaml` (the
resource manager on the offline scripted model) and an `auth.api_keys`
entry whose key is API_KEY (sent as X-API-Key); HOOK_URL takes the push
notifications of the config the script registers. The SDK (a2a-sdk 1.3.0)
resolves the card, picks the v1.0 interfaces from `supportedInterfaces`
and talks through its native v1.0 transports, once over JSON-RPC (`/a2a`)
and once over HTTP+JSON (`/a2a/v1`); every answer is parsed into the
SDK's v1.0 protobuf types.

Checked on each binding: SendMessage completed with an artifact; GetTask
with historyLength; a destructive request as TASK_STATE_INPUT_REQUIRED
with the approval data part; text while waiting leaves it waiting; a
continuation with a data part {"approved": true} (the tool ran, once) and
{"approved": false} (it did not); ListTasks pages; CancelTask and
TaskNotCancelableError; TaskNotFoundError; SendStreamingMessage;
SubscribeToTask to a waiting task (its events) and to a completed one
(UnsupportedOperationError); the push config methods (create, get, list,
delete by id; a config not there is TaskNotFoundError). Then version negotiation: the same SDK restricted
to the card's v0.3.0 interface still works (its compat transport), and an
unsupported A2A-Version gets VersionNotSupportedError on both bindings.

Prints the ids of the tasks it made (one line `TASKS <id> <id> ...`) so
the Rust test can try them as another principal. Exits 0 when everything
matches, else 1 with a message naming the mismatch.
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
    DeleteTaskPushNotificationConfigRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTasksRequest,
    Message,
    Role,
    SendMessageRequest,
    SubscribeToTaskRequest,
    TaskNotCancelableError,
    TaskNotFoundError,
    TaskPushNotificationConfig,
    TaskState,
)
from a2a.utils.errors import UnsupportedOperationError, VersionNotSupportedError

JSONRPC = "JSONRPC"
HTTP_JSON = "HTTP+JSON"
TASKS = []


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
    """SendMessage through the SDK client; returns the task it answered."""
    request = SendMessageRequest(message=user_message(parts, task))
    answers = [event async for event in client.send_message(request)]
    check(len(answers) == 1, f"one answer expected, got {len(answers)}")
    check(answers[0].HasField("task"), f"a task expected, got {answers[0]}")
    TASKS.append(answers[0].task.id)
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
    card = await A2ACardResolver(http, base).get_agent_card()
    found = {
        (i.protocol_binding, i.protocol_version): i.url for i in card.supported_interfaces
    }
    expected = {
        (JSONRPC, "1.0"): f"{base}/a2a",
        (HTTP_JSON, "1.0"): f"{base}/a2a/v1",
        (JSONRPC, "0.3.0"): f"{base}/a2a",
    }
    check(found == expected, f"supportedInterfaces {found}")
    check(card.capabilities.streaming, "card does not announce streaming")
    return card


def client_for(card, http, binding, streaming=False):
    config = ClientConfig(
        streaming=streaming, httpx_client=http, supported_protocol_bindings=[binding]
    )
    client = ClientFactory(config).create(card)
    native = {JSONRPC: "JsonRpcTransport", HTTP_JSON: "RestTransport"}[binding]
    got = type(client._transport).__name__
    check(got == native, f"{binding}: the SDK chose {got}, not its native v1.0 {native}")
    return client


async def check_send_and_approvals(client, name):
    listed = await send(client, [new_text_part("list all resources")])
    expect_state(listed, TaskState.TASK_STATE_COMPLETED, "list request")
    check("resources" in artifact_text(listed), f"artifact: {artifact_text(listed)!r}")
    got = await client.get_task(GetTaskRequest(id=listed.id, history_length=1))
    check(got.id == listed.id, "GetTask answered another task")
    expect_state(got, TaskState.TASK_STATE_COMPLETED, "GetTask")
    check(len(got.history) == 1, f"historyLength 1 gave {len(got.history)} messages")
    check(got.history[0].role == Role.ROLE_AGENT, "the last history message is not the answer")

    task = await send(client, [new_text_part(f"add resource {name} with value 7")])
    data = approval_data(task)
    check(data["tool_args"].get("name") == name, f"args {data['tool_args']}")
    still = await send(client, [new_text_part("what happens now?")], task)
    approval_data(still)
    check(still.id == task.id, "the continuation answered another task")
    decision = new_data_part({"approved": True, "approval_uuid": data["approval_uuid"]})
    done = await send(client, [decision], task)
    expect_state(done, TaskState.TASK_STATE_COMPLETED, "approved continuation")
    check("Created the resource" in artifact_text(done), f"answer {artifact_text(done)!r}")
    check(done.context_id == task.context_id, "the context id changed")

    refused = f"{name}-refused"
    task = await send(client, [new_text_part(f"add resource {refused} with value 8")])
    approval_data(task)
    done = await send(client, [new_data_part({"approved": False, "reason": "v1 test"})], task)
    expect_state(done, TaskState.TASK_STATE_COMPLETED, "rejected continuation")
    check("not run" in artifact_text(done), f"answer {artifact_text(done)!r}")

    listed = artifact_text(await send(client, [new_text_part("list all resources")]))
    check(listed.count(f"{name}\"") == 1, f"{name} not created exactly once: {listed}")
    check(refused not in listed, f"rejected resource exists: {listed}")


async def check_list(client):
    first = await client.list_tasks(ListTasksRequest(page_size=2))
    check(len(first.tasks) == 2, f"page of 2 expected, got {len(first.tasks)}")
    check(first.next_page_token, "no nextPageToken on a first page")
    check(first.total_size >= 4, f"totalSize {first.total_size}")
    second = await client.list_tasks(
        ListTasksRequest(page_size=2, page_token=first.next_page_token)
    )
    ids = [t.id for t in first.tasks] + [t.id for t in second.tasks]
    check(len(set(ids)) == len(ids), f"pages overlap: {ids}")
    check(all(i in TASKS for i in ids), f"listed tasks this client did not make: {ids}")


async def check_cancel_and_errors(client, name):
    task = await send(client, [new_text_part(f"add resource {name}-canceled with value 9")])
    approval_data(task)
    canceled = await client.cancel_task(CancelTaskRequest(id=task.id))
    expect_state(canceled, TaskState.TASK_STATE_CANCELED, "CancelTask")
    try:
        await client.cancel_task(CancelTaskRequest(id=task.id))
        raise Mismatch("canceling a canceled task did not fail")
    except TaskNotCancelableError:
        pass
    try:
        await client.get_task(GetTaskRequest(id=str(uuid.uuid4())))
        raise Mismatch("GetTask of an unknown task did not fail")
    except TaskNotFoundError:
        pass


async def check_streaming(client, name):
    request = SendMessageRequest(message=user_message([new_text_part("list all resources")]))
    events = [event async for event in client.send_message(request)]
    kinds = [event.WhichOneof("payload") for event in events]
    check(kinds[0] == "task", f"the stream does not start with the task: {kinds}")
    check("status_update" in kinds and "artifact_update" in kinds, f"stream events: {kinds}")
    check(kinds[-1] == "status_update", f"the stream does not end with a status: {kinds}")
    expect_state(events[-1].status_update, TaskState.TASK_STATE_COMPLETED, "stream end")
    task_id = events[0].task.id
    TASKS.append(task_id)
    # A finished task has nothing more to stream: UnsupportedOperationError
    # naming the task and its state (the specification, both SDKs' servers).
    try:
        _ = [e async for e in client.subscribe(SubscribeToTaskRequest(id=task_id))]
        raise Mismatch("SubscribeToTask on a completed task did not fail")
    except UnsupportedOperationError as error:
        text = str(error)
        check(task_id in text and "TASK_STATE_COMPLETED" in text, f"refusal: {text!r}")
    # A waiting task: its snapshot and its current status.
    request = SendMessageRequest(
        message=user_message([new_text_part(f"add resource {name}-sub with value 4")])
    )
    events = [event async for event in client.send_message(request)]
    task_id = events[0].task.id
    TASKS.append(task_id)
    subscribed = [e async for e in client.subscribe(SubscribeToTaskRequest(id=task_id))]
    kinds = [event.WhichOneof("payload") for event in subscribed]
    check(kinds == ["task", "status_update"], f"SubscribeToTask events: {kinds}")
    expect_state(subscribed[-1].status_update, TaskState.TASK_STATE_INPUT_REQUIRED, "subscribed")
    await client.cancel_task(CancelTaskRequest(id=task_id))


async def check_push_configs(client, url):
    """Create, get, list and delete a push config by its id."""
    task_id = TASKS[0]
    config = TaskPushNotificationConfig(task_id=task_id, id="v1-hook", url=url, token="tok")
    made = await client.create_task_push_notification_config(config)
    check((made.id, made.task_id, made.url) == ("v1-hook", task_id, url), f"created {made}")
    named = GetTaskPushNotificationConfigRequest(task_id=task_id, id="v1-hook")
    got = await client.get_task_push_notification_config(named)
    check((got.id, got.url) == ("v1-hook", url), f"got {got}")
    listing = ListTaskPushNotificationConfigsRequest(task_id=task_id)
    listed = await client.list_task_push_notification_configs(listing)
    check([c.id for c in listed.configs] == ["v1-hook"], f"listed {listed}")
    await client.delete_task_push_notification_config(
        DeleteTaskPushNotificationConfigRequest(task_id=task_id, id="v1-hook")
    )
    listed = await client.list_task_push_notification_configs(listing)
    check(not listed.configs, f"listed after delete {listed}")
    # A config the task does not have: TaskNotFoundError naming it (as both
    # SDKs' servers answer).
    gone = [
        (client.get_task_push_notification_config, GetTaskPushNotificationConfigRequest),
        (client.delete_task_push_notification_config, DeleteTaskPushNotificationConfigRequest),
    ]
    for call, request in gone:
        try:
            await call(request(task_id=task_id, id="v1-hook"))
            raise Mismatch(f"{call.__name__} of a deleted config did not fail")
        except TaskNotFoundError as error:
            check("v1-hook" in str(error), f"{call.__name__}: {error}")


async def check_binding(card, http, binding, name, hook):
    client = client_for(card, http, binding)
    await check_send_and_approvals(client, name)
    await check_list(client)
    await check_cancel_and_errors(client, name)
    await check_push_configs(client, hook)
    await check_streaming(client_for(card, http, binding, streaming=True), name)


async def check_versions(card, base, key):
    """A v0.3 client still works; an unsupported A2A-Version is refused."""
    async with httpx.AsyncClient(timeout=60, headers={"X-API-Key": key}) as http:
        v03 = type(card)()
        v03.CopyFrom(card)
        keep = [i for i in v03.supported_interfaces if i.protocol_version == "0.3.0"]
        del v03.supported_interfaces[:]
        v03.supported_interfaces.extend(keep)
        client = ClientFactory(ClientConfig(streaming=False, httpx_client=http)).create(v03)
        got = type(client._transport).__name__
        check(got == "CompatJsonRpcTransport", f"v0.3 card gave {got}")
        listed = await send(client, [new_text_part("list all resources")])
        expect_state(listed, TaskState.TASK_STATE_COMPLETED, "v0.3 client")
    headers = {"X-API-Key": key, "A2A-Version": "9.9"}
    async with httpx.AsyncClient(timeout=60, headers=headers) as http:
        for binding in (JSONRPC, HTTP_JSON):
            client = client_for(card, http, binding)
            try:
                await client.get_task(GetTaskRequest(id=TASKS[0]))
                raise Mismatch(f"{binding}: A2A-Version 9.9 was served")
            except VersionNotSupportedError:
                pass


async def main(base, key, hook):
    base = base.rstrip("/")
    async with httpx.AsyncClient(timeout=60, headers={"X-API-Key": key}) as http:
        card = await check_card(http, base)
        await check_binding(card, http, JSONRPC, "v1rpc", hook)
        await check_binding(card, http, HTTP_JSON, "v1rest", hook)
    await check_versions(card, base, key)
    print("TASKS " + " ".join(TASKS))
    print("interop v1 OK: card, JSON-RPC and HTTP+JSON send, get, list, approvals, cancel, "
          "errors, streaming, subscribe, version negotiation")


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit("usage: a2a_sdk_v1_client.py BASE_URL API_KEY HOOK_URL")
    try:
        asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3]))
    except Mismatch as mismatch:
        sys.exit(f"interop MISMATCH: {mismatch}")
    except Exception as error:  # an SDK error is a mismatch too
        sys.exit(f"interop FAILED: {type(error).__name__}: {error}")
