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
# has its records at KEYS[4 + 2t] (offset -> record bytes) and, for records held by more than one
# entry, their reference counts at KEYS[5 + 2t] (no count: one holder). A record is written with
# its first reference and deleted with its last one. Work is per topic and batch (HMGET, HSET,
# HDEL): a Redis call per record cost 2-4 µs of Redis CPU per record, and a count stored with every
# record about 70 bytes. Arguments come grouped by topic: {t, offsets, offset/bytes pairs} to add,
# {t, offsets} to release.
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
local function hmget(key, fields)
  local out = {}
  local n = #fields
  local s = 1
  while s <= n do
    local e = math.min(s + 3999, n)
    local got = redis.call('HMGET', key, unpack(fields, s, e))
    for i = 1, #got do out[s + i - 1] = got[i] end
    s = e + 1
  end
  return out
end
-- true when no offset has a stored value (`found`, from HMGET) and none comes twice
local function lone(offsets, found)
  local seen = {}
  for i, off in ipairs(offsets) do
    if found[i] or seen[off] then return false end
    seen[off] = true
  end
  return true
end
-- new references in { offsets[i] } with the bytes at pairs[2i]
local function table_add(t, offsets, pairs_)
  local records, counts = KEYS[4 + 2 * t], KEYS[5 + 2 * t]
  local present = hmget(records, offsets)
  if lone(offsets, present) then  -- each record new and once: the usual case
    each('HSET', records, pairs_, 4000)
    return
  end
  local extra, fresh, order = {}, {}, {}
  for i, off in ipairs(offsets) do
    if extra[off] == nil then
      order[#order + 1] = off
      if present[i] then extra[off] = 1 else
        extra[off] = 0
        fresh[#fresh + 1] = off
        fresh[#fresh + 1] = pairs_[2 * i]
      end
    else
      extra[off] = extra[off] + 1
    end
  end
  each('HSET', records, fresh, 4000)
  local old = hmget(counts, order)
  local set = {}
  for i, off in ipairs(order) do
    if extra[off] > 0 then
      set[#set + 1] = off
      set[#set + 1] = (tonumber(old[i]) or 1) + extra[off]
    end
  end
  each('HSET', counts, set, 4000)
end
local function table_release(t, offsets)
  local records, counts = KEYS[4 + 2 * t], KEYS[5 + 2 * t]
  local old = hmget(counts, offsets)
  if lone(offsets, old) then  -- each record's last holder, once: the usual case
    each('HDEL', records, offsets, 4000)
    return
  end
  local left, order = {}, {}
  for i, off in ipairs(offsets) do
    if left[off] == nil then
      order[#order + 1] = off
      left[off] = tonumber(old[i]) or 1
    end
    left[off] = left[off] - 1
  end
  local gone, set, unshared = {}, {}, {}
  for _, off in ipairs(order) do
    local c = left[off]
    if c <= 0 then gone[#gone + 1] = off end
    if c <= 1 then unshared[#unshared + 1] = off else
      set[#set + 1] = off
      set[#set + 1] = c
    end
  end
  each('HDEL', records, gone, 4000)
  each('HDEL', counts, unshared, 4000)
  each('HSET', counts, set, 4000)
end
"""

# KEYS[1] meta, KEYS[2] the partition's epoch counter. Epochs come from a counter that `DROP` never
# deletes, so a query deleted and registered again under its name never hands out an epoch that a
# zombie of the earlier incarnation still holds (a per-query counter would restart at 1 with `meta`).
# The `max` keeps epochs rising for state written before the counter existed. A missing counter
# starts at ARGV[3] (the wall clock in ms): a Redis that restarted empty lost the counter with the
# state, and its epochs must stay above those a zombie of before the loss still holds.
CLAIM = """
if ARGV[3] and redis.call('EXISTS', KEYS[2]) == 0 then redis.call('SET', KEYS[2], ARGV[3]) end
local epoch = redis.call('INCR', KEYS[2])
local held = tonumber(redis.call('HGET', KEYS[1], 'epoch') or '0')
if epoch <= held then
  epoch = held + 1
  redis.call('SET', KEYS[2], epoch)
end
redis.call('HSET', KEYS[1], 'epoch', epoch, 'owner', ARGV[1], 'claimed_at', ARGV[2])
return epoch
"""

# An outbox is a list of blobs, one per committed batch (`streamjoin.state.outbox`), and the meta
# field `<outbox>:sizes` holds how many records each blob has ("26000,25000"): the list holds the
# records `seq - sum(sizes) + 1 .. seq`. A list without that field was written one record per element
# (before blobs): each element counts one. Trimming to `seq` drops the blobs wholly published; a
# blob published in part stays whole (`claim` skips its records up to `acked`).
_COMMON = """
local meta = KEYS[1]
local epoch = redis.call('HGET', meta, 'epoch')
if epoch ~= ARGV[1] then
  return redis.error_reply('FENCED owner epoch is ' .. tostring(epoch) .. ', not ' .. ARGV[1])
end
local outbox_key = {results = KEYS[4], dead = KEYS[5]}
local function sizes_of(name)
  local sizes = redis.call('HGET', meta, name .. ':sizes')
  if sizes then return sizes end
  local n = redis.call('LLEN', outbox_key[name])
  if n == 0 then return '' end
  return string.sub(string.rep('1,', n), 1, -2)
end
local function trim(name, seq, off)
  local acked = tonumber(redis.call('HGET', meta, name .. ':acked') or '0')
  if seq <= acked then return end
  local sizes = {}
  for n in string.gmatch(sizes_of(name), '%d+') do sizes[#sizes + 1] = tonumber(n) end
  local first = tonumber(redis.call('HGET', meta, name .. ':seq') or '0') + 1
  for _, n in ipairs(sizes) do first = first - n end
  local drop = 0
  while drop < #sizes and first + sizes[drop + 1] - 1 <= seq do
    first = first + sizes[drop + 1]
    drop = drop + 1
  end
  if drop > 0 then redis.call('LTRIM', outbox_key[name], drop, -1) end
  redis.call('HSET', meta, name .. ':sizes', table.concat(sizes, ',', drop + 1),
    name .. ':acked', seq, name .. ':acked_offset', off)
end
local function append(name, blob, count)
  if count == 0 then return end
  local sizes = sizes_of(name)
  redis.call('RPUSH', outbox_key[name], blob)
  if sizes ~= '' then sizes = sizes .. ',' end
  redis.call('HSET', meta, name .. ':sizes', sizes .. count)
  redis.call('HINCRBY', meta, name .. ':seq', count)
end
"""

# KEYS: meta, rec, seq, outbox:results, outbox:dead, (records, counts) of each topic's table.
# ARGV: epoch, batch, one MessagePack array of ten arrays, the results blob and the dead letters
#       blob. The array: rec field/header pairs, seq pairs, deleted fields, meta pairs, counter
#       increments (pairs), the number of results and of dead letters in the blobs, trim triples,
#       table additions and table releases (grouped by topic, see `_TABLES`). One packed argument
#       instead of thousands: redis-py's per-argument encoding cost more than the whole script.
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
append('results', ARGV[4], d[6])
append('dead', ARGV[5], d[7])
local t = d[8]
for j = 1, #t, 3 do trim(t[j], tonumber(t[j + 1]), t[j + 2]) end
for _, g in ipairs(d[9]) do table_add(g[1], g[2], g[3]) end
for _, g in ipairs(d[10]) do table_release(g[1], g[2]) end
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

# KEYS: meta, rec, seq, outbox:results, outbox:dead, (records, counts) of each topic's table;
# ARGV: the topic number (1-based) of each input, in input order. Releases every table reference of
# the query's entries on this partition and deletes its operator keys; fences any later commit of a
# zombie owner (its epoch is gone with `meta`).
DROP = (
    _TABLES
    + """
local fields = redis.call('HKEYS', KEYS[2])
local releases = {}
for _, f in ipairs(fields) do
  local input, offset = string.match(f, '^(%d+):([%d.]+)$')
  local t = tonumber(ARGV[tonumber(input) + 1])
  if t ~= nil then
    if releases[t] == nil then releases[t] = {} end
    releases[t][#releases[t] + 1] = offset
  end
end
for t, offsets in pairs(releases) do table_release(t, offsets) end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5])
return #fields
"""
)
