#!/usr/bin/env bash
# Area: Under systemd
# The systemd unit (contrib/scx_fastpath.service) and the Debian package
# under systemd as init, meant to run as
#   scripts/package --no-build && scripts/vm --systemd -- scripts/guest/systemd.sh
# Each test prints what it observed. A boot takes ~4 minutes under TCG and the
# whole script ~15, so it is scripts/test --systemd, not part of the default
# run.
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

# The unit's tests hand the running service on from one to the next (start,
# restart_on_ejection, stop): between them, only a scheduler start_sched
# started is stopped, and a running service is left running.
eval "lib_$(declare -f cleanup_sched)"
cleanup_sched() {
	if [ -z "${SCHED_PID:-}" ] && [ "$(prop ActiveState)" = active ]; then
		return 0
	fi
	lib_cleanup_sched
}

# The unit's journal since cursor file $1 was written (see mark_journal).
journal_since() { journalctl -u "$UNIT" --no-pager -o cat --after-cursor="$(cat "$1")" 2>/dev/null; }
mark_journal() { journalctl -n 0 --show-cursor --no-pager 2>/dev/null | sed -n 's/^-- cursor: //p' >"$1"; }

# Shows: `scripts/install --enable`, as a user would (README, "As a
# systemd service"), leaves the unit enabled and inactive;
# `systemd-analyze verify` is clean; completions and man page installed.
# The guest's root is an overlay, so nothing reaches the host.
# Fails: the unit is not loaded, enabled and inactive, or the binary is not
# installed.
test_install() {
	scripts/install --no-build --enable 2>&1 | sed 's/^/    | /'
	say "systemd-analyze verify: $(systemd-analyze verify "/etc/systemd/system/$UNIT.service" 2>&1 | grep -v '^$' | head -n 3 | xargs)"
	say "$UNIT: $(systemctl is-enabled "$UNIT"), $(prop ActiveState), state $(state); completions and man page: $(stat -c %n /usr/local/share/bash-completion/completions/scx_fastpath /usr/local/share/man/man1/scx_fastpath.1 2>&1 | tr '\n' ' ')"
	[ "$(prop LoadState)" = loaded ] && [ "$(systemctl is-enabled "$UNIT")" = enabled ] &&
		[ "$(prop ActiveState)" = inactive ] && [ -x "$BIN" ]
}

# Shows: `systemctl start` attaches; the journal has the loader's lines
# (its "attached" line), without colour codes.
# Fails: the start fails or does not attach within 30 s, the journal has
# no "attached" line, or it has colour codes.
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

# Shows: sysrq-S ejects the scheduler, the loader exits 1, systemd restarts
# it (Restart=on-failure, RestartSec=2) and it attaches again.
# Fails: it is not back 30 s after sysrq-S, or NRestarts did not grow.
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

# Shows: `systemctl stop` detaches within `TimeoutStopSec`, exit 0, the
# kernel back on its default scheduler.
# Fails: the state is not `disabled`, the exit status is not 0, or the stop
# took over 10 s.
test_stop() {
	local t0 ms
	t0=$(date +%s%N)
	systemctl stop "$UNIT"
	ms=$((($(date +%s%N) - t0) / 1000000))
	say "systemctl stop: ${ms} ms, exit status $(prop ExecMainStatus), $(prop ActiveState), state $(state)"
	[ "$(state)" = disabled ] && [ "$(prop ExecMainStatus)" = 0 ] && [ "$ms" -le 10000 ]
}

