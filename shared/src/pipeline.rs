//! Where a paused agent-tree run stands ([`PipelineState`], saved in its
//! conversation so the run resumes after the approvals it stopped for),
//! and the part of it the browser chat reads ([`PausedRun`]).

use std::collections::BTreeMap;

use serde::de::IgnoredAny;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use uuid::Uuid;

/// The type of `Conversation::pipeline_state`: the whole
/// [`PipelineState`] everywhere but in the browser chat, this crate's only
/// `wasm32` build, where it is a [`PausedRun`].
#[cfg(not(target_arch = "wasm32"))]
pub type PipelineStateField = PipelineState;
/// The type of `Conversation::pipeline_state`: the whole
/// [`PipelineState`] everywhere but in the browser chat, this crate's only
/// `wasm32` build, where it is a [`PausedRun`].
#[cfg(target_arch = "wasm32")]
pub type PipelineStateField = PausedRun;

/// Where a paused agent-tree run stands, so it can resume after approval.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PipelineState {
    /// Child indices from the root to the paused node.
    pub paused_node_path: Vec<usize>,
    /// `output_key` of the paused node, if any.
    #[serde(default)]
    pub paused_node_output_key: String,
    /// Snapshot of the session state at pause time.
    #[serde(default)]
    pub session_state: BTreeMap<String, String>,
    /// The user message that started the run.
    pub user_message: String,
    /// Index in `messages` where the paused node's invocation began.
    #[serde(default)]
    pub node_messages_from: usize,
    /// Current iteration of each `loop` node on the paused path.
    #[serde(default)]
    pub loop_iterations: BTreeMap<String, usize>,
    /// Every stopped step, when `parallel` branches stopped at once (the
    /// fields above describe the first); empty for a single stop.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paused_steps: Vec<PausedStep>,
    /// Outputs of `parallel` branches that finished while a sibling
    /// stopped, by branch path (child indices joined with `.`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub branch_outputs: BTreeMap<String, BranchOutput>,
}

impl PipelineState {
    /// Every stopped step: `paused_steps`, or the single one the older
    /// fields describe (waiting for `first`).
    pub fn steps(&self, first: Option<Uuid>) -> Vec<PausedStep> {
        if !self.paused_steps.is_empty() {
            return self.paused_steps.clone();
        }
        vec![PausedStep {
            path: self.paused_node_path.clone(),
            node: String::new(),
            output_key: self.paused_node_output_key.clone(),
            messages_from: self.node_messages_from,
            approval_uuid: first.unwrap_or_default(),
            refusal: None,
        }]
    }
}

/// One step of a paused run that waits for an approval.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PausedStep {
    /// Child indices from the root to the stopped node.
    pub path: Vec<usize>,
    /// That node's name (checked on resume: a changed tree never resumes
    /// a step at another node).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub node: String,
    /// Its `output_key`, if any.
    #[serde(default)]
    pub output_key: String,
    /// Index in `messages` where its invocation began.
    #[serde(default)]
    pub messages_from: usize,
    /// The approval it waits for.
    pub approval_uuid: Uuid,
    /// Set when that approval was refused: what was refused and how (the
    /// step then reports it instead of going on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refusal: Option<String>,
}

/// What a finished `parallel` branch produced.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct BranchOutput {
    /// Its output text.
    pub text: String,
    /// It ended with `exit_loop`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub exit: bool,
}

/// What the browser chat reads of a [`PipelineState`]: how many steps the
/// run stopped at (the "1 of 2 approvals decided" over its cards).
///
/// The chat shows nothing else of a paused run, and reading the whole
/// state (node paths, session state, loop counters, branch outputs) put
/// 15.7 KB of reader into its bundle for that count, 5.3 KB gzipped. The
/// other fields do not exist here, so no code of the chat can read them
/// by mistake; and writing one back is an error, never a state with its
/// parts missing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
pub struct PausedRun {
    /// How many entries the state's `paused_steps` has.
    #[serde(default, rename = "paused_steps", deserialize_with = "count")]
    steps: usize,
}

impl PausedRun {
    /// How many entries the state's `paused_steps` has (none for a single
    /// stop, which only the older fields describe).
    pub fn paused_step_count(&self) -> usize {
        self.steps
    }
}

impl PipelineState {
    /// How many entries `paused_steps` has (none for a single stop,
    /// which only the older fields describe); what [`PausedRun`] reads.
    pub fn paused_step_count(&self) -> usize {
        self.paused_steps.len()
    }
}

/// A list's length, its items skipped.
fn count<'de, D: Deserializer<'de>>(deserializer: D) -> Result<usize, D::Error> {
    Ok(Vec::<IgnoredAny>::deserialize(deserializer)?.len())
}

impl Serialize for PausedRun {
    fn serialize<S: Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
        Err(serde::ser::Error::custom(
            "a paused run read by the chat holds only its step count and cannot be written back",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(n: u128) -> PausedStep {
        PausedStep {
            path: vec![0, n as usize],
            node: format!("branch{n}"),
            approval_uuid: Uuid::from_u128(n),
            refusal: (n == 2).then(|| "rejected".to_string()),
            ..PausedStep::default()
        }
    }

    fn read(state: &PipelineState) -> PausedRun {
        serde_json::from_value(serde_json::to_value(state).unwrap()).unwrap()
    }

    #[test]
    fn the_chat_reads_how_many_steps_a_run_stopped_at() {
        let state = PipelineState {
            paused_node_path: vec![0, 1],
            session_state: BTreeMap::from([("plan".into(), "x".into())]),
            user_message: "go".into(),
            loop_iterations: BTreeMap::from([("0".into(), 2)]),
            paused_steps: vec![step(1), step(2), step(3)],
            branch_outputs: BTreeMap::from([(
                "0.4".into(),
                BranchOutput {
                    text: "done".into(),
                    exit: true,
                },
            )]),
            ..PipelineState::default()
        };
        assert_eq!(state.paused_step_count(), 3);
        assert_eq!(read(&state).paused_step_count(), 3);
    }

    #[test]
    fn a_single_stop_has_no_paused_steps_for_either_reader() {
        let state = PipelineState {
            paused_node_path: vec![2],
            user_message: "go".into(),
            ..PipelineState::default()
        };
        assert_eq!(state.paused_step_count(), 0);
        assert_eq!(read(&state).paused_step_count(), 0);
        assert_eq!(state.steps(Some(Uuid::from_u128(9))).len(), 1);
    }

    #[test]
    fn a_malformed_step_list_is_an_error_not_a_count() {
        for bad in [r#"{"paused_steps": 3}"#, r#"{"paused_steps": null}"#] {
            let error = serde_json::from_str::<PausedRun>(bad).unwrap_err();
            assert!(error.to_string().contains("sequence"), "{bad}: {error}");
        }
    }

    #[test]
    fn the_chat_never_writes_a_run_back() {
        let run = PausedRun { steps: 2 };
        let error = serde_json::to_string(&run).unwrap_err().to_string();
        assert!(error.contains("cannot be written back"), "{error}");
    }
}
