#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Summary of "make vmcheck-slice-ext": from slice-ext.sh's log, the
# bench_mutex rows echoed as "# off N <tsv>" and "# on N <tsv>", per cell
# and lock the median over the runs of acquisitions/s and p99 wait without
# and with the time-slice extension, their min-max, and on/off ratios.
#
# Usage: slice-summary.sh LOG

log=${1:?usage: slice-summary.sh LOG}
grep -h 'time-slice extension\|^ *# kernel\|slice_ext_nsec\|sections granted\|slice counters' "$log" |
	sed 's/^ *# *//' | sort -u
tr -d '\r' <"$log" | awk -F'\t' '
function med(list,   n, a, i, j, t) {
	n = split(list, a, " ")
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) {
			t = a[j]; a[j] = a[j - 1]; a[j - 1] = t
		}
	return n ? a[int((n + 1) / 2)] : 0
}
function lo(list,   n, a, i, m) {
	n = split(list, a, " "); m = a[1]
	for (i = 2; i <= n; i++) if (a[i] + 0 < m + 0) m = a[i]
	return m
}
function hi(list,   n, a, i, m) {
	n = split(list, a, " "); m = a[1]
	for (i = 2; i <= n; i++) if (a[i] + 0 > m + 0) m = a[i]
	return m
}
{
	# "# off 1 bench_mutex<TAB>group<TAB>case..." : mode and run in field 1.
	if (split($1, h, " ") < 4 || h[1] != "#" || (h[2] != "off" && h[2] != "on"))
		next
	if (h[4] != "bench_mutex")
		next
	key = $2 "\t" $3 "\t" $5
	if (!(key in seen)) { seen[key] = 1; order[++nk] = key }
	ops[h[2], key] = ops[h[2], key] " " $8
	p99[h[2], key] = p99[h[2], key] " " $14
	run[h[2], h[3], key] = $8
	if (!((h[2], h[3]) in runs)) { runs[h[2], h[3]] = 1; rl[h[2]] = rl[h[2]] " " h[3] }
}
END {
	printf "%-28s %-26s %4s %22s %22s %6s %20s %20s %6s\n", "cell", "lock",
		"thr", "M acq/s off (min-max)", "M acq/s on (min-max)", "on/off",
		"p99 us off", "p99 us on", "on/off"
	for (k = 1; k <= nk; k++) {
		key = order[k]; split(key, f, "\t")
		of = med(ops["off", key]) / 1e6; on = med(ops["on", key]) / 1e6
		po = med(p99["off", key]) / 1e3; pn = med(p99["on", key]) / 1e3
		printf "%-28s %-26s %4s %6.3f (%6.3f-%6.3f) %6.3f (%6.3f-%6.3f) %6.2f %6.1f (%5.1f-%5.1f) %6.1f (%5.1f-%5.1f) %6.2f\n",
			f[1], f[2], f[3],
			of, lo(ops["off", key]) / 1e6, hi(ops["off", key]) / 1e6,
			on, lo(ops["on", key]) / 1e6, hi(ops["on", key]) / 1e6,
			(of > 0 ? on / of : 0),
			po, lo(p99["off", key]) / 1e3, hi(p99["off", key]) / 1e3,
			pn, lo(p99["on", key]) / 1e3, hi(p99["on", key]) / 1e3,
			(po > 0 ? pn / po : 0)
	}
	# The host drifts between runs: each lock against pthread_mutex in
	# the same run (same process, same minute) is the fair comparison.
	print ""
	printf "%-28s %-26s %4s %22s %22s %6s\n", "cell", "lock / pthread_mutex",
		"thr", "off: median (min-max)", "on: median (min-max)", "on/off"
	for (k = 1; k <= nk; k++) {
		key = order[k]; split(key, f, "\t")
		if (f[2] == "pthread_mutex")
			continue
		base = f[1] "\t" "pthread_mutex" "\t" f[3]
		for (m = 0; m < 2; m++) {
			mode = m ? "on" : "off"; r[mode] = ""
			n = split(rl[mode], ids, " ")
			for (i = 1; i <= n; i++)
				if ((mode, ids[i], key) in run && run[mode, ids[i], base] > 0)
					r[mode] = r[mode] " " run[mode, ids[i], key] / run[mode, ids[i], base]
		}
		of = med(r["off"]); on = med(r["on"])
		printf "%-28s %-26s %4s %6.2f (%6.2f-%6.2f) %6.2f (%6.2f-%6.2f) %6.2f\n",
			f[1], f[2], f[3], of, lo(r["off"]), hi(r["off"]),
			on, lo(r["on"]), hi(r["on"]), (of > 0 ? on / of : 0)
	}
}'
