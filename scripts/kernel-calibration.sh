#!/usr/bin/env bash
# The long runs that calibrate fsynclab's kernel comparisons on kernels built here from
# Debian's linux-source-6.1 (docs/kernels.md, "Kernels built here"; issue 60). As root, from
# a clone, with a release build (target/release/fsynclab, or FSYNCLAB=PATH):
#
#   scripts/kernel-calibration.sh [--dir DIR] [--lock FILE] [--runs N] STEP...
#
#   build        AFTER (the source as packaged) and BEFORE (kernels/patches/seed004-*.patch)
#                with scripts/build-kernel.sh, each timed by /usr/bin/time -v
#   boot [R]     the boot of AFTER against Debian's packaged 6.1 (/boot/vmlinuz-6.1.0-*),
#                R rounds in turn (3): `fsynclab exec --kernel K ... -- cat /proc/uptime`
#   ab           power: `fsynclab reproduce 004:datasync --kernel BEFORE,AFTER --runs N`
#   aa [K]       false alarms: the same with AFTER and a byte-identical copy of it, K more
#                times (10); prints how many findings were called changed in all made in DIR
#   bisect       a git repository of the source with 7 commits on top, the 4th the seed 004
#                regression; `git bisect run` builds each step and judges it with
#                `fsynclab run datasync --kernel ... --expect`; must name that commit
#   bisect-prepare  that repository and its base's first build (bisect does it if needed)
#   bisect-step  one step of that bisection (what `git bisect run` runs; not for users)
#
# DIR (target/kernel-calibration) holds the kernels, their reused trees, the stores and a log
# of every step. --lock FILE wraps each measured run in `flock FILE` (builds are not
# measured runs and hold no lock). --runs N: runs a side of ab and aa (5: the fewest a change
# can be called from at p < 0.01).
set -euo pipefail

me=kernel-calibration.sh
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dir=$here/target/kernel-calibration
lock= runs=5
fail() { echo "$me: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --dir) [ $# -ge 2 ] || fail "--dir needs a directory"; dir=$2; shift 2 ;;
    --lock) [ $# -ge 2 ] || fail "--lock needs a file"; lock=$2; shift 2 ;;
    --runs) [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || fail "--runs needs a positive number"; runs=$2; shift 2 ;;
    -h|--help) sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) fail "unknown option $1 (try --help)" ;;
    *) break ;;
  esac
