//! Runs an agent tree (orchestrated mode): `sequential`, `parallel` and
//! `loop` nodes around `llm` nodes, with session state, and resumption of
//! a run that stopped for approval.
//!
//! Data flow: an `llm` node's final text goes to session state under its
//! `output_key`; `{key}` placeholders in later prompts read it. Each
//! pipeline node sees the user message and its own work, not the other
//! nodes' messages: what it needs from them comes through its prompt.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use asg_shared::{Grant, Message, PendingApproval, Role, ToolCall};
use futures::future::BoxFuture;
use uuid::Uuid;

use super::calls::{self, CallOutcome};
use super::decide::{CallFacts, Decision, Verdict, decide};
use super::llm_node::{self, Buffer, Gate, Invocation, NodeOutcome, Recorder};
use super::tree::{A2aNode, LlmNode, LoopNode, Node};
use super::{EngineError, Inner, approval, new_message};
use crate::config::tree::resolve;
use crate::context::RequestContext;
use crate::llm::{LlmError, LlmMessage};

/// How a node ended.
pub enum Flow {
    /// Finished with this output.
    Done(String),
    /// An `exit_loop` call travels up to the nearest loop.
    Exit(String),
    /// Stopped for approval.
    Paused(Pause),
    /// A model or sub-agent failed (recorded).
    Failed(Failure),
}

/// Why a run failed.
pub enum Failure {
    /// A model call failed.
    Llm(LlmError),
    /// A sub-agent step failed, with the reason.
    SubAgent(String),
}

/// Where a run stopped for approval.
pub struct Pause {
    /// The approval.
    pub pending: Box<PendingApproval>,
    /// Child indices from the root to the paused `llm` node.
    pub path: Vec<usize>,
    /// That node's `output_key`.
    pub output_key: Option<String>,
    /// Index in the conversation where that node's invocation began.
    pub messages_from: usize,
}

/// Resumption of a paused run: the path still to walk, and the paused
/// node's messages so far.
pub struct Resume {
    /// Remaining child indices.
    pub path: Vec<usize>,
    /// The paused invocation's messages.
    pub own: Vec<Message>,
    /// Where they start in the conversation.
    pub messages_from: usize,
}

/// Shared state of one run.
#[derive(Clone)]
pub struct Exec {
    inner: Arc<Inner>,
    ctx: RequestContext,
    conversation_id: Uuid,
    /// Session state: `output_key` values. Shared by parallel branches.
    pub session: Arc<Mutex<BTreeMap<String, String>>>,
    user_message: Arc<str>,
    /// Current iteration of each loop on the current path.
    pub loop_iterations: BTreeMap<String, usize>,
    /// The conversation's remembered approvals.
    grants: Arc<[Grant]>,
}

/// Anything that records messages and knows how many it holds.
pub trait Transcript: Recorder {
    /// Messages recorded so far (the conversation's length).
    fn position(&self) -> usize;
}

impl Transcript for Buffer {
    fn position(&self) -> usize {
        self.0.len()
    }
}

impl Exec {
    /// A run over `session` for `user_message`.
    pub fn new(
        inner: Arc<Inner>,
        ctx: RequestContext,
        conversation_id: Uuid,
        session: BTreeMap<String, String>,
        user_message: &str,
        loop_iterations: BTreeMap<String, usize>,
    ) -> Exec {
        let mut session = session;
        session.insert("user_message".to_string(), user_message.to_string());
        Exec {
            inner,
            ctx,
            conversation_id,
            session: Arc::new(Mutex::new(session)),
            user_message: Arc::from(user_message),
            loop_iterations,
            grants: Arc::from(Vec::new()),
        }
    }

    /// The run with the conversation's remembered approvals.
    pub fn with_grants(mut self, grants: &[Grant]) -> Exec {
        self.grants = Arc::from(grants.to_vec());
        self
    }

    /// A copy of the session state.
    pub fn session_snapshot(&self) -> BTreeMap<String, String> {
        self.session.lock().map(|s| s.clone()).unwrap_or_default()
    }

    fn set(&self, key: &Option<String>, value: &str) {
        if let (Some(key), Ok(mut session)) = (key, self.session.lock()) {
            session.insert(key.clone(), value.to_string());
        }
    }

    fn lookup(&self, key: &str) -> Option<String> {
        self.session.lock().ok().and_then(|s| s.get(key).cloned())
    }

