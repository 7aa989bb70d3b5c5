/* map: open addressing over a dense array of entries, as CPython's dict.
 *
 * Entries sit in one array in insertion order; the slot table is an array of
 * 32-bit entry numbers probed linearly. Why this layout: iteration in
 * insertion order comes for free (lists built from a map do not reshuffle
 * between calls), a find touches one small slot array and then one entry,
 * and an entry never moves while it lives except when the whole map is
 * rebuilt, which is what lets an iteration remove the entry it is on.
 *
 * Removing leaves a dead entry (key NULL) and a tombstone slot; both are
 * dropped when the map is rebuilt: on an insert into a full entry array
 * (growing, or at the same size when enough are dead) and on a remove that
 * leaves the map less than a quarter full (shrinking).
 *
 * The slot table has twice as many slots as the entry array has room for,
 * and every used or tombstone slot belongs to an entry of that array, so at
 * least half the slots are empty and every probe ends. */
#include "map.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "buf.h"

#define MIN_CAPACITY 8
#define SLOT_EMPTY 0u
#define SLOT_TOMBSTONE UINT32_MAX

typedef struct map_entry {
    char *key; /* NULL once removed */
    void *value;
    uint64_t hash;
} map_entry;

struct ecp_map {
    uint64_t k0, k1;
    map_entry *entries;
    size_t used;     /* entries taken, dead ones included */
    size_t count;    /* live entries */
    size_t capacity; /* room in entries; a power of two, or 0 before the first insert */
    uint32_t *slots; /* 2 * capacity: SLOT_EMPTY, SLOT_TOMBSTONE or entry number + 1 */
};

/* ----- SipHash-1-3 ------------------------------------------------------------------ */

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND                                                                                                       \
    do {                                                                                                               \
        v0 += v1;                                                                                                      \
        v1 = ROTL(v1, 13);                                                                                             \
        v1 ^= v0;                                                                                                      \
        v0 = ROTL(v0, 32);                                                                                             \
        v2 += v3;                                                                                                      \
        v3 = ROTL(v3, 16);                                                                                             \
        v3 ^= v2;                                                                                                      \
        v0 += v3;                                                                                                      \
        v3 = ROTL(v3, 21);                                                                                             \
        v3 ^= v0;                                                                                                      \
        v2 += v1;                                                                                                      \
        v1 = ROTL(v1, 17);                                                                                             \
        v1 ^= v2;                                                                                                      \
        v2 = ROTL(v2, 32);                                                                                             \
    } while (0)

static uint64_t read_le64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static uint64_t siphash13(uint64_t k0, uint64_t k1, const unsigned char *in, size_t len)
{
    uint64_t v0 = 0x736f6d6570736575ull ^ k0;
    uint64_t v1 = 0x646f72616e646f6dull ^ k1;
    uint64_t v2 = 0x6c7967656e657261ull ^ k0;
    uint64_t v3 = 0x7465646279746573ull ^ k1;
    const unsigned char *end = in + (len & ~(size_t)7);
    for (; in != end; in += 8) {
        uint64_t m = read_le64(in);
        v3 ^= m;
        SIPROUND;
        v0 ^= m;
    }
    uint64_t last = (uint64_t)len << 56;
    for (size_t i = 0; i < (len & 7); i++)
        last |= (uint64_t)in[i] << (8 * i);
    v3 ^= last;
    SIPROUND;
    v0 ^= last;
    v2 ^= 0xff;
    SIPROUND;
    SIPROUND;
    SIPROUND;
    return v0 ^ v1 ^ v2 ^ v3;
}

uint64_t ecp_map_hash(const ecp_map *self, const char *key)
{
    return siphash13(self->k0, self->k1, (const unsigned char *)key, strlen(key));
}

/* ----- making and freeing ------------------------------------------------------------- */

ecp_map *ecp_map_new_keyed(uint64_t k0, uint64_t k1)
{
    ecp_map *self = xcalloc(1, sizeof *self);
    self->k0 = k0;
    self->k1 = k1;
    return self;
}

