-- wrk script for bench/store/run_store.sh: the events of
-- bench/http/wrk_cloudevents.lua (1 KiB structured CloudEvents, unique ids
-- per thread), with wrk's threads spread over several bridges: PORTS
-- ("8001,8002") gives one 127.0.0.1 port per bridge, thread i goes to
-- PORTS[i mod n] (wrk -t must be a multiple of the number of bridges).
dofile(os.getenv("CEB_WRK_EVENTS"))
local base_setup = setup
local ports = {}
for p in string.gmatch(os.getenv("PORTS") or "", "%d+") do
  table.insert(ports, p)
end
local n = 0

function setup(thread)
  base_setup(thread)
  if #ports > 0 then
    thread.addr = wrk.lookup("127.0.0.1", ports[(n % #ports) + 1])[1]
    n = n + 1
  end
end
