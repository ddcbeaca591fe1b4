// SPDX-License-Identifier: GPL-2.0 OR MIT
/* fsynclab's tracer in the kernel: each sync system call of the traced tasks split into
 * the time on a CPU, the time waiting for one, and its sleeps (each long one with the kernel
 * stack it slept in and the task that woke it), with the device cache flushes, writes and
 * journal commits that completed meanwhile.
 *
 * The cost stays with the traced calls: a task is followed by the scheduler hooks only while
 * it is inside a sync call (its entry in `calls`, task-local storage, marked at the call's
 * entry when the task passes the filter in `config`: everything, a set of processes, a
 * command name, or the tasks of a cgroup and its descendants); for every other task a
 * scheduler hook costs one pointer read (the task's storage, absent or not in a call).
 * A sleep is timed at switch-out and judged at its wakeup; only a sleep longer than
 * `stack_threshold_ns` has its kernel stack taken (bpf_get_task_stack of the task being
 * woken, which still holds the stack it slept in), as bcc's offcputime and perf's
 * --off-cpu-thresh do at switch-in. Not at switch-in: a switch from the idle task is at
 * times not traced at all (on the project's 6.18 VM about half of them: the task is seen
 * running again with no sched_switch naming it), and a sleep judged there would be lost,
 * its time left on the CPU; judged at the wakeup, such a switch loses only the wait for a
 * CPU after it, which from an idle CPU is microseconds (it stays in the time on a CPU). A
 * sleep whose wakeup goes untraced is judged at switch-in, all of it a sleep. Every call's
 * latency goes into an in-kernel histogram per process and kind (`latency`); only a call
 * slower than `report_threshold_ns` is sent to user space, in the ring buffer `events`,
 * with its parts. The parts add up to the latency by construction:
 * on CPU = latency - (time off the CPU), and each stretch off the CPU is counted once, as
 * a sleep (until the wakeup) plus a wait for a CPU (from the wakeup, or a preemption).
 */
#include "kernel_types.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "watch_maps.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

static __always_inline void count_lost(u32 what)
{
	u64 *n = bpf_map_lookup_elem(&lost, &what);
	if (n)
		__sync_fetch_and_add(n, 1);
}

/* How many followed calls (and journal commits) are in progress on the machine: the
 * scheduler and block completion programs, which every switch, wakeup and request of the
 * machine runs, return at once while it is 0, as no task is then in a call for them to
 * follow. Changed only where a task's start_ns goes from 0 to set (in_flight_begin) and
 * back (in_flight_end), so it cannot drift: a call in progress when the program was
 * attached has no start_ns and is not counted. */
u64 in_flight = 0;

/* `c` starts at `now`; `was_started`: it had start_ns set before (begin_call clears it). */
static __always_inline void set_started(struct call *c, u64 now, bool was_started)
{
	if (!was_started)
		__sync_fetch_and_add(&in_flight, 1);
	c->start_ns = now;
}

/* `c` is out of its call: start_ns and the state of its time off the CPU cleared. */
static __always_inline void set_ended(struct call *c)
{
	if (c->start_ns)
		__sync_fetch_and_add(&in_flight, -1);
	c->start_ns = 0;
	c->off_ns = 0;
	c->woken_ns = 0;
	c->woken_early = 0;
}

static __always_inline bool none_in_flight(void)
{
	return *(volatile u64 *)&in_flight == 0;
}

static __always_inline bool comm_matches(const char *a, const char *b)
{
	for (int i = 0; i < TASK_COMM_LEN; i++) {
		if (a[i] != b[i])
			return false;
		if (a[i] == 0)
			return true;
	}
	return true;
}

static __always_inline bool traced(const struct config *cfg, u32 pid, const char *comm)
{
	if (cfg->filter == FILTER_ALL)
		return true;
	if (cfg->filter == FILTER_PROCESSES)
		return bpf_map_lookup_elem(&processes, &pid) != NULL;
	if (cfg->filter == FILTER_CGROUP)
		return bpf_current_task_under_cgroup(&cgroups, 0) == 1;
	return comm_matches(comm, cfg->comm);
}

/* The current task's open file `fd`, or NULL. The task's descriptor table is reached by
 * plain loads through the task's BTF pointer (the verifier makes each a load that cannot
 * fault, without a helper call); only the table's slot, an array of pointers, is read with
 * bpf_probe_read_kernel. (perf showed half of on_sys_enter's time in that helper when every
 * pointer of the chain was read with it.) */
static __always_inline struct file *file_of(s32 fd)
{
	if (fd < 0)
		return NULL;
	struct task_struct *task = bpf_get_current_task_btf();
	struct files_struct *files = task->files;
	if (!files)
		return NULL;
	struct fdtable *fdt = files->fdt;
	if (!fdt || (u32)fd >= fdt->max_fds)
		return NULL;
	struct file **fds = fdt->fd;
	struct file *file = NULL;
	if (bpf_probe_read_kernel(&file, sizeof(file), &fds[fd]))
		return NULL;
	return file;
}

/* A disk's device number as the kernel's dev_t reads (MAJOR << 20 | MINOR). */
static __always_inline u32 disk_dev(struct gendisk *disk)
{
	if (!disk)
		return 0;
	return (u32)BPF_CORE_READ(disk, major) << 20 | (u32)BPF_CORE_READ(disk, first_minor);
}

/* The same, for a disk the verifier knows by its BTF type (a trace point's argument, or a
 * field reached from one): plain loads, which the verifier makes loads that cannot fault,
 * where disk_dev calls bpf_probe_read_kernel for each (a pointer read with that helper is a
 * number to the verifier, which it does not let a program load through). */
static __always_inline u32 disk_dev_btf(struct gendisk *disk)
{
	if (!disk)
		return 0;
	return (u32)disk->major << 20 | (u32)disk->first_minor;
}

/* libbpf 1.2's bpf_ksym_exists (Debian 12's headers are 1.1's): a weak ksym the kernel lacks
 * reads as address 0, and the verifier drops the branch that would use it. */
#ifndef bpf_ksym_exists
#define bpf_ksym_exists(sym) (!!(&(sym) != 0))
#endif

/* bpf_rdonly_cast (a kfunc since Linux 6.2): `obj` as a pointer to the kernel's type
 * `btf_id`, which the verifier lets a program load through with plain loads (a load that
 * would fault reads 0), where bpf_probe_read_kernel is a helper call a word. Weak: absent
 * (Debian's 6.1), set_devices reads with the helper as before. */
extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym __weak;

/* set_devices' reads where bpf_rdonly_cast is absent: one bpf_probe_read_kernel a word. */
static __always_inline void set_seen_by_helper(struct call *c, struct file *file)
{
	struct inode *inode = BPF_CORE_READ(file, f_inode);
	if ((u64)file != c->seen_file || (u64)inode != c->seen_inode) {
		struct super_block *sb = BPF_CORE_READ(inode, i_sb);
		u32 dev = BPF_CORE_READ(sb, s_dev);
		if ((u64)sb != c->seen_sb || dev != c->seen_dev) {
			c->seen_disk = disk_dev(BPF_CORE_READ(sb, s_bdev, bd_disk));
			c->seen_dev = dev;
			c->seen_sb = (u64)sb;
		}
		c->seen_ino = BPF_CORE_READ(inode, i_ino);
		c->seen_file = (u64)file;
		c->seen_inode = (u64)inode;
	}
}

