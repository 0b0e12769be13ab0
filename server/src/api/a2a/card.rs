//! The agent card (`GET /.well-known/agent-card.json`, and the older
//! `/.well-known/agent.json`): who this agent is, where its endpoints
//! are, what it supports, how callers authenticate, and one skill per
//! tool it can use. The card says only what the server does: streaming
//! and push notifications yes, state transition history no.
//!
//! One card serves both protocol versions, as the a2a-sdk 1.3.0 server
//! serves its own: the v1.0 card with the v0.3 fields beside it. v0.3
//! clients read `url`, `protocolVersion`, `preferredTransport`,
//! `security` and each scheme's OpenAPI fields (`type`, …); v1.0 clients
//! read `supportedInterfaces` (every interface with its binding and
//! version), `securityRequirements` and each scheme's one member
//! (`httpAuthSecurityScheme`, …), and the SDKs of both versions ignore
//! what is not theirs. A request that names `A2A-Version: 1.x` gets the
//! v1.0 card alone ([`v1_card`]), which the v1.0 schema admits as it is
//! (no unknown field); the answer varies by that header.

use asg_shared::a2a::v1::{
    self, AgentInterface, ApiKeySecurityScheme, HttpAuthSecurityScheme,
    OpenIdConnectSecurityScheme, SecurityRequirement, SecurityScheme,
};
use asg_shared::a2a::{AgentCapabilities, AgentCard, AgentSkill, PROTOCOL_VERSION};
use asg_shared::rest::ToolInfo;
use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;

use crate::api::{AgentInfo, AppState, CardSecurity};

/// Path of the JSON-RPC endpoint, relative to the public base URL.
pub const RPC_PATH: &str = "/a2a";

/// Media types accepted in and produced by messages.
pub const MODES: [&str; 2] = ["text/plain", "application/json"];

/// The card's top-level fields only v0.3 has.
const V03_ONLY: [&str; 4] = ["url", "protocolVersion", "preferredTransport", "security"];

/// `GET /.well-known/agent-card.json` and `/.well-known/agent.json`: the
/// card for both versions, or the v1.0 card alone when the request names
/// `A2A-Version: 1.x`.
pub async fn agent_card_handler(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let card = agent_card(&state.agent, &crate::api::system::tool_infos(&state.engine));
    let asks_v1 = headers
        .get(super::v1::VERSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim() == "1" || v.trim().starts_with("1."));
    let body = if asks_v1 {
        v1_card(&card)
    } else {
        serde_json::to_value(&card).unwrap_or_default()
    };
    let mut response = Json(body).into_response();
    response.headers_mut().insert(
        header::VARY,
        HeaderValue::from_static(super::v1::VERSION_HEADER),
    );
    response
}

/// The v1.0 card alone: `card` without the v0.3 fields (top-level, the
/// `stateTransitionHistory` capability, and each scheme's OpenAPI fields
/// beside its v1.0 member).
pub fn v1_card(card: &AgentCard) -> Value {
    let mut value = serde_json::to_value(card).unwrap_or_default();
    let Some(fields) = value.as_object_mut() else {
        return value;
    };
    for v03 in V03_ONLY {
        fields.remove(v03);
    }
    if let Some(capabilities) = fields
        .get_mut("capabilities")
        .and_then(Value::as_object_mut)
    {
        capabilities.remove("stateTransitionHistory");
    }
    let schemes = fields
        .get_mut("securitySchemes")
        .and_then(Value::as_object_mut);
    for scheme in schemes.into_iter().flat_map(|s| s.values_mut()) {
        if let Some(scheme) = scheme.as_object_mut() {
            scheme.retain(|key, _| SecurityScheme::MEMBERS.contains(&key.as_str()));
        }
    }
    value
}

/// Builds the card from the agent's identity and its tools.
pub fn agent_card(info: &AgentInfo, tools: &[ToolInfo]) -> AgentCard {
    let base = info.public_url.trim_end_matches('/');
    let mut skills: Vec<AgentSkill> = tools.iter().map(skill).collect();
    if skills.is_empty() {
        skills.push(AgentSkill {
            id: "chat".into(),
            name: info.name.clone(),
            description: if info.description.trim().is_empty() {
                format!("Talk to {}.", info.name)
            } else {
                info.description.clone()
            },
            tags: vec!["chat".into()],
            examples: Vec::new(),
        });
    }
    let (security_schemes, security_requirements, security) = security(&info.security);
    AgentCard {
        name: info.name.clone(),
        description: info.description.clone(),
        url: format!("{base}{RPC_PATH}"),
        version: info.version.clone(),
        protocol_version: PROTOCOL_VERSION.to_string(),
        preferred_transport: Some("JSONRPC".into()),
        supported_interfaces: interfaces(base),
        capabilities: AgentCapabilities {
            streaming: true,
            push_notifications: true,
            state_transition_history: false,
        },
        default_input_modes: MODES.iter().map(|m| m.to_string()).collect(),
        default_output_modes: MODES.iter().map(|m| m.to_string()).collect(),
        skills,
        provider: None,
        documentation_url: Some(format!("{base}/docs")),
        security_schemes,
        security_requirements,
        security,
    }
}

