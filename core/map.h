/* map: a hash map from strings to pointers.
 *
 * For the things a service finds by a name a client gives it (a document by
 * its id or its file, a terminal by its id, a language server's document by
 * its uri): a find costs the same with ten entries or a hundred thousand.
 *
 * Keys are NUL-terminated strings; the map keeps its own copy of each key, so
 * the caller may free or change its string once the insert returns. Values
 * are the caller's pointers: the map never frees or follows them, and a value
 * may be NULL (ecp_map_find tells a NULL value from a missing key).
 *
 * The hash is SipHash-1-3 keyed with 128 random bits drawn (getrandom) when
 * the map is made, so keys a client chooses cannot be picked to land in one
 * chain: which keys collide differs from map to map and from run to run.
 *
 * Iteration follows insertion order (a key replaced in place keeps its
 * place), so a list made from a map is stable from one call to the next.
 * During an iteration, the entry just returned may be removed through
 * ecp_map_iter_remove and values may be replaced with ecp_map_set on an
 * existing key; any other insert or ecp_map_remove ends what an iterator may
 * be used for.
 *
 * Not thread-safe: one map belongs to one thread (the loop's, for services).
 *
 *     ecp_map *by_id = ecp_map_new();
 *     ecp_map_set(by_id, doc->id, doc);
 *     document *doc = ecp_map_get(by_id, "d-3");
 *     ecp_map_iter it = ECP_MAP_ITER_INIT;
 *     const char *key;
 *     void *value;
 *     while (ecp_map_next(by_id, &it, &key, &value))
 *         ...;
 *     ecp_map_free(by_id);
 */
#ifndef ECPD_MAP_H
#define ECPD_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ecp_map ecp_map;

/* Where an iteration is: start from ECP_MAP_ITER_INIT. */
typedef struct ecp_map_iter {
    size_t next;    /* the entry to look at next */
    size_t current; /* the entry last returned, or SIZE_MAX */
} ecp_map_iter;

#define ECP_MAP_ITER_INIT ((ecp_map_iter){0, SIZE_MAX})

/* A new, empty map with a random hash key. Free with ecp_map_free. */
ecp_map *ecp_map_new(void);

/* A map whose hash key is given: for tests and benchmarks that must see the
 * same layout each run. A service uses ecp_map_new. */
ecp_map *ecp_map_new_keyed(uint64_t k0, uint64_t k1);

/* Frees the map and its key copies, not the values. NULL is a no-op. */
void ecp_map_free(ecp_map *self);

/* Sets key to value. Returns true when the key was new; when it was there
 * already, its value is replaced and, if old is not NULL, *old receives the
 * value it had. */
bool ecp_map_set(ecp_map *self, const char *key, void *value, void **old);

/* The value of key, or NULL when there is none. */
void *ecp_map_get(const ecp_map *self, const char *key);

/* Whether key is there; *value (if not NULL) receives its value. */
bool ecp_map_find(const ecp_map *self, const char *key, void **value);

/* Removes key. Returns whether it was there; *value (if not NULL) receives
 * the value it had. May shrink the map: not during an iteration (use
 * ecp_map_iter_remove there). */
bool ecp_map_remove(ecp_map *self, const char *key, void **value);

/* The number of keys. */
size_t ecp_map_count(const ecp_map *self);

/* The next entry in insertion order: true with *key (the map's copy, valid
 * until the entry is removed) and *value set, false at the end. key or value
 * may be NULL. */
bool ecp_map_next(const ecp_map *self, ecp_map_iter *it, const char **key, void **value);

/* Removes the entry ecp_map_next returned last; the iteration goes on with
 * the entry after it. Returns its value. The space is given back by a later
 * ecp_map_set or ecp_map_remove. */
void *ecp_map_iter_remove(ecp_map *self, ecp_map_iter *it);

/* The map's hash of a key: exposed so tests can find keys that collide. */
uint64_t ecp_map_hash(const ecp_map *self, const char *key);

#endif
