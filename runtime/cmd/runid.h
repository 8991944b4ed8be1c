/*
 * runid.h - the run's identity.
 *
 * A run id names a run in the store; every node that runs "the same job"
 * must compute the same id so it finds the run's checkpoints.
 *
 * Default (no --run-id): "<name>-<hash>[-<index>]" where <name> is the
 * program (or, for an interpreter like python3, the script) without its
 * extension, <hash> is 8 hex digits of XXH3-64 over the working directory
 * and the full argv, and <index> is the array index of the scheduler task
 * (SLURM_ARRAY_TASK_ID, JOB_COMPLETION_INDEX, AWS_BATCH_JOB_ARRAY_INDEX)
 * when one is set. So rerunning the same command in the same place resumes
 * the same run, and each array task has its own.
 *
 * Templates (--run-id 'sweep-{index}') expand placeholders:
 *   {index}  the array index as above       {hash} {name}  as above
 *   {slurm_job_id} {slurm_array_job_id} {slurm_array_task_id}
 *   {job_completion_index} {aws_batch_job_array_index}
 *   {env:NAME}  any environment variable
 * A placeholder whose variable is unset is an error naming it.
 */
#ifndef SPOTRUN_RUNID_H
#define SPOTRUN_RUNID_H

#include <stddef.h>

/* tmpl NULL or "" = the default. Returns 0, or -EINVAL with a message. */
int sr_runid_expand(const char *tmpl, char *const argv[], const char *cwd, char *out, size_t len);

#endif