/* The call's filesystem's device and its whole disk's, from `file`: 0 for the calls that
 * name no file (sync; msync names memory) and a disk 0 for a filesystem on no block
 * device; the file's inode number in c->ino when `with_ino`. Reads of kernel memory a
 * call, by what the task's last followed call named:
 * - the same open file and inode (a write and its fdatasync, a worker's next write to the
 *   same file): one, the file's inode; its devices are remembered, not read again;
 * - another file of the same filesystem (the same super_block at the same address, with
 *   the same device: sysbench's workers over their 128 files): four, the inode, its super
 *   block, the device and the inode number; the disk is the last file's;
 * - another filesystem: eight, with the block device, its disk and the disk's numbers.
 * A struct file freed and made again at the same address for another file has another
 * inode, unless that inode too was freed and made again at the same address in between:
 * then the devices would be the old file's. Where the kernel has bpf_rdonly_cast (6.2+)
 * the reads are plain loads; elsewhere (Debian's 6.1) a helper call each. Both cuts are
 * measured in BENCHMARKS.md: in rndwr the remembered filesystem took the entry program
 * from 1,736 to 1,561 ns a run, the plain loads from 1,528 to 1,416. */
static __always_inline void set_devices(struct call *c, struct file *file, bool with_ino)
{
	c->dev = 0;
	c->disk = 0;
	c->ino = 0;
	if (!file)
		return;
	if (bpf_ksym_exists(bpf_rdonly_cast)) {
		struct file *f = bpf_rdonly_cast(file, bpf_core_type_id_kernel(struct file));
		struct inode *inode = f->f_inode;
		if ((u64)file != c->seen_file || (u64)inode != c->seen_inode) {
			struct super_block *sb = inode->i_sb;
			u32 dev = sb->s_dev;
			if ((u64)sb != c->seen_sb || dev != c->seen_dev) {
				struct block_device *bdev = sb->s_bdev;
				c->seen_disk = bdev ? disk_dev_btf(bdev->bd_disk) : 0;
				c->seen_dev = dev;
				c->seen_sb = (u64)sb;
			}
			c->seen_ino = inode->i_ino;
			c->seen_file = (u64)file;
			c->seen_inode = (u64)inode;
		}
	} else {
		set_seen_by_helper(c, file);
	}
	c->dev = c->seen_dev;
	c->disk = c->seen_disk;
	if (with_ino)
		c->ino = c->seen_ino;
}

/* What has completed so far that a call's share is taken from: its disk's flushes and
 * writes and its filesystem's commits, where they are known; the machine's otherwise. An
 * entry not made yet is all zeros, as it will start. */
static __always_inline void totals_now(const struct call *c, const struct totals *machine,
				       struct totals *out)
{
	*out = *machine;
	if (c->disk) {
		u32 disk = c->disk;
		struct totals *d = bpf_map_lookup_elem(&dev_totals, &disk);
		out->flushes = d ? d->flushes : 0;
		out->flush_ns = d ? d->flush_ns : 0;
		out->write_bytes = d ? d->write_bytes : 0;
	}
	if (c->dev) {
		u32 dev = c->dev;
		struct totals *f = bpf_map_lookup_elem(&dev_totals, &dev);
		out->commits = f ? f->commits : 0;
		out->commit_ns = f ? f->commit_ns : 0;
	}
}

/* Device `dev`'s totals, made (zeros) at its first event; NULL when the map is full. */
static __always_inline struct totals *dev_totals_of(u32 dev)
{
	if (!dev)
		return NULL;
	struct totals *t = bpf_map_lookup_elem(&dev_totals, &dev);
	if (t)
		return t;
	struct totals zero = {};
	bpf_map_update_elem(&dev_totals, &dev, &zero, BPF_NOEXIST);
	return bpf_map_lookup_elem(&dev_totals, &dev);
}

/* Cleared for a new call: its counts, and of the kept sleeps and the last commit what says
 * they are empty (a sleep with ns 0 is read as none, and its stack only up to stack_bytes),
 * not the 1.3 KiB of stacks, which every call would otherwise pay for; then the totals at
 * its start (its devices set first: `file`, or none). */
static __always_inline void begin_call(struct call *c, const struct totals *t, u32 kind,
				       struct file *file)
{
	__builtin_memset(c, 0, __builtin_offsetof(struct call, sleeps));
	for (u32 i = 0; i < TOP_SLEEPS; i++) {
		c->sleeps[i].ns = 0;
		c->sleeps[i].runnable_ns = 0;
		c->sleeps[i].waker_pid = 0;
		c->sleeps[i].stack_bytes = 0;
		c->sleeps[i].sleeps = 0;
	}
	__builtin_memset(&c->last_commit, 0, sizeof(c->last_commit));
	__builtin_memset(&c->throttle, 0, sizeof(c->throttle));
	__builtin_memset(&c->fs_journal, 0, sizeof(c->fs_journal));
	c->kind = kind;
	set_devices(c, file, kind <= KIND_SYNC_FILE_RANGE || kind >= KIND_WRITE);
	totals_now(c, t, &c->at_entry);
}

/* Whether the current task's calls are followed; its ids and name in `pid`, `tid`, `comm`. */
static __always_inline bool current_traced(const struct config *cfg, u32 *pid, u32 *tid, char *comm)
{
	u64 id = bpf_get_current_pid_tgid();
	*pid = id >> 32;
	*tid = (u32)id;
	bpf_get_current_comm(comm, TASK_COMM_LEN);
	return traced(cfg, *pid, comm);
}

/* The current task enters a followed call of `kind` on descriptor `fd` (of `file`, when
 * the caller has it already). */
static __always_inline int start_call(u32 kind, s32 fd, struct file *file, u32 pid, u32 tid,
				      const char *comm)
{
	u32 zero = 0;
	struct totals *t = bpf_map_lookup_elem(&totals, &zero);
	if (!t)
		return 0;
	struct call *c = bpf_task_storage_get(&calls, bpf_get_current_task_btf(), 0,
					      BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!c) {
		count_lost(0);
		return 0;
	}
	/* A process's name, once: a task's storage is new (zeroed) or was another process's. */
	if (c->pid != pid && !bpf_map_update_elem(&process_names, &pid, comm, BPF_NOEXIST)) {
		u64 *given = bpf_map_lookup_elem(&names_given, &zero);
		if (given)
			__sync_fetch_and_add(given, 1);
	}
	if (!file && kind != KIND_MSYNC && kind != KIND_SYNC)
		file = file_of(fd);
	bool was_started = c->start_ns != 0;
	begin_call(c, t, kind, file);
	c->pid = pid;
	c->tid = tid;
	c->fd = fd;
	__builtin_memcpy(c->comm, comm, TASK_COMM_LEN);
	set_started(c, bpf_ktime_get_ns(), was_started);
	return 0;
}

static __always_inline int sync_enter(const struct config *cfg, u32 kind, s32 fd)
{
	u32 pid, tid;
	char comm[TASK_COMM_LEN];
	if (!current_traced(cfg, &pid, &tid, comm))
		return 0;
	return start_call(kind, fd, NULL, pid, tid, comm);
}

/* open(2) and pwritev2(2) flags (x86's numbers, as the generic ones: include/uapi). */
#define O_DSYNC_FLAG 010000
#define O_SYNC_ONLY_FLAG 04000000 /* __O_SYNC: what O_SYNC adds to O_DSYNC */
#define O_DIRECT_FLAG 040000
#define RWF_DSYNC_FLAG 2
#define RWF_SYNC_FLAG 4

/* A write (`rwf`: pwritev2's flags, 0 for the others) on descriptor `fd`: followed when
 * config.writes asks for it, as the kind its file's flags make it. Its file is read only
 * for a task the filter keeps. */
static __always_inline int write_enter(const struct config *cfg, s32 fd, u64 rwf)
{
	if (cfg->writes == WRITES_NONE)
		return 0;
	u32 pid, tid;
	char comm[TASK_COMM_LEN];
	if (!current_traced(cfg, &pid, &tid, comm))
		return 0;
	if (cfg->writes == WRITES_ALL && tid != cfg->write_tid && !comm_matches(comm, cfg->write_comm))
		return 0;
	struct file *file = file_of(fd);
	if (!file)
		return 0;
	u32 flags = BPF_CORE_READ(file, f_flags);
	u32 kind = KIND_WRITE;
	if (rwf & (RWF_DSYNC_FLAG | RWF_SYNC_FLAG))
		kind = KIND_WRITE_RWF_DSYNC;
	else if (flags & O_SYNC_ONLY_FLAG)
		kind = KIND_WRITE_OSYNC;
	else if (flags & O_DSYNC_FLAG)
		kind = KIND_WRITE_ODSYNC;
	else if (flags & O_DIRECT_FLAG)
		kind = KIND_WRITE_DIRECT;
	if (cfg->writes == WRITES_SYNC && kind < KIND_WRITE_ODSYNC)
		return 0;
	return start_call(kind, fd, file, pid, tid, comm);
}

