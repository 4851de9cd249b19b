-- wrk script for scripts/bench-nchan: publishes one small message per
-- request to Nchan, round-robin over CHANNELS channels (/pub/chN).
--
--   wrk -c 32 -d 10s -s scripts/bench.d/nchan_pub.lua http://127.0.0.1:PORT \
--       -- CHANNELS
--
-- done() prints the same BENCH line as mcp.lua (bad: a non-2xx publish).

local threads = {}

function setup(thread)
	table.insert(threads, thread)
end

bad_count = 0
local channels, counter = 16, 0

function init(args)
	channels = tonumber(args[1] or "16")
end

function request()
	counter = counter + 1
	local path = "/pub/ch" .. (counter % channels)
	return wrk.format("POST", path, { ["Content-Type"] = "application/json" },
	    '{"jsonrpc":"2.0","id":' .. counter ..
	    ',"result":{"content":[{"type":"text","text":"hi"}]}}')
end

function response(status, headers, body)
	if status < 200 or status > 299 then
		bad_count = bad_count + 1
	end
end

function done(summary, latency, requests)
	local bad = 0
	for _, t in ipairs(threads) do
		bad = bad + (t:get("bad_count") or 0)
	end
	local secs = summary.duration / 1e6
	local e = summary.errors
	io.write(string.format("BENCH workload=publish requests=%d seconds=%.2f " ..
	    "rps=%.1f p50_ms=%.2f p99_ms=%.2f max_ms=%.2f errors=%d bad=%d\n",
	    summary.requests, secs, summary.requests / secs,
	    latency:percentile(50) / 1000, latency:percentile(99) / 1000,
	    latency.max / 1000, e.connect + e.read + e.write + e.timeout + e.status,
	    bad))
end
