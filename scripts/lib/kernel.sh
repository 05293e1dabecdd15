# shellcheck shell=bash
# Fetch and cache a Debian kernel with sched_ext. Sourced by scripts/vm.
#
# Why Debian trixie-backports: it ships 7.x kernels whose generic "amd64"
# flavour has CONFIG_SCHED_CLASS_EXT=y and BTF; the "cloud-amd64" flavour
# and Debian's 6.12 do not. New package naming (7.x):
#   linux-binary-<abi>     vmlinuz            (usr/lib/modules/<abi>/vmlinuz)
#   linux-base-<abi>       config, System.map (usr/lib/modules/<abi>/config)
#   linux-modules-<abi>    modules            (usr/lib/modules/<abi>/kernel)
# with <abi> like 7.3.4+deb13-amd64.
#
# Cache layout ($SCX_KERNELS/<abi>/):
#   usr/lib/modules/<abi>/vmlinuz   virtme-ng finds the modules next to it
#                                   (it walks up to the dir holding lib/modules)
#   boot/config-<abi>               mounted at /boot in the guest so libbpf can
#                                   resolve __kconfig externs
#   .complete                       written last; partial extractions are ignored

# SCXVM_KERNEL_SUITE=sid (or experimental) fetches from another suite; with
# SCXVM_KERNEL_VERSION it tries a kernel that is not in trixie-backports.
SCX_KERNEL_SUITE="${SCXVM_KERNEL_SUITE:-trixie-backports}"

# The private apt state used only for kernel downloads. Host apt preferences
# are irrelevant here (we only `apt-get download`), so ignore them.
scx_kernel_apt() {
    scx_apt_state "kernel-$SCX_KERNEL_SUITE" "main $SCX_KERNEL_SUITE"
    APT_OPTS+=(-o "Dir::Etc::Preferences=/dev/null" -o "Dir::Etc::PreferencesParts=/dev/null")
}

# Newest complete cached kernel ABI, or nothing.
scx_kernel_newest_cached() {
    local d
    for d in "$SCX_KERNELS"/*/.complete; do
        [[ -e "$d" ]] || continue
        basename "$(dirname "$d")"
    done | sort -V | tail -n1
}

# Newest generic amd64 kernel ABI in trixie-backports (not cloud/rt/dbg,
# not the -unsigned duplicate).
scx_kernel_newest_available() {
    apt-cache "${APT_OPTS[@]}" pkgnames linux-binary- |
        grep -E '^linux-binary-[0-9][^ ]*-amd64$' |
        grep -v -E -- '-(cloud|rt)-amd64$|dbg' |
        sed 's/^linux-binary-//' | sort -V | tail -n1
}

# Die unless $1 looks like a kernel ABI (7.3.4+deb13-amd64): it names a
# directory under $SCX_KERNELS that may be deleted and replaced, so no "/"
# and no leading "." (which rules out "." and "..").
scx_kernel_check_abi() {
    [[ "$1" =~ ^[0-9A-Za-z][0-9A-Za-z.+~_-]*$ ]] ||
        die "not a kernel ABI (like 7.3.4+deb13-amd64): '$1' (check SCXVM_KERNEL_VERSION)"
}

# Download + extract kernel <abi> into the cache (no-op if cached).
scx_kernel_fetch() {
    local abi="$1"
    scx_kernel_check_abi "$abi"
    local dest="$SCX_KERNELS/$abi"
    [[ -e "$dest/.complete" ]] && return 0
    local work="$SCX_KERNELS/.tmp-$abi.$$"
    scx_cache_rm "$work"; mkdir -p "$work/debs" "$work/root"
    log "downloading kernel $abi from $SCX_KERNEL_SUITE"
    # apt-get download writes into the cwd.
    (cd "$work/debs" && apt-get "${APT_OPTS[@]}" -q download \
        "linux-base-$abi" "linux-binary-$abi" "linux-modules-$abi") >"$work/download.log" 2>&1 ||
        { cat "$work/download.log" >&2; scx_cache_rm "$work"; die "failed to download kernel packages for $abi"; }
    local deb
    # linux-base first: refuse to go on if the config lacks sched_ext.
    dpkg-deb -x "$work/debs/linux-base-${abi}_"*.deb "$work/root"
    local cfg="$work/root/usr/lib/modules/$abi/config"
    [[ -f "$cfg" ]] || { scx_cache_rm "$work"; die "linux-base-$abi has no usr/lib/modules/$abi/config"; }
    if ! grep -qx 'CONFIG_SCHED_CLASS_EXT=y' "$cfg"; then
        scx_cache_rm "$work"
        die "kernel $abi is built without CONFIG_SCHED_CLASS_EXT=y; cannot test sched_ext with it"
    fi
    for deb in "$work/debs"/*.deb; do dpkg-deb -x "$deb" "$work/root"; done
    [[ -f "$work/root/usr/lib/modules/$abi/vmlinuz" ]] || { scx_cache_rm "$work"; die "no vmlinuz in linux-binary-$abi"; }
    mkdir -p "$work/root/boot"
    cp "$cfg" "$work/root/boot/config-$abi"
    # Make sure modules.dep matches the tree so virtme-ng never has to run
    # depmod (it would write into the cache on every boot otherwise).
    depmod -a -b "$work/root/usr" "$abi" 2>/dev/null || log "warning: depmod failed for $abi (virtme-ng will retry)"
    touch "$work/root/.complete"
    scx_cache_rm "$dest"
    mv "$work/root" "$dest"
    scx_cache_rm "$work"
    log "kernel $abi cached in $dest"
}

# Resolve which cached kernel to use, downloading if needed, and set
# KERNEL_ABI, KERNEL_IMG, KERNEL_BOOTDIR.
#   SCXVM_KERNEL_VERSION=<abi>  pin an exact ABI (e.g. 7.3.4+deb13-amd64)
#   SCXVM_KERNEL_REFRESH=1      look for a newer kernel even if one is cached
# Without those, a cached kernel is used as-is: repeated runs need no network
# and tests do not silently switch kernels mid-way.
scx_kernel_resolve() {
    local abi="${SCXVM_KERNEL_VERSION:-}"
    [[ -z "$abi" ]] || scx_kernel_check_abi "$abi"
    if [[ -z "$abi" && "${SCXVM_KERNEL_REFRESH:-0}" != 1 ]]; then
        abi="$(scx_kernel_newest_cached)"
    fi
    if [[ -z "$abi" || ! -e "$SCX_KERNELS/$abi/.complete" ]]; then
        scx_kernel_apt
        if [[ -z "$abi" ]]; then
            scx_apt_update force
            abi="$(scx_kernel_newest_available)"
            [[ -n "$abi" ]] || die "no linux-binary-*-amd64 package found in $SCX_KERNEL_SUITE"
        else
            scx_apt_update
        fi
        scx_kernel_fetch "$abi"
    fi
    # shellcheck disable=SC2034 # for scripts/vm
    {
        KERNEL_ABI="$abi"
        KERNEL_IMG="$SCX_KERNELS/$abi/usr/lib/modules/$abi/vmlinuz"
        KERNEL_BOOTDIR="$SCX_KERNELS/$abi/boot"
        KERNEL_CONFIG="$KERNEL_BOOTDIR/config-$abi"
    }
}
