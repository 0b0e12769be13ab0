//! Which interface of a sub-agent the client talks to: the highest
//! protocol version and a binding its card offers (v1.0 JSON-RPC or
//! HTTP+JSON in the card's order of preference, else v0.3 JSON-RPC),
//! within what the `a2a:` entry pins (`protocol`, `binding`).
//!
//! Credentials go only where the operator said: an interface on another
//! origin than the configured URL is reached on the configured origin
//! (same path), never followed. Pure: no I/O.

use asg_shared::a2a::v1::{self, AgentInterface};
use serde::Deserialize;

use crate::config::{A2aBinding, A2aProtocol};

/// A protocol version the client speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    /// A2A v1.0.
    V1,
    /// A2A v0.3.
    V03,
}

/// A binding the client speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Binding {
    /// JSON-RPC 2.0 over HTTP POST.
    JsonRpc,
    /// HTTP+JSON (the REST binding; v1.0 only here).
    HttpJson,
}

/// Where and how to reach a sub-agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// Protocol version.
    pub version: Version,
    /// Binding.
    pub binding: Binding,
    /// The JSON-RPC endpoint, or the HTTP+JSON base URL.
    pub url: String,
}

impl Route {
    /// How logs and errors name it (`v1.0 JSON-RPC`).
    pub fn label(&self) -> &'static str {
        match (self.version, self.binding) {
            (Version::V1, Binding::JsonRpc) => "v1.0 JSON-RPC",
            (Version::V1, Binding::HttpJson) => "v1.0 HTTP+JSON",
            (Version::V03, Binding::JsonRpc) => "v0.3 JSON-RPC",
            (Version::V03, Binding::HttpJson) => "v0.3 HTTP+JSON",
        }
    }
}

/// What the `a2a:` entry pins.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pins {
    /// `protocol:`.
    pub protocol: Option<A2aProtocol>,
    /// `binding:`.
    pub binding: Option<A2aBinding>,
}

impl Pins {
    fn allow(&self, version: Version, binding: Binding) -> bool {
        let version_ok = match self.protocol {
            Some(A2aProtocol::V1) => version == Version::V1,
            Some(A2aProtocol::V03) => version == Version::V03,
            None => true,
        };
        let binding_ok = match self.binding {
            Some(A2aBinding::Jsonrpc) => binding == Binding::JsonRpc,
            Some(A2aBinding::HttpJson) => binding == Binding::HttpJson,
            None => true,
        };
        version_ok && binding_ok
    }
}

/// The parts of a peer's card the client reads: a v0.3 card (`url`,
/// `protocolVersion`, `preferredTransport`), a v1.0 card
/// (`supportedInterfaces`), or one with both, like ours.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PeerCard {
    /// Agent name.
    pub name: String,
    /// What it does.
    #[serde(default)]
    pub description: String,
    /// v0.3: the endpoint of `preferredTransport`.
    #[serde(default)]
    pub url: Option<String>,
    /// v0.3: the protocol version of `url`.
    #[serde(default)]
    pub protocol_version: Option<String>,
    /// v0.3: the transport of `url`.
    #[serde(default)]
    pub preferred_transport: Option<String>,
    /// v1.0: every interface, preferred first.
    #[serde(default)]
    pub supported_interfaces: Vec<AgentInterface>,
}

/// Chooses the route (see the module docs). `card` is `None` when it
/// could not be fetched; a configured URL with a path is then the
/// endpoint itself. The error says what the card offers.
pub fn choose(card: Option<&PeerCard>, configured: &str, pins: Pins) -> Result<Route, String> {
    let offered = card.map(candidates).unwrap_or_default();
    let allowed: Vec<&Route> = offered
        .iter()
        .filter(|r| pins.allow(r.version, r.binding))
        .collect();
    if has_path(configured) {
        let at_configured = allowed.iter().find(|r| same_endpoint(&r.url, configured));
        return Ok(match at_configured {
            Some(route) => (*route).clone(),
            None => Route {
                version: match pins.protocol {
                    Some(A2aProtocol::V1) => Version::V1,
                    _ => Version::V03,
                },
                binding: match pins.binding {
                    Some(A2aBinding::HttpJson) => Binding::HttpJson,
                    _ => Binding::JsonRpc,
                },
                url: configured.trim_end_matches('/').to_string(),
            },
        });
    }
    if card.is_none() {
        return Err("no agent card".into());
    }
    let Some(route) = allowed.first() else {
        return Err(format!(
            "its card offers no interface this agent can use{}: {}",
            pinned(pins),
            describe(&offered)
        ));
    };
    Ok(on_configured_origin(route, configured))
}

