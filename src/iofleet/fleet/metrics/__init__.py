"""Host metrics measured during a test: CPU, disk and network use of each
host, sampled once a second. Remote hosts are read from their node_exporter,
the controller's own host straight from /proc.

- records: what is kept of a host over a test (HostMetrics, HostCpu,
  HostSample), built here and stored by results.
- counters: a host's cumulative counters at one moment, and the sample of
  the interval between two readings; who uses the CPU, by process name.
- proc_stats: this host's counters from /proc.
- node_exporter: a remote host's counters, facts and free space from its
  node_exporter page.
- sampler: the thread that reads every host once a second during a test.
"""
