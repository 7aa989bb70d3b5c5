/* holds: which clients have a document open. A document closes when the
 * last holder lets go, except that a disconnect never discards unsaved edits:
 * a dirty document nobody holds stays open (and journaled) until someone
 * closes it. */
#include <stdlib.h>

#include "internal.h"

int document_hold(document_service *self, const char *document_id, uint64_t owner, ecp_error *err)
{
    document *doc = document__find(self, document_id, err);
    if (!doc)
        return ECP_ENOTFOUND;
    document__cursors_of(doc, owner);
    document__party(doc, owner)->holds = true;
    return 0;
}

static bool anyone_holds(const document *doc)
{
    for (size_t i = 0; i < doc->party_count; i++)
        if (doc->parties[i]->holds)
            return true;
    return false;
}

bool document_held_by(document_service *self, const char *document_id, uint64_t owner)
{
    document *doc = document__find(self, document_id, NULL);
    doc_party *party = doc ? document__party(doc, owner) : NULL;
    return party && party->holds;
}

int document_release(document_service *self, const char *document_id, uint64_t owner, bool keep_dirty, bool *closed,
                     ecp_error *err)
{
    if (closed)
        *closed = false;
    document *doc = document__find(self, document_id, err);
    if (!doc)
        return ECP_ENOTFOUND;
    doc_party *party = document__party(doc, owner);
    if (party && party->holds)
        document__party_drop(doc, owner);
    if (anyone_holds(doc))
        return 0; /* someone else still has it open */
    document_info info;
    document__fill_info(doc, &info);
    if (keep_dirty && info.is_dirty)
        return 0; /* unsaved edits outlive their client: listed and journaled until someone closes them */
    if (closed)
        *closed = true;
    return document_close(self, document_id, err);
}

void document_release_all(document_service *self, uint64_t owner)
{
    /* ids first: releasing closes documents, which reorders the list */
    size_t count = 0;
    char **ids = xmalloc((self->doc_count + 1) * sizeof *ids);
    for (size_t i = 0; i < self->doc_count; i++) {
        doc_party *party = document__party(self->docs[i], owner);
        if (party && party->holds)
            ids[count++] = xstrdup(self->docs[i]->id);
        else if (party)
            document__party_drop(self->docs[i], owner);
    }
    for (size_t i = 0; i < count; i++) {
        document_release(self, ids[i], owner, true, NULL, NULL);
        free(ids[i]);
    }
    free(ids);
}

int document_holders(document_service *self, const char *document_id, ecp_position_encoding enc,
                     void (*fn)(void *ctx, uint64_t owner, const document_cursor *cursors, size_t count), void *ctx,
                     ecp_error *err)
{
    document *doc = document__find(self, document_id, err);
    if (!doc)
        return ECP_ENOTFOUND;
    for (size_t i = 0; i < doc->party_count; i++) {
        if (!doc->parties[i]->holds)
            continue;
        document_cursor *list = NULL;
        size_t count = 0;
        document_get_cursors(self, document_id, doc->parties[i]->owner, enc, &list, &count, NULL);
        fn(ctx, doc->parties[i]->owner, list, count);
        free(list);
    }
    return 0;
}
