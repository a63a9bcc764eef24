# SPDX-License-Identifier: GPL-2.0-or-later
# tests/utils/tap.sh - TAP producer for shell tests; source it:
#
#	. "${TAP_SH:-$(dirname "$0")/../utils/tap.sh}"
#	plan 2                  (or: plan_no_plan)
#	some_command; ok $? "some_command succeeds"
#	test -s out;  ok $? "it wrote something"
#	skip 1 "no gnuplot"
#	diag "a comment"
#	tap_finish              (exit with the TAP status; last line)
#
# ok takes an exit status (0 passes), like the status of a command, and
# returns it: do not run tests under "set -e".

_tap_run=0
_tap_failed=0
_tap_planned=
_tap_no_plan=

plan()
{
	_tap_planned=$1
	echo "1..$1"
}

plan_no_plan()
{
	_tap_no_plan=1
}

skip_all()
{
	echo "1..0 # SKIP $*"
	exit 0
}

ok()
{
	_tap_status=$1
	shift
	_tap_run=$((_tap_run + 1))
	if [ "$_tap_status" -eq 0 ]; then
		echo "ok $_tap_run - $*"
	else
		_tap_failed=$((_tap_failed + 1))
		echo "not ok $_tap_run - $*"
	fi
	return "$_tap_status"
}

diag()
{
	echo "$*" | sed 's/^/# /'
}

skip()
{
	_tap_n=$1
	shift
	while [ "$_tap_n" -gt 0 ]; do
		_tap_run=$((_tap_run + 1))
		echo "ok $_tap_run # SKIP $*"
		_tap_n=$((_tap_n - 1))
	done
}

bail_out()
{
	echo "Bail out! $*"
	exit 255
}

# Print the trailing plan if there was none and exit: non-zero when a
# test failed or the count does not match the plan.
tap_finish()
{
	if [ -n "$_tap_no_plan" ]; then
		echo "1..$_tap_run"
	elif [ -n "$_tap_planned" ] && [ "$_tap_planned" -ne "$_tap_run" ]; then
		echo "# Looks like you planned $_tap_planned tests but ran $_tap_run."
		exit 255
	fi
	[ "$_tap_failed" -eq 0 ] || exit 1
	exit 0
}
