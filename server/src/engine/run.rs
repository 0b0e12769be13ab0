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

use asg_shared::{BranchOutput, Grant, Message, PendingApproval, Role, ToolCall};
use futures::future::BoxFuture;
use uuid::Uuid;

use super::calls::{self, CallOutcome};
use super::decide::{CallFacts, Decision, Verdict, decide};
use super::llm_node::{self, Buffer, Gate, Invocation, NodeOutcome, Recorder};
pub use super::pause::{Began, Pause, Resume, ResumeStep, Stop, path_key};
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
    /// Stopped for approval (one step, or several `parallel` branches).
    Paused(Pause),
    /// A step's approval was refused ("resources_remove was rejected"):
    /// travels up to the nearest `parallel` branch, which reports it as
    /// its output, or to the root, which cancels the rest of the run.
    Refused(String),
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

    /// A step whose approval was refused: its output says so (later
    /// steps reading its `output_key` see why it is missing).
    fn refused(&self, key: &Option<String>, what: String) -> Flow {
        self.set(key, &refusal_output(&what));
        Flow::Refused(what)
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
                    let gate = contained_gate(group.allow_destructive, &group.name, gate);
                    self.run_parallel(group.children.len(), path, resume, gate, rec)
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
        let (own, began) = match resume {
            Some(resume) => {
                let step = resume.leaf(&llm.name)?;
                if let Some(refusal) = step.refusal {
                    return Ok(self.refused(&llm.output_key, refusal));
                }
                (step.own, Began::InConversation(step.messages_from))
            }
            None => {
                let mut started = new_message(Role::System, system.clone());
                started.node = Some(llm.name.clone());
                rec.push(started);
                (Vec::new(), Began::InRecorder(rec.position()))
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
            NodeOutcome::Paused(pending) => Flow::Paused(Pause::one(Stop {
                pending,
                path: path.to_vec(),
                output_key: llm.output_key.clone(),
                began,
            })),
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
        let gate = contained_gate(lp.allow_destructive, &lp.name, gate);
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
            return self.resume_a2a(a2a, resume);
        }
        let text = resolve(&a2a.prompt, &|k| self.lookup(k));
        record_in(rec, a2a, new_message(Role::System, text.clone()));
        let began = Began::InRecorder(rec.position());
        let (call, decision) = self.judge_delegation(a2a, text, &gate);
        record_in(rec, a2a, call.message(a2a));
        let pause = |pending: PendingApproval| {
            Flow::Paused(Pause::one(Stop {
                pending: Box::new(pending),
                path: path.to_vec(),
                output_key: a2a.output_key.clone(),
                began,
            }))
        };
        if let Verdict::Ask { approvers } = decision.verdict {
            let mut pending = call.pending(self.conversation_id, a2a);
            pending.approvers = approvers;
            pending.rule = decision.rule;
            pending.no_edit = decision.no_edit;
            return Ok(pause(pending));
        }
        let (content, is_error, auth_required) = match self
            .delegate(a2a, &call, &decision, &gate)
            .await
        {
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
                false,
            ),
            CallOutcome::Done {
                content,
                is_error,
                auth_required,
            } => (content, is_error, auth_required),
        };
        let result = llm_node::result_message(&call.id, &a2a.agent, content.clone(), is_error);
        record_in(rec, a2a, llm_node::needing_auth(result, auth_required));
        self.a2a_done(a2a, content, is_error, rec).await
    }

    /// An `a2a` step's result, recorded: saved, then its output (or the
    /// step's failure).
    async fn a2a_done(
        &mut self,
        a2a: &A2aNode,
        content: String,
        is_error: bool,
        rec: &mut dyn Transcript,
    ) -> Result<Flow, EngineError> {
        rec.checkpoint().await?;
        if is_error {
            return Ok(Flow::Failed(Failure::SubAgent(content)));
        }
        self.set(&a2a.output_key, &content);
        Ok(Flow::Done(content))
    }

    /// An `a2a` step after its decision: the recorded result is its
    /// output (or its failure), a refusal is reported.
    fn resume_a2a(&self, a2a: &A2aNode, resume: Resume) -> Result<Flow, EngineError> {
        let step = resume.leaf(&a2a.name)?;
        if let Some(refusal) = step.refusal {
            return Ok(self.refused(&a2a.output_key, refusal));
        }
        Ok(resumed_a2a(a2a, &step)
            .inspect(|output| {
                self.set(&a2a.output_key, output);
            })
            .map_or_else(Flow::Failed, Flow::Done))
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
            gated: Some(self.inner.tool(&a2a.agent).is_none_or(|t| t.gated)),
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
                calls::execute(
                    &self.inner,
                    &self.ctx,
                    &a2a.agent,
                    call.arguments.clone(),
                    None,
                )
                .await
            }
            _ => CallOutcome::done(
                format!(
                    "Refused: delegating to {} was not run: {}.",
                    a2a.agent, decision.reason
                ),
                true,
            ),
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
            Some(resume) => {
                let (first, inside) = resume.descend(&path_key(path))?;
                (first, Some(inside))
            }
            None => (0, None),
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
    /// once all have finished. A branch that stops for approval stops
    /// alone: its siblings run on, and the node stops with every stopped
    /// step. Resumed, a branch that had finished gives its saved output.
    async fn run_parallel(
        &mut self,
        count: usize,
        path: &mut Vec<usize>,
        resume: Option<Resume>,
        gate: Gate,
        rec: &mut dyn Transcript,
    ) -> Result<Flow, EngineError> {
        let saved = resume.as_ref().map(|r| r.outputs.clone());
        let mut split = resume.map(Resume::split).unwrap_or_default();
        let mut parts: Vec<Option<Resume>> = (0..count).map(|i| split.remove(&i)).collect();
        if let Some(missing) = split.keys().next() {
            return Err(EngineError::Internal(format!(
                "a paused step is in branch {missing} of {}, which has {count} branches",
                path_key(path)
            )));
        }
        let branches = (0..count).map(|i| {
            let branch_path = [path.as_slice(), &[i]].concat();
            let part = parts[i].take();
            let finished = match (&part, &saved) {
                (None, Some(saved)) => saved.get(&path_key(&branch_path)).cloned(),
                _ => None,
            };
            self.clone()
                .run_branch(branch_path, part, finished, gate.clone())
        });
        let results = futures::future::join_all(branches).await;
        let mut joined = Joined::default();
        for (i, branch) in results.into_iter().enumerate() {
            let branch_path = [path.as_slice(), &[i]].concat();
            let node = self.inner.tree.node_at(&branch_path);
            let name = node.map(|n| n.name().to_string()).unwrap_or_default();
            let offset = rec.position();
            for message in branch.messages {
                rec.push(message);
            }
            // Only the loops inside this branch are its own to report.
            for lp in node.map(Node::loop_names).unwrap_or_default() {
                match branch.loop_iterations.get(lp) {
                    Some(&at) => self.loop_iterations.insert(lp.to_string(), at),
                    None => self.loop_iterations.remove(lp),
                };
            }
            joined.add(&name, &branch_path, branch.flow, offset);
        }
        if joined.failure.is_some() {
            self.withdraw_remote_stops(&joined.pause.stops).await;
        }
        joined.finish(self.conversation_id, rec).await
    }

    /// A sub-agent's approval a failed run stopped on is rejected there
    /// too, so nothing waits (or runs) on the sub-agent for a run that
    /// ended.
    async fn withdraw_remote_stops(&self, stops: &[Stop]) {
        let reason = "another branch of the parallel step failed";
        for stop in stops.iter().filter(|s| s.pending.remote_task_id.is_some()) {
            let outcome = calls::forward_decision(
                &self.inner,
                &self.ctx,
                &stop.pending,
                false,
                Some(reason),
                None,
            )
            .await;
            if let CallOutcome::Done { content, .. } = outcome {
                tracing::info!(approval = %stop.pending.uuid, %content, "sub-agent's approval withdrawn: the parallel step failed");
            }
        }
    }

    /// One `parallel` branch, into its own buffer.
    async fn run_branch(
        mut self,
        branch_path: Vec<usize>,
        resume: Option<Resume>,
        finished: Option<BranchOutput>,
        gate: Gate,
    ) -> Branch {
        let mut buffer = Buffer::default();
        let flow = match (finished, self.inner.clone().tree.node_at(&branch_path)) {
            (Some(output), _) if output.exit => Ok(Flow::Exit(output.text)),
            (Some(output), _) => Ok(Flow::Done(output.text)),
            (None, Some(node)) => {
                let mut node_path = branch_path.clone();
                self.run_node(node, &mut node_path, resume, gate, &mut buffer)
                    .await
            }
            (None, None) => Err(EngineError::Internal(format!("no node at {branch_path:?}"))),
        };
        Branch {
            flow,
            messages: buffer.0,
            loop_iterations: self.loop_iterations,
        }
    }
}

