//! Engine overhead of a 3-node sequential pipeline, in process.
//!
//! 100 concurrent conversations send messages through analyzer -> executor
//! -> reporter on the offline model. Time spent inside the model is
//! measured separately and subtracted, so the figure is the engine's own
//! work per node (prompt resolution, history, recording, session state).
//! Run with `cargo bench -p asg-server --bench engine`; pass `--store
//! json` to include the durable writes (excluded by default, as the
//! target says).

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agent_server::context::RequestContext;
use agent_server::engine::{AgentTree, Engine, EngineParts, GroupNode, LlmNode, Node};
use agent_server::llm::scripted::ScriptedModel;
use agent_server::llm::{LlmClient, LlmError, LlmRequest, LlmResponse};
use agent_server::mcp::ToolRegistry;
use agent_server::store::{Claim, JsonFileStore, ListPage, ListQuery, Store, StoreError};
use asg_shared::Conversation;
use async_trait::async_trait;
use uuid::Uuid;

const RULES: &str = r#"
rules:
  - when: { node: analyzer }
    reply: "PLAN for {user}"
  - when: { node: executor, system: "Plan: (?P<plan>.*)" }
    reply: "DONE {plan}"
  - when: { node: reporter, system: "Execution: (?P<execution>.*)" }
    reply: "REPORT {execution}"
"#;

/// Wraps a model and adds up the time spent in it.
struct Timed {
    model: ScriptedModel,
    nanos: AtomicU64,
}

#[async_trait]
impl LlmClient for Timed {
    fn describe(&self) -> String {
        self.model.describe()
    }
    async fn generate(&self, request: &LlmRequest) -> Result<LlmResponse, LlmError> {
        let started = Instant::now();
        let result = self.model.generate(request).await;
        self.nanos
            .fetch_add(started.elapsed().as_nanos() as u64, Ordering::Relaxed);
        result
    }
}

/// Keeps the conversations in memory: measures the engine without the
/// durable write.
#[derive(Default)]
struct MemoryStore(Mutex<HashMap<Uuid, Conversation>>);

impl MemoryStore {
    fn kept(&self) -> std::sync::MutexGuard<'_, HashMap<Uuid, Conversation>> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Store for MemoryStore {
    fn load_all(&self) -> Result<Vec<Conversation>, StoreError> {
        Ok(self.kept().values().cloned().collect())
    }
    fn save(&self, conversation: &Conversation) -> Result<(), StoreError> {
        self.kept().insert(conversation.id, conversation.clone());
        Ok(())
    }
    fn load(&self, id: Uuid) -> Result<Option<Conversation>, StoreError> {
        Ok(self.kept().get(&id).cloned())
    }
    fn conversation_of_approval(&self, _: Uuid) -> Result<Option<Uuid>, StoreError> {
        Ok(None)
    }
    fn waiting(&self) -> Result<Vec<Conversation>, StoreError> {
        Ok(Vec::new())
    }
    fn list_page(&self, _: &ListQuery) -> Result<ListPage, StoreError> {
        Ok(ListPage::default())
    }
    fn claim(&self, id: Uuid) -> Result<Claim, StoreError> {
        Ok(Claim::Taken(self.load(id)?.map(Box::new)))
    }
    fn abandoned(&self) -> Result<Vec<Uuid>, StoreError> {
        Ok(Vec::new())
    }
}

fn llm_node(name: &str, prompt: &str, model: &Arc<Timed>, key: &str) -> Node {
    Node::Llm(LlmNode {
        name: name.into(),
        prompt: prompt.into(),
        llm: model.clone(),
        tools: Default::default(),
        output_key: Some(key.into()),
        can_exit_loop: false,
        ask_human: false,
        offered: Default::default(),
    })
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index]
}

/// What one measured run produced.
struct Run {
    /// Every turn's latency.
    latencies: Vec<Duration>,
    /// Wall time of the whole run.
    wall: Duration,
    /// Time spent inside the model.
    model_time: Duration,
}

#[tokio::main]
async fn main() {
    let json_store = std::env::args().any(|a| a == "json");
    let clients = 100;
    let turns_per_client = 50;
    let model = Arc::new(Timed {
        model: ScriptedModel::parse(RULES, "bench").expect("rules"),
        nanos: AtomicU64::new(0),
    });
    let dir = tempfile::tempdir().expect("temp dir");
    let engine = start_engine(pipeline(&model), json_store, dir.path()).await;
    run(&engine, &model, clients, 5).await; // warm-up
    let mut measured = run(&engine, &model, clients, turns_per_client).await;
    measured.latencies.sort();
    report(&measured, clients, json_store);
}

