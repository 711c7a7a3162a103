-- wrk script: POSTs structured CloudEvents (application/cloudevents+json) of
-- about 1 KiB, each with a unique id (thread number + counter), to /events.
-- The subject (the routes' ordering key in the benches) is one of 1000,
-- drawn at random per event: with counter % 1000, wrk's threads walked the
-- same keys in step, so many events met one of their own key from the
-- other thread in flight (half of a PostgreSQL settle sample handed its
-- key on to a queued row), which clients sending independently do not do.
-- Used by bench/http/run_wrk.sh; SIZE in the environment sets the body size.
local counter = 0
-- tid is a global: setup() runs in wrk's main Lua state and thread:set()
-- gives each thread's own state its number as a global. A `local tid`
-- here shadowed it (every thread used 0, and with wrk -t2 half of all
-- events repeated another's id and were answered as duplicates).
tid = 0
local threads = {}
local size = tonumber(os.getenv("SIZE") or "1024")
local pad
local t0

function setup(thread)
  thread:set("tid", #threads + 1)
  table.insert(threads, thread)
end

function init(args)
  local fixed = 330 -- the JSON around the pad, ids included (approximately)
  t0 = os.time()
  math.randomseed(t0 * 131 + tid)
  pad = string.rep("x", math.max(0, size - fixed))
  wrk.method = "POST"
  wrk.path = "/events"
  wrk.headers["Content-Type"] = "application/cloudevents+json"
end

function request()
  counter = counter + 1
  local body = string.format(
    '{"specversion":"1.0","id":"wrk-%d-%d-%d","source":'
      .. '"urn:nld:oin:00000001234567890000:systeem:bench",'
      .. '"type":"nl.edu.bench","subject":"k%d","time":"2026-11-22T18:00:00Z",'
      .. '"datacontenttype":"application/json","data":{"pad":"%s"}}',
    t0, tid, counter, math.random(0, 999), pad)
  return wrk.format(nil, nil, nil, body)
end
