"""Client of the wrapper's control socket ($SPOTRUN_CONTROL, runtime/control.h).

One request line per connection, one reply line back:
    COMMIT <step|->                 -> OK <seq> | ERR <message>
    METRIC <step|-> <name> <value>  -> OK | ERR <message>
    STATUS                          -> OK <json>

A call connects, sends, and waits for the reply without a timeout unless
given one (a commit returns once the directory is staged, which takes
seconds for a big directory). Interrupted system calls are retried (PEP
475): a signal handler runs and the wait goes on, unless the handler
raises. A wrapper that is gone, or closes the connection before replying,
raises WrapperGone.
"""
import errno
import os
import socket
import stat
from typing import Optional

from ._errors import Error, WrapperGone

MAX_REPLY = 65536

_GONE = (errno.ENOENT, errno.ECONNREFUSED, errno.ECONNRESET, errno.EPIPE, errno.ENOTCONN,
         errno.ENOTSOCK)


def _not_a_socket(path: str) -> bool:
    """Whether path exists and is something else than a socket (a setting gone wrong,
    not a wrapper that went away)."""
    try:
        return not stat.S_ISSOCK(os.stat(path).st_mode)
    except OSError:
        return False


def call(path: str, request: str, timeout: Optional[float] = None) -> str:
    """Sends one request line, returns the reply line (without '\\n')."""
    verb = request.split(" ", 1)[0]
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.settimeout(timeout)
        try:
            s.connect(path)
        except OSError as e:
            if _not_a_socket(path):
                raise Error("%s is not a spotrun control socket: SPOTRUN_CONTROL must name the "
                            "socket `spotrun run` gives its job" % path) from e
            if e.errno in _GONE:
                raise WrapperGone("no spotrun wrapper answers at %s (%s): it exited or was "
                                  "killed, so %s cannot be done" % (path, e.strerror, verb)) from e
            raise Error("cannot reach the spotrun wrapper at %s: %s" % (path, e)) from e
        buf = b""
        try:
            s.sendall(request.encode("ascii") + b"\n", socket.MSG_NOSIGNAL)
            while b"\n" not in buf:
                chunk = s.recv(4096)
                if not chunk:
                    break
                buf += chunk
                if len(buf) > MAX_REPLY:
                    raise Error("the spotrun wrapper at %s sent an oversized answer to %s"
                                % (path, verb))
        except socket.timeout as e:
            raise Error("no answer from the spotrun wrapper at %s to %s within %gs"
                        % (path, verb, timeout)) from e
        except OSError as e:
            if e.errno in _GONE:
                raise WrapperGone("the spotrun wrapper at %s closed the connection before "
                                  "answering %s (%s): it exited or was killed; %s"
                                  % (path, verb, e.strerror, _unconfirmed(verb))) from e
            raise Error("talking to the spotrun wrapper at %s: %s" % (path, e)) from e
        if b"\n" not in buf:
            raise WrapperGone("the spotrun wrapper at %s closed the connection before answering "
                              "%s: it exited or was killed; %s" % (path, verb, _unconfirmed(verb)))
        return buf.split(b"\n", 1)[0].decode("utf-8", "replace")
    finally:
        s.close()


def _unconfirmed(verb: str) -> str:
    return "the checkpoint was not confirmed" if verb == "COMMIT" else "nothing was confirmed"


def split_reply(path: str, verb: str, reply: str):
    """'OK rest' -> (True, rest); 'ERR msg' -> (False, msg); else Error."""
    if reply == "OK" or reply.startswith("OK "):
        return True, reply[3:]
    if reply.startswith("ERR"):
        return False, reply[4:].strip() or "unspecified error"
    raise Error("unexpected answer to %s from the spotrun wrapper at %s: %r"
                % (verb, path, reply[:200]))
