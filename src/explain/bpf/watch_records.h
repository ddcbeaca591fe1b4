/* The records of watch.bpf.c, and the numbers it shares with user space: what it keeps per
 * sync call in progress, the machine-wide totals a call's share is taken from, the latency
 * histograms' keys; its maps, which hold them, are in watch_maps.h. explain/bpf/record.rs
 * reads `struct call` byte for byte (RECORD_BYTES) and explain/bpf/settings.rs writes
 * `struct config`: a change here is a change there, and in explain/bpf/layout.rs, whose tests
 * check each shared struct field by field against this object's BTF (one BTF leaves out,
 * against this header).
 */
#ifndef FSYNCLAB_WATCH_RECORDS_H
#define FSYNCLAB_WATCH_RECORDS_H

#define TOP_SLEEPS 4
#define SHORT_WAKERS 4
#define STACK_DEPTH 20
#define TASK_COMM_LEN 16
/* The waker named for a wakeup made in an interrupt (task 0; explain/attribution/causes.rs
 * INTERRUPT_WAKER). */
#define INTERRUPT_COMM "interrupt"
/* The preemption count's NMI, hardirq and softirq-serving bits (include/linux/preempt.h:
 * NMI_MASK | HARDIRQ_MASK | SOFTIRQ_OFFSET; bottom halves merely disabled do not count). */
#define IN_INTERRUPT_MASK (0x00f00000 | 0x000f0000 | 0x00000100)

/* The system calls, as user space names them (explain/bpf/kind.rs: SyncKind). */
#define KIND_FSYNC 0
#define KIND_FDATASYNC 1
#define KIND_SYNC_FILE_RANGE 2
#define KIND_MSYNC 3
#define KIND_SYNCFS 4
#define KIND_SYNC 5
/* Writes, by how the file was opened (O_SYNC, O_DSYNC, O_DIRECT) or the write's own flags
 * (pwritev2's RWF_DSYNC or RWF_SYNC), as user space names them (SyncKind::Write...). */
#define KIND_WRITE 6
#define KIND_WRITE_DIRECT 7
#define KIND_WRITE_ODSYNC 8
#define KIND_WRITE_OSYNC 9
#define KIND_WRITE_RWF_DSYNC 10

#define FILTER_ALL 0
#define FILTER_PROCESSES 1
#define FILTER_COMM 2
#define FILTER_CGROUP 3 /* the tasks of the cgroup (v2) in `cgroups`, and of its descendants */

#define KINDS 6 /* the sync calls: one system call each */
/* Not a system call: a journal commit, followed in the journal thread as a call is. */
#define KIND_COMMIT 11
/* The calls on a filesystem's names and files beside its reads and writes (open, close,
 * rename, truncate, unlink, mkdir...: config.other_nr), followed as the writes are, in a
 * run's measuring threads only (WRITES_ALL): a run measures fs_mark's creates and closes. */
#define KIND_OTHER 12
#define OTHER_CALLS 16

/* The write calls, in config.write_nr: write, pwrite64, writev, pwritev, pwritev2. */
#define WRITE_CALLS 5
#define WRITE_PWRITEV2 4

/* Which writes are followed (config.writes). */
#define WRITES_NONE 0
#define WRITES_SYNC 1 /* only durable ones: O_SYNC or O_DSYNC files, RWF_DSYNC/RWF_SYNC */
#define WRITES_ALL 2  /* every write of write_tid and of the threads named write_comm */

struct config {
	u32 filter;
	/* Not 0 (FILTER_PROCESSES, `exec --explain --tracer bpf`): a process this thread
	 * starts, or one a followed process starts, is followed too (added to `processes`). */
	u32 follow_tid;
	s64 nr[KINDS]; /* the system call numbers of KIND_FSYNC... */
	u64 report_threshold_ns;
	u64 stack_threshold_ns;
	char comm[TASK_COMM_LEN];
	/* Not 0: every call's latency is sent in `every` (a traced command's calls, which
	 * nothing else measures). */
	u32 every_call;
	u32 writes; /* WRITES_NONE... */
	s64 write_nr[WRITE_CALLS];
	/* WRITES_ALL: the threads whose every write is followed (a run's measuring ones). */
	u32 write_tid;
	u32 write_pad;
	char write_comm[TASK_COMM_LEN];
	/* KIND_OTHER's system calls (-1: none), and a bit for each whose first argument is a
	 * file descriptor (close, ftruncate, fallocate): the others' is a path or a directory's
	 * descriptor, whose file is not the call's. */
	s64 other_nr[OTHER_CALLS];
	u32 other_fd;
	/* HOOKS_RAW_SYSCALLS: the sync calls are found by number at the raw_syscalls trace
	 * points; HOOKS_FUNCTIONS: fentry/fexit on their system calls' functions start and end
	 * them, and the raw_syscalls programs (attached only for a run's writes and calls on
	 * names) leave them alone. */
	u32 sync_hooks;
	/* Not 0 (--detail latency, where the scheduler's hooks are not attached): a slow
	 * call is split by its task's scheduler counters instead (struct call's counted). */
	u32 split_by_counters;
	u32 split_pad;
};

