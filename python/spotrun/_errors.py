"""Exceptions of the spotrun module (all derive from spotrun.Error)."""


class Error(Exception):
    """Base class of every error the spotrun module raises."""


class NotUnderSpotrun(Error):
    """A call needs the wrapper's environment (SPOTRUN_CKPT_DIR) and it is absent."""


class WrapperGone(Error):
    """SPOTRUN_CONTROL names a wrapper that no longer answers (exited, killed,
    or closed the connection before replying). The checkpoint was not
    confirmed."""


class CommitError(Error):
    """The wrapper refused or failed a commit (its ERR reply is the message)."""
