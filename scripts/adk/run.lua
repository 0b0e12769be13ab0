-- wrk: POST /run "list resources" on ADK's api_server, round-robin over
-- the sessions s0 .. s(SESSIONS-1) (run with -t1: one counter).
local sessions = tonumber(os.getenv("SESSIONS") or "500")
local n = 0
request = function()
  n = n + 1
  local body = string.format('{"app_name":"resources","user_id":"u","session_id":"s%d",'
    .. '"new_message":{"role":"user","parts":[{"text":"list resources"}]}}', n % sessions)
  return wrk.format("POST", "/run", {["Content-Type"] = "application/json"}, body)
end
