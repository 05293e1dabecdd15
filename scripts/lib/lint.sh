# shellcheck shell=bash
# The static checks scripts/test runs before any guest boots (sourced):
# cargo fmt, cargo clippy and the shell scripts' lint. Each returns
# non-zero on a finding and prints it.

lint_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

# Every shell script in the repository: tracked files whose first line is a
# sh or bash shebang or a `# shellcheck shell=` directive (the sourced
# libraries), and every *.sh, which must then carry one of the two. Outside
# a git checkout, every such file under the repository but target/.
shell_scripts() {
	local list
	if git -C "$lint_root" rev-parse --git-dir >/dev/null 2>&1; then
		list=(git -C "$lint_root" ls-files -z)
	else
		list=(find . -path ./target -prune -o -path ./.git -prune -o -type f -printf '%P\0')
	fi
	(cd "$lint_root" && "${list[@]}" | xargs -0 -r awk '
		FNR == 1 {
			if (/^#![^ ]*(\/|env +)(ba|da|k)?sh([ \t]|$)/ || /^# shellcheck shell=/ || FILENAME ~ /\.sh$/)
				print FILENAME
			nextfile
		}')
}

# Lint at severity warning (shellcheck's info and style notes are advice, not
# a gate), following the `# shellcheck source=` lines relative to each
# script (.shellcheckrc says so for a shellcheck run by hand too).
lint_shellcheck() {
	local files
	command -v shellcheck >/dev/null || { echo "shellcheck is not installed (scripts/install-deps --test installs it)"; return 1; }
	mapfile -t files < <(shell_scripts)
	[ "${#files[@]}" -gt 0 ] || { echo "no shell scripts found under $lint_root"; return 1; }
	echo "  shellcheck $(shellcheck --version | sed -n 's/^version: //p'), ${#files[@]} scripts: ${files[*]}"
	(cd "$lint_root" && shellcheck --severity=warning "${files[@]}")
}

lint_fmt() {
	(cd "$lint_root" && cargo fmt --check)
}

# After a build: build.rs compiles the BPF code again and needs the clang
# find_clang (lib/build.sh) exports.
lint_clippy() {
	(cd "$lint_root" && cargo clippy --all-targets --release --locked -- -D warnings)
}
