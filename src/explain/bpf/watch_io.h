/* Part of watch.bpf.c's one compilation unit, included once from it: what the filesystems,
 * the flusher and the block layer do meanwhile. Dirty throttling, xfs's log forces, btrfs's
 * and jbd2's commits (a commit followed in the journal thread as a call is), the flusher's
 * work per disk and reason, and the block requests' issues and completions (flushes, writes).
 */
#ifndef FSYNCLAB_WATCH_IO_H
#define FSYNCLAB_WATCH_IO_H

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
	struct call *c = current_call();
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
		u32 slot = commit_slot(key);
		bpf_map_update_elem(&commit_detail, &slot, c, BPF_ANY);
		set_ended(c);
	}
	return 0;
}

#endif