#define HOOKS_RAW_SYSCALLS 0
#define HOOKS_FUNCTIONS 1

/* One sync call in `every`: when, how long, whose (with its task's name: a command may
 * start more processes than a map of names would hold), and whether it failed. */
struct latency_record {
	u64 start_ns;
	u64 latency_ns;
	u32 pid;
	u32 tid;
	u32 kind;
	s32 ret; /* -errno, or what a write wrote (capped), or 0 */
	char comm[TASK_COMM_LEN];
};

/* Machine-wide counts of what the devices and journals finished; a call's share is the
 * difference between its exit and its entry. */
struct totals {
	u64 flushes;
	u64 flush_ns;
	u64 write_bytes;
	u64 commits;
	u64 commit_ns;
};

/* A long sleep of a call, or several with the same stack (the same wait, made again: a
 * journal commit waited for in turns): `ns` and `runnable_ns` are their sums, the waker the
 * first one's. */
struct sleep {
	u64 ns;
	u64 runnable_ns; /* of `ns`, the wait for a CPU after the wakeup */
	u32 waker_pid;
	u32 stack_bytes;
	char waker_comm[TASK_COMM_LEN];
	u64 stack[STACK_DEPTH];
	u32 sleeps; /* how many */
	u32 pad;
};

/* What ended a sleep, where a block request's completion did (struct short_wake's
 * `completed`): the completion and the wakeup ran on one CPU, within COMPLETION_WAKE_NS,
 * after the sleep began (watch.bpf.c, completed_by). */
#define COMPLETED_NONE 0
#define COMPLETED_FLUSH 1
#define COMPLETED_WRITE 2
#define COMPLETED_READ 3
#define COMPLETION_WAKE_NS 200000

/* A call's short sleeps (no stack taken) ended by one task (running one work, for a
 * workqueue's worker), or by one kind of block completion on one disk: what names them. */
struct short_wake {
	u64 ns;
	u32 sleeps;
	u32 waker_pid;
	char waker_comm[TASK_COMM_LEN];
	u32 completed;     /* COMPLETED_* */
	u32 completed_dev; /* the completing disk (MAJOR << 20 | MINOR) */
	u64 waker_work;    /* a workqueue worker's work function (its address), or 0 */
};

/* A block request completed on a CPU (a flush or a write): when, on which disk, and in
 * which context (the current task's pid_tgid: the interrupted task's in an interrupt). */
struct completion_seen {
	u64 ns;
	u64 context;
	u32 what;
	u32 dev;
};

/* The last COMPLETIONS_KEPT completions of a CPU, the oldest replaced: a wakeup looks among
 * them for its call's disk's, which another disk's (a loop device's backing disk, completing
 * in an interrupt that came in the loop worker) may have followed. */
#define COMPLETIONS_KEPT 4
struct completions_seen {
	struct completion_seen kept[COMPLETIONS_KEPT];
	u32 next;
	u32 pad;
};

/* A long sleep's stack, taken before it is known where the sleep goes. */
struct stack_scratch {
	u64 ips[STACK_DEPTH];
};

/* A journal commit: which (device << 32 | transaction), when it started and ended. */
struct commit {
	u64 dev_tid;
	u64 start_ns;
	u64 end_ns;
};

/* commit_detail's slots: JOURNAL_GROUPS groups of COMMITS_PER_GROUP, a journal's device
 * hashed to a group, its commits taking the group's slots in turn (by transaction). Few on
 * purpose: a slot is written at every commit, and one written again a few commits later is
 * still in the CPU's cache (with 256 cold slots the copy was a third of the commit end's
 * time a run: docs/bench/commit-programs.sh). A slow call reads its device's latest commit,
 * just ended (explain/bpf/follow.rs: commit_slot). */
#define JOURNAL_GROUPS 8
#define COMMITS_PER_GROUP 8

/* The dirty throttling a call met (writeback:balance_dirty_pages, made in the call's
 * task): the pauses the kernel chose and their sum in jiffies (user space knows HZ), and
 * the dirty pages and the limit at the last event; zeros when none. */
struct throttle {
	u64 dirty_pages;
	u64 limit_pages;
	s64 pause_jiffies;
	u32 pauses;
	u32 pad;
};

