/* B18: finding a key among n, in an ecp_map against the walk it replaces.
 *
 * For n = 100, 1,000, 10,000 and 100,000 document-like keys, times a find of
 * every key in the map and in a plain array compared one by one (the walk
 * is timed on a sample when n is large: it is the slow side). Prints:
 *
 *   B18 keys=N map_ns_per_find=... walk_ns_per_find=...
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "map.h"

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

int main(void)
{
    static const size_t sizes[] = {100, 1000, 10000, 100000};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        size_t n = sizes[s];
        char **keys = malloc(n * sizeof *keys);
        ecp_map *map = ecp_map_new();
        for (size_t i = 0; i < n; i++) {
            keys[i] = malloc(64);
            snprintf(keys[i], 64, "doc_1764322%06zu_%09zx", i, i * 2654435761u);
            ecp_map_set(map, keys[i], keys[i], NULL);
        }
        size_t found = 0;
        double t0 = now_ns();
        for (int round = 0; round < 10; round++)
            for (size_t i = 0; i < n; i++)
                found += ecp_map_get(map, keys[i]) == keys[i];
        double map_ns = (now_ns() - t0) / (10.0 * (double)n);

        size_t sample = n < 2000 ? n : 2000;
        t0 = now_ns();
        for (size_t k = 0; k < sample; k++) {
            const char *want = keys[k * (n / sample)];
            for (size_t i = 0; i < n; i++)
                if (strcmp(keys[i], want) == 0) {
                    found++;
                    break;
                }
        }
        double walk_ns = (now_ns() - t0) / (double)sample;
        if (found != 10 * n + sample)
            return 1;
        printf("B18 keys=%zu map_ns_per_find=%.0f walk_ns_per_find=%.0f\n", n, map_ns, walk_ns);
        for (size_t i = 0; i < n; i++)
            free(keys[i]);
        free(keys);
        ecp_map_free(map);
    }
    return 0;
}
