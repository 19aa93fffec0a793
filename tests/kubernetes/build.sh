#!/bin/sh
# Builds the Kubernetes binaries the tests' cluster runs (kube-apiserver,
# kube-controller-manager, kube-scheduler, kubelet) from the Go module proxy,
# once per version, into $KUBE_CACHE/$KUBE_VERSION/bin.
#
# `go install k8s.io/kubernetes/...@v` is refused (its go.mod replaces its
# staging modules with ./staging paths), so a wrapper module requires
# k8s.io/kubernetes and replaces each staging module with its published
# build (v1.X.Y's staging modules are published as v0.X.Y).
set -eu
KUBE_VERSION=${KUBE_VERSION:-v1.34.4}
KUBE_CACHE=${KUBE_CACHE:-/var/cache/iofleet/kubernetes}
out="$KUBE_CACHE/$KUBE_VERSION/bin"
commands="kubelet kube-apiserver kube-controller-manager kube-scheduler"
# A binary counts only if it reports $KUBE_VERSION (a build without the
# version stamped says v0.0.0-master).
missing=""
for c in $commands; do
	"$out/$c" --version 2>/dev/null | grep -qx "Kubernetes $KUBE_VERSION" || missing="$missing $c"
done
[ -z "$missing" ] && exit 0
echo "Building Kubernetes $KUBE_VERSION ($missing) from the Go module proxy into $out;"
echo "the first build takes 20-30 minutes on 2 cores, later runs reuse it."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
staging_version="v0.${KUBE_VERSION#v1.}"
cd "$work"
go mod init iofleet.test/kubernetes-build >/dev/null 2>&1
go mod edit -require="k8s.io/kubernetes@$KUBE_VERSION"
upstream=$(go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | sed -n 's/.*"GoMod": "\(.*\)",/\1/p')
for module in $(sed -n 's|^[[:space:]]*\(k8s.io/[^ ]*\) => ./staging/.*|\1|p' "$upstream"); do
	go mod edit -replace="$module=$module@$staging_version"
done
printf 'package tools\n\nimport (\n' > tools.go
for c in $commands; do printf '\t_ "k8s.io/kubernetes/cmd/%s"\n' "$c" >> tools.go; done
printf ')\n' >> tools.go
GOFLAGS=-mod=mod go mod tidy >/dev/null
mkdir -p "$out"
# The version as Kubernetes' own build stamps it (hack/lib/version.sh).
major=${KUBE_VERSION#v}; minor=${major#*.}; major=${major%%.*}; minor=${minor%%.*}
ldflags="-s -w"
for pkg in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
	ldflags="$ldflags -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
	ldflags="$ldflags -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
done
for c in $missing; do
	echo "  go build $c"
	CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$out/$c.part" "k8s.io/kubernetes/cmd/$c"
	mv "$out/$c.part" "$out/$c"
done
echo "Kubernetes $KUBE_VERSION built into $out."
