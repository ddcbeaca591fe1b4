/* The sync workload of docs/bench/watch-tax.sh: COUNT times, a 4 KiB write at offset 0 of
 * FILE and an fsync of it (each fsync a journal commit on ext4: the write changed the
 * inode's times). Every return value checked. Usage: fsync-loop FILE COUNT. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc != 3)
		return fprintf(stderr, "usage: fsync-loop FILE COUNT\n"), 2;
	long count = atol(argv[2]);
	char block[4096];
	memset(block, 'x', sizeof(block));
	int fd = open(argv[1], O_WRONLY | O_CREAT, 0644);
	if (fd < 0)
		return perror(argv[1]), 1;
	for (long i = 0; i < count; i++) {
		if (pwrite(fd, block, sizeof(block), 0) != sizeof(block))
			return perror("pwrite"), 1;
		if (fsync(fd))
			return perror("fsync"), 1;
	}
	return close(fd) ? perror("close"), 1 : 0;
}
