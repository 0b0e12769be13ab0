#!/usr/bin/env node
// Interop check of this agent's A2A v1.0 server with the official A2A
// JavaScript SDK (@a2a-js/sdk 1.3.x) in its native v1.0 mode.
//
// Usage: node a2a_v1_client.mjs BASE_URL API_KEY HOOK_URL jsonrpc|http_json
//
// BASE_URL is a running agent with `testdata/agent-resources.yaml` (the
// resource manager on the offline scripted model) and an `auth.api_keys`
// entry whose key is API_KEY (sent as X-API-Key by the fetch the SDK is
// given); HOOK_URL is the push URL of the config the script registers.
// The SDK resolves the card, picks the v1.0 interface of the binding asked
// for from `supportedInterfaces`, and talks through its native v1.0
// transport (JsonRpcTransport or RestTransport); every answer is parsed
// into the SDK's v1.0 types.
//
// The script reports, it does not judge: each step prints one JSON line
// `{"step": NAME, ...what the SDK got}` and the Rust test
// (tests/tests/a2a_v1_js.rs) asserts on them. A call the SDK could not
// complete ends the run with `{"step": "failed", "error": "..."}` and
// exit status 1 (an expected error is reported by its SDK class name).
// The steps: card, client, send, get, ask (a destructive request),
// chatter (text while waiting), approve, reject, resources (what exists
// afterwards), list (two pages), cancel (and its errors), push and
// push_deleted (config create, get, list, delete), stream, stream_ask,
// subscribe_waiting, stream_approve, subscribe_done, version (an
// unsupported A2A-Version), v03 (the SDK's v0.3 compat transport,
// JSON-RPC only), tasks, done.

import {
  ListTasksRequest,
  Message,
  SendMessageRequest,
  TaskState,
  roleToJSON,
  taskStateToJSON,
} from '@a2a-js/sdk';
import {
  ClientFactory,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
  RestTransportFactory,
} from '@a2a-js/sdk/client';
import { randomUUID } from 'node:crypto';

const BINDINGS = { jsonrpc: 'JSONRPC', http_json: 'HTTP+JSON' };
const TASKS = [];

/** One line of the report. */
function report(step, fields) {
  console.log(JSON.stringify({ step, ...fields }));
}

/** A fetch that sends the API key (and `version` as A2A-Version when
 * given) and remembers the A2A-Version sent and answered last. */
function keyedFetch(key, seen, version) {
  return async (input, init = {}) => {
    const headers = new Headers(init.headers);
    headers.set('X-API-Key', key);
    if (version) headers.set('A2A-Version', version);
    seen.sent = headers.get('A2A-Version');
    const response = await fetch(input, { ...init, headers });
    seen.answered = response.headers.get('A2A-Version');
    return response;
  };
}

/** A client factory knowing both v1.0 transports (over `fetchImpl`),
 * preferring `binding`. */
function factoryFor(binding, fetchImpl, legacyCompat) {
  const options = legacyCompat ? { fetchImpl, legacyCompat: { enabled: true } } : { fetchImpl };
  return new ClientFactory({
    transports: [new JsonRpcTransportFactory(options), new RestTransportFactory(options)],
    preferredTransports: [binding],
  });
}

/** A SendMessageRequest with a user message of `parts` (JSON form). */
function request(parts, task) {
  const message = { messageId: randomUUID(), role: 'ROLE_USER', parts };
  if (task) {
    message.taskId = task.id;
    message.contextId = task.contextId;
  }
  return SendMessageRequest.fromJSON({ message });
}

const text = (value) => ({ text: value });
const data = (value) => ({ data: value });

/** The texts and the data of some parts. */
function partsOf(parts = []) {
  const texts = parts.filter((p) => p.content?.$case === 'text').map((p) => p.content.value);
  const datas = parts.filter((p) => p.content?.$case === 'data').map((p) => p.content.value);
  return { texts, datas };
}

/** What a test wants to know of a task. */
function taskFacts(task) {
  const status = partsOf(task.status?.message?.parts);
  const artifact = (task.artifacts ?? []).flatMap((a) => partsOf(a.parts).texts).join('\n');
  return {
    id: task.id,
    contextId: task.contextId,
    state: taskStateToJSON(task.status?.state ?? TaskState.TASK_STATE_UNSPECIFIED),
    statusText: status.texts.join('\n'),
    statusData: status.datas,
    artifact,
  };
}