/* The journal a call forced or committed by other means than jbd2 (whose commits are
 * `last_commit`): xfs's log forces made in the call's task, the last one's checkpoint
 * sequence (0: the whole log); btrfs's transaction commits, ended in the call's task, or
 * else the last one of the call's filesystem that ended during the call (in its
 * btrfs-transaction thread), with the transaction it committed. */
struct fs_journal {
	u64 xfs_seq;
	u64 btrfs_transaction;
	u32 xfs_forces;
	u32 btrfs_commits;
};

/* A btrfs transaction commit that ended: the transaction, and when. */
struct btrfs_commit {
	u64 transaction;
	u64 end_ns;
};

/* One sync call in progress (start_ns not 0), then its record for user space (the same
 * layout). */
struct call {
	u64 start_ns;
	u64 latency_ns;
	u32 pid;
	u32 tid;
	u32 kind;
	s32 fd;
	s64 ret;
	char comm[TASK_COMM_LEN];
	u64 runqueue_ns;      /* preempted, or woken and waiting for a CPU */
	u64 short_sleep_ns;   /* sleeps under the stack threshold, beyond short_wakers' */
	u64 other_sleep_ns;   /* long sleeps beyond the TOP_SLEEPS longest */
	u32 short_sleeps;
	u32 long_sleeps;
	struct totals at_entry; /* then, in the record: what completed during the call */
	/* Off the CPU right now: since when, in which state, and the wakeup if it came. */
	u64 off_ns;
	u64 woken_ns;
	u32 off_state;
	u32 waker_pid;
	char waker_comm[TASK_COMM_LEN];
	u32 woken_by;     /* COMPLETED_*: the block completion that made the wakeup */
	u32 woken_by_dev;
	u64 waker_work;   /* the work the waker ran, where it is a workqueue's worker */
	/* The short sleeps of the first SHORT_WAKERS tasks that ended them, per task. */
	struct short_wake short_wakers[SHORT_WAKERS];
	struct sleep sleeps[TOP_SLEEPS];
	/* In the record: the journal commit that ended last during the call, if one did (the
	 * one a wait for the journal most likely ended with); zeros otherwise. */
	struct commit last_commit;
	/* The inode number of the file synced (fsync, fdatasync, sync_file_range) or written;
	 * 0 for the others, or where it could not be read. */
	u64 ino;
	/* The device of the synced file's filesystem (MAJOR << 20 | MINOR), and of the whole
	 * disk under it (where its block requests are counted), read at the call's entry; 0
	 * for sync and msync or where it could not be read. What completed meanwhile is the
	 * disk's flushes and writes and the filesystem's commits, or the machine's where 0. */
	u32 dev;
	u32 disk;
	struct throttle throttle;
	struct fs_journal fs_journal;
	/* In the record: why the flusher wrote back on the call's disk during the call, a bit
	 * per reason (1 << enum wb_reason: background, vmscan, sync, periodic...). */
	u32 flusher_reasons;
	/* Not read by user space: where the sleep that the last wakeup ended was kept (1 +
	 * its slot in `sleeps`; 0: elsewhere), which the wait for a CPU after it joins; and
	 * whether the task was woken after leaving its run queue but before its switch-out
	 * was traced (what follows that switch-out is a wait for a CPU). */
	u16 woken_into;
	u16 woken_early;
	/* Not read by user space: the task's last followed file (its struct file and inode)
	 * and what set_devices read of it, kept from call to call. */
	u64 seen_file;
	u64 seen_inode;
	u64 seen_ino;
	u32 seen_dev;
	u32 seen_disk;
	u64 seen_sb; /* the filesystem (struct super_block) seen_dev and seen_disk are of */
	/* Where config.split_by_counters asks for it, the task's scheduler counters at the
	 * call's entry: its time on a CPU up to its last switch-in less that switch-in's
	 * time, and its time waiting on a run queue (not read by user space). */
	u64 entry_runtime_base;
	u64 entry_run_delay;
	/* In the record: 1 when runqueue_ns and other_sleep_ns are the differences of those
	 * counters (the time on a CPU, waiting for one, and asleep, unnamed), 0 otherwise. */
	u32 counted;
	u32 counted_pad;
};

/* Latency histogram: log-linear buckets, 8 per power of two (a bucket's upper bound is at
 * most 12.5% above its lower bound). The bucket FAILED_BUCKET (no latency reaches it: it
 * would be over 2^64 ns) counts the calls that returned an error, which are also counted in
 * their latency's bucket. */
#define FAILED_BUCKET 0xffff

struct latency_key {
	u32 pid;
	u16 kind;
	u16 bucket;
};

#endif