# Shows: with another instance attached (another sched_ext scheduler holds
# the kernel), the unit fails at once with exit status 3 and the loader's
# one-line reason in the journal, no restart (RestartPreventExitStatus=3),
# and the first one runs on.
# Fails: no reason in the journal, the unit not failed with exit status 3,
# a restart, or the first instance did not survive it.
test_conflict() {
	local j=$WORK/j.conflict ok=0 other restarts
	mark_journal "$j"
	# shellcheck disable=SC2119 # no extra flags
	start_sched || return 1
	other=$SCHED_PID
	systemctl start "$UNIT"
	sleep 6
	restarts=$(prop NRestarts)
	say "with another instance running: $(prop ActiveState)/$(prop Result), exit status $(prop ExecMainStatus), NRestarts $restarts after 6 s"
	journal_since "$j" | grep -m1 'already running' | sed 's/^/    journal | /'
	journal_since "$j" | grep -q 'another sched_ext scheduler is already running' ||
		{ say "no reason in the journal"; ok=1; }
	if [ "$(prop ActiveState)" != failed ] || [ "$(prop ExecMainStatus)" != 3 ] || [ "$restarts" != 0 ]; then
		say "expected failed with exit status 3 and no restart"
		ok=1
	fi
	systemctl stop "$UNIT"
	systemctl reset-failed "$UNIT" 2>/dev/null
	if [ "$(state)" != enabled ] || ! kill -0 "$other" 2>/dev/null; then
		say "the first instance did not survive it"
		ok=1
	fi
	cleanup_sched
	return $ok
}

# Shows: `SCX_FASTPATH_FLAGS="--slice-us 0"`, a flag the loader refuses
# (exit 2): the unit fails at once with exit status 2 and the message in
# the journal, no restart: retrying cannot help (RestartPreventExitStatus=2).
# Fails: the unit is not failed with exit status 2, it restarted, or the
# journal has no reason.
test_bad_flag() {
	local j=$WORK/j.flag ok=0
	mark_journal "$j"
	echo 'SCX_FASTPATH_FLAGS="--slice-us 0"' >/etc/default/scx_fastpath
	systemctl start "$UNIT"
	sleep 6
	say "a flag the loader refuses: $(prop ActiveState)/$(prop Result), exit status $(prop ExecMainStatus), NRestarts $(prop NRestarts)"
	journal_since "$j" | grep -m1 'slice-us' | sed 's/^/    journal | /'
	[ "$(prop ActiveState)" = failed ] && [ "$(prop ExecMainStatus)" = 2 ] && [ "$(prop NRestarts)" = 0 ] || ok=1
	journal_since "$j" | grep -q 'slice-us' || { say "no reason in the journal"; ok=1; }
	rm -f /etc/default/scx_fastpath
	systemctl reset-failed "$UNIT"
	return $ok
}

# Shows: ejected each time it attaches (sysrq-S), it is restarted at most
# StartLimitBurst (5) times within StartLimitIntervalSec, then systemd
# gives up: the unit stays failed. (systemd 252 leaves Result at exit-code
# when it is an automatic restart that the limit refuses; the journal says
# "Start request repeated too quickly".) A drop-in stretches the interval
# to 10 minutes: under TCG an attach takes seconds, and the test is about
# the burst, not the clock.
# Fails: the unit is not failed at the end, NRestarts is not 5, or the
# scheduler is left attached.
test_start_limit() {
	local i restarts active sysrq d=/run/systemd/system/$UNIT.service.d j=$WORK/j.limit
	mark_journal "$j"
	mkdir -p "$d"
	printf '[Unit]\nStartLimitIntervalSec=600\n' >"$d/interval.conf"
	systemctl daemon-reload
	sysrq=$(cat /proc/sys/kernel/sysrq)
	echo 1 >/proc/sys/kernel/sysrq
	systemctl start "$UNIT"
	for i in $(seq 10); do
		# Attached again, or given up (a restart is 2 s after an exit).
		for _ in $(seq 120); do
			[ "$(state)" = enabled ] && break
			[ "$(prop ActiveState)" = failed ] && break 2
			sleep 0.5
		done
		echo S >/proc/sysrq-trigger
		wait_state disabled 10
	done
	echo "$sysrq" >/proc/sys/kernel/sysrq
	sleep 5
	restarts=$(prop NRestarts) active=$(prop ActiveState)
	say "ejected $((i - 1)) times: $active/$(prop Result), NRestarts $restarts, state $(state) 5 s later"
	journal_since "$j" | grep -m1 'repeated too quickly' | sed 's/^/    journal | /'
	rm -rf "$d"
	systemctl daemon-reload
	systemctl reset-failed "$UNIT"
	[ "$active" = failed ] && [ "$restarts" = 5 ] && [ "$(state)" = disabled ]
}

