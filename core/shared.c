#include "shared.h"

#include <assert.h>
#include <stdlib.h>

#include "buf.h"

struct ecp_shared {
    char *data;
    size_t len;
    unsigned long refs;
};

ecp_shared *ecp_shared_adopt(char *data, size_t len)
{
    ecp_shared *self = xmalloc(sizeof *self);
    self->data = data;
    self->len = len;
    self->refs = 1;
    return self;
}

ecp_shared *ecp_shared_ref(ecp_shared *self)
{
    self->refs++;
    return self;
}

void ecp_shared_unref(ecp_shared *self)
{
    if (!self)
        return;
    assert(self->refs > 0);
    if (--self->refs > 0)
        return;
    free(self->data);
    free(self);
}

const char *ecp_shared_data(const ecp_shared *self) { return self->data; }
size_t ecp_shared_len(const ecp_shared *self) { return self->len; }