/// The 3-node sequential pipeline: analyzer -> executor -> reporter.
fn pipeline(model: &Arc<Timed>) -> AgentTree {
    AgentTree {
        system_prompt: "bench".into(),
        root: Node::Sequential(GroupNode {
            name: "pipeline".into(),
            allow_destructive: None,
            children: vec![
                llm_node("analyzer", "Analyze: {user_message}", model, "analysis"),
                llm_node("executor", "Plan: {analysis}", model, "execution"),
                llm_node("reporter", "Execution: {execution}", model, "report"),
            ],
        }),
    }
}

/// An engine over the tree, storing JSON files in `dir` when `json_store`
/// is set and nothing otherwise.
async fn start_engine(tree: AgentTree, json_store: bool, dir: &Path) -> Engine {
    let store: Arc<dyn Store> = if json_store {
        Arc::new(JsonFileStore::open(dir).expect("store"))
    } else {
        Arc::new(MemoryStore::default())
    };
    Engine::start(EngineParts {
        tree,
        tools: Arc::new(ToolRegistry::empty()),
        agents: Arc::new(agent_server::a2a::client::A2aClient::empty()),
        store,
        max_tool_steps: 10,
        catalog: Default::default(),
        rules: Default::default(),
        pinning: Default::default(),
        limits: Default::default(),
        policy: Default::default(),
        audit: None,
        expiry: Default::default(),
        questions: Default::default(),
    })
    .await
    .expect("engine")
}

/// `clients` concurrent conversations of `turns` turns each.
async fn run(engine: &Engine, model: &Timed, clients: usize, turns: usize) -> Run {
    model.nanos.store(0, Ordering::Relaxed);
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..clients {
        tasks.push(tokio::spawn(conversation(engine.clone(), turns)));
    }
    let mut latencies = Vec::new();
    for task in tasks {
        latencies.extend(task.await.expect("task"));
    }
    Run {
        latencies,
        wall: started.elapsed(),
        model_time: Duration::from_nanos(model.nanos.load(Ordering::Relaxed)),
    }
}

/// One conversation of `turns` turns; the latency of each.
async fn conversation(engine: Engine, turns: usize) -> Vec<Duration> {
    let ctx = RequestContext::default();
    let id = engine
        .create(&ctx, None)
        .await
        .expect("create")
        .conversation
        .id;
    let mut latencies = Vec::with_capacity(turns);
    for i in 0..turns {
        let t = Instant::now();
        let outcome = engine
            .send(id, &ctx, format!("message {i}"))
            .await
            .expect("send");
        latencies.push(t.elapsed());
        assert!(outcome.result.response.starts_with("REPORT DONE PLAN"));
    }
    latencies
}

/// Prints the figures of a measured run (latencies sorted).
fn report(measured: &Run, clients: usize, json_store: bool) {
    let latencies = &measured.latencies;
    let turns = latencies.len() as f64;
    let nodes = 3.0;
    let model_per_node = measured.model_time.as_secs_f64() / (turns * nodes);
    let per_node = |d: Duration| d.as_secs_f64() / nodes * 1e6;
    println!(
        "3-node sequential pipeline, {clients} concurrent conversations, {} turns, store: {}",
        latencies.len(),
        if json_store {
            "JSON files (fsync)"
        } else {
            "none (durable write excluded)"
        }
    );
    println!(
        "  throughput          {:>10.0} turns/s",
        turns / measured.wall.as_secs_f64()
    );
    println!(
        "  turn latency  p50   {:>10.1} us   p99 {:>10.1} us",
        percentile(latencies, 0.5).as_secs_f64() * 1e6,
        percentile(latencies, 0.99).as_secs_f64() * 1e6
    );
    println!(
        "  per node      p50   {:>10.1} us   p99 {:>10.1} us   (turn latency / 3, queueing included)",
        per_node(percentile(latencies, 0.5)),
        per_node(percentile(latencies, 0.99))
    );
    println!(
        "  model time per node (mean) {:>6.1} us",
        model_per_node * 1e6
    );
    let cpu_per_node = measured.wall.as_secs_f64() / (turns * nodes) * 1e6 - model_per_node * 1e6;
    println!(
        "  engine work per node (wall / node-runs - model) {:>6.1} us",
        cpu_per_node
    );
}