done
[ $# -ge 1 ] || fail "usage: scripts/kernel-calibration.sh [--dir DIR] [--lock FILE] [--runs N] build|boot|ab|aa|bisect ... (try --help)"
bin=$(realpath "${FSYNCLAB:-$here/target/release/fsynclab}" 2>/dev/null) || true
[ -x "$bin" ] || fail "no fsynclab binary at ${FSYNCLAB:-$here/target/release/fsynclab} (cargo build --release, or FSYNCLAB=PATH)"
[ "$(id -u)" -eq 0 ] || fail "the runs boot guests on scratch disks: run it as root"
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
kernels=$dir/kernels
patch004=$here/kernels/patches/seed004-ext4-datasync-commits-journal.patch
log=$dir/calibration.log

say() { echo "$me: $*" | tee -a "$log" >&2; }
# A measured run: under the lock if one was given, timed by /usr/bin/time -v into FILE.time.
measured() {
  local out=$1; shift
  if [ -n "$lock" ]; then set -- flock "$lock" "$@"; fi
  /usr/bin/time -v -o "$out.time" "$@"
}
# "wall 1:23.45, peak 512 MB" from a /usr/bin/time -v file.
time_of() {
  awk -F': ' '/Elapsed \(wall clock\)/ {w=$2} /Maximum resident/ {m=$2} END {printf "wall %s, peak %d MB", w, m/1024}' "$1"
}
# The kernel version of the source package (6.1.192 of Debian's 6.1.192-3).
version=$(dpkg-query -W -f='${Version}' linux-source-6.1 2>/dev/null | sed 's/-[^-]*$//') || true
[ -n "$version" ] || fail "linux-source-6.1 is not installed (scripts/setup.sh installs it)"
after=$kernels/bzImage-$version-fsynclab
before=$kernels/bzImage-$version-fsynclab-$(basename "$patch004" .patch)
need_kernels() {
  [ -f "$after" ] && [ -f "$before" ] || fail "no kernels in $kernels: run the build step first"
}

build() {
  local name=$1; shift
  say "building $name: scripts/build-kernel.sh $kernels $*"
  /usr/bin/time -v -o "$dir/build-$name.time" "$here/scripts/build-kernel.sh" "$kernels" "$@" | tail -n 1 > "$dir/build-$name.path"
  say "built $name: $(cat "$dir/build-$name.path") ($(time_of "$dir/build-$name.time"))"
}

step_build() {
  build after
  build before "$patch004"
  # And AFTER again, now a rebuild: the patched file's original put back.
  build after-again
}

step_boot() {
  local rounds=${1:-3} debian
  need_kernels
  debian=$(ls /boot/vmlinuz-6.1.0-*-amd64 2>/dev/null | sort -V | tail -n 1 | sed 's|/boot/vmlinuz-||')
  [ -n "$debian" ] || fail "no Debian 6.1 kernel in /boot (scripts/setup.sh installs one)"
  local work
  work=$(mktemp -d)
  for round in $(seq "$rounds"); do
    for k in "$debian" "$after"; do
      (cd "$work" && measured "$dir/boot" "$bin" exec --kernel "$k" --scratch ext4 --scratch-size 128M -- \
        cat /proc/uptime > "$dir/boot.out" 2> "$dir/boot.err") || { say "boot round $round $k: failed: $(tail -n 1 "$dir/boot.err")"; continue; }
      say "boot round $round $(basename "$k"): $(time_of "$dir/boot.time"), the guest's uptime at the command $(cut -d' ' -f1 "$dir/boot.out") s"
    done
  done
  rm -rf "$work"
}

# One reproduction of seed 004's datasync group on kernels A,B: its text into FILE.txt, the
# changes into FILE.json; says each finding's change in one line.
reproduce() {
  local out=$1 a=$2 b=$3 store=$4 id
  # From the kernels' directory, named by their file names: the table's lines stay short.
  (cd "$(dirname "$a")" && measured "$out" "$bin" reproduce 004:datasync --kernel "$(basename "$a"),${b#"$(dirname "$a")"/}" \
    --runs "$runs" --store "$store" > "$out.txt" 2> "$out.err") || true
  id=$(grep -o 'reproduce[0-9]\+' "$out.txt" | head -n 1)
  "$bin" reproduce --show "$id" --format json --store "$store" > "$out.json"
  python3 - "$out.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for s in r["seeds"]:
    for c in s.get("changes", []):
        if not (c["runs_reference"] and c["runs_kernel"]):
            continue  # a finding of the group not run (rndwr)
        i = c.get("interval") or [float("nan")] * 2
        print(f'{c["claim"][:48]}: {c.get("figure")} {c.get("median_reference", float("nan")):.1f} -> '
              f'{c.get("median_kernel", float("nan")):.1f} {c["unit"]}, B/A {c.get("ratio", float("nan")):.3f} '
              f'[{i[0]:.3f}, {i[1]:.3f}], p={c.get("p_value", float("nan")):.4f}, '
              f'{"CHANGED" if c["significant"] else "no change called"} ({c["runs_reference"]} runs against {c["runs_kernel"]})')
PY
}

step_ab() {
  need_kernels
  say "A/B: fsynclab reproduce 004:datasync --kernel $before,$after --runs $runs --store $dir/ab.sqlite"
  reproduce "$dir/ab" "$before" "$after" "$dir/ab.sqlite" | tee -a "$log"
  say "A/B took $(time_of "$dir/ab.time")"
}

step_aa() {
  local times=${1:-10} copy changed=0 findings=0 first made
  need_kernels
  mkdir -p "$kernels/aa"
  copy=$kernels/aa/$(basename "$after")
  cp "$after" "$copy"
  cmp -s "$after" "$copy" || fail "the copy of $after differs from it"
  # Numbered after the reproductions already made in DIR, which the count includes.
  made=$(find "$dir" -maxdepth 1 -name 'aa-*.lines' | wc -l)
  first=$((made + 1))
  for i in $(seq "$first" $((made + times))); do
    say "A/A $i ($((i - made)) of $times): fsynclab reproduce 004:datasync --kernel $after,$copy --runs $runs --store $dir/aa.sqlite"
    reproduce "$dir/aa-$i" "$after" "$copy" "$dir/aa.sqlite" | tee -a "$log" > "$dir/aa-$i.lines"
    say "A/A $i took $(time_of "$dir/aa-$i.time")"
  done
  for f in "$dir"/aa-*.lines; do
    changed=$((changed + $(grep -c 'CHANGED' "$f" || true)))
    findings=$((findings + $(grep -c . "$f" || true)))
  done
  made=$(find "$dir" -maxdepth 1 -name 'aa-*.lines' | wc -l)
  say "A/A: $changed of $findings findings called changed over $made reproductions ($(awk "BEGIN {printf \"%.1f\", 100 * $changed / ($findings > 0 ? $findings : 1)}")%)"
}

# The bisection's repository: the packaged source, then 7 commits, the 4th seed 004's
# regression, the others comments in files a filesystem change would touch.
bisect_repo() {
  local repo=$dir/linux-git
  if [ -d "$repo/.git" ]; then return; fi
  say "making $repo: the packaged source and 7 commits on top"
  rm -rf "$repo.partial" && mkdir -p "$repo.partial"
  tar -xJf /usr/src/linux-source-6.1.tar.xz -C "$repo.partial" --strip-components=1
  (
    cd "$repo.partial"
    git init -q -b calibration && git config user.name fsynclab && git config user.email fsynclab@localhost
    # -f: Debian's top-level .gitignore ignores everything but debian/ (its packaging repo).
    git add -A -f && git commit -q -m "Linux $version as Debian packages it (linux-source-6.1)"
    git tag base
    n=0
    note() {
      n=$((n + 1))
      sed -i "0,/^ \*\/$/s// * fsynclab bisect calibration: commit $n, a comment (no change in behaviour).\n *\//" "$1"
      git commit -q -am "$1: a comment (calibration commit $n)"
    }
    note fs/ext4/super.c
    note fs/jbd2/journal.c
    note block/blk-flush.c
    n=$((n + 1))
    patch -p1 -s < "$patch004"
    git commit -q -am "ext4: fdatasync commits the journal on an overwrite, as fsync does (seed 004's before; calibration commit $n)"
    note mm/page-writeback.c
    note fs/ext4/inode.c
    note fs/ext4/file.c
  )
  mv "$repo.partial" "$repo"
}

