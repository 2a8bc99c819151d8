#!/usr/bin/env bash
# Provides a build environment with HIPRTC on hosts that have no ROCm.
#
#   tools/rocm-root.sh provision      create (or reuse) the Debian 13 root with ROCm 5.7.1
#   tools/rocm-root.sh run CMD...     run CMD inside the root, in this checkout
#
# Debian 12's ROCm 5.2 cannot compile for gfx11/gfx94x, Debian 13's 5.7.1 can, so the
# root is Debian 13 whatever the host is. The root lives outside the checkout
# (FAJIT_ROCM_ROOT, default /var/cache/fa-jit/rocm-root) and is reused across builds.
# The mirror is read from the host's own apt sources so no host name lives in the repo.
set -euo pipefail

root="${FAJIT_ROCM_ROOT:-/var/cache/fa-jit/rocm-root}"
checkout="$(cd "$(dirname "$0")/.." && pwd)"
# The stamp's version names the package list below; a root with an older stamp gets the
# packages added since installed into it, without a new bootstrap.
stamp="$root/.fa-jit-provisioned-v3"
older_stamps=("$root/.fa-jit-provisioned-v2" "$root/.fa-jit-provisioned-v1")

packages=(libamdhip64-dev libhiprtc-builtins5 rocm-device-libs-17 llvm-17 g++ cmake make
          libspdlog-dev libxxhash-dev doctest-dev libcli11-dev nlohmann-json3-dev python3
          redis-server libhiredis-dev libssl-dev libarchive-dev pkg-config cargo rustc rustfmt bindgen)

host_mirror() {
  local uri
  uri="$(grep -hsE '^URIs:' /etc/apt/sources.list.d/*.sources | awk '{print $2}' | grep -v security | head -n1 || true)"
  if [[ -z "$uri" ]]; then
    uri="$(grep -hsE '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list |
           awk '{print $2}' | grep -v security | head -n1 || true)"
  fi
  [[ -n "$uri" ]] || { echo "rocm-root: no Debian mirror found in the host's apt sources" >&2; exit 1; }
  echo "$uri"
}

install_packages() {
  # The root builds and tests; the packages' services (redis-server's) must not start in it.
  printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"; chmod 755 "$root/usr/sbin/policy-rc.d"
  chroot "$root" /usr/bin/env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
    --no-install-recommends "${packages[@]}" >/tmp/fa-jit-rootpkgs.log 2>&1 || {
    tail -n 30 /tmp/fa-jit-rootpkgs.log >&2; exit 1; }
}

# apt-get inside an existing root, with /proc and /dev there for packages' scripts.
upgrade() {
  echo "rocm-root: installing the packages added since $root was provisioned"
  unshare --mount --propagation private -- /usr/bin/env ROOT="$root" bash -euc '
    for dir in /proc /dev /sys; do mkdir -p "$ROOT$dir"; mount --bind "$dir" "$ROOT$dir"; done
    chroot "$ROOT" /usr/bin/env DEBIAN_FRONTEND=noninteractive apt-get update -qq' >/tmp/fa-jit-rootpkgs.log 2>&1 || {
    tail -n 30 /tmp/fa-jit-rootpkgs.log >&2; exit 1; }
  install_packages
  # The older stamps stay: checkouts of older versions share the root and still reuse it
  # (without one they would bootstrap it afresh, removing it under everyone else).
  touch "$stamp"
}

provision() {
  if [[ -f "$stamp" ]]; then
    echo "rocm-root: reusing $root"
    return
  fi
  for older in "${older_stamps[@]}"; do
    if [[ -f "$older" ]]; then upgrade; return; fi
  done
  command -v debootstrap >/dev/null || {
    echo "rocm-root: installing debootstrap"
    apt-get install -y -qq --no-install-recommends debootstrap >/dev/null
  }
  local mirror; mirror="$(host_mirror)"
  echo "rocm-root: bootstrapping Debian 13 into $root"
  rm -rf --one-file-system "$root"; mkdir -p "$(dirname "$root")"
  debootstrap --variant=minbase trixie "$root" "$mirror" >/tmp/fa-jit-debootstrap.log 2>&1 || {
    tail -n 30 /tmp/fa-jit-debootstrap.log >&2; exit 1; }
  echo "rocm-root: installing ROCm 5.7.1 and build dependencies"
  install_packages
  touch "$stamp"
}

# Mounts are made in a private mount namespace so they vanish with the command and
# never outlive it inside the root (where a later rm -rf could follow them).
run_in_root() {
  [[ -f "$stamp" ]] || provision
  local cuda=""; [[ -d /usr/local/cuda ]] && cuda="$(readlink -f /usr/local/cuda)"
  unshare --mount --propagation private -- /usr/bin/env ROOT="$root" SRC="$checkout" CUDA="$cuda" bash -euc '
    bind() { mkdir -p "$ROOT$2"; mount --bind "$1" "$ROOT$2"; }
    bind /proc /proc; bind /dev /dev; bind /sys /sys; bind "$SRC" /src
    [[ -n "$CUDA" ]] && bind "$CUDA" /usr/local/cuda
    exec chroot "$ROOT" /usr/bin/env -C /src HOME=/root \
      PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@"' bash "$@"
}

case "${1:-}" in
  provision) provision ;;
  run) shift; run_in_root "$@" ;;
  *) echo "usage: $0 provision | run CMD..." >&2; exit 1 ;;
esac
