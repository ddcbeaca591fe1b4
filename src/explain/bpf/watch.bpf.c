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

/* The program in parts, each a header included here once: one compilation unit, so one
 * object whose maps every part shares. */
#include "watch_call.h"
#include "watch_syscalls.h"
#include "watch_sched.h"
#include "watch_io.h"