# The figure a step is judged on, and its bound: the median latency of an 8 KiB overwrite's
# fdatasync, halfway (geometric) between BEFORE and AFTER as the A/B measured them, or
# FSYNCLAB_BISECT_EXPECT.
bisect_expect() {
  if [ -n "${FSYNCLAB_BISECT_EXPECT:-}" ]; then echo "$FSYNCLAB_BISECT_EXPECT"; return; fi
  [ -f "$dir/ab.json" ] || fail "no A/B yet ($dir/ab.json): run the ab step first, or give FSYNCLAB_BISECT_EXPECT='fdatasync.p50<10ms'"
  python3 - "$dir/ab.json" <<'PY'
import json, math, sys
r = json.load(open(sys.argv[1]))
c = r["seeds"][0]["changes"][0]
before, after = c["median_reference"], c["median_kernel"]
# ops/s on each side -> the latency bound halfway between, in ms.
print(f"fdatasync.p50<{1000 / math.sqrt(before * after):.1f}ms")
PY
}

bisect_args() {
  echo run datasync --scratch ext3 --device hdd-7200 --set cases=overwrite --set methods=fdatasync \
    --set write_size=8k --set file_size=8M --set rounds=2 --set duration=1s --no-store -q
}

step_bisect_step() {
  local image expect
  trap 'echo "$me: bisect step interrupted at $(git rev-parse --short HEAD)" >&2; exit 130' INT TERM
  expect=$(bisect_expect)
  image=$("$here/scripts/build-kernel.sh" --source "$dir/linux-git" --tree "$dir/bisect-tree" "$dir/bisect-kernels" 2>> "$log" | tail -n 1) || {
    status=$?
    [ "$status" -ne 130 ] || exit 130
    echo "$me: $(git rev-parse --short HEAD) does not build: skipped (125)" | tee -a "$log" >&2
    exit 125
  }
  # shellcheck disable=SC2046 # the arguments are words
  measured "$dir/bisect-step" "$bin" $(bisect_args) --kernel "$image" --expect "$expect" 2>&1 | tee -a "$log" | grep '^expect ' >&2
  return "${PIPESTATUS[0]}"
}

# The repository and its base's first build, which the bisection's steps then rebuild from.
step_bisect_prepare() {
  bisect_repo
  local repo=$dir/linux-git
  [ ! -f "$dir/bisect-tree/obj/vmlinux" ] || return 0
  (
    cd "$repo"
    git bisect reset -q 2>/dev/null || true
    git checkout -q base
    say "bisect: the base's first build in $dir/bisect-tree (not part of the bisection's time)"
    /usr/bin/time -v -o "$dir/bisect-base.time" "$here/scripts/build-kernel.sh" --source "$repo" --tree "$dir/bisect-tree" "$dir/bisect-kernels" >> "$log" 2>&1
    say "bisect: base built ($(time_of "$dir/bisect-base.time"))"
    git checkout -q calibration
  )
}

step_bisect() {
  need_kernels
  step_bisect_prepare
  local repo=$dir/linux-git expect
  expect=$(bisect_expect)
  cd "$repo"
  git bisect reset -q 2>/dev/null || true
  git checkout -q calibration
  say "bisect: git bisect start HEAD base; git bisect run $me bisect-step (each step judged by --expect '$expect')"
  git bisect start -q HEAD base
  /usr/bin/time -v -o "$dir/bisect.time" git bisect run "$here/scripts/kernel-calibration.sh" --dir "$dir" ${lock:+--lock "$lock"} bisect-step 2>&1 | tee "$dir/bisect.out" | tee -a "$log"
  say "bisect took $(time_of "$dir/bisect.time"): $(grep -m1 'is the first bad commit' "$dir/bisect.out" || echo 'no commit named')"
  git bisect log > "$dir/bisect.log"
  git bisect reset -q
}

while [ $# -gt 0 ]; do
  step=$1; shift
  case "$step" in
    build) step_build ;;
    boot) if [[ ${1:-} =~ ^[0-9]+$ ]]; then step_boot "$1"; shift; else step_boot; fi ;;
    ab) step_ab ;;
    aa) if [[ ${1:-} =~ ^[0-9]+$ ]]; then step_aa "$1"; shift; else step_aa; fi ;;
    bisect-prepare) step_bisect_prepare ;;
    bisect) step_bisect ;;
    bisect-step) step_bisect_step ;;
    *) fail "unknown step $step (build, boot, ab, aa, bisect)" ;;
  esac
done
