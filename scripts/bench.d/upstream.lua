-- wrk script for scripts/bench-upstream: tools/call of server-everything's
-- echo, spread over pre-initialized sessions, against whatever fronts it
-- (mcpd with an upstream block, supergateway).
--
--   wrk -c 32 -d 10s -s scripts/bench.d/upstream.lua http://127.0.0.1:PORT/mcp \
--       -- SESSIONS_FILE
--
-- SESSIONS_FILE: one Mcp-Session-Id per line. Requests go round-robin over
-- the sessions; every request has its own JSON-RPC id. A 2xx answer
-- without "Echo: hi" in its body counts as bad.
--
-- done() prints one line:
--   BENCH requests=N seconds=S rps=R p50_ms=A p99_ms=B max_ms=C errors=E bad=X

local threads = {}

function setup(thread)
	table.insert(threads, thread)
	thread:set("tid", #threads)
end

tid = 0
bad_count = 0

local sessions, path, host
local counter = 0

function init(args)
	sessions = {}
	for line in io.lines(args[1]) do
		if line ~= "" then
			table.insert(sessions, line)
		end
	end
	if #sessions == 0 then
		error("no sessions in " .. tostring(args[1]))
	end
	path = wrk.path
	host = wrk.host
	if wrk.port and wrk.port ~= "" then
		host = host .. ":" .. wrk.port
	end
	counter = tid * 1000000000
end

function request()
	counter = counter + 1
	local sid = sessions[(counter % #sessions) + 1]
	local body = '{"jsonrpc":"2.0","id":' .. counter ..
	    ',"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}'
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
		if not (body and string.find(body, "Echo: hi", 1, true)) then
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
	    "BENCH requests=%d seconds=%.2f rps=%.1f p50_ms=%.3f " ..
	    "p99_ms=%.3f max_ms=%.3f errors=%d bad=%d\n",
	    summary.requests, seconds, summary.requests / seconds,
	    latency:percentile(50) / 1000, latency:percentile(99) / 1000,
	    latency.max / 1000, errors, bad))
end
