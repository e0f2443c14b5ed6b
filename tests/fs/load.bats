#!/usr/bin/env bats
#
# tests/fs/load.bats - mixed load on one mount: local writers,
# local readers, another client putting keys at 200 a second, and
# inotifywait -m -r watching it all.  Nothing may hang, no reader may see
# a value that no writer wrote, every remote put must give its inotify
# event, and the mirror must end equal to etcd.
#
# LOAD_SECONDS sets the length (default 30 s; 180 s in the soak tier,
# tests/lib/tier.bash).  It cannot prove the absence
# of a deadlock, only that this mix did not produce one in this run; a
# hang shows as a worker still running 60 s after the end.

load ../lib/mount
load ../lib/tier

setup()
{
	PIDS=()
	fs_live_setup
}

teardown()
{
	local p

	for p in "${PIDS[@]}"; do
		kill "$p" 2>/dev/null || true
	done
	fs_live_teardown
}

# sum FILES...: the sum of the numbers in FILES.
sum()
{
	local f t=0

	for f in "$@"; do
		t=$((t + $(cat "$f")))
	done
	echo "$t"
}

# writer J END: writes "w J I" to w/J/f(I mod 5) until END (epoch seconds);
# counts its writes in $T/writes.J and its failures in $T/fail.J.
writer()
{
	local j=$1 end=$2 i=0 fails=0

	while ((EPOCHSECONDS < end)); do
		i=$((i + 1))
		if ! printf 'w %d %d\n' "$j" "$i" >"$MNT/w/$j/f$((i % 5))"; then
			fails=$((fails + 1))
		fi
	done
	echo "$i" >"$T/writes.$j"
	echo "$fails" >"$T/fail.$j"
}

# reader K END: reads the writers' files and the remote keys, lists and
# stats them, until END; a value no writer wrote is a failure.
reader()
{
	local k=$1 end=$2 n=0 bad=0 f v

	while ((EPOCHSECONDS < end)); do
		n=$((n + 1))
		f=$MNT/w/$((n % 4 + 1))/f$(((n + k) % 5))
		v=$(cat "$f") || { bad=$((bad + 1)); continue; }
		[[ $v =~ ^w\ [1-4]\ [0-9]+$ ]] || {
			echo "reader $k: '$f' read as '$v'" >>"$T/bad.$k"
			bad=$((bad + 1))
		}
		f=$MNT/r/k$(((n * 7 + k) % 100))
		if [[ -e $f ]]; then
			v=$(cat "$f") || { bad=$((bad + 1)); continue; }
			[[ $v =~ ^r[0-9]+$ ]] || {
				echo "reader $k: '$f' read as '$v'" >>"$T/bad.$k"
				bad=$((bad + 1))
			}
		fi
		ls -l "$MNT/r" >/dev/null || bad=$((bad + 1))
		stat "$MNT/w/1" >/dev/null || bad=$((bad + 1))
	done
	echo "$n" >"$T/reads.$k"
	echo "$bad" >"$T/fail.r$k"
}

# remote_puts END: puts r/k(I mod 100) = rI at 200 a second until END,
# from 8 connections (so that one slow put does not slow the rate); the
# number of puts made in $T/puts.
remote_puts()
{
	python3 -c "$FS_PUT_PY
$(cat <<'EOF'
import threading, time
u = urllib.parse.urlparse(sys.argv[1])
api, end, out = sys.argv[2], int(sys.argv[3]), sys.argv[4]
lock = threading.Lock()
start, state, errors = time.time(), {"next": 0, "done": 0}, []

def worker():
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=20)
    while not errors:
        with lock:
            i = state["next"]
            state["next"] += 1
        at = start + i / 200.0
        if at >= end:
            return
        delay = at - time.time()
        if delay > 0:
            time.sleep(delay)
        try:
            put(c, api, "/r/k%d" % (i % 100), "r%d" % i)
        except Exception as e:
            errors.append(str(e))
            return
        with lock:
            state["done"] += 1

threads = [threading.Thread(target=worker) for _ in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join()
if errors:
    sys.exit(errors[0])
with open(out, "w") as f:
    f.write("%d\n" % state["done"])
EOF
)" "$ETCD_ENDPOINT" "$FS_API" "$1" "$T/puts"
}

