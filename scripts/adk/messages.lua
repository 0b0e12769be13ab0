-- wrk: POST /conversations/{id}/messages "list resources" on the agent,
-- round-robin over the conversation ids in the file $IDS (run with -t1).
local ids = {}
for line in io.lines(os.getenv("IDS")) do ids[#ids + 1] = line end
local n = 0
request = function()
  n = n + 1
  local path = "/conversations/" .. ids[(n % #ids) + 1] .. "/messages"
  return wrk.format("POST", path, {["Content-Type"] = "application/json"}, '{"message":"list resources"}')
end
