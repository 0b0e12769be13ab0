//! The HTTP client of rmcp's streamable HTTP transport, with the W3C
//! trace context as HTTP headers: a `tools/call` whose `_meta` carries a
//! `traceparent` (set by `McpServer::call` from the tool span) is posted
//! with the same `traceparent` (and `tracestate`) header, so an HTTP MCP
//! server's own tracing (or a proxy in front of it) joins the caller's
//! trace. Everything else is reqwest's implementation, unchanged.

use std::collections::HashMap;
use std::sync::Arc;

use futures::stream::BoxStream;
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, JsonRpcMessage, JsonRpcRequest};
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
};
use sse_stream::Sse;

/// reqwest, plus the trace headers of a traced `tools/call`.
#[derive(Clone)]
pub struct TracedHttp(reqwest::Client);

impl TracedHttp {
    /// As rmcp's default client: no idle pooled connections (its note:
    /// delayed-ACK stalls), and no redirects followed.
    pub fn new() -> TracedHttp {
        let client = reqwest::Client::builder()
            .pool_max_idle_per_host(0)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap_or_default();
        TracedHttp(client)
    }
}

/// The `traceparent` / `tracestate` of a traced `tools/call` as headers.
fn with_trace(
    message: &ClientJsonRpcMessage,
    mut headers: HashMap<HeaderName, HeaderValue>,
) -> HashMap<HeaderName, HeaderValue> {
    let JsonRpcMessage::Request(JsonRpcRequest {
        request: ClientRequest::CallToolRequest(call),
        ..
    }) = message
    else {
        return headers;
    };
    let Some(meta) = &call.params.meta else {
        return headers;
    };
    for (name, value) in [
        ("traceparent", meta.get_traceparent()),
        ("tracestate", meta.get_tracestate()),
    ] {
        if let Some(value) = value.and_then(|v| HeaderValue::from_str(v).ok()) {
            headers.insert(HeaderName::from_static(name), value);
        }
    }
    headers
}

type PostResult = Result<StreamableHttpPostResponse, StreamableHttpError<reqwest::Error>>;
type StreamResult =
    Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<reqwest::Error>>;

impl StreamableHttpClient for TracedHttp {
    type Error = reqwest::Error;

    fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> impl Future<Output = PostResult> + Send + '_ {
        let headers = with_trace(&message, custom_headers);
        self.0
            .post_message(uri, message, session_id, auth_header, headers)
    }

    fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> impl Future<Output = PostResult> + Send + '_ {
        let headers = with_trace(&message, custom_headers);
        self.0.post_message_with_max_sse_event_size(
            uri,
            message,
            session_id,
            auth_header,
            headers,
            max_sse_event_size,
        )
    }

    fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> impl Future<Output = Result<(), StreamableHttpError<reqwest::Error>>> + Send + '_ {
        self.0
            .delete_session(uri, session_id, auth_header, custom_headers)
    }

    fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> impl Future<Output = StreamResult> + Send + '_ {
        self.0
            .get_stream(uri, session_id, last_event_id, auth_header, custom_headers)
    }

    fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> impl Future<Output = StreamResult> + Send + '_ {
        self.0.get_stream_with_max_sse_event_size(
            uri,
            session_id,
            last_event_id,
            auth_header,
            custom_headers,
            max_sse_event_size,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{CallToolRequestParams, MetaObject, RequestId};

    fn call(traceparent: Option<&str>) -> ClientJsonRpcMessage {
        let mut params = CallToolRequestParams::new("resources_list");
        if let Some(traceparent) = traceparent {
            let mut meta = MetaObject::new();
            meta.set_traceparent(traceparent);
            params.meta = Some(meta.into());
        }
        ClientJsonRpcMessage::request(
            ClientRequest::CallToolRequest(rmcp::model::Request::new(params)),
            RequestId::Number(1),
        )
    }

    #[test]
    fn a_traced_tool_call_carries_its_traceparent_as_a_header() {
        let traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
        let headers = with_trace(&call(Some(traceparent)), HashMap::new());
        assert_eq!(
            headers
                .get(&HeaderName::from_static("traceparent"))
                .and_then(|v| v.to_str().ok()),
            Some(traceparent)
        );
        assert!(with_trace(&call(None), HashMap::new()).is_empty());
    }
}
