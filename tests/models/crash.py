"""Building this workload kills the process with SIGSEGV, as a faulty native library would."""

import os
import signal

import autoplace


@autoplace.workload
def crash(width, dtype):
    os.kill(os.getpid(), signal.SIGSEGV)
    raise AssertionError("unreachable: the process is dead")
