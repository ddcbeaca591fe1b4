/* A context-switch-heavy program for docs/bench/watch-tax.sh: two processes pass one byte
 * back and forth over two pipes ROUNDS times (each round two writes, two reads, two
 * wakeups and about four switches). Usage: pingpong ROUNDS. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 100000;
	int there[2], back[2];
	char b = 0;
	if (pipe(there) || pipe(back))
		return perror("pipe"), 1;
	pid_t child = fork();
	if (child < 0)
		return perror("fork"), 1;
	if (child == 0) {
		for (long i = 0; i < rounds; i++)
			if (read(there[0], &b, 1) != 1 || write(back[1], &b, 1) != 1)
				return 1;
		return 0;
	}
	for (long i = 0; i < rounds; i++)
		if (write(there[1], &b, 1) != 1 || read(back[0], &b, 1) != 1)
			return perror("pingpong"), 1;
	int status;
	waitpid(child, &status, 0);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
