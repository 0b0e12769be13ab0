-- wrk: POST /api/run "list resources" on ADK-Rust's adk-server, round-robin
-- over the sessions s0 .. s(SESSIONS-1) of user "u" in app "resources"
-- (create them first: sessions.sh). Run with -t1: one counter.
-- adk-server's /api/run body is camelCase (appName, userId, sessionId,
-- newMessage); it answers the turn's events as one JSON array.
local sessions = tonumber(os.getenv("SESSIONS") or "500")
local n = 0
request = function()
  n = n + 1
  local body = string.format('{"appName":"resources","userId":"u","sessionId":"s%d",'
    .. '"newMessage":{"role":"user","parts":[{"text":"list resources"}]}}', n % sessions)
  return wrk.format("POST", "/api/run", {["Content-Type"] = "application/json"}, body)
end
