/* read: what the service answers without changing a repository.
 *
 * Status, diffs, blame, file contents at a ref, history, branches, remotes,
 * stashes and conflicts. Any thread; each call uses the repository it is
 * given and nothing else.
 */
#include "internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <git2/sys/mempack.h>
#include <git2/sys/odb_backend.h>

#include "document/interface.h"

static char *dup_in(arena *mem, const char *s)
{
    return s ? arena_strndup(mem, s, strlen(s)) : NULL;
}

/* ----- HEAD and its upstream ---------------------------------------------------------- */

int gitsvc__head_commit(git_repository *repo, git_commit **out, gitsvc_error *err)
{
    *out = NULL;
    git_oid oid;
    int rc = git_reference_name_to_id(&oid, repo, "HEAD");
    if (rc == GIT_ENOTFOUND || rc == GIT_EUNBORNBRANCH)
        return 0;
    if (rc < 0)
        return gitsvc__libgit2(err, rc, GITSVC_COMMAND_FAILED, "Cannot read HEAD");
    rc = git_commit_lookup(out, repo, &oid);
    if (rc < 0)
        return gitsvc__libgit2(err, rc, GITSVC_COMMAND_FAILED, "Cannot read HEAD's commit");
    return 0;
}

/* The upstream of a local branch from branch.<name>.remote and .merge, as
 * refs/remotes/<remote>/<branch> (or the local branch for remote "."), the
 * standard fetch refspec. Not git_branch_upstream: through
 * git_remote_lookup, libgit2 1.5 leaks a regex match (about 20 KB) per call,
 * and a status is asked for after every edit. */
int gitsvc__upstream(git_repository *repo, const char *branch, git_reference **out)
{
    *out = NULL;
    git_config *cfg = NULL;
    int rc = git_repository_config_snapshot(&cfg, repo);
    if (rc < 0)
        return rc;
    buf key = BUF_INIT, ref = BUF_INIT;
    const char *remote = NULL, *merge = NULL;
    buf_appendf(&key, "branch.%s.remote", branch);
    rc = git_config_get_string(&remote, cfg, key.data);
    if (rc == 0) {
        buf_clear(&key);
        buf_appendf(&key, "branch.%s.merge", branch);
        rc = git_config_get_string(&merge, cfg, key.data);
    }
    if (rc == 0 && strncmp(merge, "refs/heads/", 11))
        rc = GIT_ENOTFOUND;
    if (rc == 0) {
        if (!strcmp(remote, "."))
            buf_append_str(&ref, merge);
        else
            buf_appendf(&ref, "refs/remotes/%s/%s", remote, merge + 11);
        rc = git_reference_lookup(out, repo, ref.data);
    }
    buf_free(&key);
    buf_free(&ref);
    git_config_free(cfg);
    return rc;
}

int gitsvc__head_info(git_repository *repo, arena *mem, gitsvc_status *out, gitsvc_error *err)
{
    out->branch = "HEAD";
    out->tracking = NULL;
    out->ahead = out->behind = 0;
    out->detached = out->unborn = false;
    git_reference *head = NULL;
    int rc = git_repository_head(&head, repo);
    if (rc == GIT_EUNBORNBRANCH || rc == GIT_ENOTFOUND) {
        /* no commit yet: HEAD names the branch the first commit will make */
        out->unborn = true;
        git_reference *sym = NULL;
        if (git_reference_lookup(&sym, repo, "HEAD") == 0 && git_reference_type(sym) == GIT_REFERENCE_SYMBOLIC) {
            const char *target = git_reference_symbolic_target(sym);
            if (!strncmp(target, "refs/heads/", 11))
                target += 11;
            out->branch = dup_in(mem, target);
        }
        git_reference_free(sym);
        return 0;
    }
    if (rc < 0)
        return gitsvc__libgit2(err, rc, GITSVC_COMMAND_FAILED, "Cannot read HEAD");
    if (git_repository_head_detached(repo) == 1) {
        out->detached = true;
        git_reference_free(head);
        return 0;
    }
    out->branch = dup_in(mem, git_reference_shorthand(head));
    git_reference *upstream = NULL;
    if (gitsvc__upstream(repo, out->branch, &upstream) == 0) {
        out->tracking = dup_in(mem, git_reference_shorthand(upstream));
        const git_oid *local = git_reference_target(head), *remote = git_reference_target(upstream);
        if (local && remote) {
            size_t ahead = 0, behind = 0;
            if (git_graph_ahead_behind(&ahead, &behind, repo, local, remote) == 0) {
                out->ahead = ahead;
                out->behind = behind;
            }
        }
        git_reference_free(upstream);
    }
    git_error_clear();
    git_reference_free(head);
    return 0;
}

int gitsvc_branch_read(gitsvc_repo *repo, arena *mem, gitsvc_status *out, gitsvc_error *err)
{
    memset(out, 0, sizeof *out);
    return gitsvc__head_info(repo->repo, mem, out, err);
}

/* ----- status --------------------------------------------------------------------------- *
 * The status is two diffs that need nothing of each other: HEAD against the
 * index (what is staged) and the index against the work tree (what is not,
 * and what is untracked), merged; conflicts come from the index itself. The
 * second is nearly all of the time on a large tree: it stats every file,
 * while the first is usually answered by the index's own tree. */

typedef struct entries {
    gitsvc_status_entry *items;
    size_t count, cap;
} entries;

static void entries_push(arena *mem, entries *e, const char *path, const char *old_path, char status)
{
    e->items = gitsvc__grow(mem, e->items, e->count, &e->cap, sizeof *e->items);
    e->items[e->count++] = (gitsvc_status_entry){dup_in(mem, path), dup_in(mem, old_path), status};
}

