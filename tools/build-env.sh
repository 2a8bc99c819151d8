#!/usr/bin/env bash
# Runs a command where fa-jit can be built with every backend this machine allows:
#  - on the host, when it has a native ROCm (/opt/rocm) or an NVIDIA driver, after
#    installing missing Debian/Ubuntu build packages;
#  - otherwise inside the Debian 13 root with ROCm 5.7.1 (tools/rocm-root.sh), which
#    gives HIPRTC (and NVRTC, when /usr/local/cuda exists) on machines with no GPU.
# FAJIT_BUILD_ENV=host|root overrides the choice.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"

host_packages=(g++ cmake make libspdlog-dev libxxhash-dev doctest-dev libcli11-dev nlohmann-json3-dev
               redis-server libhiredis-dev libssl-dev libarchive-dev pkg-config cargo rustc rustfmt bindgen)

choose() {
  if [[ -n "${FAJIT_BUILD_ENV:-}" ]]; then echo "$FAJIT_BUILD_ENV"; return; fi
  if [[ -f /opt/rocm/include/hip/hiprtc.h ]] || ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1'; then
    echo host
  else
    echo root
  fi
}

install_host_packages() {
  local missing=()
  for package in "${host_packages[@]}"; do
    dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
  done
  [[ ${#missing[@]} -eq 0 ]] && return
  echo "build-env: installing ${missing[*]}"
  local sudo=""; [[ $(id -u) -ne 0 ]] && sudo=sudo
  $sudo apt-get update -qq && $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
    --no-install-recommends "${missing[@]}" >/dev/null
}

case "$(choose)" in
  host)
    install_host_packages
    exec "$@" ;;
  root)
    exec "$here/rocm-root.sh" run "$@" ;;
  *)
    echo "build-env: FAJIT_BUILD_ENV must be host or root" >&2; exit 1 ;;
esac
