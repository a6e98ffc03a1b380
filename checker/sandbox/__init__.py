"""The sandbox candidate code runs in (see host.py for the grading side, zygote.py for the
inside, linux.py for the system calls). One interface: `zygote()` gives this process's
running zygote, whose `spawn` starts a candidate, `kill` ends its whole process tree and
`isolation` says what protects the grader."""
