"""The Lua scripts of the state store: claim (fence), commit (one batch, all or nothing), trim, drop.

Every write checks the owner's epoch first, so a zombie owner (one whose partition was reassigned)
cannot change anything. `commit` is idempotent by batch number: a retry after a lost reply is a no-op.
Redis runs a script atomically, so a batch is either wholly applied or not at all.
"""

from __future__ import annotations

__all__ = ["CLAIM", "COMMIT", "DROP", "OUTBOXES", "TRIM"]

OUTBOXES: tuple[str, ...] = ("results", "dead")
"""The outboxes of an operator, in the order of their keys (KEYS[4], KEYS[5])."""

# The shared window tables of the query's topics follow the five operator keys: topic t (1-based)
# at KEYS[5 + t], offset -> `<references>|<record bytes>`. A record is written with its first
# reference and deleted with its last one. The count lives in the value (a hash of its own cost
# about 70 bytes per record) and is read and written in bulk (HMGET, HSET, HDEL per topic and
# batch): a Redis call per record cost 2-4 µs of Redis CPU per record.
_TABLES = """
local function each(cmd, key, t, step)
  local n = #t
  local s = 1
  while s <= n do
    local e = math.min(s + step - 1, n)
    redis.call(cmd, key, unpack(t, s, e))
    s = e + 1
  end
end
-- (count, '|' .. bytes) of each stored value of `offsets`; (0, nil) where there is none
local function stored(key, offsets)
  local counts, rests = {}, {}
  local n = #offsets
  local s = 1
  while s <= n do
    local e = math.min(s + 3999, n)
    local got = redis.call('HMGET', key, unpack(offsets, s, e))
    for i = 1, #got do
      local v = got[i]
      if v then
        local bar = string.find(v, '|', 1, true)
        counts[s + i - 1] = tonumber(string.sub(v, 1, bar - 1))
        rests[s + i - 1] = string.sub(v, bar)
      else
        counts[s + i - 1] = 0
      end
    end
    s = e + 1
  end
  return counts, rests
end
-- items: flat list of `width`-tuples (topic number, offset, ...): start index of each, by topic
local function by_topic(items, width)
  local groups = {}
  for j = 1, #items, width do
    local t = items[j]
    local g = groups[t]
    if g == nil then g = {} groups[t] = g end
    g[#g + 1] = j
  end
  return groups
end
-- adds: (topic number, offset, record bytes) triples; releases: (topic number, offset) pairs
local function table_change(items, width, delta)
  for t, starts in pairs(by_topic(items, width)) do
    local offsets = {}
    for i, j in ipairs(starts) do offsets[i] = items[j + 1] end
    local old, old_rest = stored(KEYS[5 + t], offsets)
    local count, rest = {}, {}
    for i, j in ipairs(starts) do
      local off = offsets[i]
      if count[off] == nil then
        count[off] = old[i]
        rest[off] = old_rest[i] or (width == 3 and '|' .. items[j + 2]) or nil
      end
      count[off] = count[off] + delta
    end
    local kept, gone = {}, {}
    for off, c in pairs(count) do
      if c > 0 and rest[off] ~= nil then
        kept[#kept + 1] = off
        kept[#kept + 1] = tostring(c) .. rest[off]
      else
        gone[#gone + 1] = off
      end
    end
    each('HSET', KEYS[5 + t], kept, 4000)
    each('HDEL', KEYS[5 + t], gone, 4000)
  end
end
"""

# KEYS[1] meta
CLAIM = """
local epoch = redis.call('HINCRBY', KEYS[1], 'epoch', 1)
redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'claimed_at', ARGV[2])
return epoch
"""

_COMMON = """
local meta = KEYS[1]
local epoch = redis.call('HGET', meta, 'epoch')
if epoch ~= ARGV[1] then
  return redis.error_reply('FENCED owner epoch is ' .. tostring(epoch) .. ', not ' .. ARGV[1])
end
local outbox_key = {results = KEYS[4], dead = KEYS[5]}
local function trim(name, seq, off)
  local acked = tonumber(redis.call('HGET', meta, name .. ':acked') or '0')
  local k = seq - acked
  if k > 0 then
    redis.call('LTRIM', outbox_key[name], k, -1)
    redis.call('HSET', meta, name .. ':acked', seq, name .. ':acked_offset', off)
  end
end
"""

