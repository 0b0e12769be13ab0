-- wrk: POST "list resources" on an ADK server's run endpoint, round-robin
-- over the sessions s0 .. s(SESSIONS-1) of user "u" in app "resources"
-- (run with -t1: one counter). Google ADK's api_server takes POST /run
-- with snake_case fields; with RUN_API=adk-rust, ADK-Rust's adk-server
-- takes POST /api/run with camelCase ones (and answers 422 to the other).
local sessions = tonumber(os.getenv("SESSIONS") or "500")
local rust = os.getenv("RUN_API") == "adk-rust"
local path = rust and "/api/run" or "/run"
local body = rust
  and '{"appName":"resources","userId":"u","sessionId":"s%d","newMessage":'
  or '{"app_name":"resources","user_id":"u","session_id":"s%d","new_message":'
local n = 0
request = function()
  n = n + 1
  local text = string.format(body .. '{"role":"user","parts":[{"text":"list resources"}]}}', n % sessions)
  return wrk.format("POST", path, {["Content-Type"] = "application/json"}, text)
end