# The scx project's own service (scx.service: `$SCX_SCHEDULER $SCX_FLAGS`
# from /etc/default/scx), set to run scx_fastpath: a stand-in with that
# unit's shape (the scx project does not ship on these machines).
scx_stand_in() {
	cat >/etc/systemd/system/scx.service <<-'UNIT'
	[Unit]
	Description=stand-in for the scx project's scx.service
	[Service]
	Type=simple
	EnvironmentFile=/etc/default/scx
	ExecStart=/bin/bash -c 'exec $SCX_SCHEDULER $SCX_FLAGS'
	Restart=on-failure
	[Install]
	WantedBy=multi-user.target
	UNIT
	printf 'SCX_SCHEDULER=scx_fastpath\nSCX_FLAGS="--slice-us 4000"\n' >/etc/default/scx
	systemctl daemon-reload
}

scx_stand_in_gone() {
	systemctl disable scx.service 2>/dev/null
	rm -f /etc/systemd/system/scx.service /etc/default/scx
	systemctl daemon-reload
}

# Shows: the scx project's `scx.service` shape (`$SCX_SCHEDULER $SCX_FLAGS`
# from /etc/default/scx; a stand-in, scx_stand_in) runs scx_fastpath when it
# is on PATH; starting `scx_fastpath.service` stops it (`Conflicts=`).
# Fails: scx.service does not attach, or after the start scx.service is not
# inactive or scx_fastpath.service not active.
test_scx_service() {
	local ok=0
	scx_stand_in
	systemctl start scx.service
	wait_state enabled 30 || { say "scx.service did not attach: state $(state)"; ok=1; }
	say "scx.service with SCX_SCHEDULER=scx_fastpath: $(systemctl show -P ActiveState scx.service), state $(state), root/ops '$(ops)'"
	systemctl start "$UNIT"
	wait_state enabled 30 || ok=1
	say "then systemctl start $UNIT: scx.service $(systemctl show -P ActiveState scx.service), $UNIT $(prop ActiveState), state $(state)"
	[ "$(systemctl show -P ActiveState scx.service)" = inactive ] && [ "$(prop ActiveState)" = active ] || ok=1
	systemctl stop "$UNIT"
	scx_stand_in_gone
	return $ok
}

# Shows: `systemd-analyze security scx_fastpath` rates the unit.
# Fails: it prints no rating.
test_security() {
	local out
	out=$(systemd-analyze security "$UNIT" --no-pager 2>&1 | tail -n 1)
	say "systemd-analyze security: $out"
	[ -n "$out" ]
}

# Shows: `scripts/install --uninstall` leaves none of the files.
# Fails: the binary, the unit or /etc/default/scx_fastpath is left.
test_uninstall() {
	scripts/install --uninstall 2>&1 | sed 's/^/    | /'
	say "after --uninstall: $(systemctl is-enabled "$UNIT" 2>&1), left: $(stat -c %n "$BIN" "/etc/systemd/system/$UNIT.service" /etc/default/scx_fastpath 2>/dev/null | tr '\n' ' ')"
	[ ! -e "$BIN" ] && [ ! -e "/etc/systemd/system/$UNIT.service" ] && [ ! -e /etc/default/scx_fastpath ]
}

