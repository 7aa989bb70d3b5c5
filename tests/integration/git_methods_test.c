/* The git namespace through the in-process client, on repositories built
 * with the git command: every method's result, compared with what
 * `git status --porcelain=v2`, `git diff`, `git blame --line-porcelain`,
 * `git log` and friends say about the same repository, and every error a
 * client can provoke, with its gitErrorCode. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <sys/socket.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "git_fixture.h"

/* ----- comparing lists ------------------------------------------------------------ */

static int cmp_line(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* text's lines, sorted (text is changed in place; returns malloc'd text). */
static char *sorted_lines(char *text)
{
    char *lines[4096];
    size_t n = 0;
    for (char *save = NULL, *l = strtok_r(text, "\n", &save); l && n < 4096; l = strtok_r(NULL, "\n", &save))
        lines[n++] = l;
    qsort(lines, n, sizeof *lines, cmp_line);
    size_t len = 1;
    for (size_t i = 0; i < n; i++)
        len += strlen(lines[i]) + 1;
    char *out = calloc(1, len);
    for (size_t i = 0; i < n; i++) {
        strcat(out, lines[i]);
        strcat(out, "\n");
    }
    return out;
}

static void appendf(char *out, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void appendf(char *out, size_t cap, const char *fmt, ...)
{
    size_t len = strlen(out);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out + len, cap - len, fmt, ap);
    va_end(ap);
}

/* Our git/status as "branch ahead behind" then one line per entry, sorted. */
static char *our_status(void)
{
    char *r = ok("git/status", "{\"uri\":\"%s\",\"forceRefresh\":true}", repo);
    static char text[65536];
    text[0] = '\0';
    const char *lists[] = {"staged", "unstaged"};
    for (int k = 0; k < 2; k++) {
        long n = test_json_length(r, lists[k]);
        for (long i = 0; i < n; i++) {
            char p[64];
            snprintf(p, sizeof p, "%s[%ld].path", lists[k], i);
            char *path = test_json_string(r, p);
            snprintf(p, sizeof p, "%s[%ld].status", lists[k], i);
            char *st = test_json_string(r, p);
            snprintf(p, sizeof p, "%s[%ld].oldPath", lists[k], i);
            char *old = test_json_string(r, p);
            appendf(text, sizeof text, "%c %s %s%s%s\n", k ? 'W' : 'S', st, path, old ? " <- " : "", old ? old : "");
            free(path);
            free(st);
            free(old);
        }
    }
    long n = test_json_length(r, "untracked");
    for (long i = 0; i < n; i++) {
        char p[64];
        snprintf(p, sizeof p, "untracked[%ld]", i);
        char *path = test_json_string(r, p);
        appendf(text, sizeof text, "? %s\n", path);
        free(path);
    }
    char *branch = test_json_string(r, "branch");
    char *lines = sorted_lines(text);
    char *out = calloc(1, strlen(lines) + 256);
    sprintf(out, "branch %s +%lld -%lld\n%s", branch, (long long)get_int(r, "ahead"), (long long)get_int(r, "behind"),
            lines);
    free(branch);
    free(lines);
    free(r);
    return out;
}

