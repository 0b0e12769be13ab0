//! Agent Stop and Go's agent, as a library: the `agent` binary is a thin
//! wrapper around [`app`] (build the server from a config). The tool
//! servers and the web server are crates of their own (`tools/`,
//! `webserver/`); what they share with the agent is in `asg-http`.

pub mod a2a;
pub mod api;
pub mod app;
pub mod audit;
pub mod auth;
pub mod channels;
pub mod config;
pub mod context;
pub mod engine;
pub mod http_error;
pub mod llm;
pub mod markdown;
pub mod mcp;
pub mod metrics;
pub mod notify;
pub mod store;
pub mod telemetry;
#[cfg(test)]
mod test_support;
pub mod tool;
