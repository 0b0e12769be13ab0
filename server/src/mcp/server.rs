//! One configured MCP server: a stdio subprocess or a streamable-HTTP
//! endpoint, its live client connection, and crash/timeout recovery.
//!
//! Concurrency: a call clones the `Arc` of the current [`Connection`] under a
//! short tokio lock and releases the lock before the request; rmcp
//! multiplexes concurrent requests on one connection. The lock is held
//! across `.await` only while (re)connecting, which serializes restarts.
//!
//! Recovery: when a call fails because the transport closed (the process
//! died), the connection is retired (closed in the background) and the
//! error goes back to the caller; the next call starts a new one. A call
//! that times out fails alone: the connection and the other calls in
//! flight on it are left alone.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientConfig, Implementation, JsonObject,
    ProtocolVersion, Tool,
};
use rmcp::service::RunningService;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{Peer, RoleClient, ServiceError, ServiceExt as _};
use tokio::io::AsyncBufReadExt as _;
use tokio::task::JoinHandle;
use tracing::Instrument as _;

use super::elicit::{Asker, Entered, Handler, InFlight};
use super::registry::ToolCallError;
use super::traced_http::TracedHttp;
use crate::config::{McpServerConfig, expand_env};
use crate::context::BearerToken;

/// Longest a server may take to start and answer `initialize`.
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// Longest a connection close may take (rmcp waits up to 3 s for the child
/// to exit after stdin closes, then 3 s after SIGTERM, then kills it).
const CLOSE_TIMEOUT: Duration = Duration::from_secs(8);

type Client = RunningService<RoleClient, Handler>;

/// How to reach the server.
#[derive(Debug, Clone)]
enum Target {
    Stdio {
        program: PathBuf,
        args: Vec<String>,
        env: BTreeMap<String, String>,
    },
    Http {
        url: String,
        /// The server's own token (`auth_token_env`): sent on every
        /// request instead of any caller's token.
        service_token: Option<ServiceToken>,
    },
}

/// A service token and the variable it came from (for messages; the
/// token itself is redacted in `Debug`).
#[derive(Debug, Clone)]
struct ServiceToken {
    var: String,
    token: BearerToken,
}

/// One live client connection.
struct Connection {
    peer: Peer<RoleClient>,
    service: StdMutex<Option<Client>>,
}

impl Connection {
    fn new(client: Client) -> Connection {
        Connection {
            peer: client.peer().clone(),
            service: StdMutex::new(Some(client)),
        }
    }

    fn is_closed(&self) -> bool {
        if self.peer.is_transport_closed() {
            return true;
        }
        let guard = self.service.lock().unwrap_or_else(|p| p.into_inner());
        guard.as_ref().is_none_or(|s| s.is_closed())
    }

    /// Closes the connection (and stops a stdio child); idempotent.
    async fn close(&self) {
        let taken = self
            .service
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(mut service) = taken
            && let Ok(None) = service.close_with_timeout(CLOSE_TIMEOUT).await
        {
            tracing::warn!(target: "mcp", "MCP connection did not close within {CLOSE_TIMEOUT:?}");
        }
    }
}

/// One configured MCP server and its (restartable) connection.
pub struct McpServer {
    name: String,
    target: Target,
    timeout: Duration,
    timeout_secs: u64,
    conn: tokio::sync::Mutex<Option<Arc<Connection>>>,
    closing: StdMutex<Vec<JoinHandle<()>>>,
    shut_down: AtomicBool,
    /// The calls in flight on the kept connection (whose an elicitation is).
    calls: Arc<InFlight>,
}

impl McpServer {
    /// Connects (spawning a stdio server), runs `initialize` and lists the
    /// tools; the connection is kept for the calls. The error names the
    /// server and what failed.
    pub async fn initialize(&self) -> Result<Vec<Tool>, String> {
        let name = &self.name;
        let conn = Arc::new(
            self.connect()
                .await
                .map_err(|e| format!("MCP server {name:?} failed to start: {e}"))?,
        );
        let tools = match tokio::time::timeout(START_TIMEOUT, conn.peer.list_all_tools()).await {
            Ok(Ok(tools)) => tools,
            Ok(Err(e)) => {
                conn.close().await;
                return Err(format!("MCP server {name:?} failed to list its tools: {e}"));
            }
            Err(_) => {
                conn.close().await;
                return Err(format!(
                    "MCP server {name:?} did not list its tools within {} seconds",
                    START_TIMEOUT.as_secs()
                ));
            }
        };
        if let Some(old) = self.conn.lock().await.replace(conn) {
            self.close_in_background(old);
        }
        Ok(tools)
    }

