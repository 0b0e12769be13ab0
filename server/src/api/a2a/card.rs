//! The agent card (`GET /.well-known/agent-card.json`, and the older
//! `/.well-known/agent.json`): who this agent is, where its JSON-RPC
//! endpoint is, what it supports, and one skill per tool it can use.
//! The card says only what the server does: streaming and push
//! notifications yes, state transition history no. One card for both
//! protocol versions: the v0.3 fields (`url`, `protocolVersion`,
//! `preferredTransport`) name the v0.3 endpoint, `supportedInterfaces`
//! (v1.0) lists every interface with its binding and version.

use asg_shared::a2a::v1::{self, AgentInterface};
use asg_shared::a2a::{AgentCapabilities, AgentCard, AgentSkill, PROTOCOL_VERSION};
use asg_shared::rest::ToolInfo;
use axum::Json;
use axum::extract::State;
use serde_json::{Map, Value, json};

use crate::api::{AgentInfo, AppState, CardSecurity};

/// Path of the JSON-RPC endpoint, relative to the public base URL.
pub const RPC_PATH: &str = "/a2a";

/// Media types accepted in and produced by messages.
pub const MODES: [&str; 2] = ["text/plain", "application/json"];

/// `GET /.well-known/agent-card.json` and `/.well-known/agent.json`.
pub async fn agent_card_handler(State(state): State<AppState>) -> Json<AgentCard> {
    Json(agent_card(
        &state.agent,
        &crate::api::system::tool_infos(&state.engine),
    ))
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
        security_schemes: security_schemes(&info.security),
        security: security(&info.security),
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

/// `securitySchemes`: bearer JWTs (with the provider's discovery URL)
/// and API keys, as configured; none without `auth:`.
fn security_schemes(security: &CardSecurity) -> Option<Map<String, Value>> {
    let mut schemes = Map::new();
    if let Some(issuer) = &security.oidc_issuer {
        schemes.insert(
            "bearer".into(),
            json!({"type": "http", "scheme": "bearer", "bearerFormat": "JWT",
                "description": "An access token from the OpenID Connect provider below."}),
        );
        schemes.insert(
            "oidc".into(),
            json!({"type": "openIdConnect",
                "openIdConnectUrl": format!("{}/.well-known/openid-configuration", issuer.trim_end_matches('/'))}),
        );
    }
    if security.api_keys {
        schemes.insert(
            "apiKey".into(),
            json!({"type": "apiKey", "in": "header", "name": "X-API-Key",
                "description": "A static key; also accepted as Authorization: Bearer."}),
        );
    }
    (!schemes.is_empty()).then_some(schemes)
}

/// `security`: any one of the schemes.
fn security(security: &CardSecurity) -> Option<Vec<Map<String, Value>>> {
    let schemes = security_schemes(security)?;
    Some(
        schemes
            .keys()
            .filter(|name| *name != "oidc")
            .map(|name| {
                let mut requirement = Map::new();
                requirement.insert(name.clone(), json!([]));
                requirement
            })
            .collect(),
    )
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

    #[test]
    fn the_card_declares_the_accepted_credentials() {
        let open = agent_card(&info(), &[]);
        assert!(open.security_schemes.is_none() && open.security.is_none());
        let mut secured = info();
        secured.security = CardSecurity {
            oidc_issuer: Some("https://idp.test/".into()),
            api_keys: true,
        };
        let card = serde_json::to_value(agent_card(&secured, &[])).unwrap();
        assert_eq!(card["securitySchemes"]["bearer"]["scheme"], "bearer");
        assert_eq!(card["securitySchemes"]["bearer"]["bearerFormat"], "JWT");
        assert_eq!(
            card["securitySchemes"]["oidc"]["openIdConnectUrl"],
            "https://idp.test/.well-known/openid-configuration"
        );
        assert_eq!(card["securitySchemes"]["apiKey"]["name"], "X-API-Key");
        assert_eq!(card["security"], json!([{"apiKey": []}, {"bearer": []}]));
    }
}