/* splitmix64: spreads a weak fallback seed over all 64 bits */
static uint64_t mix(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

ecp_map *ecp_map_new(void)
{
    uint64_t key[2];
    if (getrandom(key, sizeof key, GRND_NONBLOCK) != (ssize_t)sizeof key) {
        /* No entropy yet (early boot) or no getrandom: a key that still differs
         * per map and per run, though a patient local observer could guess it. */
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        key[0] = mix((uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec);
        key[1] = mix(key[0] ^ (uint64_t)(uintptr_t)&key);
    }
    return ecp_map_new_keyed(key[0], key[1]);
}

void ecp_map_free(ecp_map *self)
{
    if (!self)
        return;
    for (size_t i = 0; i < self->used; i++)
        free(self->entries[i].key);
    free(self->entries);
    free(self->slots);
    free(self);
}

/* ----- slots ------------------------------------------------------------------------------ */

static size_t slot_mask(const ecp_map *self) { return 2 * self->capacity - 1; }

/* The slot holding key, or SIZE_MAX. */
static size_t slot_of(const ecp_map *self, const char *key, uint64_t hash)
{
    if (!self->capacity)
        return SIZE_MAX;
    size_t mask = slot_mask(self);
    for (size_t i = (size_t)hash & mask;; i = (i + 1) & mask) {
        uint32_t s = self->slots[i];
        if (s == SLOT_EMPTY)
            return SIZE_MAX;
        if (s != SLOT_TOMBSTONE) {
            const map_entry *e = &self->entries[s - 1];
            if (e->hash == hash && strcmp(e->key, key) == 0)
                return i;
        }
    }
}

/* The slot pointing at entry n (which is live). */
static size_t slot_of_entry(const ecp_map *self, size_t n)
{
    size_t mask = slot_mask(self);
    for (size_t i = (size_t)self->entries[n].hash & mask;; i = (i + 1) & mask)
        if (self->slots[i] == n + 1)
            return i;
}

/* Points a free slot at entry n; the caller knows its key is not there yet. */
static void slot_place(ecp_map *self, size_t n)
{
    size_t mask = slot_mask(self);
    size_t i = (size_t)self->entries[n].hash & mask;
    while (self->slots[i] != SLOT_EMPTY && self->slots[i] != SLOT_TOMBSTONE)
        i = (i + 1) & mask;
    self->slots[i] = (uint32_t)(n + 1);
}

/* Drops the dead entries (keeping the order of the live ones), sizes the entry
 * array to capacity and builds the slot table again. */
static void rebuild(ecp_map *self, size_t capacity)
{
    assert(capacity >= self->count && capacity <= (size_t)UINT32_MAX / 2);
    size_t live = 0;
    for (size_t i = 0; i < self->used; i++)
        if (self->entries[i].key)
            self->entries[live++] = self->entries[i];
    assert(live == self->count);
    self->entries = xrealloc(self->entries, capacity * sizeof *self->entries);
    self->used = live;
    self->capacity = capacity;
    free(self->slots);
    self->slots = xcalloc(2 * capacity, sizeof *self->slots);
    for (size_t i = 0; i < live; i++)
        slot_place(self, i);
}

/* The capacity for n live entries with room to insert about n / 2 more. */
static size_t capacity_for(size_t n)
{
    size_t want = n + n / 2;
    size_t capacity = MIN_CAPACITY;
    while (capacity < want)
        capacity *= 2;
    return capacity;
}

/* ----- the operations ----------------------------------------------------------------------- */

bool ecp_map_set(ecp_map *self, const char *key, void *value, void **old)
{
    uint64_t hash = ecp_map_hash(self, key);
    size_t slot = slot_of(self, key, hash);
    if (slot != SIZE_MAX) {
        map_entry *e = &self->entries[self->slots[slot] - 1];
        if (old)
            *old = e->value;
        e->value = value;
        return false;
    }
    if (self->used == self->capacity)
        rebuild(self, capacity_for(self->count + 1));
    size_t n = self->used++;
    self->entries[n] = (map_entry){xstrdup(key), value, hash};
    self->count++;
    slot_place(self, n);
    return true;
}

bool ecp_map_find(const ecp_map *self, const char *key, void **value)
{
    size_t slot = slot_of(self, key, ecp_map_hash(self, key));
    if (slot == SIZE_MAX)
        return false;
    if (value)
        *value = self->entries[self->slots[slot] - 1].value;
    return true;
}

void *ecp_map_get(const ecp_map *self, const char *key)
{
    void *value = NULL;
    ecp_map_find(self, key, &value);
    return value;
}

/* Kills entry n, whose slot is slot. */
static void *remove_at(ecp_map *self, size_t slot, size_t n)
{
    map_entry *e = &self->entries[n];
    void *value = e->value;
    free(e->key);
    e->key = NULL;
    e->value = NULL;
    self->slots[slot] = SLOT_TOMBSTONE;
    self->count--;
    return value;
}

bool ecp_map_remove(ecp_map *self, const char *key, void **value)
{
    size_t slot = slot_of(self, key, ecp_map_hash(self, key));
    if (slot == SIZE_MAX)
        return false;
    void *was = remove_at(self, slot, self->slots[slot] - 1);
    if (value)
        *value = was;
    if (self->capacity > MIN_CAPACITY && self->count < self->capacity / 4)
        rebuild(self, capacity_for(self->count));
    return true;
}

size_t ecp_map_count(const ecp_map *self) { return self->count; }

bool ecp_map_next(const ecp_map *self, ecp_map_iter *it, const char **key, void **value)
{
    while (it->next < self->used) {
        size_t n = it->next++;
        const map_entry *e = &self->entries[n];
        if (!e->key)
            continue;
        it->current = n;
        if (key)
            *key = e->key;
        if (value)
            *value = e->value;
        return true;
    }
    it->current = SIZE_MAX;
    return false;
}

void *ecp_map_iter_remove(ecp_map *self, ecp_map_iter *it)
{
    size_t n = it->current;
    assert(n < self->used && self->entries[n].key);
    it->current = SIZE_MAX;
    return remove_at(self, slot_of_entry(self, n), n);
}
