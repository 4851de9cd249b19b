-- wrk script for scripts/bench-openapi: tools/call of one openapi tool
-- spread over pre-initialized sessions (the answer is SSE, committed to
-- the event log before it is sent).
--
--   wrk -c 32 -d 10s -s scripts/bench.d/openapi.lua http://127.0.0.1:PORT/mcp \
--       -- SESSIONS_FILE TOOL ARGUMENTS_JSON EXPECT
--
-- A 2xx answer counts as bad unless its body holds EXPECT (the API's
-- answer as structuredContent holds it). done() prints one line:
--   BENCH workload=openapi requests=N seconds=S rps=R p50_ms=A p99_ms=B
--         max_ms=C errors=E bad=X

local threads = {}

function setup(thread)
	table.insert(threads, thread)
	thread:set("tid", #threads)
end

tid = 0
bad_count = 0

local sessions, tool, args, expect, path, host
local counter = 0

function init(a)
	sessions = {}
	for line in io.lines(a[1]) do
		if line ~= "" then
			table.insert(sessions, line)
		end
	end
	tool = a[2]
	args = a[3]
	expect = a[4]
	path = wrk.path
	host = wrk.host .. ":" .. wrk.port
	counter = tid * 1000000000
end

function request()
	counter = counter + 1
	local sid = sessions[(counter % #sessions) + 1]
	local body = '{"jsonrpc":"2.0","id":' .. counter ..
	    ',"method":"tools/call","params":{"name":"' .. tool ..
	    '","arguments":' .. args .. '}}'
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
	for _, t in ipairs(threads) do
		bad = bad + (t:get("bad_count") or 0)
	end
	local e = summary.errors
	local errors = e.connect + e.read + e.write + e.status + e.timeout
	local seconds = summary.duration / 1e6
	io.write(string.format(
	    "BENCH workload=openapi requests=%d seconds=%.2f rps=%.1f " ..
	    "p50_ms=%.3f p99_ms=%.3f max_ms=%.3f errors=%d bad=%d\n",
	    summary.requests, seconds, summary.requests / seconds,
	    latency:percentile(50) / 1000, latency:percentile(99) / 1000,
	    latency.max / 1000, errors, bad))
end
