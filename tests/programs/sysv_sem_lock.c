/*
 * sysv_sem_lock.c - threads that take turns through a System V semaphore
 * used as a lock (semop -1 to enter, +1 to leave), as older servers and
 * test suites do: the counter it guards is read, worked on and written
 * back inside, so two threads inside at once lose updates. A replay must
 * keep the recorded order of the semaphore's operations.
 *
 * Usage: sysv_sem_lock [THREADS] [ROUNDS]   (default 4 x 2000)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ipc.h>
#include <sys/sem.h>

union semun {
	int val;
	struct semid_ds *buf;
	unsigned short *array;
};

static int set;
static long rounds;
static volatile long counter;

static void *worker(void *arg)
{
	(void)arg;
	struct sembuf down = {0, -1, SEM_UNDO}, up = {0, 1, SEM_UNDO};
	for (long i = 0; i < rounds; i++) {
		if (semop(set, &down, 1) != 0) {
			perror("semop down");
			exit(2);
		}
		long seen = counter;
		for (volatile int spin = 0; spin < 200; spin++)
			;
		counter = seen + 1;
		if (semop(set, &up, 1) != 0) {
			perror("semop up");
			exit(2);
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 4;
	rounds = argc > 2 ? atol(argv[2]) : 2000;
	if (threads < 1 || threads > 64)
		return 2;
	set = semget(IPC_PRIVATE, 1, IPC_CREAT | 0600);
	if (set < 0) {
		perror("semget");
		return 2;
	}
	union semun one = {.val = 1};
	semctl(set, 0, SETVAL, one);
	pthread_t t[64];
	for (int i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, worker, NULL);
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	semctl(set, 0, IPC_RMID);
	printf("counter %ld of %ld\n", counter, threads * rounds);
	return counter == threads * rounds ? 0 : 1;
}