static char delta_letter(git_delta_t status)
{
    switch (status) {
    case GIT_DELTA_ADDED: return 'A';
    case GIT_DELTA_DELETED: return 'D';
    case GIT_DELTA_MODIFIED: return 'M';
    case GIT_DELTA_RENAMED: return 'R';
    case GIT_DELTA_COPIED: return 'C';
    case GIT_DELTA_TYPECHANGE: return 'T';
    case GIT_DELTA_CONFLICTED: return 'U';
    default: return 0;
    }
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The index's conflicted paths, sorted. */
static int conflicted_paths(git_repository *repo, arena *mem, const char ***paths, size_t *count)
{
    *paths = NULL;
    *count = 0;
    git_index *index = NULL;
    int rc = git_repository_index(&index, repo);
    if (rc < 0)
        return rc;
    const char **out = NULL;
    size_t n = 0, cap = 0;
    git_index_conflict_iterator *it = NULL;
    if (git_index_has_conflicts(index) && git_index_conflict_iterator_new(&it, index) == 0) {
        const git_index_entry *ancestor, *ours, *theirs;
        while (git_index_conflict_next(&ancestor, &ours, &theirs, it) == 0) {
            const git_index_entry *e = ours ? ours : theirs ? theirs : ancestor;
            out = gitsvc__grow(mem, out, n, &cap, sizeof *out);
            out[n++] = dup_in(mem, e->path);
        }
        git_index_conflict_iterator_free(it);
    }
    git_index_free(index);
    git_error_clear();
    if (n)
        qsort(out, n, sizeof *out, cmp_str);
    *paths = out;
    *count = n;
    return 0;
}

/* The index's intent-to-add entries (`git add -N`), in the index's order
 * (sorted by path): git shows them as added in the work tree and not staged,
 * where libgit2's two diffs see a staged empty file and a modification. */
static const char **intent_to_add_paths(git_repository *repo, arena *mem, size_t *count)
{
    *count = 0;
    git_index *index = NULL;
    if (git_repository_index(&index, repo) < 0) {
        git_error_clear();
        return NULL;
    }
    const char **out = NULL;
    /* the flag is an extended one, which an index of version 2 cannot hold:
     * no need to look at its entries */
    size_t n = 0, cap = 0, total = git_index_version(index) >= 3 ? git_index_entrycount(index) : 0;
    for (size_t i = 0; i < total; i++) {
        const git_index_entry *e = git_index_get_byindex(index, i);
        if (e && (e->flags_extended & GIT_INDEX_ENTRY_INTENT_TO_ADD)) {
            out = gitsvc__grow(mem, out, n, &cap, sizeof *out);
            out[n++] = dup_in(mem, e->path);
        }
    }
    git_index_free(index);
    *count = n;
    return out;
}

static bool in_sorted(const char *const *paths, size_t count, const char *path)
{
    return count && bsearch(&path, paths, count, sizeof *paths, cmp_str) != NULL;
}

static bool is_conflicted(const gitsvc_status *st, const char *path)
{
    return st->conflict_count &&
           bsearch(&path, st->conflicts, st->conflict_count, sizeof *st->conflicts, cmp_str) != NULL;
}

/* Whether the index is known to hold exactly HEAD's tree, without reading a
 * tree: git keeps the tree of the index (its cache-tree extension) valid
 * until something is staged, so in the usual state (files edited, nothing
 * staged) that tree's id is HEAD's and there is nothing to diff. libgit2
 * answers it from the cache when the root is valid; when it is not, it would
 * write the missing trees, so the repository it is given has an odb in
 * memory only (nothing of the real one is touched) and the answer is "not
 * known" whenever it cannot. */
static bool index_is_tree(git_repository *repo, const git_tree *tree)
{
    git_index *index = NULL;
    git_odb *odb = NULL;
    git_odb_backend *in_memory = NULL;
    git_repository *scratch = NULL;
    git_oid id;
    bool same = false;
    if (git_repository_index(&index, repo) == 0 && !git_index_has_conflicts(index) && git_odb_new(&odb) == 0 &&
        git_mempack_new(&in_memory) == 0) {
        if (git_odb_add_backend(odb, in_memory, 1) < 0)
            in_memory->free(in_memory);
        else if (git_repository_wrap_odb(&scratch, odb) == 0 && git_index_write_tree_to(&id, index, scratch) == 0)
            same = git_oid_equal(&id, git_tree_id(tree));
    }
    git_repository_free(scratch);
    git_odb_free(odb);
    git_index_free(index);
    git_error_clear();
    return same;
}

/* A repository kept from an earlier status holds the index it read then:
 * read again if the file changed (a stat when it did not). */
static void refresh_index(git_repository *repo)
{
    git_index *index = NULL;
    if (git_repository_index(&index, repo) == 0 && git_index_read(index, false) < 0)
        git_error_clear();
    git_index_free(index);
}

int gitsvc__status_staged(gitsvc_repo *repo, const ecp_job *job, arena *mem, gitsvc_status *out, gitsvc_error *err)
{
    refresh_index(repo->repo);
    int rc = gitsvc__head_info(repo->repo, mem, out, err);
    if (rc || (rc = gitsvc__check_cancel(job, err)))
        return rc;
    git_commit *head = NULL;
    git_tree *tree = NULL;
    git_diff *diff = NULL;
    if ((rc = gitsvc__head_commit(repo->repo, &head, err)))
        return rc;
    if (head && (rc = git_commit_tree(&tree, head)) < 0)
        goto failed;
    if (tree && index_is_tree(repo->repo, tree)) {
        rc = 0; /* nothing staged */
        goto end;
    }
    git_diff_options o = GIT_DIFF_OPTIONS_INIT;
    o.flags = GIT_DIFF_INCLUDE_TYPECHANGE | GIT_DIFF_SKIP_BINARY_CHECK;
    if ((rc = git_diff_tree_to_index(&diff, repo->repo, tree, NULL, &o)) < 0)
        goto failed;
    git_diff_find_options find = GIT_DIFF_FIND_OPTIONS_INIT;
    find.flags = GIT_DIFF_FIND_RENAMES;
    if ((rc = git_diff_find_similar(diff, &find)) < 0)
        goto failed;
    entries staged = {0};
    size_t intents;
    const char **intended = intent_to_add_paths(repo->repo, mem, &intents);
    size_t n = git_diff_num_deltas(diff);
    for (size_t i = 0; i < n; i++) {
        const git_diff_delta *d = git_diff_get_delta(diff, i);
        char x = delta_letter(d->status);
        if (!x || x == 'U' || (x == 'A' && in_sorted(intended, intents, d->new_file.path)))
            continue;
        bool renamed = x == 'R' && strcmp(d->old_file.path, d->new_file.path);
        entries_push(mem, &staged, d->new_file.path, renamed ? d->old_file.path : NULL, x);
    }
    out->staged = staged.items;
    out->staged_count = staged.count;
    rc = 0;
    goto end;
failed:
    rc = gitsvc__libgit2(err, rc, GITSVC_COMMAND_FAILED, "Cannot read the status");
end:
    git_diff_free(diff);
    git_tree_free(tree);
    git_commit_free(head);
    return rc;
}

int gitsvc__status_conflicts(gitsvc_repo *repo, arena *mem, gitsvc_status *out, gitsvc_error *err)
{
    int rc = conflicted_paths(repo->repo, mem, &out->conflicts, &out->conflict_count);
    return rc < 0 ? gitsvc__libgit2(err, rc, GITSVC_COMMAND_FAILED, "Cannot read the index") : 0;
}

int gitsvc__status_workdir(gitsvc_repo *repo, const ecp_job *job, arena *mem, const gitsvc__status_part *part,
                           gitsvc_status *out, gitsvc_error *err)
{
    int rc = gitsvc__check_cancel(job, err);
    if (rc)
        return rc;
    git_diff_options o = GIT_DIFF_OPTIONS_INIT;
    /* a status needs no content: without the binary check, no modified file is read */
    o.flags = GIT_DIFF_INCLUDE_UNTRACKED | GIT_DIFF_RECURSE_UNTRACKED_DIRS | GIT_DIFF_INCLUDE_TYPECHANGE |
              GIT_DIFF_SKIP_BINARY_CHECK;
    if (part->paths) {
        /* literal paths, each with everything under it: the iterators skip
         * the rest of the tree without a stat */
        o.flags |= GIT_DIFF_DISABLE_PATHSPEC_MATCH;
        o.pathspec.strings = (char **)part->paths;
        o.pathspec.count = part->count;
    }
    git_diff *diff = NULL;
    if ((rc = git_diff_index_to_workdir(&diff, repo->repo, NULL, &o)) < 0)
        return gitsvc__libgit2(err, rc, GITSVC_COMMAND_FAILED, "Cannot read the status");
    entries unstaged = {0};
    const char **untracked = NULL;
    size_t untracked_count = 0, untracked_cap = 0;
    size_t intents;
    const char **intended = intent_to_add_paths(repo->repo, mem, &intents);
    size_t n = git_diff_num_deltas(diff);
    for (size_t i = 0; i < n; i++) {
        const git_diff_delta *d = git_diff_get_delta(diff, i);
        if (d->status == GIT_DELTA_UNTRACKED) {
            untracked = gitsvc__grow(mem, untracked, untracked_count, &untracked_cap, sizeof *untracked);
            untracked[untracked_count++] = dup_in(mem, d->new_file.path);
            continue;
        }
        char y = delta_letter(d->status);
        if (y == 'M' && in_sorted(intended, intents, d->new_file.path))
            y = 'A';
        /* conflicted paths are left to the merge, which knows them */
        if (y && y != 'U')
            entries_push(mem, &unstaged, d->new_file.path, NULL, y);
    }
    git_diff_free(diff);
    out->unstaged = unstaged.items;
    out->unstaged_count = unstaged.count;
    out->untracked = untracked;
    out->untracked_count = untracked_count;
    return gitsvc__check_cancel(job, err);
}

int gitsvc__status_unstaged(gitsvc_repo *repo, const ecp_job *job, arena *mem, gitsvc_status *out,
                            gitsvc_error *err)
{
    int rc = gitsvc__check_cancel(job, err);
    if (rc || (rc = gitsvc__status_conflicts(repo, mem, out, err)))
        return rc;
    const gitsvc__status_part whole = {NULL, 0};
    return gitsvc__status_workdir(repo, job, mem, &whole, out, err);
}

static int cmp_entry(const void *a, const void *b)
{
    return strcmp(((const gitsvc_status_entry *)a)->path, ((const gitsvc_status_entry *)b)->path);
}

/* Conflicted paths are 'U' in both lists, whatever either diff made of them. */
static void merge_conflicts(arena *mem, const gitsvc_status *conflicts, gitsvc_status_entry **items, size_t *count)
{
    entries e = {0};
    for (size_t i = 0; i < *count; i++)
        if (!is_conflicted(conflicts, (*items)[i].path))
            entries_push(mem, &e, (*items)[i].path, (*items)[i].old_path, (*items)[i].status);
    for (size_t i = 0; i < conflicts->conflict_count; i++)
        entries_push(mem, &e, conflicts->conflicts[i], NULL, 'U');
    if (e.count)
        qsort(e.items, e.count, sizeof *e.items, cmp_entry);
    *items = e.items;
    *count = e.count;
}

void gitsvc__status_merge(gitsvc_status *staged, const gitsvc_status *unstaged, arena *mem)
{
    staged->unstaged = unstaged->unstaged;
    staged->unstaged_count = unstaged->unstaged_count;
    staged->untracked = unstaged->untracked;
    staged->untracked_count = unstaged->untracked_count;
    staged->conflicts = unstaged->conflicts;
    staged->conflict_count = unstaged->conflict_count;
    if (staged->conflict_count) {
        merge_conflicts(mem, staged, &staged->staged, &staged->staged_count);
        merge_conflicts(mem, staged, &staged->unstaged, &staged->unstaged_count);
    }
}

/* ----- the work tree in parts ------------------------------------------------------------ *
 * Nearly all of a status on a large tree is the lstat of every tracked file,
 * one after the other in libgit2's iterator (50,000 files: some 160 ms, two
 * thirds of it in the kernel). git spreads the same calls over threads
 * (preload-index), and that is why it answers sooner while doing more work in
 * all. libgit2 has no such option, but a diff may be given a list of literal
 * paths, each standing for everything under it, and its iterators then skip
 * whatever is outside without a stat. So the work tree is cut by name into
 * parts of about the same number of index entries (its top-level entries, or
 * those of a directory too large for one part), and each part is diffed on
 * its own repository by whichever thread of the status is free. */

typedef struct plan_name {
    const char *name; /* in the plan's arena */
    size_t first, end; /* its index entries [first, end); none when equal */
    bool has_children; /* in the index: entries under name/ */
} plan_name;

typedef struct planner {
    gitsvc__status_plan *plan;
    git_index *index;
    const char *root;
    size_t target;  /* index entries per part */
    size_t max_parts;
    bool open;      /* the last part is still taking paths */
    size_t part_cap, path_cap, weight;
} planner;

static int cmp_plan_name(const void *a, const void *b)
{
    return strcmp(((const plan_name *)a)->name, ((const plan_name *)b)->name);
}

static void plan_add(planner *p, const char *path, size_t weight)
{
    gitsvc__status_plan *plan = p->plan;
    if (!p->open) {
        plan->parts = gitsvc__grow(&plan->mem, plan->parts, plan->part_count, &p->part_cap, sizeof *plan->parts);
        plan->parts[plan->part_count++] = (gitsvc__status_part){NULL, 0};
        p->open = true;
        p->path_cap = 0;
        p->weight = 0;
    }
    gitsvc__status_part *part = &plan->parts[plan->part_count - 1];
    part->paths = gitsvc__grow(&plan->mem, (void *)part->paths, part->count, &p->path_cap, sizeof *part->paths);
    part->paths[part->count++] = path;
    p->weight += weight;
    /* the last part takes whatever is left, however much */
    if (p->weight >= p->target && plan->part_count < p->max_parts)
        p->open = false;
}

static bool is_directory(const char *root, const char *rel)
{
    buf path = BUF_INIT;
    buf_appendf(&path, "%s/%s", root, rel);
    struct stat st;
    bool dir = lstat(path.data, &st) == 0 && S_ISDIR(st.st_mode);
    buf_free(&path);
    return dir;
}

/* The names directly under prefix ("" or "dir/"), from the index entries
 * [first, end) that all start with it and from the work tree's directory
 * (what is untracked is in no index), in order, each once. */
static plan_name *plan_names(planner *p, const char *prefix, size_t first, size_t end, size_t *count)
{
    arena *mem = &p->plan->mem;
    size_t skip = strlen(prefix), n = 0, cap = 0;
    plan_name *names = NULL;
    for (size_t i = first; i < end; i++) {
        const char *rest = git_index_get_byindex(p->index, i)->path + skip;
        const char *slash = strchr(rest, '/');
        size_t len = slash ? (size_t)(slash - rest) : strlen(rest);
        /* the index is sorted by path: a name's entries are together */
        plan_name *last = n ? &names[n - 1] : NULL;
        if (last && !strncmp(last->name, rest, len) && last->name[len] == '\0') {
            last->end = i + 1;
            last->has_children |= slash != NULL;
            continue;
        }
        names = gitsvc__grow(mem, names, n, &cap, sizeof *names);
        names[n++] = (plan_name){arena_strndup(mem, rest, len), i, i + 1, slash != NULL};
    }
    buf dir = BUF_INIT;
    buf_appendf(&dir, "%s/%s", p->root, prefix);
    DIR *d = opendir(dir.data);
    for (struct dirent *e; d && (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || !strcmp(e->d_name, ".git"))
            continue;
        names = gitsvc__grow(mem, names, n, &cap, sizeof *names);
        names[n++] = (plan_name){arena_strndup(mem, e->d_name, strlen(e->d_name)), 0, 0, false};
    }
    if (d)
        closedir(d);
    buf_free(&dir);
    if (n)
        qsort(names, n, sizeof *names, cmp_plan_name);
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        if (kept && !strcmp(names[kept - 1].name, names[i].name)) {
            if (names[i].end > names[i].first)
                names[kept - 1] = names[i];
            continue;
        }
        names[kept++] = names[i];
    }
    *count = kept;
    return names;
}

