"""PyTorch Lightning callback. NEVER RUN with the real framework here
(the unit tests drive it against a stand-in): Lightning is
not in Debian 12 and this project installs nothing from PyPI. It uses only
long-standing Lightning API (Callback.on_train_batch_end,
Trainer.save_checkpoint, strategy.barrier, global_step, local_rank).

    from spotrun.lightning import SpotrunCallback
    cb = SpotrunCallback("last.ckpt", every_n_steps=1000)
    trainer = L.Trainer(callbacks=[cb], ...)
    trainer.fit(model, data, ckpt_path=cb.resume_path())

After a training step it saves when a checkpoint is due (any rank's
request, agreed by all_reduce) or every_n_steps: Trainer.save_checkpoint on
every rank (Lightning writes from global rank 0) into a temporary name in
$SPOTRUN_CKPT_DIR, renamed over `filename` once complete, then the process
with local rank 0 commits with the global step.

Lightning is imported when this module is (lightning.pytorch, else
pytorch_lightning); `import spotrun` alone never imports it.
"""
import os
from typing import Optional

import spotrun
from . import distributed as _dist

try:
    import lightning.pytorch as _pl
except ImportError:  # the older package name
    import pytorch_lightning as _pl


class SpotrunCallback(_pl.Callback):
    """Save and commit on spotrun's checkpoint request (and every_n_steps)."""

    def __init__(self, filename: str = "last.ckpt", every_n_steps: int = 0) -> None:
        super().__init__()
        self.filename = filename
        self.every_n_steps = every_n_steps

    def resume_path(self) -> Optional[str]:
        """The checkpoint to pass as fit(ckpt_path=...): the restored one, or None."""
        if not spotrun.resumed():
            return None
        p = spotrun.path(self.filename)
        return p if os.path.exists(p) else None

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        step = int(trainer.global_step)
        due = _dist.checkpoint_due()  # a collective when distributed: every rank calls it
        periodic = self.every_n_steps > 0 and step > 0 and step % self.every_n_steps == 0
        if due or periodic:
            self.save(trainer, step)

    def save(self, trainer, step: int) -> None:
        """Saves through the trainer on every rank, then commits once per node."""
        d = spotrun.ckpt_dir()
        if d is None:
            return  # not under spotrun: nothing to resume from later
        target = os.path.join(d, self.filename)
        tmp = os.path.join(d, ".%s.tmp" % self.filename)  # the same name on every rank
        trainer.save_checkpoint(tmp)
        trainer.strategy.barrier("spotrun-save")
        if trainer.local_rank == 0 and os.path.exists(tmp):
            os.replace(tmp, target)
        _dist.commit(step)