/// Every interface served, preferred first: v1.0 JSON-RPC, v1.0
/// HTTP+JSON, then v0.3 JSON-RPC (the same URL as v1.0's: the method
/// names tell them apart; `url` above is it too, for v0.3 clients).
fn interfaces(base: &str) -> Vec<AgentInterface> {
    let interface = |path: &str, binding: &str, version: &str| AgentInterface {
        url: format!("{base}{path}"),
        protocol_binding: binding.into(),
        protocol_version: version.into(),
        tenant: None,
    };
    vec![
        interface(RPC_PATH, v1::BINDING_JSONRPC, v1::PROTOCOL_VERSION),
        interface(
            super::v1::rest::PREFIX,
            v1::BINDING_HTTP_JSON,
            v1::PROTOCOL_VERSION,
        ),
        interface(RPC_PATH, v1::BINDING_JSONRPC, PROTOCOL_VERSION),
    ]
}

/// The schemes callers may use, by name: bearer JWTs (with the
/// provider's discovery URL) and API keys, as configured; none without
/// `auth:`.
fn schemes(security: &CardSecurity) -> BTreeMap<&'static str, SecurityScheme> {
    let mut schemes = BTreeMap::new();
    if let Some(issuer) = &security.oidc_issuer {
        schemes.insert(
            "bearer",
            SecurityScheme::HttpAuthSecurityScheme(HttpAuthSecurityScheme {
                description: Some("An access token from the OpenID Connect provider below.".into()),
                scheme: "Bearer".into(),
                bearer_format: Some("JWT".into()),
            }),
        );
        schemes.insert(
            "oidc",
            SecurityScheme::OpenIdConnectSecurityScheme(OpenIdConnectSecurityScheme {
                description: None,
                open_id_connect_url: format!(
                    "{}/.well-known/openid-configuration",
                    issuer.trim_end_matches('/')
                ),
            }),
        );
    }
    if security.api_keys {
        schemes.insert(
            "apiKey",
            SecurityScheme::ApiKeySecurityScheme(ApiKeySecurityScheme {
                description: Some("A static key; also accepted as Authorization: Bearer.".into()),
                location: "header".into(),
                name: "X-API-Key".into(),
            }),
        );
    }
    schemes
}

/// A card's `securitySchemes`, `securityRequirements` and `security`.
type Security = (
    Option<Map<String, Value>>,
    Vec<SecurityRequirement>,
    Option<Vec<Map<String, Value>>>,
);

/// The card's security fields: every scheme in both forms, and any one
/// of them but `oidc` (which only says where bearer tokens come from)
/// required, in the v1.0 and the v0.3 form.
fn security(security: &CardSecurity) -> Security {
    let schemes = schemes(security);
    if schemes.is_empty() {
        return (None, Vec::new(), None);
    }
    let required: Vec<&str> = schemes.keys().copied().filter(|n| *n != "oidc").collect();
    let requirements = required
        .iter()
        .map(|name| SecurityRequirement {
            schemes: BTreeMap::from([(name.to_string(), v1::StringList::default())]),
        })
        .collect();
    let v03 = required
        .iter()
        .map(|name| Map::from_iter([(name.to_string(), json!([]))]))
        .collect();
    let both = schemes
        .iter()
        .map(|(name, scheme)| (name.to_string(), Value::Object(scheme.both_forms())))
        .collect();
    (Some(both), requirements, Some(v03))
}