# remote_closes: the CLOSE_WRITE events of the remote puts' files so far
remote_closes()
{
	grep -c "^CLOSE_WRITE,CLOSE $MNT/r/" "$EVENTS" || true
}

remote_closes_reach()
{
	(($(remote_closes) >= $1))
}

@test "load: 4 writers, 4 readers, 200 remote puts a second and inotifywait: no hang, no torn read, no lost event" {
	local secs=${LOAD_SECONDS:-$(tier_len 30 180)} end j p left puts writes

	T=$BATS_TEST_TMPDIR
	for j in 1 2 3 4; do
		mkdir -p "$MNT/w/$j"
		for p in 0 1 2 3 4; do
			printf 'w %d 0\n' "$j" >"$MNT/w/$j/f$p"
		done
	done
	kv_put /r/k0 r0
	inw_start

	end=$((EPOCHSECONDS + secs))
	remote_puts "$end" 3>&- &
	PIDS+=($!)
	for j in 1 2 3 4; do
		writer "$j" "$end" 3>&- &
		PIDS+=($!)
		reader "$j" "$end" 3>&- &
		PIDS+=($!)
	done

	# everyone must be done within a minute of the end
	for p in "${PIDS[@]}"; do
		left=$((end + 60 - EPOCHSECONDS))
		((left > 0)) || left=1
		if ! timeout "$left" tail --pid="$p" -f /dev/null; then
			echo "worker $p still runs 60 s after the end" >&2
			return 1
		fi
		wait "$p"
	done
	PIDS=()
	# the mount answers at once
	timeout 5 ls "$MNT/w" >/dev/null

	puts=$(cat "$T/puts")
	echo "remote puts: $puts; writes: $(sum "$T"/writes.*);" \
		"reads: $(sum "$T"/reads.*)" >&2
	# 200 a second, give or take a slow start on a loaded machine
	((puts >= secs * 150))
	for f in "$T"/fail.*; do
		if [[ $(cat "$f") != 0 ]]; then
			echo "$f: $(cat "$f") failures" >&2
			cat "$T"/bad.* >&2 2>/dev/null || true
			return 1
		fi
	done
	for j in 1 2 3 4; do
		(($(cat "$T/writes.$j") > 0))
	done

	wait_mirror_equal 30
	# each writer's last write is what etcd has
	for j in 1 2 3 4; do
		writes=$(cat "$T/writes.$j")
		kv_is "/w/$j/f$((writes % 5))" "w $j $writes"$'\n'
	done
	if fs_v2 && grep -q 'watch: .*compacted' "$FS_LOG"; then
		# v2 keeps its last 1,000 events: a watch that fell that far
		# behind lists again and gives one set of events per key
		# changed meanwhile (docs/semantics.md, etcd v2), not one per put
		echo "the v2 watch fell behind and listed again" >&2
		for ((k = 1; k < 100; k++)); do
			has_event CREATE "r/k$k"
			has_event CLOSE_WRITE,CLOSE "r/k$k"
		done
	else
		# every remote put gave its CLOSE_WRITE, and only one
		wait_for 30 remote_closes_reach "$puts"
		[ "$(remote_closes)" -eq "$puts" ]
		[ "$(grep -c "^CREATE $MNT/r/" "$EVENTS")" -eq 99 ]
	fi
	# the writers' own writes: one CLOSE_WRITE per write, none echoed
	[ "$(grep -c "^CLOSE_WRITE,CLOSE $MNT/w/" "$EVENTS")" -eq \
	  "$(sum "$T"/writes.*)" ]
	inw_stop
}
