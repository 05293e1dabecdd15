# shellcheck shell=bash
# Build helpers shared by scripts/test, scripts/run and scripts/bench (sourced).

# rustup installs cargo here; non-login shells (CI) may not have it on PATH.
if [ -d "$HOME/.cargo/bin" ]; then
	export PATH="$HOME/.cargo/bin:$PATH"
fi

# scx_cargo runs clang for the BPF code (BPF_CLANG, else `clang` on PATH) and
# bindgen needs libclang. Debian ships clang 18+ only as versioned packages
# (clang-19) with no plain `clang`, so find the newest clang-NN >= 18 and
# export it. Called at build time, not when this file is sourced: on a fresh
# machine scripts/install-deps installs clang-19 after that.
find_clang() {
	local d v best=""
	if [ -n "${BPF_CLANG:-}" ]; then
		return 0
	fi
	for d in /usr/lib/llvm-*/bin; do
		v=${d#/usr/lib/llvm-}
		v=${v%/bin}
		[ -x "$d/clang" ] && [ "$v" -ge 18 ] 2>/dev/null || continue
		[ -z "$best" ] || [ "$v" -gt "$best" ] && best=$v
	done
	if [ -n "$best" ]; then
		export PATH="/usr/lib/llvm-$best/bin:$PATH"
		export BPF_CLANG="/usr/lib/llvm-$best/bin/clang"
	elif command -v clang >/dev/null; then
		export BPF_CLANG=clang
	else
		echo "build: no clang 18 or later found (install clang-19, or set BPF_CLANG)" >&2
		return 1
	fi
}

build_release() {
	find_clang
	cargo build --release --locked "$@"
}
