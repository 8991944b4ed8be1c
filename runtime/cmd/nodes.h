/*
 * nodes.h - which node of a multi-node run this wrapper is
 * (docs/multinode.md, "Who is which node").
 *
 * --nodes / --node-rank win (a number, or "{env:NAME}"); without them the
 * launcher says: an srun step (SLURM_STEP_NUM_TASKS tasks, this one
 * SLURM_PROCID: one wrapper per task), AWS Batch multi-node parallel
 * (AWS_BATCH_JOB_NUM_NODES / AWS_BATCH_JOB_NODE_INDEX), SkyPilot
 * (SKYPILOT_NUM_NODES / SKYPILOT_NODE_RANK). Otherwise one node, rank 0.
 */
#ifndef SPOTRUN_NODES_H
#define SPOTRUN_NODES_H

#include <stddef.h>
#include <stdint.h>

struct sr_nodes {
    uint32_t nodes, rank;
    char from[48]; /* where they came from: "--nodes", "slurm", "aws-batch", ... */
};

/* 0, or -EINVAL with a message (a bad value, a rank outside 0..nodes-1,
 * more than SR_NODES_MAX nodes, one of the two flags without the other). */
int sr_nodes_resolve(const char *nodes_opt, const char *rank_opt, struct sr_nodes *out);

#endif
