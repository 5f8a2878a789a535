"""The Lua scripts of the state store: claim (fence), commit (one batch, all or nothing), trim.

Every write checks the owner's epoch first, so a zombie owner (one whose partition was reassigned)
cannot change anything. `commit` is idempotent by batch number: a retry after a lost reply is a no-op.
Redis runs a script atomically, so a batch is either wholly applied or not at all.
"""

from __future__ import annotations

__all__ = ["CLAIM", "COMMIT", "OUTBOXES", "TRIM"]

OUTBOXES: tuple[str, ...] = ("results", "dead")
"""The outboxes of an operator, in the order of their keys (KEYS[4], KEYS[5])."""

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
local function bulk(cmd, key, first, n, step)
  local s = first
  local last = first + n - 1
  while s <= last do
    local e = math.min(s + step - 1, last)
    redis.call(cmd, key, unpack(ARGV, s, e))
    s = e + 1
  end
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

# KEYS: meta, rec, seq, outbox:results, outbox:dead, hll keys...
# ARGV: epoch, batch, and one MessagePack array of nine arrays: rec field/value pairs, seq pairs,
#       deleted fields, meta pairs, counter increments (pairs), results, dead letters, trim triples,
#       hll groups (ttl, count, values...). One packed argument instead of thousands: redis-py's
#       per-argument encoding cost more than the whole script.
COMMIT = (
    _COMMON
    + """
local batch = tonumber(ARGV[2])
local last = tonumber(redis.call('HGET', meta, 'batch') or '0')
if last >= batch then return 0 end
if last ~= batch - 1 then
  return redis.error_reply('BATCH expected ' .. (last + 1) .. ', got ' .. batch)
end
local d = cmsgpack.unpack(ARGV[3])
local function each(cmd, key, t, step)
  local n = #t
  local s = 1
  while s <= n do
    local e = math.min(s + step - 1, n)
    redis.call(cmd, key, unpack(t, s, e))
    s = e + 1
  end
end
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
local h = d[9]
local i = 1
local k = 6
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
