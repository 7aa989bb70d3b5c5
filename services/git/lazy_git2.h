/* lazy_git2: libgit2, opened the first time the service runs an operation
 * (core/lazy_lib.h), not by the dynamic loader at every start: with it come
 * OpenSSL, mbed TLS, libssh2 and http-parser.
 *
 * internal.h includes this header instead of <git2.h>, and the service calls
 * libgit2 by its own names; below, each name stands for the function in the
 * table, so a call compiles only if its function is listed in
 * GITSVC_GIT2_FUNCTIONS (an unlisted one would be an undefined symbol:
 * libgit2 is not linked). Nothing may call it before gitsvc__git2_load has
 * succeeded: gitsvc_start_libgit2 loads it before any job is made, and
 * gitsvc_repo_open, where every operation begins, refuses to go on without it.
 */
#ifndef ECPD_GIT_LAZY_GIT2_H
#define ECPD_GIT_LAZY_GIT2_H

/* Every libgit2 header a file of the service includes, before the names
 * below stand for the table (a declaration after them would not parse). */
#include <git2.h>
#include <git2/sys/mempack.h>
#include <git2/sys/odb_backend.h>

#include "error.h"
#include "lazy_lib.h"

#define GITSVC_GIT2_FUNCTIONS(X) \
    X(git_annotated_commit_free) \
    X(git_annotated_commit_from_ref) \
    X(git_annotated_commit_id) \
    X(git_blame_file) \
    X(git_blame_free) \
    X(git_blame_get_hunk_byline) \
    X(git_blob_free) \
    X(git_blob_lookup) \
    X(git_blob_rawcontent) \
    X(git_blob_rawsize) \
    X(git_branch_create) \
    X(git_branch_delete) \
    X(git_branch_is_head) \
    X(git_branch_iterator_free) \
    X(git_branch_iterator_new) \
    X(git_branch_lookup) \
    X(git_branch_move) \
    X(git_branch_name) \
    X(git_branch_name_is_valid) \
    X(git_branch_next) \
    X(git_branch_set_upstream) \
    X(git_buf_dispose) \
    X(git_checkout_head) \
    X(git_checkout_tree) \
    X(git_commit_amend) \
    X(git_commit_author) \
    X(git_commit_create) \
    X(git_commit_free) \
    X(git_commit_id) \
    X(git_commit_lookup) \
    X(git_commit_summary) \
    X(git_commit_tree) \
    X(git_commit_tree_id) \
    X(git_config_free) \
    X(git_config_get_string) \
    X(git_credential_ssh_key_from_agent) \
    X(git_credential_username_new) \
    X(git_credential_userpass_plaintext_new) \
    X(git_diff_buffers) \
    X(git_diff_find_similar) \
    X(git_diff_foreach) \
    X(git_diff_free) \
    X(git_diff_get_delta) \
    X(git_diff_index_to_workdir) \
    X(git_diff_num_deltas) \
    X(git_diff_tree_to_index) \
    X(git_diff_tree_to_tree) \
    X(git_error_clear) \
    X(git_error_last) \
    X(git_error_set_str) \
    X(git_graph_ahead_behind) \
    X(git_graph_descendant_of) \
    X(git_index_add) \
    X(git_index_add_all) \
    X(git_index_caps) \
    X(git_index_conflict_iterator_free) \
    X(git_index_conflict_iterator_new) \
    X(git_index_conflict_next) \
    X(git_index_conflict_remove) \
    X(git_index_entrycount) \
    X(git_index_find_prefix) \
    X(git_index_free) \
    X(git_index_get_byindex) \
    X(git_index_has_conflicts) \
    X(git_index_path) \
    X(git_index_read) \
    X(git_index_remove_bypath) \
    X(git_index_update_all) \
    X(git_index_version) \
    X(git_index_write) \
    X(git_index_write_tree) \
    X(git_index_write_tree_to) \
    X(git_libgit2_init) \
    X(git_mempack_new) \
    X(git_merge) \
    X(git_merge_analysis) \
    X(git_merge_base) \
    X(git_message_prettify) \
    X(git_object_free) \
    X(git_object_peel) \
    X(git_odb_add_backend) \
    X(git_odb_free) \
    X(git_odb_new) \
    X(git_oid_cpy) \
    X(git_oid_equal) \
    X(git_oid_is_zero) \
    X(git_oid_tostr) \
    X(git_reference_create) \
    X(git_reference_dwim) \
    X(git_reference_free) \
    X(git_reference_is_remote) \
    X(git_reference_lookup) \
    X(git_reference_name_to_id) \
    X(git_reference_peel) \
    X(git_reference_resolve) \
    X(git_reference_set_target) \
    X(git_reference_shorthand) \
    X(git_reference_symbolic_target) \
    X(git_reference_target) \
    X(git_reference_type) \
    X(git_remote_connect) \
    X(git_remote_disconnect) \
    X(git_remote_fetch) \
    X(git_remote_free) \
    X(git_remote_list) \
    X(git_remote_lookup) \
    X(git_remote_ls) \
    X(git_remote_name) \
    X(git_remote_push) \
    X(git_remote_pushurl) \
    X(git_remote_url) \
    X(git_repository_config_snapshot) \
    X(git_repository_free) \
    X(git_repository_head) \
    X(git_repository_head_detached) \
    X(git_repository_head_unborn) \
    X(git_repository_index) \
    X(git_repository_is_bare) \
    X(git_repository_mergehead_foreach) \
    X(git_repository_open_ext) \
    X(git_repository_path) \
    X(git_repository_set_head) \
    X(git_repository_state) \
    X(git_repository_state_cleanup) \
    X(git_repository_workdir) \
    X(git_repository_wrap_odb) \
    X(git_reset_default) \
    X(git_revparse_single) \
    X(git_revwalk_free) \
    X(git_revwalk_new) \
    X(git_revwalk_next) \
    X(git_revwalk_push_head) \
    X(git_revwalk_sorting) \
    X(git_signature_default) \
    X(git_signature_free) \
    X(git_stash_apply) \
    X(git_stash_drop) \
    X(git_stash_foreach) \
    X(git_stash_pop) \
    X(git_stash_save) \
    X(git_strarray_dispose) \
    X(git_tree_entry_bypath) \
    X(git_tree_entry_filemode) \
    X(git_tree_entry_free) \
    X(git_tree_entry_id) \
    X(git_tree_entry_type) \
    X(git_tree_free) \
    X(git_tree_id) \
    X(git_tree_lookup)

