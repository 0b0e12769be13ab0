//! Agent Stop and Go, as a library: the binaries in `src/bin` are thin
//! wrappers around [`app`] (build the server from a config) and
//! [`resources`] (the SQLite-backed MCP server).

pub mod a2a;
pub mod api;
pub mod app;
pub mod audit;
pub mod auth;
pub mod config;
pub mod context;
pub mod engine;
pub mod filesystem;
pub mod host_check;
pub mod http_error;
pub mod llm;
pub mod mcp;
pub mod notify;
pub mod resources;
pub mod service_token;
pub mod store;
#[cfg(test)]
mod test_support;
pub mod tool;
pub mod tool_http;
pub mod web;
