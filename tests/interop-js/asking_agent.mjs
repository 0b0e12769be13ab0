#!/usr/bin/env node
// An "asking" sub-agent built on the official A2A JavaScript SDK's server
// side (@a2a-js/sdk 1.3.x, native A2A v1.0), for the interop tests of our
// A2A *client*: an agent that wants approval before a destructive action.
//
// Usage: node asking_agent.mjs --port PORT --log FILE [--binding jsonrpc|http_json|both]
//
// Prints `READY` on stdout once it listens on 127.0.0.1:PORT. Serves its
// v1.0 card at /.well-known/agent-card.json (`supportedInterfaces`: JSON-RPC
// at /a2a/jsonrpc and/or HTTP+JSON at /a2a/rest, protocolVersion "1.0").
// The contract (tests/src/a2a.rs, `AskingAgent`):
// - a new message with text T: the task goes to TASK_STATE_INPUT_REQUIRED;
//   its status message has the text `Approve delete_file for T?` and a data
//   part {approval_uuid (fresh), tool_name: "delete_file",
//   tool_args: {path: T}, description: "delete T"};
// - a continuation with a data part {approved: true, approval_uuid} naming
//   that uuid: completed with the artifact text `deleted T`, and the line
//   `executed delete_file T` in the log; {approved: false}: completed with
//   `kept T`, logged `rejected delete_file T`; a wrong or missing uuid: the
//   task stays input-required (asking again) and nothing is logged;
// - every HTTP request appends `auth <Authorization header or ->` to the log.
// Tasks live in the SDK's InMemoryTaskStore, so GetTask answers their state.

import { appendFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import express from 'express';
import { AGENT_CARD_PATH, Role, TaskState } from '@a2a-js/sdk';
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import {
  UserBuilder,
  agentCardHandler,
  jsonRpcHandler,
  restHandler,
} from '@a2a-js/sdk/server/express';

const PATHS = { jsonrpc: '/a2a/jsonrpc', http_json: '/a2a/rest' };
const NAMES = { jsonrpc: 'JSONRPC', http_json: 'HTTP+JSON' };

/** `--port`, `--log` and `--binding` from the command line. */
function options(argv) {
  const got = { binding: 'both' };
  for (let i = 0; i < argv.length; i += 2) {
    const key = argv[i]?.replace(/^--/, '');
    if (!['port', 'log', 'binding'].includes(key) || argv[i + 1] === undefined) {
      throw new Error(`usage: asking_agent.mjs --port PORT --log FILE [--binding jsonrpc|http_json|both] (at ${argv[i]})`);
    }
    got[key] = argv[i + 1];
  }
  const bindings = got.binding === 'both' ? ['jsonrpc', 'http_json'] : [got.binding];
  if (!got.port || !got.log || bindings.some((b) => !PATHS[b])) {
    throw new Error('usage: asking_agent.mjs --port PORT --log FILE [--binding jsonrpc|http_json|both]');
  }
  return { port: Number(got.port), log: got.log, bindings };
}

const textPart = (value) => ({ content: { $case: 'text', value }, metadata: undefined, filename: '', mediaType: 'text/plain' });
const dataPart = (value) => ({ content: { $case: 'data', value }, metadata: undefined, filename: '', mediaType: 'application/json' });

function agentMessage(taskId, contextId, parts) {
  return {
    messageId: randomUUID(), contextId, taskId, role: Role.ROLE_AGENT, parts,
    metadata: undefined, extensions: [], referenceTaskIds: [],
  };
}

function status(taskId, contextId, state, message) {
  const status = { state, message, timestamp: new Date().toISOString() };
  return AgentEvent.statusUpdate({ taskId, contextId, status, metadata: undefined });
}

/** The executor: asks for approval on a new task, decides on a continuation. */
class AskingExecutor {
  constructor(log) {
    this.log = log;
    this.pending = new Map(); // task id -> { target, uuid }
  }

  async execute(context, bus) {
    const { taskId, contextId } = context;
    const parts = context.userMessage.parts;
    if (!context.task) {
      const target = parts.filter((p) => p.content?.$case === 'text').map((p) => p.content.value).join('\n');
      this.pending.set(taskId, { target, uuid: randomUUID() });
      bus.publish(AgentEvent.task({
        id: taskId, contextId, artifacts: [], history: [context.userMessage], metadata: undefined,
        status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: new Date().toISOString() },
      }));
      this.ask(taskId, contextId, bus);
      return;
    }
    const pending = this.pending.get(taskId);
    const decision = parts.find((p) => p.content?.$case === 'data')?.content.value;
    if (!pending || !decision || decision.approval_uuid !== pending.uuid || typeof decision.approved !== 'boolean') {
      if (pending) this.ask(taskId, contextId, bus);
      return;
    }
    this.pending.delete(taskId);
    const { target } = pending;
    appendFileSync(this.log, `${decision.approved ? 'executed' : 'rejected'} delete_file ${target}\n`);
    const answer = decision.approved ? `deleted ${target}` : `kept ${target}`;
    bus.publish(AgentEvent.artifactUpdate({
      taskId, contextId, append: false, lastChunk: true, metadata: undefined,
      artifact: { artifactId: randomUUID(), name: 'answer', description: '', parts: [textPart(answer)], metadata: undefined, extensions: [] },
    }));
    bus.publish(status(taskId, contextId, TaskState.TASK_STATE_COMPLETED, agentMessage(taskId, contextId, [textPart(answer)])));
  }

  /** The task goes (again) to input-required with the approval request. */
  ask(taskId, contextId, bus) {
    const { target, uuid } = this.pending.get(taskId);
    const approval = { approval_uuid: uuid, tool_name: 'delete_file', tool_args: { path: target }, description: `delete ${target}` };
    const message = agentMessage(taskId, contextId, [textPart(`Approve delete_file for ${target}?`), dataPart(approval)]);
    bus.publish(status(taskId, contextId, TaskState.TASK_STATE_INPUT_REQUIRED, message));
  }

  async cancelTask(taskId, bus) {
    this.pending.delete(taskId);
    bus.publish(status(taskId, '', TaskState.TASK_STATE_CANCELED, undefined));
  }
}

