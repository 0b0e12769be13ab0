use asg_shared::a2a::{MessageRole, Part, TaskState};
use serde_json::json;

use super::*;

fn route(version: Version, binding: Binding, url: &str) -> Route {
    Route {
        version,
        binding,
        url: url.into(),
    }
}

fn message() -> A2aMessage {
    A2aMessage {
        role: MessageRole::User,
        parts: vec![
            Part::text("approved"),
            Part::data(
                json!({"approved": true, "approval_uuid": "u"})
                    .as_object()
                    .cloned()
                    .unwrap(),
            ),
        ],
        message_id: "m1".into(),
        task_id: Some("t1".into()),
        context_id: None,
        reference_task_ids: Vec::new(),
        metadata: None,
        kind: "message".into(),
    }
}

#[test]
fn each_route_writes_the_send_its_own_way() {
    let m = message();
    let v03 = request(
        &route(Version::V03, Binding::JsonRpc, "http://b/a2a"),
        Op::Send(&m),
    )
    .unwrap();
    let body = v03.body.unwrap();
    assert_eq!(
        (body["method"].as_str(), v03.version),
        (Some("message/send"), None)
    );
    assert_eq!(body["params"]["message"]["parts"][1]["kind"], "data");

    let v1 = request(
        &route(Version::V1, Binding::JsonRpc, "http://b/a2a"),
        Op::Send(&m),
    )
    .unwrap();
    let body = v1.body.unwrap();
    assert_eq!(
        (body["method"].as_str(), v1.version),
        (Some("SendMessage"), Some("1.0"))
    );
    let sent = &body["params"]["message"];
    assert_eq!(sent["role"], "ROLE_USER");
    assert_eq!(sent["taskId"], "t1");
    assert_eq!(
        sent["parts"][1],
        json!({"data": {"approved": true, "approval_uuid": "u"}, "mediaType": "application/json"})
    );
    assert!(sent["parts"][0].get("kind").is_none());

    let rest = request(
        &route(Version::V1, Binding::HttpJson, "http://b/a2a/v1/"),
        Op::Send(&m),
    )
    .unwrap();
    assert_eq!(
        (rest.method, rest.url.as_str()),
        (reqwest::Method::POST, "http://b/a2a/v1/message:send")
    );
    assert_eq!(rest.body.unwrap()["message"]["role"], "ROLE_USER");
}

#[test]
fn a_task_id_stays_one_path_segment() {
    let rest = route(Version::V1, Binding::HttpJson, "http://b/api");
    let get = request(&rest, Op::GetTask("a/b?c#d")).unwrap();
    assert_eq!(get.method, reqwest::Method::GET);
    assert_eq!(get.url, "http://b/api/tasks/a%2Fb%3Fc%23d?historyLength=0");
    assert!(request(&rest, Op::GetTask("..")).is_err());
    assert!(request(&rest, Op::GetTask("")).is_err());
    let rpc = request(
        &route(Version::V1, Binding::JsonRpc, "http://b/a2a"),
        Op::GetTask(".."),
    )
    .unwrap();
    assert_eq!(rpc.body.unwrap()["params"]["id"], "..");
}

#[test]
fn v1_answers_read_as_tasks_and_messages() {
    let m = message();
    let rpc = route(Version::V1, Binding::JsonRpc, "http://b/a2a");
    let task = json!({"jsonrpc": "2.0", "id": "1", "result": {"task": {"id": "t", "contextId": "c",
        "status": {"state": "TASK_STATE_COMPLETED"},
        "artifacts": [{"artifactId": "a", "parts": [{"text": "done"}]}]}}});
    let Answer::Task(task) = read(&rpc, Op::Send(&m), task.to_string().as_bytes()).unwrap() else {
        panic!("not a task");
    };
    assert_eq!(
        (task.status.state, task.artifacts_text()),
        (TaskState::Completed, "done".to_string())
    );

    let rest = route(Version::V1, Binding::HttpJson, "http://b/api");
    let reply =
        json!({"message": {"messageId": "r", "role": "ROLE_AGENT", "parts": [{"text": "hi"}]}});
    let Answer::Message(reply) = read(&rest, Op::Send(&m), reply.to_string().as_bytes()).unwrap()
    else {
        panic!("not a message");
    };
    assert_eq!(reply.text(), "hi");

    let got =
        json!({"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_INPUT_REQUIRED"}});
    let Answer::Task(got) = read(&rest, Op::GetTask("t"), got.to_string().as_bytes()).unwrap()
    else {
        panic!("not a task");
    };
    assert_eq!(got.status.state, TaskState::InputRequired);
}

#[test]
fn errors_are_read_whatever_the_binding() {
    let m = message();
    let rpc = route(Version::V1, Binding::JsonRpc, "http://b/a2a");
    let error = json!({"jsonrpc": "2.0", "id": "1", "error": {"code": -32001, "message": "Task not found"}});
    assert_eq!(
        read(&rpc, Op::Send(&m), error.to_string().as_bytes()),
        Err(WireError::Rpc {
            code: -32001,
            message: "Task not found".into()
        })
    );
    let event = json!({"jsonrpc": "2.0", "id": "1", "result": {"statusUpdate": {"taskId": "t", "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}}}});
    assert!(matches!(
        read(&rpc, Op::Send(&m), event.to_string().as_bytes()),
        Err(WireError::Invalid(_))
    ));
    assert!(matches!(
        read(&rpc, Op::Send(&m), b"<html>"),
        Err(WireError::Invalid(_))
    ));

    let detail =
        json!({"type": "about:blank", "title": "Not Found", "status": 404, "detail": "no task t"});
    assert_eq!(
        problem(404, detail.to_string().as_bytes()),
        WireError::Problem {
            status: 404,
            message: "no task t".into()
        }
    );
    assert_eq!(
        problem(502, b"bad gateway"),
        WireError::Problem {
            status: 502,
            message: "HTTP 502".into()
        }
    );
}
