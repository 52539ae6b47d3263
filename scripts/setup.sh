#!/usr/bin/env bash
# Installs what qkv needs from Debian 12's packages, and only what is missing.
# Idempotent: a second run installs nothing and does not touch the network.
# Runs as root, or through sudo when not root.
set -euo pipefail

# Each package is the field's standard for its job (see README "Dependencies").
packages=(
  g++ cmake ninja-build pkg-config   # C++20 toolchain, CMake >= 3.25 with presets
  libopenblas-dev                    # GEMM (cblas_sgemm)
  libhwy-dev                         # Highway: portable SIMD with runtime dispatch
  libgtest-dev libgmock-dev          # unit tests
  libbenchmark-dev                   # bench/
  clang-format                       # style check (a test)
  clang-14 libclang-rt-14-dev        # libFuzzer targets in fuzz/ (fuzz preset)
  python3                            # bench/run_kernels.sh prints its table with it
  libsentencepiece-dev               # subword vocabularies (qkv vocab / train)
  zlib1g-dev                         # .gz corpora
  nlohmann-json3-dev                 # safetensors headers, model config, metrics JSON
  libyaml-cpp-dev                    # YAML training configs (qkv train -c FILE)
  libpng-dev                         # PNG attention heatmaps (qkv attend --png)
  chromium                           # headless rendering tests of qkv report and qkv serve's page
  pybind11-dev python3-dev           # the Python module (python/: import qkv)
  python3-numpy                      # its arrays (attention on numpy arrays, attention maps)
  python3-pytest                     # its tests (python/tests, run by ctest)
  python3-matplotlib                 # examples/attention_in_python.py draws a heatmap PNG
  libopenmpi-dev openmpi-bin         # data-parallel training (qkv train under mpirun)
  libcpp-httplib-dev                 # qkv serve's HTTP server (cpp-httplib)
)

missing=()
for p in "${packages[@]}"; do
  if [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" != "install ok installed" ]; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages present"
  exit 0
fi

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "setup: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo_cmd=(sudo)
fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
