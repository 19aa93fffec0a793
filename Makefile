# iofleet — set-up and everyday commands. Everything the project needs is
# installed from here: fio from the distribution, Python packages into .venv.

PYTHON  ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
SUDO    := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
SCRATCH ?= $(CURDIR)/scratch
# Debian packages needed: fio (the engine), python3-venv (for .venv),
# iproute2, prometheus-node-exporter and openssh-server (the fleet tests'
# test hosts, each running sshd for `hosts deploy`); for the tests only,
# chromium (they open the HTML report in it, headless) and ceph-mon,
# ceph-mgr, ceph-osd, ceph-mds, ceph-fuse and ceph-common (the Ceph tests'
# micro-cluster, daemons started by hand, tests/ceph/cluster.py).

.PHONY: run test test-scale bench docs system browser ceph kubernetes clean

# apt-get install the packages in $(missing), if any (sudo unless root).
define apt_install
	if [ -n "$$missing" ]; then \
	  echo "Installing from the distribution:$$missing"; \
	  $(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi
endef

# Install what is missing from the distribution (fio >= 3.33, venv support,
# `ip`, node_exporter and sshd for the fleet tests' network-namespace hosts;
# ping, iperf3 and nft for the network check between hosts and its tests).
# --no-install-recommends: node_exporter would otherwise pull in smartmontools,
# ipmitool, nvme-cli and collector timers that the tests do not use.
system:
	@missing=""; \
	command -v fio >/dev/null 2>&1 || missing="$$missing fio"; \
	$(PYTHON) -c 'import ensurepip, venv' >/dev/null 2>&1 || missing="$$missing python3-venv"; \
	command -v ip >/dev/null 2>&1 || missing="$$missing iproute2"; \
	command -v prometheus-node-exporter >/dev/null 2>&1 || missing="$$missing prometheus-node-exporter"; \
	command -v /usr/sbin/sshd >/dev/null 2>&1 || missing="$$missing openssh-server"; \
	command -v ssh-keygen >/dev/null 2>&1 || missing="$$missing openssh-client"; \
	command -v ping >/dev/null 2>&1 || missing="$$missing iputils-ping"; \
	command -v iperf3 >/dev/null 2>&1 || missing="$$missing iperf3"; \
	command -v nft >/dev/null 2>&1 || missing="$$missing nftables"; \
	$(apt_install)

# Ceph for the Ceph tests' micro-cluster (--no-install-recommends: ceph-fuse
# would pull in fuse's fusermount, which the tests, mounting as root, do not use).
ceph:
	@missing=""; \
	command -v ceph-mon >/dev/null 2>&1 || missing="$$missing ceph-mon"; \
	command -v ceph-mgr >/dev/null 2>&1 || missing="$$missing ceph-mgr"; \
	command -v ceph-osd >/dev/null 2>&1 || missing="$$missing ceph-osd"; \
	command -v ceph-mds >/dev/null 2>&1 || missing="$$missing ceph-mds"; \
	command -v ceph-fuse >/dev/null 2>&1 || missing="$$missing ceph-fuse"; \
	command -v ceph >/dev/null 2>&1 || missing="$$missing ceph-common"; \
	$(apt_install)

# The Kubernetes tests' two-node cluster (tests/kubernetes/cluster.py): etcd,
# containerd, runc and the CNI plugins from the distribution, gcc and the
# static libc for its pause program, and kube-apiserver, -controller-manager,
# -scheduler and kubelet built from the Go module proxy once per version into
# /var/cache/iofleet/kubernetes (tests/kubernetes/build.sh; the first build
# takes 20-30 minutes on 2 cores and needs Go).
kubernetes:
	@missing=""; \
	command -v etcd >/dev/null 2>&1 || missing="$$missing etcd-server"; \
	command -v containerd >/dev/null 2>&1 || missing="$$missing containerd"; \
	command -v runc >/dev/null 2>&1 || missing="$$missing runc"; \
	[ -x /usr/lib/cni/bridge ] || missing="$$missing containernetworking-plugins"; \
	command -v gcc >/dev/null 2>&1 || missing="$$missing gcc"; \
	[ -e /usr/lib/$$(uname -m)-linux-gnu/libc.a ] || missing="$$missing libc6-dev"; \
	$(apt_install)
	sh tests/kubernetes/build.sh

# The distribution's Chromium, which the browser tests drive through Playwright.
browser:
	@missing=""; \
	command -v chromium >/dev/null 2>&1 || missing="$$missing chromium"; \
	$(apt_install)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	touch $(STAMP)

# The main job: Easy Run on a scratch directory, then its HTML report.
run: system $(STAMP)
	mkdir -p $(SCRATCH)
	$(BIN)/iofleet easy-run --target $(SCRATCH) --size 256m --ramp 2s --round 2s --max-runtime 30s
	$(BIN)/iofleet report -o $(SCRATCH)/report.html

# The whole suite: unit tests, real fio integration tests, fleet tests (real
# fio servers in network namespaces; skipped when not root). Not the scale tests.
test: system browser ceph kubernetes $(STAMP)
	$(BIN)/pytest -q tests -m "not scale"

# Fleet tests at scale (a 64-host run and 32 hosts under one fio client, in
# network namespaces; root), and the slowest
# fleet end-to-end runs (Easy Run, saturate and the scale study on 4 hosts, a
# host whose link vanishes, a second run on a busy fleet target), and a second
# Ceph cluster torn down to nothing.
test-scale: system ceph $(STAMP)
	$(BIN)/pytest -q tests -m scale

# Performance measurements (not part of the tests); writes BENCHMARKS.md.
# The grid runs of easy_vs_best.py are reused by saturate_vs_grid.py.
bench: system kubernetes $(STAMP)
	@echo "make bench: about 60-75 minutes on a 2-core VM (overhead 5, early stop 10-16, Easy Run vs grid 11-15, saturate 3-6, ingest/report 2 min, fleet start-up and relay 10-12 min, fleet early stop 12-16 min, coordinated omission 1.5 min, Kubernetes start-up 3-4 min); keep the machine quiet"
	mkdir -p $(SCRATCH)
	rm -rf $(SCRATCH)/bench-grid
	$(BIN)/python bench/overhead.py --target $(SCRATCH)
	$(BIN)/python bench/early_stop.py --target $(SCRATCH)
	$(BIN)/python bench/easy_vs_best.py --target $(SCRATCH) --grid-data $(SCRATCH)/bench-grid
	$(BIN)/python bench/saturate_vs_grid.py --target $(SCRATCH) --grid-data $(SCRATCH)/bench-grid
	rm -rf $(SCRATCH)/bench-grid
	$(BIN)/python bench/ingest.py --data-dir $(SCRATCH)/bench-ingest
	$(BIN)/python bench/report.py --data-dir $(SCRATCH)/bench-ingest
	$(SUDO) $(BIN)/python bench/fleet_start.py
	$(SUDO) $(BIN)/python bench/fleet_early_stop.py
	$(SUDO) $(BIN)/python bench/coordinated_omission.py
	$(SUDO) $(BIN)/python bench/k8s_start.py

# The generated docs: the parameter reference in docs/plans.md (from the
# parameter table) and docs/cli.md (from every command's --help). Tests fail
# when either drifts.
docs: $(STAMP)
	$(BIN)/python -m iofleet.plan.reference docs/plans.md
	$(BIN)/python -m iofleet.cli.reference docs/cli.md

clean:
	rm -rf $(VENV) $(SCRATCH) iofleet-data test-artifacts