    /// Whether the server is reached over streamable HTTP (it may start
    /// after the agent) rather than spawned.
    pub fn is_http(&self) -> bool {
        matches!(self.target, Target::Http { .. })
    }

    /// The server as configured, not started yet (a service token is
    /// read from the environment now).
    pub fn new(config: &McpServerConfig, data_dir: &Path) -> Result<McpServer, String> {
        McpServer::with_env(config, data_dir, &|k| std::env::var(k).ok())
    }

    /// [`McpServer::new`] with the environment looked up by `env`.
    fn with_env(
        config: &McpServerConfig,
        data_dir: &Path,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<McpServer, String> {
        let expand = |s: &str| expand_env(s, env);
        let name = config.name.clone();
        let target = match (&config.command, &config.url) {
            (Some(command), None) => {
                let mut env: BTreeMap<String, String> = config
                    .env
                    .iter()
                    .map(|(k, v)| (k.clone(), expand(v)))
                    .collect();
                env.entry("ASG_DATA_DIR".to_string())
                    .or_insert_with(|| data_dir.display().to_string());
                Target::Stdio {
                    program: resolve_command(&expand(command)),
                    args: config.args.iter().map(|a| expand(a)).collect(),
                    env,
                }
            }
            (None, Some(url)) => Target::Http {
                url: expand(url),
                service_token: match &config.auth_token_env {
                    Some(var) => Some(ServiceToken {
                        token: asg_http::service_token::from_env(
                            &format!("MCP server {name:?}: auth_token_env"),
                            var,
                            env,
                        )?,
                        var: var.clone(),
                    }),
                    None => None,
                },
            },
            (Some(_), Some(_)) => {
                return Err(format!("MCP server {name:?} sets both `command` and `url`"));
            }
            (None, None) => {
                return Err(format!("MCP server {name:?} needs a `command` or a `url`"));
            }
        };
        let timeout_secs = config.timeout_secs.max(1);
        Ok(McpServer {
            name,
            target,
            timeout: Duration::from_secs(timeout_secs),
            timeout_secs,
            conn: tokio::sync::Mutex::new(None),
            closing: StdMutex::new(Vec::new()),
            shut_down: AtomicBool::new(false),
            calls: Arc::default(),
        })
    }

    /// The configured name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Calls a tool with the server's timeout. A bearer token is forwarded as
    /// `Authorization: Bearer` to HTTP servers (it cannot reach stdio ones),
    /// unless the server has its own service token: then that token is
    /// sent (on the kept connection) and the caller's never.
    pub async fn call(
        &self,
        tool: &str,
        arguments: JsonObject,
        bearer: Option<&BearerToken>,
        asker: Option<Arc<dyn Asker>>,
    ) -> Result<CallToolResult, ToolCallError> {
        let mut params = CallToolRequestParams::new(tool.to_string()).with_arguments(arguments);
        // The trace context in `_meta` (SEP-414), so the server's spans
        // join the caller's trace.
        if let Some(traceparent) = crate::telemetry::traceparent() {
            let mut meta = rmcp::model::MetaObject::new();
            meta.set_traceparent(traceparent);
            params.meta = Some(meta.into());
        }
        if let (
            Target::Http {
                url,
                service_token: None,
            },
            Some(token),
        ) = (&self.target, bearer)
        {
            return self.call_with_bearer(url, tool, params, token, asker).await;
        }
        let conn = self.connection().await?;
        let entered = self.calls.enter(asker);
        let answer = self.timed(&entered, conn.peer.call_tool(params)).await;
        drop(entered);
        match answer {
            Ok(Ok(result)) => Ok(result),
            // The server wants credentials: it is fine, the caller (or the
            // service token) is not.
            Ok(Err(e)) if !sign_in_note(&e).is_empty() => {
                let without = match &self.target {
                    Target::Http {
                        service_token: Some(_),
                        ..
                    } => "",
                    _ => " without credentials",
                };
                Err(self.unavailable(format!(
                    "it refused the call to \"{tool}\"{without}{}",
                    self.refusal_note(&e)
                )))
            }
            Ok(Err(e)) if is_transport_failure(&e) => {
                tracing::warn!(target: "mcp", server = %self.name, tool, "MCP server stopped during a call: {e}");
                self.retire(&conn).await;
                Err(self.unavailable(format!(
                    "it stopped during the call to \"{tool}\" ({e}); it will be restarted on the next call"
                )))
            }
            Ok(Err(e)) => Err(self.protocol(e)),
            // Only this call fails: the connection and the other calls in
            // flight on it go on (a crashed server is noticed as a closed
            // transport instead).
            Err(_) => {
                tracing::warn!(target: "mcp", server = %self.name, tool, secs = self.timeout_secs, "tool call timed out");
                Err(self.timed_out(tool))
            }
        }
    }

    /// `call` under the server's timeout, which does not run while a
    /// question of the call waits for a person (it starts again once the
    /// question is answered).
    async fn timed<F: std::future::Future>(
        &self,
        entered: &Entered,
        call: F,
    ) -> Result<F::Output, tokio::time::error::Elapsed> {
        let mut call = std::pin::pin!(call);
        let mut deadline = tokio::time::Instant::now() + self.timeout;
        loop {
            match tokio::time::timeout_at(deadline, &mut call).await {
                Ok(answer) => return Ok(answer),
                Err(elapsed) => {
                    let now = tokio::time::Instant::now();
                    let answered = entered
                        .call
                        .answered_at()
                        .map(tokio::time::Instant::from_std);
                    deadline = match answered {
                        _ if entered.call.is_asking() => now + self.timeout,
                        Some(at) if at + self.timeout > now => at + self.timeout,
                        _ => return Err(elapsed),
                    };
                }
            }
        }
    }

    /// A call on a short-lived connection that carries the caller's token.
    async fn call_with_bearer(
        &self,
        url: &str,
        tool: &str,
        params: CallToolRequestParams,
        token: &BearerToken,
        asker: Option<Arc<dyn Asker>>,
    ) -> Result<CallToolResult, ToolCallError> {
        let config = StreamableHttpClientTransportConfig::with_uri(url).auth_header(token.expose());
        // Its own connection: the call is the only one on it.
        let calls = Arc::<InFlight>::default();
        let entered = calls.enter(asker);
        let handler = Handler::new(&self.name, calls.clone());
        let attempt = async {
            let transport = StreamableHttpClientTransport::with_client(TracedHttp::new(), config);
            let mut client = serve_detached(handler, transport).await.map_err(|e| {
                self.unavailable(format!("cannot connect: {e}{}", sign_in_note(&e)))
            })?;
            let result = client.peer().call_tool(params).await;
            let _ = client.close_with_timeout(CLOSE_TIMEOUT).await;
            result.map_err(|e| match is_transport_failure(&e) {
                true => self.unavailable(format!(
                    "the connection closed during the call to \"{tool}\" ({e})"
                )),
                false => self.protocol(e),
            })
        };
        self.timed(&entered, attempt)
            .await
            .unwrap_or_else(|_| Err(self.timed_out(tool)))
    }

    /// The live connection, (re)started if it is missing or closed.
    async fn connection(&self) -> Result<Arc<Connection>, ToolCallError> {
        let mut guard = self.conn.lock().await;
        if self.shut_down.load(Ordering::SeqCst) {
            return Err(self.unavailable("it has been shut down".to_string()));
        }
        if let Some(conn) = guard.as_ref()
            && !conn.is_closed()
        {
            return Ok(Arc::clone(conn));
        }
        if let Some(old) = guard.take() {
            self.close_in_background(old);
        }
        tracing::info!(target: "mcp", server = %self.name, "(re)starting MCP server");
        let conn = Arc::new(
            self.connect()
                .await
                .map_err(|e| self.unavailable(format!("it could not be restarted: {e}")))?,
        );
        *guard = Some(Arc::clone(&conn));
        Ok(conn)
    }

    /// Removes `conn` if it is still the current connection, and closes it.
    async fn retire(&self, conn: &Arc<Connection>) {
        {
            let mut guard = self.conn.lock().await;
            if guard.as_ref().is_some_and(|c| Arc::ptr_eq(c, conn)) {
                *guard = None;
            }
        }
        self.close_in_background(Arc::clone(conn));
    }

    fn close_in_background(&self, conn: Arc<Connection>) {
        let handle = tokio::spawn(async move { conn.close().await });
        let mut closing = self.closing.lock().unwrap_or_else(|p| p.into_inner());
        closing.retain(|h| !h.is_finished());
        closing.push(handle);
    }

    /// Spawns (stdio) or connects (HTTP) and runs the `initialize` handshake.
    async fn connect(&self) -> Result<Connection, String> {
        let attempt = async {
            match &self.target {
                Target::Stdio { program, args, env } => {
                    let mut cmd = tokio::process::Command::new(program);
                    cmd.args(args).envs(env).kill_on_drop(true);
                    let (transport, stderr) = TokioChildProcess::builder(cmd)
                        .stderr(Stdio::piped())
                        .spawn()
                        .map_err(|e| format!("cannot run {}: {e}", program.display()))?;
                    if let Some(stderr) = stderr {
                        forward_stderr(self.name.clone(), stderr);
                    }
                    serve_detached(self.handler(), transport)
                        .await
                        .map_err(|e| format!("MCP initialization failed: {e}"))
                }
                Target::Http { url, service_token } => {
                    let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
                    if let Some(service) = service_token {
                        config = config.auth_header(service.token.expose());
                    }
                    let transport =
                        StreamableHttpClientTransport::with_client(TracedHttp::new(), config);
                    serve_detached(self.handler(), transport)
                        .await
                        .map_err(|e| {
                            format!(
                                "MCP initialization at {url} failed: {e}{}",
                                self.refusal_note(&e)
                            )
                        })
                }
            }
        };
        match tokio::time::timeout(START_TIMEOUT, attempt).await {
            Ok(client) => client.map(Connection::new),
            Err(_) => Err(format!(
                "no answer to `initialize` within {} seconds",
                START_TIMEOUT.as_secs()
            )),
        }
    }

    /// The handler of the kept connection.
    fn handler(&self) -> Handler {
        Handler::new(&self.name, self.calls.clone())
    }

    /// Closes the connection and waits (bounded) for every child to stop.
    pub async fn shutdown(&self) {
        self.shut_down.store(true, Ordering::SeqCst);
        let current = self.conn.lock().await.take();
        if let Some(conn) = current {
            conn.close().await;
        }
        let closing = std::mem::take(&mut *self.closing.lock().unwrap_or_else(|p| p.into_inner()));
        for handle in closing {
            let _ = tokio::time::timeout(CLOSE_TIMEOUT, handle).await;
        }
    }

    /// Why a 401 came back: the service token was refused, or the call
    /// needs the caller to sign in; nothing for other errors.
    fn refusal_note(&self, error: &(dyn std::error::Error + 'static)) -> String {
        let note = sign_in_note(error);
        match &self.target {
            Target::Http {
                service_token: Some(service),
                ..
            } if !note.is_empty() => format!(
                " (the MCP server answered 401 Unauthorized: it refused the service token in \
                 {}; the server's auth_token_env must name a variable with the same token)",
                service.var
            ),
            _ => note,
        }
    }

    fn unavailable(&self, message: String) -> ToolCallError {
        ToolCallError::ServerUnavailable {
            server: self.name.clone(),
            message,
        }
    }

    fn protocol(&self, e: ServiceError) -> ToolCallError {
        ToolCallError::Protocol {
            server: self.name.clone(),
            message: e.to_string(),
        }
    }

    fn timed_out(&self, tool: &str) -> ToolCallError {
        ToolCallError::Timeout {
            tool: tool.to_string(),
            secs: self.timeout_secs,
        }
    }
}

/// Errors meaning the connection is gone (the process died, the stream
/// Starts an MCP session on `transport` outside the current span: rmcp
/// runs the session's task in the span it was started from, which would
/// keep the first tool call's span open (and unexported) for as long as
/// the connection lives.
async fn serve_detached<T, E, A>(
    handler: Handler,
    transport: T,
) -> Result<Client, rmcp::service::ClientInitializeError>
where
    T: rmcp::transport::IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    handler
        .serve(transport)
        .instrument(tracing::Span::none())
        .await
}

/// closed), as opposed to an error answer from a live server.
fn is_transport_failure(e: &ServiceError) -> bool {
    matches!(
        e,
        ServiceError::TransportClosed
            | ServiceError::TransportSend(_)
            | ServiceError::Cancelled { .. }
    )
}

/// What this client says of itself at `initialize`: its name, and
/// elicitation in both modes.
pub(crate) fn client_config() -> ClientConfig {
    ClientConfig::new(
        super::elicit::capabilities(),
        Implementation::new("agent-stop-and-go", env!("CARGO_PKG_VERSION")),
    )
    // The `initialize` handshake: offer the newest version that still has it.
    .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
}

/// A bare command name is looked up beside the running executable (and, for
/// cargo test binaries in `target/*/deps`, one level up), else on `PATH`.
fn resolve_command(command: &str) -> PathBuf {
    if command.contains('/') || command.contains(std::path::MAIN_SEPARATOR) {
        return PathBuf::from(command);
    }
    if let Ok(exe) = std::env::current_exe()
        && let Some(dir) = exe.parent()
    {
        let mut dirs = vec![dir.to_path_buf()];
        if dir.file_name().is_some_and(|n| n == "deps")
            && let Some(up) = dir.parent()
        {
            dirs.push(up.to_path_buf());
        }
        for dir in dirs {
            let candidate = dir.join(command);
            if candidate.is_file() {
                return candidate;
            }
        }
    }
    PathBuf::from(command)
}

/// Reads the child's stderr line by line into `tracing::debug!` so that the
/// pipe never fills up; ends when the child closes it.
fn forward_stderr(server: String, stderr: tokio::process::ChildStderr) {
    tokio::spawn(async move {
        let mut reader = tokio::io::BufReader::new(stderr);
        let mut line = Vec::new();
        loop {
            line.clear();
            match reader.read_until(b'\n', &mut line).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    let text = String::from_utf8_lossy(&line);
                    tracing::debug!(target: "mcp", server = %server, "{}", text.trim_end());
                }
            }
        }
    });
}

