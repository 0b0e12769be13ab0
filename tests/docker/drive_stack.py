#!/usr/bin/env python3
"""Drives the compose stack end to end over HTTP (scripts/test-docker.sh).

    drive_stack.py before-restart STATE_FILE
    drive_stack.py after-restart STATE_FILE

Ports come from the environment the test exported (ASG_WEB_PORT,
ASG_AGENT_A_PORT, ASG_AGENT_C_PORT, ...). Every request to the agents
goes through the web server's /api proxy, as the browser chat's do,
except where a check is about one sub-agent (agent C's own approvals).

before-restart: the chat's page and bundle are served; a destructive
request on agent A ("add resource ...") becomes a proxy approval from
agent B, is approved through the chat's API, runs once on mcp-resources
(listed once; a second decision is refused); a file write on agent C
waits for approval, on A (proxy) and on C itself. The ids go to
STATE_FILE.

after-restart (after `docker compose down` and `up`, volumes kept): the
first conversation and its decision are still there, the write is still
waiting, and approving it now writes the file once.
"""

import json
import os
import sys
import urllib.error
import urllib.request

RESOURCE = "docker-web-1"
NOTE = "hello from the docker stack"


def port(name):
    return int(os.environ[f"ASG_{name}_PORT"])


def request(method, url, body=None):
    """(status, parsed JSON or text) of one request; never raises on 4xx/5xx."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method)
    if data is not None:
        req.add_header("content-type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=60) as answer:
            status, raw = answer.status, answer.read()
    except urllib.error.HTTPError as error:
        status, raw = error.code, error.read()
    text = raw.decode("utf-8", "replace")
    try:
        return status, json.loads(text)
    except ValueError:
        return status, text


def check(condition, what, detail=None):
    if not condition:
        extra = "" if detail is None else f"\n    got: {json.dumps(detail)[:2000]}"
        sys.exit(f"FAILED: {what}{extra}")
    print(f"  ok: {what}")


def api(path):
    return f"http://127.0.0.1:{port('WEB')}/api{path}"


def send(message, conversation=None):
    path = "/conversations" if conversation is None else f"/conversations/{conversation}/messages"
    status, answer = request("POST", api(path), {"message": message})
    expected = 201 if conversation is None else 200
    check(status == expected, f"POST {path} {message!r} answers {expected}", answer)
    return answer


def pending_uuids(url):
    status, listed = request("GET", url)
    check(status == 200, f"GET {url} answers 200", listed)
    return [approval["uuid"] for approval in listed["approvals"]]


def count_resource(answer):
    """How many resources named RESOURCE a "list resources" answer shows."""
    return json.dumps(answer["result"]).count(f'\\"name\\": \\"{RESOURCE}\\"') + json.dumps(
        answer["result"]
    ).count(f'\\"name\\":\\"{RESOURCE}\\"')


def chat_is_served():
    base = f"http://127.0.0.1:{port('WEB')}"
    status, page = request("GET", base + "/")
    check(status == 200 and ".wasm" in page, "the web chat's page is served and names its wasm bundle")
    status, index = request("GET", f"http://127.0.0.1:{port('AGENT_A')}/")
    check(status == 200 and f'href="{base}/"' in index, "agent A's index page links to the web chat")
    status, health = request("GET", api("/health"))
    check(status == 200 and health.get("status") == "ok", "agent A's /health through the web's /api proxy", health)


def destructive_request_via_proxy_approval():
    answer = send(f"add resource {RESOURCE} with value 7")
    result = answer["result"]
    check(result.get("waiting_approval") is True, "adding a resource on agent A waits for approval", answer)
    approval = result["approval"]
    check(
        approval.get("remote_agent_name") == "resource_agent" and approval.get("remote_approval_uuid"),
        "the approval is agent B's, as a proxy approval on A",
        approval,
    )
    at_b = f"http://127.0.0.1:{port('AGENT_B')}/approvals"
    check(approval["remote_approval_uuid"] in pending_uuids(at_b), "agent B holds the call it proxies")
    uuid = approval["uuid"]
    check(uuid in pending_uuids(api("/approvals")), "the proxy approval is listed on A")
    status, decided = request("POST", api(f"/approvals/{uuid}"), {"approved": True})
    check(status == 200 and not decided["result"].get("waiting_approval"), "approving it through the chat's API finishes the turn", decided)
    check(RESOURCE in json.dumps(decided["result"]), "the answer reports the added resource", decided["result"])
    status, again = request("POST", api(f"/approvals/{uuid}"), {"approved": True})
    check(status == 409, "a second decision on the same approval is refused (409)", again)
    listed = send("list resources")
    check(count_resource(listed) == 1, f"mcp-resources holds {RESOURCE} exactly once", listed["result"])
    conversation_id = answer["conversation"]["id"]
    check(approved_in(conversation_id, uuid), "A's conversation records the decision")
    return conversation_id, uuid


def approved_in(conversation_id, uuid):
    """Whether the conversation's history has `uuid` approved."""
    status, shown = request("GET", api(f"/conversations/{conversation_id}"))
    check(status == 200, f"GET /conversations/{conversation_id} answers 200", shown)
    conversation = shown["conversation"]
    decisions = conversation.get("decisions", [])
    found = any(d["approval_uuid"] == uuid and d["approved"] for d in decisions)
    if not found:
        print(f"    decisions: {json.dumps(decisions)}; status {conversation.get('status')}")
    return found


def write_waits_for_approval():
    answer = send(f"write file notes.txt with content {NOTE}")
    result = answer["result"]
    check(result.get("waiting_approval") is True, "a file write on agent A waits for approval", answer)
    uuid = result["approval"]["uuid"]
    at_c = f"http://127.0.0.1:{port('AGENT_C')}/approvals"
    status, listed = request("GET", at_c)
    check(
        status == 200 and any(a["tool_name"] == "write_file" for a in listed["approvals"]),
        "agent C holds the write_file call, waiting for approval",
        listed,
    )
    return answer["conversation"]["id"], uuid


def before_restart(state_file):
    chat_is_served()
    added_in, added_uuid = destructive_request_via_proxy_approval()
    write_in, write_uuid = write_waits_for_approval()
    with open(state_file, "w") as out:
        json.dump(
            {"added_in": added_in, "added_uuid": added_uuid, "write_in": write_in, "write_uuid": write_uuid},
            out,
        )


def after_restart(state_file):
    with open(state_file) as saved:
        state = json.load(saved)
    chat_is_served()
    check(approved_in(state["added_in"], state["added_uuid"]), "its approval history (approved) survived the restart")
    check(state["write_uuid"] in pending_uuids(api("/approvals")), "the file write still waits for approval")
    status, decided = request("POST", api(f"/approvals/{state['write_uuid']}"), {"approved": True})
    check(status == 200 and not decided["result"].get("waiting_approval"), "approving the write after the restart finishes it", decided)
    status, again = request("POST", api(f"/approvals/{state['write_uuid']}"), {"approved": True})
    check(status == 409, "the write cannot be approved twice (409)", again)
    read = send("read file notes.txt")
    check(NOTE in json.dumps(read["result"]), "agent C wrote the file with the stored content", read["result"])
    listed = send("list resources")
    check(count_resource(listed) == 1, f"{RESOURCE} is still there once (the data volume was kept)", listed["result"])


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("before-restart", "after-restart"):
        sys.exit(__doc__)
    {"before-restart": before_restart, "after-restart": after_restart}[sys.argv[1]](sys.argv[2])


if __name__ == "__main__":
    main()
