#!/usr/bin/env bash
# The systemd unit (contrib/scx_fastpath.service) and the Debian package
# under systemd as init, meant to run as
#   scripts/package --no-build && scripts/vm --systemd -- scripts/guest/systemd.sh
# NOT RUN YET: scripts/vm --systemd does not get CMD's output back here
# (README, Known issues), so this is not part of scripts/test, and
# install-deps does not install systemd for it. Each test prints what it
# observed.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
source "$here/lib.sh"

UNIT=scx_fastpath
BIN=/usr/local/bin/scx_fastpath

[ "$(cat /proc/1/comm)" = systemd ] || { echo "PID 1 is $(cat /proc/1/comm), not systemd (boot with scripts/vm --systemd)"; exit 2; }
echo "guest: kernel $(uname -r), $(nproc) CPUs, $(systemctl --version | head -n 1), state $(state)"

DEB=$(find target/debian -name 'scx-fastpath_*.deb' 2>/dev/null | sort | tail -n 1)

prop() { systemctl show -P "$1" "$UNIT"; }

# The unit's journal since cursor file $1 was written (see mark_journal).
journal_since() { journalctl -u "$UNIT" --no-pager -o cat --after-cursor="$(cat "$1")" 2>/dev/null; }
mark_journal() { journalctl -n 0 --show-cursor --no-pager 2>/dev/null | sed -n 's/^-- cursor: //p' >"$1"; }

# scripts/install --enable, as a user would (README, "As a systemd
# service"); the guest's root is an overlay, so nothing reaches the host.
test_install() {
	scripts/install --no-build --enable 2>&1 | sed 's/^/    | /'
	say "systemd-analyze verify: $(systemd-analyze verify "/etc/systemd/system/$UNIT.service" 2>&1 | grep -v '^$' | head -n 3 | xargs)"
	say "$UNIT: $(systemctl is-enabled "$UNIT"), $(prop ActiveState), state $(state); completions and man page: $(stat -c %n /usr/local/share/bash-completion/completions/scx_fastpath /usr/local/share/man/man1/scx_fastpath.1 2>&1 | tr '\n' ' ')"
	[ "$(prop LoadState)" = loaded ] && [ "$(systemctl is-enabled "$UNIT")" = enabled ] &&
		[ "$(prop ActiveState)" = inactive ] && [ -x "$BIN" ]
}

test_start() {
	local j=$WORK/j.start ok=0
	mark_journal "$j"
	systemctl start "$UNIT" || { say "systemctl start failed"; return 1; }
	wait_state enabled 30 || { say "state $(state) 30 s after start"; journal_since "$j" | tail -n 5 | sed 's/^/    | /'; return 1; }
	say "systemctl start: $(prop ActiveState)/$(prop SubState), state $(state), root/ops '$(ops)'"
	sleep 1
	journal_since "$j" | grep -m1 'attached' | sed 's/^/    journal | /'
	journal_since "$j" | grep -q 'attached' || { say "no 'attached' line in the journal"; ok=1; }
	if journal_since "$j" | grep -q $'\e'; then
		say "the journal has colour codes"
		ok=1
	fi
	return $ok
}

# sysrq-S ejects the scheduler: the loader exits 1 and systemd starts it
# again (Restart=on-failure, RestartSec=2).
test_restart_on_ejection() {
	local before after sysrq
	before=$(prop NRestarts)
	sysrq=$(cat /proc/sys/kernel/sysrq)
	echo 1 >/proc/sys/kernel/sysrq
	echo S >/proc/sysrq-trigger
	echo "$sysrq" >/proc/sys/kernel/sysrq
	wait_state disabled 5 || say "state $(state) after sysrq-S"
	sleep 3
	wait_state enabled 30 || { say "not back 30 s after sysrq-S: state $(state), $(prop ActiveState)"; return 1; }
	after=$(prop NRestarts)
	say "sysrq-S: ejected, restarted by systemd (NRestarts $before -> $after), state $(state)"
	[ "$after" -gt "$before" ]
}

test_stop() {
	local t0 ms
	t0=$(date +%s%N)
	systemctl stop "$UNIT"
	ms=$((($(date +%s%N) - t0) / 1000000))
	say "systemctl stop: ${ms} ms, exit status $(prop ExecMainStatus), $(prop ActiveState), state $(state)"
	[ "$(state)" = disabled ] && [ "$(prop ExecMainStatus)" = 0 ] && [ "$ms" -le 10000 ]
}

