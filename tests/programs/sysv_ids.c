/*
 * tests/programs/sysv_ids.c - System V objects whose ids the kernel picks
 * (TLPI's svsem_create -p, svshm_create -p, svmsg_create -p, svsem_demo):
 * makes a semaphore set, a shared memory segment and a message queue with
 * IPC_PRIVATE, prints their ids, uses each (a child writes the segment),
 * prints what it read, and removes all three. Ids differ from run to run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/wait.h>
#include <unistd.h>

union semun {
	int val;
	struct semid_ds *buf;
	unsigned short *array;
};

static void check(int ok, const char *what)
{
	if (!ok) {
		perror(what);
		exit(1);
	}
}

int main(void)
{
	int sem = semget(IPC_PRIVATE, 2, IPC_CREAT | 0600);
	int shm = shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600);
	int msg = msgget(IPC_PRIVATE, IPC_CREAT | 0600);
	check(sem >= 0 && shm >= 0 && msg >= 0, "get");
	printf("ids %d %d %d\n", sem, shm, msg);

	check(semctl(sem, 0, SETVAL, (union semun){.val = 3}) == 0, "SETVAL");
	struct sembuf down = {.sem_num = 0, .sem_op = -1, .sem_flg = 0};
	check(semop(sem, &down, 1) == 0, "semop");
	unsigned short vals[2];
	check(semctl(sem, 0, GETALL, (union semun){.array = vals}) == 0, "GETALL");
	struct semid_ds sds;
	check(semctl(sem, 0, IPC_STAT, (union semun){.buf = &sds}) == 0, "IPC_STAT");
	printf("sem %d %u %u nsems %lu\n", semctl(sem, 0, GETVAL), vals[0], vals[1], (unsigned long)sds.sem_nsems);

	pid_t child = fork();
	check(child >= 0, "fork");
	if (child == 0) {
		char *p = shmat(shm, NULL, 0);
		check(p != (void *)-1, "shmat (child)");
		strcpy(p, "written by the child");
		shmdt(p);
		_exit(0);
	}
	check(waitpid(child, NULL, 0) == child, "waitpid");
	char *p = shmat(shm, NULL, SHM_RDONLY);
	check(p != (void *)-1, "shmat");
	struct shmid_ds mds;
	check(shmctl(shm, IPC_STAT, &mds) == 0, "shmctl");
	printf("shm '%s' size %zu\n", p, (size_t)mds.shm_segsz);
	shmdt(p);

	struct {
		long type;
		char text[16];
	} m = {5, "queued"}, got;
	check(msgsnd(msg, &m, sizeof(m.text), 0) == 0, "msgsnd");
	check(msgrcv(msg, &got, sizeof(got.text), 0, 0) >= 0, "msgrcv");
	struct msqid_ds qds;
	check(msgctl(msg, IPC_STAT, &qds) == 0, "msgctl");
	printf("msg %ld '%s' left %lu\n", got.type, got.text, (unsigned long)qds.msg_qnum);

	check(semctl(sem, 0, IPC_RMID) == 0 && shmctl(shm, IPC_RMID, NULL) == 0 && msgctl(msg, IPC_RMID, NULL) == 0,
	      "IPC_RMID");
	return 0;
}