# Shows: the .deb (scripts/package) installs enabled and inactive (not
# started), starts and attaches, upgrades over itself (a reinstall of the
# same version restarts a running service) and runs on; a purge stops it
# and leaves none of its files.
# Fails: any of these does not hold, or there is no .deb in target/debian.
test_package() {
	local ok=0 files
	[ -n "$DEB" ] || { say "no target/debian/scx-fastpath_*.deb (run scripts/package)"; return 1; }
	# man-db's trigger re-indexes every man page, minutes over 9p under
	# TCG; not what is tested.
	rm -f /var/lib/man-db/auto-update
	dpkg -i "$DEB" >"$WORK/dpkg.log" 2>&1 || { sed 's/^/    | /' "$WORK/dpkg.log"; return 1; }
	say "dpkg -i $(basename "$DEB"): $(systemctl is-enabled "$UNIT"), $(prop ActiveState), state $(state)"
	[ "$(systemctl is-enabled "$UNIT")" = enabled ] && [ "$(prop ActiveState)" = inactive ] || ok=1
	systemctl start "$UNIT"
	wait_state enabled 30 || { say "packaged unit did not attach: state $(state)"; ok=1; }
	say "systemctl start: state $(state), $(prop ExecStart | grep -o 'path=[^ ;]*')"
	dpkg -i "$DEB" >"$WORK/dpkg.log" 2>&1 || { say "reinstall failed"; sed 's/^/    | /' "$WORK/dpkg.log"; ok=1; }
	# An upgrade (here: the same version again) restarts a running service.
	wait_state enabled 30 || ok=1
	say "reinstalled over itself: $(prop ActiveState), NRestarts $(prop NRestarts), state $(state)"
	[ "$(prop ActiveState)" = active ] || ok=1
	files=$(dpkg -L scx-fastpath | while read -r f; do [ -f "$f" ] && echo "$f"; done)
	dpkg --purge scx-fastpath >"$WORK/dpkg.log" 2>&1 || { sed 's/^/    | /' "$WORK/dpkg.log"; ok=1; }
	wait_state disabled 10 || { say "state $(state) after purge"; ok=1; }
	for f in $files /etc/default/scx_fastpath /etc/systemd/system/multi-user.target.wants/$UNIT.service; do
		[ -e "$f" ] && { say "left after purge: $f"; ok=1; }
	done
	say "purged: state $(state), $(systemctl is-enabled "$UNIT" 2>&1), none of its $(echo "$files" | wc -w) files left"
	return $ok
}

# Shows: the package where scx.service is enabled: installed, not enabled
# (the admin chose scx.service), and postinst says how to switch.
# Fails: the unit is enabled, or postinst does not say why it left it
# disabled.
test_package_beside_scx() {
	local ok=0
	[ -n "$DEB" ] || { say "no target/debian/scx-fastpath_*.deb (run scripts/package)"; return 1; }
	rm -f /var/lib/man-db/auto-update
	scx_stand_in
	systemctl enable scx.service 2>/dev/null
	dpkg -i "$DEB" >"$WORK/dpkg.log" 2>&1 || { sed 's/^/    | /' "$WORK/dpkg.log"; ok=1; }
	say "scx.service $(systemctl is-enabled scx.service); dpkg -i: $UNIT $(systemctl is-enabled "$UNIT" 2>&1)"
	grep '^scx-fastpath:' "$WORK/dpkg.log" | sed 's/^/    | /'
	[ "$(systemctl is-enabled "$UNIT" 2>&1)" = disabled ] || ok=1
	grep -q '^scx-fastpath: scx.service is enabled.*systemctl disable --now scx.service && systemctl enable --now scx_fastpath.service$' "$WORK/dpkg.log" ||
		{ say "postinst did not say why it left $UNIT disabled"; ok=1; }
	dpkg --purge scx-fastpath >"$WORK/dpkg.log" 2>&1 || { sed 's/^/    | /' "$WORK/dpkg.log"; ok=1; }
	scx_stand_in_gone
	return $ok
}

for t in ${TESTS:-install start restart_on_ejection stop conflict bad_flag start_limit scx_service security uninstall package package_beside_scx}; do
	declare -F "test_$t" >/dev/null || { echo "no such test: $t"; exit 2; }
	run_test "$t" "test_$t"
done
systemctl stop "$UNIT" 2>/dev/null
summary
