-- A LoadPlan for wrk (bench/harness/load-wrk.ts): the same requests as bench/harness/load.ts sends, from a C load
-- generator that costs the cores far less per request than Bun's fetch.
--   wrk -s bench/harness/wrk-plan.lua ORIGIN -- METHOD PATH BODY RANDOM_MAX EXPECT_STATUS SEQUENCE_FROM THREADS
-- PATH and BODY: "{n}" becomes a random integer from 1 to RANDOM_MAX on every request (the same one
-- in both), "{seq}" a tag unique to the request, "{next}" the next integer of a sequence from
-- SEQUENCE_FROM, each used once by one request of one of the THREADS threads (the ids of the books a
-- DELETE run deletes, one each). An empty BODY sends none. Prints one line "wrk-plan {json}" at the
-- end, "sent" being the requests made, so that the next run's sequence can start after them.

local method, path, body, random_max, expect_status, sequence_from, threads_total
-- Per thread: requests made (answered or not).
sent = 0
local thread_tag
-- Per thread: answers whose status was not the expected one, and the first of them.
mismatches = 0
first_mismatch = ''

local threads = {}
local thread_count = 0

function setup(thread)
  thread_count = thread_count + 1
  thread:set('thread_tag', tostring(thread_count))
  table.insert(threads, thread)
end

function init(args)
  method, path, body, random_max, expect_status = args[1], args[2], args[3], tonumber(args[4]), tonumber(args[5])
  sequence_from, threads_total = tonumber(args[6] or '1'), tonumber(args[7] or '1')
  thread_tag = _G.thread_tag or '1'
  math.randomseed(os.time() * 1000 + tonumber(thread_tag))
  wrk.headers['Accept'] = 'application/vnd.api+json'
  -- The service compresses when asked and the reference does not: both send the same bytes this way.
  wrk.headers['Accept-Encoding'] = 'identity'
  if body ~= '' then wrk.headers['Content-Type'] = 'application/vnd.api+json' end
end

function request()
  sent = sent + 1
  local n = tostring(math.random(random_max))
  -- Threads take turns through the sequence: thread k gets from + k - 1, then every threads_total-th.
  local next_id = string.format('%d', sequence_from + (sent - 1) * threads_total + tonumber(thread_tag) - 1)
  local this_path = path:gsub('{n}', n):gsub('{next}', next_id)
  if body == '' then return wrk.format(method, this_path) end
  local this_body = body:gsub('{n}', n):gsub('{seq}', thread_tag .. '-' .. sent):gsub('{next}', next_id)
  return wrk.format(method, this_path, nil, this_body)
end

function response(status, headers, answer)
  if status ~= expect_status then
    mismatches = mismatches + 1
    if first_mismatch == '' then first_mismatch = status .. ' ' .. string.sub(answer or '', 1, 300) end
  end
end

local function quoted(text)
  return '"' .. text:gsub('[%c"\\]', function(c) return string.format('\\u%04x', string.byte(c)) end) .. '"'
end

function done(summary, latency, requests)
  local wrong, first, made = 0, '', 0
  for _, thread in ipairs(threads) do
    wrong = wrong + (thread:get('mismatches') or 0)
    made = made + (thread:get('sent') or 0)
    local its = thread:get('first_mismatch') or ''
    if first == '' then first = its end
  end
  local e = summary.errors
  -- The latency histogram as [microseconds, count] pairs: rounds are pooled before percentiles.
  local pairs_text = {}
  for i = 1, #latency do
    local value, count = latency(i)
    pairs_text[#pairs_text + 1] = string.format('[%d,%d]', value, count)
  end
  io.write(string.format(
    'wrk-plan {"requests":%d,"sent":%d,"durationUs":%d,"socketErrors":%d,"timeouts":%d,"mismatches":%d,"firstMismatch":%s,"latencyUs":[%s]}\n',
    summary.requests, made, summary.duration, e.connect + e.read + e.write, e.timeout, wrong, quoted(first),
    table.concat(pairs_text, ',')))
end