/* The same from `git status --porcelain=v2 --branch -uall`. */
static char *git_status(void)
{
    char *raw = out_of("git status --porcelain=v2 --branch -uall");
    static char text[65536];
    text[0] = '\0';
    char branch[256] = "?";
    long ahead = 0, behind = 0;
    for (char *save = NULL, *l = strtok_r(raw, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        if (!strncmp(l, "# branch.head ", 14)) {
            snprintf(branch, sizeof branch, "%s", !strcmp(l + 14, "(detached)") ? "HEAD" : l + 14);
        } else if (!strncmp(l, "# branch.ab ", 12)) {
            sscanf(l + 12, "+%ld -%ld", &ahead, &behind);
        } else if (l[0] == '?') {
            appendf(text, sizeof text, "? %s\n", l + 2);
        } else if (l[0] == '1' || l[0] == '2' || l[0] == 'u') {
            char x = l[2], y = l[3];
            /* the path is after 8 (1), 9 (2) or 10 (u) space-separated fields */
            int fields = l[0] == '1' ? 8 : l[0] == '2' ? 9 : 10;
            char *p = l;
            for (int i = 0; i < fields; i++)
                p = strchr(p, ' ') + 1;
            char *orig = strchr(p, '\t');
            if (orig)
                *orig++ = '\0';
            if (l[0] == 'u') {
                appendf(text, sizeof text, "S U %s\nW U %s\n", p, p);
                continue;
            }
            if (x != '.')
                appendf(text, sizeof text, "S %c %s%s%s\n", x, p, orig ? " <- " : "", orig ? orig : "");
            if (y != '.')
                appendf(text, sizeof text, "W %c %s\n", y, p);
        }
    }
    free(raw);
    char *lines = sorted_lines(text);
    char *out = calloc(1, strlen(lines) + 512);
    sprintf(out, "branch %s +%ld -%ld\n%s", branch, ahead, behind, lines);
    free(lines);
    return out;
}

static void status_matches_git(void)
{
    char *ours = our_status(), *theirs = git_status();
    want_text(ours, theirs, "git/status against git status --porcelain=v2");
    free(ours);
    free(theirs);
}

/* A repository with a little history: a.txt, b.txt, dir/c.txt. */
static void small_history(void)
{
    write_at("a.txt", "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\n");
    write_at("b.txt", "bee\n");
    sh("mkdir -p dir && echo sea > dir/c.txt && git add -A");
    commit_on(1, "first commit");
    write_at("a.txt", "one\ntwo\nTHREE\nfour\nfive\nsix\nseven\neight\nnine\nten\neleven\n");
    sh("git add a.txt");
    commit_on(2, "second: shout three");
    write_at("b.txt", "bee\nbuzz\n");
    sh("git add b.txt");
    commit_on(3, "third");
}

/* ----- isRepo ------------------------------------------------------------------------ */

static void test_is_repo(void **state)
{
    small_history();
    char *r = ok("git/isRepo", "{\"uri\":\"%s/dir/c.txt\"}", repo);
    want_bool(r, "isRepo", true);
    want_str(r, "rootUri", repo);
    free(r);
    r = ok("git/isRepo", "{\"uri\":\"file://%s/dir/not-yet.txt\"}", repo);
    want_str(r, "rootUri", repo);
    free(r);
    r = ok("git/isRepo", "{\"uri\":\"%s\"}", top);
    assert_string_equal(r, "{\"isRepo\":false}");
    free(r);
    sh_in(top, "git init -q --bare bare.git");
    r = ok("git/isRepo", "{\"uri\":\"%s/bare.git\"}", top);
    assert_string_equal(r, "{\"isRepo\":false}");
    free(r);
    r = ok("git/isRepo", "{\"uri\":\"untitled:Untitled-1\"}");
    assert_string_equal(r, "{\"isRepo\":false}");
    free(r);
    free(fails("git/isRepo", -32602, "{}"));
}

/* ----- status ---------------------------------------------------------------------------- */

static void test_status_matches_porcelain(void **state)
{
    small_history();
    status_matches_git(); /* clean */
    write_at("a.txt", "changed\n");                       /* unstaged M */
    sh("rm dir/c.txt");                                   /* unstaged D */
    write_at("new.txt", "new\n");
    sh("git add new.txt");                                /* staged A */
    write_at("new.txt", "new, then changed\n");           /* and unstaged M: AM */
    sh("git mv b.txt renamed.txt");                       /* staged R with oldPath */
    sh("mkdir -p deep/er && echo x > deep/er/u1 && echo y > deep/u2 && echo z > top-level"); /* untracked, -uall */
    sh("echo 'ignored*' > .gitignore && echo i > ignored-file");
    status_matches_git();
    char *r = ok("git/status", "{\"uri\":\"%s\"}", repo);
    /* the shape the catalogue gives */
    want_str(r, "branch", "main");
    want_int(r, "ahead", 0);
    want_int(r, "behind", 0);
    assert_true(test_json_has(r, "staged[0].path"));
    free(r);
}

/* Nothing staged is read from the index's own tree when git left it valid,
 * and from the trees otherwise: each state the index can be in after git's
 * commands, through a forced status each time (the cache would hide it). */
static void test_status_index_tree(void **state)
{
    small_history();
    write_at("dir/c.txt", "edited, not staged\n");
    status_matches_git(); /* the index's tree is HEAD's */
    sh("git add dir/c.txt");
    status_matches_git(); /* a subtree of it is out of date */
    sh("git reset -q");
    status_matches_git(); /* rebuilt from HEAD again */
    sh("git add dir/c.txt && git commit -qm four && echo again >> dir/c.txt && git add dir/c.txt");
    sh("git checkout -q HEAD -- dir/c.txt");
    status_matches_git(); /* staged, then the staged change undone */
    sh("git rm -q --cached b.txt");
    status_matches_git(); /* a staged delete */
    sh("git add b.txt && git update-index --chmod=+x a.txt");
    status_matches_git(); /* a staged mode change */
    sh("rm .git/index && git reset -q");
    status_matches_git(); /* an index without a tree extension */
    write_at("intended.txt", "to be added\n");
    sh("git add -N intended.txt");
    status_matches_git(); /* intent to add: an unstaged A, nothing staged */
}

static void test_status_detached_unborn_upstream(void **state)
{
    /* unborn: no commit yet, files staged */
    write_at("first.txt", "1\n");
    sh("git add first.txt");
    status_matches_git();
    char *r = ok("git/branch", "{\"uri\":\"%s\"}", repo);
    want_str(r, "branch", "main");
    free(r);
    commit_on(1, "one");
    write_at("first.txt", "2\n");
    sh("git commit -qam two");
    /* detached */
    sh("git checkout -q --detach HEAD~1");
    status_matches_git();
    r = ok("git/status", "{\"uri\":\"%s\"}", repo);
    want_str(r, "branch", "HEAD");
    free(r);
    sh("git checkout -q main");
    /* ahead and behind an upstream */
    sh_in(top, "git clone -q --bare r origin.git");
    sh("git remote add origin '%s/origin.git' && git fetch -q origin && git branch -q -u origin/main", top);
    write_at("first.txt", "3\n");
    sh("git commit -qam three");
    sh_in(top, "git clone -q origin.git other && cd other && git config user.name O && git config user.email o@e && "
               "echo o > o.txt && git add o.txt && git commit -qm other && git push -q origin main");
    sh("git fetch -q origin");
    status_matches_git();
    r = ok("git/branch", "{\"uri\":\"%s\"}", repo);
    want_str(r, "branch", "main");
    want_str(r, "tracking", "origin/main");
    want_int(r, "ahead", 1);
    want_int(r, "behind", 1);
    free(r);
}

static void test_status_conflicts(void **state)
{
    write_at("c.txt", "base\n");
    sh("git add c.txt");
    commit_on(1, "base");
    sh("git checkout -q -b other && echo theirs > c.txt && git commit -qam theirs && git checkout -q main");
    write_at("c.txt", "ours\n");
    sh("git commit -qam ours");
    sh_in(repo, "git merge other || true");
    status_matches_git();
    char *r = ok("git/conflicts", "{\"uri\":\"%s\"}", repo);
    char *git = out_of("git diff --name-only --diff-filter=U");
    assert_string_equal(git, "c.txt\n");
    want_str(r, "files[0]", "c.txt");
    assert_int_equal(test_json_length(r, "files"), 1);
    free(git);
    free(r);
}

/* Whether a list of the answer is in path order, as one diff of the whole tree gives it. */
static void want_path_order(const char *r, const char *list, const char *field)
{
    long n = test_json_length(r, list);
    char *prev = NULL;
    for (long i = 0; i < n; i++) {
        char p[96];
        snprintf(p, sizeof p, field ? "%s[%ld].%s" : "%s[%ld]", list, i, field);
        char *path = test_json_string(r, p);
        if (prev && strcmp(prev, path) >= 0)
            fail_msg("%s: %s before %s", list, prev, path);
        free(prev);
        prev = path;
    }
    free(prev);
}

/* A tree large enough for the work tree to be diffed in parts, by the
 * status's threads: parts cut at the top level and inside a directory too
 * large for one (big/), names that sort across parts ("a", "a.txt", "a-b/",
 * "ab/"), untracked files and directories in every part and at the root, an
 * ignored directory inside a cut directory, repositories within (one
 * untracked directory each), a deleted directory, a directory become a
 * file, the large directory gone and a file in its place: each compared
 * with git, and each list in path order. */
static void test_status_in_parts(void **state)
{
    sh("mkdir -p big lib a-b ab gone typechg && "
       "for d in 0 1 2 3 4 5 6 7 8 9; do mkdir big/sub$d; for f in $(seq 0 149); do echo $d.$f > big/sub$d/f$f; done; "
       "done && for f in $(seq 0 599); do echo $f > lib/l$f; done && "
       "echo a > a && echo a > a.txt && echo x > a-b/x && echo y > ab/y && echo g > gone/g1 && echo g > gone/g2 && "
       "echo t > typechg/t && for f in $(seq 0 99); do echo $f > root$f.txt; done && git add -A");
    commit_on(1, "a tree in parts");
    status_matches_git(); /* clean */
    sh("echo more >> a && echo more >> a.txt && echo more >> a-b/x && echo more >> ab/y && "
       "echo more >> big/sub0/f0 && echo more >> big/sub9/f149 && echo more >> lib/l599 && echo more >> root0.txt && "
       "echo new > big/sub3/new.txt && mkdir -p big/newdir/deep zz && echo z > big/newdir/deep/z && echo w > zz/w && "
       "echo u > a.untracked && echo 'build/' > big/sub5/.gitignore && mkdir big/sub5/build && echo b > "
       "big/sub5/build/out && rm -rf gone && rm -rf typechg && echo now-a-file > typechg && "
       "echo staged >> lib/l0 && git add lib/l0 && echo intended > intended.txt && git add -N intended.txt && "
       "git init -q nested && echo n > nested/n && git init -q big/inner && echo i > big/inner/i");
    status_matches_git();
    char *r = ok("git/status", "{\"uri\":\"%s\",\"forceRefresh\":true}", repo);
    want_path_order(r, "unstaged", "path");
    want_path_order(r, "untracked", NULL);
    want_path_order(r, "staged", "path");
    free(r);
    sh("rm -rf big && echo now-a-file > big");
    status_matches_git();
    r = ok("git/status", "{\"uri\":\"%s\",\"forceRefresh\":true}", repo);
    want_path_order(r, "unstaged", "path");
    want_path_order(r, "untracked", NULL);
    free(r);
}

/* ----- diff ---------------------------------------------------------------------------------- */

/* Our hunks rendered as `git diff` prints them (headers left out). */
static char *render_hunks(const char *r)
{
    static char text[65536];
    text[0] = '\0';
    long n = test_json_length(r, "hunks");
    for (long h = 0; h < n; h++) {
        char p[96];
        snprintf(p, sizeof p, "hunks[%ld].oldStart", h);
        int64_t os = get_int(r, p);
        snprintf(p, sizeof p, "hunks[%ld].oldCount", h);
        int64_t oc = get_int(r, p);
        snprintf(p, sizeof p, "hunks[%ld].newStart", h);
        int64_t ns = get_int(r, p);
        snprintf(p, sizeof p, "hunks[%ld].newCount", h);
        int64_t nc = get_int(r, p);
        appendf(text, sizeof text, "@@ -%lld", (long long)os);
        if (oc != 1)
            appendf(text, sizeof text, ",%lld", (long long)oc);
        appendf(text, sizeof text, " +%lld", (long long)ns);
        if (nc != 1)
            appendf(text, sizeof text, ",%lld", (long long)nc);
        appendf(text, sizeof text, " @@\n");
        snprintf(p, sizeof p, "hunks[%ld].lines", h);
        long lines = test_json_length(r, p);
        for (long i = 0; i < lines; i++) {
            snprintf(p, sizeof p, "hunks[%ld].lines[%ld].type", h, i);
            char *type = test_json_string(r, p);
            snprintf(p, sizeof p, "hunks[%ld].lines[%ld].content", h, i);
            char *content = test_json_string(r, p);
            char mark = !strcmp(type, "added") ? '+' : !strcmp(type, "deleted") ? '-' : ' ';
            appendf(text, sizeof text, "%c%s\n", mark, content);
            free(type);
            free(content);
        }
    }
    return text;
}

/* `git diff` output without its header lines and the text after "@@ ... @@". */
static char *git_diff_body(const char *args)
{
    char *raw = out_of("git diff --no-color --no-ext-diff -U3 %s", args);
    static char text[65536];
    text[0] = '\0';
    bool in_hunk = false;
    for (char *save = NULL, *l = strtok_r(raw, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        if (!strncmp(l, "@@", 2)) {
            in_hunk = true;
            char *end = strstr(l + 2, "@@");
            appendf(text, sizeof text, "%.*s\n", (int)(end - l + 2), l);
        } else if (in_hunk && (l[0] == ' ' || l[0] == '+' || l[0] == '-')) {
            appendf(text, sizeof text, "%s\n", l);
        }
    }
    free(raw);
    return text;
}

static void test_diff_matches_git_diff(void **state)
{
    small_history();
    /* two hunks, a deletion at the top, an addition at the end */
    write_at("a.txt", "two\nTHREE\nfour\nfive\nsix\nseven\nEIGHT\nnine\nten\neleven\ntwelve\n");
    char *r = ok("git/diff", "{\"uri\":\"%s\",\"path\":\"a.txt\"}", repo);
    want_text(render_hunks(r), git_diff_body("-- a.txt"), "git/diff a.txt");
    /* line numbers of the catalogue's shape */
    want_str(r, "hunks[0].lines[0].type", "deleted");
    want_int(r, "hunks[0].lines[0].oldLineNum", 1);
    assert_false(test_json_has(r, "hunks[0].lines[0].newLineNum"));
    free(r);
    /* staged: the index against HEAD, by an absolute path */
    sh("git add a.txt");
    write_at("a.txt", "unstaged only\n");
    r = ok("git/diff", "{\"uri\":\"%s\",\"path\":\"%s/a.txt\",\"staged\":true}", repo, repo);
    want_text(render_hunks(r), git_diff_body("--cached -- a.txt"), "git/diff staged a.txt");
    free(r);
    /* no changes, an untracked file: no hunks */
    r = ok("git/diff", "{\"uri\":\"%s\",\"path\":\"b.txt\"}", repo);
    assert_string_equal(r, "{\"hunks\":[]}");
    free(r);
    write_at("untracked.txt", "u\n");
    r = ok("git/diff", "{\"uri\":\"%s\",\"path\":\"untracked.txt\"}", repo);
    assert_string_equal(r, "{\"hunks\":[]}");
    free(r);
    free(git_fails("git/diff", "COMMAND_FAILED", "{\"uri\":\"%s\",\"path\":\"/etc/passwd\"}", repo));
    free(git_fails("git/diff", "COMMAND_FAILED", "{\"uri\":\"%s\",\"path\":\"../outside.txt\"}", repo));
    free(fails("git/diff", -32602, "{\"uri\":\"%s\"}", repo));
}

static void test_diff_lines_and_buffer(void **state)
{
    small_history();
    write_at("a.txt", "zero\none\ntwo\nTHREE!\nfour\nfive\nsix\nseven\nnine\nten\neleven\n");
    char *r = ok("git/diffLines", "{\"uri\":\"%s\",\"path\":\"a.txt\"}", repo);
    assert_string_equal(r, "{\"changes\":[{\"line\":1,\"type\":\"added\"},{\"line\":4,\"type\":\"modified\"},"
                           "{\"line\":8,\"type\":\"deleted\"}]}");
    free(r);
    /* the buffer against HEAD, whatever the index holds */
    sh("git add a.txt");
    r = ok("git/diffBuffer", "{\"uri\":\"%s\",\"path\":\"a.txt\",\"content\":\"one\\ntwo\\nTHREE\\nfour\\nfive\\n"
                             "six\\nseven\\neight\\nnine\\nten\\neleven\\nnew\\n\"}",
           repo);
    assert_string_equal(r, "{\"changes\":[{\"line\":12,\"type\":\"added\"}]}");
    free(r);
    /* untracked: every line added */
    r = ok("git/diffBuffer", "{\"uri\":\"%s\",\"path\":\"fresh.txt\",\"content\":\"a\\nb\"}", repo);
    assert_string_equal(r, "{\"changes\":[{\"line\":1,\"type\":\"added\"},{\"line\":2,\"type\":\"added\"}]}");
    free(r);
    /* an open document's unsaved text, by documentId and by its path */
    r = ok("document/open", "{\"uri\":\"file://%s/b.txt\"}", repo);
    char *id = test_json_string(r, "documentId");
    free(r);
    free(ok("document/insert", "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":0},\"text\":\"top\\n\"}", id));
    r = ok("git/diffBuffer", "{\"uri\":\"%s\",\"path\":\"b.txt\",\"documentId\":\"%s\"}", repo, id);
    assert_string_equal(r, "{\"changes\":[{\"line\":1,\"type\":\"added\"}]}");
    free(r);
    r = ok("git/diffBuffer", "{\"uri\":\"%s\",\"path\":\"%s/b.txt\"}", repo, repo);
    assert_string_equal(r, "{\"changes\":[{\"line\":1,\"type\":\"added\"}]}");
    free(r);
    free(id);
    free(fails("git/diffBuffer", -32602, "{\"uri\":\"%s\",\"path\":\"a.txt\"}", repo));
}

/* ----- blame, show, log ----------------------------------------------------------------------- */

static void test_blame_matches_line_porcelain(void **state)
{
    small_history();
    write_at("a.txt", "zero\none\ntwo\nTHREE\nfour\n5\nsix\nseven\neight\nnine\nten\neleven\n");
    char *r = ok("git/blame", "{\"uri\":\"%s\",\"path\":\"a.txt\"}", repo);
    char *raw = out_of("git blame --line-porcelain a.txt");
    static char theirs[65536], ours[65536];
    theirs[0] = ours[0] = '\0';
    char sha[9] = "", author[256] = "";
    long line = 0;
    long long t = 0;
    for (char *save = NULL, *l = strtok_r(raw, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        if (l[0] == '\t') {
            char date[16] = "today";
            if (strcmp(sha, "00000000")) {
                time_t tt = (time_t)t + 3600; /* the fixture's +0100 */
                struct tm tm;
                gmtime_r(&tt, &tm);
                strftime(date, sizeof date, "%Y-%m-%d", &tm);
            }
            appendf(theirs, sizeof theirs, "%s|%s|%s|%ld|%s\n", sha, author, date, line, l + 1);
        } else if (strlen(l) > 41 && l[40] == ' ' && strspn(l, "0123456789abcdef") == 40) {
            memcpy(sha, l, 8);
            sha[8] = '\0';
            sscanf(l + 41, "%*d %ld", &line);
        } else if (!strncmp(l, "author ", 7)) {
            snprintf(author, sizeof author, "%s", l + 7);
        } else if (!strncmp(l, "author-time ", 12)) {
            t = atoll(l + 12);
        }
    }
    free(raw);
    long n = test_json_length(r, "lines");
    assert_int_equal(n, 12);
    for (long i = 0; i < n; i++) {
        char p[64];
        snprintf(p, sizeof p, "lines[%ld]", i);
        char *one = test_json_raw(r, p);
        char *commit = test_json_string(one, "commit"), *au = test_json_string(one, "author"),
             *date = test_json_string(one, "date"), *content = test_json_string(one, "content");
        appendf(ours, sizeof ours, "%s|%s|%s|%lld|%s\n", commit, au, strcmp(commit, "00000000") ? date : "today",
                (long long)get_int(one, "line"), content);
        free(one);
        free(commit);
        free(au);
        free(date);
        free(content);
    }
    want_text(ours, theirs, "git/blame against git blame --line-porcelain");
    free(r);
    free(git_fails("git/blame", "FILE_NOT_FOUND", "{\"uri\":\"%s\",\"path\":\"missing.txt\"}", repo));
    write_at("untracked.txt", "u\n");
    free(git_fails("git/blame", "FILE_NOT_FOUND", "{\"uri\":\"%s\",\"path\":\"untracked.txt\"}", repo));
}

static void test_show(void **state)
{
    small_history();
    char *r = ok("git/show", "{\"uri\":\"%s\",\"path\":\"a.txt\",\"ref\":\"HEAD~2\"}", repo);
    char *content = test_json_string(r, "content");
    char *git = out_of("git show HEAD~2:a.txt");
    assert_string_equal(content, git);
    free(content);
    free(git);
    free(r);
    /* an absolute path under the root, a branch name, a hash */
    r = ok("git/show", "{\"uri\":\"%s\",\"path\":\"%s/dir/c.txt\",\"ref\":\"main\"}", repo, repo);
    want_str(r, "content", "sea\n");
    free(r);
    char *hash = out_of("git rev-parse --short=8 HEAD~1 | tr -d '\\n'");
    r = ok("git/show", "{\"uri\":\"%s\",\"path\":\"b.txt\",\"ref\":\"%s\"}", repo, hash);
    want_str(r, "content", "bee\n");
    free(r);
    free(hash);
    free(git_fails("git/show", "INVALID_REF", "{\"uri\":\"%s\",\"path\":\"a.txt\",\"ref\":\"no-such-ref\"}", repo));
    free(git_fails("git/show", "FILE_NOT_FOUND", "{\"uri\":\"%s\",\"path\":\"nope.txt\",\"ref\":\"HEAD\"}", repo));
    free(fails("git/show", -32602, "{\"uri\":\"%s\",\"path\":\"a.txt\"}", repo));
}

static void test_log_matches_git_log(void **state)
{
    small_history();
    char *r = ok("git/log", "{\"uri\":\"%s\"}", repo);
    static char ours[8192];
    ours[0] = '\0';
    long n = test_json_length(r, "commits");
    for (long i = 0; i < n; i++) {
        char p[64];
        snprintf(p, sizeof p, "commits[%ld]", i);
        char *c = test_json_raw(r, p);
        char *h = test_json_string(c, "hash"), *sh8 = test_json_string(c, "shortHash"),
             *a = test_json_string(c, "author"), *e = test_json_string(c, "email"),
             *d = test_json_string(c, "date"), *m = test_json_string(c, "message");
        assert_int_equal(strncmp(h, sh8, 8), 0);
        appendf(ours, sizeof ours, "%s|%s|%s|%s|%s|%s\n", h, sh8, a, e, d, m);
        free(h), free(sh8), free(a), free(e), free(d), free(m), free(c);
    }
    char *git = out_of("git log --format='%%H|%%h|%%an|%%ae|%%ad|%%s' --date=short --abbrev=8");
    want_text(ours, git, "git/log against git log");
    free(git);
    free(r);
    r = ok("git/log", "{\"uri\":\"%s\",\"count\":2}", repo);
    assert_int_equal(test_json_length(r, "commits"), 2);
    free(r);
    r = ok("git/log", "{\"uri\":\"%s\",\"maxCount\":1}", repo);
    assert_int_equal(test_json_length(r, "commits"), 1);
    want_str(r, "commits[0].message", "third");
    free(r);
    /* an unborn branch has no history */
    sh_in(top, "git init -q -b main empty");
    r = ok("git/log", "{\"uri\":\"%s/empty\"}", top);
    assert_string_equal(r, "{\"commits\":[]}");
    free(r);
}

/* ----- changing the index ------------------------------------------------------------------------ */

static void test_stage_unstage_discard(void **state)
{
    small_history();
    write_at("a.txt", "changed\n");
    sh("rm b.txt");
    sh("mkdir -p newdir && echo n > newdir/n.txt");
    free(ok("git/stage", "{\"uri\":\"%s\",\"paths\":[\"a.txt\",\"b.txt\",\"%s/newdir\"]}", repo, repo));
    char *git = out_of("git diff --cached --name-status");
    assert_string_equal(git, "M\ta.txt\nD\tb.txt\nA\tnewdir/n.txt\n");
    free(git);
    status_matches_git();
    free(ok("git/unstage", "{\"uri\":\"%s\",\"paths\":[\"a.txt\",\"newdir/n.txt\"]}", repo));
    git = out_of("git diff --cached --name-status");
    assert_string_equal(git, "D\tb.txt\n");
    free(git);
    /* discard: back to HEAD in the index and the work tree */
    free(ok("git/discard", "{\"uri\":\"%s\",\"paths\":[\"a.txt\",\"b.txt\"]}", repo));
    git = out_of("git status --porcelain -uall");
    assert_string_equal(git, "?? newdir/n.txt\n");
    free(git);
    char *b = read_at("b.txt");
    assert_string_equal(b, "bee\nbuzz\n");
    free(b);
    /* a directory, and a file whose name is a pattern: only what is named */
    write_at("dir/c.txt", "changed too\n");
    free(ok("git/discard", "{\"uri\":\"%s\",\"paths\":[\"dir\"]}", repo));
    char *c = read_at("dir/c.txt");
    assert_string_equal(c, "sea\n");
    free(c);
    write_at("star*.txt", "literal\n");
    write_at("starry.txt", "other\n");
    free(ok("git/stage", "{\"uri\":\"%s\",\"paths\":[\"star*.txt\"]}", repo));
    git = out_of("git diff --cached --name-only");
    assert_string_equal(git, "star*.txt\n");
    free(git);
    free(ok("git/unstage", "{\"uri\":\"%s\",\"paths\":[\"star*.txt\"]}", repo));
    sh("rm 'star*.txt' starry.txt");
    /* stageAll: everything, as git add -A */
    write_at("a.txt", "again\n");
    sh("rm dir/c.txt");
    free(ok("git/stageAll", "{\"uri\":\"%s\"}", repo));
    git = out_of("git diff --cached --name-status");
    assert_string_equal(git, "M\ta.txt\nD\tdir/c.txt\nA\tnewdir/n.txt\n");
    free(git);
    free(git_fails("git/stage", "FILE_NOT_FOUND", "{\"uri\":\"%s\",\"paths\":[\"no/such/file\"]}", repo));
    free(git_fails("git/stage", "COMMAND_FAILED", "{\"uri\":\"%s\",\"paths\":[\"/etc/hostname\"]}", repo));
    free(git_fails("git/stage", "COMMAND_FAILED", "{\"uri\":\"%s\",\"paths\":[\".git/config\"]}", repo));
    free(fails("git/stage", -32602, "{\"uri\":\"%s\",\"paths\":[]}", repo));
    free(fails("git/stage", -32602, "{\"uri\":\"%s\",\"paths\":[1]}", repo));
    free(fails("git/unstage", -32602, "{\"uri\":\"%s\"}", repo));
}

static void test_index_lock_left_behind(void **state)
{
    small_history();
    write_at("a.txt", "changed\n");
    sh("touch .git/index.lock");
    char *before = out_of("md5sum < .git/index");
    char *r = git_fails("git/stage", "COMMAND_FAILED", "{\"uri\":\"%s\",\"paths\":[\"a.txt\"]}", repo);
    char *message = test_json_string(r, "message");
    assert_non_null(strstr(message, "index.lock"));
    free(message);
    free(r);
    free(git_fails("git/stageAll", "COMMAND_FAILED", "{\"uri\":\"%s\"}", repo));
    free(git_fails("git/unstage", "COMMAND_FAILED", "{\"uri\":\"%s\",\"paths\":[\"b.txt\"]}", repo));
    char *after = out_of("md5sum < .git/index");
    assert_string_equal(before, after); /* nothing half-changed */
    free(before);
    free(after);
    sh("rm .git/index.lock");
    free(ok("git/stage", "{\"uri\":\"%s\",\"paths\":[\"a.txt\"]}", repo));
}

static void test_commit_and_amend(void **state)
{
    /* the first commit of an unborn branch */
    write_at("f.txt", "1\n");
    sh("git add f.txt");
    char *r = ok("git/commit", "{\"uri\":\"%s\",\"message\":\"  first commit  \\n\\n\"}", repo);
    want_bool(r, "success", true);
    char *hash = test_json_string(r, "hash");
    char *git = out_of("git rev-parse --short=8 HEAD | tr -d '\\n'");
    assert_string_equal(hash, git);
    free(hash);
    free(git);
    free(r);
    git = out_of("git log -1 --format='%%an <%%ae>|%%B'");
    /* as `git commit -m` keeps it: trailing blanks and blank lines go, the indent stays */
    assert_string_equal(git, "Ada Lovelace <ada@example.com>|  first commit\n\n");
    free(git);
    /* nothing staged */
    write_at("f.txt", "2\n");
    r = ok("git/commit", "{\"uri\":\"%s\",\"message\":\"nothing\"}", repo);
    assert_string_equal(r, "{\"success\":false,\"error\":\"Nothing to commit\"}");
    free(r);
    /* amend with and without a message */
    sh("git add f.txt");
    r = ok("git/amend", "{\"uri\":\"%s\",\"message\":\"first, amended\"}", repo);
    want_bool(r, "success", true);
    free(r);
    git = out_of("git log --format=%%s && git show HEAD:f.txt");
    assert_string_equal(git, "first, amended\n2\n");
    free(git);
    write_at("f.txt", "3\n");
    sh("git add f.txt");
    r = ok("git/amend", "{\"uri\":\"%s\"}", repo);
    free(r);
    git = out_of("git log --format=%%s && git show HEAD:f.txt");
    assert_string_equal(git, "first, amended\n3\n");
    free(git);
    free(git_fails("git/commit", "COMMAND_FAILED", "{\"uri\":\"%s\",\"message\":\"   \"}", repo));
    free(fails("git/commit", -32602, "{\"uri\":\"%s\"}", repo));
    /* no identity configured anywhere: a clear error, nothing committed */
    sh_in(top, "git init -q -b main anon && cd anon && echo a > a && git add a");
    char anon[160];
    snprintf(anon, sizeof anon, "%s/anon", top);
    r = git_fails("git/commit", "COMMAND_FAILED", "{\"uri\":\"%s\",\"message\":\"m\"}", anon);
    char *message = test_json_string(r, "message");
    assert_non_null(strstr(message, "user.name"));
    free(message);
    free(r);
    /* with an identity, still nothing to amend before the first commit */
    sh_in(anon, "git config user.name A && git config user.email a@e");
    free(git_fails("git/amend", "INVALID_REF", "{\"uri\":\"%s\"}", anon));
}

/* ----- branches ---------------------------------------------------------------------------------------- */

static void test_branches(void **state)
{
    small_history();
    free(ok("git/createBranch", "{\"uri\":\"%s\",\"name\":\"feature\"}", repo));
    char *git = out_of("git symbolic-ref --short HEAD");
    assert_string_equal(git, "feature\n");
    free(git);
    free(ok("git/createBranch", "{\"uri\":\"%s\",\"name\":\"later\",\"checkout\":false}", repo));
    git = out_of("git symbolic-ref --short HEAD");
    assert_string_equal(git, "feature\n");
    free(git);
    free(git_fails("git/createBranch", "BRANCH_EXISTS", "{\"uri\":\"%s\",\"name\":\"later\"}", repo));
    free(git_fails("git/createBranch", "INVALID_REF", "{\"uri\":\"%s\",\"name\":\"bad..name\"}", repo));

    /* branches, as git for-each-ref sees them */
    sh("git branch -q -u main later");
    char *r = ok("git/branches", "{\"uri\":\"%s\"}", repo);
    static char ours[4096];
    ours[0] = '\0';
    for (long i = 0; i < test_json_length(r, "branches"); i++) {
        char p[64];
        snprintf(p, sizeof p, "branches[%ld]", i);
        char *b = test_json_raw(r, p);
        char *name = test_json_string(b, "name"), *tracking = test_json_string(b, "tracking"),
             *commit = test_json_string(b, "commit");
        bool current = false;
        test_json_bool(b, "current", &current);
        appendf(ours, sizeof ours, "%s|%s|%s|%s\n", current ? "*" : " ", name, tracking ? tracking : "", commit);
        free(name), free(tracking), free(commit), free(b);
    }
    git = out_of("git for-each-ref --format='%%(HEAD)|%%(refname:short)|%%(upstream:short)|%%(objectname:short=8)' "
                 "refs/heads");
    want_text(ours, git, "git/branches against git for-each-ref");
    free(git);
    want_str(r, "current", "feature");
    free(r);

    /* switch */
    free(ok("git/switchBranch", "{\"uri\":\"%s\",\"name\":\"main\"}", repo));
    git = out_of("git symbolic-ref --short HEAD");
    assert_string_equal(git, "main\n");
    free(git);
    free(git_fails("git/switchBranch", "BRANCH_NOT_FOUND", "{\"uri\":\"%s\",\"name\":\"nope\"}", repo));
    /* a local change that the other branch's version would overwrite */
    sh("git checkout -q feature && echo f > a.txt && git commit -qam f && git checkout -q main");
    write_at("a.txt", "local edit\n");
    free(git_fails("git/switchBranch", "UNCOMMITTED_CHANGES", "{\"uri\":\"%s\",\"name\":\"feature\"}", repo));
    char *a = read_at("a.txt");
    assert_string_equal(a, "local edit\n"); /* not lost */
    free(a);
    git = out_of("git symbolic-ref --short HEAD");
    assert_string_equal(git, "main\n");
    free(git);
    /* a local change that does not conflict travels along */
    sh("git checkout -q a.txt");
    write_at("b.txt", "kept\n");
    free(ok("git/switchBranch", "{\"uri\":\"%s\",\"name\":\"feature\"}", repo));
    a = read_at("b.txt");
    assert_string_equal(a, "kept\n");
    free(a);
    sh("git checkout -q b.txt && git checkout -q main");

    /* delete: unmerged needs force; the current branch never */
    free(git_fails("git/deleteBranch", "COMMAND_FAILED", "{\"uri\":\"%s\",\"name\":\"feature\"}", repo));
    free(git_fails("git/deleteBranch", "COMMAND_FAILED", "{\"uri\":\"%s\",\"name\":\"main\"}", repo));
    free(git_fails("git/deleteBranch", "BRANCH_NOT_FOUND", "{\"uri\":\"%s\",\"name\":\"nope\"}", repo));
    free(ok("git/deleteBranch", "{\"uri\":\"%s\",\"name\":\"later\"}", repo));
    free(ok("git/deleteBranch", "{\"uri\":\"%s\",\"name\":\"feature\",\"force\":true}", repo));
    git = out_of("git branch --format='%%(refname:short)'");
    assert_string_equal(git, "main\n");
    free(git);

    /* rename the current branch */
    sh("git branch -q other");
    free(git_fails("git/renameBranch", "BRANCH_EXISTS", "{\"uri\":\"%s\",\"newName\":\"other\"}", repo));
    free(ok("git/renameBranch", "{\"uri\":\"%s\",\"newName\":\"trunk\"}", repo));
    git = out_of("git symbolic-ref --short HEAD && git branch --format='%%(refname:short)'");
    assert_string_equal(git, "trunk\nother\ntrunk\n");
    free(git);
    sh("git checkout -q --detach");
    free(git_fails("git/renameBranch", "COMMAND_FAILED", "{\"uri\":\"%s\",\"newName\":\"x\"}", repo));
    r = ok("git/branches", "{\"uri\":\"%s\"}", repo);
    want_str(r, "current", "HEAD");
    free(r);
}

/* ----- stashes ------------------------------------------------------------------------------------------- */

static void test_stash(void **state)
{
    small_history();
    free(git_fails("git/stash", "NOTHING_TO_COMMIT", "{\"uri\":\"%s\"}", repo));
    free(git_fails("git/stashPop", "NO_STASH", "{\"uri\":\"%s\"}", repo));
    write_at("a.txt", "stashed one\n");
    char *r = ok("git/stash", "{\"uri\":\"%s\",\"message\":\"first stash\"}", repo);
    assert_string_equal(r, "{\"success\":true,\"stashId\":\"stash@{0}\"}");
    free(r);
    char *git = out_of("git status --porcelain");
    assert_string_equal(git, ""); /* the work tree is clean again */
    free(git);
    write_at("b.txt", "stashed two\n");
    free(ok("git/stash", "{\"uri\":\"%s\"}", repo));
    r = ok("git/stashList", "{\"uri\":\"%s\"}", repo);
    git = out_of("git stash list --format='%%gd|%%gs'");
    want_str(r, "stashes[0].id", "stash@{0}");
    want_int(r, "stashes[0].index", 0);
    want_str(r, "stashes[0].branch", "main");
    want_str(r, "stashes[1].id", "stash@{1}");
    want_str(r, "stashes[1].branch", "main");
    want_str(r, "stashes[1].message", "first stash");
    assert_int_equal(test_json_length(r, "stashes"), 2);
    /* the same entries git lists */
    assert_non_null(strstr(git, "stash@{1}|On main: first stash"));
    free(git);
    free(r);
    free(git_fails("git/stashDrop", "STASH_NOT_FOUND", "{\"uri\":\"%s\",\"stashId\":\"stash@{5}\"}", repo));
    free(git_fails("git/stashDrop", "STASH_NOT_FOUND", "{\"uri\":\"%s\",\"stashId\":\"bogus\"}", repo));
    free(fails("git/stashDrop", -32602, "{\"uri\":\"%s\"}", repo));
    /* apply keeps it, pop drops it, drop drops it */
    free(ok("git/stashApply", "{\"uri\":\"%s\",\"stashId\":\"stash@{1}\"}", repo));
    char *a = read_at("a.txt");
    assert_string_equal(a, "stashed one\n");
    free(a);
    sh("git checkout -q a.txt");
    free(ok("git/stashPop", "{\"uri\":\"%s\"}", repo));
    a = read_at("b.txt");
    assert_string_equal(a, "stashed two\n");
    free(a);
    git = out_of("git stash list --format=%%gs");
    assert_string_equal(git, "On main: first stash\n");
    free(git);
    /* applying over a conflicting local change changes nothing */
    write_at("a.txt", "conflicting\n");
    free(git_fails("git/stashApply", "UNCOMMITTED_CHANGES", "{\"uri\":\"%s\",\"stashId\":\"0\"}", repo));
    a = read_at("a.txt");
    assert_string_equal(a, "conflicting\n");
    free(a);
    free(ok("git/stashDrop", "{\"uri\":\"%s\",\"stashId\":\"stash@{0}\"}", repo));
    git = out_of("git stash list");
    assert_string_equal(git, "");
    free(git);
}

/* ----- merges -------------------------------------------------------------------------------------------- */

static void test_merge(void **state)
{
    small_history();
    /* fast-forward */
    sh("git checkout -q -b ff && echo ff > ff.txt && git add ff.txt && git commit -qm ff && git checkout -q main");
    char *r = ok("git/merge", "{\"uri\":\"%s\",\"branch\":\"ff\"}", repo);
    assert_string_equal(r, "{\"success\":true,\"conflicts\":[],\"message\":\"Fast-forward\"}");
    free(r);
    char *git = out_of("git rev-parse main ff | uniq | wc -l | tr -d ' '");
    assert_string_equal(git, "1\n");
    free(git);
    r = ok("git/merge", "{\"uri\":\"%s\",\"branch\":\"ff\"}", repo);
    want_str(r, "message", "Already up to date.");
    free(r);
    /* a merge commit with two parents */
    sh("git checkout -q -b side && echo s > side.txt && git add side.txt && git commit -qm side && "
       "git checkout -q main && echo m > main.txt && git add main.txt && git commit -qm main");
    r = ok("git/merge", "{\"uri\":\"%s\",\"branch\":\"side\"}", repo);
    want_bool(r, "success", true);
    free(r);
    git = out_of("git log -1 --format='%%P|%%s' | awk -F'|' '{print split($1, a, \" \") \"|\" $2}'");
    assert_string_equal(git, "2|Merge branch 'side'\n");
    free(git);
    git = out_of("git status --porcelain");
    assert_string_equal(git, "");
    free(git);
    /* conflicts: listed, left to resolve, then aborted with an unrelated local change kept */
    sh("git checkout -q -b clash && echo theirs > a.txt && git commit -qam theirs && git checkout -q main && "
       "echo ours > a.txt && git commit -qam ours");
    write_at("b.txt", "unrelated local change\n");
    r = ok("git/merge", "{\"uri\":\"%s\",\"branch\":\"clash\"}", repo);
    want_bool(r, "success", false);
    want_str(r, "conflicts[0]", "a.txt");
    free(r);
    r = ok("git/conflicts", "{\"uri\":\"%s\"}", repo);
    assert_string_equal(r, "{\"files\":[\"a.txt\"]}");
    free(r);
    git = out_of("git diff --name-only --diff-filter=U");
    assert_string_equal(git, "a.txt\n");
    free(git);
    status_matches_git();
    free(git_fails("git/commit", "MERGE_CONFLICT", "{\"uri\":\"%s\",\"message\":\"m\"}", repo));
    free(git_fails("git/merge", "MERGE_CONFLICT", "{\"uri\":\"%s\",\"branch\":\"side\"}", repo));
    free(ok("git/mergeAbort", "{\"uri\":\"%s\"}", repo));
    git = out_of("git status --porcelain && cat a.txt b.txt && ls .git/MERGE_HEAD");
    assert_string_equal(git, " M b.txt\nours\nunrelated local change\n");
    free(git);
    free(git_fails("git/mergeAbort", "COMMAND_FAILED", "{\"uri\":\"%s\"}", repo));
    /* resolving a conflict and committing concludes the merge */
    sh("git checkout -q b.txt");
    r = ok("git/merge", "{\"uri\":\"%s\",\"branch\":\"clash\"}", repo);
    want_bool(r, "success", false);
    free(r);
    write_at("a.txt", "resolved\n");
    free(ok("git/stage", "{\"uri\":\"%s\",\"paths\":[\"a.txt\"]}", repo));
    r = ok("git/commit", "{\"uri\":\"%s\",\"message\":\"resolved\"}", repo);
    want_bool(r, "success", true);
    free(r);
    git = out_of("git log -1 --format=%%P | wc -w | tr -d ' ' && ls .git/MERGE_HEAD");
    assert_string_equal(git, "2\n");
    free(git);
    /* a merge that would overwrite local changes changes nothing */
    sh("git checkout -q -b later && echo later > a.txt && git commit -qam later && git checkout -q main");
    sh("git checkout -q -b later2 && echo x > b.txt && git commit -qam b && git checkout -q main");
    write_at("b.txt", "dirty\n");
    free(git_fails("git/merge", "UNCOMMITTED_CHANGES", "{\"uri\":\"%s\",\"branch\":\"later2\"}", repo));
    char *b = read_at("b.txt");
    assert_string_equal(b, "dirty\n");
    free(b);
    free(git_fails("git/merge", "BRANCH_NOT_FOUND", "{\"uri\":\"%s\",\"branch\":\"nope\"}", repo));
}

/* ----- remotes -------------------------------------------------------------------------------------------- */

static void test_remotes_push_pull_fetch(void **state)
{
    small_history();
    sh_in(top, "git init -q --bare -b main origin.git && git init -q --bare -b main mirror.git");
    sh("git remote add origin '%s/origin.git' && git remote add mirror 'file://%s/mirror.git'", top, top);
    sh("git remote set-url --push mirror 'file://%s/mirror-push.git'", top);
    char *r = ok("git/remotes", "{\"uri\":\"%s\"}", repo);
    char expect[1024];
    snprintf(expect, sizeof expect,
             "{\"remotes\":[{\"name\":\"mirror\",\"fetchUrl\":\"file://%s/mirror.git\",\"pushUrl\":\"file://%s/"
             "mirror-push.git\"},{\"name\":\"origin\",\"fetchUrl\":\"%s/origin.git\",\"pushUrl\":\"%s/origin.git\"}]}",
             top, top, top, top);
    assert_string_equal(r, expect);
    free(r);

    /* push with upstream to a path remote */
    r = ok("git/push", "{\"uri\":\"%s\",\"setUpstream\":true}", repo);
    assert_string_equal(r, "{\"success\":true}");
    free(r);
    char *git = out_of("git --git-dir='%s/origin.git' rev-parse main && git rev-parse HEAD", top);
    char *nl = strchr(git, '\n');
    assert_int_equal(strncmp(git, nl + 1, 40), 0);
    free(git);
    r = ok("git/branch", "{\"uri\":\"%s\"}", repo);
    want_str(r, "tracking", "origin/main");
    free(r);
    /* and to a file:// remote */
    sh("git remote set-url --push mirror 'file://%s/mirror.git'", top);
    r = ok("git/push", "{\"uri\":\"%s\",\"remote\":\"mirror\"}", repo);
    assert_string_equal(r, "{\"success\":true}");
    free(r);

    /* someone else pushes: ours is rejected, in the result */
    sh_in(top, "git clone -q origin.git other && cd other && git config user.name O && git config user.email o@e && "
               "echo o > o.txt && git add o.txt && git commit -qm other && git push -q origin main");
    write_at("mine.txt", "mine\n");
    sh("git add mine.txt");
    commit_on(5, "mine");
    r = ok("git/push", "{\"uri\":\"%s\"}", repo);
    want_bool(r, "success", false);
    assert_true(test_json_has(r, "error"));
    free(r);
    /* fetch, then pull merges */
    free(ok("git/fetch", "{\"uri\":\"%s\"}", repo));
    r = ok("git/branch", "{\"uri\":\"%s\"}", repo);
    want_int(r, "ahead", 1);
    want_int(r, "behind", 1);
    free(r);
    r = ok("git/pull", "{\"uri\":\"%s\"}", repo);
    assert_string_equal(r, "{\"success\":true,\"changed\":true}");
    free(r);
    char *o = read_at("o.txt");
    assert_string_equal(o, "o\n");
    free(o);
    r = ok("git/push", "{\"uri\":\"%s\"}", repo);
    assert_string_equal(r, "{\"success\":true}");
    free(r);
    r = ok("git/pull", "{\"uri\":\"%s\"}", repo);
    assert_string_equal(r, "{\"success\":true,\"changed\":false}");
    free(r);
    /* force is --force-with-lease: a remote branch that moved since we last
     * fetched is not overwritten unseen; once fetched, it is replaced */
    sh_in(top, "cd other && git pull -q --no-rebase origin main && echo p > o.txt && git commit -qam again && "
               "git push -q origin main");
    write_at("a.txt", "conflict me\n");
    sh("git commit -qam local");
    char *theirs = out_of("git --git-dir='%s/origin.git' rev-parse main", top);
    r = ok("git/push", "{\"uri\":\"%s\",\"force\":true}", repo);
    want_bool(r, "success", false);
    char *error = test_json_string(r, "error");
    assert_non_null(error && strstr(error, "stale info"));
    free(error);
    free(r);
    git = out_of("git --git-dir='%s/origin.git' rev-parse main", top);
    assert_string_equal(git, theirs); /* untouched */
    free(git);
    free(theirs);
    free(ok("git/fetch", "{\"uri\":\"%s\"}", repo));
    r = ok("git/push", "{\"uri\":\"%s\",\"force\":true}", repo);
    assert_string_equal(r, "{\"success\":true}");
    free(r);
    git = out_of("git --git-dir='%s/origin.git' rev-parse main && git rev-parse HEAD", top);
    nl = strchr(git, '\n');
    assert_int_equal(strncmp(git, nl + 1, 40), 0); /* replaced by ours */
    free(git);
    /* a pull that conflicts */
    sh_in(top, "cd other && git fetch -q origin && git reset -q --hard origin/main && echo theirs > a.txt && "
               "git commit -qam theirs && git push -q origin main");
    write_at("a.txt", "ours\n");
    sh("git commit -qam ours");
    r = ok("git/pull", "{\"uri\":\"%s\"}", repo);
    want_bool(r, "success", false);
    want_bool(r, "conflicts", true);
    want_str(r, "conflictFiles[0]", "a.txt");
    assert_true(test_json_has(r, "error"));
    free(r);
    free(ok("git/mergeAbort", "{\"uri\":\"%s\"}", repo));
    /* unknown remote, a remote that is not there */
    r = ok("git/push", "{\"uri\":\"%s\",\"remote\":\"nowhere\"}", repo);
    want_bool(r, "success", false);
    free(r);
    sh("git remote add gone '%s/gone.git'", top);
    free(git_fails("git/fetch", "COMMAND_FAILED", "{\"uri\":\"%s\",\"remote\":\"nowhere\"}", repo));
    free(git_fails("git/fetch", "NETWORK_ERROR", "{\"uri\":\"%s\",\"remote\":\"gone\"}", repo));
}

/* A local HTTP server (python3) that answers every request with 401 and a
 * Basic challenge; its port is returned, its pid kept in top/auth.pid. */
static int start_auth_server(void)
{
    sh_in(top, "python3 -c \"import http.server, socketserver, os\n"
               "class H(http.server.BaseHTTPRequestHandler):\n"
               "  def do_GET(self):\n"
               "    self.send_response(401); self.send_header('WWW-Authenticate', 'Basic realm=x');\n"
               "    self.send_header('Content-Length', '0'); self.end_headers()\n"
               "  do_POST = do_GET\n"
               "  def log_message(self, *a): pass\n"
               "s = socketserver.TCPServer(('127.0.0.1', 0), H)\n"
               "open('port.tmp', 'w').write(str(s.server_address[1])); os.rename('port.tmp', 'port')\n"
               "s.serve_forever()\" & echo $! > auth.pid");
    char path[128];
    snprintf(path, sizeof path, "%s/port", top);
    for (int i = 0; i < 500 && access(path, R_OK) != 0; i++)
        usleep(10000);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    int port = 0;
    assert_int_equal(fscanf(f, "%d", &port), 1);
    fclose(f);
    return port;
}

static void test_remote_failures(void **state)
{
    small_history();
    int port = start_auth_server();
    /* a server that wants a password: refused at once, never a prompt */
    sh("git remote add locked 'http://127.0.0.1:%d/repo.git'", port);
    char *r = git_fails("git/fetch", "AUTH_FAILED", "{\"uri\":\"%s\",\"remote\":\"locked\"}", repo);
    free(r);
    r = ok("git/push", "{\"uri\":\"%s\",\"remote\":\"locked\"}", repo);
    want_bool(r, "success", false);
    assert_true(test_json_has(r, "error"));
    free(r);
    r = ok("git/pull", "{\"uri\":\"%s\",\"remote\":\"locked\"}", repo);
    want_bool(r, "success", false);
    free(r);
    sh_in(top, "kill $(cat auth.pid)");
    /* nobody listening */
    sh("git remote add refused 'http://127.0.0.1:1/repo.git'");
    free(git_fails("git/fetch", "NETWORK_ERROR", "{\"uri\":\"%s\",\"remote\":\"refused\"}", repo));
    sh("git remote add ssh-refused 'ssh://git@127.0.0.1:1/repo.git'");
    free(git_fails("git/fetch", "NETWORK_ERROR", "{\"uri\":\"%s\",\"remote\":\"ssh-refused\"}", repo));

    /* a remote that takes the connection and then says nothing: the kernel
     * accepts on the listener's behalf, and nobody ever answers */
    int silent = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t addr_len = sizeof addr;
    assert_int_equal(bind(silent, (struct sockaddr *)&addr, sizeof addr), 0);
    assert_int_equal(listen(silent, 4), 0);
    assert_int_equal(getsockname(silent, (struct sockaddr *)&addr, &addr_len), 0);
    sh("git remote add silent 'http://127.0.0.1:%d/repo.git'", ntohs(addr.sin_port));
    free(ok("config/set", "{\"key\":\"git.networkTimeoutMs\",\"value\":1000}"));
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    r = git_fails("git/fetch", "NETWORK_ERROR", "{\"uri\":\"%s\",\"remote\":\"silent\"}", repo);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    assert_non_null(strstr(r, "did not finish within 1000 ms"));
    free(r);
    double waited = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    assert_true(waited >= 0.9 && waited < 10);
    r = ok("git/push", "{\"uri\":\"%s\",\"remote\":\"silent\"}", repo);
    want_bool(r, "success", false);
    assert_non_null(strstr(r, "did not finish within 1000 ms"));
    free(r);
    /* the transfers still waiting on the silent remote end when it goes */
    close(silent);
    free(ok("config/reset", "{\"key\":\"git.networkTimeoutMs\"}"));
}

/* A local smart-HTTP git server (python3 in front of `git http-backend`) over
 * the bare repositories in top, that wants Basic credentials alice:s3cret;
 * its port is returned, its pid kept in top/auth.pid. */
static int start_git_http_server(void)
{
    char script[160];
    snprintf(script, sizeof script, "%s/git_http.py", top);
    FILE *f = fopen(script, "w");
    assert_non_null(f);
    fputs("import base64, http.server, os, socketserver, subprocess, sys\n"
          "WANT = 'Basic ' + base64.b64encode(b'alice:s3cret').decode()\n"
          "class H(http.server.BaseHTTPRequestHandler):\n"
          "  def body(self):\n"
          "    if self.headers.get('Transfer-Encoding', '').lower() == 'chunked':\n"
          "      data = b''\n"
          "      while True:\n"
          "        n = int(self.rfile.readline().split(b';')[0], 16)\n"
          "        chunk = self.rfile.read(n + 2)[:n]\n"
          "        if n == 0: return data\n"
          "        data += chunk\n"
          "    return self.rfile.read(int(self.headers.get('Content-Length') or 0))\n"
          "  def do_GET(self):\n"
          "    data = self.body()\n"
          "    if self.headers.get('Authorization') != WANT:\n"
          "      self.send_response(401); self.send_header('WWW-Authenticate', 'Basic realm=git')\n"
          "      self.send_header('Content-Length', '0'); self.end_headers(); return\n"
          "    path, _, query = self.path.partition('?')\n"
          "    env = dict(os.environ, GIT_PROJECT_ROOT=os.getcwd(), GIT_HTTP_EXPORT_ALL='1', PATH_INFO=path,\n"
          "               QUERY_STRING=query, REQUEST_METHOD=self.command, REMOTE_USER='alice',\n"
          "               REMOTE_ADDR='127.0.0.1', CONTENT_TYPE=self.headers.get('Content-Type', ''),\n"
          "               CONTENT_LENGTH=str(len(data)))\n"
          "    out = subprocess.run(['git', 'http-backend'], input=data, env=env, capture_output=True).stdout\n"
          "    head, _, rest = out.partition(b'\\r\\n\\r\\n')\n"
          "    status, headers = 200, []\n"
          "    for line in head.decode().split('\\r\\n'):\n"
          "      k, _, v = line.partition(':')\n"
          "      if k.lower() == 'status': status = int(v.split()[0])\n"
          "      elif k: headers.append((k, v.strip()))\n"
          "    self.send_response(status)\n"
          "    for k, v in headers: self.send_header(k, v)\n"
          "    self.send_header('Content-Length', str(len(rest))); self.end_headers(); self.wfile.write(rest)\n"
          "  do_POST = do_GET\n"
          "  def log_message(self, *a): pass\n"
          "s = socketserver.TCPServer(('127.0.0.1', 0), H)\n"
          "open('port.tmp', 'w').write(str(s.server_address[1])); os.rename('port.tmp', 'port')\n"
          "s.serve_forever()\n",
          f);
    fclose(f);
    sh_in(top, "python3 git_http.py & echo $! > auth.pid");
    char path[128];
    snprintf(path, sizeof path, "%s/port", top);
    for (int i = 0; i < 500 && access(path, R_OK) != 0; i++)
        usleep(10000);
    f = fopen(path, "r");
    assert_non_null(f);
    int port = 0;
    assert_int_equal(fscanf(f, "%d", &port), 1);
    fclose(f);
    return port;
}

/* An HTTP remote's credentials come from the secret store: none or a wrong
 * one is AUTH_FAILED (at once, asked once), the right one fetches and pushes. */
static void test_http_remote_with_a_stored_token(void **state)
{
    small_history();
    sh_in(top, "git init -q --bare served.git && git -C '%s' push -q '%s/served.git' main", repo, top);
    int port = start_git_http_server();
    sh("git remote add web 'http://127.0.0.1:%d/served.git'", port);
    free(git_fails("git/fetch", "AUTH_FAILED", "{\"uri\":\"%s\",\"remote\":\"web\"}", repo));
    free(ok("secret/set", "{\"key\":\"git.token.127.0.0.1\",\"value\":\"alice:wrong\"}"));
    free(git_fails("git/fetch", "AUTH_FAILED", "{\"uri\":\"%s\",\"remote\":\"web\"}", repo));
    char *r = ok("git/push", "{\"uri\":\"%s\",\"remote\":\"web\"}", repo);
    want_bool(r, "success", false);
    free(r);
    /* host:port wins over the host */
    free(ok("secret/set", "{\"key\":\"git.token.127.0.0.1:%d\",\"value\":\"alice:s3cret\"}", port));
    free(ok("git/fetch", "{\"uri\":\"%s\",\"remote\":\"web\"}", repo));
    char *theirs = out_of("git rev-parse refs/remotes/web/main");
    char *ours = out_of("git rev-parse main");
    assert_string_equal(theirs, ours);
    free(theirs);
    free(ours);
    write_at("b.txt", "pushed over http\n");
    sh("git commit -qam 'over http'");
    r = ok("git/push", "{\"uri\":\"%s\",\"remote\":\"web\"}", repo);
    want_bool(r, "success", true);
    free(r);
    ours = out_of("git rev-parse main");
    char *served = out_of("git --git-dir='%s/served.git' rev-parse main", top);
    assert_string_equal(served, ours);
    free(served);
    free(ours);
    sh_in(top, "kill $(cat auth.pid) && rm auth.pid");
}

/* ----- bad input -------------------------------------------------------------------------------------------- */

static void test_not_a_repository(void **state)
{
    char *r = git_fails("git/status", "NOT_A_REPO", "{\"uri\":\"%s\"}", top);
    want_str(r, "data.uri", top);
    free(r);
    sh_in(top, "git init -q --bare bare.git");
    free(git_fails("git/status", "NOT_A_REPO", "{\"uri\":\"%s/bare.git\"}", top));
    free(git_fails("git/log", "NOT_A_REPO", "{\"uri\":\"file://%s/bare.git\"}", top));
    free(git_fails("git/stage", "NOT_A_REPO", "{\"uri\":\"/\",\"paths\":[\"x\"]}"));
    free(fails("git/status", -32602, "{}"));
    free(fails("git/status", -32602, "{\"uri\":\"relative/path\"}"));
    free(fails("git/status", -32602, "{\"uri\":\"%s\",\"forceRefresh\":\"yes\"}", repo));
    free(fails("git/log", -32602, "{\"uri\":\"%s\",\"count\":-1}", repo));
    free(fails("git/nope", -32601, "{}"));
    /* every method refuses what is not a repository the same way */
    const char *methods[] = {"git/branch", "git/stageAll", "git/branches", "git/remotes", "git/conflicts",
                             "git/stashList", "git/mergeAbort", "git/stash"};
    for (size_t i = 0; i < sizeof methods / sizeof *methods; i++)
        free(git_fails(methods[i], "NOT_A_REPO", "{\"uri\":\"%s\"}", top));
}

static void test_unborn_branch(void **state)
{
    status_matches_git();
    char *r = ok("git/branches", "{\"uri\":\"%s\"}", repo);
    assert_string_equal(r, "{\"branches\":[],\"current\":\"main\"}");
    free(r);
    free(git_fails("git/createBranch", "INVALID_REF", "{\"uri\":\"%s\",\"name\":\"x\"}", repo));
    free(git_fails("git/show", "INVALID_REF", "{\"uri\":\"%s\",\"path\":\"a\",\"ref\":\"HEAD\"}", repo));
    write_at("a.txt", "a\n");
    free(git_fails("git/stash", "COMMAND_FAILED", "{\"uri\":\"%s\"}", repo));
    r = ok("git/commit", "{\"uri\":\"%s\",\"message\":\"nothing yet\"}", repo);
    want_bool(r, "success", false);
    free(r);
    free(ok("git/stage", "{\"uri\":\"%s\",\"paths\":[\"a.txt\"]}", repo));
    free(ok("git/unstage", "{\"uri\":\"%s\",\"paths\":[\"a.txt\"]}", repo));
    status_matches_git();
    free(ok("git/renameBranch", "{\"uri\":\"%s\",\"newName\":\"trunk\"}", repo));
    char *git = out_of("git symbolic-ref --short HEAD");
    assert_string_equal(git, "trunk\n");
    free(git);
}

/* ----- the method table ------------------------------------------------------------------------------------ */

/* The catalogue's 32 methods, each with the params it names: ecp/methods
 * lists exactly these, and each signature carries every one of its params. */
static void test_methods_match_the_catalogue(void **state)
{
    static const test_method_signature catalogue[] = {
        {"git/isRepo", {"uri"}},
        {"git/status", {"uri", "forceRefresh?"}},
        {"git/branch", {"uri"}},
        {"git/stage", {"uri", "paths"}},
        {"git/stageAll", {"uri"}},
        {"git/unstage", {"uri", "paths"}},
        {"git/discard", {"uri", "paths"}},
        {"git/diff", {"uri", "path", "staged?"}},
        {"git/diffLines", {"uri", "path"}},
        {"git/diffBuffer", {"uri", "path", "content?"}},
        {"git/commit", {"uri", "message"}},
        {"git/amend", {"uri", "message?"}},
        {"git/log", {"uri", "count?", "maxCount?"}},
        {"git/branches", {"uri"}},
        {"git/createBranch", {"uri", "name", "checkout?"}},
        {"git/switchBranch", {"uri", "name"}},
        {"git/deleteBranch", {"uri", "name", "force?"}},
        {"git/renameBranch", {"uri", "newName"}},
        {"git/push", {"uri", "remote?", "force?", "setUpstream?"}},
        {"git/pull", {"uri", "remote?"}},
        {"git/fetch", {"uri", "remote?"}},
        {"git/remotes", {"uri"}},
        {"git/merge", {"uri", "branch"}},
        {"git/mergeAbort", {"uri"}},
        {"git/conflicts", {"uri"}},
        {"git/stash", {"uri", "message?"}},
        {"git/stashPop", {"uri", "stashId?"}},
        {"git/stashList", {"uri"}},
        {"git/stashDrop", {"uri", "stashId"}},
        {"git/stashApply", {"uri", "stashId?"}},
        {"git/blame", {"uri", "path"}},
        {"git/show", {"uri", "path", "ref"}},
    };
    size_t count = sizeof catalogue / sizeof *catalogue;
    assert_int_equal(count, 32);
    char *r = ok("ecp/methods", "{\"namespace\":\"git\"}");
    char *why = test_methods_mismatch(r, catalogue, count);
    if (why)
        fail_msg("%s", why);
    free(r);
    r = ok("initialize", "{}");
    assert_non_null(strstr(r, "\"git/didChange\""));
    free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_is_repo, fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_status_matches_porcelain, fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_status_index_tree, fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_status_detached_unborn_upstream, fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_status_conflicts, fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_status_in_parts, fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_diff_matches_git_diff, fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_diff_lines_and_buffer, fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_blame_matches_line_porcelain, fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_show, fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_log_matches_git_log, fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_stage_unstage_discard, fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_index_lock_left_behind, fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_commit_and_amend, fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_branches, fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_stash, fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_merge, fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_remotes_push_pull_fetch, fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_remote_failures, fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_http_remote_with_a_stored_token, fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_not_a_repository, fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_unborn_branch, fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_methods_match_the_catalogue, fixture_setup, fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