static void plan_level(planner *p, const char *prefix, size_t first, size_t end, int depth)
{
    size_t count;
    plan_name *names = plan_names(p, prefix, first, end, &count);
    for (size_t i = 0; i < count; i++) {
        const plan_name *n = &names[i];
        size_t weight = n->end > n->first ? n->end - n->first : 1;
        const char *path = arena_sprintf(&p->plan->mem, "%s%s", prefix, n->name);
        /* a directory too large for one part is cut by its own entries; one
         * that is not a directory in the work tree (a file now, a link) stays
         * whole, as the diff of its name sees it */
        if (weight > p->target && n->has_children && depth < 8 && is_directory(p->root, path))
            plan_level(p, arena_sprintf(&p->plan->mem, "%s/", path), n->first, n->end, depth + 1);
        else
            plan_add(p, path, weight);
    }
}

gitsvc__status_plan *gitsvc__status_plan_new(gitsvc_repo *repo, size_t max_parts, size_t min_part)
{
    gitsvc__status_plan *plan = xcalloc(1, sizeof *plan);
    arena_init(&plan->mem);
    git_index *index = NULL;
    size_t entry_count = 0;
    refresh_index(repo->repo);
    /* a case-insensitive index sorts otherwise, and its diff would too: one part */
    if (git_repository_index(&index, repo->repo) == 0 &&
        !(git_index_caps(index) & GIT_INDEX_CAPABILITY_IGNORE_CASE))
        entry_count = git_index_entrycount(index);
    git_error_clear();
    size_t parts = min_part ? entry_count / min_part : 0;
    if (parts > max_parts)
        parts = max_parts;
    if (parts >= 2) {
        planner p = {plan, index, repo->root, (entry_count + parts - 1) / parts, parts, false, 0, 0, 0};
        plan_level(&p, "", 0, entry_count, 0);
    }
    if (plan->part_count < 2) {
        /* the whole tree, in one diff without a list of paths */
        plan->parts = arena_calloc(&plan->mem, sizeof *plan->parts);
        plan->part_count = 1;
    }
    plan->results = arena_calloc(&plan->mem, plan->part_count * sizeof *plan->results);
    plan->complete = arena_calloc(&plan->mem, plan->part_count * sizeof *plan->complete);
    git_index_free(index);
    return plan;
}

