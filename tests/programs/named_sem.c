/*
 * tests/programs/named_sem.c - POSIX named objects another process shares
 * (TLPI's psem_wait, psem_post, psem_unlink, pmsg_unlink, pshm_unlink):
 *   named_sem create NAME VALUE   make semaphore NAME, queue NAME and shared memory NAME
 *   named_sem use NAME            take the semaphore twice, post it once, read its value
 *   named_sem unlink NAME         unlink all three names
 * Each step prints what the calls returned. The recording changes the
 * objects (takes the semaphore, removes the names), so a replay finds them
 * otherwise or gone.
 */
#include <errno.h>
#include <fcntl.h>
#include <mqueue.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static void said(const char *what, int r)
{
	if (r == 0)
		printf("%s: ok\n", what);
	else
		printf("%s: %s\n", what, strerror(errno));
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: named_sem create|use|unlink NAME [VALUE]\n");
		return 2;
	}
	const char *name = argv[2];
	if (strcmp(argv[1], "create") == 0 && argc == 4) {
		sem_t *s = sem_open(name, O_CREAT | O_EXCL, 0600, (unsigned)atoi(argv[3]));
		struct mq_attr attr = {.mq_maxmsg = 2, .mq_msgsize = 16};
		mqd_t q = mq_open(name, O_CREAT | O_EXCL | O_RDWR, 0600, &attr);
		int m = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
		if (s == SEM_FAILED || q == (mqd_t)-1 || m < 0) {
			perror("create");
			return 1;
		}
		return 0;
	}
	if (strcmp(argv[1], "use") == 0) {
		sem_t *s = sem_open(name, 0);
		if (s == SEM_FAILED) {
			perror("sem_open");
			return 1;
		}
		said("sem_trywait", sem_trywait(s));
		said("sem_trywait", sem_trywait(s));
		said("sem_post", sem_post(s));
		said("sem_wait", sem_wait(s));
		int value = -1;
		said("sem_getvalue", sem_getvalue(s, &value));
		printf("value %d\n", value);
		said("sem_close", sem_close(s));
		return 0;
	}
	if (strcmp(argv[1], "unlink") == 0) {
		said("sem_unlink", sem_unlink(name));
		said("mq_unlink", mq_unlink(name));
		said("shm_unlink", shm_unlink(name));
		return 0;
	}
	fprintf(stderr, "named_sem: unknown step %s\n", argv[1]);
	return 2;
}