/* floor(log2(v)) for v > 0, by halving (clang 14's BPF backend cannot lower
 * __builtin_clzll: it runs out of memory). */
static __always_inline u32 log2_of(u64 v)
{
	u32 log = 0;
	if (v >> 32) { v >>= 32; log += 32; }
	if (v >> 16) { v >>= 16; log += 16; }
	if (v >> 8) { v >>= 8; log += 8; }
	if (v >> 4) { v >>= 4; log += 4; }
	if (v >> 2) { v >>= 2; log += 2; }
	if (v >> 1) { log += 1; }
	return log;
}

static __always_inline u16 bucket_of(u64 ns)
{
	if (ns < 8)
		return ns;
	u32 log = log2_of(ns);
	return (log - 2) * 8 + ((ns >> (log - 3)) & 7);
}

/* One more call in the histogram entry `key`. Two CPUs may both find it missing: the one
 * whose insert loses (EEXIST) adds to the entry the other made. */
static __always_inline void count_call(struct latency_key *key)
{
	u64 one = 1, *n = bpf_map_lookup_elem(&latency, key);
	if (n) {
		__sync_fetch_and_add(n, 1);
	} else if (bpf_map_update_elem(&latency, key, &one, BPF_NOEXIST)) {
		n = bpf_map_lookup_elem(&latency, key);
		if (n)
			__sync_fetch_and_add(n, 1);
		else
			count_lost(2);
	}
}

/* Whether a record wakes the reader: only once the ring is half full. Otherwise the reader
 * takes the records on its own tick (user space consumes every 50-100 ms): a wakeup per
 * record would put a task switch, on a CPU the traced program may need, after every slow
 * call. (BPF_RB_* from the kernel's uapi bpf.h.) */
#define RB_NO_WAKEUP 1
#define RB_FORCE_WAKEUP 2
#define RB_AVAIL_DATA 0
static __always_inline u64 wakeup_flags(void *ring, u64 size)
{
	return bpf_ringbuf_query(ring, RB_AVAIL_DATA) + size > (RING_BYTES / 2) ? RB_FORCE_WAKEUP
									  : RB_NO_WAKEUP;
}

/* A call's latency, and what completed during it on its disk and filesystem (or the
 * machine): at_entry becomes the difference. */
static __always_inline void end_call(struct call *c, const struct totals *machine, u64 took)
{
	struct totals t;
	totals_now(c, machine, &t);
	c->latency_ns = took;
	c->at_entry.flushes = t.flushes - c->at_entry.flushes;
	c->at_entry.flush_ns = t.flush_ns - c->at_entry.flush_ns;
	c->at_entry.write_bytes = t.write_bytes - c->at_entry.write_bytes;
	c->at_entry.commits = t.commits - c->at_entry.commits;
	c->at_entry.commit_ns = t.commit_ns - c->at_entry.commit_ns;
}

/* Why the flusher wrote back on `disk` since `since`: a bit per reason whose work ran then
 * (running now, or started or written since). */
static __always_inline u32 flusher_reasons(u32 disk, u64 since)
{
	if (!disk)
		return 0;
	struct flusher *f = bpf_map_lookup_elem(&flusher, &disk);
	if (!f)
		return 0;
	u32 reasons = 0;
	for (u32 r = 0; r < WB_REASONS; r++) {
		if (f->working[r] > 0 || f->seen_ns[r] >= since)
			reasons |= 1u << r;
	}
	return reasons;
}

static __always_inline int sync_exit(const struct config *cfg, s64 ret)
{
	u64 now = bpf_ktime_get_ns();
	u32 zero = 0;
	struct call *c = bpf_task_storage_get(&calls, bpf_get_current_task_btf(), 0, 0);
	if (!c || !c->start_ns)
		return 0;
	u64 took = now - c->start_ns;
	struct latency_key key = { .pid = c->pid, .kind = c->kind, .bucket = bucket_of(took) };
	count_call(&key);
	if (ret < 0) {
		key.bucket = FAILED_BUCKET;
		count_call(&key);
	}
	if (cfg->every_call) {
		struct latency_record r = {
			.start_ns = c->start_ns,
			.latency_ns = took,
			.pid = c->pid,
			.tid = c->tid,
			.kind = c->kind,
			.ret = ret < 0 ? (s32)ret : 0,
		};
		/* What a write wrote (a sync call returns 0 when it succeeds). */
		if (ret > 0)
			r.ret = ret > 0x7fffffff ? 0x7fffffff : (s32)ret;
		__builtin_memcpy(r.comm, c->comm, TASK_COMM_LEN);
		if (bpf_ringbuf_output(&every, &r, sizeof(r), wakeup_flags(&every, sizeof(r))))
			count_lost(3);
	}
	struct totals *t = bpf_map_lookup_elem(&totals, &zero);
	u64 report_over = cfg->report_threshold_ns;
	u64 group = (u64)c->kind << 32 | c->tid;
	u64 *own = bpf_map_lookup_elem(&thread_thresholds, &group);
	if (own && *own > report_over)
		report_over = *own;
	if (t && took >= report_over) {
		end_call(c, t, took);
		c->ret = ret;
		/* The latest commit of the call's own filesystem: a commit of another one (the
		 * root filesystem's, say) may have ended later. */
		u32 dev = c->dev;
		struct commit *last = bpf_map_lookup_elem(&last_commit, &dev);
		if (c->at_entry.commits && last && last->end_ns >= c->start_ns) {
			c->last_commit = *last;
			/* The commit's own record goes first, while commit_detail still holds
			 * it: at thousands of commits a second its entries last milliseconds,
			 * less than user space may take to read this call. */
			u64 dev_tid = last->dev_tid;
			struct call *detail = bpf_map_lookup_elem(&commit_detail, &dev_tid);
			if (detail && bpf_ringbuf_output(&events, detail, sizeof(*detail),
							 wakeup_flags(&events, sizeof(*detail))))
				count_lost(1);
		}
		c->flusher_reasons = flusher_reasons(c->disk, c->start_ns);
		/* A btrfs commit the call waited for in the filesystem's own thread. */
		struct btrfs_commit *b = bpf_map_lookup_elem(&last_btrfs_commit, &dev);
		if (!c->fs_journal.btrfs_commits && b && b->end_ns >= c->start_ns) {
			c->fs_journal.btrfs_transaction = b->transaction;
			c->fs_journal.btrfs_commits = 1;
		}
		if (bpf_ringbuf_output(&events, c, sizeof(*c), wakeup_flags(&events, sizeof(*c))))
			count_lost(1);
	}
	/* Out of the call; the entry stays with the task for its next one. */
	set_ended(c);
	return 0;
}

/* Where `nr` stands among the `n` system call numbers of `nrs`, or -1. */
static __always_inline int index_of(const s64 *nrs, int n, long nr)
{
	for (int i = 0; i < n; i++) {
		if (nrs[i] == nr)
			return i;
	}
	return -1;
}

/* The system calls at the raw_syscalls trace points, which every system call of the machine
 * passes; the number is compared first, so that the others cost a few instructions. Used
 * where the kernel refuses fentry/fexit on the calls' functions (EPERM on the project's VM,
 * which also has no kprobe events), and for a run's writes and calls on names, which are
 * every write of the machine to look at. The numbers are the architecture's, set by user
 * space in config.nr and config.write_nr; none of the sync calls' where fentry/fexit
 * follow them (config.sync_hooks). */