/* The table, LOAD and TABLE (core/lazy_lib.h): gitsvc__git2_load() opens libgit2 the first time
 * (any thread) and returns 0, or ECP_EIO with err naming the library and why
 * the loader refused it; gitsvc__git2() is the table, only after that succeeded. */
ECP_LAZY_LIB_DECLARE(gitsvc_git2_api, GITSVC_GIT2_FUNCTIONS, gitsvc__git2_load, gitsvc__git2);

#ifndef GITSVC_GIT2_TABLE_ONLY
#define git_annotated_commit_free (gitsvc__git2()->git_annotated_commit_free)
#define git_annotated_commit_from_ref (gitsvc__git2()->git_annotated_commit_from_ref)
#define git_annotated_commit_id (gitsvc__git2()->git_annotated_commit_id)
#define git_blame_file (gitsvc__git2()->git_blame_file)
#define git_blame_free (gitsvc__git2()->git_blame_free)
#define git_blame_get_hunk_byline (gitsvc__git2()->git_blame_get_hunk_byline)
#define git_blob_free (gitsvc__git2()->git_blob_free)
#define git_blob_lookup (gitsvc__git2()->git_blob_lookup)
#define git_blob_rawcontent (gitsvc__git2()->git_blob_rawcontent)
#define git_blob_rawsize (gitsvc__git2()->git_blob_rawsize)
#define git_branch_create (gitsvc__git2()->git_branch_create)
#define git_branch_delete (gitsvc__git2()->git_branch_delete)
#define git_branch_is_head (gitsvc__git2()->git_branch_is_head)
#define git_branch_iterator_free (gitsvc__git2()->git_branch_iterator_free)
#define git_branch_iterator_new (gitsvc__git2()->git_branch_iterator_new)
#define git_branch_lookup (gitsvc__git2()->git_branch_lookup)
#define git_branch_move (gitsvc__git2()->git_branch_move)
#define git_branch_name (gitsvc__git2()->git_branch_name)
#define git_branch_name_is_valid (gitsvc__git2()->git_branch_name_is_valid)
#define git_branch_next (gitsvc__git2()->git_branch_next)
#define git_branch_set_upstream (gitsvc__git2()->git_branch_set_upstream)
#define git_buf_dispose (gitsvc__git2()->git_buf_dispose)
#define git_checkout_head (gitsvc__git2()->git_checkout_head)
#define git_checkout_tree (gitsvc__git2()->git_checkout_tree)
#define git_commit_amend (gitsvc__git2()->git_commit_amend)
#define git_commit_author (gitsvc__git2()->git_commit_author)
#define git_commit_create (gitsvc__git2()->git_commit_create)
#define git_commit_free (gitsvc__git2()->git_commit_free)
#define git_commit_id (gitsvc__git2()->git_commit_id)
#define git_commit_lookup (gitsvc__git2()->git_commit_lookup)
#define git_commit_summary (gitsvc__git2()->git_commit_summary)
#define git_commit_tree (gitsvc__git2()->git_commit_tree)
#define git_commit_tree_id (gitsvc__git2()->git_commit_tree_id)
#define git_config_free (gitsvc__git2()->git_config_free)
#define git_config_get_string (gitsvc__git2()->git_config_get_string)
#define git_credential_ssh_key_from_agent (gitsvc__git2()->git_credential_ssh_key_from_agent)
#define git_credential_username_new (gitsvc__git2()->git_credential_username_new)
#define git_credential_userpass_plaintext_new (gitsvc__git2()->git_credential_userpass_plaintext_new)
#define git_diff_buffers (gitsvc__git2()->git_diff_buffers)
#define git_diff_find_similar (gitsvc__git2()->git_diff_find_similar)
#define git_diff_foreach (gitsvc__git2()->git_diff_foreach)
#define git_diff_free (gitsvc__git2()->git_diff_free)
#define git_diff_get_delta (gitsvc__git2()->git_diff_get_delta)
#define git_diff_index_to_workdir (gitsvc__git2()->git_diff_index_to_workdir)
#define git_diff_num_deltas (gitsvc__git2()->git_diff_num_deltas)
#define git_diff_tree_to_index (gitsvc__git2()->git_diff_tree_to_index)
#define git_diff_tree_to_tree (gitsvc__git2()->git_diff_tree_to_tree)
#define git_error_clear (gitsvc__git2()->git_error_clear)
#define git_error_last (gitsvc__git2()->git_error_last)
#define git_error_set_str (gitsvc__git2()->git_error_set_str)
#define git_graph_ahead_behind (gitsvc__git2()->git_graph_ahead_behind)
#define git_graph_descendant_of (gitsvc__git2()->git_graph_descendant_of)
#define git_index_add (gitsvc__git2()->git_index_add)
#define git_index_add_all (gitsvc__git2()->git_index_add_all)
#define git_index_caps (gitsvc__git2()->git_index_caps)
#define git_index_conflict_iterator_free (gitsvc__git2()->git_index_conflict_iterator_free)
#define git_index_conflict_iterator_new (gitsvc__git2()->git_index_conflict_iterator_new)
#define git_index_conflict_next (gitsvc__git2()->git_index_conflict_next)
#define git_index_conflict_remove (gitsvc__git2()->git_index_conflict_remove)
#define git_index_entrycount (gitsvc__git2()->git_index_entrycount)
#define git_index_find_prefix (gitsvc__git2()->git_index_find_prefix)
#define git_index_free (gitsvc__git2()->git_index_free)
#define git_index_get_byindex (gitsvc__git2()->git_index_get_byindex)
#define git_index_has_conflicts (gitsvc__git2()->git_index_has_conflicts)
#define git_index_path (gitsvc__git2()->git_index_path)
#define git_index_read (gitsvc__git2()->git_index_read)
#define git_index_remove_bypath (gitsvc__git2()->git_index_remove_bypath)
#define git_index_update_all (gitsvc__git2()->git_index_update_all)
#define git_index_version (gitsvc__git2()->git_index_version)
#define git_index_write (gitsvc__git2()->git_index_write)
#define git_index_write_tree (gitsvc__git2()->git_index_write_tree)
#define git_index_write_tree_to (gitsvc__git2()->git_index_write_tree_to)
#define git_libgit2_init (gitsvc__git2()->git_libgit2_init)
#define git_mempack_new (gitsvc__git2()->git_mempack_new)
#define git_merge (gitsvc__git2()->git_merge)
#define git_merge_analysis (gitsvc__git2()->git_merge_analysis)
#define git_merge_base (gitsvc__git2()->git_merge_base)
#define git_message_prettify (gitsvc__git2()->git_message_prettify)
#define git_object_free (gitsvc__git2()->git_object_free)
#define git_object_peel (gitsvc__git2()->git_object_peel)
#define git_odb_add_backend (gitsvc__git2()->git_odb_add_backend)
#define git_odb_free (gitsvc__git2()->git_odb_free)
#define git_odb_new (gitsvc__git2()->git_odb_new)
#define git_oid_cpy (gitsvc__git2()->git_oid_cpy)
#define git_oid_equal (gitsvc__git2()->git_oid_equal)
#define git_oid_is_zero (gitsvc__git2()->git_oid_is_zero)
#define git_oid_tostr (gitsvc__git2()->git_oid_tostr)
#define git_reference_create (gitsvc__git2()->git_reference_create)
#define git_reference_dwim (gitsvc__git2()->git_reference_dwim)
#define git_reference_free (gitsvc__git2()->git_reference_free)
#define git_reference_is_remote (gitsvc__git2()->git_reference_is_remote)
#define git_reference_lookup (gitsvc__git2()->git_reference_lookup)
#define git_reference_name_to_id (gitsvc__git2()->git_reference_name_to_id)
#define git_reference_peel (gitsvc__git2()->git_reference_peel)
#define git_reference_resolve (gitsvc__git2()->git_reference_resolve)
#define git_reference_set_target (gitsvc__git2()->git_reference_set_target)
#define git_reference_shorthand (gitsvc__git2()->git_reference_shorthand)
#define git_reference_symbolic_target (gitsvc__git2()->git_reference_symbolic_target)
#define git_reference_target (gitsvc__git2()->git_reference_target)
#define git_reference_type (gitsvc__git2()->git_reference_type)
#define git_remote_connect (gitsvc__git2()->git_remote_connect)
#define git_remote_disconnect (gitsvc__git2()->git_remote_disconnect)
#define git_remote_fetch (gitsvc__git2()->git_remote_fetch)
#define git_remote_free (gitsvc__git2()->git_remote_free)
#define git_remote_list (gitsvc__git2()->git_remote_list)
#define git_remote_lookup (gitsvc__git2()->git_remote_lookup)
#define git_remote_ls (gitsvc__git2()->git_remote_ls)
#define git_remote_name (gitsvc__git2()->git_remote_name)
#define git_remote_push (gitsvc__git2()->git_remote_push)
#define git_remote_pushurl (gitsvc__git2()->git_remote_pushurl)
#define git_remote_url (gitsvc__git2()->git_remote_url)
#define git_repository_config_snapshot (gitsvc__git2()->git_repository_config_snapshot)
#define git_repository_free (gitsvc__git2()->git_repository_free)
#define git_repository_head (gitsvc__git2()->git_repository_head)
#define git_repository_head_detached (gitsvc__git2()->git_repository_head_detached)
#define git_repository_head_unborn (gitsvc__git2()->git_repository_head_unborn)
#define git_repository_index (gitsvc__git2()->git_repository_index)
#define git_repository_is_bare (gitsvc__git2()->git_repository_is_bare)
#define git_repository_mergehead_foreach (gitsvc__git2()->git_repository_mergehead_foreach)
#define git_repository_open_ext (gitsvc__git2()->git_repository_open_ext)
#define git_repository_path (gitsvc__git2()->git_repository_path)
#define git_repository_set_head (gitsvc__git2()->git_repository_set_head)
#define git_repository_state (gitsvc__git2()->git_repository_state)
#define git_repository_state_cleanup (gitsvc__git2()->git_repository_state_cleanup)
#define git_repository_workdir (gitsvc__git2()->git_repository_workdir)
#define git_repository_wrap_odb (gitsvc__git2()->git_repository_wrap_odb)
#define git_reset_default (gitsvc__git2()->git_reset_default)
#define git_revparse_single (gitsvc__git2()->git_revparse_single)
#define git_revwalk_free (gitsvc__git2()->git_revwalk_free)
#define git_revwalk_new (gitsvc__git2()->git_revwalk_new)
#define git_revwalk_next (gitsvc__git2()->git_revwalk_next)
#define git_revwalk_push_head (gitsvc__git2()->git_revwalk_push_head)
#define git_revwalk_sorting (gitsvc__git2()->git_revwalk_sorting)
#define git_signature_default (gitsvc__git2()->git_signature_default)
#define git_signature_free (gitsvc__git2()->git_signature_free)
#define git_stash_apply (gitsvc__git2()->git_stash_apply)
#define git_stash_drop (gitsvc__git2()->git_stash_drop)
#define git_stash_foreach (gitsvc__git2()->git_stash_foreach)
#define git_stash_pop (gitsvc__git2()->git_stash_pop)
#define git_stash_save (gitsvc__git2()->git_stash_save)
#define git_strarray_dispose (gitsvc__git2()->git_strarray_dispose)
#define git_tree_entry_bypath (gitsvc__git2()->git_tree_entry_bypath)
#define git_tree_entry_filemode (gitsvc__git2()->git_tree_entry_filemode)
#define git_tree_entry_free (gitsvc__git2()->git_tree_entry_free)
#define git_tree_entry_id (gitsvc__git2()->git_tree_entry_id)
#define git_tree_entry_type (gitsvc__git2()->git_tree_entry_type)
#define git_tree_free (gitsvc__git2()->git_tree_free)
#define git_tree_id (gitsvc__git2()->git_tree_id)
#define git_tree_lookup (gitsvc__git2()->git_tree_lookup)
#endif

#endif
