/* The maps of watch.bpf.c: the calls in progress, the machine-wide totals, the latency
 * histograms, the names of the processes seen, and the ring buffers that carry slow calls to
 * user space. The records they hold are watch_records.h's.
 */
#ifndef FSYNCLAB_WATCH_MAPS_H
#define FSYNCLAB_WATCH_MAPS_H

#include "watch_records.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct config);
} config SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, u32);
	__type(value, u8);
} processes SEC(".maps");

/* FILTER_CGROUP's cgroup: user space stores the descriptor of its directory at 0. */
struct {
	__uint(type, BPF_MAP_TYPE_CGROUP_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, u32);
} cgroups SEC(".maps");

/* The sync call a task is in, in the task itself (task-local storage, hung on its
 * task_struct): the scheduler hooks, which every switch and wakeup of the machine passes,
 * find a task's entry with one pointer read, and a task that never made a traced call has
 * none. An entry is made at a task's first traced call and kept (start_ns 0 between calls)
 * until the task ends or the program is unloaded, so a call costs no allocation. */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct call);
} calls SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct totals);
} totals SEC(".maps");

/* The totals per device: a whole disk's flushes and writes, a filesystem's journal
 * commits (the same entry when the filesystem is on the whole disk). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, u32);
	__type(value, struct totals);
} dev_totals SEC(".maps");

/* One number a CPU: where a kernel address is stored to be read back as a number
 * (address_of in watch.bpf.c). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, u64);
} address_scratch SEC(".maps");

/* Flush requests in flight: each request's address and issue time, in the slot its address
 * picks (flush_slot_of). An array, not a hash keyed by the request: the hash's insert and
 * delete were the block programs' largest cost (perf: htab_map_update_elem in kblockd at
 * each flush). Two flushes in flight whose addresses pick the same slot keep the later
 * one's time: the earlier one completes uncounted (its wakeup still named a flush's). A
 * block layer keeps one flush in flight per hardware queue, so that takes two disks' or
 * queues' flushes at once landing in one of FLUSH_SLOTS slots. */
#define FLUSH_SLOTS 1024

struct flush_slot {
	u64 rq;
	u64 issued_ns;
};
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, FLUSH_SLOTS);
	__type(key, u32);
	__type(value, struct flush_slot);
} flushes_in_flight SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct completions_seen);
} last_completions SEC(".maps");

/* The journal commit that ended last on each filesystem's device (MAJOR << 20 | MINOR),
 * and under 0 the one that ended last on the machine. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, u32);
	__type(value, struct commit);
} last_commit SEC(".maps");

/* Journal commits in progress: (device << 32 | transaction) -> start time. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, u64);
	__type(value, u64);
} commits_in_flight SEC(".maps");

/* The latest journal commits, each followed in the journal thread from its start to its
 * end as a call is (where its time went: on CPU, waiting for one, its sleeps with their
 * stacks), in slot commit_slot(device << 32 | transaction); the record's last_commit names
 * the commit it holds. An array of few slots, not a hash keyed by commit: the commit's end
 * copies its record at every commit, for the few slow calls that will read it, and an
 * array's update is a copy, without a hash's locks, allocation and eviction. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, JOURNAL_GROUPS * COMMITS_PER_GROUP);
	__type(key, u32);
	__type(value, struct call);
} commit_detail SEC(".maps");

/* The group of the journal's device (MAJOR << 20 | MINOR: its major and minor folded), the
 * slot in it by transaction. */
static __always_inline u32 commit_slot(u64 dev_tid)
{
	u32 dev = dev_tid >> 32, tid = dev_tid;
	return ((dev ^ dev >> 20) % JOURNAL_GROUPS) * COMMITS_PER_GROUP + tid % COMMITS_PER_GROUP;
}

/* The flusher's work per disk (MAJOR << 20 | MINOR), per reason (enum wb_reason; the
 * kernel has 8): how many of its work items run now, and when one last started or wrote.
 * Signed, and read as working only above 0: a round written whose start came before the
 * program takes it below, where a check-then-decrement could race another round's and wrap
 * it to claim the reason for ever. */
#define WB_REASONS 16
struct flusher {
	s32 working[WB_REASONS];
	u64 seen_ns[WB_REASONS];
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 64);
	__type(key, u32);
	__type(value, struct flusher);
} flusher SEC(".maps");

/* The btrfs commit that ended last per filesystem (its super block's device). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 64);
	__type(key, u32);
	__type(value, struct btrfs_commit);
} last_btrfs_commit SEC(".maps");

/* The latency histogram (struct latency_key in watch_records.h). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct latency_key);
	__type(value, u64);
} latency SEC(".maps"); /* (a local must not be called latency: it would hide the map) */

/* The command name of each process seen making a sync call. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, u32);
	__type(value, char[TASK_COMM_LEN]);
} process_names SEC(".maps");

/* How many names process_names has been given: a watch reads it every tick and takes the
 * ended processes out before the next 5 s are up once many new ones have come (a burst of
 * short-lived processes would fill process_names first). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, u64);
} names_given SEC(".maps");

/* What was lost: [0] calls not followed (no task storage could be made for the task),
 * [1] records not sent (ring full), [2] histogram entries not made (latency full),
 * [3] latencies not sent (`every` full), [4] processes not followed (`processes` full). */
#define LOSSES 5
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, LOSSES);
	__type(key, u32);
	__type(value, u64);
} lost SEC(".maps");

/* A thread's own report threshold for one kind of call (kind << 32 | thread), over
 * config's: set by a run's tracer once it holds enough of that thread's slowest calls of
 * that kind (a watch sets none). Per kind: a thread's writes take microseconds and its
 * fsyncs milliseconds, and one threshold for both would send every fsync. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, u64);
	__type(value, u64);
} thread_thresholds SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct stack_scratch);
} stack_scratch SEC(".maps");

#define RING_BYTES (1 << 20)
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, RING_BYTES);
} events SEC(".maps");

/* Every call's latency_record, when config.every_call asks for them. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, RING_BYTES);
} every SEC(".maps");

#endif
