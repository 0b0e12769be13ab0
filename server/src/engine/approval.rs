//! The approval lifecycle lives in the core ([`asg_core::lifecycle`],
//! and its transitions in [`asg_core::transition`]).

pub use asg_core::lifecycle::*;
