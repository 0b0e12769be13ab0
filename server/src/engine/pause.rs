//! A paused run as values: the steps that stopped for approval (a
//! [`Pause`], several when `parallel` branches stopped), and the
//! [`Resume`] that walks the tree back to each of them after the
//! decisions. Saved between the two as [`asg_shared::PipelineState`].

use std::collections::BTreeMap;
use std::sync::Arc;

use asg_shared::{BranchOutput, Message, PendingApproval};

use super::EngineError;

/// Where a run stopped for approval: every stopped step, and what the
/// `parallel` branches that finished meanwhile produced.
#[derive(Default)]
pub struct Pause {
    /// The stopped steps, in configuration order.
    pub stops: Vec<Stop>,
    /// Outputs of finished branches, by branch path ([`path_key`]).
    pub outputs: BTreeMap<String, BranchOutput>,
}

/// One step stopped for an approval.
pub struct Stop {
    /// The approval.
    pub pending: Box<PendingApproval>,
    /// Child indices from the root to the stopped node.
    pub path: Vec<usize>,
    /// That node's `output_key`.
    pub output_key: Option<String>,
    /// Where that node's invocation began.
    pub began: Began,
}

/// Where an invocation's messages begin.
#[derive(Clone, Copy)]
pub enum Began {
    /// At this index of the recorder it ran with (a `parallel` branch's
    /// buffer is shifted when it joins the conversation).
    InRecorder(usize),
    /// At this index of the conversation (a resumed invocation).
    InConversation(usize),
}

impl Began {
    /// The index in the conversation, given where the recorder's
    /// messages start in it.
    pub fn shifted(self, offset: usize) -> Began {
        match self {
            Began::InRecorder(at) => Began::InRecorder(at + offset),
            conversation => conversation,
        }
    }

    /// The index, once the recorder is the conversation.
    pub fn index(self) -> usize {
        match self {
            Began::InRecorder(at) | Began::InConversation(at) => at,
        }
    }
}

impl Pause {
    pub fn one(stop: Stop) -> Pause {
        Pause {
            stops: vec![stop],
            outputs: BTreeMap::new(),
        }
    }
}

/// Resumption of a paused run: the steps that stopped, each with the path
/// still to walk to it, and the outputs of branches that had finished.
pub struct Resume {
    /// The stopped steps.
    pub steps: Vec<ResumeStep>,
    /// Outputs of finished `parallel` branches, by branch path.
    pub outputs: Arc<BTreeMap<String, BranchOutput>>,
}

/// One stopped step to resume.
pub struct ResumeStep {
    /// Remaining child indices.
    pub path: Vec<usize>,
    /// The paused invocation's messages.
    pub own: Vec<Message>,
    /// Where they start in the conversation.
    pub messages_from: usize,
    /// Set when its approval was refused.
    pub refusal: Option<String>,
}

impl Resume {
    /// The one step that stopped at this (leaf) node.
    pub fn leaf(mut self, node: &str) -> Result<ResumeStep, EngineError> {
        match (self.steps.pop(), self.steps.is_empty()) {
            (Some(step), true) if step.path.is_empty() => Ok(step),
            _ => Err(EngineError::Internal(format!(
                "node {node:?} cannot resume: the saved steps do not end there"
            ))),
        }
    }

    /// The child all steps continue in (a `sequential` or `loop` node
    /// runs one child at a time), and the resumption inside it.
    pub fn descend(mut self, node: &str) -> Result<(usize, Resume), EngineError> {
        let first = self.steps.first().and_then(|s| s.path.first().copied());
        let Some(first) = first.filter(|&i| self.steps.iter().all(|s| s.path.first() == Some(&i)))
        else {
            return Err(EngineError::Internal(format!(
                "node {node:?} cannot resume: its saved steps are not in one child"
            )));
        };
        for step in &mut self.steps {
            step.path.remove(0);
        }
        Ok((first, self))
    }

    /// The resumption of each `parallel` branch that has stopped steps.
    pub fn split(self) -> BTreeMap<usize, Resume> {
        let mut parts: BTreeMap<usize, Resume> = BTreeMap::new();
        for mut step in self.steps {
            if step.path.is_empty() {
                continue;
            }
            let branch = step.path.remove(0);
            parts
                .entry(branch)
                .or_insert_with(|| Resume {
                    steps: Vec::new(),
                    outputs: self.outputs.clone(),
                })
                .steps
                .push(step);
        }
        parts
    }
}

/// A branch path as a key of [`Pause::outputs`]: `0.2`.
pub fn path_key(path: &[usize]) -> String {
    path.iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(".")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(path: &[usize]) -> ResumeStep {
        ResumeStep {
            path: path.to_vec(),
            own: Vec::new(),
            messages_from: 0,
            refusal: None,
        }
    }

    fn resume(paths: &[&[usize]]) -> Resume {
        Resume {
            steps: paths.iter().map(|p| step(p)).collect(),
            outputs: Arc::new(BTreeMap::new()),
        }
    }

    fn paths(resume: &Resume) -> Vec<Vec<usize>> {
        resume.steps.iter().map(|s| s.path.clone()).collect()
    }

    #[test]
    fn a_sequence_descends_into_the_one_child_all_steps_are_in() {
        let (child, inside) = resume(&[&[1, 0], &[1, 2, 0]]).descend("seq").ok().unwrap();
        assert_eq!(child, 1);
        assert_eq!(paths(&inside), [vec![0], vec![2, 0]]);
        // Steps in two children of a sequence cannot come from one run.
        let error = resume(&[&[0, 1], &[1, 0]]).descend("seq").err().unwrap();
        assert!(error.to_string().contains("\"seq\""), "{error}");
        assert!(resume(&[&[]]).descend("seq").is_err());
    }

    #[test]
    fn a_parallel_node_splits_the_steps_by_branch() {
        let parts = resume(&[&[0], &[2, 1], &[2, 3]]).split();
        assert_eq!(parts.keys().copied().collect::<Vec<_>>(), [0, 2]);
        assert_eq!(paths(&parts[&0]), [Vec::<usize>::new()]);
        assert_eq!(paths(&parts[&2]), [vec![1], vec![3]]);
    }

    #[test]
    fn a_leaf_takes_exactly_one_step_that_ends_there() {
        assert!(resume(&[&[]]).leaf("n").is_ok());
        assert!(resume(&[&[0]]).leaf("n").is_err());
        assert!(resume(&[&[], &[]]).leaf("n").is_err());
        assert!(resume(&[]).leaf("n").is_err());
    }

    #[test]
    fn only_positions_in_a_branch_buffer_shift_into_the_conversation() {
        assert_eq!(Began::InRecorder(2).shifted(10).shifted(5).index(), 17);
        assert_eq!(Began::InConversation(2).shifted(10).index(), 2);
        assert_eq!(path_key(&[0, 2, 11]), "0.2.11");
        assert_eq!(path_key(&[]), "");
    }
}