/// What one `parallel` branch did.
struct Branch {
    flow: Result<Flow, EngineError>,
    messages: Vec<Message>,
    loop_iterations: BTreeMap<String, usize>,
}

/// The branches of a `parallel` node, gathered in configuration order.
#[derive(Default)]
struct Joined {
    outputs: Vec<String>,
    exit: bool,
    pause: Pause,
    failure: Option<Result<Failure, EngineError>>,
}

impl Joined {
    /// Adds branch `name`'s end; its messages start at `offset` in the
    /// recorder.
    fn add(&mut self, name: &str, path: &[usize], flow: Result<Flow, EngineError>, offset: usize) {
        let (text, exit) = match flow {
            Ok(Flow::Done(text)) => (text, false),
            Ok(Flow::Exit(text)) => (text, true),
            Ok(Flow::Refused(what)) => (refusal_output(&what), false),
            Ok(Flow::Paused(pause)) => {
                for mut stop in pause.stops {
                    stop.began = stop.began.shifted(offset);
                    self.pause.stops.push(stop);
                }
                self.pause.outputs.extend(pause.outputs);
                return;
            }
            Ok(Flow::Failed(error)) => {
                self.failure.get_or_insert(Ok(error));
                return;
            }
            Err(error) => {
                self.failure.get_or_insert(Err(error));
                return;
            }
        };
        self.exit |= exit;
        self.outputs.push(format!("[{name}]\n{text}"));
        let output = BranchOutput { text, exit };
        self.pause.outputs.insert(path_key(path), output);
    }

