/* The visited table's loops (checker/exhaustive/visited.py), compiled by model/cbuild.py.

   A shard is an open-addressing table probed linearly from the slot the 32 bits below a fingerprint's
   8 shard bits pick. Narrow slots are one uint64 (lane 1; 0 marks an empty slot, so fingerprint 0 is
   a flag); wide slots are three uint32: lane 1's low and high halves and lane 2's high half (all zero
   marks an empty slot, so that key is the flag). Keys are inserted in the order given: the first of
   equal keys is the one marked fresh. */
#include <stdint.h>
#include <string.h>

typedef int64_t i64;
typedef uint64_t u64;
typedef uint32_t u32;

#define SHARD_SHIFT 56
#define SLOT_SHIFT 24
#define AHEAD 16            /* keys ahead whose home slot is prefetched */

static inline u64 home(u64 fp, u64 cap) { return ((fp >> SLOT_SHIFT) & 0xFFFFFFFFull) * cap >> 32; }

static inline i64 key_at(const u32 *perm, i64 i) { return perm ? (i64)perm[i] : i; }

#if defined(__GNUC__)
#define PREFETCH(p) __builtin_prefetch(p, 1, 0)
#else
#define PREFETCH(p) ((void)0)
#endif

/* A stable partition of n keys by shard: perm lists them shard by shard, shard s at bounds[s]..bounds[s+1],
   and s1 (and s2, lane 2's high halves, when h2 is given) hold their lanes in that order, so the inserts read
   them in sequence. */
void isr_partition(const u64 *h1, const u64 *h2, i64 n, u32 *perm, u64 *s1, u32 *s2, i64 *bounds) {
    i64 start[257] = {0};
    for (i64 i = 0; i < n; i++) start[(h1[i] >> SHARD_SHIFT) + 1]++;
    for (int s = 0; s < 256; s++) start[s + 1] += start[s];
    for (int s = 0; s <= 256; s++) bounds[s] = start[s];
    for (i64 i = 0; i < n; i++) {
        const i64 at = start[h1[i] >> SHARD_SHIFT]++;
        perm[at] = (u32)i;
        s1[at] = h1[i];
        if (h2) s2[at] = (u32)(h2[i] >> 32);
    }
}

/* Insert keys lo..hi-1 of s1 into a narrow shard until it holds limit; fresh[key] = 1 (key: perm[i], or i
   when perm is NULL) for each it lacked. Returns the position reached (hi unless the limit stopped it). */
static i64 insert64(u64 *table, i64 cap, i64 *count, i64 limit, const u64 *s1, const u32 *perm, i64 lo, i64 hi,
                    uint8_t *fresh, uint8_t *zero) {
    const u64 ucap = (u64)cap;
    i64 n = *count;
    for (i64 i = lo; i < hi; i++) {
        if (i + AHEAD < hi) PREFETCH(&table[home(s1[i + AHEAD], ucap)]);
        const u64 fp = s1[i];
        if (fp == 0) {
            fresh[key_at(perm, i)] = !*zero;
            *zero = 1;
            continue;
        }
        if (n >= limit) { *count = n; return i; }
        u64 slot = home(fp, ucap);
        while (table[slot] != fp && table[slot] != 0)
            if (++slot == ucap) slot = 0;
        if (table[slot] == 0) {
            table[slot] = fp;
            fresh[key_at(perm, i)] = 1;
            n++;
        }
    }
    *count = n;
    return hi;
}

/* Lane 1 of a wide slot (its first 8 bytes, 4-byte aligned). */
static inline u64 lane1_at(const u32 *e) {
    u64 a;
    memcpy(&a, e, 8);
    return a;
}

/* The same for a wide shard (three uint32 a slot): s2 holds the keys' lane 2 high halves. */
static i64 insert96(u32 *table, i64 cap, i64 *count, i64 limit, const u64 *s1, const u32 *s2, const u32 *perm,
                    i64 lo, i64 hi, uint8_t *fresh, uint8_t *zero) {
    const u64 ucap = (u64)cap;
    i64 n = *count;
    for (i64 i = lo; i < hi; i++) {
        if (i + AHEAD < hi) PREFETCH(&table[3 * home(s1[i + AHEAD], ucap)]);
        const u64 a = s1[i];
        const u32 c = s2[i];
        if ((a | c) == 0) {
            fresh[key_at(perm, i)] = !*zero;
            *zero = 1;
            continue;
        }
        if (n >= limit) { *count = n; return i; }
        u64 slot = home(a, ucap);
        for (;;) {
            u32 *e = &table[3 * slot];
            const u64 x = lane1_at(e);
            if (x == a && e[2] == c) break;
            if ((x | e[2]) == 0) {
                memcpy(e, &a, 8);
                e[2] = c;
                fresh[key_at(perm, i)] = 1;
                n++;
                break;
            }
            if (++slot == ucap) slot = 0;
        }
    }
    *count = n;
    return hi;
}

/* Insert into shards first..last-1 their keys pos[s]..bounds[s+1]-1 of s1 (and s2) (``isr_partition``'s,
   or sorted keys in place when perm is NULL), each shard until it holds limits[s] (tables[s]: its slots,
   caps[s] of them, counts[s] taken; wide or narrow), advancing pos[s]. Returns the first shard that reached
   its limit with keys left, or -1. */
i64 isr_insert(void **tables, const i64 *caps, i64 *counts, const i64 *limits, i64 wide, const u64 *s1,
               const u32 *s2, const u32 *perm, i64 *pos, const i64 *bounds, i64 first, i64 last, uint8_t *fresh,
               uint8_t *zero) {
    for (i64 s = first; s < last; s++) {
        const i64 hi = bounds[s + 1];
        if (pos[s] >= hi) continue;
        pos[s] = wide ? insert96((u32 *)tables[s], caps[s], &counts[s], limits[s], s1, s2, perm, pos[s], hi, fresh,
                                 zero)
                      : insert64((u64 *)tables[s], caps[s], &counts[s], limits[s], s1, perm, pos[s], hi, fresh, zero);
        if (pos[s] < hi) return s;
    }
    return -1;
}

/* Move the entries of a narrow shard into another, empty and at least as large. */
void isr_rehash64(const u64 *old, i64 oldcap, u64 *table, i64 cap) {
    const u64 ucap = (u64)cap;
    for (i64 i = 0; i < oldcap; i++) {
        const u64 fp = old[i];
        if (fp == 0) continue;
        u64 slot = home(fp, ucap);
        while (table[slot] != 0)
            if (++slot == ucap) slot = 0;
        table[slot] = fp;
    }
}

/* The same for wide shards. */
void isr_rehash96(const u32 *old, i64 oldcap, u32 *table, i64 cap) {
    const u64 ucap = (u64)cap;
    for (i64 i = 0; i < oldcap; i++) {
        const u32 *e = &old[3 * i];
        if ((e[0] | e[1] | e[2]) == 0) continue;
        u64 slot = home((u64)e[0] | (u64)e[1] << 32, ucap);
        while ((table[3 * slot] | table[3 * slot + 1] | table[3 * slot + 2]) != 0)
            if (++slot == ucap) slot = 0;
        table[3 * slot] = e[0]; table[3 * slot + 1] = e[1]; table[3 * slot + 2] = e[2];
    }
}
