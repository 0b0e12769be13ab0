//! Our A2A client against sub-agents built on the official SDKs' server
//! side in native v1.0 mode (`asg_tests::a2a::AskingAgent`: the JS
//! `@a2a-js/sdk` and the Python `a2a-sdk`). The delegator agent hands a
//! message to the SDK agent, which asks for approval before
//! `delete_file`; that comes back as a proxy approval, a person decides it
//! on our agent, and the decision is forwarded as a v1.0 continuation:
//! approved, the SDK agent executes once; rejected, never. Each binding
//! is pinned once (`binding: jsonrpc`, `binding: http_json`), and with no
//! pin the card's first interface is used. The entry's service token
//! (`bearer_env`) reaches the SDK agent.
//!
//! Without the SDKs the tests skip on a developer machine and fail in CI.

use asg_tests::a2a::{
    AskingAgent, Binding, delegator_with, js_sdk_version, sdk_present, sdk_version,
};
use asg_tests::asking_rust::{AskerBinding, RustAskingAgent};
use asg_tests::{approval_uuid, response_text};
use serde_json::json;

/// An SDK-built asking sub-agent, whichever SDK: where it is and its log
/// (`auth …`, `executed …`, `rejected …` lines).
trait Sub {
    fn url(&self) -> &str;
    fn lines(&self) -> Vec<String>;
    fn output(&self) -> String;

    fn starting(&self, prefix: &str) -> Vec<String> {
        self.lines()
            .into_iter()
            .filter_map(|l| l.strip_prefix(prefix).map(str::to_string))
            .collect()
    }
    fn executions(&self) -> Vec<String> {
        self.starting("executed ")
    }
    fn rejections(&self) -> Vec<String> {
        self.starting("rejected ")
    }
    fn auth_headers(&self) -> Vec<String> {
        self.starting("auth ")
    }
}

impl Sub for AskingAgent {
    fn url(&self) -> &str {
        &self.url
    }
    fn lines(&self) -> Vec<String> {
        self.log_lines()
    }
    fn output(&self) -> String {
        AskingAgent::output(self)
    }
}

impl Sub for RustAskingAgent {
    fn url(&self) -> &str {
        &self.url
    }
    fn lines(&self) -> Vec<String> {
        self.log_lines()
    }
    fn output(&self) -> String {
        RustAskingAgent::output(self)
    }
}

const TOKEN: &str = "svc-token-for-the-sdk-agent";

/// Delegates `path` to `sub` (entry pinned by `pin`), approves or rejects
/// the proxy approval on our agent, and checks what the SDK agent did.
async fn delegate_and_decide(sub: &impl Sub, pin: &str, approve: bool, path: &str) {
    let entry = format!("{pin}    bearer_env: SUB_TOKEN\n");
    let (_dir, agent) = delegator_with(sub.url(), &entry, &[("SUB_TOKEN", TOKEN)]).await;
    let (status, asked) = agent.say_new(path).await;
    assert_eq!(status, 201, "{asked}");
    assert_eq!(
        asked["result"]["waiting_approval"],
        true,
        "{asked}\n{}",
        sub.output()
    );
    let approval = &asked["result"]["approval"];
    assert_eq!(approval["tool_name"], "delete_file", "{approval}");
    assert_eq!(approval["tool_args"], json!({"path": path}));
    assert_eq!(approval["remote_agent_name"], "downstream");
    assert!(sub.executions().is_empty(), "executed before the decision");

    let (status, decided) = agent
        .decide(&approval_uuid(&asked), json!({"approved": approve}))
        .await;
    assert_eq!(status, 200, "{decided}\n{}", sub.output());
    let reply = response_text(&decided);
    if approve {
        assert!(reply.contains(&format!("deleted {path}")), "{reply}");
        assert_eq!(sub.executions(), [format!("delete_file {path}")]);
        assert!(sub.rejections().is_empty());
    } else {
        assert!(
            reply.contains("Rejected by the user") || reply.contains("Cancelled"),
            "{reply}"
        );
        assert!(sub.executions().is_empty(), "executed after a rejection");
        assert_eq!(sub.rejections(), [format!("delete_file {path}")]);
    }
    let bearer = format!("Bearer {TOKEN}");
    let auths = sub.auth_headers();
    assert!(
        !auths.is_empty() && auths.iter().all(|a| *a == bearer || a == "-"),
        "{auths:?}"
    );
    assert!(
        auths.contains(&bearer),
        "the token never arrived: {auths:?}"
    );
    let (_, pending) = agent.get("/approvals").await;
    assert_eq!(pending["approvals"], json!([]));
}

#[tokio::test]
async fn our_client_delegates_to_a_js_sdk_agent_over_each_v1_binding() {
    if !sdk_present("our_client_delegates_to_a_js_sdk_agent", js_sdk_version()) {
        return;
    }
    let rpc = AskingAgent::start_js(Binding::JsonRpc);
    delegate_and_decide(&rpc, "    binding: jsonrpc\n", true, "/tmp/js-rpc.txt").await;
    let rest = AskingAgent::start_js(Binding::HttpJson);
    delegate_and_decide(&rest, "    binding: http_json\n", true, "/tmp/js-rest.txt").await;
    let both = AskingAgent::start_js(Binding::Both);
    delegate_and_decide(&both, "    protocol: v1\n", false, "/tmp/js-kept.txt").await;
}

#[tokio::test]
async fn our_client_delegates_to_a_python_sdk_agent_over_each_v1_binding() {
    if !sdk_present(
        "our_client_delegates_to_a_python_sdk_agent",
        sdk_version().await,
    ) {
        return;
    }
    let rpc = AskingAgent::start_python(Binding::JsonRpc);
    delegate_and_decide(&rpc, "    binding: jsonrpc\n", true, "/tmp/py-rpc.txt").await;
    let rest = AskingAgent::start_python(Binding::HttpJson);
    delegate_and_decide(&rest, "    binding: http_json\n", false, "/tmp/py-kept.txt").await;
    let both = AskingAgent::start_python(Binding::Both);
    delegate_and_decide(&both, "", true, "/tmp/py-default.txt").await;
}

#[tokio::test]
async fn our_client_delegates_to_a_rust_sdk_agent_over_each_v1_binding() {
    let Some(rpc) = RustAskingAgent::try_start(AskerBinding::JsonRpc).await else {
        return;
    };
    delegate_and_decide(&rpc, "    binding: jsonrpc\n", true, "/tmp/rs-rpc.txt").await;
    let rest = RustAskingAgent::start(AskerBinding::HttpJson).await;
    delegate_and_decide(&rest, "    binding: http_json\n", false, "/tmp/rs-kept.txt").await;
    let both = RustAskingAgent::start(AskerBinding::Both).await;
    delegate_and_decide(&both, "", true, "/tmp/rs-default.txt").await;
}