function card(port, bindings) {
  const base = `http://127.0.0.1:${port}`;
  return {
    name: 'sdk-asking-js',
    description: 'Asks for approval before deleting a file (built on @a2a-js/sdk).',
    supportedInterfaces: bindings.map((b) => ({ url: `${base}${PATHS[b]}`, protocolBinding: NAMES[b], tenant: '', protocolVersion: '1.0' })),
    provider: undefined,
    version: '1.0.0',
    capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text/plain', 'application/json'],
    defaultOutputModes: ['text/plain'],
    skills: [{
      id: 'delete_file', name: 'delete_file', description: 'Deletes a file after a human approved it.',
      tags: ['approval'], examples: [], inputModes: [], outputModes: [], securityRequirements: [],
    }],
    signatures: [],
  };
}

function main() {
  const { port, log, bindings } = options(process.argv.slice(2));
  appendFileSync(log, '');
  const agentCard = card(port, bindings);
  const requestHandler = new DefaultRequestHandler(agentCard, new InMemoryTaskStore(), new AskingExecutor(log));
  const app = express();
  app.use((req, _res, next) => {
    appendFileSync(log, `auth ${req.headers.authorization ?? '-'}\n`);
    next();
  });
  app.use(`/${AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: requestHandler }));
  const handlers = { jsonrpc: jsonRpcHandler, http_json: restHandler };
  for (const binding of bindings) {
    app.use(PATHS[binding], handlers[binding]({ requestHandler, userBuilder: UserBuilder.noAuthentication }));
  }
  const server = app.listen(port, '127.0.0.1', (error) => {
    if (error) throw error;
    console.log('READY');
  });
  process.on('SIGTERM', () => server.close(() => process.exit(0)));
}

main();
