-- The one wrk script of make bench and make soak. BENCH_METHOD (GET) and BENCH_BODY (none)
-- come from the environment; at the end it prints one line:
--   RESULT <requests/s> <p99 ms> <socket errors> <non-2xx/3xx responses> <requests>
wrk.method = os.getenv("BENCH_METHOD") or "GET"
local body = os.getenv("BENCH_BODY")
if body and body ~= "" then
	wrk.body = body
	wrk.headers["Content-Type"] = "application/json"
end

function done(summary, latency, requests)
	local e = summary.errors
	io.write(string.format("RESULT %.1f %.3f %d %d %d\n",
		summary.requests / (summary.duration / 1e6), latency:percentile(99) / 1000,
		e.connect + e.read + e.write + e.timeout, e.status, summary.requests))
end