# Another sched_ext scheduler holds the kernel: the unit fails with the
# loader's one-line reason in the journal.
test_conflict() {
	local j=$WORK/j.conflict ok=0 other
	mark_journal "$j"
	start_sched || return 1
	other=$SCHED_PID
	systemctl start "$UNIT"
	sleep 2
	say "with another instance running: $(prop ActiveState)/$(prop Result)"
	journal_since "$j" | grep -m1 'already running' | sed 's/^/    journal | /'
	journal_since "$j" | grep -q 'another sched_ext scheduler is already running' ||
		{ say "no reason in the journal"; ok=1; }
	systemctl stop "$UNIT"
	systemctl reset-failed "$UNIT" 2>/dev/null
	if [ "$(state)" != enabled ] || ! kill -0 "$other" 2>/dev/null; then
		say "the first instance did not survive it"
		ok=1
	fi
	cleanup_sched
	return $ok
}

# A start that always fails (an out-of-range flag: exit 2) is retried at
# most StartLimitBurst times, then systemd gives up (start-limit-hit).
test_start_limit() {
	local i result
	echo 'SCX_FASTPATH_FLAGS="--slice-us 0"' >/etc/default/scx_fastpath
	systemctl start "$UNIT"
	for i in $(seq 60); do
		result=$(prop Result)
		[ "$result" = start-limit-hit ] && break
		sleep 1
	done
	say "a flag the loader refuses: Result=$result after ${i} s, NRestarts $(prop NRestarts), state $(state)"
	rm -f /etc/default/scx_fastpath
	systemctl reset-failed "$UNIT"
	[ "$result" = start-limit-hit ] && [ "$(state)" = disabled ]
}

test_security() {
	local out
	out=$(systemd-analyze security "$UNIT" --no-pager 2>&1 | tail -n 1)
	say "systemd-analyze security: $out"
	[ -n "$out" ]
}

test_uninstall() {
	scripts/install --uninstall 2>&1 | sed 's/^/    | /'
	say "after --uninstall: $(systemctl is-enabled "$UNIT" 2>&1), left: $(stat -c %n "$BIN" "/etc/systemd/system/$UNIT.service" /etc/default/scx_fastpath 2>/dev/null | tr '\n' ' ')"
	[ ! -e "$BIN" ] && [ ! -e "/etc/systemd/system/$UNIT.service" ] && [ ! -e /etc/default/scx_fastpath ]
}

# The Debian package (scripts/package): enabled but not started on
# install, starts and attaches, reinstalls over itself, and a purge stops
# it and leaves none of its files.
test_package() {
	local ok=0 files
	[ -n "$DEB" ] || { say "no target/debian/scx-fastpath_*.deb (run scripts/package)"; return 1; }
	dpkg -i "$DEB" >"$WORK/dpkg.log" 2>&1 || { sed 's/^/    | /' "$WORK/dpkg.log"; return 1; }
	say "dpkg -i $(basename "$DEB"): $(systemctl is-enabled "$UNIT"), $(prop ActiveState), state $(state)"
	[ "$(systemctl is-enabled "$UNIT")" = enabled ] && [ "$(prop ActiveState)" = inactive ] || ok=1
	systemctl start "$UNIT"
	wait_state enabled 30 || { say "packaged unit did not attach: state $(state)"; ok=1; }
	say "systemctl start: state $(state), $(prop ExecStart | grep -o 'path=[^ ;]*')"
	dpkg -i "$DEB" >"$WORK/dpkg.log" 2>&1 || { say "reinstall failed"; sed 's/^/    | /' "$WORK/dpkg.log"; ok=1; }
	say "reinstalled: exit 0, $(prop ActiveState)"
	files=$(dpkg -L scx-fastpath | while read -r f; do [ -f "$f" ] && echo "$f"; done)
	dpkg --purge scx-fastpath >"$WORK/dpkg.log" 2>&1 || { sed 's/^/    | /' "$WORK/dpkg.log"; ok=1; }
	wait_state disabled 10 || { say "state $(state) after purge"; ok=1; }
	for f in $files /etc/default/scx_fastpath /etc/systemd/system/multi-user.target.wants/$UNIT.service; do
		[ -e "$f" ] && { say "left after purge: $f"; ok=1; }
	done
	say "purged: state $(state), $(systemctl is-enabled "$UNIT" 2>&1), none of its $(echo "$files" | wc -w) files left"
	return $ok
}

for t in ${TESTS:-install start restart_on_ejection stop conflict start_limit security uninstall package}; do
	declare -F "test_$t" >/dev/null || { echo "no such test: $t"; exit 2; }
	run_test "$t" "test_$t"
done
systemctl stop "$UNIT" 2>/dev/null
summary
