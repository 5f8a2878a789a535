"""Deal the back-fill's groups evenly over Spark tasks: Spark's hash of a long. No Spark here."""

from __future__ import annotations

__all__ = ["spark_hash_long", "task_keys"]


def task_keys(tasks: int) -> list[int]:
    """Return, for each task `t`, the smallest long that Spark's hash partitioning sends to task `t`.

    Group `g` is given the key of task `g mod tasks`, so groups are dealt round-robin over the tasks
    instead of colliding under the hash (4 groups hashed into 4 partitions rarely fill all 4).

    >>> task_keys(4)
    [2, 0, 14, 3]
    """
    found: dict[int, int] = {}
    candidate = 0
    while len(found) < tasks:
        found.setdefault(spark_hash_long(candidate) % tasks, candidate)
        candidate += 1
    return [found[t] for t in range(tasks)]


def spark_hash_long(value: int, seed: int = 42) -> int:
    """Return Spark's `hash()` of a long: Murmur3 x86 32-bit, seed 42 (as `HashPartitioning` uses).

    Defined by `org.apache.spark.unsafe.hash.Murmur3_x86_32.hashLong` (github.com/apache/spark,
    common/unsafe/src/main/java/org/apache/spark/unsafe/hash/Murmur3_x86_32.java): Austin
    Appleby's MurmurHash3_x86_32 (https://github.com/aappleby/smhasher, src/MurmurHash3.cpp) of the
    long's 8 little-endian bytes, as a signed int. Checked against the values of Spark's
    `Murmur3_x86_32Suite.testKnownLongInputs` (tests/backfill/test_spark_hash.py).
    """

    def mix_k1(k1: int) -> int:
        k1 = (k1 * 0xCC9E2D51) & 0xFFFFFFFF
        k1 = ((k1 << 15) | (k1 >> 17)) & 0xFFFFFFFF
        return (k1 * 0x1B873593) & 0xFFFFFFFF

    def mix_h1(h1: int, k1: int) -> int:
        h1 ^= k1
        h1 = ((h1 << 13) | (h1 >> 19)) & 0xFFFFFFFF
        return (h1 * 5 + 0xE6546B64) & 0xFFFFFFFF

    unsigned = value & 0xFFFFFFFFFFFFFFFF
    h1 = mix_h1(seed & 0xFFFFFFFF, mix_k1(unsigned & 0xFFFFFFFF))
    h1 = mix_h1(h1, mix_k1(unsigned >> 32))
    h1 ^= 8
    h1 ^= h1 >> 16
    h1 = (h1 * 0x85EBCA6B) & 0xFFFFFFFF
    h1 ^= h1 >> 13
    h1 = (h1 * 0xC2B2AE35) & 0xFFFFFFFF
    h1 ^= h1 >> 16
    return h1 - (1 << 32) if h1 >= 1 << 31 else h1
