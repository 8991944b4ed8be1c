"""Hugging Face Trainer callback. NEVER RUN with the real framework here
(the unit tests drive it against a stand-in):
transformers is not in Debian 12 and this project installs nothing from
PyPI. It uses only long-standing TrainerCallback API (on_step_end,
on_save, control.should_save, state.global_step).

    from spotrun.hf import SpotrunCallback
    args = TrainingArguments(output_dir=spotrun.ckpt_dir() or "out",
                             save_steps=1000, save_total_limit=2, ...)
    trainer = Trainer(..., args=args, callbacks=[SpotrunCallback()])
    trainer.train(resume_from_checkpoint=SpotrunCallback.resume_arg())

On a checkpoint request (any rank's, agreed by all_reduce) it sets
control.should_save, so the Trainer writes output_dir/checkpoint-<step> at
this step; after every save the Trainer makes (requested or save_steps)
the process with local rank 0 commits with the global step. output_dir must
be $SPOTRUN_CKPT_DIR for the commit to carry the checkpoint.

transformers is imported when this module is; `import spotrun` alone never
imports it.
"""
import glob
import os
from typing import Optional

import spotrun
from . import distributed as _dist

from transformers import TrainerCallback as _TrainerCallback


class SpotrunCallback(_TrainerCallback):
    """Save on spotrun's checkpoint request; commit after every save."""

    @staticmethod
    def resume_arg() -> Optional[bool]:
        """For trainer.train(resume_from_checkpoint=...): True when spotrun
        restored a directory holding a checkpoint-* (the Trainer picks the
        newest), else None (a fresh start)."""
        d = spotrun.ckpt_dir()
        if spotrun.resumed() and d and glob.glob(os.path.join(d, "checkpoint-*")):
            return True
        return None

    def on_step_end(self, args, state, control, **kwargs):
        if _dist.checkpoint_due():  # a collective when distributed: every rank calls it
            control.should_save = True
        return control

    def on_save(self, args, state, control, **kwargs):
        d = spotrun.ckpt_dir()
        if d and os.path.realpath(args.output_dir) == os.path.realpath(d):
            _dist.commit(int(state.global_step))
        return control