/// The phrase the web chat recognizes (it then offers to sign in and send
/// the message again) when an MCP server over HTTP answered 401.
pub const SIGN_IN_REQUIRED: &str = "sign-in required";

/// `" (sign-in required: ...)"` when the error chain holds rmcp's
/// `AuthRequiredError` (the server answered 401), else nothing. rmcp's
/// transport workers box their errors and keep only the text, so the
/// text ("Auth required") counts too.
fn sign_in_note(error: &(dyn std::error::Error + 'static)) -> String {
    let mut current = Some(error);
    while let Some(e) = current {
        let typed = e.is::<rmcp::transport::streamable_http_client::AuthRequiredError>();
        if typed || e.to_string().to_ascii_lowercase().contains("auth required") {
            return format!(" ({SIGN_IN_REQUIRED}: the MCP server answered 401 Unauthorized)");
        }
        current = e.source();
    }
    String::new()
}

#[cfg(test)]
mod sign_in_tests {
    use rmcp::transport::streamable_http_client::{AuthRequiredError, StreamableHttpError};

    use super::*;

    #[test]
    fn a_401_from_an_http_mcp_server_says_sign_in_is_required() {
        let error = StreamableHttpError::<std::io::Error>::AuthRequired(AuthRequiredError::new(
            "Bearer".into(),
        ));
        assert!(sign_in_note(&error).contains(SIGN_IN_REQUIRED));
        assert_eq!(sign_in_note(&std::io::Error::other("refused")), "");
        // As rmcp's transport workers report it: only the text is left.
        let boxed = std::io::Error::other(
            "Send message error Transport [worker] error: Auth required, when send initialize request",
        );
        assert!(sign_in_note(&boxed).contains(SIGN_IN_REQUIRED));
    }

    #[test]
    fn a_service_token_is_read_at_startup_and_named_on_a_401() {
        let config = McpServerConfig {
            name: "files".into(),
            url: Some("http://127.0.0.1:1/mcp".into()),
            auth_token_env: Some("FILES_TOKEN".into()),
            ..Default::default()
        };
        let token = "files-service-token-0123456789";
        let env = |var: &str| (var == "FILES_TOKEN").then(|| token.to_string());
        let server = McpServer::with_env(&config, Path::new("/tmp"), &env).unwrap();
        let target = format!("{:?}", server.target);
        assert!(
            target.contains("FILES_TOKEN") && !target.contains(token),
            "{target}"
        );
        let error = StreamableHttpError::<std::io::Error>::AuthRequired(AuthRequiredError::new(
            "Bearer".into(),
        ));
        let note = server.refusal_note(&error);
        assert!(
            note.contains("refused the service token in FILES_TOKEN"),
            "{note}"
        );
        assert!(!note.contains(SIGN_IN_REQUIRED), "{note}");
        assert_eq!(server.refusal_note(&std::io::Error::other("down")), "");

        let missing = McpServer::with_env(&config, Path::new("/tmp"), &|_| None);
        let message = missing.err().unwrap();
        assert!(
            message.starts_with(
                "MCP server \"files\": auth_token_env: the environment variable FILES_TOKEN"
            ),
            "{message}"
        );
        let plain = McpServerConfig {
            auth_token_env: None,
            ..config
        };
        let server = McpServer::with_env(&plain, Path::new("/tmp"), &|_| None).unwrap();
        assert!(server.refusal_note(&error).contains(SIGN_IN_REQUIRED));
    }
}
