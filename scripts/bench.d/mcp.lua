-- wrk script for scripts/bench: MCP requests spread over pre-initialized
-- sessions.
--
--   wrk -c 32 -d 10s -s scripts/bench.d/mcp.lua http://127.0.0.1:PORT/mcp \
--       -- WORKLOAD SESSIONS_FILE
--
-- WORKLOAD: ping | echo | stream (tools/call stream n=100 with a
-- progressToken; the answer is SSE, a call counts when its response ends).
-- SESSIONS_FILE: one Mcp-Session-Id per line (scripts/bench makes them with
-- curl).  Requests go round-robin over the sessions, so the connections are
-- spread evenly over them; every request has its own JSON-RPC id.
--
-- done() prints one line:
--   BENCH workload=W requests=N seconds=S rps=R p50_ms=A p99_ms=B max_ms=C
--         errors=E bad=X
-- where errors are wrk's (connect/read/write/timeout/non-2xx) and bad counts
-- 2xx answers whose body did not hold the expected result.

local threads = {}

function setup(thread)
	table.insert(threads, thread)
	thread:set("tid", #threads)
end

-- Globals, so that done() (in the setup state) can read them per thread.
workload = nil
tid = 0
bad_count = 0

local sessions, expect, path, host
local counter = 0

local bodies = {
	ping = function(id)
		return '{"jsonrpc":"2.0","id":' .. id .. ',"method":"ping"}'
	end,
	echo = function(id)
		return '{"jsonrpc":"2.0","id":' .. id ..
		    ',"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}'
	end,
	stream = function(id)
		return '{"jsonrpc":"2.0","id":' .. id ..
		    ',"method":"tools/call","params":{"name":"stream","arguments":{"n":100},' ..
		    '"_meta":{"progressToken":' .. id .. '}}}'
	end,
}
local expects = {
	ping = '"result"',
	echo = '"text":"hi"',
	stream = '"done 100"',
}

function init(args)
	workload = args[1] or "ping"
	if not bodies[workload] then
		error("unknown workload " .. workload)
	end
	expect = expects[workload]
	sessions = {}
	for line in io.lines(args[2] or "sessions.txt") do
		if line ~= "" then
			table.insert(sessions, line)
		end
	end
	if #sessions == 0 then
		error("no sessions in " .. tostring(args[2]))
	end
	path = wrk.path
	host = wrk.host
	if wrk.port and wrk.port ~= "" then
		host = host .. ":" .. wrk.port
	end
	-- Distinct id ranges per thread: ids stay unique within a session.
	counter = tid * 1000000000
end

function request()
	counter = counter + 1
	local sid = sessions[(counter % #sessions) + 1]
	local body = bodies[workload](counter)
	return "POST " .. path .. " HTTP/1.1\r\n" ..
	    "Host: " .. host .. "\r\n" ..
	    "Content-Type: application/json\r\n" ..
	    "Accept: application/json, text/event-stream\r\n" ..
	    "MCP-Protocol-Version: 2025-11-25\r\n" ..
	    "Mcp-Session-Id: " .. sid .. "\r\n" ..
	    "Content-Length: " .. #body .. "\r\n\r\n" .. body
end

function response(status, headers, body)
	if status >= 200 and status < 300 then
		if not (body and string.find(body, expect, 1, true)) then
			bad_count = bad_count + 1
		end
	end
end

function done(summary, latency, requests)
	local bad = 0
	local name = "?"
	for _, t in ipairs(threads) do
		bad = bad + (t:get("bad_count") or 0)
		name = t:get("workload") or name
	end
	local e = summary.errors
	local errors = e.connect + e.read + e.write + e.status + e.timeout
	local seconds = summary.duration / 1e6
	io.write(string.format(
	    "BENCH workload=%s requests=%d seconds=%.2f rps=%.1f p50_ms=%.3f " ..
	    "p99_ms=%.3f max_ms=%.3f errors=%d bad=%d\n",
	    name, summary.requests, seconds,
	    summary.requests / seconds, latency:percentile(50) / 1000,
	    latency:percentile(99) / 1000, latency.max / 1000, errors, bad))
end
