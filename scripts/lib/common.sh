# shellcheck shell=bash
# Shared helpers for scripts/vm and scripts/install-deps.
# Sourced, not executed. Callers must already run under `set -euo pipefail`.

# Everything we download or build (the Python venv with virtme-ng, extracted
# kernels, the apt state for kernel downloads) lives outside the repo so that
# `git clean` never throws away a 120 MB kernel download and several checkouts
# share it. An empty SCXVM_CACHE or XDG_CACHE_HOME counts as unset; the
# result is checked below, once die() exists.
if [[ -n "${SCXVM_CACHE:-}" ]]; then
    SCX_CACHE="$SCXVM_CACHE"
elif [[ -n "${XDG_CACHE_HOME:-}" ]]; then
    SCX_CACHE="$XDG_CACHE_HOME/scx_fastpath"
elif [[ -n "${HOME:-}" ]]; then
    SCX_CACHE="$HOME/.cache/scx_fastpath"
else
    SCX_CACHE=""
fi
# virtme-ng version known to work with the layout/flags used in scripts/vm.
# shellcheck disable=SC2034 # for install-deps
SCX_VNG_VERSION="1.42"
# Debian's archive keyring (bookworm's copy also carries the trixie keys).
SCX_KEYRING="/usr/share/keyrings/debian-archive-keyring.gpg"

scx_prog="${scx_prog:-$(basename "$0")}"

log() { printf '%s: %s\n' "$scx_prog" "$*" >&2; }
die() { printf '%s: error: %s\n' "$scx_prog" "$*" >&2; exit 1; }

# Scripts delete things under the cache (a stale venv, a half-extracted
# kernel, old run dirs), so a cache path that is relative, "/" or has "." or
# ".." components (SCXVM_CACHE=/, XDG_CACHE_HOME=., HOME unset) must stop
# them before anything is deleted. Trailing and repeated slashes are dropped.
scx_cache_checked() {
    local d="$1" c
    local -a parts
    [[ "$d" == /* && "$d" != *$'\n'* ]] || return 1
    IFS=/ read -r -a parts <<<"${d#/}"
    d=""
    for c in "${parts[@]}"; do
        [[ -n "$c" ]] || continue
        [[ "$c" != . && "$c" != .. ]] || return 1
        d+="/$c"
    done
    [[ -n "$d" ]] || return 1
    printf '%s\n' "$d"
}
scx_cache_given="$SCX_CACHE"
SCX_CACHE="$(scx_cache_checked "$scx_cache_given")" ||
    die "cache directory '$scx_cache_given' must be an absolute path other than / without . or .. components (set SCXVM_CACHE, XDG_CACHE_HOME or HOME)"
unset scx_cache_given
# shellcheck disable=SC2034 # for the scripts that source this
{
    SCX_VENV="$SCX_CACHE/venv"
    SCX_KERNELS="$SCX_CACHE/kernels"
}

# rm -rf each PATH, which must lie strictly inside $SCX_CACHE (no . or ..
# components): the only way the scripts delete anything in the cache.
scx_cache_rm() {
    local p rel c
    local -a parts
    for p in "$@"; do
        rel="${p#"$SCX_CACHE"/}"
        [[ "$p" == "$SCX_CACHE"/?* ]] || die "refusing to delete '$p': not inside the cache directory $SCX_CACHE"
        IFS=/ read -r -a parts <<<"$rel"
        for c in "${parts[@]}"; do
            [[ -n "$c" && "$c" != . && "$c" != .. ]] ||
                die "refusing to delete '$p': it must name a path inside $SCX_CACHE without empty, . or .. components"
        done
        rm -rf -- "$p"
    done
}

# Run "$@" as root: directly when we are root (CI), else through sudo.
scx_as_root() {
    if [[ $EUID -eq 0 ]]; then
        "$@"
    else
        command -v sudo >/dev/null || die "not root and no sudo: run as root"
        sudo "$@"
    fi
}

# Run "$@" as the user who ran sudo, when this script runs as root under
# sudo for a user other than root: in their home, with their ~/.cargo/bin
# (rustup's) first on sudo's PATH, so that what is built is theirs and
# their toolchain builds it. Otherwise run it as we are.
scx_as_user() {
    if [[ $EUID -eq 0 && -n "${SUDO_USER:-}" && "$SUDO_USER" != root ]]; then
        local home
        home="$(getent passwd "$SUDO_USER" | cut -d: -f6)"
        [[ -n "$home" ]] || die "cannot find the home of $SUDO_USER (SUDO_USER)"
        sudo -u "$SUDO_USER" -H env "PATH=$home/.cargo/bin:$PATH" "$@"
    else
        "$@"
    fi
}

# apt-get runs as root against the state it installs host packages from, so
# that state lives in a root-owned directory: a user-writable one would let
# any process running as the user plant a .deb (or package lists) for root to
# install. $SCX_APT_ROOT holds it; every directory on the way is checked.
SCX_APT_ROOT="/var/cache/scx_fastpath/apt"

# Die unless $1 is a real directory (not a symlink) owned by root (or by
# the users named in $2.., e.g. _apt for apt's partial/ dirs) that neither
# group nor others can write.
scx_check_root_dir() {
    local d="$1"; shift
    local owner mode u ok=0
    [[ -d "$d" && ! -L "$d" ]] || die "$d is not a directory (or is a symlink); refusing to keep root's apt state there"
    read -r owner mode < <(stat -c '%U %a' "$d")
    for u in root "$@"; do [[ "$owner" == "$u" ]] && ok=1; done
    [[ $ok == 1 ]] || die "$d is owned by $owner, not root; refusing to let root install packages from it (remove it or chown -R root:root it)"
    (( (8#$mode & 8#022) == 0 )) || die "$d is group/world writable (mode $mode); refusing to let root install packages from it (chmod go-w it)"
}

# Create (as root, mode 0755) each missing directory of $@, parents first,
# then check it as scx_check_root_dir does.
scx_root_dirs() {
    local d
    for d in "$@"; do
        if [[ ! -e "$d" && ! -L "$d" ]]; then
            scx_as_root mkdir -m 0755 -- "$d" || die "cannot create $d"
        fi
        case "$d" in
            */partial) scx_check_root_dir "$d" _apt ;;
            *) scx_check_root_dir "$d" ;;
        esac
    done
}