static __always_inline int kind_of(const struct config *cfg, long nr)
{
	if (cfg->sync_hooks != HOOKS_RAW_SYSCALLS)
		return -1;
	return index_of(cfg->nr, KINDS, nr);
}

/* Which of the write calls `nr` is (WRITE_PWRITEV2...), or -1; none unless writes are
 * followed. */
static __always_inline int write_call_of(const struct config *cfg, long nr)
{
	if (cfg->writes == WRITES_NONE)
		return -1;
	return index_of(cfg->write_nr, WRITE_CALLS, nr);
}

/* Which of KIND_OTHER's calls `nr` is, or -1; none unless every write of the measuring
 * threads is followed (a run's). */
static __always_inline int other_call_of(const struct config *cfg, long nr)
{
	if (cfg->writes != WRITES_ALL)
		return -1;
	return index_of(cfg->other_nr, OTHER_CALLS, nr);
}

/* One of KIND_OTHER's calls (the `which`-th), with its first argument `arg0`: followed in
 * the threads whose writes are. */
static __always_inline int other_enter(const struct config *cfg, int which, long arg0)
{
	u32 pid, tid;
	char comm[TASK_COMM_LEN];
	if (!current_traced(cfg, &pid, &tid, comm))
		return 0;
	if (tid != cfg->write_tid && !comm_matches(comm, cfg->write_comm))
		return 0;
	s32 fd = (cfg->other_fd >> which) & 1 ? (s32)arg0 : -1;
	return start_call(KIND_OTHER, fd, NULL, pid, tid, comm);
}

SEC("tp_btf/sys_enter")
int BPF_PROG(on_sys_enter, struct pt_regs *regs, long nr)
{
	if (!regs)
		return 0;
	u32 zero = 0;
	struct config *cfg = bpf_map_lookup_elem(&config, &zero);
	if (!cfg)
		return 0;
	int kind = kind_of(cfg, nr);
	if (kind >= 0)
		return sync_enter(cfg, kind, (s32)regs->di);
	int write = write_call_of(cfg, nr);
	if (write < 0) {
		int other = other_call_of(cfg, nr);
		return other < 0 ? 0 : other_enter(cfg, other, regs->di);
	}
	/* pwritev2(fd, iov, iovcnt, pos_l, pos_h, flags): the sixth argument, in r9. */
	return write_enter(cfg, (s32)regs->di, write == WRITE_PWRITEV2 ? regs->r9 : 0);
}

SEC("tp_btf/sys_exit")
int BPF_PROG(on_sys_exit, struct pt_regs *regs, long ret)
{
	u32 zero = 0;
	struct config *cfg = bpf_map_lookup_elem(&config, &zero);
	if (!cfg)
		return 0;
	long nr = regs->orig_ax;
	if (kind_of(cfg, nr) < 0 && write_call_of(cfg, nr) < 0 && other_call_of(cfg, nr) < 0)
		return 0;
	return sync_exit(cfg, ret);
}

/* The sync calls where the kernel lets fentry/fexit attach to their system calls' functions
 * (HOOKS_FUNCTIONS; bcc's ext4slower and perf's off-CPU code choose their hooks for the same
 * reason): user space sets each program's target (load.rs: __x64_sys_fsync... on x86), so
 * only the sync calls run them, and every other system call of the machine runs nothing of
 * ours. The function's argument is the caller's registers, as raw_syscalls' sys_enter gives
 * them: the records are the same on either path. */
static __always_inline int function_entered(u32 kind, struct pt_regs *regs)
{
	u32 zero = 0;
	struct config *cfg = bpf_map_lookup_elem(&config, &zero);
	if (!cfg || !regs)
		return 0;
	return sync_enter(cfg, kind, (s32)regs->di);
}

/* The call of `kind` the current task is in, if it is one, ends with `ret`. */
static __always_inline int function_exited(u32 kind, long ret)
{
	u32 zero = 0;
	struct config *cfg = bpf_map_lookup_elem(&config, &zero);
	struct call *c = bpf_task_storage_get(&calls, bpf_get_current_task_btf(), 0, 0);
	if (!cfg || !c || !c->start_ns || c->kind != kind)
		return 0;
	return sync_exit(cfg, ret);
}