/** SendMessage; the answered task's facts (a message answer is an error). */
async function send(client, parts, task) {
  const answer = await client.sendMessage(request(parts, task));
  if (!('status' in answer)) {
    throw new Error(`a task expected, got a message: ${JSON.stringify(Message.toJSON(answer))}`);
  }
  TASKS.push(answer.id);
  return taskFacts(answer);
}

/** The kinds (and the states of status events) of a stream. */
async function drain(stream) {
  const kinds = [];
  const states = [];
  let first;
  let last;
  for await (const event of stream) {
    const payload = event.payload;
    kinds.push(payload?.$case ?? 'none');
    if (payload?.$case === 'task') first ??= taskFacts(payload.value);
    if (payload?.$case === 'statusUpdate') {
      const status = payload.value.status;
      states.push(taskStateToJSON(status?.state ?? TaskState.TASK_STATE_UNSPECIFIED));
      last = { ...partsOf(status?.message?.parts), taskId: payload.value.taskId };
    }
  }
  return { kinds, states, task: first, last };
}

/** The class name of an SDK object (its bundle prefixes some with `_`). */
const className = (object) => object.constructor.name.replace(/^_+/, '');

/** The SDK's error class name of a rejected call, or `resolved`. */
async function errorOf(call) {
  try {
    await call();
    return 'resolved';
  } catch (error) {
    return error?.name ?? String(error);
  }
}

// The class name and message of the error a call fails with (`resolved`
// and no message when it does not fail), and `typed`: the SDK's A2A error
// class, which its JSON-RPC transport hands over as the `cause` of a plain
// Error when the error came as an SSE event of a stream.
async function failureOf(call) {
  try {
    await call();
    return { error: 'resolved', typed: 'resolved', message: '' };
  } catch (error) {
    const name = error?.name ?? String(error);
    const typed = error?.cause?.name ?? name;
    return { error: name, typed, message: error?.message ?? '' };
  }
}

async function cardAndClient(base, binding, fetchImpl, seen) {
  const card = await new DefaultAgentCardResolver({ fetchImpl }).resolve(base);
  report('card', {
    interfaces: card.supportedInterfaces.map((i) => [i.protocolBinding, i.protocolVersion, i.url]),
    streaming: card.capabilities?.streaming ?? false,
    pushNotifications: card.capabilities?.pushNotifications ?? false,
    versionSent: seen.sent,
  });
  const client = await factoryFor(binding, fetchImpl).createFromAgentCard(card);
  report('client', {
    transport: className(client.transport),
    endpoint: client.transport.endpoint,
    protocolVersion: client.protocolVersion,
  });
  return { card, client };
}

async function approvals(client, name, seen) {
  const listed = await send(client, [text('list all resources')]);
  report('send', { ...listed, versionSent: seen.sent, versionAnswered: seen.answered });
  const got = await client.getTask({ id: listed.id, historyLength: 1 });
  const history = (got.history ?? []).map((m) => roleToJSON(m.role));
  report('get', { ...taskFacts(got), history });

  const task = await send(client, [text(`add resource ${name} with value 7`)]);
  report('ask', task);
  const uuid = task.statusData[0]?.approval_uuid;
  const still = await send(client, [text('what happens now?')], task);
  report('chatter', still);
  const done = await send(client, [data({ approved: true, approval_uuid: uuid })], task);
  report('approve', done);

  const refused = await send(client, [text(`add resource ${name}-refused with value 8`)]);
  const kept = await send(client, [data({ approved: false, reason: 'js v1 test' })], refused);
  report('reject', { ...kept, asked: refused.state });

  const after = (await send(client, [text('list all resources')])).artifact;
  const count = (needle) => after.split(needle).length - 1;
  report('resources', { created: count(`"${name}"`), refused: count(`"${name}-refused"`) });
}

async function listing(client) {
  // fromJSON fills what the request leaves out (the status filter: none).
  const first = await client.listTasks(ListTasksRequest.fromJSON({ pageSize: 2 }));
  const next = { pageSize: 2, pageToken: first.nextPageToken };
  const second = await client.listTasks(ListTasksRequest.fromJSON(next));
  const ids = [...first.tasks, ...second.tasks].map((t) => t.id);
  report('list', {
    first: first.tasks.length,
    second: second.tasks.length,
    nextPageToken: first.nextPageToken !== '',
    totalSize: first.totalSize,
    distinct: new Set(ids).size,
    foreign: ids.filter((id) => !TASKS.includes(id)),
  });
}

