"""iofleet: storage benchmarking with fio, on one machine or a fleet."""

__version__ = "0.1.0"
