/* The few kernel types the watch program reads, written by hand for CO-RE.
 *
 * Each struct carries preserve_access_index, so clang records every field access as a
 * relocation that libbpf resolves against the running kernel's BTF (/sys/kernel/btf/vmlinux)
 * when the program loads: the offsets below are never used as they are, only the names.
 * Only the fields the program reads are listed. This header is used instead of a vmlinux.h
 * dumped by bpftool at build time so that the build does not depend on the build machine's
 * kernel (a container or CI machine without BTF builds the same object), and so that the
 * program states exactly which kernel fields it relies on.
 */
#ifndef FSYNCLAB_KERNEL_TYPES_H
#define FSYNCLAB_KERNEL_TYPES_H

typedef unsigned char __u8;
typedef unsigned short __u16;
typedef unsigned int __u32;
typedef unsigned long long __u64;
typedef signed char __s8;
typedef short __s16;
typedef int __s32;
typedef long long __s64;
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u32 __wsum;
typedef __u8 u8;
typedef __u16 u16;
typedef __u32 u32;
typedef __u64 u64;
typedef __s32 s32;
typedef __s64 s64;
typedef _Bool bool;
#define true 1
#define false 0
typedef __u32 dev_t;
typedef int pid_t;
typedef unsigned int blk_opf_t;
typedef unsigned char blk_status_t;
typedef int tid_t;

enum bpf_map_type {
	BPF_MAP_TYPE_HASH = 1,
	BPF_MAP_TYPE_ARRAY = 2,
	BPF_MAP_TYPE_PERCPU_ARRAY = 6,
	BPF_MAP_TYPE_CGROUP_ARRAY = 8,
	BPF_MAP_TYPE_LRU_HASH = 9,
	BPF_MAP_TYPE_RINGBUF = 27,
	BPF_MAP_TYPE_TASK_STORAGE = 29,
};

enum {
	BPF_ANY = 0,
	BPF_NOEXIST = 1,
};

/* include/uapi/linux/bpf.h: a map allocated as it fills (task storage must be), and the
 * flag that makes bpf_task_storage_get create a task's entry. */
enum {
	BPF_F_NO_PREALLOC = 1,
};

enum {
	BPF_LOCAL_STORAGE_GET_F_CREATE = 1,
};

/* include/linux/types.h */
typedef struct {
	int counter;
} atomic_t;

/* include/linux/sched/signal.h: `live`, the process's threads not yet exiting. */
struct signal_struct {
	atomic_t live;
} __attribute__((preserve_access_index));

/* include/linux/fs.h: a file's inode and its number. */
struct block_device;
struct super_block {
	dev_t s_dev;
	struct block_device *s_bdev; /* NULL for a filesystem on no block device */
} __attribute__((preserve_access_index));

struct inode {
	unsigned long i_ino;
	struct super_block *i_sb;
} __attribute__((preserve_access_index));

struct file {
	struct inode *f_inode;
	unsigned int f_flags;
} __attribute__((preserve_access_index));

/* A write as a filesystem's write_iter receives it: its file and its IOCB_* flags. */
struct kiocb {
	struct file *ki_filp;
	int ki_flags;
} __attribute__((preserve_access_index));

struct iov_iter;

/* include/linux/fdtable.h: a process's open files. */
struct fdtable {
	unsigned int max_fds;
	struct file **fd;
} __attribute__((preserve_access_index));

struct files_struct {
	struct fdtable *fdt;
} __attribute__((preserve_access_index));

/* include/linux/sched.h */
/* x86's per-CPU hot data from 6.2 to 6.14, where the preemption count lived then. */
struct pcpu_hot {
	int preempt_count;
} __attribute__((preserve_access_index));

/* What the scheduler counts of a task (the fair class's entity; CONFIG_SCHED_INFO's
 * sched_info), for a call split without the scheduler's hooks (--detail latency). */
struct sched_entity {
	u64 sum_exec_runtime;      /* time on a CPU, updated at switches and ticks */
	u64 prev_sum_exec_runtime; /* sum_exec_runtime at the task's last switch-in */
} __attribute__((preserve_access_index));

struct sched_info {
	unsigned long long run_delay;    /* time spent waiting on a run queue */
	unsigned long long last_arrival; /* rq clock at the task's last switch-in */
} __attribute__((preserve_access_index));

