# Shared set-up of ./scripts/demo and ./scripts/test (sourced, not run): system packages, a virtual
# environment in .venv, and streamjoin installed into it. Idempotent and quiet when nothing is to do.
#
# Environment knobs:
#   PYTHON=/path/to/python3.11+    the interpreter for a new .venv (default: newest python3.x >= 3.11 on PATH)
#   STREAMJOIN_REINSTALL=1         reinstall the package even if pyproject.toml did not change

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$REPO_ROOT/.venv"

# Debian packages the embedded stack needs, as "package:command" (the command tells if it is there).
# prometheus: tests/api and tests/deploy scrape the services with a real one; it also brings promtool.
# openjdk-17-jre-headless: PySpark's local mode (the back-fill tests).
# openjdk-17-jre-headless: also Apache Kafka's broker and the schema registry of the embedded stack.
# maven: fetches those Java programs' jars from Maven Central once (streamjoin.dev.jars).
# chromium: the console's end-to-end tests (tests/ui) drive it headless with Playwright.
APT_PACKAGES=("redis-server:redis-server" "prometheus:prometheus" "prometheus:promtool" "openjdk-17-jre-headless:java" "maven:mvn" "chromium:chromium")

if [[ -t 1 ]]; then _BOLD=$'\e[1m'; _RED=$'\e[31m'; _GREEN=$'\e[32m'; _RESET=$'\e[0m'; else _BOLD=; _RED=; _GREEN=; _RESET=; fi

say() { printf '%s==> %s%s\n' "$_BOLD" "$*" "$_RESET"; }
die() { printf '%sFAILED: %s%s\n' "$_RED" "$*" "$_RESET" >&2; exit 1; }

_APT_UPDATED=0
_as_root() {
    if [[ $(id -u) -eq 0 ]]; then "$@"
    elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then sudo "$@"
    else return 1
    fi
}

apt_install() {
    command -v apt-get >/dev/null || die "apt-get not found: install $* with your package manager, then rerun"
    if [[ $_APT_UPDATED -eq 0 ]]; then
        say "apt-get update"
        _as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq \
            || die "apt-get update failed (needs root or password-less sudo); install $* by hand"
        _APT_UPDATED=1
    fi
    say "apt-get install $*"
    # RUNLEVEL=1: do not start the packages' system services (a redis on :6379); we run our own.
    _as_root env DEBIAN_FRONTEND=noninteractive RUNLEVEL=1 \
        apt-get install -y -qq --no-install-recommends "$@" >/dev/null \
        || die "apt-get install $* failed"
}

ensure_system_packages() {
    local entry package command missing=()
    for entry in "${APT_PACKAGES[@]}"; do
        package="${entry%%:*}"; command="${entry##*:}"
        command -v "$command" >/dev/null || [[ -x "/usr/bin/$command" || -x "/usr/sbin/$command" ]] \
            || missing+=("$package")
    done
    if [[ ${#missing[@]} -gt 0 ]]; then apt_install "${missing[@]}"; fi
}

_python_ok() { "$1" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; }

find_python() {
    if [[ -n "${PYTHON:-}" ]]; then
        _python_ok "$PYTHON" || die "PYTHON=$PYTHON is not Python 3.11 or newer"
        echo "$PYTHON"; return
    fi
    local candidate
    for candidate in python3.13 python3.12 python3.11 python3; do
        if command -v "$candidate" >/dev/null && _python_ok "$candidate"; then command -v "$candidate"; return; fi
    done
    die "streamjoin needs Python 3.11 or newer (none on PATH; set PYTHON=/path/to/python3.11)"
}

ensure_venv() {
    if [[ -x "$VENV/bin/python" ]] && ! _python_ok "$VENV/bin/python"; then
        die "$VENV holds an interpreter older than 3.11: remove it and rerun"
    fi
    if [[ ! -x "$VENV/bin/python" ]]; then
        local python; python="$(find_python)"
        say "creating $VENV with $python ($("$python" --version 2>&1))"
        if ! "$python" -c 'import ensurepip, venv' 2>/dev/null; then
            # Debian splits venv/ensurepip into pythonX.Y-venv.
            apt_install "python$("$python" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')-venv"
        fi
        "$python" -m venv "$VENV" || die "could not create $VENV"
    fi
}

# install_package EXTRAS: pip install -e ".[EXTRAS]" unless pyproject.toml and EXTRAS are unchanged since last time.
install_package() {
    local extras="$1" stamp="$VENV/.streamjoin-installed" want
    want="$(cat "$REPO_ROOT/pyproject.toml" <(echo "extras=$extras") | sha256sum | cut -d' ' -f1)"
    if [[ "${STREAMJOIN_REINSTALL:-0}" != 1 && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
        return
    fi
    say "installing streamjoin[$extras] into $VENV (first run: a minute or two)"
    # uv (from PyPI) resolves and installs in parallel: about 100 s from an empty cache and seconds
    # from a warm one, where pip took four and a half minutes with its cache warm.
    "$VENV/bin/python" -m pip install --disable-pip-version-check --quiet --upgrade pip uv \
        || die "installing uv failed"
    "$VENV/bin/uv" pip install --quiet --python "$VENV/bin/python" -e "$REPO_ROOT[$extras]" \
        || die "installing streamjoin[$extras] failed"
    echo "$want" >"$stamp"
}

# The embedded stack's Java programs (Apache Kafka, the schema registry): their jars, resolved from
# Maven Central once and cached (streamjoin.dev.jars). A failure only warns: the stack then falls back
# to the Tansu broker, and the tests that need the registry skip saying why (in CI they fail).
# ensure_jars PROGRAM...: the demo fetches Kafka only (`dev up --schema-registry` fetches the registry
# on first use); the tests fetch both.
ensure_jars() {
    if ! "$VENV/bin/python" -m streamjoin.dev.fetch_jars "$@"; then
        printf '%swarning: the Java programs could not be fetched (see above): the embedded stack will use Tansu, and the schema registry will not run%s\n' "$_RED" "$_RESET" >&2
    fi
}

# setup EXTRAS [JAVA_PROGRAM...]: everything the demo or the tests need, installed when missing.
setup() {
    cd "$REPO_ROOT"
    ensure_system_packages
    ensure_venv
    install_package "$1"
    shift
    ensure_jars "${@:-kafka}"
}