async function cancel(client, name) {
  const task = await send(client, [text(`add resource ${name}-canceled with value 9`)]);
  const canceled = await client.cancelTask({ id: task.id });
  const again = await errorOf(() => client.cancelTask({ id: task.id }));
  const unknown = await errorOf(() => client.getTask({ id: randomUUID() }));
  report('cancel', { asked: task.state, ...taskFacts(canceled), again, unknown });
}

async function push(client, hook) {
  const taskId = TASKS[0];
  const config = { tenant: '', taskId, id: 'js-hook', url: hook, token: 'tok', authentication: undefined };
  const made = await client.createTaskPushNotificationConfig(config);
  const got = await client.getTaskPushNotificationConfig({ tenant: '', taskId, id: 'js-hook' });
  const query = { tenant: '', taskId, pageSize: 0, pageToken: '' };
  const listed = await client.listTaskPushNotificationConfig(query);
  await client.deleteTaskPushNotificationConfig({ tenant: '', taskId, id: 'js-hook' });
  const after = await client.listTaskPushNotificationConfig(query);
  const facts = (c) => ({ id: c.id, taskId: c.taskId, url: c.url, token: c.token });
  report('push', {
    created: facts(made),
    got: facts(got),
    listed: listed.configs.map((c) => c.id),
    afterDelete: after.configs.map((c) => c.id),
    expectedTask: taskId,
  });
  const gone = { tenant: '', taskId, id: 'js-hook' };
  const get = await failureOf(() => client.getTaskPushNotificationConfig(gone));
  const del = await failureOf(() => client.deleteTaskPushNotificationConfig(gone));
  report('push_deleted', { get, delete: del });
}

async function streaming(client, name) {
  const listed = await drain(client.sendMessageStream(request([text('list all resources')])));
  TASKS.push(listed.task?.id);
  report('stream', listed);
  const asked = await drain(
    client.sendMessageStream(request([text(`add resource ${name}-streamed with value 3`)]))
  );
  TASKS.push(asked.task?.id);
  report('stream_ask', asked);
  const waiting = await drain(client.resubscribeTask({ tenant: '', id: asked.task.id }));
  report('subscribe_waiting', waiting);
  const uuid = asked.last?.datas[0]?.approval_uuid;
  const decision = request([data({ approved: true, approval_uuid: uuid })], asked.task);
  const approved = await drain(client.sendMessageStream(decision));
  const final = await client.getTask({ id: asked.task.id });
  report('stream_approve', { ...approved, taskId: asked.task.id, final: taskFacts(final) });
  const finished = { tenant: '', id: listed.task.id };
  const done = await failureOf(() => drain(client.resubscribeTask(finished)));
  report('subscribe_done', { ...done, taskId: listed.task.id });
}

async function versions(card, binding, key) {
  const seen = {};
  const client = await factoryFor(binding, keyedFetch(key, seen, '9.9')).createFromAgentCard(card);
  const refused = await errorOf(() => client.getTask({ id: TASKS[0] }));
  report('version', { sent: seen.sent, answered: seen.answered, error: refused });
  if (binding !== 'JSONRPC') return;
  const legacy = { ...card };
  legacy.supportedInterfaces = card.supportedInterfaces.filter((i) => i.protocolVersion !== '1.0');
  const plain = {};
  const v03 = await factoryFor(binding, keyedFetch(key, plain), true).createFromAgentCard(legacy);
  const answer = await v03.sendMessage(request([text('list all resources')]));
  report('v03', {
    transport: className(v03.transport),
    versionSent: plain.sent,
    ...taskFacts(answer),
  });
}

async function main([base, key, hook, bindingArg]) {
  const binding = BINDINGS[bindingArg];
  if (!binding || !hook) {
    throw new Error('usage: a2a_v1_client.mjs BASE_URL API_KEY HOOK_URL jsonrpc|http_json');
  }
  base = base.replace(/\/+$/, '');
  const seen = {};
  const fetchImpl = keyedFetch(key, seen);
  const { card, client } = await cardAndClient(base, binding, fetchImpl, seen);
  const name = `js-${bindingArg.replace('_', '-')}`;
  await approvals(client, name, seen);
  await listing(client);
  await cancel(client, name);
  await push(client, hook);
  await streaming(client, name);
  await versions(card, binding, key);
  report('tasks', { ids: TASKS });
  report('done', {});
}

main(process.argv.slice(2)).catch((error) => {
  report('failed', { error: `${error?.name ?? 'Error'}: ${error?.message ?? error}` });
  process.exit(1);
});