#define SCHED_NORMAL 0
#define SCHED_BATCH 3
#define SCHED_IDLE 5

struct task_struct {
	unsigned int flags;
	pid_t pid;
	pid_t tgid;
	char comm[16];
	struct signal_struct *signal;
	struct files_struct *files;
	void *worker_private; /* a kernel thread's struct kthread (5.17 on) */
	int on_rq; /* TASK_ON_RQ_QUEUED while on its run queue */
	unsigned int policy;
	struct sched_entity se;
	struct sched_info sched_info;
} __attribute__((preserve_access_index));

/* A workqueue's worker thread (PF_WQ_WORKER): its struct kthread's `data` is its struct
 * worker (kernel/workqueue_internal.h), whose `current_func` is the work it runs. */
#define PF_WQ_WORKER 0x00000020
struct kthread {
	void *data;
} __attribute__((preserve_access_index));

struct worker {
	void *current_func;
} __attribute__((preserve_access_index));

/* include/linux/blk_types.h: the operation in the low bits of cmd_flags, flags above. */
enum req_op {
	REQ_OP_READ = 0,
	REQ_OP_WRITE = 1,
	REQ_OP_FLUSH = 2,
};

enum req_flag_bits {
	__REQ_PREFLUSH = 18,
};

struct gendisk {
	int major;
	int first_minor;
} __attribute__((preserve_access_index));

struct request_queue {
	struct gendisk *disk;
} __attribute__((preserve_access_index));

/* include/linux/blk-mq.h */
struct request {
	struct request_queue *q;
	blk_opf_t cmd_flags;
} __attribute__((preserve_access_index));

/* include/linux/jbd2.h */
struct block_device {
	dev_t bd_dev;
	struct gendisk *bd_disk;
} __attribute__((preserve_access_index));

struct journal_s {
	struct block_device *j_fs_dev;
} __attribute__((preserve_access_index));

struct transaction_s {
	tid_t t_tid;
} __attribute__((preserve_access_index));

/* fs/btrfs/fs.h: a filesystem's last committed transaction (set before the commit's
 * event) and its super block. */
struct btrfs_fs_info {
	u64 last_trans_committed;
	struct super_block *sb;
} __attribute__((preserve_access_index));

/* mm/page-writeback.c: what writeback:balance_dirty_pages passes since it takes the
 * throttle control (in place of its figures): the domain's dirty pages and threshold, and
 * the domain itself (with CONFIG_CGROUP_WRITEBACK), whose dirty_limit is the threshold
 * smoothed, the limit the kernel throttles against (hard_dirty_limit). */
struct wb_domain {
	unsigned long dirty_limit;
} __attribute__((preserve_access_index));

struct dirty_throttle_control {
	struct wb_domain *dom;
	unsigned long dirty;
	unsigned long thresh;
} __attribute__((preserve_access_index));

/* fs/fs-writeback.c and include/linux/backing-dev-defs.h: a flusher's work item, why it
 * writes back (include/linux/writeback.h), and the disk its backing device is for (the
 * gendisk's own device, whose devt is the disk's: bdi_set_owner). */
enum wb_reason { WB_REASON_BACKGROUND };

struct wb_writeback_work {
	enum wb_reason reason;
} __attribute__((preserve_access_index));

struct device {
	dev_t devt;
} __attribute__((preserve_access_index));

struct backing_dev_info {
	struct device *owner;
} __attribute__((preserve_access_index));

struct bdi_writeback {
	struct backing_dev_info *bdi;
} __attribute__((preserve_access_index));

/* arch/x86/include/asm/ptrace.h: the registers a kprobe sees, and in which a system call's
 * wrapper receives the call's (its arguments by name, as bpf_tracing.h reads them). The
 * kernel's names, not user space's (`di`, not `rdi`): __VMLINUX_H__ tells bpf_tracing.h so. */
#define __VMLINUX_H__ 1
struct pt_regs {
	unsigned long r15, r14, r13, r12, bp, bx, r11, r10, r9, r8, ax, cx, dx, si, di;
	unsigned long orig_ax, ip, cs, flags, sp, ss;
} __attribute__((preserve_access_index));

#endif
