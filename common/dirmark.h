/*
 * dirmark.h - which directories spotrun may replace.
 *
 * spotrun replaces the contents of a checkpoint directory (run --ckpt-dir)
 * and of a pull target with a checkpoint. It must never do that to files it
 * did not put there. A directory spotrun made (or restored into) carries the
 * extended attribute user.spotrun on the directory itself: invisible to the
 * job, never part of an archive (only the directory's contents are packed),
 * and kept across restores (the restore marks its temporary directory before
 * swapping it in). On a filesystem without user xattrs the mark is silently
 * absent; callers then have other evidence (the run's work dir records its
 * checkpoint directory).
 *
 * Functions return 0 or a negative errno value with a message (sr_errf).
 */
#ifndef SPOTRUN_DIRMARK_H
#define SPOTRUN_DIRMARK_H

#include <stddef.h>

#define SR_DIR_MARK_XATTR "user.spotrun"
/* The value of a mark that names no run (a pull target, or a directory an
 * older spotrun made: any run may replace it). */
#define SR_DIR_MARK_ANY "1"

/* Marks dir as spotrun's; -ENOTSUP (or another errno) when the filesystem
 * cannot hold the mark (callers usually ignore that). */
int sr_dir_mark(const char *dir);
/* The same, naming the run whose checkpoint directory it is. */
int sr_dir_mark_run(const char *dir, const char *run_id);
/* 1 when dir carries the mark, else 0. */
int sr_dir_marked(const char *dir);
/* 1 when dir carries the mark, its value (NUL-terminated, cut to len - 1)
 * in out; else 0. */
int sr_dir_mark_get(const char *dir, char *out, size_t len);

/* Whether spotrun may replace dir's contents: 0 when dir is missing, empty,
 * marked, or ours says so; else -EEXIST with a message naming up to three of
 * its entries ("what" names the directory: "--ckpt-dir DIR"). */
int sr_dir_check_replace(const char *dir, int ours, const char *what);

/* ---- directories spotrun made for a run (its work dir) --------------------
 *
 * A directory is spotrun's to empty or remove only if spotrun created it
 * (it did not exist) and marked it then: the marker is a file inside it,
 * SR_OWNER_MARK, mode 0600, created with O_EXCL before the directory got
 * its name (made under a temporary name, then renamed into place without
 * replacing anything), holding the run's name and a random nonce. A file
 * rather than an xattr: every filesystem holds one (tmpfs, NFS and overlay
 * may lack user xattrs). Every later use opens the directory with
 * O_NOFOLLOW from its parent and checks the owner, the marker and its run
 * name before anything in it is removed; the nonce tells one making of the
 * directory from another (a directory removed and made again by someone
 * else since the check is not ours any more). */
#define SR_OWNER_MARK ".spotrun-owner"
#define SR_OWNER_NONCE_LEN 32 /* hex digits */

/* Makes root/name (0700, with its marker) when it does not exist, else
 * checks that it is a directory of this user (not a symlink) whose marker
 * names run; the nonce of its marker goes to nonce (SR_OWNER_NONCE_LEN + 1
 * bytes). 0, or -EEXIST (it exists and spotrun did not make it for run),
 * -ELOOP (a symlink), -ENOTDIR, -EPERM (another user's), with a message
 * naming the path. *made (may be NULL) is 1 when this call created it. An
 * existing directory of ours open to group or others is made 0700. */
int sr_owned_dir_claim(const char *root, const char *name, const char *run, char *nonce, int *made);
/* Opens root/name (O_DIRECTORY, O_NOFOLLOW) for removals inside it: the fd,
 * or the same errors as sr_owned_dir_claim, also when its marker no longer
 * holds nonce (NULL: any). rootfd (may be NULL) receives root's fd, open
 * too, for removing name itself; the caller closes both. */
int sr_owned_dir_open(const char *root, const char *name, const char *run, const char *nonce,
                      int *rootfd);

/* The identity of a file (st_dev, st_ino), the only way spotrun compares
 * two paths. */
struct sr_file_id {
    unsigned long long dev, ino;
};
/* Of path (follow: through a symlink at its end, as the user named it;
 * else the link itself). 0 or -errno (no message). */
int sr_file_id(const char *path, int follow, struct sr_file_id *out);
/* 1 when both paths exist and are the same file, else 0. */
int sr_same_file(const char *a, int follow_a, const char *b, int follow_b);

/* The absolute, symlink-resolved form of path, which need not exist (the
 * existing part is resolved, the rest appended lexically). */
int sr_path_resolve(const char *path, char *out, size_t len);
/* 1 when a and b (resolved) are equal or one contains the other, else 0. */
int sr_paths_overlap(const char *a, const char *b);

#endif
