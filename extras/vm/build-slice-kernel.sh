#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Build an x86_64 kernel that offers rseq's time-slice extension, for
# "make vmcheck-slice-ext".  Debian's own 7.x kernels are built without it
# (linux-config-7.2: "# CONFIG_RSEQ_SLICE_EXTENSION is not set", in the
# amd64, cloud and rt flavours), so the mutex's use of it cannot be tested
# on them.  This takes Debian sid's linux-source-7.*, starts from the
# upstream x86_64 defconfig (everything the VM needs is built in), turns on
# CONFIG_RSEQ_SLICE_EXTENSION and keeps Debian's scheduler settings that
# matter for it (lazy preemption with the dynamic choice, HZ=250), adds
# the kernel's rseq counters (CONFIG_RSEQ_STATS, which needs EXPERT: how
# many extensions were granted, yielded, expired), and builds bzImage.  About 30 min on 2 cores; the image is kept.
#
# Usage: build-slice-kernel.sh OUTDIR     (prints the image's path)
# Needs (installed when missing, as root): build-essential flex bison bc
# libelf-dev libssl-dev.  URCU_RSEQ_VM_MIRROR: the archive (deb.debian.org).

set -eu
out=${1:?usage: build-slice-kernel.sh OUTDIR}
mirror=${URCU_RSEQ_VM_MIRROR:-http://deb.debian.org/debian}
mkdir -p "$out"
out=$(cd "$out" && pwd)
image=$out/bzImage
if [ -s "$image" ]; then
	echo "$image"
	exit 0
fi
note() { echo "build-slice-kernel: $*" >&2; }

missing=
for p in build-essential flex bison bc libelf-dev libssl-dev xz-utils; do
	dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
if [ -n "$missing" ]; then
	note "installing$missing"
	apt-get update -qq >&2 && apt-get install -y -qq $missing >&2
fi

# sid's package index, apart from the host's sources (as run-vm.sh does).
apt=$out/apt
mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial"
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
opt=
[ -r "$keyring" ] && opt="[signed-by=$keyring] "
echo "deb $opt$mirror sid main" >"$apt/sources.list"
APT=(-o "Dir::Etc::SourceList=$apt/sources.list" -o Dir::Etc::SourceParts=/nonexistent
	-o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache"
	-o Dir::State::status=/dev/null -o APT::Architecture=amd64
	-o Acquire::Check-Valid-Until=false)
apt-get "${APT[@]}" update -qq >&2
src=$(apt-cache "${APT[@]}" pkgnames linux-source-7. | sort -V | tail -n 1)
[ -n "$src" ] || { note "no linux-source-7.* in sid"; exit 1; }
note "downloading $src"
(cd "$out" && apt-get "${APT[@]}" download -q "$src" >&2)
deb=$(ls "$out/${src}"_*_all.deb | tail -n 1)

work=$out/src
rm -rf "$work"
mkdir -p "$work"
dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$work" --wildcards './usr/src/linux-source-*.tar.xz'
tar -xJf "$work"/usr/src/linux-source-*.tar.xz -C "$work"
cd "$work"/linux-source-*/
make -s defconfig
scripts/config -e RSEQ -e RSEQ_SLICE_EXTENSION -e EXPERT -e RSEQ_STATS \
	-e PREEMPT_DYNAMIC -e PREEMPT_LAZY \
	-d PREEMPT_NONE -d PREEMPT_VOLUNTARY -d HZ_1000 -e HZ_250 \
	-e SCHED_MM_CID -e MEMBARRIER -e DEVTMPFS -e SERIAL_8250_CONSOLE \
	-e HOTPLUG_CPU -d DRM -d SOUND -d WLAN -d WIRELESS -d USB_SUPPORT \
	-d DEBUG_INFO_DWARF_TOOLCHAIN_DEFAULT -d DEBUG_INFO_DWARF5 \
	-e DEBUG_INFO_NONE -d DEBUG_INFO_BTF --set-str LOCALVERSION -sliceext
make -s olddefconfig
grep -q '^CONFIG_RSEQ_SLICE_EXTENSION=y' .config ||
	{ note "CONFIG_RSEQ_SLICE_EXTENSION did not stay on"; exit 1; }
note "building $(make -s kernelversion) (about 30 min on 2 cores)"
make -s -j"$(nproc)" bzImage >&2
cp arch/x86/boot/bzImage "$image"
cp .config "$out/config"
cd "$out" && rm -rf "$work" "$deb"
echo "$image"
