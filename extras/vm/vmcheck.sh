#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Entry point for "make vmcheck": run statically linked test programs of a
# build directory in a VM on Debian 12's linux 6.1, or on the kernel of the
# suite URCU_RSEQ_VM_SUITE names (trixie, sid).
#
# Usage: vmcheck.sh BUILDDIR ARCH [TEST...]
#   ARCH   x86_64, aarch64 (or amd64, arm64, native)
#   TEST   test programs or /bin/sh scripts, relative to BUILDDIR or
#          absolute; if none is given, the (white-space separated) list in
#          $VMCHECK_TESTS is used.
# Options for run-vm.sh (e.g. --file, --env) may be given in $VMCHECK_FLAGS.
#
# The VM cache defaults to BUILDDIR/vm-cache, the run directory to
# BUILDDIR/vm-run-ARCH[-SUITE] (per-test TAP logs in its logs/ subdirectory); the
# URCU_RSEQ_VM_* variables described in extras/vm/README.md still apply.
# Exit status: 0 if every test passed, 1 if one failed or the VM did not
# finish, 2 on a usage or setup error.

set -u
here=$(cd "$(dirname "$0")" && pwd)

if [ $# -lt 2 ]; then
	echo "usage: $0 BUILDDIR ARCH [TEST...]" >&2
	exit 2
fi
builddir=$(cd "$1" && pwd) || exit 2
arch=$2
shift 2
case $arch in
native|host|'') arch=$(uname -m) ;;
amd64) arch=x86_64 ;;
arm64) arch=aarch64 ;;
esac

if [ $# -eq 0 ]; then
	# shellcheck disable=SC2086 # word splitting wanted
	set -- ${VMCHECK_TESTS:-}
fi
if [ $# -eq 0 ]; then
	echo "$0: no test given (arguments or VMCHECK_TESTS)" >&2
	exit 2
fi

cd "$builddir" || exit 2
: "${URCU_RSEQ_VM_CACHE:=$builddir/vm-cache}"
: "${URCU_RSEQ_VM_OUTDIR:=$builddir/vm-run-$arch${URCU_RSEQ_VM_SUITE:+-$URCU_RSEQ_VM_SUITE}}"
export URCU_RSEQ_VM_CACHE URCU_RSEQ_VM_OUTDIR
# shellcheck disable=SC2086 # word splitting wanted
ARCH=$arch exec "$here/run-vm.sh" ${VMCHECK_FLAGS:-} -- "$@"