    /// The node's end: a failure first, then a stop (if any branch
    /// stopped), else the joined outputs.
    async fn finish(
        self,
        conversation_id: Uuid,
        rec: &mut dyn Transcript,
    ) -> Result<Flow, EngineError> {
        if self.failure.is_some() {
            // Stopped siblings will not be resumed: their calls are closed.
            for stop in &self.pause.stops {
                rec.push(not_run_after_failure(&stop.pending));
            }
        }
        rec.checkpoint().await?;
        tracing::debug!(conversation = %conversation_id, stops = self.pause.stops.len(), "parallel node joined");
        match self.failure {
            Some(Ok(error)) => return Ok(Flow::Failed(error)),
            Some(Err(error)) => return Err(error),
            None => {}
        }
        if !self.pause.stops.is_empty() {
            return Ok(Flow::Paused(self.pause));
        }
        let combined = self.outputs.join("\n\n");
        Ok(if self.exit {
            Flow::Exit(combined)
        } else {
            Flow::Done(combined)
        })
    }
}

/// The output of a branch (or step) whose approval was refused.
fn refusal_output(what: &str) -> String {
    format!("Not done: {what}, so this branch stopped.")
}

/// The result that closes a stopped call whose `parallel` sibling failed.
fn not_run_after_failure(pending: &PendingApproval) -> Message {
    let called = pending
        .remote_agent_name
        .as_deref()
        .unwrap_or(&pending.tool_name);
    let mut message = llm_node::result_message(
        &pending.call_id,
        called,
        format!(
            "Not run: another branch of the parallel step failed, so {} was never put to an approver.",
            pending.tool_name
        ),
        true,
    );
    message.node = pending.node.clone();
    message
}

/// The gate inside a `parallel` or `loop` node: `allow_destructive`
/// unset asks as outside, `true` runs without approval, `false` refuses.
fn contained_gate(allow_destructive: Option<bool>, container: &str, outer: Gate) -> Gate {
    match allow_destructive {
        None => outer,
        Some(true) => Gate::RunUnapproved {
            container: container.to_string(),
        },
        Some(false) => Gate::Refuse {
            container: container.to_string(),
        },
    }
}