/// Every interface the card offers that the client speaks: v1.0 ones in
/// the card's order, then v0.3 JSON-RPC.
fn candidates(card: &PeerCard) -> Vec<Route> {
    let mut v1 = Vec::new();
    let mut v03 = Vec::new();
    for interface in &card.supported_interfaces {
        let Some(binding) = binding_of(&interface.protocol_binding) else {
            continue;
        };
        match version_of(&interface.protocol_version) {
            Some(Version::V1) => v1.push(route(Version::V1, binding, &interface.url)),
            Some(Version::V03) if binding == Binding::JsonRpc => {
                v03.push(route(Version::V03, binding, &interface.url))
            }
            _ => {}
        }
    }
    let legacy_jsonrpc = card
        .preferred_transport
        .as_deref()
        .is_none_or(|t| binding_of(t) == Some(Binding::JsonRpc));
    let legacy_v03 = card
        .protocol_version
        .as_deref()
        .is_none_or(|v| version_of(v) == Some(Version::V03));
    if let Some(url) = card.url.as_deref().filter(|u| !u.is_empty())
        && legacy_jsonrpc
        && legacy_v03
    {
        v03.push(route(Version::V03, Binding::JsonRpc, url));
    }
    v1.extend(v03);
    v1
}

fn route(version: Version, binding: Binding, url: &str) -> Route {
    Route {
        version,
        binding,
        url: url.trim_end_matches('/').to_string(),
    }
}

fn binding_of(name: &str) -> Option<Binding> {
    if name.eq_ignore_ascii_case(v1::BINDING_JSONRPC) {
        Some(Binding::JsonRpc)
    } else if name.eq_ignore_ascii_case(v1::BINDING_HTTP_JSON) || name.eq_ignore_ascii_case("REST")
    {
        Some(Binding::HttpJson)
    } else {
        None
    }
}

/// `1.0`, `1`, `1.0.1` (and an interface that names none: the field is
/// v1.0's) are v1.0; `0.3`, `0.3.0` are v0.3.
fn version_of(version: &str) -> Option<Version> {
    let version = version.trim().trim_start_matches(['v', 'V']);
    let major_minor: Vec<&str> = version.split('.').take(2).collect();
    match major_minor.as_slice() {
        [""] | ["1"] | ["1", _] => Some(Version::V1),
        ["0", "3"] => Some(Version::V03),
        _ => None,
    }
}

/// The route as reached: its URL when on the configured origin, else
/// the configured origin with the route's path.
fn on_configured_origin(route: &Route, configured: &str) -> Route {
    if same_origin(&route.url, configured) {
        return route.clone();
    }
    let path = path_of(&route.url);
    let url = format!(
        "{}{}",
        origin(configured),
        if path.is_empty() { "/a2a" } else { path }
    );
    tracing::warn!(
        card_url = %route.url,
        using = %url,
        "the sub-agent's card names an interface on another origin than the configured url; \
         using the configured origin (credentials are only sent there)"
    );
    Route {
        url,
        ..route.clone()
    }
}

fn pinned(pins: Pins) -> String {
    let mut said = Vec::new();
    if let Some(protocol) = pins.protocol {
        said.push(format!("protocol: {}", protocol.as_str()));
    }
    if let Some(binding) = pins.binding {
        said.push(format!("binding: {}", binding.as_str()));
    }
    if said.is_empty() {
        String::new()
    } else {
        format!(" with {}", said.join(", "))
    }
}

fn describe(offered: &[Route]) -> String {
    if offered.is_empty() {
        return "none (the client speaks v1.0 JSON-RPC and HTTP+JSON, and v0.3 JSON-RPC)".into();
    }
    offered
        .iter()
        .map(|r| format!("{} at {}", r.label(), r.url))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `scheme://host[:port]` of a URL.
pub fn origin(url: &str) -> &str {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    match url[after_scheme..].find('/') {
        Some(i) => &url[..after_scheme + i],
        None => url,
    }
}

/// A URL with more than its origin.
pub fn has_path(url: &str) -> bool {
    origin(url).len() < url.trim_end_matches('/').len()
}

/// The path (and query) of a URL, after its origin.
fn path_of(url: &str) -> &str {
    &url[origin(url).len()..]
}

fn same_endpoint(a: &str, b: &str) -> bool {
    same_origin(a, b) && path_of(a).trim_end_matches('/') == path_of(b).trim_end_matches('/')
}

/// Same scheme, host and port (compared case-insensitively, default
/// ports made explicit).
pub fn same_origin(a: &str, b: &str) -> bool {
    let normalize = |url: &str| -> Option<(String, String, u16)> {
        let parsed = reqwest::Url::parse(url).ok()?;
        Some((
            parsed.scheme().to_ascii_lowercase(),
            parsed.host_str()?.to_ascii_lowercase(),
            parsed.port_or_known_default()?,
        ))
    };
    matches!((normalize(a), normalize(b)), (Some(x), Some(y)) if x == y)
}

#[cfg(test)]
mod tests;
