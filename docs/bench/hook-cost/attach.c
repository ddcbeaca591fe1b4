// SPDX-License-Identifier: GPL-2.0 OR MIT
/* Loads a BPF object, attaches every program in it, prints "attached N" and holds them
 * until SIGTERM or SIGINT (docs/bench/bpf-hook-cost.sh). */
#include <bpf/libbpf.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

static volatile sig_atomic_t stop;
static void on_signal(int sig) { (void)sig; stop = 1; }

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: attach OBJECT.o\n");
		return 2;
	}
	struct bpf_object *obj = bpf_object__open_file(argv[1], NULL);
	if (!obj || bpf_object__load(obj)) {
		fprintf(stderr, "attach: cannot load %s\n", argv[1]);
		return 1;
	}
	struct bpf_program *prog;
	int n = 0;
	bpf_object__for_each_program(prog, obj) {
		if (!bpf_program__attach(prog)) {
			fprintf(stderr, "attach: cannot attach %s\n", bpf_program__name(prog));
			return 1;
		}
		n++;
	}
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	printf("attached %d\n", n);
	fflush(stdout);
	while (!stop)
		pause();
	bpf_object__close(obj);
	return 0;
}