void gitsvc__status_plan_free(gitsvc__status_plan *plan)
{
    if (!plan)
        return;
    arena_free(&plan->mem);
    free(plan);
}

static int cmp_path(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

void gitsvc__status_join(gitsvc_status *into, const gitsvc_status *parts, size_t count, arena *mem)
{
    if (count == 1) {
        into->unstaged = parts[0].unstaged;
        into->unstaged_count = parts[0].unstaged_count;
        into->untracked = parts[0].untracked;
        into->untracked_count = parts[0].untracked_count;
        return;
    }
    size_t unstaged = 0, untracked = 0;
    for (size_t i = 0; i < count; i++) {
        unstaged += parts[i].unstaged_count;
        untracked += parts[i].untracked_count;
    }
    gitsvc_status_entry *e = unstaged ? arena_alloc(mem, unstaged * sizeof *e) : NULL;
    const char **u = untracked ? arena_alloc(mem, untracked * sizeof *u) : NULL;
    size_t ne = 0, nu = 0;
    for (size_t i = 0; i < count; i++) {
        if (parts[i].unstaged_count)
            memcpy(e + ne, parts[i].unstaged, parts[i].unstaged_count * sizeof *e);
        if (parts[i].untracked_count)
            memcpy(u + nu, parts[i].untracked, parts[i].untracked_count * sizeof *u);
        ne += parts[i].unstaged_count;
        nu += parts[i].untracked_count;
    }
    /* in the order of one diff of the whole tree: by path (a part may hold
     * "a.txt" and another "a/b", which sorts after it) */
    if (ne)
        qsort(e, ne, sizeof *e, cmp_entry);
    if (nu)
        qsort(u, nu, sizeof *u, cmp_path);
    into->unstaged = e;
    into->unstaged_count = ne;
    into->untracked = u;
    into->untracked_count = nu;
}

int gitsvc_status_read(gitsvc_repo *repo, const ecp_job *job, arena *mem, gitsvc_status *out, gitsvc_error *err)
{
    memset(out, 0, sizeof *out);
    gitsvc_status workdir;
    memset(&workdir, 0, sizeof workdir);
    int rc = gitsvc__status_staged(repo, job, mem, out, err);
    if (rc || (rc = gitsvc__status_unstaged(repo, job, mem, &workdir, err)))
        return rc;
    gitsvc__status_merge(out, &workdir, mem);
    return 0;
}

/* ----- diffs ------------------------------------------------------------------------------- */

typedef struct hunk_builder {
    arena *mem;
    gitsvc_hunk *hunks;
    size_t count, cap, line_cap;
} hunk_builder;

static int on_hunk(const git_diff_delta *delta, const git_diff_hunk *hunk, void *payload)
{
    hunk_builder *b = payload;
    b->hunks = gitsvc__grow(b->mem, b->hunks, b->count, &b->cap, sizeof *b->hunks);
    b->hunks[b->count++] = (gitsvc_hunk){(size_t)hunk->old_start, (size_t)hunk->old_lines,
                                         (size_t)hunk->new_start, (size_t)hunk->new_lines, NULL, 0};
    b->line_cap = 0;
    return 0;
}

static int on_line(const git_diff_delta *delta, const git_diff_hunk *hunk, const git_diff_line *line, void *payload)
{
    hunk_builder *b = payload;
    if (!b->count)
        return 0;
    gitsvc_line_type type;
    switch (line->origin) {
    case GIT_DIFF_LINE_CONTEXT: type = GITSVC_LINE_CONTEXT; break;
    case GIT_DIFF_LINE_ADDITION: type = GITSVC_LINE_ADDED; break;
    case GIT_DIFF_LINE_DELETION: type = GITSVC_LINE_DELETED; break;
    default: return 0; /* "\ No newline at end of file" and headers */
    }
    gitsvc_hunk *h = &b->hunks[b->count - 1];
    h->lines = gitsvc__grow(b->mem, h->lines, h->line_count, &b->line_cap, sizeof *h->lines);
    size_t len = line->content_len;
    if (len && line->content[len - 1] == '\n')
        len--;
    h->lines[h->line_count++] = (gitsvc_diff_line){type, arena_strndup(b->mem, line->content, len),
                                                   line->old_lineno > 0 ? (size_t)line->old_lineno : 0,
                                                   line->new_lineno > 0 ? (size_t)line->new_lineno : 0};
    return 0;
}

/* The diff of one path: index -> work tree, or HEAD -> index when staged. */
static int path_diff_make(gitsvc_repo *repo, const char *rel_path, bool staged, uint32_t context, git_diff **out,
                          gitsvc_error *err)
{
    git_diff_options o = GIT_DIFF_OPTIONS_INIT;
    o.context_lines = context;
    o.flags = GIT_DIFF_DISABLE_PATHSPEC_MATCH;
    char *paths[] = {(char *)rel_path};
    o.pathspec.strings = paths;
    o.pathspec.count = 1;
    int rc;
    if (staged) {
        git_commit *head = NULL;
        git_tree *tree = NULL;
        if ((rc = gitsvc__head_commit(repo->repo, &head, err)))
            return rc;
        if (head && (rc = git_commit_tree(&tree, head)) < 0) {
            git_commit_free(head);
            return gitsvc__libgit2(err, rc, GITSVC_COMMAND_FAILED, "Cannot read HEAD's tree");
        }
        rc = git_diff_tree_to_index(out, repo->repo, tree, NULL, &o);
        git_tree_free(tree);
        git_commit_free(head);
    } else {
        rc = git_diff_index_to_workdir(out, repo->repo, NULL, &o);
    }
    if (rc < 0)
        return gitsvc__libgit2(err, rc, GITSVC_COMMAND_FAILED, "Cannot compute the diff");
    return 0;
}

/* Walks the hunks and lines of path_diff_make's diff. */
static int path_diff(gitsvc_repo *repo, const char *rel_path, bool staged, uint32_t context, git_diff_hunk_cb hunk_cb,
                     git_diff_line_cb line_cb, void *payload, gitsvc_error *err)
{
    git_diff *diff = NULL;
    int rc = path_diff_make(repo, rel_path, staged, context, &diff, err);
    if (rc)
        return rc;
    rc = git_diff_foreach(diff, NULL, NULL, hunk_cb, line_cb, payload);
    git_diff_free(diff);
    if (rc < 0)
        return gitsvc__libgit2(err, rc, GITSVC_COMMAND_FAILED, "Cannot compute the diff");
    return 0;
}

int gitsvc_diff_read(gitsvc_repo *repo, const char *rel_path, bool staged, arena *mem, gitsvc_hunk **hunks,
                     size_t *count, gitsvc_error *err)
{
    *hunks = NULL;
    *count = 0;
    hunk_builder b = {.mem = mem};
    int rc = path_diff(repo, rel_path, staged, 3, on_hunk, on_line, &b, err);
    if (rc)
        return rc;
    *hunks = b.hunks;
    *count = b.count;
    return 0;
}

static int on_change_hunk(const git_diff_delta *delta, const git_diff_hunk *hunk, void *payload)
{
    gitsvc__changes_add_hunk(payload, (size_t)hunk->old_lines, (size_t)hunk->new_start, (size_t)hunk->new_lines);
    return 0;
}

int gitsvc_diff_lines(gitsvc_repo *repo, const char *rel_path, arena *mem, gitsvc_line_change **changes,
                      size_t *count, gitsvc_error *err)
{
    *changes = NULL;
    *count = 0;
    gitsvc__changes c = {.mem = mem};
    int rc = path_diff(repo, rel_path, false, 0, on_change_hunk, NULL, &c, err);
    if (rc)
        return rc;
    *changes = c.items;
    *count = c.count;
    return 0;
}

/* The blob of rel_path in HEAD, or NULL (and 0) when HEAD has none. */
static int head_blob(gitsvc_repo *repo, const char *rel_path, git_blob **out, gitsvc_error *err)
{
    *out = NULL;
    git_commit *head = NULL;
    int rc = gitsvc__head_commit(repo->repo, &head, err);
    if (rc || !head)
        return rc;
    git_tree *tree = NULL;
    git_tree_entry *entry = NULL;
    rc = git_commit_tree(&tree, head);
    if (rc == 0 && git_tree_entry_bypath(&entry, tree, rel_path) == 0 &&
        git_tree_entry_type(entry) == GIT_OBJECT_BLOB)
        rc = git_blob_lookup(out, repo->repo, git_tree_entry_id(entry));
    git_error_clear();
    git_tree_entry_free(entry);
    git_tree_free(tree);
    git_commit_free(head);
    if (rc < 0)
        return gitsvc__libgit2(err, rc, GITSVC_COMMAND_FAILED, "Cannot read HEAD");
    return 0;
}

int gitsvc_diff_text(gitsvc_repo *repo, const char *rel_path, const char *text, size_t len, arena *mem,
                     gitsvc_line_change **changes, size_t *count, gitsvc_error *err)
{
    *changes = NULL;
    *count = 0;
    git_blob *blob = NULL;
    int rc = head_blob(repo, rel_path, &blob, err);
    if (rc)
        return rc;
    gitsvc__changes c = {.mem = mem};
    if (!blob) {
        size_t lines = 0;
        for (size_t i = 0; i < len; i++)
            lines += text[i] == '\n';
        if (len && text[len - 1] != '\n')
            lines++;
        if (lines)
            gitsvc__changes_add_hunk(&c, 0, 1, lines);
    } else {
        git_diff_options o = GIT_DIFF_OPTIONS_INIT;
        o.context_lines = 0;
        o.flags = GIT_DIFF_FORCE_TEXT;
        rc = git_diff_buffers(git_blob_rawcontent(blob), (size_t)git_blob_rawsize(blob), rel_path, text, len,
                              rel_path, &o, NULL, NULL, on_change_hunk, NULL, &c);
        git_blob_free(blob);
        if (rc < 0)
            return gitsvc__libgit2(err, rc, GITSVC_COMMAND_FAILED, "Cannot compute the diff");
    }
    *changes = c.items;
    *count = c.count;
    return 0;
}

typedef struct text_copy {
    buf *out;
    bool crlf;
} text_copy;

static void copy_chunk(void *ctx, const char *chunk, size_t len)
{
    text_copy *t = ctx;
    if (!t->crlf) {
        buf_append(t->out, chunk, len);
        return;
    }
    /* held with '\n', written back with "\r\n": compare what the file will hold */
    for (size_t i = 0; i < len; i++) {
        if (chunk[i] == '\n')
            buf_push(t->out, '\r');
        buf_push(t->out, chunk[i]);
    }
}

int gitsvc_diff_snapshot(gitsvc_repo *repo, const char *rel_path, const struct document_snapshot *snap,
                         arena *mem, gitsvc_line_change **changes, size_t *count, gitsvc_error *err)
{
    buf text = BUF_INIT;
    text_copy t = {&text, document_snapshot_crlf(snap)};
    ecp_error e;
    if (document_snapshot_read(snap, 0, document_snapshot_length(snap), copy_chunk, &t, &e))
        return gitsvc__fail(err, e.status, GITSVC_COMMAND_FAILED, "%s", e.message);
    int rc = gitsvc_diff_text(repo, rel_path, text.data ? text.data : "", text.len, mem, changes, count, err);
    buf_free(&text);
    return rc;
}

/* ----- blame ---------------------------------------------------------------------------------- */

/* For each line of the work tree's text, the line of HEAD's it is (0: a
 * line changed or added since). */
typedef struct line_map {
    size_t *old_of_new; /* [new line - 1] */
    size_t new_lines;
    size_t next_new, next_old; /* the next line outside every hunk so far, 1-based */
} line_map;

static void map_until(line_map *m, size_t new_line)
{
    while (m->next_new < new_line && m->next_new <= m->new_lines)
        m->old_of_new[m->next_new++ - 1] = m->next_old++;
}

static int on_map_hunk(const git_diff_delta *delta, const git_diff_hunk *hunk, void *payload)
{
    line_map *m = payload;
    /* with no context, a hunk of new lines starts at new_start; one that only
     * deletes starts after new_start */
    size_t first_new = hunk->new_lines ? (size_t)hunk->new_start : (size_t)hunk->new_start + 1;
    map_until(m, first_new);
    m->next_new += (size_t)hunk->new_lines;
    m->next_old = (size_t)(hunk->old_lines ? hunk->old_start + hunk->old_lines : hunk->old_start + 1);
    return 0;
}

/* The work tree's side of a blame, as git sees it: a regular file's bytes,
 * or a symbolic link's target (git keeps links as their text, so a clone's
 * tracked file may be a link to /dev/zero or to a FIFO, and following it would
 * read without end or wait forever). Anything else is refused, and so is a
 * file larger than any text worth blaming. */
#define BLAME_TEXT_MAX ((size_t)256 << 20)

static int work_tree_text(gitsvc_repo *repo, const char *rel_path, buf *text, gitsvc_error *err)
{
    buf path = BUF_INIT;
    buf_appendf(&path, "%s/%s", repo->root, rel_path);
    struct stat st;
    int rc = 0;
    if (lstat(path.data, &st) != 0) {
        rc = gitsvc__fail(err, ECP_ENOTFOUND, GITSVC_FILE_NOT_FOUND, "No such file in the work tree: %s", rel_path);
    } else if (S_ISLNK(st.st_mode)) {
        char target[PATH_MAX];
        ssize_t n = readlink(path.data, target, sizeof target);
        if (n < 0)
            rc = gitsvc__fail(err, ECP_EIO, GITSVC_COMMAND_FAILED, "Cannot read the link %s: %s", rel_path,
                              strerror(errno));
        else
            buf_append(text, target, (size_t)n);
    } else if (!S_ISREG(st.st_mode)) {
        rc = gitsvc__fail(err, ECP_EINVAL, GITSVC_COMMAND_FAILED, "Not a regular file: %s", rel_path);
    } else {
        int fd = open(path.data, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        struct stat opened;
        if (fd < 0 || fstat(fd, &opened) != 0 || !S_ISREG(opened.st_mode)) {
            rc = gitsvc__fail(err, ECP_ENOTFOUND, GITSVC_FILE_NOT_FOUND, "No such file in the work tree: %s",
                              rel_path);
        } else if ((size_t)opened.st_size > BLAME_TEXT_MAX ||
                   buf_read_fd(text, fd, BLAME_TEXT_MAX) == ECP_ETOOBIG) { /* or it grew while read */
            rc = gitsvc__fail(err, ECP_ETOOBIG, GITSVC_COMMAND_FAILED, "File too large to blame: %s", rel_path);
        }
        if (fd >= 0)
            close(fd);
    }
    buf_free(&path);
    return rc;
}

int gitsvc_blame_read(gitsvc_repo *repo, const char *rel_path, const ecp_job *job, arena *mem,
                      gitsvc_blame_line **lines, size_t *count, gitsvc_error *err)
{
    *lines = NULL;
    *count = 0;
    buf text = BUF_INIT;
    int rc = work_tree_text(repo, rel_path, &text, err);
    if (rc) {
        buf_free(&text);
        return rc;
    }
    const char *data = text.data ? text.data : "";

    git_blob *blob = NULL;
    git_blame *blame = NULL;
    line_map map = {0};
    rc = head_blob(repo, rel_path, &blob, err);
    if (rc)
        goto end;
    if (!blob) {
        rc = gitsvc__fail(err, ECP_ENOTFOUND, GITSVC_FILE_NOT_FOUND, "No such path '%s' in HEAD", rel_path);
        goto end;
    }
    git_blame_options o = GIT_BLAME_OPTIONS_INIT;
    if ((rc = git_blame_file(&blame, repo->repo, rel_path, &o)) < 0) {
        rc = gitsvc__libgit2(err, rc, GITSVC_COMMAND_FAILED, "Cannot blame the file");
        goto end;
    }
    if ((rc = gitsvc__check_cancel(job, err)))
        goto end;
    /* lines changed in the work tree since HEAD are not committed yet; the
     * others are HEAD's lines, moved by the changes around them */
    for (size_t i = 0; i < text.len; i++)
        map.new_lines += data[i] == '\n';
    if (text.len && data[text.len - 1] != '\n')
        map.new_lines++;
    map.old_of_new = xcalloc(map.new_lines + 1, sizeof *map.old_of_new);
    map.next_new = map.next_old = 1;
    git_diff_options d = GIT_DIFF_OPTIONS_INIT;
    d.context_lines = 0;
    d.flags = GIT_DIFF_FORCE_TEXT;
    if ((rc = git_diff_buffers(git_blob_rawcontent(blob), (size_t)git_blob_rawsize(blob), rel_path, data, text.len,
                               rel_path, &d, NULL, NULL, on_map_hunk, NULL, &map)) < 0) {
        rc = gitsvc__libgit2(err, rc, GITSVC_COMMAND_FAILED, "Cannot blame the file");
        goto end;
    }
    map_until(&map, map.new_lines + 1);
    gitsvc_blame_line *out = NULL;
    size_t cap = 0, nlines = 0;
    const char *p = data, *stop = data + text.len;
    while (p < stop) {
        const char *nl = memchr(p, '\n', (size_t)(stop - p));
        size_t len = nl ? (size_t)(nl - p) : (size_t)(stop - p);
        out = gitsvc__grow(mem, out, nlines, &cap, sizeof *out);
        gitsvc_blame_line *l = &out[nlines++];
        memset(l, 0, sizeof *l);
        l->line = nlines;
        l->content = arena_strndup(mem, p, len);
        size_t old = nlines <= map.new_lines ? map.old_of_new[nlines - 1] : 0;
        const git_blame_hunk *h = old ? git_blame_get_hunk_byline(blame, old) : NULL;
        if (h && !git_oid_is_zero(&h->final_commit_id) && h->final_signature) {
            gitsvc__short_hash(l->commit, &h->final_commit_id);
            l->author = dup_in(mem, h->final_signature->name);
            gitsvc__date(l->date, &h->final_signature->when);
        } else {
            memcpy(l->commit, "00000000", 9);
            l->author = "Not Committed Yet";
            git_time now = {(git_time_t)time(NULL), 0, '+'};
            gitsvc__date(l->date, &now);
        }
        p = nl ? nl + 1 : stop;
    }
    *lines = out;
    *count = nlines;
    rc = 0;
end:
    free(map.old_of_new);
    git_blame_free(blame);
    git_blob_free(blob);
    buf_free(&text);
    return rc;
}

/* ----- show ------------------------------------------------------------------------------------- */

int gitsvc_show(gitsvc_repo *repo, const char *rel_path, const char *ref, arena *mem, const char **content,
                size_t *len, gitsvc_error *err)
{
    git_object *obj = NULL, *tree = NULL;
    int rc = git_revparse_single(&obj, repo->repo, ref);
    if (rc < 0)
        return gitsvc__fail(err, ECP_ENOTFOUND, GITSVC_INVALID_REF, "Unknown revision: %s", ref);
    rc = git_object_peel(&tree, obj, GIT_OBJECT_TREE);
    git_object_free(obj);
    if (rc < 0)
        return gitsvc__fail(err, ECP_ENOTFOUND, GITSVC_INVALID_REF, "Not a commit or a tree: %s", ref);
    git_tree_entry *entry = NULL;
    rc = git_tree_entry_bypath(&entry, (git_tree *)tree, rel_path);
    if (rc < 0 || git_tree_entry_type(entry) != GIT_OBJECT_BLOB) {
        git_tree_entry_free(entry);
        git_object_free(tree);
        git_error_clear();
        return gitsvc__fail(err, ECP_ENOTFOUND, GITSVC_FILE_NOT_FOUND, "Path '%s' does not exist in '%s'", rel_path,
                            ref);
    }
    git_blob *blob = NULL;
    rc = git_blob_lookup(&blob, repo->repo, git_tree_entry_id(entry));
    git_tree_entry_free(entry);
    git_object_free(tree);
    if (rc < 0)
        return gitsvc__libgit2(err, rc, GITSVC_COMMAND_FAILED, "Cannot read the file");
    *len = (size_t)git_blob_rawsize(blob);
    *content = arena_strndup(mem, git_blob_rawcontent(blob), *len);
    git_blob_free(blob);
    return 0;
}

/* ----- log ------------------------------------------------------------------------------------------ */

int gitsvc_log_read(gitsvc_repo *repo, size_t max, const ecp_job *job, arena *mem, gitsvc_commit_info **commits,
                    size_t *count, gitsvc_error *err)
{
    *commits = NULL;
    *count = 0;
    git_revwalk *walk = NULL;
    int rc = git_revwalk_new(&walk, repo->repo);
    if (rc < 0)
        return gitsvc__libgit2(err, rc, GITSVC_COMMAND_FAILED, "Cannot walk the history");
    /* git log's own order (newest commit date first), produced as it walks:
     * GIT_SORT_TIME would walk the whole history before the first commit,
     * where nothing can cancel it */
    git_revwalk_sorting(walk, GIT_SORT_NONE);
    rc = git_repository_head_unborn(repo->repo) == 1 ? GIT_EUNBORNBRANCH : git_revwalk_push_head(walk);
    if (rc == GIT_ENOTFOUND || rc == GIT_EUNBORNBRANCH) {
        git_revwalk_free(walk);
        git_error_clear();
        return 0; /* no commit yet: an empty history */
    }
    if (rc < 0) {
        git_revwalk_free(walk);
        return gitsvc__libgit2(err, rc, GITSVC_COMMAND_FAILED, "Cannot walk the history");
    }
    gitsvc_commit_info *out = NULL;
    size_t n = 0, cap = 0;
    git_oid oid;
    int status = 0;
    while (n < max) {
        if ((n & 63) == 0 && (status = gitsvc__check_cancel(job, err)))
            break;
        rc = git_revwalk_next(&oid, walk);
        if (rc == GIT_ITEROVER)
            break;
        git_commit *c = NULL;
        if (rc < 0 || (rc = git_commit_lookup(&c, repo->repo, &oid)) < 0) {
            status = gitsvc__libgit2(err, rc, GITSVC_COMMAND_FAILED, "Cannot read a commit");
            break;
        }
        out = gitsvc__grow(mem, out, n, &cap, sizeof *out);
        gitsvc_commit_info *ci = &out[n++];
        git_oid_tostr(ci->hash, sizeof ci->hash, &oid);
        gitsvc__short_hash(ci->short_hash, &oid);
        const git_signature *author = git_commit_author(c);
        ci->author = dup_in(mem, author->name);
        ci->email = dup_in(mem, author->email);
        gitsvc__date(ci->date, &author->when);
        const char *summary = git_commit_summary(c);
        ci->subject = dup_in(mem, summary ? summary : "");
        git_commit_free(c);
    }
    git_revwalk_free(walk);
    if (status)
        return status;
    *commits = out;
    *count = n;
    return 0;
}

/* ----- branches, remotes, stashes, conflicts ---------------------------------------------------------- */

static int cmp_branch(const void *a, const void *b)
{
    return strcmp(((const gitsvc_branch *)a)->name, ((const gitsvc_branch *)b)->name);
}

int gitsvc_branches_read(gitsvc_repo *repo, arena *mem, gitsvc_branch **branches, size_t *count,
                         const char **current, gitsvc_error *err)
{
    *branches = NULL;
    *count = 0;
    gitsvc_status head;
    memset(&head, 0, sizeof head);
    int rc = gitsvc__head_info(repo->repo, mem, &head, err);
    if (rc)
        return rc;
    *current = head.branch;
    git_branch_iterator *it = NULL;
    if ((rc = git_branch_iterator_new(&it, repo->repo, GIT_BRANCH_LOCAL)) < 0)
        return gitsvc__libgit2(err, rc, GITSVC_COMMAND_FAILED, "Cannot list the branches");
    gitsvc_branch *out = NULL;
    size_t n = 0, cap = 0;
    git_reference *ref;
    git_branch_t type;
    while (git_branch_next(&ref, &type, it) == 0) {
        out = gitsvc__grow(mem, out, n, &cap, sizeof *out);
        gitsvc_branch *b = &out[n++];
        memset(b, 0, sizeof *b);
        const char *name = NULL;
        git_branch_name(&name, ref);
        b->name = dup_in(mem, name ? name : git_reference_shorthand(ref));
        b->current = git_branch_is_head(ref) == 1;
        git_reference *up = NULL;
        if (gitsvc__upstream(repo->repo, b->name, &up) == 0) {
            b->tracking = dup_in(mem, git_reference_shorthand(up));
            git_reference_free(up);
        }
        git_reference *resolved = NULL;
        if (git_reference_resolve(&resolved, ref) == 0 && git_reference_target(resolved))
            gitsvc__short_hash(b->commit, git_reference_target(resolved));
        git_reference_free(resolved);
        git_reference_free(ref);
    }
    git_branch_iterator_free(it);
    git_error_clear();
    if (n)
        qsort(out, n, sizeof *out, cmp_branch);
    *branches = out;
    *count = n;
    return 0;
}

int gitsvc_remotes_read(gitsvc_repo *repo, arena *mem, gitsvc_remote **remotes, size_t *count, gitsvc_error *err)
{
    *remotes = NULL;
    *count = 0;
    git_strarray names = {0};
    int rc = git_remote_list(&names, repo->repo);
    if (rc < 0)
        return gitsvc__libgit2(err, rc, GITSVC_COMMAND_FAILED, "Cannot list the remotes");
    gitsvc_remote *out = names.count ? arena_calloc(mem, names.count * sizeof *out) : NULL;
    size_t n = 0;
    for (size_t i = 0; i < names.count; i++) {
        git_remote *r = NULL;
        if (git_remote_lookup(&r, repo->repo, names.strings[i]) < 0)
            continue;
        const char *url = git_remote_url(r), *push = git_remote_pushurl(r);
        out[n++] = (gitsvc_remote){dup_in(mem, names.strings[i]), dup_in(mem, url ? url : ""),
                                   dup_in(mem, push ? push : url ? url : "")};
        git_remote_free(r);
    }
    git_strarray_dispose(&names);
    git_error_clear();
    *remotes = out;
    *count = n;
    return 0;
}

typedef struct stash_list {
    arena *mem;
    gitsvc_stash *items;
    size_t count, cap;
} stash_list;

static int on_stash(size_t index, const char *message, const git_oid *stash_id, void *payload)
{
    stash_list *l = payload;
    l->items = gitsvc__grow(l->mem, l->items, l->count, &l->cap, sizeof *l->items);
    gitsvc_stash *s = &l->items[l->count++];
    s->index = index;
    s->branch = "";
    s->message = dup_in(l->mem, message ? message : "");
    /* "On main: text" or "WIP on main: 1a2b3c4 subject": the branch, then the text */
    const char *m = s->message;
    const char *on = !strncmp(m, "WIP on ", 7) ? m + 7 : !strncmp(m, "On ", 3) ? m + 3 : NULL;
    const char *colon = on ? strstr(on, ": ") : NULL;
    if (colon) {
        s->branch = arena_strndup(l->mem, on, (size_t)(colon - on));
        s->message = colon + 2;
    }
    return 0;
}

int gitsvc_stash_list(gitsvc_repo *repo, arena *mem, gitsvc_stash **stashes, size_t *count, gitsvc_error *err)
{
    stash_list l = {.mem = mem};
    int rc = git_stash_foreach(repo->repo, on_stash, &l);
    if (rc < 0 && rc != GIT_ENOTFOUND)
        return gitsvc__libgit2(err, rc, GITSVC_COMMAND_FAILED, "Cannot list the stashes");
    git_error_clear();
    *stashes = l.items;
    *count = l.count;
    return 0;
}

int gitsvc_conflicts_read(gitsvc_repo *repo, arena *mem, const char ***paths, size_t *count, gitsvc_error *err)
{
    int rc = conflicted_paths(repo->repo, mem, paths, count);
    return rc < 0 ? gitsvc__libgit2(err, rc, GITSVC_COMMAND_FAILED, "Cannot read the index") : 0;
}
