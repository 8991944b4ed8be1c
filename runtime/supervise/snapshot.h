/*
 * snapshot.h - the O(files) snapshot of the checkpoint directory that a
 * commit packs from (sr_snap_*), so the job waits for the snapshot only,
 * not for packing and compressing.
 *
 * Each regular file of the directory gets, in this order of preference:
 *   reflink   ioctl FICLONE: a copy-on-write clone (btrfs, XFS...), safe
 *             whatever the job does to the file afterwards;
 *   link      a hard link, for a file whose content the job replaces by
 *             a rename (spotrun.saving()): learnt per path, the file
 *             seen at an earlier commit and, since then, either a new
 *             inode or the same one untouched (size and mtime);
 *   copy      for a file written in place (same inode, changed since the
 *             last commit), one not seen before, and every file when no
 *             place on the directory's file system can hold links.
 * A copy that changed while it was read fails the snapshot (SR_ECHANGED),
 * as packing would have. A linked file is checked again after packing
 * (sr_snap_verify: size, mtime and ctime to the nanosecond): when the job
 * rewrote it in place meanwhile the commit fails (never a mix of two
 * states) and that path is copied from then on.
 *
 * Where: <spool>/snap-N when the spool is on the directory's file system;
 * else "<dir>.spotrun-tmp.snap-XXXXXX" beside it, marked as spotrun's
 * (dirmark.h: a later start removes it, as a restore's leftover); else the
 * spool, every file copied.
 *
 * Threads: a struct sr_snaps belongs to one thread (the stager).
 */
#ifndef SPOTRUN_SNAPSHOT_H
#define SPOTRUN_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>

struct sr_snaps; /* what was learnt of each path, across commits */

struct sr_snap {
    char root[4200];               /* the snapshot directory, to pack from */
    int beside;                    /* made beside the directory (else in the spool) */
    struct sr_snap_linked *linked; /* hard-linked files, checked after packing */
    size_t nlinked, caplinked;
    uint64_t files, linked_n, reflinked_n, copied_n, copied_bytes;
};

struct sr_snaps *sr_snaps_new(void);
void sr_snaps_free(struct sr_snaps *k);

/* Snapshots dir (--ckpt-exclude's paths left out) into a new directory
 * (see above) named after n. 0, or -errno with a message (sr_errf). */
int sr_snap_take(struct sr_snaps *k, const char *dir, const char *spool, uint64_t n,
                 const char *const *exclude, size_t nexclude, struct sr_snap *out);
/* After packing: 0 when every linked file is as it was linked, else
 * SR_ECHANGED with a message (and the path is copied from then on). */
int sr_snap_verify(struct sr_snaps *k, const struct sr_snap *sn);
/* Removes the snapshot directory and frees *sn's lists. */
void sr_snap_remove(struct sr_snap *sn);

#endif
