-- wrk: every request different. A path among the 200 files of scripts/bench-traffic's server
-- (0.5–8 KiB), a query string and a header that change at every request (one of the query's
-- parameters a secret the recorder redacts), so that neither head repeats the one before it.
local counter = 0
local seed = 0

function init(args)
  seed = math.random(1, 1000000)
end

function request()
  counter = counter + 1
  local n = counter + seed
  local file = (n * 7919) % 200
  local path = string.format("/v/%03d.bin?page=%d&q=item%x&session=%08x", file, n % 997, n * 31, (n * 2654435761) % 4294967296)
  return wrk.format("GET", path, { ["X-Request-Id"] = string.format("%d-%d", seed, n), ["Accept"] = "*/*" })
end
