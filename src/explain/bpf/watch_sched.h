/* Part of watch.bpf.c's one compilation unit, included once from it: the scheduler's
 * hooks. A followed task's sleeps (the longest kept with their stacks), its switches, the
 * wakeups that end its sleeps (and the block completion or worker that made them), the
 * interrupt depth where BPF cannot read the preemption count, and a traced command's new
 * and ended processes.
 */
#ifndef FSYNCLAB_WATCH_SCHED_H
#define FSYNCLAB_WATCH_SCHED_H

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

#endif