# KEYS: meta, rec, seq, outbox:results, outbox:dead, the table of each topic, hll keys...
# ARGV: epoch, batch, one MessagePack array of eleven arrays, and the number of topics. The arrays:
#       rec field/header pairs, seq pairs, deleted fields, meta pairs, counter increments (pairs),
#       results, dead letters, trim triples, hll groups (ttl, count, values...), table additions
#       (topic, offset, bytes), table releases (topic, offset). One packed argument instead of
#       thousands: redis-py's per-argument encoding cost more than the whole script.
COMMIT = (
    _COMMON
    + _TABLES
    + """
local batch = tonumber(ARGV[2])
local last = tonumber(redis.call('HGET', meta, 'batch') or '0')
if last >= batch then return 0 end
if last ~= batch - 1 then
  return redis.error_reply('BATCH expected ' .. (last + 1) .. ', got ' .. batch)
end
local d = cmsgpack.unpack(ARGV[3])
each('HSET', KEYS[2], d[1], 4000)
each('HSET', KEYS[3], d[2], 4000)
each('HDEL', KEYS[2], d[3], 4000)
each('HDEL', KEYS[3], d[3], 4000)
each('HSET', meta, d[4], 4000)
local incr = d[5]
for j = 1, #incr, 2 do redis.call('HINCRBY', meta, incr[j], incr[j + 1]) end
if #d[6] > 0 then
  each('RPUSH', KEYS[4], d[6], 4000)
  redis.call('HINCRBY', meta, 'results:seq', #d[6])
end
if #d[7] > 0 then
  each('RPUSH', KEYS[5], d[7], 4000)
  redis.call('HINCRBY', meta, 'dead:seq', #d[7])
end
local t = d[8]
for j = 1, #t, 3 do trim(t[j], tonumber(t[j + 1]), t[j + 2]) end
table_change(d[10], 3, 1)
table_change(d[11], 2, -1)
local h = d[9]
local i = 1
local k = 6 + tonumber(ARGV[4])
while i <= #h do
  local ttl = h[i]
  local c = h[i + 1]
  if c > 0 then
    local s = i + 2
    while s < i + 2 + c do
      local e = math.min(s + 3999, i + 1 + c)
      redis.call('PFADD', KEYS[k], unpack(h, s, e))
      s = e + 1
    end
    redis.call('PEXPIRE', KEYS[k], ttl)
  end
  i = i + 2 + c
  k = k + 1
end
redis.call('HSET', meta, 'batch', batch)
return 1
"""
)

# KEYS: meta, rec, seq, outbox:results, outbox:dead; ARGV: epoch, then (name, seq, offset) triples.
TRIM = (
    _COMMON
    + """
for j = 2, #ARGV, 3 do trim(ARGV[j], tonumber(ARGV[j + 1]), ARGV[j + 2]) end
return 1
"""
)

# KEYS: meta, rec, seq, outbox:results, outbox:dead, the table of each topic;
# ARGV: the topic number (1-based) of each input, in input order. Releases every table reference of
# the query's entries on this partition and deletes its operator keys (HyperLogLogs are the
# caller's); fences any later commit of a zombie owner (its epoch is gone with `meta`).
DROP = (
    _TABLES
    + """
local fields = redis.call('HKEYS', KEYS[2])
local releases = {}
for _, f in ipairs(fields) do
  local input, offset = string.match(f, '^(%d+):(%d+)$')
  local t = tonumber(ARGV[tonumber(input) + 1])
  if t ~= nil then
    releases[#releases + 1] = t
    releases[#releases + 1] = tonumber(offset)
  end
end
table_change(releases, 2, -1)
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5])
return #fields
"""
)