# Print the host's Debian mirror URI. We must not hard-code a mirror (CI and
# developer machines use different ones), so read it from the host's own apt
# configuration: deb822 (/etc/apt/sources.list.d/*.sources) or one-line
# format (/etc/apt/sources.list, *.list). $1 = "main" (the debian archive)
# or "security" (the debian-security archive). Prints nothing if not found.
scx_debian_mirror() {
    local want="$1"
    if [[ "$want" == main && -n "${SCXVM_DEBIAN_MIRROR:-}" ]]; then
        echo "$SCXVM_DEBIAN_MIRROR"; return 0
    fi
    local f
    for f in /etc/apt/sources.list.d/*.sources; do
        [[ -r "$f" ]] || continue
        # Walk deb822 stanzas; a stanza ends at a blank line.
        awk -v want="$want" '
            function flush() {
                if (types ~ /(^|[ \t])deb([ \t]|$)/ && uris != "" && enabled != "no") {
                    n = split(uris, u, /[ \t]+/)
                    for (i = 1; i <= n; i++) {
                        if (u[i] == "") continue
                        issec = (u[i] ~ /security/ || suites ~ /-security/)
                        if ((want == "security") == issec) { print u[i]; exit }
                    }
                }
                types = ""; uris = ""; suites = ""; enabled = ""
            }
            /^[ \t]*#/ { next }
            /^[ \t]*$/ { flush(); next }
            tolower($1) == "types:"   { $1 = ""; types = $0 }
            tolower($1) == "uris:"    { $1 = ""; uris = $0 }
            tolower($1) == "suites:"  { $1 = ""; suites = $0 }
            tolower($1) == "enabled:" { enabled = tolower($2) }
            END { flush() }
        ' "$f"
    done | head -n1 | grep . && return 0
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [[ -r "$f" ]] || continue
        # "deb [opts] URI suite comp..." -- strip the optional [ ... ] block.
        sed -e 's/#.*//' -e 's/\[[^]]*\]//' "$f" | awk -v want="$want" '
            $1 == "deb" && NF >= 3 {
                issec = ($2 ~ /security/ || $3 ~ /-security/)
                if ((want == "security") == issec) { print $2; exit }
            }'
    done | head -n1 | grep . && return 0
    return 0
}

