"""The fio link: fio runs on this host (runner) and on fio servers through
one client and iofleet's relay (remote, relay), their processes (procs)
and scratch directories (workdir)."""