    /// Runs `node` (at `path`), resuming when `resume` is given.
    pub fn run_node<'a>(
        &'a mut self,
        node: &'a Node,
        path: &'a mut Vec<usize>,
        resume: Option<Resume>,
        gate: Gate,
        rec: &'a mut dyn Transcript,
    ) -> BoxFuture<'a, Result<Flow, EngineError>> {
        Box::pin(async move {
            match node {
                Node::Llm(llm) => self.run_llm(llm, path, resume, gate, rec).await,
                Node::Sequential(group) => {
                    self.run_children(&group.children, path, resume, gate, rec)
                        .await
                }
                Node::Loop(lp) => self.run_loop(lp, path, resume, gate, rec).await,
                Node::A2a(a2a) => self.run_a2a(a2a, path, resume, gate, rec).await,
                Node::Parallel(group) => {
                    let gate = if group.allow_destructive {
                        Gate::RunUnapproved {
                            container: group.name.clone(),
                        }
                    } else {
                        Gate::Refuse {
                            container: group.name.clone(),
                        }
                    };
                    self.run_parallel(group.children.len(), path, gate, rec)
                        .await
                }
            }
        })
    }

    /// An `llm` step (resumed with its own messages so far).
    async fn run_llm(
        &mut self,
        llm: &LlmNode,
        path: &[usize],
        resume: Option<Resume>,
        gate: Gate,
        rec: &mut dyn Transcript,
    ) -> Result<Flow, EngineError> {
        let system = resolve(&llm.prompt, &|k| self.lookup(k));
        let (own, messages_from) = match resume {
            Some(resume) => (resume.own, resume.messages_from),
            None => {
                let mut started = new_message(Role::System, system.clone());
                started.node = Some(llm.name.clone());
                rec.push(started);
                (Vec::new(), rec.position())
            }
        };
        let invocation = Invocation {
            node: llm,
            system,
            base: vec![LlmMessage::User {
                text: self.user_message.to_string(),
            }],
            own,
            gate,
            exit_loop: llm.can_exit_loop,
            grants: self.grants.clone(),
        };
        let outcome = llm_node::run(
            &self.inner,
            &self.ctx,
            self.conversation_id,
            invocation,
            rec,
        )
        .await?;
        Ok(match outcome {
            NodeOutcome::Answered(text) => {
                self.set(&llm.output_key, &text);
                Flow::Done(text)
            }
            NodeOutcome::ExitLoop(text) => {
                self.set(&llm.output_key, &text);
                Flow::Exit(text)
            }
            NodeOutcome::Paused(pending) => Flow::Paused(Pause {
                pending,
                path: path.to_vec(),
                output_key: llm.output_key.clone(),
                messages_from,
            }),
            NodeOutcome::Failed(error) => Flow::Failed(Failure::Llm(error)),
        })
    }

    /// A `loop`: its children again and again until `exit_loop` or
    /// `max_iterations` (resumed at the iteration that paused).
    async fn run_loop(
        &mut self,
        lp: &LoopNode,
        path: &mut Vec<usize>,
        mut resume: Option<Resume>,
        gate: Gate,
        rec: &mut dyn Transcript,
    ) -> Result<Flow, EngineError> {
        let gate = match lp.allow_destructive {
            true => Gate::RunUnapproved {
                container: lp.name.clone(),
            },
            false => gate,
        };
        let mut iteration = match &resume {
            Some(_) => self.loop_iterations.get(&lp.name).copied().unwrap_or(0),
            None => 0,
        };
        let mut last = String::new();
        while iteration < lp.max_iterations {
            self.loop_iterations.insert(lp.name.clone(), iteration);
            let flow = self
                .run_children(&lp.children, path, resume.take(), gate.clone(), rec)
                .await?;
            match flow {
                Flow::Done(text) => last = text,
                Flow::Exit(text) => {
                    tracing::info!(node = %lp.name, iteration = iteration + 1, "loop ended by exit_loop");
                    self.loop_iterations.remove(&lp.name);
                    return Ok(Flow::Done(if text.is_empty() { last } else { text }));
                }
                other => return Ok(other),
            }
            iteration += 1;
        }
        tracing::info!(node = %lp.name, iterations = lp.max_iterations, "loop reached max_iterations");
        self.loop_iterations.remove(&lp.name);
        Ok(Flow::Done(last))
    }

    /// An `a2a` step: one delegation, gated like a tool call (`decide.rs`).
    /// On resume, the decision's recorded result is the step's output.
    async fn run_a2a(
        &mut self,
        a2a: &A2aNode,
        path: &[usize],
        resume: Option<Resume>,
        gate: Gate,
        rec: &mut dyn Transcript,
    ) -> Result<Flow, EngineError> {
        if let Some(resume) = resume {
            return Ok(resumed_a2a(a2a, &resume)
                .inspect(|output| {
                    self.set(&a2a.output_key, output);
                })
                .map_or_else(Flow::Failed, Flow::Done));
        }
        let text = resolve(&a2a.prompt, &|k| self.lookup(k));
        record_in(rec, a2a, new_message(Role::System, text.clone()));
        let messages_from = rec.position();
        let (call, decision) = self.judge_delegation(a2a, text, &gate);
        record_in(rec, a2a, call.message(a2a));
        let pause = |pending: PendingApproval| {
            Flow::Paused(Pause {
                pending: Box::new(pending),
                path: path.to_vec(),
                output_key: a2a.output_key.clone(),
                messages_from,
            })
        };
        if let Verdict::Ask { approvers } = decision.verdict {
            let mut pending = call.pending(self.conversation_id, a2a);
            pending.approvers = approvers;
            pending.rule = decision.rule;
            pending.no_edit = decision.no_edit;
            return Ok(pause(pending));
        }
        let (content, is_error) = match self.delegate(a2a, &call, &decision, &gate).await {
            CallOutcome::Remote { agent, approval } if gate == Gate::Approve => {
                return Ok(pause(calls::proxy_approval(
                    self.conversation_id,
                    &call.id,
                    Some(a2a.name.clone()),
                    &agent,
                    approval,
                )));
            }
            CallOutcome::Remote { agent, approval } => (
                format!(
                    "Sub-agent {agent} asks for approval of {} (its task {}), which cannot be given here; decide on {agent} directly.",
                    approval.tool_name, approval.task_id
                ),
                true,
            ),
            CallOutcome::Done { content, is_error } => (content, is_error),
        };
        record_in(
            rec,
            a2a,
            llm_node::result_message(&call.id, &a2a.agent, content.clone(), is_error),
        );
        rec.checkpoint().await?;
        if is_error {
            return Ok(Flow::Failed(Failure::SubAgent(content)));
        }
        self.set(&a2a.output_key, &content);
        Ok(Flow::Done(content))
    }

    /// The delegation an `a2a` step makes, and what `decide` says of it
    /// (a sub-agent unknown to the catalog counts as gated).
    fn judge_delegation(&self, a2a: &A2aNode, text: String, gate: &Gate) -> (Delegation, Decision) {
        let mut arguments = serde_json::Map::new();
        arguments.insert("message".into(), serde_json::Value::String(text.clone()));
        let facts = CallFacts {
            tool: &a2a.agent,
            arguments: &arguments,
            offered: true,
            gated: Some(
                self.inner
                    .tool(&a2a.agent)
                    .is_none_or(|t| t.destructive_hint),
            ),
            grants: &self.grants,
        };
        let decision = decide(facts, gate, &self.inner.rules);
        let call = Delegation {
            id: format!("a2a_{}", Uuid::new_v4().simple()),
            text,
            arguments,
            uuid: matches!(decision.verdict, Verdict::Ask { .. }).then(Uuid::new_v4),
        };
        (call, decision)
    }

    /// Sends the delegation, or refuses it as decided.
    async fn delegate(
        &self,
        a2a: &A2aNode,
        call: &Delegation,
        decision: &Decision,
        gate: &Gate,
    ) -> CallOutcome {
        match decision.verdict {
            Verdict::Run | Verdict::RunUnapproved => {
                if decision.verdict == Verdict::RunUnapproved {
                    tracing::warn!(node = %a2a.name, gate = ?gate, agent = %a2a.agent, "destructive delegation runs WITHOUT approval (allow_destructive)");
                }
                calls::execute(&self.inner, &self.ctx, &a2a.agent, call.arguments.clone()).await
            }
            _ => CallOutcome::Done {
                content: format!(
                    "Refused: delegating to {} was not run: {}.",
                    a2a.agent, decision.reason
                ),
                is_error: true,
            },
        }
    }

    /// Children in order, resuming inside the first when asked.
    async fn run_children(
        &mut self,
        children: &[Node],
        path: &mut Vec<usize>,
        resume: Option<Resume>,
        gate: Gate,
        rec: &mut dyn Transcript,
    ) -> Result<Flow, EngineError> {
        let (start, mut resume) = match resume {
            Some(mut resume) if !resume.path.is_empty() => {
                let first = resume.path.remove(0);
                (first, Some(resume))
            }
            _ => (0, None),
        };
        let mut last = String::new();
        for (i, child) in children.iter().enumerate().skip(start) {
            path.push(i);
            let flow = self
                .run_node(child, path, resume.take(), gate.clone(), rec)
                .await;
            path.pop();
            match flow? {
                Flow::Done(text) => last = text,
                other => return Ok(other),
            }
        }
        Ok(Flow::Done(last))
    }

    /// Branches run concurrently inside the turn's own task (never
    /// detached: a turn stopped at the shutdown deadline stops its
    /// branches too); their messages are recorded in configuration order
    /// once all have finished.
    async fn run_parallel(
        &mut self,
        count: usize,
        path: &mut Vec<usize>,
        gate: Gate,
        rec: &mut dyn Transcript,
    ) -> Result<Flow, EngineError> {
        let branches = (0..count).map(|i| {
            let mut exec = self.clone();
            let mut branch_path = path.clone();
            branch_path.push(i);
            let gate = gate.clone();
            async move {
                let inner = exec.inner.clone();
                let mut buffer = Buffer::default();
                let flow = match inner.tree.node_at(&branch_path) {
                    Some(node) => {
                        let mut node_path = branch_path.clone();
                        exec.run_node(node, &mut node_path, None, gate, &mut buffer)
                            .await
                    }
                    None => Err(EngineError::Internal(format!("no node at {branch_path:?}"))),
                };
                (flow, buffer.0)
            }
        });
        let tasks = futures::future::join_all(branches).await;
        let mut outputs = Vec::with_capacity(count);
        let mut failure = None;
        let mut exit = false;
        for (i, (flow, messages)) in tasks.into_iter().enumerate() {
            for message in messages {
                rec.push(message);
            }
            let name = self
                .inner
                .tree
                .node_at(&[path.as_slice(), &[i]].concat())
                .map(|n| n.name().to_string())
                .unwrap_or_default();
            match flow {
                Ok(Flow::Done(text)) => outputs.push(format!("[{name}]\n{text}")),
                Ok(Flow::Exit(text)) => {
                    exit = true;
                    outputs.push(format!("[{name}]\n{text}"));
                }
                Ok(Flow::Failed(error)) => {
                    failure.get_or_insert(Ok(error));
                }
                Ok(Flow::Paused(_)) => {
                    failure.get_or_insert(Err(EngineError::Store(
                        "a parallel branch cannot stop for approval".into(),
                    )));
                }
                Err(error) => {
                    failure.get_or_insert(Err(error));
                }
            }
        }
        rec.checkpoint().await?;
        match failure {
            Some(Ok(error)) => return Ok(Flow::Failed(error)),
            Some(Err(error)) => return Err(error),
            None => {}
        }
        let combined = outputs.join("\n\n");
        Ok(if exit {
            Flow::Exit(combined)
        } else {
            Flow::Done(combined)
        })
    }
}

