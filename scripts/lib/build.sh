# Build helpers shared by scripts/test, scripts/run and scripts/bench (sourced).

# scx_cargo runs `clang` for the BPF code and bindgen needs libclang; on
# Debian both come from the versioned LLVM 19 packages.
if [ -d /usr/lib/llvm-19/bin ]; then
	export PATH="/usr/lib/llvm-19/bin:$PATH"
fi
# rustup installs cargo here; non-login shells (CI) may not have it on PATH.
if [ -d "$HOME/.cargo/bin" ]; then
	export PATH="$HOME/.cargo/bin:$PATH"
fi

build_release() {
	cargo build --release --locked "$@"
}
