// SPDX-License-Identifier: GPL-2.0 OR MIT
/* Programs that do nothing, at the 25 trace points fsynclab's BPF tracer
 * (src/explain/bpf/watch.bpf.c) attaches to on a kernel where it cannot read the preemption
 * count, as on this project's VMs: what hooking them costs before any work.
 * Used by docs/bench/bpf-hook-cost.sh. */
char LICENSE[] __attribute__((section("license"), used)) = "Dual MIT/GPL";
#define NOTHING(point, name) \
	__attribute__((section("tp_btf/" point), used)) int name(void *ctx) { return 0; }
NOTHING("sys_enter", at_sys_enter)
NOTHING("sys_exit", at_sys_exit)
NOTHING("sched_switch", at_switch)
NOTHING("sched_waking", at_waking)
NOTHING("irq_handler_entry", at_irq_in)
NOTHING("irq_handler_exit", at_irq_out)
NOTHING("softirq_entry", at_softirq_in)
NOTHING("softirq_exit", at_softirq_out)
NOTHING("call_function_single_entry", at_cfs_in)
NOTHING("call_function_single_exit", at_cfs_out)
NOTHING("call_function_entry", at_cf_in)
NOTHING("call_function_exit", at_cf_out)
NOTHING("local_timer_entry", at_timer_in)
NOTHING("local_timer_exit", at_timer_out)
NOTHING("irq_work_entry", at_irq_work_in)
NOTHING("irq_work_exit", at_irq_work_out)
NOTHING("block_rq_issue", at_rq_issue)
NOTHING("block_rq_complete", at_rq_complete)
NOTHING("jbd2_start_commit", at_commit_start)
NOTHING("jbd2_end_commit", at_commit_end)
NOTHING("balance_dirty_pages", at_throttle)
NOTHING("writeback_start", at_writeback_start)
NOTHING("writeback_written", at_writeback_written)
NOTHING("xfs_log_force", at_xfs_log_force)
NOTHING("btrfs_transaction_commit", at_btrfs_commit)
