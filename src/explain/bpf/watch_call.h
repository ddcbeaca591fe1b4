/* Part of watch.bpf.c's one compilation unit, included once from it: a followed call's
 * life. Which tasks are followed (the filter in `config`), a call's start (its file, its
 * devices, what has completed so far on them), its latency into the histogram, and its end
 * (what completed during it, why the flusher wrote meanwhile).
 */
#ifndef FSYNCLAB_WATCH_CALL_H
#define FSYNCLAB_WATCH_CALL_H

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

/* The current task's record of its followed calls, made at its first one; NULL where the
 * task storage could not be made. */
static __always_inline struct call *current_call(void)
{
	return bpf_task_storage_get(&calls, bpf_get_current_task_btf(), 0,
				    BPF_LOCAL_STORAGE_GET_F_CREATE);
}

/* The current task's scheduler counters, for a call split without the scheduler's hooks:
 * `base`, its time on a CPU up to its last switch-in less that switch-in's time (rq clock),
 * and `run_delay`, its time waiting on a run queue. At any moment while it runs, its time
 * on a CPU is base + now, give or take a constant (the rq clock's offset from
 * CLOCK_MONOTONIC, both counted from the same TSC), so the difference of two readings plus
 * the time between them is the time on a CPU in between: every switch-in between moves
 * both terms. (Where the kernel accounts steal time, a virtual CPU the host did not run
 * while the task was on it, prev_sum_exec_runtime leaves that out: it counts as asleep.)
 * False where the kernel has no sched_info (CONFIG_SCHED_INFO unset), or
 * for a task outside the fair class, whose prev_sum_exec_runtime is not kept at switch-in. */
static __always_inline bool scheduler_counters(u64 *base, u64 *run_delay)
{
	struct task_struct *t = bpf_get_current_task_btf();
	*base = 0;
	*run_delay = 0;
	if (!bpf_core_field_exists(t->sched_info))
		return false;
	u32 policy = t->policy;
	if (policy != SCHED_NORMAL && policy != SCHED_BATCH && policy != SCHED_IDLE)
		return false;
	*base = t->se.prev_sum_exec_runtime - t->sched_info.last_arrival;
	*run_delay = t->sched_info.run_delay;
	return true;
}

/* A call that ends after `took`, its entry's counters kept (c->counted): its time waiting
 * for a CPU in runqueue_ns and the rest off the CPU in other_sleep_ns, from the counters'
 * differences; what is left is its time on a CPU (SlowCall::on_cpu_ns). */
static __always_inline void split_by_counters(struct call *c, u64 took)
{
	if (!c->counted)
		return;
	u64 base = 0, run_delay = 0;
	if (!scheduler_counters(&base, &run_delay)) {
		c->counted = 0;
		return;
	}
	s64 on = (s64)(base - c->entry_runtime_base) + (s64)took;
	if (on < 0)
		on = 0;
	if ((u64)on > took)
		on = took;
	u64 waited = run_delay - c->entry_run_delay;
	if (waited > took - on)
		waited = took - on;
	c->runqueue_ns = waited;
	c->other_sleep_ns = took - on - waited;
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
	struct call *c = current_call();
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
	c->counted = 0;
	struct config *cfg = bpf_map_lookup_elem(&config, &zero);
	if (cfg && cfg->split_by_counters &&
	    scheduler_counters(&c->entry_runtime_base, &c->entry_run_delay))
		c->counted = 1;
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

#endif