fn skill(tool: &ToolInfo) -> AgentSkill {
    let mut tags = vec![if tool.source.is_empty() {
        "mcp".to_string()
    } else {
        tool.source.clone()
    }];
    if tool.destructive_hint {
        tags.push("destructive".into());
    }
    if tool.read_only_hint {
        tags.push("read-only".into());
    }
    AgentSkill {
        id: tool.name.clone(),
        name: tool.name.clone(),
        description: if tool.description.trim().is_empty() {
            format!("The {} tool.", tool.name)
        } else {
            tool.description.clone()
        },
        tags,
        examples: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn info() -> AgentInfo {
        AgentInfo {
            name: "resource-manager".into(),
            description: "Manages resources.".into(),
            public_url: "http://agent.test:8080/".into(),
            version: "1.2.3".into(),
            web_chat_url: None,
            security: CardSecurity::default(),
        }
    }

    fn tool(name: &str, destructive: bool, source: &str) -> ToolInfo {
        ToolInfo {
            name: name.into(),
            description: format!("{name} does things"),
            input_schema: json!({"type": "object"}),
            destructive_hint: destructive,
            read_only_hint: !destructive,
            source: source.into(),
            server: "resources".into(),
        }
    }

    #[test]
    fn card_has_the_required_fields_and_one_skill_per_tool() {
        let tools = [
            tool("resources_list", false, "mcp"),
            tool("resources_add", true, "mcp"),
            tool("agent_b", true, "a2a"),
        ];
        let card = agent_card(&info(), &tools);
        assert_eq!(card.url, "http://agent.test:8080/a2a");
        assert_eq!(card.protocol_version, "0.3.0");
        assert_eq!(card.preferred_transport.as_deref(), Some("JSONRPC"));
        let interfaces: Vec<(&str, &str, &str)> = card
            .supported_interfaces
            .iter()
            .map(|i| {
                (
                    i.url.as_str(),
                    i.protocol_binding.as_str(),
                    i.protocol_version.as_str(),
                )
            })
            .collect();
        assert_eq!(
            interfaces,
            [
                ("http://agent.test:8080/a2a", "JSONRPC", "1.0"),
                ("http://agent.test:8080/a2a/v1", "HTTP+JSON", "1.0"),
                ("http://agent.test:8080/a2a", "JSONRPC", "0.3.0"),
            ]
        );
        assert!(card.capabilities.streaming);
        assert!(card.capabilities.push_notifications);
        let ids: Vec<&str> = card.skills.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["resources_list", "resources_add", "agent_b"]);
        assert_eq!(card.skills[0].tags, ["mcp", "read-only"]);
        assert_eq!(card.skills[1].tags, ["mcp", "destructive"]);
        assert_eq!(card.skills[2].tags, ["a2a", "destructive"]);
        let value = serde_json::to_value(&card).unwrap();
        for key in [
            "name",
            "description",
            "url",
            "version",
            "protocolVersion",
            "capabilities",
            "defaultInputModes",
            "defaultOutputModes",
            "skills",
        ] {
            assert!(value.get(key).is_some(), "missing {key}: {value}");
        }
    }

    #[test]
    fn an_agent_without_tools_still_has_a_skill() {
        let card = agent_card(&info(), &[]);
        assert_eq!(card.skills.len(), 1);
        assert_eq!(card.skills[0].description, "Manages resources.");
    }

    fn secured() -> AgentInfo {
        let mut secured = info();
        secured.security = CardSecurity {
            oidc_issuer: Some("https://idp.test/".into()),
            api_keys: true,
        };
        secured
    }

    #[test]
    fn the_card_declares_the_accepted_credentials_in_both_forms() {
        let open = agent_card(&info(), &[]);
        assert!(open.security_schemes.is_none() && open.security.is_none());
        assert!(open.security_requirements.is_empty());
        let card = serde_json::to_value(agent_card(&secured(), &[])).unwrap();
        let schemes = &card["securitySchemes"];
        // v0.3: OpenAPI objects with a `type`.
        assert_eq!(schemes["bearer"]["type"], "http");
        assert_eq!(schemes["bearer"]["scheme"], "Bearer");
        assert_eq!(schemes["bearer"]["bearerFormat"], "JWT");
        let discovery = "https://idp.test/.well-known/openid-configuration";
        assert_eq!(schemes["oidc"]["type"], "openIdConnect");
        assert_eq!(schemes["oidc"]["openIdConnectUrl"], discovery);
        assert_eq!(schemes["apiKey"]["in"], "header");
        assert_eq!(schemes["apiKey"]["name"], "X-API-Key");
        assert_eq!(card["security"], json!([{"apiKey": []}, {"bearer": []}]));
        // v1.0: one member per scheme, beside the v0.3 fields.
        assert_eq!(
            schemes["bearer"]["httpAuthSecurityScheme"]["scheme"],
            "Bearer"
        );
        assert_eq!(
            schemes["oidc"]["openIdConnectSecurityScheme"],
            json!({"openIdConnectUrl": discovery})
        );
        assert_eq!(
            schemes["apiKey"]["apiKeySecurityScheme"]["location"],
            "header"
        );
        assert_eq!(
            card["securityRequirements"],
            json!([{"schemes": {"apiKey": {"list": []}}}, {"schemes": {"bearer": {"list": []}}}])
        );
    }

    #[test]
    fn the_v1_card_is_the_card_without_its_v03_fields() {
        for agent in [info(), secured()] {
            let card = agent_card(&agent, &[tool("resources_add", true, "mcp")]);
            let both = serde_json::to_value(&card).unwrap();
            let v1 = v1_card(&card);
            for key in V03_ONLY {
                let declared = key != "security" || agent.security.api_keys;
                assert_eq!(both.get(key).is_some(), declared, "{key} in {both}");
                assert!(v1.get(key).is_none(), "{key} left in {v1}");
            }
            assert_eq!(
                v1["capabilities"],
                json!({"streaming": true, "pushNotifications": true})
            );
            assert_eq!(v1["supportedInterfaces"], both["supportedInterfaces"]);
            assert_eq!(v1["skills"], both["skills"]);
            assert_eq!(
                v1.get("securityRequirements"),
                both.get("securityRequirements")
            );
            // Each scheme keeps its one v1.0 member and nothing else.
            let schemes = v1["securitySchemes"]
                .as_object()
                .cloned()
                .unwrap_or_default();
            for (name, scheme) in &schemes {
                let member: SecurityScheme = serde_json::from_value(scheme.clone())
                    .unwrap_or_else(|e| panic!("{name}: {e}: {scheme}"));
                assert_eq!(
                    Value::Object(member.both_forms()),
                    both["securitySchemes"][name]
                );
            }
            assert_eq!(schemes.len(), if agent.security.api_keys { 3 } else { 0 });
        }
    }
}
