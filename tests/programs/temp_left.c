/*
 * tests/programs/temp_left.c - makes a temporary file and a temporary
 * directory in DIR and leaves both behind (as programs that crash, or never
 * unlink, do), writing its pid into the file. A replay finds the recorded
 * names taken by what the recording left.
 *
 * Output: the two names' lengths and "wrote N". Usage: temp_left DIR
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: temp_left DIR\n");
		return 2;
	}
	char file[4096], dir[4096];
	snprintf(file, sizeof(file), "%s/leftXXXXXX", argv[1]);
	snprintf(dir, sizeof(dir), "%s/leftdirXXXXXX", argv[1]);
	int fd = mkstemp(file);
	if (fd < 0 || !mkdtemp(dir)) {
		perror("temp_left");
		return 1;
	}
	char line[32];
	int n = snprintf(line, sizeof(line), "%d\n", (int)getpid());
	printf("file %zu dir %zu wrote %zd\n", strlen(file), strlen(dir), write(fd, line, (size_t)n));
	return 0;
}
