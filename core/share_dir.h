/* share_dir: where a program finds the files it reads at run time (the
 * grammars' queries, language servers installed beside it).
 *
 * An install puts the programs in <prefix>/bin and their files in
 * <prefix>/share/ecpd. That directory is found from the running program's
 * own path (/proc/self/exe), never from a path compiled in, so a prefix
 * works wherever it is moved and the source tree is not needed. A program
 * run from the build tree has no <prefix>/share/ecpd beside it: only then
 * are the build's own paths used. */
#ifndef ECPD_SHARE_DIR_H
#define ECPD_SHARE_DIR_H

/* "<prefix>/share/ecpd" of the running program when that directory exists,
 * else NULL. malloc'd. */
char *ecp_share_dir(void);

/* "<prefix>/share/ecpd/<relative>" when the running program is installed
 * (whether or not that entry exists: an install never falls back to the
 * build's paths), else a copy of build_path (NULL when build_path is).
 * malloc'd. */
char *ecp_share_path(const char *relative, const char *build_path);

#endif
