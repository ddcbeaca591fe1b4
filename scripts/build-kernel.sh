#!/usr/bin/env bash
# Builds a kernel fsynclab can boot (`--kernel PATH`) from Debian's linux-source-6.1 package,
# with kernels/fsynclab.config on top of x86_64's defconfig and the given patches applied, and
# prints the bzImage's path as its last line (docs/kernels.md, "Kernels built here").
#
#   scripts/build-kernel.sh [--tree DIR] [--source DIR] [--tarball FILE] [--jobs N] [--config-only]
#                           [--min-free MIB] OUTDIR [PATCH...]
#   scripts/build-kernel.sh --check-config CONFIG     # does CONFIG have every option of the fragment?
#
# OUTDIR gets bzImage-RELEASE and config-RELEASE; RELEASE is 6.1.N-fsynclab, with the patches'
# names after it (6.1.192-fsynclab-seed004-ext4-datasync-commits-journal). The tree is reused
# by the next build (--tree DIR, OUTDIR/.tree by default): DIR/src is the source, extracted once;
# DIR/obj the object files (make O=); DIR/pristine the original of every file a patch changed.
# A build with other patches puts those originals back, applies its own, and make rebuilds
# what they touch: minutes, not the first build's tens of minutes. --source DIR builds DIR's tree as it is
# (a git checkout a bisect moves, no patches), its objects in the --tree's obj.
# Every check (source package, tools, patches apply in order, free disk: 6 GiB for a first build,
# 2 for a rebuild, or --min-free MIB; OUTDIR writable) runs before the first long step, each a
# one-line error (exit 2). A failed or interrupted build (exit 1, 130 on Ctrl-C; a full disk
# said as such) says so in one line and writes no bzImage: the image is copied beside its
# final name and renamed into place only once make has finished.
set -euo pipefail

me=build-kernel.sh
fail() { echo "$me: $*" >&2; exit 2; }
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
fragment=$here/kernels/fsynclab.config
tarball=/usr/src/linux-source-6.1.tar.xz
tree= source= jobs=$(nproc) config_only=0 check_config= min_free=

# The fragment's options as "NAME=VALUE" ("NAME=n" for "# CONFIG_NAME is not set"); with
# "needed", only those of its sections marked [needed].
fragment_options() {
  awk -v only="${1:-}" '
    /^# --- / { needed = index($0, "[needed]") > 0; next }
    only == "needed" && !needed { next }
    /^CONFIG_[A-Za-z0-9_]+=/ { print; next }
    /^# CONFIG_[A-Za-z0-9_]+ is not set$/ { print $2 "=n" }' "$fragment"
}
# The options of the fragment that CONFIG does not have as the fragment says, one a line;
# with "needed", only the [needed] ones, and a module (=m) counts for built in.
config_lacks() {
  local config=$1 only=${2:-} option want have
  while IFS= read -r option; do
    want=${option#*=}
    have=$(sed -nE "s/^${option%%=*}=(.*)$/\1/p" "$config")
    [ "${have:-n}" = "$want" ] && continue
    [ "$only" = needed ] && [ "$want" = y ] && [ "$have" = m ] && continue
    echo "${option%%=*} (fragment: $want, config: ${have:-not set})"
  done < <(fragment_options "$only")
}

while [ $# -gt 0 ]; do
  case "$1" in
    --tree) [ $# -ge 2 ] || fail "--tree needs a directory"; tree=$2; shift 2 ;;
    --source) [ $# -ge 2 ] || fail "--source needs a directory"; source=$2; shift 2 ;;
    --tarball) [ $# -ge 2 ] || fail "--tarball needs a file"; tarball=$2; shift 2 ;;
    --jobs) [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || fail "--jobs needs a positive number"; jobs=$2; shift 2 ;;
    --min-free) [[ ${2:-} =~ ^[0-9]+$ ]] || fail "--min-free needs a size in MiB"; min_free=$2; shift 2 ;;
    --config-only) config_only=1; shift ;;
    --check-config) [ $# -ge 2 ] || fail "--check-config needs a kernel .config"; check_config=$2; shift 2 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    --) shift; break ;;
    -*) fail "unknown option $1 (try --help)" ;;
    *) break ;;
  esac
done

if [ -n "$check_config" ]; then
  [ -r "$check_config" ] || fail "--check-config $check_config: no such file"
  lacks=$(config_lacks "$check_config" needed)
  if [ -n "$lacks" ]; then
    echo "$check_config lacks what fsynclab's guests need (kernels/fsynclab.config says why):"
    echo "$lacks" | sed 's/^/  /'
    exit 1
  fi
  echo "$check_config has every option fsynclab's guests need (kernels/fsynclab.config; =m needs its modules installed)"
  exit 0
fi

