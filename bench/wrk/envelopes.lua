-- wrk script for the faultline benchmark: cycles through the envelope templates
-- written by bench/lib/payloads.mjs and fills their slots per request exactly as
-- createFiller() does there (fresh event_id per event, fingerprint index, release,
-- user, time). Requests are sent the way @sentry/node sends them: POST with the
-- DSN key in the query string, no Content-Type, a chunked body.
--
-- Arguments (after `--`): templates-file path prefix12 fingerprints spread-seconds session-every
-- prefix12 is 12 hex characters; each thread appends its own 4 hex digits.

local threads = {}
local thread_count = 0

function setup(thread)
  thread:set("tid", thread_count)
  thread_count = thread_count + 1
  table.insert(threads, thread)
end

local events, sessions, types, releases = {}, {}, {}, {}
local path, prefix, fingerprints, spread, session_every
-- Globals (not locals) so done() can read them with thread:get().
n, ec, sc, ec_start = 0, 0, 0, 0
local host_header

local function split_list(s)
  local out = {}
  for item in string.gmatch(s, "[^,]+") do table.insert(out, item) end
  return out
end

-- Splits a template into literal pieces (odd indexes) and slot letters (even indexes).
local function compile(t)
  local pieces = {}
  local pos = 1
  while true do
    local s, e, letter = string.find(t, "@@(%u)@@", pos)
    if not s then break end
    table.insert(pieces, string.sub(t, pos, s - 1))
    table.insert(pieces, letter)
    pos = e + 1
  end
  table.insert(pieces, string.sub(t, pos))
  return pieces
end

function init(args)
  local file = args[1]
  path = args[2]
  prefix = args[3] .. string.format("%04x", tid or 0)
  fingerprints = tonumber(args[4])
  spread = tonumber(args[5])
  session_every = tonumber(args[6])
  local f = assert(io.open(file, "rb"))
  local data = f:read("*a")
  f:close()
  local pos = 1
  local function line()
    local e = string.find(data, "\n", pos, true)
    local s = string.sub(data, pos, e - 1)
    pos = e + 1
    return s
  end
  assert(line() == "faultline-bench-templates 1", "not a template file")
  types = split_list(string.sub(line(), 7))
  releases = split_list(string.sub(line(), 10))
  while pos <= #data do
    local header = line()
    local kind, len = string.match(header, "^(%a+) (%d+)$")
    len = tonumber(len)
    local body = string.sub(data, pos, pos + len - 1)
    pos = pos + len + 1
    if kind == "event" then table.insert(events, compile(body)) else table.insert(sessions, compile(body)) end
  end
  -- Threads start at different points of the cycle so they do not send identical sequences.
  ec = (tid or 0) * 7001
  ec_start = ec
  host_header = wrk.host .. ":" .. wrk.port
end

-- SDKs send random UUIDs; a counter's ids would all sort together. The counter's low 32
-- bits go through a bijective multiply by 0x9e3779b1 (mod 2^32), done in two halves so
-- it stays exact in doubles, as createFiller does (bench/lib/payloads.mjs).
local function scatter(x)
  return (x * 0x79b1 + ((x * 0x9e37) % 65536) * 65536) % 4294967296
end

local function id(k)
  return prefix .. string.format("%08x%08x", scatter(k % 4294967296), math.floor(k / 4294967296))
end

local function fill(pieces, slots)
  local buf = {}
  local count = #pieces
  for i = 1, count, 2 do
    buf[#buf + 1] = pieces[i]
    if i + 1 <= count then buf[#buf + 1] = slots[pieces[i + 1]] end
  end
  return table.concat(buf)
end

local slots = {}

function request()
  n = n + 1
  local body
  if session_every > 0 and n % session_every == 0 then
    sc = sc + 1
    slots.S = id(n)
    slots.U = tostring((sc * 13) % 5000)
    slots.R = releases[math.floor(sc / 7) % #releases + 1]
    body = fill(sessions[sc % #sessions + 1], slots)
  else
    ec = ec + 1
    local f = (ec + math.floor(ec / 20) * 3) % fingerprints
    local now = os.time()
    slots.E = id(n)
    slots.F = tostring(f)
    slots.Y = types[f % #types + 1]
    slots.R = releases[math.floor(ec / 7) % #releases + 1]
    slots.U = tostring((ec * 13) % 5000)
    if spread > 0 then slots.T = tostring(now - (ec * 7919) % spread) else slots.T = tostring(now) end
    body = fill(events[ec % #events + 1], slots)
  end
  return "POST " .. path .. " HTTP/1.1\r\n" ..
    "user-agent: sentry.javascript.node/11.12.0\r\n" ..
    "Host: " .. host_header .. "\r\n" ..
    "Connection: keep-alive\r\n" ..
    "Transfer-Encoding: chunked\r\n\r\n" ..
    string.format("%x", #body) .. "\r\n" .. body .. "\r\n0\r\n\r\n"
end

function done(summary, latency, requests)
  local sent_events, sent_sessions = 0, 0
  for _, t in ipairs(threads) do
    sent_events = sent_events + (t:get("ec") - t:get("ec_start"))
    sent_sessions = sent_sessions + t:get("sc")
  end
  local e = summary.errors
  io.write(string.format(
    'WRKJSON {"duration_us":%d,"requests":%d,"bytes":%d,"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},' ..
    '"issued_events":%d,"issued_sessions":%d,' ..
    '"latency_us":{"p50":%d,"p90":%d,"p95":%d,"p99":%d,"max":%d,"mean":%.1f}}\n',
    summary.duration, summary.requests, summary.bytes, e.connect, e.read, e.write, e.status, e.timeout,
    sent_events, sent_sessions,
    latency:percentile(50), latency:percentile(90), latency:percentile(95), latency:percentile(99), latency.max, latency.mean))
end
