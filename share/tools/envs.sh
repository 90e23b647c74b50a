#!/usr/bin/env bash
# The project's Python environments, made from pinned lock files in share/python/ (exact versions and hashes).
#
#   envs.sh install NAME...   make or refresh .venv/NAME from its lock file; does nothing when the lock file and
#                             the interpreter are unchanged since the last install (a stamp records both)
#   envs.sh lock              recompile every lock file from its .in file (needs the network; commit the result)
#
# NAME is one of: kernel (Debian's 3.11, the kernel's), numpy124 (3.11 with NumPy 1.24), py312, py313 (pyenv's),
# peers (the side-by-side benchmark's, make bench-peers-deps). uv, itself pinned by hash in tools.txt, does the
# work from .venv/tools.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
req="$root/share/python"
venvs="${SOT_VENV_DIR:-$root/.venv}"
pyenv_root="${PYENV_ROOT:-$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")}"
uv="$venvs/tools/bin/uv"
export UV_NO_PROGRESS=1 UV_PYTHON_DOWNLOADS=never

# name -> "interpreter lock-file" (a missing pyenv interpreter makes its environment skipped, with a message)
env_python() {
  case "$1" in
    kernel|numpy124|peers) echo /usr/bin/python3 ;;
    py312) echo "$pyenv_root/versions/3.12.1/bin/python3" ;;
    py313) echo "$pyenv_root/versions/3.13.0/bin/python3" ;;
    *) echo "envs: unknown environment '$1'" >&2; exit 2 ;;
  esac
}
env_lock() {
  case "$1" in
    kernel) echo "$req/kernel-py311.lock" ;;
    numpy124) echo "$req/numpy124-py311.lock" ;;
    peers) echo "$req/peers-py311.lock" ;;
    py312) echo "$req/extra-py312.lock" ;;
    py313) echo "$req/extra-py313.lock" ;;
  esac
}

ensure_tools() {
  local stamp="$venvs/tools/.stamp" want
  want="$(sha256sum "$req/tools.txt" | cut -d' ' -f1)"
  if [[ -x "$uv" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then return; fi
  rm -rf "$venvs/tools"
  /usr/bin/python3 -m venv "$venvs/tools"
  "$venvs/tools/bin/python" -m pip install -q --disable-pip-version-check --require-hashes --no-deps \
    -r "$req/tools.txt"
  echo "$want" > "$stamp"
}

install_env() {
  local name="$1" python lock dir stamp want
  python="$(env_python "$name")"; lock="$(env_lock "$name")"; dir="$venvs/$name"; stamp="$dir/.stamp"
  if [[ ! -x "$python" ]]; then echo "envs: $name: no interpreter $python; skipped"; return; fi
  want="$(sha256sum "$lock" | cut -d' ' -f1) $("$python" -c 'import sys; print(sys.version.split()[0])') $python"
  if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -x "$dir/bin/python" ]]; then
    echo "envs: $name up to date"; return
  fi
  ensure_tools
  echo "envs: making $dir from $(basename "$lock")"
  rm -rf "$dir"
  "$python" -m venv --without-pip "$dir"
  "$uv" pip sync --quiet --python "$dir/bin/python" --require-hashes "$lock"
  echo "$want" > "$stamp"
}

lock_one() {  # in-file python-version lock-file
  "$uv" pip compile --quiet --python-version "$2" --python-platform x86_64-manylinux_2_28 --generate-hashes \
    --no-header --output-file "$3" "$1"
}

case "${1:-}" in
  install) shift; for name in "$@"; do install_env "$name"; done ;;
  lock)
    ensure_tools
    lock_one "$req/kernel.in" 3.11 "$req/kernel-py311.lock"
    lock_one "$req/numpy124.in" 3.11 "$req/numpy124-py311.lock"
    lock_one "$req/extra.in" 3.12 "$req/extra-py312.lock"
    lock_one "$req/extra.in" 3.13 "$req/extra-py313.lock"
    if [[ -f "$req/peers.in" ]]; then lock_one "$req/peers.in" 3.11 "$req/peers-py311.lock"; fi
    ;;
  *) echo "usage: envs.sh install NAME... | envs.sh lock" >&2; exit 2 ;;
esac
