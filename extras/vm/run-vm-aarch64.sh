#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# run-vm.sh for an aarch64 guest (qemu-system-aarch64 -M virt, TCG).
ARCH=aarch64 exec "$(dirname "$0")/run-vm.sh" "$@"