# Set up a private apt state directory whose sources.list holds the
# arguments after the name (one "suite" per line, e.g.
# "main bookworm-backports" or "security bookworm-security"), and fill the
# global array APT_OPTS with the -o options that point apt at it.
#   scx_apt_state --root NAME ...  $SCX_APT_ROOT/NAME, root-owned, written
#                                  as root: for packages root installs
#   scx_apt_state NAME ...         $SCX_CACHE/apt/NAME, the user's: only for
#                                  packages that are downloaded and
#                                  extracted, never installed (the kernel)
# Rationale: we need bookworm-backports (QEMU 10) and trixie-backports
# (kernel) but must never modify the user's /etc/apt. apt's Dir::* options
# let us keep sources, lists and the archive cache entirely private; dpkg's
# status database is of course shared (we do install qemu on the host).
scx_apt_state() {
    APT_AS=()
    local dir
    if [[ "$1" == --root ]]; then
        shift
        APT_AS=(scx_as_root)
        dir="$SCX_APT_ROOT/$1"
        scx_root_dirs "${SCX_APT_ROOT%/apt}" "$SCX_APT_ROOT" "$dir" "$dir/lists" "$dir/lists/partial" \
            "$dir/archives" "$dir/archives/partial" "$dir/cache"
    else
        dir="$SCX_CACHE/apt/$1"
        mkdir -p "$dir/lists/partial" "$dir/archives/partial" "$dir/cache"
    fi
    shift
    local main sec line kind suite list=""
    main="$(scx_debian_mirror main)"
    sec="$(scx_debian_mirror security)"
    [[ -n "$main" ]] || die "cannot find the Debian mirror in /etc/apt (set SCXVM_DEBIAN_MIRROR=URI to override)"
    for line in "$@"; do
        read -r kind suite <<<"$line"
        if [[ "$kind" == security ]]; then
            [[ -n "$sec" ]] || continue   # no security mirror configured: skip
            list+="deb [signed-by=$SCX_KEYRING] $sec $suite main"$'\n'
        else
            list+="deb [signed-by=$SCX_KEYRING] $main $suite main"$'\n'
        fi
    done
    local tmp="$dir/sources.list.new"
    printf '%s' "$list" | "${APT_AS[@]}" tee "$tmp" >/dev/null
    "${APT_AS[@]}" mv -f "$tmp" "$dir/sources.list"
    APT_OPTS=(
        -o "Dir::Etc::SourceList=$dir/sources.list"
        -o "Dir::Etc::SourceParts=/dev/null"
        -o "Dir::State::Lists=$dir/lists"
        -o "Dir::Cache=$dir/cache"
        -o "Dir::Cache::Archives=$dir/archives"
        -o "DPkg::Lock::Timeout=600"
        # _apt cannot enter a cache under /root (mode 700), and apt only
        # drops to _apt when it runs as root anyway.
        -o "APT::Sandbox::User=root"
        -o "APT::Get::List-Cleanup=false"
        # Skip AppStream/DEP-11 and translation indexes: we only need Packages.
        -o "Acquire::IndexTargets::deb::DEP-11::DefaultEnabled=false"
        -o "Acquire::IndexTargets::deb::DEP-11-icons::DefaultEnabled=false"
        -o "Acquire::IndexTargets::deb::DEP-11-icons-small::DefaultEnabled=false"
        -o "Acquire::Languages=none"
    )
    APT_STATE_DIR="$dir"
}

# apt-get update for the private state set up last (as root for --root
# state), at most once per $2 seconds (default 6h) unless forced with
# $1=force. Keeps repeated runs offline.
scx_apt_update() {
    local mode="${1:-}" max_age="${2:-21600}"
    local stamp="$APT_STATE_DIR/updated"
    if [[ "$mode" != force && -f "$stamp" ]] &&
        (( $(date +%s) - $(stat -c %Y "$stamp") < max_age )) &&
        cmp -s "$APT_STATE_DIR/sources.list" "$APT_STATE_DIR/sources.list.stamp" 2>/dev/null; then
        return 0
    fi
    log "apt-get update (private lists in $APT_STATE_DIR)"
    local out
    out="$("${APT_AS[@]}" apt-get "${APT_OPTS[@]}" -q update 2>&1)" ||
        { printf '%s\n' "$out" >&2; die "apt-get update failed (private state $APT_STATE_DIR)"; }
    "${APT_AS[@]}" cp -f "$APT_STATE_DIR/sources.list" "$APT_STATE_DIR/sources.list.stamp"
    "${APT_AS[@]}" touch "$stamp"
}
