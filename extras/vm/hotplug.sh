#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Guest side of "make vmcheck-hotplug": runs test programs while CPUs go
# offline and online, then again inside a CPU affinity mask that the
# hotplug cuts into. Meant for a VM booted with fewer CPUs online than
# present (maxcpus= on the kernel command line): CPUs the programs never
# saw at start come online under them, so per-CPU data sized by the CPUs
# online, or code that keeps a CPU number it saw, would show.
#
# The programs are copied into /tests with run-vm.sh --file and named,
# comma-separated, in VM_HOTPLUG_PROGRAMS. Their TAP lines are passed
# through; this script adds its own checks and exits non-zero when a
# program failed or a check did not hold.

cd "$(dirname "$0")" || exit 2
sysfs=/sys/devices/system/cpu
programs=$(echo "${VM_HOTPLUG_PROGRAMS:-}" | tr ',' ' ')
period_ms=${VM_HOTPLUG_PERIOD_MS:-20}
status=0
n=0

check()
{
	n=$((n + 1))
	if [ "$1" = 0 ]; then
		echo "ok $n - $2"
	else
		echo "not ok $n - $2"
		status=1
	fi
}

# Number of CPUs in a list such as "0-3,5".
count_cpus()
{
	echo "$1" | tr ',' '\n' | awk -F- '
		NF == 2 { c += $2 - $1 + 1; next }
		NF == 1 && $1 != "" { c++ }
		END { print c + 0 }'
}

# The CPUs that can go offline: those with an "online" file (not CPU 0 on
# most x86 kernels).
hotpluggable=""
for f in "$sysfs"/cpu[0-9]*/online; do
	[ -e "$f" ] || continue
	c=${f#"$sysfs"/cpu}
	hotpluggable="$hotpluggable ${c%/online}"
done

possible=$(cat "$sysfs/possible")
online=$(cat "$sysfs/online")
echo "# possible CPUs: $possible, present: $(cat "$sysfs/present"), online: $online"
echo "# hotpluggable:$hotpluggable; programs: $programs"
[ -n "$programs" ] || { echo "Bail out! VM_HOTPLUG_PROGRAMS names no program"; exit 2; }
[ -n "$hotpluggable" ] || { echo "Bail out! no CPU can go offline here"; exit 2; }

# Flip each hotpluggable CPU in turn (offline if it was online, online if
# it was offline), wait, flip it back, until the stop file appears; count
# the flips of CPUs that were offline at boot.
flip()
{
	if [ "$(cat "$sysfs/cpu$1/online")" = 1 ]; then
		echo 0 >"$sysfs/cpu$1/online" 2>/dev/null
	else
		echo 1 >"$sysfs/cpu$1/online" 2>/dev/null
	fi
}

toggler()
{
	cycles=0 added=0
	while [ ! -e /tmp/hotplug.stop ]; do
		for c in $hotpluggable; do
			[ -e /tmp/hotplug.stop ] && break
			flip "$c" || continue
			[ "$(cat "$sysfs/cpu$c/online")" = 1 ] && added=$((added + 1))
			usleep $((period_ms * 1000))
			flip "$c"
			cycles=$((cycles + 1))
			echo "$cycles $added" >/tmp/hotplug.cycles
			usleep $((period_ms * 1000))
		done
	done
}

# run_phase NAME [PREFIX...]: every program, under PREFIX, with the toggler.
run_phase()
{
	phase=$1
	shift
	rm -f /tmp/hotplug.stop /tmp/hotplug.cycles
	toggler &
	tpid=$!
	for p in $programs; do
		echo "# $phase: $p"
		"$@" "./$p" </dev/null 2>&1
		rc=$?
		check "$rc" "$phase: $p exited with status $rc"
	done
	touch /tmp/hotplug.stop
	wait "$tpid"
	read -r cycles added </tmp/hotplug.cycles 2>/dev/null || cycles=0 added=0
	check "$([ "$cycles" -gt 0 ] && [ "$added" -gt 0 ] && echo 0 || echo 1)" \
		"$phase: $cycles CPU hotplug cycles while the programs ran, $added with a CPU offline at boot coming online"
	check "$([ "$(cat "$sysfs/online")" = "$online" ] && echo 0 || echo 1)" \
		"$phase: the CPUs online at boot, and only they, online again ($(cat "$sysfs/online"))"
}

run_phase "CPUs cycling"
# A mask of CPU 0 and the last hotpluggable CPU (offline at boot in the
# configuration above), which comes online and goes offline under the
# programs: the kernel moves their threads to CPU 0 and back, and CPU
# numbers they saw stop being valid for a while.
last=${hotpluggable##* }
run_phase "taskset 0,$last, CPUs cycling" taskset -c "0,$last"

present=$(cat "$sysfs/present")
check "$([ "$(count_cpus "$present")" -gt "$(count_cpus "$online")" ] && echo 0 || echo 1)" \
	"more CPUs present ($present) than online at boot ($online)"
# Debian's Linux 6.1 counts QEMU's absent CPUs as possible; its 6.12 and
# 7.2 do not (possible equals present there), so this is only reported.
echo "# possible CPUs: $possible ($(count_cpus "$possible")), present: $present ($(count_cpus "$present"))"
echo "1..$n"
exit $status
