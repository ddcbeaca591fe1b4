/* Part of watch.bpf.c's one compilation unit, included once from it: the hooks on the
 * system calls. A followed call's exit (its record sent when it is slow), the raw_syscalls
 * trace points every system call of the machine passes (where the kernel refuses fentry),
 * fentry/fexit on the sync calls' functions, and the durable writes' write_iter functions.
 */
#ifndef FSYNCLAB_WATCH_SYSCALLS_H
#define FSYNCLAB_WATCH_SYSCALLS_H

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
		split_by_counters(c, took);
		c->ret = ret;
		/* The latest commit of the call's own filesystem: a commit of another one (the
		 * root filesystem's, say) may have ended later. */
		u32 dev = c->dev;
		struct commit *last = bpf_map_lookup_elem(&last_commit, &dev);
		if (c->at_entry.commits && last && last->end_ns >= c->start_ns) {
			c->last_commit = *last;
			/* The commit's own record goes first, while commit_detail still holds
			 * it: at thousands of commits a second its slots last milliseconds,
			 * less than user space may take to read this call. */
			u32 slot = commit_slot(last->dev_tid);
			struct call *detail = bpf_map_lookup_elem(&commit_detail, &slot);
			if (detail && detail->last_commit.dev_tid == last->dev_tid &&
			    bpf_ringbuf_output(&events, detail, sizeof(*detail),
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

#endif