#define SYNC_FUNCTION(name, kind)                                                  \
	SEC("fentry")                                                              \
	int BPF_PROG(on_enter_##name, struct pt_regs *regs)                        \
	{                                                                          \
		return function_entered(kind, regs);                               \
	}                                                                          \
	SEC("fexit")                                                               \
	int BPF_PROG(on_exit_##name, struct pt_regs *regs, long ret)               \
	{                                                                          \
		return function_exited(kind, ret);                                 \
	}

SYNC_FUNCTION(fsync, KIND_FSYNC)
SYNC_FUNCTION(fdatasync, KIND_FDATASYNC)
SYNC_FUNCTION(sync_file_range, KIND_SYNC_FILE_RANGE)
SYNC_FUNCTION(msync, KIND_MSYNC)
SYNC_FUNCTION(syncfs, KIND_SYNCFS)

/* sync(2) takes no argument, and its function may have none either: a kernel whose
 * compiler made __x64_sys_sync an alias of __do_sys_sync(void) lists only the latter in its
 * BTF (6.18), so user space attaches these to whichever it has, reading no argument. */
SEC("fentry")
int on_enter_sync(void *ctx)
{
	u32 zero = 0;
	struct config *cfg = bpf_map_lookup_elem(&config, &zero);
	return cfg ? sync_enter(cfg, KIND_SYNC, -1) : 0;
}

SEC("fexit")
int on_exit_sync(void *ctx)
{
	return function_exited(KIND_SYNC, 0);
}

/* The durable writes where the sync calls are hooked by function (a watch's WRITES_SYNC):
 * fentry/fexit on the filesystems' write_iter functions (user space sets the targets, those
 * of ext4_file_write_iter, xfs_file_write_iter... that this kernel has), so that a write to
 * a pipe, a socket or /dev/null runs nothing of ours and a write to a file one flag test.
 * A write is durable when its kiocb carries IOCB_DSYNC or IOCB_SYNC (RWF_DSYNC and RWF_SYNC's
 * values: include/linux/fs.h), as the file's O_DSYNC or O_SYNC or pwritev2's flags make it;
 * its kind is told as at sys_enter (write_enter), from the file's flags and the registers the
 * system call entered with, which also give its descriptor. It is timed from the
 * filesystem's entry to its return: the system call's own entry and exit, the descriptor's
 * lookup and the file position's lock, a microsecond or so, stay outside. A write that is no
 * write system call (io_uring's, aio's, a kernel thread's) is not followed, as on the
 * raw_syscalls path. */
#define IOCB_DSYNC_FLAG 2
#define IOCB_SYNC_FLAG 4

static __always_inline bool iocb_durable(struct kiocb *iocb)
{
	return iocb && (iocb->ki_flags & (IOCB_DSYNC_FLAG | IOCB_SYNC_FLAG));
}

static __always_inline int write_iter_entered(struct kiocb *iocb)
{
	if (!iocb_durable(iocb))
		return 0;
	u32 zero = 0;
	struct config *cfg = bpf_map_lookup_elem(&config, &zero);
	if (!cfg || cfg->writes != WRITES_SYNC)
		return 0;
	u32 pid, tid;
	char comm[TASK_COMM_LEN];
	if (!current_traced(cfg, &pid, &tid, comm))
		return 0;
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	if (!regs)
		return 0;
	int write = write_call_of(cfg, regs->orig_ax);
	struct file *file = iocb->ki_filp;
	if (write < 0 || !file)
		return 0;
	u32 flags = file->f_flags;
	u32 kind;
	if (write == WRITE_PWRITEV2 && (regs->r9 & (RWF_DSYNC_FLAG | RWF_SYNC_FLAG)))
		kind = KIND_WRITE_RWF_DSYNC;
	else if (flags & O_SYNC_ONLY_FLAG)
		kind = KIND_WRITE_OSYNC;
	else if (flags & O_DSYNC_FLAG)
		kind = KIND_WRITE_ODSYNC;
	else
		return 0; /* durable by the inode (a filesystem mounted sync): not a kind of ours */
	return start_call(kind, (s32)regs->di, file, pid, tid, comm);
}

static __always_inline int write_iter_exited(struct kiocb *iocb, long ret)
{
	if (!iocb_durable(iocb))
		return 0;
	u32 zero = 0;
	struct config *cfg = bpf_map_lookup_elem(&config, &zero);
	struct call *c = bpf_task_storage_get(&calls, bpf_get_current_task_btf(), 0, 0);
	if (!cfg || !c || !c->start_ns || c->kind < KIND_WRITE || c->kind > KIND_WRITE_RWF_DSYNC)
		return 0;
	return sync_exit(cfg, ret);
}

/* WRITE_ITER_HOOKS programs of each kind, for as many filesystems' functions (load.rs). */
#define WRITE_ITER(n)                                                              \
	SEC("fentry")                                                              \
	int BPF_PROG(on_enter_write_iter_##n, struct kiocb *iocb)                  \
	{                                                                          \
		return write_iter_entered(iocb);                                   \
	}                                                                          \
	SEC("fexit")                                                               \
	int BPF_PROG(on_exit_write_iter_##n, struct kiocb *iocb, struct iov_iter *from, long ret) \
	{                                                                          \
		return write_iter_exited(iocb, ret);                               \
	}

WRITE_ITER(0)
WRITE_ITER(1)
WRITE_ITER(2)
WRITE_ITER(3)
WRITE_ITER(4)
WRITE_ITER(5)
WRITE_ITER(6)
WRITE_ITER(7)

/* Whether a kept sleep has the stack `ips` (`bytes` of it). */
static __always_inline bool same_stack(const struct sleep *s, const u64 *ips, u32 bytes)
{
	if (!s->ns || s->stack_bytes != bytes)
		return false;
	for (u32 j = 0; j < STACK_DEPTH; j++) {
		if (j * 8 >= bytes)
			break;
		if (s->stack[j] != ips[j])
			return false;
	}
	return true;
}

/* Keeps the TOP_SLEEPS longest sleeps of a call, a sleep with the stack of a kept one joining
 * it (the same wait made again: without that, a call that waits for the journal in five
 * turns would leave the fifth unnamed); a sleep that does not make it, or one it pushes out,
 * is added to other_sleep_ns (the wait for a CPU it had, to runqueue_ns). Every long sleep's
 * stack is taken, at its wakeup (`task` is the task woken): at most one a millisecond of
 * sleep, by the threshold (--stack-over). Where it went is c->woken_into, for the wait for a
 * CPU that follows. */
static __always_inline void keep_sleep(struct call *c, struct task_struct *task, u64 sleep_ns)
{
	u32 zero = 0;
	c->woken_into = 0;
	struct stack_scratch *scratch = bpf_map_lookup_elem(&stack_scratch, &zero);
	if (!scratch) {
		c->other_sleep_ns += sleep_ns;
		return;
	}
	long got = bpf_get_task_stack(task, scratch->ips, sizeof(scratch->ips), 0);
	u32 bytes = got > 0 ? got : 0;
	if (bytes) {
		for (u32 i = 0; i < TOP_SLEEPS; i++) {
			struct sleep *s = &c->sleeps[i];
			if (same_stack(s, scratch->ips, bytes)) {
				s->ns += sleep_ns;
				s->sleeps++;
				c->woken_into = i + 1;
				return;
			}
		}
	}
	u32 slot = 0;
	u64 shortest = c->sleeps[0].ns;
	for (u32 i = 1; i < TOP_SLEEPS; i++) {
		if (c->sleeps[i].ns < shortest) {
			shortest = c->sleeps[i].ns;
			slot = i;
		}
	}
	if (shortest >= sleep_ns) {
		c->other_sleep_ns += sleep_ns;
		return;
	}
	if (slot >= TOP_SLEEPS)
		return;
	struct sleep *s = &c->sleeps[slot];
	c->other_sleep_ns += s->ns - s->runnable_ns;
	c->runqueue_ns += s->runnable_ns;
	s->ns = sleep_ns;
	s->runnable_ns = 0;
	s->waker_pid = c->waker_pid;
	s->sleeps = 1;
	__builtin_memcpy(s->waker_comm, c->waker_comm, TASK_COMM_LEN);
	__builtin_memcpy(s->stack, scratch->ips, sizeof(s->stack));
	s->stack_bytes = bytes;
	c->woken_into = slot + 1;
}

/* A short sleep (no stack taken) joins the sleeps the same task ended (by the same kind of
 * block completion on the same disk, if one ended it), in one of the call's SHORT_WAKERS
 * slots (the first to end one), or else short_sleep_ns. Who ends a sleep names it cheaply:
 * the journal thread ends a wait for its commit, a flush's completion a wait for it. */
static __always_inline void keep_short_sleep(struct call *c, u64 asleep)
{
	for (u32 i = 0; i < SHORT_WAKERS; i++) {
		struct short_wake *w = &c->short_wakers[i];
		if (!w->sleeps) {
			w->waker_pid = c->waker_pid;
			__builtin_memcpy(w->waker_comm, c->waker_comm, TASK_COMM_LEN);
			w->completed = c->woken_by;
			w->completed_dev = c->woken_by_dev;
			w->waker_work = c->waker_work;
		} else if (w->waker_pid != c->waker_pid || w->completed != c->woken_by ||
			   w->completed_dev != c->woken_by_dev || w->waker_work != c->waker_work) {
			continue;
		}
		w->ns += asleep;
		w->sleeps++;
		return;
	}
	c->short_sleep_ns += asleep;
	c->short_sleeps++;
}

/* Where BPF cannot read the preemption count: how deep this CPU is in interrupts, counted
 * at their tracepoints' entries and exits (a device's handler, a softirq, and on x86 the
 * IPIs that complete a request on the CPU that issued it, the local timer and irq_work).
 * An exit seen without its entry (attached mid-interrupt: user space attaches the exits
 * first) does not go below 0. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, s32);
} irq_depth SEC(".maps");

static __always_inline int irq_step(s32 by)
{
	u32 zero = 0;
	s32 *depth = bpf_map_lookup_elem(&irq_depth, &zero);
	if (depth) {
		s32 now = *depth + by;
		*depth = now < 0 ? 0 : now;
	}
	return 0;
}

/* No task switches inside an interrupt (a hardirq or a softirq being served cannot sleep or
 * be preempted, PREEMPT_RT's threaded softirqs aside): at a switch this CPU is in none, and
 * a count left above 0 (an entry whose exit went untraced) is mended there, so one lost
 * exit cannot make every later wakeup on the CPU look like an interrupt's. */
static __always_inline void irq_depth_at_switch(void)
{
	u32 zero = 0;
	s32 *depth = bpf_map_lookup_elem(&irq_depth, &zero);
	if (depth && *depth)
		*depth = 0;
}

static __always_inline bool in_counted_interrupt(void)
{
	u32 zero = 0;
	s32 *depth = bpf_map_lookup_elem(&irq_depth, &zero);
	return depth && *depth > 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	/* Every switch of the machine comes here: a task's entry is one pointer read away
	 * (none for a task that never made a traced call), and the clock is read only for a
	 * task inside a sync call. A wakeup still set at a switch-out is one whose switch-in
	 * went untraced: the wait for a CPU after it stays in the time on a CPU. While no
	 * call is in progress on the machine, not even that. */
	if (none_in_flight())
		return 0;
	irq_depth_at_switch();
	struct call *c = bpf_task_storage_get(&calls, prev, 0, 0);
	if (c && c->start_ns) {
		c->off_ns = bpf_ktime_get_ns();
		c->woken_ns = 0;
		c->waker_pid = 0;
		c->woken_by = COMPLETED_NONE;
		c->waker_work = 0;
		c->off_state = preempt || c->woken_early ? 0 : prev_state;
		c->woken_early = 0;
	}
	c = bpf_task_storage_get(&calls, next, 0, 0);
	if (!c)
		return 0;
	if (c->woken_ns) {
		/* Woken (the sleep was kept then): from the wakeup, a wait for a CPU, in the
		 * sleep's part where it was kept. */
		u64 runnable = bpf_ktime_get_ns() - c->woken_ns;
		c->woken_ns = 0;
		u32 slot = c->woken_into - 1;
		if (slot < TOP_SLEEPS) {
			c->sleeps[slot].ns += runnable;
			c->sleeps[slot].runnable_ns += runnable;
		} else {
			c->runqueue_ns += runnable;
		}
		return 0;
	}
	if (!c->off_ns)
		return 0;
	u64 off = bpf_ktime_get_ns() - c->off_ns;
	c->off_ns = 0;
	if (!c->off_state) {
		/* Preempted, or woken before its switch-out: a wait for a CPU. */
		c->runqueue_ns += off;
		return 0;
	}
	/* Asleep, and its wakeup went untraced (seen on the project's VM, a few times in a
	 * hundred runs of fsync-tps): all of it a sleep, a long one named by the stack it
	 * slept in (the task about to run still holds it), as offcputime counts it. */
	c->waker_pid = 0;
	c->waker_comm[0] = 0;
	u32 zero = 0;
	struct config *cfg = bpf_map_lookup_elem(&config, &zero);
	if (!cfg || off < cfg->stack_threshold_ns) {
		c->short_sleep_ns += off;
		c->short_sleeps++;
		return 0;
	}
	c->long_sleeps++;
	keep_sleep(c, next, off);
	return 0;
}

/* The preemption count of the CPU the program runs on, whose hardirq, softirq and NMI bits
 * say whether it runs in an interrupt. x86 keeps it in the per-CPU __preempt_count, except
 * from 6.2 to 6.14 when it lived in struct pcpu_hot: whichever of the two the running
 * kernel's BTF has is the one libbpf resolves (both weak; the other reads as absent). */
extern const int __preempt_count __ksym __weak;
extern struct pcpu_hot pcpu_hot __ksym __weak;

static __always_inline int preempt_count_now(void)
{
	if (bpf_ksym_exists(__preempt_count))
		return *(const int *)bpf_this_cpu_ptr(&__preempt_count);
	if (bpf_ksym_exists(pcpu_hot) && bpf_core_field_exists(struct pcpu_hot, preempt_count))
		return ((struct pcpu_hot *)bpf_this_cpu_ptr(&pcpu_hot))->preempt_count;
	return 0;
}

/* Each kind of interrupt, as its entry and exit trace points (`KIND_entry`, `KIND_exit`)
 * count the CPU's depth: programs on_irq_enterNAME and on_irq_leaveNAME. */
#define IRQ_DEPTH(kind, name)                                                    \
	SEC("tp_btf/" #kind "_entry")                                             \
	int BPF_PROG(on_irq_enter##name) { return irq_step(1); }                  \
	SEC("tp_btf/" #kind "_exit")                                              \
	int BPF_PROG(on_irq_leave##name) { return irq_step(-1); }

IRQ_DEPTH(irq_handler, )
IRQ_DEPTH(softirq, _softirq)
IRQ_DEPTH(call_function_single, _call_function_single)
IRQ_DEPTH(call_function, _call_function)
IRQ_DEPTH(local_timer, _local_timer)
IRQ_DEPTH(irq_work, _irq_work)

/* A wakeup is traced where it is made (sched_waking runs in the waker's context;
 * sched_wakeup may run on the woken task's CPU, in whatever task ran there). Made in a
 * hardirq, a softirq or an NMI, it is the interrupt's (a disk's completion, a timer), not
 * the interrupted task's: its waker is INTERRUPT_COMM, task 0. on_wakeup tells by the
 * preemption count where the kernel lets the program read it; where it does not (a kernel
 * without CONFIG_KALLSYMS_ALL cannot resolve a per-CPU variable) user space loads
 * on_wakeup_counted and the on_irq_ programs, which tell by irq_depth. (Not by the stack:
 * an interrupt that comes in user mode runs on the task's own.) */
/* The block completion that made a wakeup of call `c`, where one did: among this CPU's
 * last completions, the latest on the call's disk since the sleep began and at most
 * COMPLETION_WAKE_NS before the wakeup, made in the same context as the wakeup (a loop
 * device's worker completes its request and wakes the waiter) or, for a wakeup made in an
 * interrupt, in any context (on a loop device the completion is seen in the worker and the
 * wakeup made in an interrupt after it, on the same CPU). */
static __always_inline void completed_by(struct call *c, bool in_interrupt)
{
	u32 zero = 0;
	c->woken_by = COMPLETED_NONE;
	struct completions_seen *seen = bpf_map_lookup_elem(&last_completions, &zero);
	if (!seen)
		return;
	u64 context = bpf_get_current_pid_tgid();
	u64 latest = 0;
	for (u32 i = 0; i < COMPLETIONS_KEPT; i++) {
		struct completion_seen *s = &seen->kept[i];
		if (!s->ns || s->ns < c->off_ns || s->ns <= latest || c->woken_ns - s->ns > COMPLETION_WAKE_NS)
			continue;
		if ((!in_interrupt && s->context != context) || (c->disk && s->dev != c->disk))
			continue;
		latest = s->ns;
		c->woken_by = s->what;
		c->woken_by_dev = s->dev;
	}
}

/* The work function the current task runs, where it is a workqueue's worker (ext4's
 * conversion of unwritten extents ends a write's page writeback there, after the write's
 * completion; xfs's log work ends a log force); 0 otherwise. */
static __always_inline u64 work_of_current(void)
{
	struct task_struct *me = bpf_get_current_task_btf();
	if (!bpf_core_field_exists(me->worker_private) || !(me->flags & PF_WQ_WORKER))
		return 0;
	/* worker_private is a void pointer: read through with the helper. */
	struct kthread *k = BPF_CORE_READ(me, worker_private);
	if (!k)
		return 0;
	struct worker *w = BPF_CORE_READ(k, data);
	if (!w)
		return 0;
	return (u64)BPF_CORE_READ(w, current_func);
}

static __always_inline int woken(struct task_struct *p, bool by_preempt_count)
{
	if (!p || none_in_flight())
		return 0;
	struct call *c = bpf_task_storage_get(&calls, p, 0, 0);
	if (!c)
		return 0;
	if (!c->off_ns) {
		/* Off its run queue and not yet switched out (the switch is traced after this
		 * wakeup): the switch-out that follows is a wait for a CPU. */
		if (c->start_ns && !BPF_CORE_READ(p, on_rq))
			c->woken_early = 1;
		return 0;
	}
	/* Asleep in a call (switched out, not preempted), not yet woken. */
	if (!c->off_state || c->woken_ns)
		return 0;
	u64 now = bpf_ktime_get_ns();
	c->woken_ns = now;
	bool in_interrupt = by_preempt_count ? (preempt_count_now() & IN_INTERRUPT_MASK) != 0 : in_counted_interrupt();
	completed_by(c, in_interrupt);
	if (in_interrupt) {
		c->waker_pid = 0;
		__builtin_memcpy(c->waker_comm, INTERRUPT_COMM, sizeof(INTERRUPT_COMM));
	} else {
		c->waker_pid = bpf_get_current_pid_tgid();
		bpf_get_current_comm(c->waker_comm, sizeof(c->waker_comm));
		c->waker_work = work_of_current();
	}
	/* The sleep ends here, named by who ended it, or (a long one) by its stack. */
	u64 asleep = now - c->off_ns;
	c->off_ns = 0;
	u32 zero = 0;
	struct config *cfg = bpf_map_lookup_elem(&config, &zero);
	if (!cfg || asleep < cfg->stack_threshold_ns) {
		c->woken_into = 0;
		keep_short_sleep(c, asleep);
		return 0;
	}
	c->long_sleeps++;
	keep_sleep(c, p, asleep);
	return 0;
}

SEC("tp_btf/sched_waking")
int BPF_PROG(on_wakeup, struct task_struct *p)
{
	return woken(p, true);
}

SEC("tp_btf/sched_waking")
int BPF_PROG(on_wakeup_counted, struct task_struct *p)
{
	return woken(p, false);
}

/* A traced command's new processes (config.follow_tid): a process started by the thread
 * that starts the command, or by a process already followed, is followed from its first
 * instruction, before it can make a call; a new thread is its process's already. Attached
 * only for a command (user space leaves these two programs unloaded otherwise). */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child)
{
	if (!parent || !child)
		return 0;
	u32 zero = 0;
	struct config *cfg = bpf_map_lookup_elem(&config, &zero);
	if (!cfg || !cfg->follow_tid)
		return 0;
	u32 pid = child->tgid;
	u32 parent_pid = parent->tgid;
	if (child->pid != child->tgid)
		return 0;
	if (parent->pid != cfg->follow_tid && !bpf_map_lookup_elem(&processes, &parent_pid))
		return 0;
	u8 one = 1;
	if (bpf_map_update_elem(&processes, &pid, &one, BPF_ANY))
		count_lost(4);
	return 0;
}

/* A followed process whose last thread ends leaves `processes` (its id may be reused). */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_process_exit, struct task_struct *task)
{
	if (!task)
		return 0;
	u32 zero = 0;
	struct config *cfg = bpf_map_lookup_elem(&config, &zero);
	if (!cfg || !cfg->follow_tid || BPF_CORE_READ(task, signal, live.counter) != 0)
		return 0;
	u32 pid = task->tgid;
	bpf_map_delete_elem(&processes, &pid);
	return 0;
}

/* Dirty throttling in a followed call (the current task's): `dirty` and `limit` pages at
 * this event; `pause` jiffies, the sleep the kernel chose (not positive: none, the task
 * goes on). The sleep itself is timed and named by its stack as any other. */
static __always_inline int throttled(u64 dirty, u64 limit, s64 pause)
{
	struct call *c = bpf_task_storage_get(&calls, bpf_get_current_task_btf(), 0, 0);
	if (!c || !c->start_ns)
		return 0;
	c->throttle.dirty_pages = dirty;
	c->throttle.limit_pages = limit;
	if (pause > 0) {
		c->throttle.pause_jiffies += pause;
		c->throttle.pauses++;
	}
	return 0;
}

/* The tracepoint's arguments changed after 6.12 (Debian's 6.12 passes the figures, 6.18
 * the throttle control they come from): user space loads the one of these two that the running
 * kernel's BTF matches (the verifier refuses an argument a tracepoint does not have). The
 * raw context: a program reads only the arguments it needs, by position. */

/* (wb, dtc, dirty_ratelimit, task_ratelimit, dirtied, period, pause, start_time). */
SEC("tp_btf/balance_dirty_pages")
int on_throttle(u64 *ctx)
{
	struct dirty_throttle_control *dtc = (void *)ctx[1];
	if (!dtc)
		return 0;
	u64 limit = BPF_CORE_READ(dtc, thresh);
	if (bpf_core_field_exists(dtc->dom)) {
		struct wb_domain *dom = BPF_CORE_READ(dtc, dom);
		u64 smoothed = dom ? BPF_CORE_READ(dom, dirty_limit) : 0;
		if (smoothed > limit)
			limit = smoothed;
	}
	return throttled(BPF_CORE_READ(dtc, dirty), limit, (s64)ctx[6]);
}

/* Up to 6.12 at least: (wb, thresh, bg_thresh, dirty, bdi_thresh, bdi_dirty, dirty_ratelimit,
 * task_ratelimit, dirtied, period, pause, start_time); the limit is the threshold. */
SEC("tp_btf/balance_dirty_pages")
int on_throttle_figures(u64 *ctx)
{
	return throttled(ctx[3], ctx[1], (s64)ctx[10]);
}

/* xfs: a log force made in a followed call, up to checkpoint sequence `seq` (0: all of it).
 * (mp, seq, caller_ip) */
SEC("tp_btf/xfs_log_force")
int on_xfs_log_force(u64 *ctx)
{
	struct call *c = bpf_task_storage_get(&calls, bpf_get_current_task_btf(), 0, 0);
	if (!c || !c->start_ns || c->kind == KIND_COMMIT)
		return 0;
	c->fs_journal.xfs_seq = ctx[1];
	c->fs_journal.xfs_forces++;
	return 0;
}

/* btrfs: a transaction commit ended (at the end of btrfs_commit_transaction), in a followed
 * call's task or in the filesystem's btrfs-transaction thread; kept per filesystem for the
 * calls that waited for it there, with the transaction it committed (the event's own
 * `gen`, the filesystem's generation, is the next transaction's once a writer has opened
 * it). (fs_info): the filesystem, since before 6.1 (it was the root before). */
SEC("tp_btf/btrfs_transaction_commit")
int BPF_PROG(on_btrfs_commit, struct btrfs_fs_info *fs)
{
	if (!fs || !bpf_core_field_exists(fs->last_trans_committed))
		return 0;
	struct btrfs_commit ended = {
		.transaction = BPF_CORE_READ(fs, last_trans_committed),
		.end_ns = bpf_ktime_get_ns(),
	};
	u32 dev = BPF_CORE_READ(fs, sb, s_dev);
	bpf_map_update_elem(&last_btrfs_commit, &dev, &ended, BPF_ANY);
	struct call *c = bpf_task_storage_get(&calls, bpf_get_current_task_btf(), 0, 0);
	if (c && c->start_ns && c->kind != KIND_COMMIT) {
		c->fs_journal.btrfs_transaction = ended.transaction;
		c->fs_journal.btrfs_commits++;
	}
	return 0;
}

/* A flusher's work item on a disk's backing device starts (`by` 1) or has written (-1) a
 * round of its pages: counted per disk and reason for the calls that wait for their own
 * pages meanwhile. Every writeback round of the machine passes here: a few a second. */
static __always_inline int flusher_step(struct bdi_writeback *wb, struct wb_writeback_work *work, s32 by)
{
	if (!wb || !work)
		return 0;
	u32 reason = BPF_CORE_READ(work, reason);
	u32 disk = BPF_CORE_READ(wb, bdi, owner, devt);
	if (!disk || reason >= WB_REASONS)
		return 0;
	struct flusher *f = bpf_map_lookup_elem(&flusher, &disk);
	if (!f) {
		struct flusher zero = {};
		bpf_map_update_elem(&flusher, &disk, &zero, BPF_NOEXIST);
		f = bpf_map_lookup_elem(&flusher, &disk);
		if (!f)
			return 0;
	}
	__sync_fetch_and_add(&f->working[reason], by);
	f->seen_ns[reason] = bpf_ktime_get_ns();
	return 0;
}

SEC("tp_btf/writeback_start")
int BPF_PROG(on_writeback_start, struct bdi_writeback *wb, struct wb_writeback_work *work)
{
	return flusher_step(wb, work, 1);
}

SEC("tp_btf/writeback_written")
int BPF_PROG(on_writeback_written, struct bdi_writeback *wb, struct wb_writeback_work *work)
{
	return flusher_step(wb, work, -1);
}

/* A kernel address as a number the program may shift and fold: the verifier refuses
 * arithmetic other than adding to a pointer, but a pointer stored in a map value reads back
 * as a number (volatile, so that the compiler does not keep the register it stored). 0 if
 * the scratch is missing. */
static __always_inline u64 address_of(const void *p)
{
	u32 zero = 0;
	u64 *scratch = bpf_map_lookup_elem(&address_scratch, &zero);
	if (!scratch)
		return 0;
	*(volatile u64 *)scratch = (u64)p;
	return *(volatile u64 *)scratch;
}

/* The slot of flushes_in_flight for the request at address `rq`: the address above the
 * cache line (a request is larger than one), folded. */
static __always_inline u32 flush_slot_of(u64 rq)
{
	return (u32)((rq >> 6) ^ (rq >> 16)) & (FLUSH_SLOTS - 1);
}

/* Whether request `rq` (a trace point's argument) is a flush or carries one. */
static __always_inline bool is_flush(struct request *rq)
{
	u32 flags = rq->cmd_flags;
	u32 op = flags & 0xff;
	u32 preflush = 1u << bpf_core_enum_value(enum req_flag_bits, __REQ_PREFLUSH);
	return op == bpf_core_enum_value(enum req_op, REQ_OP_FLUSH) || (flags & preflush);
}

SEC("tp_btf/block_rq_issue")
int BPF_PROG(on_rq_issue, struct request *rq)
{
	if (!rq)
		return 0;
	if (!is_flush(rq))
		return 0;
	u64 addr = address_of(rq);
	u32 slot = flush_slot_of(addr);
	struct flush_slot *f = bpf_map_lookup_elem(&flushes_in_flight, &slot);
	if (!addr || !f)
		return 0;
	/* The time before the address: a completion that finds its address finds a time at
	 * least as recent (x86 keeps stores in order). */
	f->issued_ns = bpf_ktime_get_ns();
	f->rq = addr;
	return 0;
}

SEC("tp_btf/block_rq_complete")
int BPF_PROG(on_rq_complete, struct request *rq, blk_status_t error, unsigned int nr_bytes)
{
	if (!rq)
		return 0;
	u32 zero = 0;
	struct totals *t = bpf_map_lookup_elem(&totals, &zero);
	if (!t)
		return 0;
	/* Plain loads from the request (see disk_dev_btf): a completion is the hottest of the
	 * block programs, three a fsync on a loop device. */
	u32 op = rq->cmd_flags & 0xff;
	bool write = op == bpf_core_enum_value(enum req_op, REQ_OP_WRITE);
	u64 addr = address_of(rq);
	u32 slot = flush_slot_of(addr);
	struct flush_slot *f = bpf_map_lookup_elem(&flushes_in_flight, &slot);
	u64 issued_ns = 0;
	if (addr && f && f->rq == addr) {
		issued_ns = f->issued_ns;
		f->rq = 0;
	}
	/* No call in progress: nothing to count, as every call's share is a difference
	 * between two counts taken while it was. (The slot is cleared all the same, so that a
	 * request later made at the same address is not taken for this flush.) */
	if (none_in_flight())
		return 0;
	bool issued = issued_ns != 0;
	bool read = op == bpf_core_enum_value(enum req_op, REQ_OP_READ);
	if (!write && !issued && !read)
		return 0;
	u32 dev = rq->q ? disk_dev_btf(rq->q->disk) : 0;
	/* For the wakeup this completion makes next, in this context (woken). */
	struct completions_seen *seen = bpf_map_lookup_elem(&last_completions, &zero);
	if (seen) {
		struct completion_seen *s = &seen->kept[seen->next % COMPLETIONS_KEPT];
		seen->next++;
		s->ns = bpf_ktime_get_ns();
		s->context = bpf_get_current_pid_tgid();
		/* A flush issued as such, or a request that carried one: blkdev_issue_flush's
		 * write without data (its REQ_PREFLUSH taken off by the flush machinery, whose
		 * own request completes just before it). */
		s->what = read ? COMPLETED_READ
		       : issued || !nr_bytes || is_flush(rq) ? COMPLETED_FLUSH : COMPLETED_WRITE;
		s->dev = dev;
	}
	if (read)
		return 0;
	/* The machine's and the disk's. */
	struct totals *d = dev_totals_of(dev);
	if (write) {
		__sync_fetch_and_add(&t->write_bytes, nr_bytes);
		if (d)
			__sync_fetch_and_add(&d->write_bytes, nr_bytes);
	}
	if (!issued)
		return 0;
	u64 took = bpf_ktime_get_ns() - issued_ns;
	__sync_fetch_and_add(&t->flushes, 1);
	__sync_fetch_and_add(&t->flush_ns, took);
	if (d) {
		__sync_fetch_and_add(&d->flushes, 1);
		__sync_fetch_and_add(&d->flush_ns, took);
	}
	return 0;
}

static __always_inline u64 commit_key(struct journal_s *journal, struct transaction_s *tr)
{
	u64 dev = BPF_CORE_READ(journal, j_fs_dev, bd_dev);
	return dev << 32 | (u32)BPF_CORE_READ(tr, t_tid);
}

SEC("tp_btf/jbd2_start_commit")
int BPF_PROG(on_commit_start, struct journal_s *journal, struct transaction_s *tr)
{
	if (!journal || !tr)
		return 0;
	u64 key = commit_key(journal, tr), now = bpf_ktime_get_ns();
	bpf_map_update_elem(&commits_in_flight, &key, &now, BPF_ANY);
	/* The journal thread (the current task) is followed through the commit as a traced
	 * task is through a call: the scheduler hooks see it while start_ns is set. */
	u32 zero = 0;
	struct totals *t = bpf_map_lookup_elem(&totals, &zero);
	if (!t)
		return 0;
	struct call *c = bpf_task_storage_get(&calls, bpf_get_current_task_btf(), 0,
					      BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!c || (c->start_ns && c->kind != KIND_COMMIT))
		return 0;
	bool was_started = c->start_ns != 0;
	begin_call(c, t, KIND_COMMIT, NULL);
	/* What completes meanwhile is the journal's filesystem's and its disk's. */
	struct block_device *bdev = BPF_CORE_READ(journal, j_fs_dev);
	c->dev = BPF_CORE_READ(bdev, bd_dev);
	c->disk = disk_dev(BPF_CORE_READ(bdev, bd_disk));
	totals_now(c, t, &c->at_entry);
	u64 id = bpf_get_current_pid_tgid();
	c->pid = id >> 32;
	c->tid = (u32)id;
	c->fd = -1;
	bpf_get_current_comm(c->comm, sizeof(c->comm));
	c->last_commit.dev_tid = key;
	set_started(c, now, was_started);
	return 0;
}

SEC("tp_btf/jbd2_end_commit")
int BPF_PROG(on_commit_end, struct journal_s *journal, struct transaction_s *tr)
{
	if (!journal || !tr)
		return 0;
	u64 key = commit_key(journal, tr);
	u64 *started = bpf_map_lookup_elem(&commits_in_flight, &key);
	u32 zero = 0;
	struct totals *t = bpf_map_lookup_elem(&totals, &zero);
	if (!started || !t)
		return 0;
	u64 now = bpf_ktime_get_ns();
	struct commit ended = { .dev_tid = key, .start_ns = *started, .end_ns = now };
	u32 dev = key >> 32;
	bpf_map_update_elem(&last_commit, &dev, &ended, BPF_ANY);
	bpf_map_update_elem(&last_commit, &zero, &ended, BPF_ANY);
	__sync_fetch_and_add(&t->commits, 1);
	__sync_fetch_and_add(&t->commit_ns, now - *started);
	struct totals *f = dev_totals_of(dev);
	if (f) {
		__sync_fetch_and_add(&f->commits, 1);
		__sync_fetch_and_add(&f->commit_ns, now - *started);
	}
	bpf_map_delete_elem(&commits_in_flight, &key);
	/* Where the commit's time went, kept for the calls that waited for it. */
	struct call *c = bpf_task_storage_get(&calls, bpf_get_current_task_btf(), 0, 0);
	if (c && c->start_ns && c->kind == KIND_COMMIT && c->last_commit.dev_tid == key) {
		end_call(c, t, now - c->start_ns);
		c->last_commit.start_ns = c->start_ns;
		c->last_commit.end_ns = now;
		bpf_map_update_elem(&commit_detail, &key, c, BPF_ANY);
		set_ended(c);
	}
	return 0;
}
