# Sourced by the scripts that install what they need. Each helper installs a
# missing tool when it can (Debian's apt as root, or with sudo), and otherwise
# stops with one line saying what is missing and how to get it.

# need_apt COMMAND PACKAGE...: COMMAND on PATH, else the Debian packages.
need_apt() {
  local cmd=$1
  shift
  command -v "$cmd" >/dev/null && return 0
  apt_install "$cmd" "$@"
}

# apt_install WHAT PACKAGE...: installs the packages, or says what is missing.
apt_install() {
  local what=$1
  shift
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
      sudo=(sudo)
    else
      echo "missing: $what (install the Debian/Ubuntu packages: $*; as root: apt-get install -y $*)" >&2
      exit 1
    fi
  fi
  if ! command -v apt-get >/dev/null; then
    echo "missing: $what (install it with your system's package manager; on Debian/Ubuntu: $*)" >&2
    exit 1
  fi
  echo "installing $* (for $what)"
  "${sudo[@]}" apt-get update -qq && "${sudo[@]}" apt-get install -y -qq "$@"
}

# need_node MAJOR: node at least this major version.
need_node() {
  local want=$1 have
  command -v node >/dev/null || { echo "missing: node >= $want (https://nodejs.org, or your package manager)" >&2; exit 1; }
  have=$(node -p 'process.versions.node.split(".")[0]')
  [ "$have" -ge "$want" ] || { echo "node $want or newer is needed (this is $(node --version))" >&2; exit 1; }
}
