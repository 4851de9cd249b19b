-- wrk script for scripts/bench-openapi: the API's own request, sent
-- straight to it (wrk's GET of the URL); prints the same BENCH line as
-- openapi.lua. A 2xx answer without EXPECT in its body counts as bad.
--
--   wrk -c 32 -d 10s -s scripts/bench.d/direct.lua URL -- EXPECT

bad_count = 0
local expect
local threads = {}

function setup(thread)
	table.insert(threads, thread)
end

function init(a)
	expect = a[1]
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
	    "BENCH workload=direct requests=%d seconds=%.2f rps=%.1f " ..
	    "p50_ms=%.3f p99_ms=%.3f max_ms=%.3f errors=%d bad=%d\n",
	    summary.requests, seconds, summary.requests / seconds,
	    latency:percentile(50) / 1000, latency:percentile(99) / 1000,
	    latency.max / 1000, errors, bad))
end
