#!/usr/bin/python3
"""spawn.py PROGRAM [ARG...]: exec PROGRAM with SIGINT and SIGQUIT reset to
their default dispositions.

A shell without job control starts background commands with SIGINT and
SIGQUIT ignored, and a process cannot undo an inherited SIG_IGN it does not
know about. The signal-forwarding tests start glove in the background through
this wrapper so that glove (and through it the agent) starts from the same
dispositions as from an interactive shell. The PID stays the same across exec.
"""
import os
import signal
import sys

for sig in (signal.SIGINT, signal.SIGQUIT, signal.SIGTERM, signal.SIGHUP,
            signal.SIGUSR1, signal.SIGUSR2, signal.SIGWINCH, signal.SIGPIPE):
    signal.signal(sig, signal.SIG_DFL)
signal.pthread_sigmask(signal.SIG_SETMASK, [])
os.execv(sys.argv[1], sys.argv[1:])