# --- Checks: all of them before anything is made or changed ---------------------------------
[ $# -ge 1 ] || fail "usage: scripts/build-kernel.sh [--tree DIR] [--source DIR] OUTDIR [PATCH...] (try --help)"
outdir=$1; shift
patches=("$@")
[ -r "$fragment" ] || fail "no $fragment (run it from a clone of fsynclab)"
if [ -n "$source" ]; then
  [ -f "$source/Makefile" ] && [ -d "$source/arch/x86" ] || fail "--source $source: not a kernel source tree (no Makefile, arch/x86)"
  [ ${#patches[@]} -eq 0 ] || fail "--source builds its tree as it is: commit the patches there instead of giving them"
  source=$(cd "$source" && pwd -P)
else
  [ -f "$tarball" ] || fail "no kernel source package: $tarball is missing (run scripts/setup.sh as root, or apt-get install linux-source-6.1)"
fi
missing=()
for tool in make gcc ld bc bison flex perl patch tar xz pahole; do
  command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
[ -e /usr/include/libelf.h ] || missing+=("libelf.h")
[ -e /usr/include/openssl/opensslv.h ] || missing+=("openssl/opensslv.h")
[ ${#missing[@]} -eq 0 ] || fail "missing build tools: ${missing[*]} (run scripts/setup.sh as root: it installs bc bison flex dwarves libelf-dev libssl-dev)"
for p in "${patches[@]}"; do
  [ -f "$p" ] && [ -r "$p" ] || fail "no such patch: $p"
  grep -q '^+++ ' "$p" || fail "$p: not a patch (no '+++' line)"
done

# OUTDIR: made if missing (and taken away again if the build does not end with a bzImage).
made_outdir=0
if [ -e "$outdir" ] && [ ! -d "$outdir" ]; then
  fail "OUTDIR $outdir is not a directory"
elif [ -d "$outdir" ]; then
  probe=$(mktemp "$outdir/.write-test.XXXXXX" 2>/dev/null) || fail "OUTDIR $outdir is not writable"
  rm -f "$probe"
else
  parent=$(dirname "$outdir")
  [ -d "$parent" ] || fail "OUTDIR $outdir: its parent $parent does not exist"
  why=$(mkdir "$outdir" 2>&1) || fail "OUTDIR $outdir: cannot create it (${why##*: })"
  rmdir "$outdir"
fi
tree_given=$tree
tree=${tree:-$outdir/.tree}

# The reused tree's state: whether its source is extracted (its objects' source and the
# patches applied are read once it is locked).
have_tree=0
[ -f "$tree/src/Makefile" ] && have_tree=1

# Free disk: the first build of this configuration takes 1.5 GiB of source and 2.6 GiB
# of objects and debug information (measured: docs/kernels.md); a rebuild little more.
need_kib=$((6 * 1024 * 1024))
[ ! -f "$tree/obj/vmlinux" ] || need_kib=$((2 * 1024 * 1024))
[ -z "$min_free" ] || need_kib=$((min_free * 1024))
probe_dir=$tree; while [ ! -d "$probe_dir" ]; do probe_dir=$(dirname "$probe_dir"); done
free_kib=$(df -Pk "$probe_dir" | awk 'NR==2 {print $4}')
[ "$free_kib" -ge "$need_kib" ] || fail "not enough free disk in $probe_dir: $((free_kib / 1024)) MiB free, a build needs $((need_kib / 1024)) MiB"

work=$(mktemp -d "${TMPDIR:-/tmp}/build-kernel.XXXXXX")
make_pid=
made_tree=0
cleanup() {
  local status=$?
  if [ -n "$make_pid" ] && kill -0 "$make_pid" 2>/dev/null; then
    kill -TERM -- "-$make_pid" 2>/dev/null || true
    wait "$make_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
  rm -f "$outdir"/.bzImage-*.part "$outdir"/.config-*.part 2>/dev/null || true
  rm -rf "$tree/src.partial" 2>/dev/null || true
  if [ "$status" -ne 0 ]; then
    # What this run made and nothing fills yet: a tree it made with no source extracted,
    # then OUTDIR if it made it and it is empty. An extracted tree is kept for the next build.
    if [ "$made_tree" -eq 1 ] && [ ! -d "$tree/src" ]; then rm -rf "$tree"; fi
    [ "$made_outdir" -eq 0 ] || rmdir "$outdir" 2>/dev/null || true
  fi
  return "$status"
}
interrupted() {
  trap - INT TERM
  if [ -d "$tree/src" ]; then
    echo "$me: interrupted: no bzImage was written (the tree in $tree stays for the next build)" >&2
  else
    echo "$me: interrupted: no bzImage was written" >&2
  fi
  exit 130
}
trap cleanup EXIT
trap interrupted INT TERM

# The files a patch changes (its "+++ b/PATH" lines, one directory level stripped: -p1).
patch_files() { sed -nE 's/^\+\+\+ ([^[:space:]]+).*/\1/p' "$1" | sed 's#^[^/]*/##' | grep -v '^dev/null$' || true; }

# The patches apply, in order, to the pristine source: tried on copies of the files they touch,
# taken from the tree's originals, the tree, or (no tree yet) the package.
if [ ${#patches[@]} -gt 0 ]; then
  mkdir -p "$work/try"
  files=$(for p in "${patches[@]}"; do patch_files "$p"; done | sort -u)
  if [ "$have_tree" -eq 1 ]; then
    for f in $files; do
      src=$tree/pristine/$f
      [ -e "$src" ] || src=$tree/src/$f
      if [ -e "$src" ] && ! grep -qxF "$f" "$tree/pristine/.created" 2>/dev/null; then
        mkdir -p "$work/try/$(dirname "$f")" && cp "$src" "$work/try/$f"
      fi
    done
  else
    top=$(tar -tJf "$tarball" 2>/dev/null | head -n 1 | cut -d/ -f1) || true
    [ -n "$top" ] || fail "$tarball: cannot list it (a damaged source package? apt-get install --reinstall linux-source-6.1)"
    # shellcheck disable=SC2086 # one argument per file
    tar -xJf "$tarball" -C "$work/try" --strip-components=1 --ignore-failed-read \
      $(for f in $files; do echo "$top/$f"; done) 2>/dev/null || true
  fi
  earlier=0
  for p in "${patches[@]}"; do
    out=$(patch -p1 -N -s -d "$work/try" --no-backup-if-mismatch -r - < "$p" 2>&1) ||
      fail "$p does not apply to linux-source-6.1 (after $earlier earlier patches): $(echo "$out" | grep -m1 -iE 'fail|hunk|can.t find|reversed' || echo "$out" | head -n 1)"
    earlier=$((earlier + 1))
  done
fi

# --- Long steps -----------------------------------------------------------------------------
if [ ! -d "$outdir" ]; then mkdir "$outdir" && made_outdir=1; fi
outdir=$(cd "$outdir" && pwd -P)
[ -n "$tree_given" ] || tree=$outdir/.tree
[ -d "$tree" ] || made_tree=1
mkdir -p "$tree"
# Absolute paths: make records them in the objects' command lines, so the same tree must be
# named the same way by every build that reuses it.
tree=$(cd "$tree" && pwd -P)
tree_src=$tree/src
[ -z "$source" ] || tree_src=$source
exec 9>"$tree/.lock"
flock -n 9 || fail "another build is using $tree (wait for it, or give --tree DIR)"

# The source, extracted once.
if [ -z "$source" ] && [ "$have_tree" -eq 0 ]; then
  echo "$me: extracting $tarball into $tree/src" >&2
  rm -rf "$tree/src.partial" && mkdir "$tree/src.partial"
  if ! tar -xJf "$tarball" -C "$tree/src.partial" --strip-components=1 2> "$work/tar.err"; then
    if grep -q 'No space left on device' "$work/tar.err"; then
      echo "$me: cannot extract $tarball into $tree: no space left on device" >&2
    else
      echo "$me: cannot extract $tarball into $tree: $(head -n 1 "$work/tar.err")" >&2
    fi
    exit 1
  fi
  mv "$tree/src.partial" "$tree/src"
fi

# The tree back to pristine: each file a patch changed gets its original back (a fresh mtime,
# so make rebuilds what depends on it), each file a patch created goes. Then this build's
# patches, their originals saved first. Skipped when the same patches are already applied.
want_sum=$(cat /dev/null "${patches[@]}" | sha256sum | cut -c1-16)
[ ${#patches[@]} -gt 0 ] || want_sum=none
if [ -z "$source" ] && [ "$(cat "$tree/applied" 2>/dev/null)" != "$want_sum" ]; then
  echo dirty > "$tree/applied"
  if [ -d "$tree/pristine" ]; then
    (cd "$tree/pristine" && find . -type f ! -name .created -printf '%P\n') | while IFS= read -r f; do
      cp "$tree/pristine/$f" "$tree/src/$f"
    done
    while IFS= read -r f; do rm -f "$tree/src/$f"; done < <(cat "$tree/pristine/.created" 2>/dev/null)
    rm -f "$tree/pristine/.created"
  fi
  mkdir -p "$tree/pristine"
  for p in "${patches[@]}"; do
    for f in $(patch_files "$p"); do
      if [ -e "$tree/src/$f" ]; then
        [ -e "$tree/pristine/$f" ] || { mkdir -p "$tree/pristine/$(dirname "$f")" && cp -p "$tree/src/$f" "$tree/pristine/$f.part" && mv "$tree/pristine/$f.part" "$tree/pristine/$f"; }
      else
        echo "$f" >> "$tree/pristine/.created"
      fi
    done
    patch -p1 -N -s -d "$tree/src" --no-backup-if-mismatch -r - < "$p" >/dev/null ||
      { echo "$me: $p failed to apply to $tree/src after its check passed (the next build puts the originals back)" >&2; exit 1; }
  done
  echo "$want_sum" > "$tree/applied"
fi

# The release: 6.1.N-fsynclab, the patches' names after it (or a hash of them when long), a
# --source tree's commit.
tag=-fsynclab
if [ -n "$source" ]; then
  sha=$(git -C "$source" rev-parse --short=12 HEAD 2>/dev/null) && tag=$tag-g$sha
elif [ ${#patches[@]} -gt 0 ]; then
  names=$(for p in "${patches[@]}"; do basename "$p" | sed -E 's/\.(patch|diff)$//; s/^[0-9]+-//'; done | paste -sd+ -)
  names=$(echo "$names" | tr -c 'A-Za-z0-9.+_\n-' '-')
  [ ${#names} -le 44 ] || names=p$(cut -c1-8 <<<"$want_sum")
  tag=$tag-$names
fi

# The configuration: defconfig, the fragment on top, olddefconfig; then every option of the
# fragment must have survived (an option whose dependencies are missing is dropped silently).
obj=$tree/obj
mkdir -p "$obj"
if [ "$(cat "$obj/.fsynclab-source" 2>/dev/null)" != "$tree_src" ]; then
  [ ! -f "$obj/.config" ] || echo "$me: the objects in $obj were built from another source: rebuilding them all" >&2
  find "$obj" -mindepth 1 -delete
  echo "$tree_src" > "$obj/.fsynclab-source"
fi
log=$tree/build.log
: > "$log"
{
  make -C "$tree_src" O="$obj" defconfig &&
  "$tree_src/scripts/kconfig/merge_config.sh" -m -O "$obj" "$obj/.config" "$fragment" &&
  "$tree_src/scripts/config" --file "$obj/.config" --set-str LOCALVERSION "$tag" &&
  make -C "$tree_src" O="$obj" olddefconfig
} >> "$log" 2>&1 || { echo "$me: making the configuration failed: see $log" >&2; exit 1; }
lacks=$(config_lacks "$obj/.config")
[ -z "$lacks" ] || { echo "$me: make olddefconfig dropped options of kernels/fsynclab.config: $(echo "$lacks" | paste -sd, -)" >&2; exit 1; }
version=$(make -s -C "$tree_src" kernelversion 2>>"$log" | tail -n 1)
[ -n "$version" ] || { echo "$me: cannot tell the kernel's version: see $log" >&2; exit 1; }
release=$version$tag

if [ "$config_only" -eq 1 ]; then
  cp "$obj/.config" "$outdir/.config-$release.part" && mv -f "$outdir/.config-$release.part" "$outdir/config-$release"
  echo "$outdir/config-$release"
  exit 0
fi

# The build: in a process group of its own, so Ctrl-C or a failure ends every compiler it runs.
echo "$me: building $release with $jobs jobs (log: $log)" >&2
start=$(date +%s)
( exec setsid make -C "$tree_src" O="$obj" LOCALVERSION= -j"$jobs" bzImage >> "$log" 2>&1 ) &
make_pid=$!
status=0
wait "$make_pid" || status=$?
make_pid=
if [ "$status" -ne 0 ]; then
  if grep -q 'No space left on device' "$log"; then
    echo "$me: the build failed: no space left on device in $tree (no bzImage written; see $log)" >&2
  else
    echo "$me: the build failed (make exit $status): $(grep -m1 -E 'error:|Error [0-9]' "$log" || tail -n 1 "$log") (see $log)" >&2
  fi
  exit 1
fi
image=$obj/arch/x86/boot/bzImage
[ -f "$image" ] || { echo "$me: make ended without $image (see $log)" >&2; exit 1; }
built=$(cat "$obj/include/config/kernel.release" 2>/dev/null || true)
[ "$built" = "$release" ] || { echo "$me: the kernel built is $built, not $release (see $log)" >&2; exit 1; }

# Into OUTDIR: copied beside the final name, renamed into place (atomic on one filesystem).
cp "$image" "$outdir/.bzImage-$release.part" &&
  cp "$obj/.config" "$outdir/.config-$release.part" &&
  mv -f "$outdir/.config-$release.part" "$outdir/config-$release" &&
  mv -f "$outdir/.bzImage-$release.part" "$outdir/bzImage-$release" ||
  { echo "$me: cannot write the bzImage into $outdir (disk full?)" >&2; exit 1; }
made_outdir=0
echo "$me: built $release in $(( $(date +%s) - start )) s" >&2
(cd "$outdir" && echo "$(pwd)/bzImage-$release")
