use serde_json::json;

use super::*;

fn card(value: serde_json::Value) -> PeerCard {
    serde_json::from_value(value).unwrap()
}

/// A card like ours: v1.0 JSON-RPC and HTTP+JSON, and v0.3 JSON-RPC.
fn both(base: &str) -> PeerCard {
    card(json!({
        "name": "b", "url": format!("{base}/a2a"), "protocolVersion": "0.3.0",
        "preferredTransport": "JSONRPC",
        "supportedInterfaces": [
            {"url": format!("{base}/a2a"), "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": format!("{base}/a2a/v1"), "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"},
            {"url": format!("{base}/a2a"), "protocolBinding": "JSONRPC", "protocolVersion": "0.3"}
        ]
    }))
}

fn pins(protocol: Option<A2aProtocol>, binding: Option<A2aBinding>) -> Pins {
    Pins { protocol, binding }
}

#[test]
fn the_highest_version_in_the_cards_order_wins() {
    let b = "http://b:8082";
    let chosen = choose(Some(&both(b)), b, Pins::default()).unwrap();
    assert_eq!(
        (chosen.version, chosen.binding),
        (Version::V1, Binding::JsonRpc)
    );
    assert_eq!(chosen.url, "http://b:8082/a2a");

    let rest_first = card(json!({"name": "r", "supportedInterfaces": [
        {"url": "http://b:8082/api", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"},
        {"url": "http://b:8082/rpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}]}));
    let chosen = choose(Some(&rest_first), b, Pins::default()).unwrap();
    assert_eq!(
        (chosen.binding, chosen.url.as_str()),
        (Binding::HttpJson, "http://b:8082/api")
    );
}

#[test]
fn pins_choose_among_what_the_card_offers() {
    let b = "http://b:8082";
    let v03 = choose(Some(&both(b)), b, pins(Some(A2aProtocol::V03), None)).unwrap();
    assert_eq!((v03.version, v03.binding), (Version::V03, Binding::JsonRpc));
    let rest = choose(Some(&both(b)), b, pins(None, Some(A2aBinding::HttpJson))).unwrap();
    assert_eq!(
        (rest.version, rest.url.as_str()),
        (Version::V1, "http://b:8082/a2a/v1")
    );
    let old = card(json!({"name": "old", "url": "http://b:8082/rpc"}));
    let error = choose(Some(&old), b, pins(Some(A2aProtocol::V1), None)).unwrap_err();
    assert!(error.contains("protocol: v1"), "{error}");
    assert!(
        error.contains("v0.3 JSON-RPC at http://b:8082/rpc"),
        "{error}"
    );
}

#[test]
fn a_v03_card_without_interfaces_is_reached_over_v03() {
    let old = card(json!({"name": "old", "url": "http://b:8082/rpc", "protocolVersion": "0.3.0"}));
    let chosen = choose(Some(&old), "http://b:8082", Pins::default()).unwrap();
    assert_eq!(
        (chosen.version, chosen.url.as_str()),
        (Version::V03, "http://b:8082/rpc")
    );
    let grpc_only = card(json!({"name": "g", "supportedInterfaces": [
        {"url": "http://b:8082", "protocolBinding": "GRPC", "protocolVersion": "1.0"}]}));
    let error = choose(Some(&grpc_only), "http://b:8082", Pins::default()).unwrap_err();
    assert!(error.contains("none"), "{error}");
}

#[test]
fn interfaces_on_another_origin_are_reached_on_the_configured_one() {
    let card = both("http://evil:9999");
    let chosen = choose(Some(&card), "http://b:8082", Pins::default()).unwrap();
    assert_eq!(chosen.url, "http://b:8082/a2a");
    let rest = choose(
        Some(&card),
        "http://b:8082",
        pins(None, Some(A2aBinding::HttpJson)),
    )
    .unwrap();
    assert_eq!(rest.url, "http://b:8082/a2a/v1");
}

#[test]
fn a_configured_endpoint_is_used_as_given() {
    let b = "http://b:8082";
    // Ours: v1.0 and v0.3 share /a2a; the card says v1.0 is served there.
    let chosen = choose(Some(&both(b)), "http://b:8082/a2a", Pins::default()).unwrap();
    assert_eq!(chosen.version, Version::V1);
    // No card: the endpoint as the entry pins it, v0.3 JSON-RPC by default.
    let bare = choose(None, "http://b:8082/rpc/", Pins::default()).unwrap();
    assert_eq!(
        (bare.version, bare.url.as_str()),
        (Version::V03, "http://b:8082/rpc")
    );
    let pinned = choose(
        None,
        "http://b:8082/api",
        pins(Some(A2aProtocol::V1), Some(A2aBinding::HttpJson)),
    )
    .unwrap();
    assert_eq!(
        (pinned.version, pinned.binding),
        (Version::V1, Binding::HttpJson)
    );
    assert!(choose(None, b, Pins::default()).is_err());
}

#[test]
fn versions_are_read_loosely() {
    assert_eq!(version_of("1.0"), Some(Version::V1));
    assert_eq!(version_of("1.0.1"), Some(Version::V1));
    assert_eq!(version_of("v1"), Some(Version::V1));
    assert_eq!(version_of(""), Some(Version::V1));
    assert_eq!(version_of("0.3.0"), Some(Version::V03));
    assert_eq!(version_of("0.2.5"), None);
    assert_eq!(version_of("2.0"), None);
}

#[test]
fn origins_and_endpoints() {
    assert_eq!(origin("http://b:8082/a2a"), "http://b:8082");
    assert_eq!(origin("http://b:8082"), "http://b:8082");
    assert!(has_path("http://b:8082/a2a"));
    assert!(!has_path("http://b:8082/"));
    assert_eq!(path_of("http://b:8082/rpc/a2a"), "/rpc/a2a");
    assert!(same_origin("http://B:8082/a2a", "http://b:8082"));
    assert!(same_origin("https://b/a2a", "https://b:443"));
    assert!(!same_origin("http://evil:8082/a2a", "http://b:8082"));
    assert!(!same_origin("http://b:9999/a2a", "http://b:8082"));
    assert!(!same_origin("https://b:8082/a2a", "http://b:8082"));
    assert!(!same_origin("not a url", "http://b:8082"));
}