/// Records `message` as the `a2a` node's.
fn record_in(rec: &mut dyn Transcript, a2a: &A2aNode, mut message: Message) {
    message.node = Some(a2a.name.clone());
    rec.push(message);
}

/// The output of an `a2a` step resumed after its decision: the recorded
/// result, or why the step failed.
fn resumed_a2a(a2a: &A2aNode, resume: &Resume) -> Result<String, Failure> {
    match resume.own.iter().rev().find(|m| m.role == Role::Tool) {
        Some(result) if !result.is_error => Ok(result.content.clone()),
        Some(result) => Err(Failure::SubAgent(result.content.clone())),
        None => Err(Failure::SubAgent(format!(
            "node {:?} resumed without a result",
            a2a.name
        ))),
    }
}

/// One delegation of an `a2a` step.
struct Delegation {
    id: String,
    text: String,
    arguments: serde_json::Map<String, serde_json::Value>,
    /// The approval it waits for, when gated.
    uuid: Option<Uuid>,
}

impl Delegation {
    /// The assistant message that records the call.
    fn message(&self, a2a: &A2aNode) -> Message {
        let mut message = new_message(Role::Assistant, String::new());
        message.tool_call = Some(ToolCall {
            id: self.id.clone(),
            name: a2a.agent.clone(),
            arguments: self.arguments.clone(),
            needs_approval: self.uuid.is_some(),
            approval_uuid: self.uuid,
            provider_signature: None,
        });
        message
    }

    /// The approval a gated delegation waits for.
    fn pending(&self, conversation_id: Uuid, a2a: &A2aNode) -> PendingApproval {
        approval::pending(approval::NewApproval {
            uuid: self.uuid.unwrap_or_else(Uuid::new_v4),
            conversation_id,
            tool_name: a2a.agent.clone(),
            tool_args: self.arguments.clone(),
            description: format!("Delegate to {}: {}", a2a.agent, self.text),
            call_id: self.id.clone(),
            node: Some(a2a.name.clone()),
        })
    }
}