/// Records `message` as the `a2a` node's.
fn record_in(rec: &mut dyn Transcript, a2a: &A2aNode, mut message: Message) {
    message.node = Some(a2a.name.clone());
    rec.push(message);
}

/// The output of an `a2a` step resumed after its decision: the recorded
/// result, or why the step failed.
fn resumed_a2a(a2a: &A2aNode, resume: &ResumeStep) -> Result<String, Failure> {
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
        message.tool_call = Some(Box::new(ToolCall {
            id: self.id.clone(),
            name: a2a.agent.clone(),
            arguments: self.arguments.clone(),
            needs_approval: self.uuid.is_some(),
            approval_uuid: self.uuid,
            provider_signature: None,
        }));
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

#[cfg(test)]
mod tests {
    use super::*;

    fn stop(node: &str, branch: usize, began: Began) -> Stop {
        Stop {
            pending: Box::new(approval::pending(approval::NewApproval {
                uuid: Uuid::new_v4(),
                conversation_id: Uuid::nil(),
                tool_name: "resources_add".into(),
                tool_args: Default::default(),
                description: "add".into(),
                call_id: format!("call_{node}"),
                node: Some(node.into()),
            })),
            path: vec![0, branch],
            output_key: None,
            began,
        }
    }

    fn paused(stop: Stop) -> Result<Flow, EngineError> {
        Ok(Flow::Paused(Pause::one(stop)))
    }

    #[tokio::test]
    async fn a_stopped_branch_stops_the_node_with_its_siblings_outputs_saved() {
        let mut joined = Joined::default();
        joined.add("a", &[0, 0], paused(stop("a", 0, Began::InRecorder(1))), 4);
        joined.add("b", &[0, 1], Ok(Flow::Done("COUNT 2".into())), 6);
        joined.add("c", &[0, 2], Ok(Flow::Refused("x was rejected".into())), 7);
        joined.add(
            "d",
            &[0, 3],
            paused(stop("d", 3, Began::InConversation(3))),
            9,
        );
        let mut buffer = Buffer::default();
        let Flow::Paused(pause) = joined.finish(Uuid::nil(), &mut buffer).await.ok().unwrap()
        else {
            panic!("not paused");
        };
        // Buffer positions move by where the branch joined; positions in
        // the conversation (a resumed invocation) stay.
        let began: Vec<usize> = pause.stops.iter().map(|s| s.began.index()).collect();
        assert_eq!(began, [5, 3]);
        assert_eq!(pause.outputs["0.1"].text, "COUNT 2");
        assert_eq!(
            pause.outputs["0.2"].text,
            "Not done: x was rejected, so this branch stopped."
        );
        assert!(!pause.outputs.contains_key("0.0") && !pause.outputs.contains_key("0.3"));
        assert!(buffer.0.is_empty());
    }

    #[tokio::test]
    async fn a_failed_branch_closes_the_calls_its_siblings_stopped_on() {
        let mut joined = Joined::default();
        joined.add("a", &[0, 0], paused(stop("a", 0, Began::InRecorder(0))), 0);
        let failure = Flow::Failed(Failure::SubAgent("down".into()));
        joined.add("b", &[0, 1], Ok(failure), 2);
        let mut buffer = Buffer::default();
        let flow = joined.finish(Uuid::nil(), &mut buffer).await.ok().unwrap();
        assert!(matches!(flow, Flow::Failed(Failure::SubAgent(ref m)) if m == "down"));
        let [closed] = buffer.0.as_slice() else {
            panic!("{:?}", buffer.0);
        };
        assert!(closed.is_error && closed.content.starts_with("Not run: another branch"));
        assert_eq!(closed.tool_result.as_ref().unwrap().call_id, "call_a");
        assert_eq!(closed.node.as_deref(), Some("a"));
    }

    #[tokio::test]
    async fn finished_branches_join_in_order_and_an_exit_travels_up() {
        let mut joined = Joined::default();
        joined.add("a", &[0], Ok(Flow::Done("one".into())), 0);
        joined.add("b", &[1], Ok(Flow::Exit("two".into())), 0);
        let mut buffer = Buffer::default();
        let flow = joined.finish(Uuid::nil(), &mut buffer).await.ok().unwrap();
        assert!(matches!(flow, Flow::Exit(ref text) if text == "[a]\none\n\n[b]\ntwo"));
    }
}
